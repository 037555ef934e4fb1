"""The search engine over one index: open it, pick a mode, get typed hits.

import twokeys
kb = twokeys.open_index("kb.twokeys")
for hit in kb.search("What does error code E-4821 mean?", k=5):
    print(hit.rank, hit.path, hit.chunk.heading)

Concurrency contract. One :class:`Index` may answer searches from any number of threads
at once, and every answer is the one a serial search would give (tested with 8 threads
x 500 mixed-mode queries). What makes it so:

* Reading never writes (:mod:`twokeys.optimize`): the index files a search reads never
  change under it, so there is nothing to lock on disk. A local index is a committed
  generation that a new ``twokeys index`` does not touch (it writes the next one).
* Immutable values between stages: requests, runs and hits are frozen; retrievers hold
  no per-query state.
* Everything loaded lazily is loaded once, under a lock: the encoder and rerankers
  (here), the backend's lexical and vector indexes, the classic models' weights.
* Shared caches only ever gain entries equal to what any thread would compute (the
  analyzer's term caches). What cannot be shared is per thread (each thread stems with
  its own stemmer object) or taken in turn (the local backend's SQLite connection runs
  one statement at a time, under a lock, and fetches its rows before letting go).

A search that overlaps a re-index sees the generation that was current when the
:class:`Index` was opened, whole (its files stay open after a build removes the
folder); reopen the index to see the new one. Never a mix of the two. On a database
backend, whose index changes while open, each search sees the state committed when its
first read ran: all its reads run in one snapshot (:meth:`IndexBackend.snapshot`).
Encoders and rerankers must be thread-safe for this to hold (the built-in ones are: ONNX
Runtime sessions and Hugging Face tokenizers run concurrently; HTTP encoders share
nothing per call).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from importlib import import_module
from pathlib import Path
from typing import Any

from twokeys.analysis import analyzer_for
from twokeys.dense.encoder import Encoder, check_encoder_name, get_encoder
from twokeys.errors import ConfigError, EncoderMismatchError
from twokeys.filters import Filter
from twokeys.lexical.index import slotted_values
from twokeys.request import MODES, SearchRequest
from twokeys.rerank.base import Reranker, get_reranker
from twokeys.retrievers import BM25Retriever, DenseRetriever, HybridRetriever, Retriever
from twokeys.retrievers.base import RetrieverResult
from twokeys.retrievers.catalog import EXTRA_RETRIEVERS
from twokeys.retrievers.reranking import RerankingRetriever
from twokeys.store.base import IndexBackend, RowMask
from twokeys.store.contract import open_reader, reader_info
from twokeys.text.passages import heading_line
from twokeys.types import Chunk, Hit

__all__ = ["MODES", "Filter", "Index", "SearchRequest", "open_index"]

_LAZY_HIT_SLOTS = ("rank", "score", "evidence", "_source")  # as Hit.lazy sets them
_MASKS_KEPT = 64  # filter masks kept per open index (one bool per chunk each)
_TEMPLATES_KEPT = 256  # parsed keyword options kept per open index


def open_index(
    location: str | Path,
    *,
    encoder: Encoder | None = None,
    query_encoder: str | Encoder | None = None,
) -> Index:
    """Open the index at ``location`` for searching: a directory path, or a URL whose
    scheme names a registered backend (:mod:`twokeys.store.contract`).

    The encoder that built the index is loaded lazily, on the first dense or hybrid
    search. Passing ``encoder`` uses that instance instead; it must have the same id
    and weights fingerprint as the one recorded in the index.

    ``query_encoder`` (a registered name or an instance) embeds the queries of dense
    and hybrid searches instead: an encoder whose :meth:`Encoder.vector_space` is the
    index's, such as ``"minilm-static"`` for a ``minilm`` index (faster, coarser).
    """
    return Index(open_reader(location), encoder=encoder, query_encoder=query_encoder)


class Index:
    """Searches one :class:`~twokeys.store.base.IndexBackend` in any of the modes."""

    def __init__(
        self,
        backend: IndexBackend,
        *,
        encoder: Encoder | None = None,
        query_encoder: str | Encoder | None = None,
    ) -> None:
        self.backend = backend
        self.manifest = backend.manifest
        self.analyzer = analyzer_for(self.manifest.analyzer)
        self._encoder = encoder
        self._query_encoder_name = query_encoder if isinstance(query_encoder, str) else None
        self._query_encoder = query_encoder if isinstance(query_encoder, Encoder) else None
        self._rerankers: dict[str, Reranker] = {}
        self._masks: dict[tuple[Filter, ...], RowMask] = {}  # filters -> allowed rows
        self._templates: dict[tuple[Any, ...], SearchRequest] = {}  # options -> request
        self._lock = threading.Lock()  # guards the lazy encoder, rerankers and masks
        self._units: dict[int, int] | None = None  # row -> its PDF page's unit (page_units)
        if encoder is not None:
            self._check_encoder(encoder)
        if self._query_encoder is not None:
            self._check_encoder(self._query_encoder, queries_only=True)
        elif self._query_encoder_name is not None:
            check_encoder_name(self._query_encoder_name)  # a bad name fails here, not at search

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
            with self._lock:
                if self._encoder is None:
                    encoder = get_encoder(info.name)
                    self._check_encoder(encoder)
                    self._encoder = encoder
        return self._encoder

    @property
    def query_encoder(self) -> Encoder:
        """What embeds a search's query: the ``query_encoder`` the index was opened
        with (loaded on first use, checked against the index), else :attr:`encoder`."""
        if self._query_encoder is None and self._query_encoder_name is None:
            return self.encoder
        if self._query_encoder is None:
            with self._lock:
                if self._query_encoder is None:
                    assert self._query_encoder_name is not None
                    encoder = get_encoder(self._query_encoder_name)
                    self._check_encoder(encoder, queries_only=True)
                    self._query_encoder = encoder
        return self._query_encoder

    def _check_encoder(self, encoder: Encoder, *, queries_only: bool = False) -> None:
        """Refuse an encoder whose vectors the index's can't be compared with: the
        index's own encoder must match it exactly (it also embeds documents: ``ask``'s
        sentences, a rebuild through the service); a query encoder must embed into
        its vector space (:meth:`Encoder.vector_space`)."""
        info = self.manifest.encoder
        if info is None:
            return
        if queries_only:
            space = encoder.vector_space()
        else:
            space = (encoder.id, encoder.fingerprint(), encoder.tokenizer_fingerprint())
        reason = info.mismatch(*space)
        if reason:
            raise EncoderMismatchError(
                f"{reason}; rebuild it with 'twokeys index' or search with the original encoder"
            )

    def retriever(self, request: SearchRequest) -> Retriever:
        """The retriever stack that answers ``request`` (its query, k and explain aside)."""
        if request.reranker is not None:
            inner = self.retriever(replace(request, reranker=None))
            return RerankingRetriever(
                inner, self._reranker(request.reranker), self.backend, top_n=request.rerank_top
            )
        if request.retriever in EXTRA_RETRIEVERS:
            module, _, function = EXTRA_RETRIEVERS[request.retriever].partition(":")
            factory = getattr(import_module(module), function)
            retriever: Retriever = factory(self, request)
            return retriever
        allowed = self.allowed_rows(request.filters)
        lexical = BM25Retriever(self.analyzer, self.backend.lexical, allowed=allowed)
        if request.retriever == "bm25":
            return lexical
        vectors = self.backend.vectors
        if vectors is None:
            raise ConfigError("this index has no dense vectors; use --mode bm25")
        dense = DenseRetriever(self.query_encoder, vectors, allowed=allowed)
        if request.retriever == "dense":
            return dense
        return HybridRetriever(
            lexical,
            dense,
            candidates=request.candidates,
            fusion=request.fusion,
            k=request.rrf_k,
            lexical_weight=request.lexical_weight,
            texts=self._chunk_texts,
            headings=self._chunk_headings,
        )

    def _chunk_texts(self, rows: Sequence[int]) -> list[str]:
        """The texts of the chunks at ``rows``, in order (the hybrid's verbatim rule)."""
        return [chunk.text for chunk in self.backend.chunks(rows)]

    def _chunk_headings(self, rows: Sequence[int]) -> list[tuple[str, str]]:
        """The document id and heading line of the chunks at ``rows``, in order, the
        line as the index prepends it to each chunk's text: the heading path, or the
        document's title where the chunk has none (the hybrid's heading rule,
        :mod:`twokeys.fusion.headings`)."""
        return [
            (chunk.doc_id, heading_line(chunk.heading_path, title))
            for chunk, title, _ in self.backend.chunks_with_source(rows)
        ]

    def page_units(self) -> dict[int, int]:
        """The cited unit of each chunk row on a PDF page: the row of the first chunk of
        its (document, pages), for a hybrid that fuses a page's chunks as one
        (``HybridRetriever(units=...)``, :mod:`twokeys.fusion.units`; not the default:
        measured in ``benchmarks/pdf_pages.py native``); rows without a page are absent.
        Read once; empty on a backend whose rows change while open."""
        if self.backend.rows_change:
            return {}
        if self._units is None:
            located = self.backend.row_locators()
            units: dict[int, int] = {}
            if any(loc.page is not None for loc in located.values()):
                for doc in self.backend.all_documents():
                    first: dict[tuple[int, int | None], int] = {}
                    for row in range(doc.first_row, doc.first_row + doc.n_chunks):
                        loc = located.get(row)
                        if loc is not None and loc.page is not None:
                            units[row] = first.setdefault((loc.page, loc.page_end), row)
            with self._lock:
                self._units = units
        return self._units

    def allowed_rows(self, filters: Sequence[Filter]) -> RowMask | None:
        """The chunk rows ``filters`` allow (None without filters), kept for reuse
        (asked of the backend every time when its rows can change while open)."""
        if not filters:
            return None
        key = tuple(filters)
        if self.backend.rows_change:
            return self.backend.allowed_rows(key)
        mask = self._masks.get(key)
        if mask is None:
            mask = self.backend.allowed_rows(key)
            with self._lock:
                if len(self._masks) >= _MASKS_KEPT:
                    self._masks.pop(next(iter(self._masks)))
                self._masks[key] = mask
        return mask

    def _request(self, query: str | SearchRequest, options: dict[str, Any]) -> SearchRequest:
        """The request for ``query`` and keyword ``options``: parsed once per distinct
        options, then only the query changes (a loop of searches pays no parsing)."""
        if isinstance(query, SearchRequest) or not isinstance(query, str):
            return _request(query, options)
        try:
            # in call order (one call site, one key), with each value's type: k=10.0 must
            # not reuse the request parsed for k=10
            key = tuple((name, type(v), v) for name, v in options.items())
            template = self._templates.get(key)
        except TypeError:  # an unhashable option value (a list of filters): parse it
            return _request(query, options)
        if template is None:
            request = _request(query, options)
            with self._lock:
                if len(self._templates) >= _TEMPLATES_KEPT:
                    self._templates.pop(next(iter(self._templates)))
                self._templates[key] = request
            return request
        return template.with_query(query)

    def _reranker(self, name: str) -> Reranker:
        reranker = self._rerankers.get(name)
        if reranker is None:
            with self._lock:
                if name not in self._rerankers:
                    self._rerankers[name] = get_reranker(name).for_index(self)
                reranker = self._rerankers[name]
        return reranker

    # -- search ---------------------------------------------------------------------

    def search(self, query: str | SearchRequest, /, **options: Any) -> list[Hit]:
        """The top ``k`` chunks for a :class:`~twokeys.request.SearchRequest`.

        ``kb.search("text", mode="hybrid-rrf", k=5, ...)`` is a shorthand that builds the
        request with :meth:`SearchRequest.parse` (options as its fields, plus ``mode``);
        with ``explain``, each hit carries its evidence.
        """
        request = self._request(query, options)
        with self.backend.snapshot():  # every read of one search sees one committed state
            if (  # the plain BM25 search, the hot path: BM25Retriever's run, built directly
                request.retriever == "bm25"
                and not request.filters
                and request.reranker is None
                and not request.explain
            ):
                run = self.backend.lexical.search_query(self.analyzer, request.query, request.k)
                return self._hits([RetrieverResult(run)])[0]
            retriever = self.retriever(request)
            result = retriever.retrieve(request.query, request.k, explain=request.explain)
            return self._hits([result])[0]

    def search_many(self, queries: Sequence[str], /, **options: Any) -> list[list[Hit]]:
        """:meth:`search` for each of ``queries`` with the same options: the same hits.

        ``mode="bm25"`` (without ``explain`` or ``reranker``) scores all queries as one
        batch spread over every core; the other modes search one query after another.
        Hits of all queries are fetched from the index together.
        """
        if not queries:
            return []
        requests = [self._request(query, options) for query in queries]
        first = requests[0]
        with self.backend.snapshot():
            retriever = self.retriever(first)
            results = retriever.retrieve_many(
                [r.query for r in requests], first.k, explain=first.explain
            )
            return self._hits(results)

    def _hits(self, results: Sequence[RetrieverResult]) -> list[list[Hit]]:
        """Materialise runs as hits: lazy ones, whose chunk is read on first use, where the
        backend has a source for them; otherwise fetching every chunk they name in one go."""
        source = self.backend.hit_source()
        if source is not None:  # Hit.lazy's values, made in one call per run
            out = []
            for result in results:
                run, evidence = result.run, result.evidence
                columns = (
                    [s.rank for s in run],
                    [s.score for s in run],
                    [evidence.get(s.row, ()) for s in run] if evidence else (),
                    [(source, s.row) for s in run],
                )
                out.append(slotted_values(Hit, _LAZY_HIT_SLOTS, columns))
            return out
        rows = list(dict.fromkeys(h.row for result in results for h in result.run))
        sources = dict(zip(rows, self.backend.chunks_with_source(rows), strict=True))
        # Hit(rank, score, chunk, title, path, evidence), positional: the hot path of a
        # search, where a frozen dataclass built from keywords costs half as much again
        return [
            [
                Hit(
                    scored.rank,
                    scored.score,
                    *sources[scored.row],
                    result.evidence.get(scored.row, ()),
                )
                for scored in result.run
            ]
            for result in results
        ]

    def passages(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """Chunks by stable id (``hit.chunk_id``), e.g. kept from an earlier search; ids
        whose document or position the index no longer has are absent."""
        return self.backend.passages(chunk_ids)

    def info(self) -> dict[str, Any]:
        """Counts, parameters and sizes, as the backend reports them (:meth:`IndexReader.info`)."""
        return reader_info(self.backend)


def _request(query: str | SearchRequest, options: dict[str, Any]) -> SearchRequest:
    if isinstance(query, SearchRequest):
        if options:
            raise ConfigError(
                f"search: options ({', '.join(sorted(options))}) given with a SearchRequest; "
                "set them on the request"
            )
        return query
    options = dict(options)
    mode = options.pop("mode", None)
    if "rerank" in options:  # the keyword's name before SearchRequest
        options["reranker"] = options.pop("rerank")
    return SearchRequest.parse(query, mode, **options)
