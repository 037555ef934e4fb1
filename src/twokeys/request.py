"""One search as one value: :class:`SearchRequest`, validated once, defaults defined once.

The CLI, the Python API and an HTTP API all build a request; the engine
(:meth:`twokeys.engine.Index.search`) answers it. A request names its stages
separately: a ``retriever`` (``bm25``, ``dense``, ``hybrid``, or a classic model), the
hybrid's ``fusion`` and its parameters, an optional ``reranker``, ``filters`` on the
documents (:mod:`twokeys.filters`) and the result's size ``k``. Mode names such as
``hybrid-rrf`` or ``hybrid+e5`` are shorthands for fields and are parsed once, by
:meth:`SearchRequest.parse`; an option that contradicts the mode (``mode="hybrid-rrf",
fusion="minmax"``) or that no stage of the request would read (``rrf_k`` with the
``minmax`` fusion) is a :class:`~twokeys.errors.ConfigError` that names both, never
silently dropped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from twokeys.errors import ConfigError
from twokeys.filters import Filter, parse_filters
from twokeys.fusion.normalization import NORMALIZERS
from twokeys.fusion.rrf import DEFAULT_K
from twokeys.retrievers.catalog import EXTRA_RETRIEVERS
from twokeys.retrievers.hybrid import (
    DEFAULT_CANDIDATES,
    DEFAULT_FUSION,
    DEFAULT_LEXICAL_WEIGHT,
    FUSIONS,
)
from twokeys.retrievers.reranking import DEFAULT_TOP_N
from twokeys.sanitize import has_surrogates

#: retrievers that rank chunks on their own (``hybrid`` fuses ``bm25`` and ``dense``)
RETRIEVERS: tuple[str, ...] = ("bm25", "dense", "hybrid", *EXTRA_RETRIEVERS)

#: mode shorthands: each name stands for these request fields
SHORTHANDS: dict[str, dict[str, str]] = {
    **{f"hybrid-{f}": {"retriever": "hybrid", "fusion": f} for f in FUSIONS if f != "adaptive"},
    "hybrid+e5": {"retriever": "hybrid", "reranker": "e5"},
    "hybrid+proximity": {"retriever": "hybrid", "reranker": "proximity"},
}

#: every name ``mode=`` accepts: the retrievers, then the shorthands
MODES: tuple[str, ...] = (*RETRIEVERS, *SHORTHANDS)

#: modes that read the dense vectors (an index built without an encoder cannot run them)
VECTOR_MODES: frozenset[str] = frozenset(
    {"dense", "hybrid", *(name for name in SHORTHANDS if name.startswith("hybrid"))}
)

DEFAULT_K_HITS = 10
RRF_FUSIONS = frozenset({"rrf", "rrf-confidence"})
WEIGHTED_FUSIONS = frozenset(NORMALIZERS)  # the convex fusions read ``lexical_weight``


MAX_QUERY_CHARS = 10_000  # five times the longest query of the six test collections


@dataclass(frozen=True)
class SearchRequest:
    """What to search for and how. Every field is checked when the request is made.

    ``candidates`` (per-retriever depth fused), ``fusion``, ``rrf_k`` (RRF's constant
    k, for the ``rrf`` fusions) and ``lexical_weight`` (BM25's weight in the convex
    fusions ``minmax``, ``zscore``, ``dbsf``, ``chance``) are the hybrid's; ``reranker`` (a name
    from :mod:`twokeys.rerank`) re-orders the top ``rerank_top`` of the retriever's run.
    """

    query: str
    k: int = DEFAULT_K_HITS
    retriever: str = "hybrid"
    fusion: str = DEFAULT_FUSION
    rrf_k: float = DEFAULT_K
    lexical_weight: float = DEFAULT_LEXICAL_WEIGHT
    candidates: int = DEFAULT_CANDIDATES
    reranker: str | None = None
    rerank_top: int = DEFAULT_TOP_N
    filters: tuple[Filter, ...] = ()
    explain: bool = False

    def __post_init__(self) -> None:
        _check_query(self.query)
        _check_int("k", self.k)
        _check_int("candidates", self.candidates)
        _check_int("rerank_top", self.rerank_top)
        if self.retriever not in RETRIEVERS:
            hint = f" (a mode: use mode={self.retriever!r})" if self.retriever in SHORTHANDS else ""
            raise ConfigError(
                f"retriever: {self.retriever!r} is not one of {', '.join(RETRIEVERS)}{hint}"
            )
        if self.fusion not in FUSIONS:
            raise ConfigError(f"fusion: {self.fusion!r} is not one of {', '.join(FUSIONS)}")
        rrf_k = _number("rrf_k", self.rrf_k)
        if rrf_k < 0:
            raise ConfigError(f"rrf_k: must be >= 0, got {self.rrf_k!r}")
        weight = _number("lexical_weight", self.lexical_weight)
        if not 0.0 <= weight <= 1.0:
            raise ConfigError(f"lexical_weight: must be in [0, 1], got {self.lexical_weight!r}")
        if self.reranker is not None and (
            not isinstance(self.reranker, str) or not self.reranker.strip()
        ):
            raise ConfigError(f"reranker: must be a reranker name, got {self.reranker!r}")
        if not isinstance(self.explain, bool):
            raise ConfigError(f"explain: must be true or false, got {self.explain!r}")
        if not isinstance(self.filters, tuple) or not all(
            isinstance(f, Filter) for f in self.filters
        ):
            raise ConfigError(
                "filters: must be a tuple of Filter values (SearchRequest.parse takes strings)"
            )

    # -- building ---------------------------------------------------------------------

    @classmethod
    def parse(cls, query: str, mode: str | None = None, **options: Any) -> SearchRequest:
        """A request from a mode name (or shorthand) and options; None means "not given".

        Raises a :class:`ConfigError` naming both sides when an option contradicts the
        mode, or when it is set to other than its default and the request would not read
        it (``fusion`` with ``retriever="bm25"``, ``rrf_k`` with a convex fusion,
        ``rerank_top`` without a reranker).
        """
        given = {name: value for name, value in options.items() if value is not None}
        if "filters" in given:
            if isinstance(given["filters"], str | Filter):
                given["filters"] = [given["filters"]]
            given["filters"] = parse_filters(given["filters"])
        unknown = sorted(set(given) - _FIELDS - {"query"})
        if unknown:
            raise ConfigError(f"search: unknown option(s) {', '.join(unknown)}")
        fixed: dict[str, str] = {}
        if mode is not None:
            if mode in SHORTHANDS:
                fixed = SHORTHANDS[mode]
            elif mode in RETRIEVERS:
                fixed = {"retriever": mode}
            else:
                raise ConfigError(f"mode: {mode!r} is not one of {', '.join(MODES)}")
        for name, value in fixed.items():
            if name in given and given[name] != value:
                raise ConfigError(
                    f"mode {mode} sets {name} {value}; it conflicts with {name} {given[name]}"
                )
        request = cls(query, **{**given, **fixed})
        request._check_used(
            {name for name, value in given.items() if value != DEFAULTS[name]}, mode
        )
        return request

    def _check_used(self, given: set[str], mode: str | None) -> None:
        """A ConfigError for an option set (to other than its default) that no stage reads."""
        by = f"mode {mode}" if mode is not None else f"retriever {self.retriever}"
        hybrid_only = {"fusion", "candidates", "rrf_k", "lexical_weight"}
        if self.retriever != "hybrid":
            for name in sorted(given & hybrid_only):
                raise ConfigError(f"{name}: applies to the hybrid retriever only, not to {by}")
        if "rrf_k" in given and self.fusion not in RRF_FUSIONS:
            raise ConfigError(
                f"rrf_k: applies to the rrf fusions only, not to fusion {self.fusion}"
            )
        if "lexical_weight" in given and self.fusion not in WEIGHTED_FUSIONS:
            raise ConfigError(
                f"lexical_weight: applies to the fusions {', '.join(sorted(WEIGHTED_FUSIONS))}"
                f" only, not to fusion {self.fusion}"
            )
        if "rerank_top" in given and self.reranker is None:
            raise ConfigError("rerank_top: applies only with a reranker")

    def with_query(self, query: str) -> SearchRequest:
        """The same request for another query (only the query is checked again)."""
        _check_query(query)
        other = object.__new__(SearchRequest)
        other.__dict__.update(self.__dict__)
        object.__setattr__(other, "query", query)
        return other

    # -- serialisation ----------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Every field, JSON-ready (filters in their string form)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["filters"] = [str(f) for f in self.filters]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SearchRequest:
        """A request from :meth:`to_dict`'s shape (or a JSON body); may hold ``mode``."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"search request: must be an object, got {type(data).__name__}")
        options = dict(data)
        if "query" not in options:
            raise ConfigError("query: missing")
        query = options.pop("query")
        mode = options.pop("mode", None)
        return cls.parse(query, mode, **options)

    @property
    def pipeline(self) -> tuple[Any, ...]:
        """The fields that choose the retriever stack (a cache key): all but query, k, explain."""
        return (
            self.filters,
            self.retriever,
            self.fusion,
            self.rrf_k,
            self.lexical_weight,
            self.candidates,
            self.reranker,
            self.rerank_top,
        )


_FIELDS = frozenset(f.name for f in fields(SearchRequest))
DEFAULTS = {f.name: f.default for f in fields(SearchRequest) if f.name != "query"}


def _check_query(query: object) -> None:
    if not isinstance(query, str):
        raise ConfigError(f"query: must be a string, got {type(query).__name__}")
    if not query.strip():
        raise ConfigError("query: is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise ConfigError(
            f"query: {len(query):,} characters, over the limit of {MAX_QUERY_CHARS:,}; "
            "search with its key sentences"
        )
    if has_surrogates(query):
        raise ConfigError(
            "query: not valid Unicode (lone surrogates, from undecodable bytes?); "
            "pass twokeys.sanitize.replace_surrogates(query)"
        )


def _check_int(name: str, value: object) -> None:
    if type(value) is not int:  # not a bool, not a float
        raise ConfigError(f"{name}: must be an integer, got {value!r}")
    if value < 1:
        raise ConfigError(f"{name}: must be >= 1, got {value}")


def _number(name: str, value: object) -> float:
    if type(value) is not float and type(value) is not int:  # not a bool, not a string
        raise ConfigError(f"{name}: must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ConfigError(f"{name}: must be finite, got {value!r}")
    return number
