"""The search engine over one index: open it, pick a mode, get typed hits.

import twokeys
kb = twokeys.open_index("kb.twokeys")
for hit in kb.search("What does error code ZX-4821 mean?", k=5):
    print(hit.rank, hit.path, hit.chunk.heading)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from importlib import import_module
from pathlib import Path
from typing import Any

from twokeys.analysis import analyzer_for
from twokeys.dense.encoder import Encoder, get_encoder
from twokeys.errors import ConfigError, EncoderMismatchError
from twokeys.fusion.rrf import DEFAULT_K
from twokeys.rerank.base import Reranker, get_reranker
from twokeys.retrievers import BM25Retriever, DenseRetriever, HybridRetriever, Retriever
from twokeys.retrievers.base import RetrieverResult
from twokeys.retrievers.catalog import EXTRA_MODES
from twokeys.retrievers.hybrid import DEFAULT_FUSION
from twokeys.retrievers.reranking import DEFAULT_TOP_N, RerankingRetriever
from twokeys.store.base import IndexBackend
from twokeys.store.local import LocalIndex
from twokeys.store.postgres.location import is_postgres_location
from twokeys.store.vectors import describe as describe_vectors
from twokeys.types import Hit

BUILTIN_MODES: tuple[str, ...] = ("bm25", "dense", "hybrid")
MODES: tuple[str, ...] = (*BUILTIN_MODES, *EXTRA_MODES)


@dataclass(frozen=True)
class SearchSettings:
    """Knobs shared by the retrieval modes."""

    candidates: int = 100  # per-retriever depth fused in hybrid modes
    fusion: str = DEFAULT_FUSION
    rrf_k: float = DEFAULT_K
    lexical_weight: float = 0.45  # for the fixed-weight convex fusions
    rerank: str | None = None  # a reranker name (twokeys.rerank) applied to the top rerank_top
    rerank_top: int = DEFAULT_TOP_N


def open_index(path: str | Path, *, encoder: Encoder | None = None) -> Index:
    """Open an index for searching: a directory, or a ``postgresql://...`` location
    (:mod:`twokeys.store.postgres`, the ``postgres`` extra).

    The encoder that built the index is loaded lazily, on the first dense or hybrid
    search. Passing ``encoder`` uses that instance instead; it must have the same id
    and weights fingerprint as the one recorded in the index.
    """
    backend: IndexBackend
    if is_postgres_location(path):
        from twokeys.store.postgres.backend import PostgresIndex

        backend = PostgresIndex(str(path))
    else:
        backend = LocalIndex(Path(path))
    return Index(backend, encoder=encoder)


class Index:
    """Searches one :class:`~twokeys.store.base.IndexBackend` in any of the modes."""

    def __init__(self, backend: IndexBackend, *, encoder: Encoder | None = None) -> None:
        self.backend = backend
        self.manifest = backend.manifest
        self.analyzer = analyzer_for(self.manifest.analyzer)
        self._encoder = encoder
        self._rerankers: dict[str, Reranker] = {}
        if encoder is not None:
            self._check_encoder(encoder)

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.backend.close()

    # -- retrievers -----------------------------------------------------------------

    @property
    def encoder(self) -> Encoder:
        info = self.manifest.encoder
        if info is None:
            raise ConfigError(
                "this index has no dense vectors (built with --no-dense); use --mode bm25"
            )
        if self._encoder is None:
            self._encoder = get_encoder(info.name)
            self._check_encoder(self._encoder)
        return self._encoder

    def _check_encoder(self, encoder: Encoder) -> None:
        info = self.manifest.encoder
        if info is None:
            return
        if encoder.id != info.id or encoder.fingerprint() != info.fingerprint:
            raise EncoderMismatchError(
                f"index was built with encoder {info.id} ({info.fingerprint[:19]}), "
                f"not {encoder.id} ({encoder.fingerprint()[:19]}); rebuild it with "
                "'twokeys index' or search with the original encoder"
            )

    def retriever(self, mode: str = "hybrid", settings: SearchSettings | None = None) -> Retriever:
        """The retriever for ``mode`` (one of :data:`MODES`)."""
        settings = settings or SearchSettings()
        if settings.rerank:
            if settings.rerank not in self._rerankers:
                self._rerankers[settings.rerank] = get_reranker(settings.rerank).for_index(self)
            inner = self.retriever(mode, replace(settings, rerank=None))
            reranker = self._rerankers[settings.rerank]
            return RerankingRetriever(inner, reranker, self.backend, top_n=settings.rerank_top)
        if mode in EXTRA_MODES:
            module, _, function = EXTRA_MODES[mode].partition(":")
            factory = getattr(import_module(module), function)
            retriever: Retriever = factory(self, settings)
            return retriever
        if mode == "bm25":
            return BM25Retriever(self.analyzer, self.backend.lexical)
        if mode in ("dense", "hybrid"):
            vectors = self.backend.vectors
            dense = DenseRetriever(self.encoder, vectors) if vectors is not None else None
            if dense is None:
                raise ConfigError("this index has no dense vectors; use --mode bm25")
            if mode == "dense":
                return dense
            lexical = BM25Retriever(self.analyzer, self.backend.lexical)
            return HybridRetriever(
                lexical,
                dense,
                candidates=settings.candidates,
                fusion=settings.fusion,
                k=settings.rrf_k,
                lexical_weight=settings.lexical_weight,
            )
        raise ConfigError(f"mode: {mode!r} is not one of {', '.join(MODES)}")

    # -- search ---------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        mode: str = "hybrid",
        k: int = 10,
        candidates: int = 100,
        fusion: str = DEFAULT_FUSION,
        rrf_k: float = DEFAULT_K,
        explain: bool = False,
        rerank: str | None = None,
        rerank_top: int = DEFAULT_TOP_N,
    ) -> list[Hit]:
        """The top ``k`` chunks for ``query``; with ``explain``, each hit's evidence.

        ``rerank`` names a reranker (:mod:`twokeys.rerank`) that re-orders the top
        ``rerank_top`` chunks of the mode's run; none by default.
        """
        _check_query(query, k)
        settings = SearchSettings(
            candidates=candidates, fusion=fusion, rrf_k=rrf_k, rerank=rerank, rerank_top=rerank_top
        )
        result = self.retriever(mode, settings).retrieve(query, k, explain=explain)
        return self._hits([result])[0]

    def search_many(
        self,
        queries: Sequence[str],
        *,
        mode: str = "hybrid",
        k: int = 10,
        candidates: int = 100,
        fusion: str = DEFAULT_FUSION,
        rrf_k: float = DEFAULT_K,
        explain: bool = False,
        rerank: str | None = None,
        rerank_top: int = DEFAULT_TOP_N,
    ) -> list[list[Hit]]:
        """:meth:`search` for each of ``queries``: the same hits, in the same order.

        ``mode="bm25"`` (without ``explain`` or ``rerank``) scores all queries as one
        batch spread over every core; the other modes search one query after another.
        Hits of all queries are fetched from the index together.
        """
        for query in queries:
            _check_query(query, k)
        settings = SearchSettings(
            candidates=candidates, fusion=fusion, rrf_k=rrf_k, rerank=rerank, rerank_top=rerank_top
        )
        results = self.retriever(mode, settings).retrieve_many(queries, k, explain=explain)
        return self._hits(results)

    def _hits(self, results: Sequence[RetrieverResult]) -> list[list[Hit]]:
        """Materialise runs as hits, fetching every chunk they name in one go."""
        rows = list(dict.fromkeys(h.row for result in results for h in result.run))
        sources = dict(zip(rows, self.backend.chunks_with_source(rows), strict=True))
        return [
            [
                Hit(
                    rank=scored.rank,
                    score=scored.score,
                    chunk=sources[scored.row][0],
                    title=sources[scored.row][1],
                    path=sources[scored.row][2],
                    evidence=result.evidence.get(scored.row, ()),
                )
                for scored in result.run
            ]
            for result in results
        ]

    def info(self) -> dict[str, Any]:
        """Counts, parameters and on-disk sizes, as recorded in the manifest."""
        data = self.manifest.to_dict()
        data["path"] = str(getattr(self.backend, "path", ""))
        data["size_bytes"] = sum(self.manifest.files.values())
        data["vector_search"] = describe_vectors(self.manifest)
        return data


def _check_query(query: str, k: int) -> None:
    if k < 1:
        raise ConfigError(f"k: must be >= 1, got {k}")
    if not query.strip():
        raise ConfigError("query: is empty")
