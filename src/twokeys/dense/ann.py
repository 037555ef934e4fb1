"""Approximate nearest-neighbour search: an HNSW graph over the chunk vectors (faiss).

HNSW: Malkov & Yashunin, "Efficient and robust approximate nearest neighbor search using
Hierarchical Navigable Small World graphs", IEEE TPAMI 42(4), 2018. The graph is faiss'
``IndexHNSWFlat`` (the ``ann`` extra, ``pip install 'twokeys[ann]'``), chosen by
``benchmarks/vector_search.py``: at M = 16 it matched hnswlib in recall and latency and
was two to four times faster than usearch at the same recall, and, unlike hnswlib, it
serves a saved graph memory-mapped: the graph of a million vectors (1.7 GB) opens in
0.04-0.2 s with the file in the page cache (a first hybrid answer 1.9 s after opening
from a cold cache), where hnswlib copied it into memory in 1.5-2 s (9 s cold).

- **Deterministic.** The graph is built on one thread, inserting rows in row order in
  fixed blocks, with a fixed level seed (:class:`~twokeys.dense.selection.HnswParams`),
  so two builds over the same vectors write byte-identical files and answer every query
  identically. (A multi-threaded build would be faster but order-dependent; the build
  is small next to embedding the same chunks.)
- **Exact scores.** The graph only proposes the candidates; each is re-scored in
  float32 from the stored vectors, so a hit's score is the cosine that
  :class:`~twokeys.dense.exact.ExactVectorIndex` gives it (to float32 rounding), and
  hits are ordered by (-score, row).
- **Checked on load.** A saved graph comes with a JSON header (:meth:`header`) naming
  its parameters and a digest of the vectors it was built from;
  :meth:`HnswVectorIndex.load` refuses a graph built from other vectors or parameters,
  or one faiss cannot read, and the caller rebuilds.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from twokeys.dense.base import VectorIndex
from twokeys.dense.exact import ExactVectorIndex, cosine_scores
from twokeys.dense.selection import HnswParams
from twokeys.errors import ConfigError, MissingExtraError
from twokeys.pagecache import read_ahead, read_ahead_in_background
from twokeys.types import RowMask, ScoredChunk

#: Bump when the saved layout changes; part of the derived file's name.
FORMAT_VERSION = 2
_ADD_ROWS = 4096  # rows inserted per call: part of the build's definition (see module doc)
_DIGEST_ROWS = 64  # rows at each end of the vectors that the fingerprint reads


def require_faiss() -> ModuleType:
    """The faiss module, or a :class:`MissingExtraError` naming the extra."""
    try:
        import faiss
    except ImportError as exc:
        raise MissingExtraError(
            "the HNSW vector index needs faiss: pip install 'twokeys[ann]' "
            "(or rebuild the index with --vector-index exact)"
        ) from exc
    module: ModuleType = faiss
    return module


def hnsw_available() -> bool:
    try:
        require_faiss()
    except MissingExtraError:
        return False
    return True


def vectors_digest(embeddings: npt.NDArray[np.floating]) -> str:
    """A cheap fingerprint of a vector array: shape, type, and its first and last rows.

    Two contiguous blocks, not rows spread over the array: on a memory-mapped file that
    is not cached each spread row is a random read (257 of them took 1.7 s at 1M rows).
    A graph is saved beside the vectors it was built from, in a generation whose
    vectors never change, so this only has to catch a graph paired with other vectors.
    """
    n = int(embeddings.shape[0])
    h = hashlib.sha256(f"{embeddings.shape}:{embeddings.dtype}".encode())
    for block in (embeddings[:_DIGEST_ROWS], embeddings[max(_DIGEST_ROWS, n - _DIGEST_ROWS) :]):
        h.update(np.ascontiguousarray(block).tobytes())
    return "sha256:" + h.hexdigest()


@contextlib.contextmanager
def _one_thread(faiss: ModuleType) -> Iterator[None]:
    """faiss' OpenMP threads set to one for the block, then put back."""
    before = int(faiss.omp_get_max_threads())
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


class HnswVectorIndex(VectorIndex):
    """Top-k by cosine from an HNSW graph over L2-normalised rows (float32 or float16)."""

    def __init__(
        self, graph: Any, embeddings: npt.NDArray[np.floating], params: HnswParams
    ) -> None:
        self._faiss = require_faiss()
        self._graph = graph
        self._embeddings = embeddings
        self.params = params
        self._exact = ExactVectorIndex(embeddings)
        self._tail: tuple[Path, int, int] | None = None  # file region to read ahead

    @classmethod
    def build(
        cls,
        embeddings: npt.NDArray[np.floating],
        params: HnswParams,
        progress: Callable[[int], None] | None = None,
    ) -> HnswVectorIndex:
        """Insert every row, in order, on one thread; ``progress(rows)`` after each batch."""
        faiss = require_faiss()
        n, dim = embeddings.shape
        graph = faiss.IndexHNSWFlat(int(dim), params.m, faiss.METRIC_INNER_PRODUCT)
        graph.hnsw.efConstruction = params.ef_construction
        graph.hnsw.rng = faiss.RandomGenerator(params.seed)
        with _one_thread(faiss):
            for start in range(0, n, _ADD_ROWS):
                block = np.ascontiguousarray(embeddings[start : start + _ADD_ROWS], np.float32)
                graph.add(block)
                if progress is not None:
                    progress(len(block))
        return cls(graph, embeddings, params)

    def header(self) -> dict[str, Any]:
        """What :meth:`load` checks a saved graph against (JSON-serialisable)."""
        return {
            "format_version": FORMAT_VERSION,
            "params": self.params.to_dict(),
            "vectors": vectors_digest(self._embeddings),
            "faiss": str(getattr(self._faiss, "__version__", "")),
        }

    def save(self, path: Path) -> None:
        """Write the graph in faiss' own format (:func:`faiss.write_index`); OSError if
        the file cannot be written (faiss reports that as a RuntimeError)."""
        try:
            self._faiss.write_index(self._graph, str(path))
        except RuntimeError as exc:
            raise OSError(f"cannot write the HNSW graph to {path}: {exc}") from exc

    @classmethod
    def load(
        cls,
        path: Path,
        header: Mapping[str, Any],
        embeddings: npt.NDArray[np.floating],
        params: HnswParams,
    ) -> HnswVectorIndex:
        """The graph saved by :meth:`save`, memory-mapped; ValueError if it does not fit
        ``embeddings`` and ``params`` (ef_search aside) or faiss cannot read it."""
        faiss = require_faiss()
        if header.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"saved HNSW format {header.get('format_version')}")
        try:
            saved = HnswParams.from_dict(header["params"])
        except (KeyError, TypeError, ConfigError) as exc:
            raise ValueError(f"unreadable HNSW header ({exc})") from exc
        if (saved.m, saved.ef_construction, saved.seed) != (
            params.m,
            params.ef_construction,
            params.seed,
        ):
            raise ValueError("saved HNSW graph was built with other parameters")
        if header.get("vectors") != vectors_digest(embeddings):
            raise ValueError("saved HNSW graph was built from other vectors")
        n, dim = embeddings.shape
        # faiss reads the links (the file's head, about a tenth of it) through a memory
        # map and leaves the stored vectors (its tail) mapped. Read the head first, so
        # that those page faults hit the page cache; the tail is read on a background
        # thread once the first search is answered (so as not to slow that one), so
        # that later queries' random reads mostly hit the cache too.
        size = path.stat().st_size
        head = max(0, size - int(n) * int(dim) * 4)
        read_ahead(path, 0, head)
        try:
            graph = faiss.read_index(str(path), getattr(faiss, "IO_FLAG_MMAP_IFC", 0))
        except RuntimeError as exc:
            raise ValueError(f"faiss cannot read the saved graph ({exc})") from exc
        if not isinstance(graph, faiss.IndexHNSWFlat) or graph.metric_type != (
            faiss.METRIC_INNER_PRODUCT
        ):
            raise ValueError("the saved file is not an inner-product HNSW graph")
        if (int(graph.ntotal), int(graph.d)) != (int(n), int(dim)):
            raise ValueError("saved HNSW graph has another number or size of vectors")
        index = cls(graph, embeddings, params)
        index._tail = (path, head, size)
        return index

    def search(
        self, query: npt.NDArray[np.float32], k: int, *, allowed: RowMask | None = None
    ) -> list[ScoredChunk]:
        if allowed is not None:  # a filtered search is exact over the rows it allows
            return self._exact.search(query, k, allowed=allowed)
        n = int(self._embeddings.shape[0])
        if n == 0 or k <= 0:
            return []
        want = min(k, n)
        q = np.ascontiguousarray(query, np.float32).reshape(1, -1)
        settings = self._faiss.SearchParametersHNSW()
        settings.efSearch = max(self.params.ef_search, want)
        _, labels = self._graph.search(q, want, params=settings)
        found = labels[0][labels[0] >= 0]
        if len(found) < want:  # fewer than k reachable (tiny graphs): answer exactly
            return self._exact.search(query, k)
        rows = np.sort(found.astype(np.int64))
        scores = cosine_scores(np.asarray(self._embeddings[rows]), q[0])
        order = np.lexsort((rows, -scores))
        if self._tail is not None:
            tail, self._tail = self._tail, None
            read_ahead_in_background(*tail)
        return [
            ScoredChunk(row=int(rows[i]), score=float(scores[i]), rank=rank)
            for rank, i in enumerate(order, start=1)
        ]

    def similarity(self, query: npt.NDArray[np.float32], row: int) -> float:
        return self._exact.similarity(query, row)

    def similarities(
        self, query: npt.NDArray[np.float32], rows: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float64]:
        return self._exact.similarities(query, rows)

    def mean_similarity(self, query: npt.NDArray[np.float32]) -> float:
        return self._exact.mean_similarity(query)


def parse_header(raw: npt.NDArray[Any]) -> dict[str, Any]:
    """A header saved as UTF-8 JSON bytes in a uint8 array; ValueError if unreadable."""
    try:
        data = json.loads(np.asarray(raw, np.uint8).tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"unreadable HNSW header ({exc})") from exc
    if not isinstance(data, dict):
        raise ValueError("unreadable HNSW header")
    return data


def encode_header(header: Mapping[str, Any]) -> npt.NDArray[np.uint8]:
    """``header`` as UTF-8 JSON bytes in a uint8 array, for :func:`parse_header`."""
    return np.frombuffer(json.dumps(dict(header), sort_keys=True).encode(), np.uint8)
