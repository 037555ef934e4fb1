"""Grounding: abstain before generation when retrieval found nothing that answers (the
check of each generated sentence against its sources is :mod:`twokeys.rag.support`).

**Retrieval confidence** (:func:`retrieval_confidence`) reads the two sensors for one
sub-query:

* *lexical coverage*: the share of the query's idf mass matched by the best BM25 chunk
  (:mod:`twokeys.fusion.confidence`); terms the corpus never uses count as unmatched
  and, being unseen, weigh the most;
* *dense peak*: how far the best chunk's cosine stands above the query's typical cosine
  to the corpus, in standard deviations (``(top - mean) / sd`` over an evenly spaced
  sample of at most :data:`DENSE_SAMPLE` chunk vectors);
* *dense height*: how far the best cosine stands from that typical cosine (the query's
  chance level, as in the ``chance`` fusion) towards identity, ``(top - mean) / (1 -
  mean)``: 0 for a chunk no closer than chance, 1 for the query itself;
* *missing identifiers*: identifier-like query tokens (``ZX-9001``, ``v5.0``) that no
  chunk contains, not even inside a longer token (``/api/limits`` is written in
  ``http://lumatek-hub.local/api/limits``, a term of its own that BM25 indexes whole
  and by parts; letters-only identifiers are looked for that way, while one with a
  digit must match whole, as in search; a dotted qualified name such as
  ``ftplib.FTP.getwelcome`` is found when one chunk holds each of its dotted parts as
  a word, and a keyword with its value, ``ensure_ascii=False``, when one chunk holds
  both, see :func:`_held_by_parts`; a number with its unit, ``2.4GHz``, is found
  where a chunk writes "2.4 GHz"), and *unseen names*: capitalised words past a
  sentence's start (``VPN``, ``Kubernetes``, ``Chromebook``) that no chunk contains,
  nor writes otherwise: a name is seen where a retrieved passage holds a word the dense
  model reads as the same word, such as "television" for ``TV``
  (:func:`_not_written_otherwise`), and a name that asks for the kind of value the
  question wants ("How much *RAM*": an amount of memory) is seen where a retrieved
  passage states such a value about its subject ("16 GB of memory");
* *unseen phrases*: runs of two or more capitalised words past a sentence's start
  (``Lumatek Smart Lock``) whose words the index holds but never side by side: no chunk
  holds the analysed words as a contiguous sequence, the check a quoted phrase gets in
  the boolean retriever. BM25 and the dense model read a query as a bag of words, so a
  product name built from corpus words ("smart", "locks", "Lumatek") looks covered to
  both although the corpus never names that product;
* *unseen subcommands*: a run of query words that follows a command the pages document
  (a code line's words) and then leaves it where every such command goes on with
  another subcommand: ``hubctl diag upload`` where the pages give ``hubctl diag list``,
  ``purge`` and ``create`` (:mod:`twokeys.rag.commands`). Its words are all in the
  corpus, most in the chunks about that tool, so both sensors see it as covered;
* *unseen menu steps*: a menu path the question writes (``A > B > C``) that follows a
  path the pages write in bold or code for at least its first step and then takes a
  step none of them has there (``Camera settings > Power > Sleep schedule`` beside
  ``Charge limit`` and ``Battery health``), or a step past a documented path's end
  that no chunk writing that path names (``Camera settings > Audio > Noise filter``)
  (:mod:`twokeys.rag.menus`).
* *unseen kinds*: a compound of the query (``vacation mode``) whose last word the pages
  only ever write qualified, by at least three different words (``setup``, ``pairing``,
  ``privacy``, ``snapshot mode``: the word names a family, never a thing of its own),
  with a qualifier they never give it that is rarer in the corpus than that word (the
  specific part of the name; ``the Hub take`` names nothing) (:mod:`twokeys.rag.kinds`).
  Both words are often corpus words, so both sensors see the question as covered. A
  number is a qualifier too: "exit code 5" where the pages number their codes 0 to 4
  (in prose, "Level 1", or in a table column the word heads), at least three of them.
* *unseen elements*: a setting, option, feature, mode, dashboard or plan that the
  question names after a determiner ("the *pet detection* setting") and that no chunk
  writes, neither its name nor the name's last words with the noun
  (:mod:`twokeys.rag.elements`): the lowercase counterpart of unseen phrases.
* *unseen things*: a thing an existence question asks for ("Is there a *student
  discount*?", "Can I buy an *extended warranty*?", "Do you offer *gift wrapping*?")
  whose name, a compound, no chunk holds all the words of, in any order
  (:mod:`twokeys.rag.existence`). A company that offers the thing names it; the words
  are often corpus words ("warranty"), so both sensors see the question as covered.
* *unstated values*: a question that asks for a kind of value (a price, a distance, a
  temperature, a sound level, an amount of power, a voltage, an amount of storage or
  memory, a frame rate, a resolution, a data rate, a length in tokens or characters, an
  HTTP status, a year, what an acronym stands for: :mod:`twokeys.rag.answer_types`) whose
  retrieved chunks state none about its subject, in the unit the question names if it
  names one ("in mAh"). The pages may discuss the cloud plans or the siren at length
  without a price or a sound level, and both sensors then see the question as covered.

Names, phrases, kinds, elements and things are read on the sub-query's own words: a sub-query
carries the words of the part before it in a closing parenthesis (for retrieval,
:mod:`twokeys.rag.decompose`), and a name there ("How much RAM ... (much RAM desktop)")
was the other part's question.

A question that names an identifier the index has never seen, or a subcommand or menu
entry its pages never give, or asks for a value no retrieved chunk states, asks about
something the corpus does not hold; one that names an identifier the index holds is
answerable (an exact match is the strongest lexical evidence). An unseen name, phrase,
kind or element means the same unless the dense peak is very high (:data:`STRONG_PEAK`:
"Britain" for a page on the United Kingdom, a name written otherwise). An unseen thing
means the same whatever the peak: an existence question ("Is there a free trial of the
cloud plan?") is mostly the words of its topic, which the pages discuss whether or not
they offer the thing, so a page close to it vouches for the topic, not for the thing.
Otherwise the sub-query is answerable when
``peak + LEXICAL_WEIGHT * coverage >= THRESHOLD``: each sensor can vouch on its own
(a paraphrase with unseen words but a clear dense peak; an identifier query matched
exactly), and a question neither sensor recognises (off-topic, or in-domain words
around an unseen key word) is not answered. The weight and threshold were set on the
``dev`` split of ``examples/support-kb/qa.jsonl`` (43 questions): there the
unanswerable questions no identifier or name rule catches score at most 3.49, the
answerable ones at least 3.72. Without dense vectors only coverage is read, against
:data:`LEXICAL_ONLY_FLOOR`.

The peak alone lets off-topic questions through, the more so the larger the corpus. An
unrelated question's cosines to every chunk are about equally low, so their spread is
small, and the best of *n* chunks stands some ``sqrt(2 ln n)`` spreads above the mean by
chance alone: 3.3 for the 253 chunks of the support KB, 4.3 for the 9,734 of the Python
documentation, where 26 of 30 general-knowledge questions ("How do I tie a bowline
knot?") passed. The height does not divide by the spread. A sub-query is answerable
only when, besides the peak rule, ``height + HEIGHT_LEXICAL_WEIGHT * coverage >=
HEIGHT_FLOOR`` (:attr:`Confidence.above_chance`). Weight and floor were set on the same
``dev`` split together with 30 general-knowledge questions run on the support KB
(``benchmarks/abstention/offtopic-tuning.txt``), as the midpoint between the answerable
questions' lowest value (0.427) and the highest below it (0.415), and checked on the
Python and Git documentation and on 40 general-knowledge questions written by someone
who had seen none of this (``offtopic-blind.txt``; ``python -m benchmarks.abstention``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from twokeys.lexical.boolean import contains_sequence
from twokeys.rag.answer_types import AnswerType, expected_type, named_unit, own_words, states
from twokeys.rag.commands import Command, code_lines, commands, heads, query_runs, unseen_subcommand
from twokeys.rag.elements import elements
from twokeys.rag.existence import asked_for
from twokeys.rag.kinds import (
    RunWord,
    numbered,
    qualifiers,
    runs,
    table_members,
    unseen_kind,
    unseen_number,
    written_pairs,
)
from twokeys.rag.menus import departure, head_term, menu_paths, query_path
from twokeys.request import SearchRequest
from twokeys.retrievers.base import indexed_texts

if TYPE_CHECKING:
    from twokeys.engine import Index

LEXICAL_WEIGHT = 2.0  # coverage 1.0 counts as two standard deviations of dense peak
THRESHOLD = 3.6
STRONG_PEAK = 5.0  # a dense peak this high vouches even for a question naming an unseen name
HEIGHT_LEXICAL_WEIGHT = 0.5  # coverage 1.0 counts as half the way from chance to identity
HEIGHT_FLOOR = 0.421  # dense height plus weighted coverage an answerable question reaches
LEXICAL_ONLY_FLOOR = 0.5
DENSE_SAMPLE = 512
PHRASE_CANDIDATES = 256  # chunks read to find a phrase; past that many, it is taken as held
ANSWER_TYPE_K = 6  # chunks read for the value a question asks for, as ask retrieves
SAME_WORD = 0.9  # a word this close to an unseen name, for the dense model, writes it
SAME_WORD_CANDIDATES = 512  # distinct words of the retrieved texts compared with a name


@dataclass(frozen=True, slots=True)
class Confidence:
    """How well retrieval covers one sub-query."""

    query: str
    lexical: float  # idf-weighted share of the query matched by the best BM25 chunk
    dense: float | None  # the best cosine's height above the corpus, in sd; None: no vectors
    missing: tuple[str, ...]  # identifier-like query terms no chunk contains
    found: tuple[str, ...] = ()  # identifier-like query terms the index holds
    unseen_names: tuple[str, ...] = ()  # capitalised names (VPN, Kubernetes) no chunk holds
    unseen_phrases: tuple[str, ...] = ()  # capitalised runs (Lumatek Smart Lock) no chunk holds
    unseen_commands: tuple[str, ...] = ()  # subcommands no documented command has
    unseen_menu_steps: tuple[str, ...] = ()  # menu paths a step past the documented ones
    unseen_kinds: tuple[str, ...] = ()  # compounds (vacation mode) of a word always qualified
    unseen_elements: tuple[str, ...] = ()  # names of settings (pet detection) no chunk writes
    unstated: str = ""  # the kind of value asked for ("a price") that no retrieved chunk states
    height: float | None = None  # the best cosine from chance (0) to identity (1); None: no vectors
    unseen_things: tuple[str, ...] = ()  # things asked about (student discount) no chunk names
    # the learned confidence (twokeys.rag.confidence) that the sources answer, and the
    # operating point under which it abstains; when set, it decides alone
    probability: float | None = None
    threshold: float = 0.5

    @property
    def score(self) -> float:
        if self.dense is None:
            return self.lexical
        return self.dense + LEXICAL_WEIGHT * self.lexical

    @property
    def answerable(self) -> bool:
        if self.probability is not None:
            return self.probability >= self.threshold
        if self.missing or self.unseen_commands or self.unseen_menu_steps or self.unstated:
            return False
        if self.found:
            return True  # an identifier matched exactly: the strongest lexical evidence
        if self.unseen_things:
            return False  # a close page is about the topic, not the thing asked for
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
        """The names, phrases, kinds, elements and things of the query that no chunk holds."""
        return (
            self.unseen_names
            + self.unseen_phrases
            + self.unseen_kinds
            + self.unseen_elements
            + self.unseen_things
        )

    @property
    def reason(self) -> str:
        if self.probability is not None:
            side = "at least" if self.answerable else "under"
            return (
                f"the confidence that the sources answer is {self.probability:.2f}, "
                f"{side} the operating point {self.threshold:.2f}"
            )
        if self.unseen_commands and not self.missing:
            return f"the sources document no command {', '.join(self.unseen_commands)}"
        if self.unseen_menu_steps and not self.missing:
            return f"the sources document no menu entry {', '.join(self.unseen_menu_steps)}"
        if self.unstated and not self.missing:
            return f"the question asks for {self.unstated}, and no source found states one"
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
            "unseen_commands": list(self.unseen_commands),
            "unseen_menu_steps": list(self.unseen_menu_steps),
            "unseen_kinds": list(self.unseen_kinds),
            "unseen_elements": list(self.unseen_elements),
            "unseen_things": list(self.unseen_things),
            "unstated_answer_type": self.unstated or None,
            "probability": None if self.probability is None else round(self.probability, 4),
            "answerable": self.answerable,
            "reason": self.reason,
        }


def carry_unseen_things(confidence: Sequence[Confidence]) -> tuple[Confidence, ...]:
    """Each part's confidence, where a part that refers back to a thing an earlier part
    asked about and no chunk names ("Is there a free trial of the cloud plan, and how long
    does it last?") also has that thing unseen: what it asks about the thing (how long
    "it" lasts) the sources cannot answer either. A part refers back to it when the words
    it carries from the part before (:mod:`twokeys.rag.decompose`) name the thing."""
    out: list[Confidence] = []
    for c in confidence:
        carried = set(_WORD.findall(c.query[len(own_words(c.query)) :].lower()))
        things = tuple(
            dict.fromkeys(
                thing
                for earlier in out
                for thing in earlier.unseen_things
                if thing not in c.unseen_things and _names_thing(carried, thing)
            )
        )
        out.append(replace(c, unseen_things=c.unseen_things + things) if things else c)
    return tuple(out)


def _names_thing(words: set[str], thing: str) -> bool:
    """Whether ``words`` hold every word of ``thing``, or of one of its alternatives
    ("student discount or education discount")."""
    return any(
        all(w in words for w in _WORD.findall(alternative))
        for alternative in thing.lower().split(" or ")
    )


def retrieval_confidence(
    index: Index, query: str, retrieved: Sequence[str] | None = None
) -> Confidence:
    """Read both sensors for ``query`` (see the module docstring). ``retrieved``: the
    texts of the chunks retrieved to answer it (default: the hybrid top
    :data:`ANSWER_TYPE_K`), read for the value the question asks for."""
    bm25 = index.retriever(SearchRequest(query, retriever="bm25"))
    result = bm25.retrieve(query, 1)
    coverage = bm25.confidence(query, result.run)  # type: ignore[attr-defined]
    features = bm25.features(query, result)  # type: ignore[attr-defined]
    own = own_words(query)  # not the words a sub-query carries from the part before it
    names = tuple(n for n in _names(own) if not _indexed(index, n))
    kind = expected_type(query)
    if names or kind is not None:  # at most one search for both rules
        retrieved = _retrieved_texts(index, query, retrieved)
    names = _not_written_otherwise(index, names, retrieved or ())
    unstated = _unstated(index, query, kind, retrieved or ())
    if kind is not None and not unstated:
        # "How much RAM does it need": the name asks for the kind of value ("16 GB of
        # memory"), which a retrieved text states about the question's subject
        names = tuple(n for n in names if n.lower() not in kind.words.split())
    phrases = tuple(
        p for p in _name_runs(own) if not names and _indexed(index, p) and not _held(index, p)
    )
    inside = tuple(
        m
        for m in features.missing_identifiers
        if _written_inside(index, m) or _held_by_parts(index, m)
    )
    # a quantity written apart ("2.4 GHz") is no missing identifier, nor an identifying
    # string whose exact match vouches for the question
    apart = {m for m in features.missing_identifiers if _written_apart(index, m)}
    missing = tuple(m for m in features.missing_identifiers if m not in inside and m not in apart)
    peak, height = _dense_peak(index, query)
    return Confidence(
        query,
        coverage,
        peak,
        missing,
        (*features.identifiers, *inside),
        names,
        phrases,
        _unseen_commands(index, query),
        _unseen_menu_steps(index, query),
        () if names or phrases else _unseen_kinds(index, own),
        _unseen_elements(index, own),
        unstated,
        height,
        _unseen_things(index, own),
    )


def _unseen_elements(index: Index, query: str) -> tuple[str, ...]:
    """The names of the elements ``query`` names (:mod:`twokeys.rag.elements`) that no
    chunk documents: none of their writings has all its terms in the index, side by
    side in some chunk."""
    lexical = index.backend.lexical
    found = []
    for element in elements(query):
        if len(index.analyzer.query_terms(element.name)) != len(element.name.split()):
            continue  # a stopword inside: not a name
        written = (
            all(lexical.has_term(t) for t in index.analyzer.query_terms(w)) and _held(index, w)
            for w in element.writings()
        )
        if not any(written):
            found.append(element.name)
    return tuple(dict.fromkeys(found))


def _unseen_things(index: Index, query: str) -> tuple[str, ...]:
    """The names of the things ``query`` asks the existence of
    (:mod:`twokeys.rag.existence`) that no chunk names: none holds every analysed term of
    the name (past :data:`PHRASE_CANDIDATES` chunks holding its rarest term, it is taken
    as named); a thing asked with alternatives is unseen when none of them is named."""
    found = []
    for names in asked_for(query, index.analyzer):
        if not any(_named_together(index, name) for name in names):
            found.append(" or ".join(names))
    return tuple(found)


def _named_together(index: Index, name: str) -> bool:
    """Whether some chunk holds every analysed term of ``name``, in any order."""
    terms = index.analyzer.query_terms(name)
    if not terms:
        return True  # nothing to look for: no reason to abstain
    if not all(index.backend.lexical.has_term(t) for t in terms):
        return False
    return _some_chunk(index, terms, lambda held: set(terms) <= set(held))


def _retrieved_texts(index: Index, query: str, retrieved: Sequence[str] | None) -> Sequence[str]:
    """``retrieved``, or the texts of the hybrid (BM25 without vectors) top
    :data:`ANSWER_TYPE_K` for ``query``, as ``ask`` retrieves them."""
    if retrieved is not None:
        return retrieved
    dense = index.backend.vectors is not None and index.manifest.encoder is not None
    hits = index.search(query, mode="hybrid" if dense else "bm25", k=ANSWER_TYPE_K)
    return [hit.text for hit in hits]


_WORD = re.compile(r"(?<![\w'-])[^\W\d_]+(?:['-][^\W\d_]+)*(?![\w'-])")  # letters only, whole


def _not_written_otherwise(
    index: Index, names: Sequence[str], texts: Sequence[str]
) -> tuple[str, ...]:
    """``names`` less the letters-only ones a retrieved text writes another way: one of
    the words of ``texts`` (the first :data:`SAME_WORD_CANDIDATES`) is one the dense
    model reads as the same word, at a cosine of at least :data:`SAME_WORD` ("TV" and
    "television": 0.96; a country and its neighbour, a payment service and "payment", an
    acronym and the word it abbreviates in part, such as "RAM" and "memory", stay under
    0.75 in the support KB). A name with a digit (``ZX-4813``) is an identifier, matched
    as written, since its neighbours (``ZX-4812``) read alike. All ``names`` without an
    encoder. The words are encoded once, with every name."""
    letters = [n for n in names if not any(c.isdigit() for c in n)]
    if not letters or index.manifest.encoder is None:
        return tuple(names)
    words = list(dict.fromkeys(w.lower() for text in texts for w in _WORD.findall(text)))
    words = [w for w in words[:SAME_WORD_CANDIDATES] if len(w) > 1]
    if not words:
        return tuple(names)
    vectors = index.encoder.encode([*letters, *words], "document")
    best = (vectors[len(letters) :] @ vectors[: len(letters)].T).max(axis=0)
    seen = {n for n, cos in zip(letters, best, strict=True) if cos >= SAME_WORD}
    return tuple(n for n in names if n not in seen)


def _unstated(index: Index, query: str, kind: AnswerType | None, retrieved: Sequence[str]) -> str:
    """The name of ``kind``, the kind of value ``query`` asks for
    (:func:`~twokeys.rag.answer_types.expected_type`), when no ``retrieved`` text states
    one about its subject (holding a term of ``query`` besides the words that ask for the
    value; any text when ``query`` has no other term); "" when it asks for none or one
    states it."""
    if kind is None:
        return ""
    analyzer = index.analyzer
    subject = set(analyzer.query_terms(own_words(query))) - set(analyzer.query_terms(kind.words))
    unit = named_unit(query)
    for text in retrieved:
        if states(kind, text, unit) and (not subject or subject & set(analyzer.index_terms(text))):
            return ""
    return kind.name


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
    """Runs of two or more :func:`_names` separated by single spaces: ``Lumatek Smart Lock``.

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

    Only the chunks holding its rarest term are read (all of them, up to
    :data:`PHRASE_CANDIDATES`; past that the phrase is taken as held)."""
    terms = index.analyzer.query_terms(phrase)
    if len(terms) < 2:
        return True
    return _some_chunk(index, terms, lambda held: contains_sequence(held, terms))


def _some_chunk(index: Index, terms: Sequence[str], holds: Callable[[list[str]], bool]) -> bool:
    """Whether ``holds`` is true of the analysed terms of some chunk holding the rarest of
    ``terms`` (all in the index). Only those chunks are read, all of them up to
    :data:`PHRASE_CANDIDATES`; past that, True (it cannot be ruled out)."""
    texts = _texts_holding(index, [_rarest(index, terms)], complete=True)
    if texts is None:
        return True
    return any(holds(index.analyzer.query_terms(t)) for t in texts)


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


def _written_inside(index: Index, identifier: str) -> bool:
    """Whether some chunk writes a letters-only ``identifier`` (a query term) inside a
    longer token, at connector boundaries: ``/api/limits`` in ``.../api/limits``, never
    ``--download`` in ``download``. Only the chunks holding its rarest part are read."""
    if any(c.isdigit() for c in identifier):
        return False
    parts = [t for t in index.analyzer.index_terms(identifier) if t != identifier]
    lexical = index.backend.lexical
    if not parts or not all(lexical.has_term(t) for t in parts):
        return False
    texts = _texts_holding(index, [_rarest(index, parts)], complete=False) or []
    left = "" if not identifier[0].isalnum() else r"(?<![^\W_])"
    right = "" if not identifier[-1].isalnum() else r"(?![^\W_])"
    pattern = re.compile(left + re.escape(identifier) + right, re.IGNORECASE)
    return any(pattern.search(text) for text in texts)


_QUANTITY = re.compile(r"(\d+(?:[.,]\d+)?)([^\W\d_]+)")


def _written_apart(index: Index, identifier: str) -> bool:
    """Whether some chunk writes a number with a unit (``2.4ghz``, ``10w``: a query
    term) with a space between them, as "2.4 GHz" or "10 W": one quantity, written
    either way."""
    match = _QUANTITY.fullmatch(identifier)
    if match is None:
        return False
    phrase = f"{match.group(1)} {match.group(2)}"
    terms = index.analyzer.query_terms(phrase)
    lexical = index.backend.lexical
    return bool(terms) and all(lexical.has_term(t) for t in terms) and _held(index, phrase)


_DOTTED_NAME = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)+")
_SETTING = re.compile(r"([^\W\d]\w*)=(\w[\w.]*)")  # a keyword and its value: check=True


def _held_by_parts(index: Index, identifier: str) -> bool:
    """Whether some chunk holds each dotted part of a qualified name (a query term) as a
    word of its own: ``ftplib.FTP.getwelcome`` in a chunk of the ``ftplib`` page that
    writes ``FTP.getwelcome()``, ``select.poll.unregister`` where the page on ``select``
    writes ``poll.unregister(fd)``. Documentation names a member by a shorter path
    than its fully qualified one, the rest being the page or section it sits in. The
    same holds for the keyword and the value of a setting, ``ensure_ascii=false``: the
    page gives the keyword in a signature and says what a false one does.

    Only names whose parts all start with a letter or ``_`` qualify (``os.path.join``,
    ``imaplib.IMAP4``): a version or address (``1.2.10``, ``v5.0``, ``qwen2.5``) still
    matches whole, as digit-bearing identifiers do in search. A part is matched whole,
    case aside, at word boundaries (``path`` is not in ``sys_path``). The chunks read
    are BM25's best :data:`PHRASE_CANDIDATES` for the parts' terms."""
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


def _unseen_commands(index: Index, query: str) -> tuple[str, ...]:
    """The query's runs that name a subcommand no documented command has (module doc)."""
    known: dict[tuple[str, str], list[Command]] = {}
    found: list[str] = []
    for run in query_runs(query, index.analyzer):
        for start in heads(run):
            lead = (run[start].term, run[start + 1].term)
            if lead not in known:
                known[lead] = _commands_led(index, lead)
            unseen = unseen_subcommand(run, start, known[lead])
            if unseen is not None:
                found.append(unseen)
                break
    return tuple(dict.fromkeys(found))


def _unseen_menu_steps(index: Index, query: str) -> tuple[str, ...]:
    """The query's menu path, when it leaves the documented paths (:mod:`twokeys.rag.menus`).

    The documented paths are read from every chunk holding the term the query path's
    first step ends with, all of them or none (past :data:`PHRASE_CANDIDATES` such
    chunks the rule is off, so that it only fires on a complete view). Past a
    documented path's last step the pages may name that screen's entries in prose
    (``Open Settings > Hub > Storage and change clip retention``): there the step counts
    as documented when a chunk that writes that path holds the step's first two terms
    side by side (its only term, when it has one)."""
    pieces = query_path(query)
    if pieces is None:
        return ()
    head = head_term(pieces, index.analyzer)
    lexical = index.backend.lexical
    if head is None or not lexical.has_term(head):
        return ()
    texts = _texts_holding(index, [head], complete=True)
    if texts is None:
        return ()
    written = [(text, menu_paths(text, index.analyzer)) for text in texts]
    found = departure(pieces, [p for _, paths in written for p in paths], index.analyzer)
    if found is None:
        return ()
    if found.leaf:
        leaves = {p for p in found.matched if len(p) == found.depth}
        lead = list(found.step.parts[:2])
        for text, paths in written:
            if leaves.intersection(paths) and contains_sequence(
                index.analyzer.query_terms(text), lead
            ):
                return ()
    return (found.written,)


def _unseen_kinds(index: Index, query: str) -> tuple[str, ...]:
    """The query's compounds that qualify a kind word with a qualifier the pages never
    give it (:mod:`twokeys.rag.kinds`).

    A word's family is read from every chunk holding its term, all of them or none
    (past :data:`PHRASE_CANDIDATES` such chunks the word is taken as no kind word, so
    that the rule only fires on a complete view). A pair whose qualifier is not the
    rarer word is passed over before any chunk is read."""
    lexical = index.backend.lexical
    read: dict[str, tuple[frozenset[str] | None, set[tuple[str, str]]]] = {}
    found: list[str] = []
    for run in runs(query, index.analyzer):
        for qualifier, head in itertools.pairwise(run):
            if not lexical.has_term(head.term) or not _rarer(index, qualifier.term, head.term):
                continue
            if head.word not in read:
                read[head.word] = _family(index, head)
            unseen = unseen_kind((qualifier, head), *read[head.word], rarer=True)
            if unseen is not None:
                found.append(unseen)
    for asked in numbered(query, index.analyzer.query_terms):
        if not lexical.has_term(asked.term):
            continue
        members = _numbers(index, asked.term)
        unseen = unseen_number(asked, members) if members is not None else None
        if unseen is not None:
            found.append(unseen)
    return tuple(dict.fromkeys(found))


def _numbers(index: Index, term: str) -> set[int] | None:
    """The numbers the chunks holding ``term`` give it as members, in prose or in a
    table column it heads (:mod:`twokeys.rag.kinds`); None past :data:`PHRASE_CANDIDATES`
    such chunks."""
    texts = _texts_holding(index, [term], complete=True)
    if texts is None:
        return None
    found: set[int] = set()
    for text in texts:
        found.update(n.number for n in numbered(text, index.analyzer.query_terms) if n.term == term)
        found.update(table_members(text, index.analyzer.query_terms).get(term, ()))
    return found


def _rarer(index: Index, term: str, than: str) -> bool:
    """Whether fewer chunks hold ``term`` than ``than`` (a term of the index); a term
    the index lacks is the rarest."""
    lexical = index.backend.lexical
    if not lexical.has_term(term):
        return True
    mine, theirs = lexical.idf([term, than])
    return bool(mine > theirs)


def _family(index: Index, head: RunWord) -> tuple[frozenset[str] | None, set[tuple[str, str]]]:
    texts = _texts_holding(index, [head.term], complete=True)
    if texts is None:
        return None, set()
    written = [r for text in texts for r in runs(text, index.analyzer)]
    return qualifiers(head, written), written_pairs(written)


def _commands_led(index: Index, lead: tuple[str, str]) -> list[Command]:
    """The commands in the index's code lines that start with the two terms ``lead``.

    Only the chunks holding the rarer of the two are read, all of them or none: past
    :data:`PHRASE_CANDIDATES` such chunks the pair is taken to lead no command (a pair
    that common is prose), so a rule can only fire on a complete view."""
    lexical = index.backend.lexical
    if not all(lexical.has_term(t) for t in lead):
        return []
    texts = _texts_holding(index, [_rarest(index, lead)], complete=True)
    if texts is None:
        return []
    return [
        command
        for text in texts
        for line in code_lines(text)
        for command in commands(line, index.analyzer)
        if len(command) >= 2 and (command[0].term, command[1].term) == lead
    ]


def _indexed(index: Index, name: str) -> bool:
    terms = index.analyzer.query_terms(name)
    lexical = index.backend.lexical
    return not terms or all(lexical.has_term(t) for t in terms)


def _dense_peak(index: Index, query: str) -> tuple[float | None, float | None]:
    """The dense peak and the dense height of ``query`` (module docstring); (None, None)
    without vectors."""
    vectors = index.backend.vectors
    if vectors is None or index.manifest.encoder is None:
        return None, None
    n = int(index.manifest.counts.get("chunks", 0))
    if n < 2:
        return None, None
    vector = index.encoder.encode_query(query)
    top = vectors.search(vector, 1)
    if not top:
        return None, None
    rows = np.unique(np.linspace(0, n - 1, min(n, DENSE_SAMPLE)).astype(np.int64))
    sims = vectors.similarities(vector, rows)
    chance, sd = float(sims.mean()), float(sims.std())
    height = (top[0].score - chance) / (1.0 - chance) if chance < 1.0 else None
    if sd <= 0:
        return None, height
    return (top[0].score - chance) / sd, height
