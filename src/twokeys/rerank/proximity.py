"""Term-proximity reranking: BM25TP's proximity score over the analysed passage text.

Rasolofo & Savoy, "Term Proximity Scoring for Keyword-Based Retrieval Systems" (ECIR
2003). Two different query terms ``ti``, ``tj`` found at most ``window`` positions apart
contribute ``tpi = 1 / d**2`` for a distance ``d``; per pair the contributions are summed
over the passage (``acc``) and saturated like a BM25 term frequency::

    TPRSV = sum over pairs  min(idf_i, idf_j) * (k1 + 1) * acc / (K + acc)
    K     = k1 * ((1 - b) + b * length / average length)

Positions are those of the index terms of :meth:`twokeys.analysis.Analyzer.index_terms`
(stopwords removed, an identifier followed by its parts); the average length is taken
over the passages being reranked; idf comes from the index's BM25 statistics once the
reranker is bound to an index (:meth:`ProximityReranker.for_index`), else every term
weighs 1.

The paper adds TPRSV to BM25; here it is blended with the first-stage (hybrid) score,
both min-max normalised over the reranked head, the first stage weighted ``blend``.

**Off by default: it does not help enough to be worth it.** ``window = 5`` (the paper's)
and ``blend = 0.85`` were picked on SciFact train (809 queries; every blend in 0.8-0.95
and window in 3-20 gave +0.002 to +0.005). nDCG@10 against the adaptive hybrid of
2026-11-30, its top 20 reranked, chunk hits collapsed to 100 documents; p: paired
randomisation test, 10,000 sign flips:

==============  ======  ==========  =======  =========  ====
collection      hybrid  +proximity  delta    W/T/L      p
==============  ======  ==========  =======  =========  ====
SciFact train   0.7263  0.7280      +0.0017  43/728/38  0.47
SciFact test    0.7117  0.7164      +0.0047  19/266/15  0.30
ADI             0.5474  0.5460      -0.0014  8/18/9     0.91
MEDLINE         0.8057  0.8068      +0.0010  10/14/6    0.88
Cranfield       0.4178  0.4197      +0.0018  62/112/51  0.65
CISI            0.4477  0.4480      +0.0003  22/26/28   0.97
CACM            0.5211  0.5273      +0.0061  12/21/19   0.85
==============  ======  ==========  =======  =========  ====

Reranking the top 30 instead gives the same picture (SciFact test +0.0042, CACM
+0.0147, none significant). It adds about 25 ms a query (SciFact, 2 cores: 57 ms for
the hybrid, 82 ms with proximity).

Small, mostly positive and never significant. Ask for it with ``--rerank proximity``
or ``--mode hybrid+proximity``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np

from twokeys.analysis import Analyzer
from twokeys.errors import ConfigError
from twokeys.rerank.base import IndexView, Reranker, Scores

IdfLookup = Callable[[Sequence[str]], list[float]]


def proximity_scores(
    query_terms: Sequence[str],
    passages: Sequence[Sequence[str]],
    idf: Sequence[float],
    *,
    window: int = 5,
    k1: float = 1.2,
    b: float = 0.75,
) -> Scores:
    """TPRSV of each passage (a list of terms) for ``query_terms`` weighted by ``idf``."""
    weight = dict(zip(query_terms, idf, strict=True))
    lengths = np.array([len(p) for p in passages], np.float64)
    average = float(lengths.mean()) if lengths.size and lengths.mean() > 0 else 1.0
    out = np.zeros(len(passages), np.float64)
    for n, terms in enumerate(passages):
        hits = [(i, t) for i, t in enumerate(terms) if t in weight]
        acc: dict[tuple[str, str], float] = defaultdict(float)
        for a, (pos_a, term_a) in enumerate(hits):
            for pos_b, term_b in hits[a + 1 :]:
                distance = pos_b - pos_a
                if distance > window:
                    break
                if term_a != term_b:
                    pair = (term_a, term_b) if term_a < term_b else (term_b, term_a)
                    acc[pair] += 1.0 / distance**2
        norm = k1 * ((1.0 - b) + b * lengths[n] / average)
        out[n] = sum(
            min(weight[ti], weight[tj]) * (k1 + 1.0) * value / (norm + value)
            for (ti, tj), value in acc.items()
        )
    return out


class ProximityReranker(Reranker):
    """BM25TP-style term-proximity bonus, blended with the first-stage score (off by default)."""

    name = "proximity"

    def __init__(
        self,
        analyzer: Analyzer | None = None,
        idf: IdfLookup | None = None,
        *,
        blend: float = 0.85,
        window: int = 5,
    ) -> None:
        if not 0.0 <= blend <= 1.0:
            raise ConfigError(f"proximity.blend: must be in [0, 1], got {blend}")
        if window < 1:
            raise ConfigError(f"proximity.window: must be >= 1, got {window}")
        self.analyzer = analyzer or Analyzer()
        self.idf = idf
        self.blend = blend
        self.window = window

    def for_index(self, index: IndexView) -> Reranker:
        return ProximityReranker(
            index.analyzer, index.backend.lexical.idf, blend=self.blend, window=self.window
        )

    def score(self, query: str, passages: Sequence[str]) -> Scores:
        terms = list(dict.fromkeys(self.analyzer.query_terms(query)))
        idf = self.idf(terms) if self.idf is not None and terms else [1.0] * len(terms)
        analysed = [self.analyzer.index_terms(p) for p in passages]
        return proximity_scores(terms, analysed, idf, window=self.window)
