"""Retrieval evidence for one question: the numbers the learned confidence reads.

Every feature is general, read from the two sensors and the retrieved passages, never
from a collection's vocabulary (:mod:`twokeys.rag.confidence` weighs them):

* ``lexical``: the share of the question's idf mass the best BM25 chunk matches;
* ``unseen``: the share of the question's terms (by count) the collection never uses;
* ``missing_ids``: identifier-like words (``ZX-9001``, ``--frobnicate``) no chunk holds;
* ``dense_peak``: the best chunk cosine above the question's typical cosine to the
  collection, in standard deviations; ``dense_height``: the same from chance (0) to
  identity (1);
* ``agreement``: the overlap of the BM25 and dense top 10 (Jaccard);
* ``held_passage`` / ``held_sentence``: the most of the question's idf mass one of the
  first five fused passages holds, and one of their sentences;
* ``cosine_sentence``: the best query-sentence cosine among those sentences (0 without
  a dense model);
* ``margin``: the fused score gap between the first and second hit, relative to the first;
* ``page_share``: the share of the first ten fused hits that come from the first hit's
  page (retrieval that found *the* page piles its chunks on top; a question the
  collection does not answer scatters over pages that each share a word or two);
* ``page_margin``: the fused score gap between the first hit and the best hit from
  another page, relative to the first (1 when every hit is from one page): the
  ``margin`` between pages rather than between chunks, which a page's own second chunk
  does not hide.

A model's own verdict is not among them: it is weighed by that model's measured
reliability (:mod:`twokeys.rag.verdicts`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial

import numpy as np

from twokeys.engine import Index
from twokeys.fusion.adaptive import QueryFeatures
from twokeys.request import SearchRequest
from twokeys.text.sentences import split_sentences
from twokeys.types import Hit, ScoredChunk

NAMES = (
    "lexical",
    "unseen",
    "missing_ids",
    "dense_peak",
    "dense_height",
    "agreement",
    "held_passage",
    "held_sentence",
    "cosine_sentence",
    "margin",
    "page_share",
    "page_margin",
)
AGREEMENT_K = 10
READ = 5  # fused passages read for the held and cosine features
PAGE_TOP = 10  # fused hits page_share reads
DENSE_SAMPLE = 512


@dataclass(frozen=True, slots=True)
class Evidence:
    """The features of one question (module docstring)."""

    lexical: float
    unseen: float
    missing_ids: float
    dense_peak: float
    dense_height: float
    agreement: float
    held_passage: float
    held_sentence: float
    cosine_sentence: float
    margin: float
    page_share: float
    page_margin: float

    def as_features(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}


Held = Callable[[str], float]


def idf_held(index: Index, query: str) -> Held:
    """``held(text)``: the share of ``query``'s idf mass (terms the collection uses)
    that ``text`` holds."""
    analyzer, lexical = index.analyzer, index.backend.lexical
    terms = [t for t in dict.fromkeys(analyzer.query_terms(query)) if lexical.has_term(t)]
    weights = dict(zip(terms, lexical.idf(terms), strict=True))
    total = sum(weights.values()) or 1.0

    def held(text: str) -> float:
        words = set(analyzer.index_terms(text))
        return sum(w for t, w in weights.items() if t in words) / total

    return held


def sentence_similarity(index: Index) -> Callable[[str, Sequence[str]], list[float]] | None:
    """``similarity(query, texts)``: the dense model's cosine of ``query`` to each text;
    None without a dense model."""
    if index.manifest.encoder is None or index.backend.vectors is None:
        return None
    encoder = index.encoder

    def similarity(query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        return [
            float(x) for x in encoder.encode(list(texts), "document") @ encoder.encode_query(query)
        ]

    return similarity


def gather(
    index: Index,
    query: str,
    hits: Sequence[Hit],
    *,
    cosines: Callable[[Sequence[str]], Sequence[float]] | None = None,
) -> Evidence:
    """The evidence for ``query`` whose fused hits are ``hits`` (best first)."""
    lexical_run, features = lexical_reading(index, query, AGREEMENT_K)
    terms = index.analyzer.query_terms(query)
    counts = Counter(terms)
    unseen = sum(c for t, c in counts.items() if not index.backend.lexical.has_term(t))
    peak, height, dense_rows = dense_levels(index, query, AGREEMENT_K)
    lexical_rows = {s.row for s in lexical_run}
    union = lexical_rows | dense_rows
    agreement = len(lexical_rows & dense_rows) / len(union) if union else 0.0
    held = idf_held(index, query)
    read = list(hits[:READ])
    sentences = [h.text[s:e] for h in read for s, e in split_sentences(h.text)]
    similarity = sentence_similarity(index) if cosines is None else None
    if similarity is not None:
        cosines = partial(similarity, query)
    best_cosine = max(cosines(sentences), default=0.0) if cosines and sentences else 0.0
    margin = 0.0
    if len(hits) >= 2 and hits[0].score > 0:
        margin = (hits[0].score - hits[1].score) / hits[0].score
    share, page_margin = _pages(hits)
    return Evidence(
        lexical=features.lexical_confidence,
        unseen=unseen / len(terms) if terms else 1.0,
        missing_ids=float(len(features.missing_identifiers)),
        dense_peak=peak if peak is not None and math.isfinite(peak) else 0.0,
        dense_height=height or 0.0,
        agreement=agreement,
        held_passage=max((held(h.text) for h in read), default=0.0),
        held_sentence=max((held(s) for s in sentences), default=0.0),
        cosine_sentence=best_cosine,
        margin=margin,
        page_share=share,
        page_margin=page_margin,
    )


def _pages(hits: Sequence[Hit]) -> tuple[float, float]:
    """``page_share`` and ``page_margin`` (module docstring) of the fused ``hits``; zeros
    without hits, and a margin of 0 when the first hit does not score above 0."""
    if not hits:
        return 0.0, 0.0
    page = hits[0].chunk.doc_id
    top = hits[:PAGE_TOP]
    share = sum(h.chunk.doc_id == page for h in top) / len(top)
    first = hits[0].score
    if first <= 0:
        return share, 0.0
    other = next((h.score for h in hits[1:] if h.chunk.doc_id != page), None)
    return share, 1.0 if other is None else (first - other) / first


def lexical_reading(index: Index, query: str, k: int) -> tuple[list[ScoredChunk], QueryFeatures]:
    """BM25's top ``k`` for ``query`` and what it reads from the query and that run
    (identifiers found and missing, the best chunk's share of the idf mass)."""
    bm25 = index.retriever(SearchRequest(query, retriever="bm25"))
    result = bm25.retrieve(query, k)
    return list(result.run), bm25.features(query, result)  # type: ignore[attr-defined]


def dense_levels(
    index: Index, query: str, k: int = 1
) -> tuple[float | None, float | None, set[int]]:
    """The dense peak and the dense height of ``query`` (module docstring) and the rows of
    its dense top ``k``; no peak when the sampled cosines do not spread, no height when
    their mean is 1, neither (and no rows) without vectors."""
    vectors = index.backend.vectors
    n = int(index.manifest.counts.get("chunks", 0))
    if vectors is None or index.manifest.encoder is None or n < 2:
        return None, None, set()
    vector = index.encoder.encode_query(query)
    top = vectors.search(vector, k)
    if not top:
        return None, None, set()
    rows = np.unique(np.linspace(0, n - 1, min(n, DENSE_SAMPLE)).astype(np.int64))
    sims = vectors.similarities(vector, rows)
    chance, sd = float(sims.mean()), float(sims.std())
    best = float(top[0].score)
    height = (best - chance) / (1.0 - chance) if chance < 1.0 else None
    peak = (best - chance) / sd if sd > 0 else None
    return peak, height, {int(s.row) for s in top}
