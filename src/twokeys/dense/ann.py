"""Approximate nearest-neighbour search: an HNSW graph over the chunk vectors (hnswlib).

HNSW: Malkov & Yashunin, "Efficient and robust approximate nearest neighbor search using
Hierarchical Navigable Small World graphs", IEEE TPAMI 42(4), 2018. hnswlib (the
``ann`` extra, ``pip install 'twokeys[ann]'``) was chosen by
``benchmarks/vector_search.py``: at M = 16, ef = 64 it matched faiss' HNSW in recall and
latency and was four times faster than usearch at the same recall, as a small package
with numpy as its only dependency.

- **Deterministic.** The graph is built on one thread, inserting rows in row order,
  with a fixed level seed (:class:`~twokeys.dense.selection.HnswParams`), so two builds
  over the same vectors are byte-identical and answer every query identically. (A
  multi-threaded build would be faster but order-dependent; the build is small next to
  embedding the same chunks.)
- **Exact scores.** The graph only proposes the candidates; each is re-scored in
  float32 from the stored vectors, so a hit's score is the cosine that
  :class:`~twokeys.dense.exact.ExactVectorIndex` gives it (to float32 rounding), and
  hits are ordered by (-score, row).
- **No pickle.** :meth:`HnswVectorIndex.to_arrays` returns hnswlib's own state (the
  arrays it pickles, plus a JSON header of its scalars) as plain arrays for ``.npy``
  files; :meth:`HnswVectorIndex.from_arrays` refuses a state built from other vectors or
  parameters, or one hnswlib can no longer read, and the caller rebuilds.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from twokeys.dense.exact import ExactVectorIndex, cosine_scores
from twokeys.dense.selection import HnswParams
from twokeys.errors import ConfigError, MissingExtraError
from twokeys.store.base import VectorIndex
from twokeys.types import ScoredChunk

#: Bump when the saved layout changes; part of the derived-array name.
FORMAT_VERSION = 1
META = "meta"
_ADD_ROWS = 4096  # rows inserted per call, for progress; the order is the same either way


def require_hnswlib() -> ModuleType:
    """The hnswlib module, or a :class:`MissingExtraError` naming the extra."""
    try:
        import hnswlib
    except ImportError as exc:
        raise MissingExtraError(
            "the HNSW vector index needs hnswlib: pip install 'twokeys[ann]' "
            "(or rebuild the index with --vector-index exact)"
        ) from exc
    module: ModuleType = hnswlib
    return module


def hnsw_available() -> bool:
    try:
        require_hnswlib()
    except MissingExtraError:
        return False
    return True


def vectors_digest(embeddings: npt.NDArray[np.floating]) -> str:
    """A cheap fingerprint of a vector array: shape, type and a sample of 257 rows."""
    n = int(embeddings.shape[0])
    h = hashlib.sha256(f"{embeddings.shape}:{embeddings.dtype}".encode())
    if n:
        rows = np.unique(np.linspace(0, n - 1, num=min(n, 257)).astype(np.int64))
        h.update(np.ascontiguousarray(embeddings[rows]).tobytes())
    return "sha256:" + h.hexdigest()


class HnswVectorIndex(VectorIndex):
    """Top-k by cosine from an HNSW graph over L2-normalised rows (float32 or float16)."""

    def __init__(
        self, graph: Any, embeddings: npt.NDArray[np.floating], params: HnswParams
    ) -> None:
        self._graph = graph
        self._embeddings = embeddings
        self.params = params
        self._exact = ExactVectorIndex(embeddings)
        graph.set_num_threads(1)
        graph.set_ef(params.ef_search)

    @classmethod
    def build(
        cls,
        embeddings: npt.NDArray[np.floating],
        params: HnswParams,
        progress: Callable[[int], None] | None = None,
    ) -> HnswVectorIndex:
        """Insert every row, in order, on one thread; ``progress(rows)`` after each batch."""
        hnswlib = require_hnswlib()
        n, dim = embeddings.shape
        graph = hnswlib.Index(space="ip", dim=int(dim))
        graph.init_index(
            max_elements=max(n, 1),
            M=params.m,
            ef_construction=params.ef_construction,
            random_seed=params.seed,
        )
        graph.set_num_threads(1)
        for start in range(0, n, _ADD_ROWS):
            block = np.asarray(embeddings[start : start + _ADD_ROWS], np.float32)
            graph.add_items(block, np.arange(start, start + len(block)), num_threads=1)
            if progress is not None:
                progress(len(block))
        return cls(graph, embeddings, params)

    def to_arrays(self) -> dict[str, npt.NDArray[Any]]:
        """hnswlib's state as arrays, with the JSON header ``meta`` last."""
        (state,) = self._graph.__getstate__()
        arrays = {k: np.asarray(v) for k, v in state.items() if isinstance(v, np.ndarray)}
        scalars = {k: v for k, v in state.items() if not isinstance(v, np.ndarray)}
        meta = {
            "format_version": FORMAT_VERSION,
            "params": self.params.to_dict(),
            "vectors": vectors_digest(self._embeddings),
            "arrays": sorted(arrays),
            "hnswlib": scalars,
        }
        arrays[META] = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), np.uint8)
        return arrays

    @staticmethod
    def array_names(meta: npt.NDArray[Any]) -> list[str]:
        """The names of the arrays a saved ``meta`` header goes with."""
        names = _parse_meta(meta).get("arrays")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValueError("HNSW header lists no arrays")
        return names

    @classmethod
    def from_arrays(
        cls,
        arrays: Mapping[str, npt.NDArray[Any]],
        embeddings: npt.NDArray[np.floating],
        params: HnswParams,
    ) -> HnswVectorIndex:
        """The index saved by :meth:`to_arrays`; ValueError if it does not fit ``embeddings``
        and ``params`` (ef_search aside) or hnswlib cannot read it."""
        hnswlib = require_hnswlib()
        meta = _parse_meta(arrays[META])
        if meta.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"saved HNSW format {meta.get('format_version')}")
        try:
            saved = HnswParams.from_dict(meta["params"])
        except (KeyError, TypeError, ConfigError) as exc:
            raise ValueError(f"unreadable HNSW header ({exc})") from exc
        if (saved.m, saved.ef_construction, saved.seed) != (
            params.m,
            params.ef_construction,
            params.seed,
        ):
            raise ValueError("saved HNSW graph was built with other parameters")
        if meta["vectors"] != vectors_digest(embeddings):
            raise ValueError("saved HNSW graph was built from other vectors")
        state = dict(meta["hnswlib"])
        state.update({name: np.asarray(arrays[name]) for name in meta["arrays"]})
        try:
            graph = hnswlib.Index(state)
        except (RuntimeError, TypeError, ValueError, KeyError) as exc:
            raise ValueError(f"hnswlib cannot read the saved graph ({exc})") from exc
        if graph.element_count != embeddings.shape[0]:
            raise ValueError("saved HNSW graph has another number of vectors")
        return cls(graph, embeddings, params)

    def search(self, query: npt.NDArray[np.float32], k: int) -> list[ScoredChunk]:
        n = int(self._embeddings.shape[0])
        if n == 0 or k <= 0:
            return []
        want = min(k, n)
        q = np.asarray(query, np.float32)
        try:
            labels, _ = self._graph.knn_query(q[None, :], k=want)  # ef = max(ef_search, k)
        except RuntimeError:  # fewer than k reachable (tiny graphs): answer exactly
            return self._exact.search(query, k)
        rows = np.sort(labels[0].astype(np.int64))
        scores = cosine_scores(np.asarray(self._embeddings[rows]), q)
        order = np.lexsort((rows, -scores))
        return [
            ScoredChunk(row=int(rows[i]), score=float(scores[i]), rank=rank)
            for rank, i in enumerate(order, start=1)
        ]

    def similarity(self, query: npt.NDArray[np.float32], row: int) -> float:
        return self._exact.similarity(query, row)


def _parse_meta(meta: npt.NDArray[Any]) -> dict[str, Any]:
    try:
        data = json.loads(np.asarray(meta, np.uint8).tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"unreadable HNSW header ({exc})") from exc
    if not isinstance(data, dict):
        raise ValueError("unreadable HNSW header")
    return data
