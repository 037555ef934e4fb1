"""Sentence support: is each sentence of a generated answer backed by the blocks it cites?

:func:`check_sentences` splits a generated answer into sentences and reads the ``[n]``
citations of each: a sentence without one is *uncited*, unless it says the sources do
not answer (it *declines*, :mod:`twokeys.rag.declines`: the model's own abstention,
which claims nothing); a cited sentence whose content terms (the index analyzer's,
stemmed) are mostly absent from the blocks it cites is *unsupported*; otherwise
*supported*. A sentence that cites nothing (small models often cite nothing) is read all
the same: it is attributed to the block that holds the largest share of its content
terms, when that share reaches the same bar (``SentenceCheck.added``: the answer's text
gets the ``[n]``, :func:`with_added_citations`), else it is *unsupported*; only a
sentence with no content terms at all stays *uncited*. :func:`judged` then lets the
model's own per-sentence verdict
(:func:`twokeys.rag.judge.support_verdicts`, the ``support`` stage) decide for the
cited sentences it judged: shared words miss a claim the passages contradict in the
same words, and a paraphrase that shares few. :func:`strict_text` keeps the supported
sentences and those that decline.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from twokeys.rag.declines import declines, is_decline
from twokeys.rag.packing import Block
from twokeys.text.sentences import split_sentences

SUPPORT_MIN = 0.5  # share of a sentence's content terms its cited blocks must hold

Status = Literal["supported", "unsupported", "uncited", "declines"]
Terms = Callable[[str], list[str]]

_CITATION = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")


@dataclass(frozen=True, slots=True)
class SentenceCheck:
    """One sentence of a generated answer and whether its cited blocks back it."""

    text: str
    citations: tuple[int, ...]
    status: Status
    support: float  # share of its content terms found in the cited blocks
    model: bool | None = None  # the model's verdict (the support stage); None: not asked
    added: bool = False  # the model cited nothing; the check found the citation

    @property
    def shown(self) -> str:
        """The sentence as the answer shows it: with the citation the check added."""
        return _cite(self.text, self.citations[0]) if self.added else self.text

    def to_dict(self) -> dict[str, object]:
        return {
            "text": self.text,
            "citations": list(self.citations),
            "status": self.status,
            "support": round(self.support, 4),
            "model_verdict": self.model,
            "added": self.added,
        }


def sentence_citations(sentence: str, n_blocks: int) -> tuple[int, ...]:
    found = {
        int(n) for group in _CITATION.findall(sentence) for n in re.split(r"\s*[,;]\s*", group)
    }
    return tuple(sorted(n for n in found if 1 <= n <= n_blocks))


def check_sentences(text: str, blocks: Sequence[Block], terms: Terms) -> tuple[SentenceCheck, ...]:
    """Each sentence of ``text`` checked against the blocks it cites (module docstring).

    A citation-only fragment (``[2].``) is attached to the sentence before it."""
    pieces = [text[a:b] for a, b in split_sentences(text)]
    merged: list[str] = []
    for piece in pieces:
        if merged and not _CITATION.sub("", piece).strip(" .,;:"):
            merged[-1] = f"{merged[-1]} {piece}"
        else:
            merged.append(piece)
    block_terms = {b.number: set(terms(b.text)) | set(terms(b.heading)) for b in blocks}
    checks = []
    for sentence in merged:
        cited = sentence_citations(sentence, len(blocks))
        own = Counter(terms(_CITATION.sub(" ", sentence)))
        if not cited and own and not (is_decline(sentence) or declines(sentence)):
            checks.append(_attributed(sentence, own, block_terms))
            continue
        if not cited or is_decline(_CITATION.sub(" ", sentence)):
            status: Status = "declines" if declines(sentence) else "uncited"
            checks.append(SentenceCheck(sentence, cited, status, 0.0))
            continue
        support = _support(own, set().union(*(block_terms[n] for n in cited)))
        status = "supported" if support >= SUPPORT_MIN else "unsupported"
        checks.append(SentenceCheck(sentence, cited, status, support))
    return tuple(checks)


def _support(own: Counter[str], held: set[str]) -> float:
    return sum(c for t, c in own.items() if t in held) / sum(own.values()) if own else 1.0


def _attributed(
    sentence: str, own: Counter[str], block_terms: dict[int, set[str]]
) -> SentenceCheck:
    """A sentence that cites nothing, checked against every block: cited to the one that
    holds most of its terms (the first of equals) when it holds enough, else unsupported."""
    best, support = 0, 0.0
    for number in sorted(block_terms):
        share = _support(own, block_terms[number])
        if share > support:
            best, support = number, share
    if best and support >= SUPPORT_MIN:
        return SentenceCheck(sentence, (best,), "supported", support, added=True)
    return SentenceCheck(sentence, (), "unsupported", support)


_TAIL = re.compile(r"[\s.!?:;,]*$")


def _cite(sentence: str, number: int) -> str:
    """``"The Hub resets."`` -> ``"The Hub resets [2]."``"""
    at = _TAIL.search(sentence)
    cut = at.start() if at is not None else len(sentence)
    return f"{sentence[:cut]} [{number}]{sentence[cut:]}"


def with_added_citations(text: str, checks: Sequence[SentenceCheck]) -> str:
    """``text`` with the citation the check found after each sentence that cited none."""
    out: list[str] = []
    at = 0
    for check in checks:
        found = text.find(check.text, at)
        if found < 0:
            continue
        end = found + len(check.text)
        out.append(text[at:found] + check.shown)
        at = end
    return "".join(out) + text[at:]


def strict_text(checks: Sequence[SentenceCheck]) -> str:
    """The answer with only its supported sentences, and those saying the sources do not
    answer."""
    return " ".join(c.shown for c in checks if c.status in ("supported", "declines"))


def to_judge(checks: Sequence[SentenceCheck]) -> list[int]:
    """The positions of the checks a model can judge: the sentences that cite a block (or
    were attributed one) and claim something (not those that decline)."""
    return [
        i for i, c in enumerate(checks) if c.citations and c.status in ("supported", "unsupported")
    ]


def judged(
    checks: Sequence[SentenceCheck], verdicts: dict[int, bool | None]
) -> tuple[SentenceCheck, ...]:
    """``checks`` with the model's verdict (by position) deciding each judged sentence's
    status; an unjudged one (None, or not in ``verdicts``) keeps the term check's."""
    out = []
    for i, check in enumerate(checks):
        said = verdicts.get(i)
        if said is None:
            out.append(check)
            continue
        status: Status = "supported" if said else "unsupported"
        out.append(replace(check, status=status, model=said))
    return tuple(out)
