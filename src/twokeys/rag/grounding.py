"""Grounding: abstain before generation when retrieval found nothing that answers.

:func:`retrieval_confidence` reads the two sensors for one sub-query: BM25's coverage
of the query's idf mass by the best chunk (unseen terms weigh most); the dense *peak*,
the best cosine in standard deviations above the query's mean cosine to a sample of
the corpus; and the dense *height*, the best cosine from that mean (chance) towards
identity. The peak alone passes off-topic questions on large corpora (the best of *n*
chunks stands about ``sqrt(2 ln n)`` spreads above the mean by chance), so the height
must clear a floor too (:attr:`Confidence.above_chance`).

Besides, a sub-query is not answered when it names what no chunk holds: an identifier
(``E-9001``; a dotted name counts as held when one chunk holds each part, a letters-only
one when written inside a longer token, a number with its unit when written apart), a
capitalised name past a sentence's start that no retrieved passage writes otherwise
(for the dense model), or a run of such names no chunk holds side by side. Both sensors
read a bag of words, so a product named by corpus words looks covered to them. An
identifier the index holds vouches for the question. Names are read on the sub-query's
own words (:func:`twokeys.rag.decompose.own_words`).

Weights and floors were set on the support KB's ``dev`` split and general-knowledge
questions (``benchmarks/abstention/``), and checked on the Python and Git documentation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from twokeys.lexical.boolean import contains_sequence
from twokeys.rag.decompose import own_words
from twokeys.rag.evidence import dense_levels, lexical_reading
from twokeys.retrievers.base import indexed_texts

if TYPE_CHECKING:
    from twokeys.engine import Index

LEXICAL_WEIGHT = 2.0  # coverage 1.0 counts as two standard deviations of dense peak
THRESHOLD = 3.6
STRONG_PEAK = 5.0  # a dense peak this high vouches even for a question naming an unseen name
HEIGHT_LEXICAL_WEIGHT = 0.5  # coverage 1.0 counts as half the way from chance to identity
HEIGHT_FLOOR = 0.421  # dense height plus weighted coverage an answerable question reaches
LEXICAL_ONLY_FLOOR = 0.5
PHRASE_CANDIDATES = 256  # chunks read to find a phrase; past that many, it is taken as held


@dataclass(frozen=True, slots=True)
class Confidence:
    """How well retrieval covers one sub-query."""

    query: str
    lexical: float  # idf-weighted share of the query matched by the best BM25 chunk
    dense: float | None  # the best cosine's height above the corpus, in sd; None: no vectors
    missing: tuple[str, ...]  # identifier-like query terms no chunk contains
    found: tuple[str, ...] = ()  # identifier-like query terms the index holds
    unseen_names: tuple[str, ...] = ()  # capitalised names (VPN, Kubernetes) no chunk holds
    unseen_phrases: tuple[str, ...] = ()  # capitalised runs (Acme Smart Lock) no chunk holds
    height: float | None = None  # the best cosine from chance (0) to identity (1); None: no vectors
    # the learned confidence (twokeys.rag.confidence) that the sources answer, and the
    # operating point under which it abstains; when set, it decides alone
    probability: float | None = None
    threshold: float = 0.5
    # the model's verdict that the passages answer (None: not asked or no reply read) and
    # what it added to the learned confidence's log-odds (twokeys.rag.verdicts)
    model_verdict: bool | None = None
    verdict_log_ratio: float = 0.0

    @property
    def score(self) -> float:
        if self.dense is None:
            return self.lexical
        return self.dense + LEXICAL_WEIGHT * self.lexical

    @property
    def answerable(self) -> bool:
        if self.probability is not None:
            return self.probability >= self.threshold
        if self.missing:
            return False
        if self.found:
            return True  # an identifier matched exactly: the strongest lexical evidence
        if self.unseen and (self.dense is None or self.dense < STRONG_PEAK):
            return False
        if self.dense is None:
            return self.lexical >= LEXICAL_ONLY_FLOOR
        return self.score >= THRESHOLD and self.above_chance

    @property
    def above_chance(self) -> bool:
        """Whether the dense height and the coverage, together, clear
        :data:`HEIGHT_FLOOR` (True without a height to read)."""
        if self.height is None:
            return True
        return self.height + HEIGHT_LEXICAL_WEIGHT * self.lexical >= HEIGHT_FLOOR

    @property
    def unseen(self) -> tuple[str, ...]:
        """The names and phrases of the query that no chunk holds."""
        return self.unseen_names + self.unseen_phrases

    @property
    def reason(self) -> str:
        if self.probability is not None:
            side = "at least" if self.answerable else "under"
            said = ""
            if self.model_verdict is not None:
                reply = "yes" if self.model_verdict else "no"
                said = f" (the model said {reply}: {self.verdict_log_ratio:+.2f} in log-odds)"
            return (
                f"the confidence that the sources answer is {self.probability:.2f}{said}, "
                f"{side} the operating point {self.threshold:.2f}"
            )
        if self.missing or (self.unseen and not self.answerable):
            return f"the index never mentions {', '.join(self.missing or self.unseen)}"
        if self.answerable:
            return "retrieval matched the question"
        return "neither BM25 nor the dense model found a passage close to the question"

    def to_dict(self) -> dict[str, object]:
        return {
            "query": self.query,
            "lexical_coverage": round(self.lexical, 4),
            "dense_peak": None if self.dense is None else round(self.dense, 4),
            "dense_height": None if self.height is None else round(self.height, 4),
            "missing_identifiers": list(self.missing),
            "found_identifiers": list(self.found),
            "unseen_names": list(self.unseen_names),
            "unseen_phrases": list(self.unseen_phrases),
            "probability": None if self.probability is None else round(self.probability, 4),
            "model_verdict": self.model_verdict,
            "verdict_log_ratio": round(self.verdict_log_ratio, 4),
            "answerable": self.answerable,
            "reason": self.reason,
        }


def retrieval_confidence(index: Index, query: str) -> Confidence:
    """Read both sensors for ``query`` (see the module docstring)."""
    _, features = lexical_reading(index, query, 1)
    own = own_words(query)  # not the words a sub-query carries from the part before it
    names = tuple(n for n in _names(own) if not _indexed(index, n))
    phrases = tuple(
        p for p in _name_runs(own) if not names and _indexed(index, p) and not _held(index, p)
    )
    inside = tuple(m for m in features.missing_identifiers if _held_by_parts(index, m))
    missing = tuple(m for m in features.missing_identifiers if m not in inside)
    peak, height, _ = dense_levels(index, query)
    found = (*features.identifiers, *inside)
    coverage = features.lexical_confidence
    return Confidence(query, coverage, peak, missing, found, names, phrases, height)


_NAME = re.compile(r"(?<![\w'-])[A-Z][\w-]*[\w]")
_LOWER_WORD = re.compile(r"\b[a-z]{4,}\b")
_SENTENCE_START = re.compile(r"(?:^|[.?!;:(]\s*|\n)\s*$")


def _names(query: str) -> list[str]:
    """Capitalised words not at a sentence start (names, acronyms): ``VPN``, ``Kubernetes``."""
    return [m.group() for m in _name_matches(query)]


def _name_matches(query: str) -> list[re.Match[str]]:
    return [
        m
        for m in _NAME.finditer(query)
        if not _SENTENCE_START.search(query[: m.start()])
        and m.group() not in ("I", "I'm")
        and not _AFTER_NUMBER.search(query[: m.start()])  # a unit: "2.4 GHz", "16 GB"
    ]


_AFTER_NUMBER = re.compile(r"\d\s?$")


def _name_runs(query: str) -> list[str]:
    """Runs of two or more :func:`_names` separated by single spaces: ``Acme Smart Lock``.

    None in a query written in title case or capitals (no lowercase word of four letters
    or more): there capitals do not mark names."""
    if not _LOWER_WORD.search(query):
        return []
    runs: list[list[re.Match[str]]] = []
    for m in _name_matches(query):
        if runs and query[runs[-1][-1].end() : m.start()] == " ":
            runs[-1].append(m)
        else:
            runs.append([m])
    return [query[r[0].start() : r[-1].end()] for r in runs if len(r) >= 2]


def _held(index: Index, phrase: str) -> bool:
    """Whether some chunk holds ``phrase``'s analysed terms as a contiguous sequence.
    Only the chunks holding its rarest term are read, up to :data:`PHRASE_CANDIDATES`;
    past that the phrase is taken as held."""
    terms = index.analyzer.query_terms(phrase)
    if len(terms) < 2:
        return True
    texts = _texts_holding(index, [_rarest(index, terms)], complete=True)
    if texts is None:
        return True
    return any(contains_sequence(index.analyzer.query_terms(t), terms) for t in texts)


def _rarest(index: Index, terms: Sequence[str]) -> str:
    """The term of ``terms`` (all in the index) that the fewest chunks hold."""
    return max(zip(index.backend.lexical.idf(list(terms)), terms, strict=True))[1]


def _texts_holding(index: Index, terms: Sequence[str], *, complete: bool) -> list[str] | None:
    """The indexed texts of BM25's best :data:`PHRASE_CANDIDATES` chunks for ``terms``;
    with ``complete``, None when there may be more chunks than that (a rule that needs
    every chunk holding a term cannot decide)."""
    lexical = index.backend.lexical
    rows = [hit.row for hit in lexical.search(list(terms), PHRASE_CANDIDATES)]
    if complete and len(rows) >= PHRASE_CANDIDATES:
        return None
    return indexed_texts(index.backend, rows)


_DOTTED_NAME = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)+")
_SETTING = re.compile(r"([^\W\d]\w*)=(\w[\w.]*)")  # a keyword and its value: check=True


def _held_by_parts(index: Index, identifier: str) -> bool:
    """Whether some chunk holds each dotted part of a qualified name (a query term) as a
    word of its own (``ftplib.FTP.getwelcome`` where the ``ftplib`` page writes
    ``FTP.getwelcome()``: documentation names a member by a shorter path), or the keyword
    and value of a setting (``ensure_ascii=false``). Parts must start with a letter or
    ``_``: a version (``v5.0``) still matches whole."""
    setting = _SETTING.fullmatch(identifier)
    if setting is not None:
        parts = [setting.group(1), setting.group(2)]  # ensure_ascii=False
    elif _DOTTED_NAME.fullmatch(identifier):
        parts = identifier.split(".")
    else:
        return False
    lexical = index.backend.lexical
    terms = [t for t in index.analyzer.query_terms(" ".join(parts)) if lexical.has_term(t)]
    if not terms:
        return False
    texts = _texts_holding(index, terms, complete=False) or []
    words = [
        re.compile(r"(?<!\w)" + re.escape(part) + r"(?!\w)", re.IGNORECASE)
        for part in dict.fromkeys(parts)
    ]
    return any(all(w.search(text) for w in words) for text in texts)


def _indexed(index: Index, name: str) -> bool:
    terms = index.analyzer.query_terms(name)
    lexical = index.backend.lexical
    return not terms or all(lexical.has_term(t) for t in terms)
