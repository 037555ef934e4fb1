"""A retriever whose top-N is re-ordered by a :class:`~twokeys.rerank.base.Reranker`.

It asks the inner retriever (the hybrid, usually) for ``max(k, top_n)`` rows, reads the
texts of the first ``top_n`` through the index backend (as they were indexed: heading
line or title, then the body), re-scores them and re-orders them; the rest follows in
its original order. Each re-scored row gets an extra :class:`~twokeys.types.Evidence`
``rerank`` entry: its rank and raw score by the reranker alone.

The ``hybrid+<reranker>`` mode shorthands (``hybrid+e5``, ``hybrid+proximity``) are a
request's ``reranker`` field (:mod:`twokeys.request`).
"""

from __future__ import annotations

from twokeys.errors import ConfigError
from twokeys.rerank.base import Reranker, reorder
from twokeys.retrievers.base import Retriever, RetrieverResult, indexed_texts
from twokeys.store.base import IndexBackend
from twokeys.types import Evidence

DEFAULT_TOP_N = 20  # what the rerankers were measured with (twokeys.rerank.e5, .proximity)


class RerankingRetriever(Retriever):
    name = "rerank"

    def __init__(
        self,
        inner: Retriever,
        reranker: Reranker,
        backend: IndexBackend,
        *,
        top_n: int = DEFAULT_TOP_N,
    ) -> None:
        if top_n < 1:
            raise ConfigError(f"rerank_top: must be >= 1, got {top_n}")
        self.inner = inner
        self.reranker = reranker
        self.backend = backend
        self.top_n = top_n

    def retrieve(self, query: str, k: int, *, explain: bool = False) -> RetrieverResult:
        result = self.inner.retrieve(query, max(k, self.top_n), explain=explain)
        head = list(result.run[: self.top_n])
        passages = indexed_texts(self.backend, [s.row for s in head])
        scores = self.reranker.score(query, passages)
        run = reorder(result.run, scores, blend=self.reranker.blend)[:k]
        if not explain:
            return RetrieverResult(run)
        order = sorted(range(len(head)), key=lambda i: (-float(scores[i]), i))
        own = {
            head[i].row: Evidence(self.reranker.name, rank, float(scores[i]))
            for rank, i in enumerate(order, 1)
        }
        evidence = {
            s.row: (*result.evidence.get(s.row, ()), *((own[s.row],) if s.row in own else ()))
            for s in run
        }
        return RetrieverResult(run, evidence)
