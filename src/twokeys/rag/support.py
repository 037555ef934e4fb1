"""Sentence support: is each sentence of a generated answer backed by the blocks it cites?

:func:`check_sentences` reads each sentence's ``[n]`` citations. A cited sentence is
*supported* when its cited blocks hold :data:`SUPPORT_MIN` of its content terms (the
index analyzer's), else *unsupported*. One that cites nothing is attributed to the block
holding most of its terms, when that clears the same bar (the answer gets the ``[n]``),
else it is unsupported; one with no content terms is *uncited*, and one saying the
sources do not answer *declines* (:mod:`twokeys.rag.declines`). The model's own verdict
(the ``support`` stage, :func:`twokeys.rag.judge.judge_sentences`) may then decide.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
