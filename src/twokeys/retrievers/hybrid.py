"""Hybrid retrieval: run BM25 and dense separately, then fuse the two rankings.

Fusions (``fusion=``):

* ``rrf``: Reciprocal Rank Fusion, ``sum 1/(k + rank)`` (:mod:`twokeys.fusion.rrf`).
* ``rrf-confidence``: weighted RRF, the lexical run weighted by the square of its
  confidence (:mod:`twokeys.fusion.confidence`).
* ``minmax``, ``zscore``, ``dbsf``, ``chance``: convex combination of normalised scores
  with a fixed lexical weight (:mod:`twokeys.fusion.convex`,
  :mod:`twokeys.fusion.normalization`; ``chance`` measures each run from its sensor's
  chance level).
* ``adaptive``: per-query weights from the query's identifiers, anchors (terms only
  exact matching can see, by the sensors' evidence), quoted strings, lexical
  confidence, length and the two sensors' agreement, identifiers matched exactly
  ranked first
  (:mod:`twokeys.fusion.adaptive`), and above them a chunk among BM25's first hits that
  holds the whole query word for word when the hybrid is given ``texts`` (the index's
  chunk texts, as :meth:`twokeys.engine.Index.retriever` gives them;
  :mod:`twokeys.fusion.verbatim`), and first among those of equal exact-term count one
  that holds every word of the query, all but one word for word; given ``units``
  (``Index.page_units()``, not the default), the chunks of one PDF page are scored as
  the page (:mod:`twokeys.fusion.units`);
  given ``headings`` (the document id and heading line of chunk rows, as
  ``Index.retriever`` gives them), among BM25's candidates holding a name the query
  writes beside words, those under the one heading that holds and names it rank
  first below the exact tier (:mod:`twokeys.fusion.headings`); given ``texts`` and
  ``headings``, so do the chunks among BM25's candidates that define such a name written
  as a path (a line opening with it or its last name as a signature or a definition
  term), when they are one place's and the dense run's first page holds one of them
  (:mod:`twokeys.fusion.definitions`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np

from twokeys.errors import ConfigError
from twokeys.fusion.adaptive import (
    AdaptiveParams,
    QueryFeatures,
    adaptive_fusion,
    anchor_terms,
    lexical_weight,
    semantic_support,
    unconfirmed,
)
from twokeys.fusion.convex import convex_combination
from twokeys.fusion.definitions import defining_rows, name_spellings
from twokeys.fusion.headings import headed_rows, name_forms
from twokeys.fusion.nearmiss import is_code, near_miss_rows
from twokeys.fusion.normalization import NORMALIZERS, normalized_scores, normalizer
from twokeys.fusion.rrf import DEFAULT_K, check_k, rrf, rrf_term
from twokeys.fusion.verbatim import LEXICAL_TOP, held_but_one_rows, verbatim_rows
from twokeys.lexical.index import slotted_values
from twokeys.retrievers.base import Retriever, RetrieverResult
from twokeys.retrievers.dense import DenseRetriever
from twokeys.retrievers.lexical import BM25Retriever
from twokeys.types import Evidence, ScoredChunk

T = TypeVar("T")
#: a reader of chunk rows' values (texts, heading lines), in the rows' order
RowReader = Callable[[Sequence[int]], Sequence[T]]

FUSIONS = ("adaptive", "rrf", "rrf-confidence", *NORMALIZERS)
DEFAULT_FUSION = "adaptive"
DEFAULT_CANDIDATES = 100  # per-retriever depth fused
DEFAULT_LEXICAL_WEIGHT = 0.45  # BM25's weight in the fixed-weight convex fusions


@dataclass(frozen=True)
class RuleRows:
    """The rows the adaptive fusion's text-reading rules single out for one query."""

    verbatim: frozenset[int]  # BM25's first rows holding the whole query
    held_but_one: frozenset[int]  # ... holding all its words, all but one in its order
    headed: frozenset[int]  # rows under the one heading naming the query's name
    defined: frozenset[int]  # rows defining a name the query writes as a path
    near_miss: frozenset[int]  # rows writing a near-miss of the query's code, not it


class HybridRetriever(Retriever):
    name = "hybrid"

    def __init__(
        self,
        lexical: BM25Retriever,
        dense: DenseRetriever,
        *,
        candidates: int = DEFAULT_CANDIDATES,
        fusion: str = DEFAULT_FUSION,
        k: float = DEFAULT_K,
        lexical_weight: float = DEFAULT_LEXICAL_WEIGHT,
        adaptive: AdaptiveParams | None = None,
        units: Mapping[int, int] | None = None,
        texts: Callable[[Sequence[int]], Sequence[str]] | None = None,
        headings: Callable[[Sequence[int]], Sequence[tuple[str, str]]] | None = None,
    ) -> None:
        if candidates < 1:
            raise ConfigError(f"candidates: must be >= 1, got {candidates}")
        if fusion not in FUSIONS:
            raise ConfigError(f"fusion: {fusion!r} is not one of {', '.join(FUSIONS)}")
        k = check_k(k)
        if not 0.0 <= lexical_weight <= 1.0:  # NaN fails this test too
            raise ConfigError(f"lexical_weight: must be in [0, 1], got {lexical_weight}")
        self.lexical = lexical
        self.dense = dense
        self.candidates = candidates
        self.fusion = fusion
        self.k = k
        self.lexical_weight = lexical_weight
        self.adaptive = adaptive or AdaptiveParams()
        #: row -> cited unit (a PDF page) for the adaptive fusion (:mod:`twokeys.fusion.units`)
        self.units = units or {}
        #: the texts of chunk rows, for the adaptive fusion's text-reading rules
        #: (:meth:`rule_rows`: the verbatim and held-but-one rules,
        #: :mod:`twokeys.fusion.verbatim`; with ``headings``, the definition and
        #: near-miss rules); None: those rules are off
        self.texts = texts
        #: the document ids and heading lines of chunk rows, for the heading rule
        #: (:mod:`twokeys.fusion.headings`) and, with ``texts``, the definition and
        #: near-miss rules; None: those rules are off
        self.headings = headings

    def retrieve(self, query: str, k: int, *, explain: bool = False) -> RetrieverResult:
        depth = max(k, self.candidates)
        # the runs unexplained: only the hits returned are explained, below
        lex = self.lexical.retrieve(query, depth)
        vector = self.dense.encoder.encode_query(query)
        den = self.dense.retrieve_vector(vector, depth)
        runs = {self.lexical.name: lex.run, self.dense.name: den.run}

        def similarity(row: int) -> float:
            return self.dense.index.similarity(vector, row)

        fused, weights, parts = self._fuse(
            query, runs, lex, den.chance, similarity, explain, limit=k
        )
        fused = fused[:k]
        evidence: dict[int, tuple[Evidence, ...]] = {}
        if explain:
            returned = {hit.row for hit in fused}
            lexical = self.lexical.explain_hits(query, [h for h in lex.run if h.row in returned])
            dense = self.dense.explain_hits([h for h in den.run if h.row in returned])
            evidence = _weighted_evidence(
                [hit.row for hit in fused],
                ((self.lexical.name, lexical), (self.dense.name, dense)),
                parts,
                weights,
            )
        return RetrieverResult(fused, evidence)

    def _fuse(
        self,
        query: str,
        runs: Mapping[str, Sequence[ScoredChunk]],
        lex: RetrieverResult,
        dense_chance: float,
        similarity: Callable[[int], float],
        explain: bool = False,
        limit: int | None = None,
    ) -> tuple[list[ScoredChunk], dict[str, float], dict[str, dict[int, float]]]:
        """Fused run, per-run weights, and, to ``explain`` a search, each run's
        contribution per row (``dense_chance``: the dense run's chance level, BM25's is 0;
        ``similarity(row)``: a chunk's cosine to the query). ``limit``: the fused run
        may stop after that many entries (the caller reads no more)."""
        lname, dname = self.lexical.name, self.dense.name
        if not runs[lname] and self.fusion not in ("rrf", "rrf-confidence"):
            # no lexical evidence (a query of stopwords or punctuation): the dense run
            # alone, with its own scores; min-max would give its best hit a fake 1.0
            return (
                list(runs[dname]),
                {lname: 0.0, dname: 1.0},
                {dname: {h.row: h.score for h in runs[dname]}} if explain else {},
            )
        if self.fusion in ("rrf", "rrf-confidence"):
            w = 1.0
            if self.fusion == "rrf-confidence":
                w = self.lexical.confidence(query, lex.run) ** 2
            weights = {lname: w, dname: 1.0}
            parts = (
                {
                    name: {h.row: weights[name] * rrf_term(h.rank, self.k) for h in run}
                    for name, run in runs.items()
                }
                if explain
                else {}
            )
            return rrf(runs, self.k, weights), weights, parts
        if self.fusion == "adaptive":
            # what the rules read, from the first `candidates` entries of each run (and
            # the true cosine of BM25's top hit): the fused top does not depend on how
            # deep the caller asked
            lexical_run, dense_run = runs[lname], runs[dname]
            pool_dense = dense_run[: self.candidates]
            features = self.lexical.features(query, lex)
            dense_top = [h.row for h in dense_run[: self.adaptive.dense_top]]
            evidence = self.lexical.term_evidence(
                query, lexical_run, dense_top, self.dense.encoder.count_tokens
            )
            anchors = anchor_terms(
                evidence, self.adaptive.anchor_share, self.adaptive.rare_chunk_share
            )
            features = replace(
                features,
                anchors=anchors,
                unconfirmed=unconfirmed(features.identifiers, evidence, features.one_word),
            )
            top = lexical_run[0].row
            missing = bool(pool_dense) and all(h.row != top for h in pool_dense)
            support = semantic_support(
                lexical_run, pool_dense, similarity(top) if missing else None
            )
            alpha = lexical_weight(features, self.adaptive, support)
            method = self.adaptive.normalization
            exact = _exact_matches(features, lex, self.lexical, self.candidates)
            rules = self.rule_rows(query, features, lex, dense_run, dense_top)
            fused = adaptive_fusion(
                lexical_run,
                dense_run,
                features,
                exact,
                self.adaptive,
                self.candidates,
                alpha,
                (lex.chance, dense_chance),
                self.units,
                rules.verbatim,
                limit,
                rules.headed | rules.defined,
                rules.near_miss,
                rules.held_but_one,
            )
        else:
            alpha = self.lexical_weight
            method = self.fusion
        levels = {lname: lex.chance, dname: dense_chance}
        weights = {lname: alpha, dname: 1.0 - alpha}
        if self.fusion != "adaptive":
            norms = {name: normalizer(method, self.candidates, levels[name]) for name in runs}
            fused = convex_combination(runs, weights, norms)
        parts = {}
        if explain:  # each run's weighted normalised scores, as the normalisers give them
            for name, run in runs.items():
                scores = np.fromiter((h.score for h in run), np.float64, len(run))
                if len(run):
                    scores = weights[name] * normalized_scores(
                        method, scores, self.candidates, levels[name]
                    )
                parts[name] = dict(zip([h.row for h in run], scores.tolist(), strict=True))
        return fused, weights, parts

    def rule_rows(
        self,
        query: str,
        features: QueryFeatures,
        lex: RetrieverResult,
        dense_run: Sequence[ScoredChunk],
        dense_top: Sequence[int],
    ) -> RuleRows:
        """The rows the adaptive fusion's text-reading rules single out for ``query``
        (``features``: BM25's reading of it; ``lex``: BM25's result; ``dense_run``: the
        dense run; ``dense_top``: its first rows). The rules read overlapping rows: each
        row's text and heading line is fetched once."""
        texts, headings = _memoized(self.texts), _memoized(self.headings)
        held: frozenset[int] = frozenset()
        almost: frozenset[int] = frozenset()
        if texts is not None and not features.one_word:
            top_rows = [h.row for h in lex.run[: min(LEXICAL_TOP, self.candidates)]]
            held = verbatim_rows(query, top_rows, texts)
            almost = held_but_one_rows(query, top_rows, texts)
        return RuleRows(
            held,
            almost,
            self._headed(query, features, lex, headings),
            self._defined(query, features, lex, dense_top, texts, headings),
            self._near_miss(query, features, lex.run, dense_run, texts, headings),
        )

    def _near_miss(
        self,
        query: str,
        features: QueryFeatures,
        lexical: Sequence[ScoredChunk],
        dense: Sequence[ScoredChunk],
        texts: RowReader[str] | None,
        headings: RowReader[tuple[str, str]] | None,
    ) -> frozenset[int]:
        """Among both runs' first ``candidates`` hits, the rows that write a near-miss of a
        code the query names and the corpus holds, and not the code
        (:mod:`twokeys.fusion.nearmiss`); none without ``texts`` and ``headings``."""
        if texts is None or headings is None or not features.identifiers:
            return frozenset()
        analyzer = self.lexical.analyzer
        held = set(features.identifiers)
        codes = [
            token.text
            for token in analyzer.tokens(query)
            if is_code(token.text)
            and (terms := analyzer.query_terms(token.text))
            and terms[0] in held
        ]
        if not codes:
            return frozenset()
        rows = list(
            dict.fromkeys(h.row for h in [*lexical[: self.candidates], *dense[: self.candidates]])
        )
        text_of, heading_of = texts, headings

        def read(rows: Sequence[int]) -> list[str]:
            lines = heading_of(rows)
            pairs = zip(lines, text_of(rows), strict=True)
            return [f"{line}\n{text}" for (_, line), text in pairs]

        return near_miss_rows(codes, rows, read)

    def _headed(
        self,
        query: str,
        features: QueryFeatures,
        lex: RetrieverResult,
        headings: RowReader[tuple[str, str]] | None,
    ) -> frozenset[int]:
        """Among BM25's first ``candidates`` hits, the rows under the one heading that
        holds a name the query writes beside other words, when that heading names it
        (:mod:`twokeys.fusion.headings`); none for a one-word query, one without
        identifiers, or without ``headings``."""
        if headings is None or features.one_word or not features.identifiers:
            return frozenset()
        analyzer = self.lexical.analyzer
        raws = [token.text for token in analyzer.tokens(query)]
        forms = name_forms(raws, features.identifiers, analyzer.query_terms)
        if not forms:
            return frozenset()
        rows = [hit.row for hit in lex.run[: self.candidates]]
        found = self.lexical.index.explain_many(sorted(forms), rows)
        holding = [row for row, terms in zip(rows, found, strict=True) if terms]

        def lead_terms(text: str) -> tuple[str, ...]:
            tokens = analyzer.tokens(text)
            return analyzer.terms_of(tokens[0], for_query=False) if tokens else ()

        return headed_rows(holding, headings, forms, analyzer.index_terms, lead_terms)

    def _defined(
        self,
        query: str,
        features: QueryFeatures,
        lex: RetrieverResult,
        dense_top: Sequence[int],
        texts: RowReader[str] | None,
        headings: RowReader[tuple[str, str]] | None,
    ) -> frozenset[int]:
        """Among BM25's first ``candidates`` hits, the rows that define a name the query
        writes as a path beside other words, when they are one place's, hold those words,
        and one of them is among ``dense_top`` (the dense run's first rows;
        :mod:`twokeys.fusion.definitions`); none for a one-word query, one without
        identifiers, or without ``texts`` and ``headings``."""
        if texts is None or headings is None or features.one_word or not features.identifiers:
            return frozenset()
        analyzer = self.lexical.analyzer
        raws = [token.text for token in analyzer.tokens(query)]
        spellings = name_spellings(raws, features.identifiers, analyzer.query_terms)
        named = {t for s in spellings for t in analyzer.query_terms(s)}
        words = sorted(set(analyzer.query_terms(query)) - named)
        index = self.lexical.index

        def described(rows: Sequence[int]) -> list[bool]:
            return [bool(held) for held in index.explain_many(words, rows)]

        rows = [hit.row for hit in lex.run[: self.candidates]]
        return defining_rows(rows, texts, headings, spellings, frozenset(dense_top), described)


def _memoized(read: RowReader[T] | None) -> RowReader[T] | None:
    """``read`` that fetches each row once over its life (one query's fusion): a call
    reads only the rows no earlier call asked for, in one batch."""
    if read is None:
        return None
    seen: dict[int, T] = {}

    def memo(rows: Sequence[int]) -> Sequence[T]:
        missing = list(dict.fromkeys(row for row in rows if row not in seen))
        if missing:
            seen.update(zip(missing, read(missing), strict=True))
        return [seen[row] for row in rows]

    return memo


#: the slots of an :class:`Evidence`, in the order of its fields
_EVIDENCE_SLOTS = ("retriever", "rank", "score", "fused", "weight", "matched_terms")


def _weighted_evidence(
    rows: Sequence[int],
    found: Sequence[tuple[str, Mapping[int, tuple[Evidence, ...]]]],
    parts: Mapping[str, Mapping[int, float]],
    weights: Mapping[str, float],
) -> dict[int, tuple[Evidence, ...]]:
    """Per row of ``rows``, each run's evidence of it (``found``: a run's name and its
    retriever's evidence per row, in the order the runs are listed) with that run's
    share of the fused score (``parts[name][row]``, 0.0 where absent) and weight.

    The values are made in one call (:func:`slotted_values`), the fields those
    ``Evidence(retriever, rank, score, fused=..., weight=..., matched_terms=...)`` sets."""
    owners: list[int] = []
    sources: list[Evidence] = []
    shares: list[float] = []
    run_weights: list[float] = []
    for row in rows:
        for name, table in found:
            for ev in table.get(row, ()):
                owners.append(row)
                sources.append(ev)
                shares.append(parts[name].get(row, 0.0))
                run_weights.append(weights[name])
    columns = (
        [ev.retriever for ev in sources],
        [ev.rank for ev in sources],
        [ev.score for ev in sources],
        shares,
        run_weights,
        [ev.matched_terms for ev in sources],
    )
    made = slotted_values(Evidence, _EVIDENCE_SLOTS, columns) if sources else []
    out: dict[int, list[Evidence]] = {row: [] for row in rows}
    for row, ev in zip(owners, made, strict=True):
        out[row].append(ev)
    return {row: tuple(items) for row, items in out.items()}


def _exact_matches(
    features: QueryFeatures, lex: RetrieverResult, lexical: BM25Retriever, depth: int
) -> dict[int, int]:
    """How many of the query's identifiers each of the first ``depth`` lexical hits
    contains (hits with none left out).

    Asks the index once for all of them, and only for queries that name an
    identifier: most queries never pay for it.
    """
    wanted = features.exact_terms
    if not wanted:
        return {}
    rows = [hit.row for hit in lex.run[:depth]]
    out: dict[int, int] = {}
    for row, found in zip(rows, lexical.index.explain_many(wanted, rows), strict=True):
        if found:  # the distinct terms of ``wanted`` the row holds, each once
            out[row] = len(found)
    return out
