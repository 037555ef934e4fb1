"""Which vector index searches an index's chunk vectors: exact below a size, HNSW above.

Exact search (:mod:`twokeys.dense.exact`) needs no build and is exact; its latency grows
linearly with the number of vectors. An HNSW graph (:mod:`twokeys.dense.ann`, the
``ann`` extra) answers in about a millisecond at any size, at recall@10 >= 0.95, for a
one-off build (single-threaded) and a second copy of the vectors on disk. Measured on
the 2-core machine of ``benchmarks/RESULTS.md`` (384 dims, one query at a time, idle
machine): exact float32 takes 1.9 ms at 10k vectors, 15 ms at 100k and 149 ms at 1M,
about 0.15 ms per 1,000 vectors (twice that with the machine under load); HNSW takes
0.8-1.1 ms, and building it 2.3 s for 10k, 39-48 s for 100k and 818 s for 1M vectors
(small next to embedding the chunks). ``auto`` switches at :data:`DEFAULT_THRESHOLD`
vectors, where exact search alone takes 5-10 ms, a quarter to a half of the 20 ms budget
of a hybrid query. The choice is saved in the manifest, so every process that opens the
index searches it the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from twokeys.errors import ConfigError

KINDS = ("auto", "exact", "hnsw")

#: ``auto`` builds an HNSW graph from this many vectors up (exact below).
DEFAULT_THRESHOLD = 30_000


def _check_keys(data: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = set(data) - allowed
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")


@dataclass(frozen=True)
class HnswParams:
    """HNSW graph parameters (Malkov & Yashunin 2018; faiss' names in brackets).

    ``m`` [M]: links per node (2M on the bottom layer); ``ef_construction``
    [efConstruction]: candidate list while inserting; ``ef_search`` [efSearch]: candidate
    list while searching (at least ``k``); ``seed``: the level generator's seed. On 100k
    vectors derived from real embeddings (``benchmarks/RESULTS.md``), M = 16 and
    ef_construction = 100 give recall@10 against exact search of 0.934 at ef = 32, 0.969
    at 64 and 0.992 at 128, at 0.7, 0.6 and 0.8 ms a query. Recall at a fixed ef falls as
    the graph grows, so the default ef_search is 128, which keeps a margin above 0.95
    towards 1M vectors.
    """

    m: int = 16
    ef_construction: int = 100
    ef_search: int = 128
    seed: int = 100

    def __post_init__(self) -> None:
        for name, low in (("m", 2), ("ef_construction", 1), ("ef_search", 1), ("seed", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"hnsw.{name}: must be an integer >= {low}, got {value!r}")

    def to_dict(self) -> dict[str, int]:
        return {
            "m": self.m,
            "ef_construction": self.ef_construction,
            "ef_search": self.ef_search,
            "seed": self.seed,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HnswParams:
        _check_keys(data, {"m", "ef_construction", "ef_search", "seed"}, "hnsw")
        return cls(**data)


@dataclass(frozen=True)
class VectorIndexOptions:
    """``kind``: ``auto`` (exact below ``threshold`` vectors, HNSW from it), ``exact`` or
    ``hnsw``; ``hnsw``: the graph's parameters."""

    kind: str = "auto"
    threshold: int = DEFAULT_THRESHOLD
    hnsw: HnswParams = field(default_factory=HnswParams)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"vector_index.kind: {self.kind!r} is not one of {', '.join(KINDS)}")
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, int):
            raise ConfigError(f"vector_index.threshold: must be an integer, got {self.threshold!r}")
        if self.threshold < 0:
            raise ConfigError(f"vector_index.threshold: must be >= 0, got {self.threshold}")

    def choose(self, n_vectors: int) -> str:
        """``exact`` or ``hnsw`` for an index of ``n_vectors`` (exact when there are none)."""
        if n_vectors == 0 or self.kind == "exact":
            return "exact"
        if self.kind == "hnsw":
            return "hnsw"
        return "hnsw" if n_vectors >= self.threshold else "exact"

    def reason(self, n_vectors: int) -> str:
        """Why :meth:`choose` picks what it picks, for ``twokeys info``."""
        if self.kind != "auto":
            return f"chosen at index time: {self.kind}"
        side = ">=" if self.choose(n_vectors) == "hnsw" else "<"
        return f"auto: {n_vectors:,} vectors {side} threshold {self.threshold:,}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "threshold": self.threshold, "hnsw": self.hnsw.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VectorIndexOptions:
        _check_keys(data, {"kind", "threshold", "hnsw"}, "vector_index")
        hnsw = data.get("hnsw", {})
        if not isinstance(hnsw, Mapping):
            raise ConfigError(f"vector_index.hnsw: must be a mapping, got {hnsw!r}")
        return cls(
            kind=data.get("kind", "auto"),
            threshold=data.get("threshold", DEFAULT_THRESHOLD),
            hnsw=HnswParams.from_dict(hnsw),
        )
