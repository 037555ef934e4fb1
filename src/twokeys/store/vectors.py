"""The vector index of a local generation: exact or HNSW, as the manifest says.

The HNSW graph is derived from ``dense.embeddings.npy``, so it is stored as a derived
file in faiss' format (:func:`~twokeys.store.local.save_derived_file`) plus a JSON
header (a derived array) in the same generation folder, named by its build parameters,
and opened memory-mapped. ``twokeys index`` builds it right after committing the
vectors; opening an index rebuilds it if it is missing or stale (other parameters,
other vectors, a file faiss no longer reads) and saves it when the folder is
writable. A re-index that changes any vector writes a new generation, which starts
without a graph, so a graph never outlives its vectors. Two processes that rebuild at
once write byte-identical files (the build is deterministic), and the header is
written after the graph, so a reader sees a whole graph or rebuilds.

With ``auto`` above the threshold and faiss not installed, search stays exact (and
``twokeys info`` says so); ``hnsw`` set explicitly raises
:class:`~twokeys.errors.MissingExtraError` instead.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable
from typing import Any

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
from twokeys.store.local import (
    EMBEDDINGS,
    LocalIndex,
    derived_file,
    derived_names,
    load_derived,
    remove_derived,
    save_derived,
    save_derived_file,
)

HEADER = "meta"
_WARN_FROM = 30_000  # a rebuild at open is announced from this many vectors (about 10 s)


class GraphRebuildWarning(UserWarning):
    """Opening an index is rebuilding its HNSW graph, which takes a while."""


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


def open_vector_index(
    index: LocalIndex, progress: Callable[[int], None] | None = None
) -> VectorIndex | None:
    """The index's vector index; an HNSW graph is loaded, or built and saved."""
    kind = chosen_kind(index.manifest)
    embeddings = index.embeddings()
    if kind == "none" or embeddings is None:
        return None
    if kind == "exact":
        return ExactVectorIndex(embeddings, str(index.gen_dir / EMBEDDINGS))
    require_faiss()
    params = index.manifest.vector_index.hnsw
    name = graph_name(params)
    saved = load_derived(index, name, (HEADER,))
    path = derived_file(index, name, GRAPH, GRAPH_SUFFIX)
    if saved is not None and path is not None:
        with contextlib.suppress(ValueError):
            return HnswVectorIndex.load(path, parse_header(saved[HEADER]), embeddings, params)
    if progress is None and len(embeddings) >= _WARN_FROM:
        warnings.warn(
            f"building the HNSW graph of {len(embeddings):,} vectors for {index.path} (its "
            "saved graph is missing, stale or from an older twokeys); this runs once, on "
            "one thread: about 40 s for 100,000 vectors, 14 minutes for a million",
            GraphRebuildWarning,
            stacklevel=3,
        )
    graph = HnswVectorIndex.build(embeddings, params, progress)
    with contextlib.suppress(OSError):  # a read-only index keeps its graph in memory
        save_derived_file(index, name, GRAPH, GRAPH_SUFFIX, graph.save)
        save_derived(index, name, {HEADER: encode_header(graph.header())})
        for stale in derived_names(index):  # graphs of an older layout (hnswlib's, v1)
            if stale.startswith("hnsw-v") and not stale.startswith(f"hnsw-v{FORMAT_VERSION}-"):
                remove_derived(index, stale)
    return graph
