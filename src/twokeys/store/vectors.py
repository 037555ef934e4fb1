"""The vector index of a local generation: exact or HNSW, as the manifest says.

The HNSW graph is derived from ``dense.embeddings.npy``, so it is stored as a derived
file in faiss' format (:func:`~twokeys.store.derived.save_derived_file`) plus a JSON
header (a derived array) in the same generation folder, named by its build parameters,
and opened memory-mapped. ``twokeys index`` builds it right after committing the
vectors (:func:`build_graph`), and ``twokeys optimize`` builds it for an index whose
graph is missing or stale (other parameters, other vectors, a file faiss no longer
reads). Reading never writes: opening such an index searches exactly, after one
:class:`GraphMissingWarning`, so an index on a read-only medium opens and searches. A
re-index that changes any vector writes a new generation, which starts without a
graph, so a graph never outlives its vectors. Two processes that build at once write
byte-identical files (the build is deterministic), and the header is written after the
graph, so a reader sees a whole graph or none.

With ``auto`` above the threshold and faiss not installed, search stays exact (and
``twokeys info`` says so); ``hnsw`` set explicitly raises
:class:`~twokeys.errors.MissingExtraError` instead.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy.typing as npt

from twokeys.dense.ann import (
    FORMAT_VERSION,
    HnswVectorIndex,
    encode_header,
    hnsw_available,
    parse_header,
    require_faiss,
)
from twokeys.dense.exact import ExactVectorIndex
from twokeys.dense.selection import HnswParams
from twokeys.store.base import Manifest, VectorIndex
from twokeys.store.derived import (
    derived_file,
    derived_names,
    load_derived,
    remove_derived,
    save_derived,
    save_derived_file,
)
from twokeys.store.layout import EMBEDDINGS


class VectorsOnDisk(Protocol):
    """What the vector index needs of a local index (:class:`~twokeys.store.local.LocalIndex`):
    its folder, generation folder, manifest and memory-mapped vectors."""

    @property
    def path(self) -> Path: ...

    @property
    def gen_dir(self) -> Path: ...

    @property
    def manifest(self) -> Manifest: ...

    def embeddings(self) -> npt.NDArray[Any] | None: ...


HEADER = "meta"


class GraphMissingWarning(UserWarning):
    """The index's HNSW graph is missing or stale, so dense search is exact (slower)."""


GRAPH = "graph"
GRAPH_SUFFIX = "faiss"


def chosen_kind(manifest: Manifest) -> str:
    """``exact``, ``hnsw``, or ``none`` (no vectors) for this index on this machine."""
    if manifest.encoder is None:
        return "none"
    options = manifest.vector_index
    kind = options.choose(int(manifest.counts.get("chunks", 0)))
    if kind == "hnsw" and options.kind == "auto" and not hnsw_available():
        return "exact"
    return kind


def describe(manifest: Manifest) -> dict[str, Any]:
    """What ``twokeys info`` shows: the index used, why, and its parameters."""
    kind = chosen_kind(manifest)
    options = manifest.vector_index
    n = int(manifest.counts.get("chunks", 0))
    out: dict[str, Any] = {"used": kind, "reason": options.reason(n)}
    if kind == "none":
        out["reason"] = "no dense vectors"
    elif options.choose(n) == "hnsw" and kind == "exact":
        out["reason"] += "; faiss not installed: pip install 'twokeys[ann]'"
    if kind == "hnsw":
        out["hnsw"] = options.hnsw.to_dict()
    return out


def graph_name(params: HnswParams) -> str:
    return f"hnsw-v{FORMAT_VERSION}-m{params.m}-efc{params.ef_construction}-s{params.seed}"


def open_vector_index(index: VectorsOnDisk) -> VectorIndex | None:
    """The index's vector index: the saved HNSW graph, or exact search if there is none.

    Never writes: an index that should have a graph but has no valid one is searched
    exactly, with a :class:`GraphMissingWarning` saying how to build the graph.
    """
    kind = chosen_kind(index.manifest)
    embeddings = index.embeddings()
    if kind == "none" or embeddings is None:
        return None
    if kind == "exact":
        return ExactVectorIndex(embeddings, str(index.gen_dir / EMBEDDINGS))
    require_faiss()
    graph = load_graph(index, embeddings)
    if graph is not None:
        return graph
    warnings.warn(
        f"{index.path}: the HNSW graph of its {len(embeddings):,} vectors is missing, stale "
        f"or from an older twokeys; searching them exactly (slower) until "
        f"'twokeys optimize --index {index.path}' builds it",
        GraphMissingWarning,
        stacklevel=3,
    )
    return ExactVectorIndex(embeddings)


def load_graph(index: VectorsOnDisk, embeddings: npt.NDArray[Any]) -> HnswVectorIndex | None:
    """The saved graph if there is one that fits the index's vectors and parameters."""
    params = index.manifest.vector_index.hnsw
    name = graph_name(params)
    saved = load_derived(index, name, (HEADER,))
    path = derived_file(index, name, GRAPH, GRAPH_SUFFIX)
    if saved is None or path is None:
        return None
    try:
        return HnswVectorIndex.load(path, parse_header(saved[HEADER]), embeddings, params)
    except ValueError:
        return None


def build_graph(index: VectorsOnDisk, progress: Callable[[int], None] | None = None) -> bool:
    """Build and save the HNSW graph if the index uses one and has no valid one.

    Returns whether a graph was built. A writer's step (``twokeys index``, ``twokeys
    optimize``): raises :class:`OSError` if the generation folder is not writable.
    """
    embeddings = index.embeddings()
    if chosen_kind(index.manifest) != "hnsw" or embeddings is None:
        return False
    if load_graph(index, embeddings) is not None:
        return False
    params = index.manifest.vector_index.hnsw
    name = graph_name(params)
    graph = HnswVectorIndex.build(embeddings, params, progress)
    save_derived_file(index, name, GRAPH, GRAPH_SUFFIX, graph.save)
    save_derived(index, name, {HEADER: encode_header(graph.header())})
    for stale in derived_names(index):  # graphs of an older layout (hnswlib's, v1)
        if stale.startswith("hnsw-v") and not stale.startswith(f"hnsw-v{FORMAT_VERSION}-"):
            remove_derived(index, stale)
    return True
