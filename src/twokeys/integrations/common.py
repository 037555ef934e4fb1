"""What the framework adapters share: where the search runs (a local index or a client),
a hit's metadata, and the building blocks of filter mapping. Imports no framework."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from twokeys.client import Client
from twokeys.engine import Index, open_index
from twokeys.errors import ConfigError, MissingExtraError
from twokeys.filters import Filter
from twokeys.request import SearchRequest
from twokeys.types import Hit

#: a framework's name for a built-in field -> ours (``source`` is what hits report as path)
BUILT_IN_FIELDS = {
    "source": "path",
    "path": "path",
    "file_path": "path",
    "kind": "kind",
    "doc_id": "id",
    "id": "id",
}


class Searcher:
    """The search an adapter runs: on a local index (``index=``, a path or an open
    :class:`Index`) or through ``twokeys serve`` (``client=``), with fixed options.

    ``options["query_encoder"]`` (an encoder name, such as ``"minilm-static"``) embeds
    the queries of a local index instead of the encoder that built it
    (:func:`~twokeys.engine.open_index`); the other options are search options."""

    def __init__(
        self, index: str | Path | Index | None, client: Client | None, options: dict[str, Any]
    ) -> None:
        if (index is None) == (client is None):
            raise ConfigError("give index= (a path or an open index) or client=, not both")
        query_encoder = options.get("query_encoder")
        if query_encoder is not None and client is not None:
            raise ConfigError("query_encoder: applies to a local index (index=), not a client")
        self.location: str | None = None
        self.backend: Index | Client
        if isinstance(index, str | Path):
            self.location = str(index)
            self.backend = open_index(index, query_encoder=query_encoder)
        elif isinstance(index, Index):
            # the same backend, its queries embedded by the query encoder
            self.backend = (
                index
                if query_encoder is None
                else Index(index.backend, query_encoder=query_encoder)
            )
        elif isinstance(client, Client):
            self.backend = client
        else:
            raise ConfigError(
                f"index: must be a path or a twokeys Index, got {type(index or client).__name__}"
            )
        self.options = check_options(options)

    def search(
        self, query: str, *, k: int | None = None, filters: Sequence[Filter] = ()
    ) -> list[Hit]:
        options = dict(self.options)
        if k is not None:
            options["k"] = k
        if filters:
            options["filters"] = [*_as_list(options.get("filters")), *filters]
        return self.backend.search(query, **options)


#: adapter options that are not search options (:class:`Searcher`)
ADAPTER_OPTIONS = ("query_encoder",)


def check_options(options: dict[str, Any]) -> dict[str, Any]:
    """The search options of ``options``, without the unset ones, checked now (a bad
    option fails where the adapter is built, with the library's message)."""
    given = {
        name: value
        for name, value in options.items()
        if value is not None and name not in ADAPTER_OPTIONS
    }
    SearchRequest.parse("check", **given)
    return given


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str | Filter):
        return [value]
    return list(value)


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """A hit's metadata, flat and JSON-ready: where it is from (source, title, cite,
    locator), its ids, score and rank, and each sensor's rank (None where that sensor did
    not retrieve it, or without ``explain``)."""
    bm25_rank = dense_rank = None
    for e in hit.evidence:  # a sensor's last evidence, if it gave several
        if e.retriever == "bm25":
            bm25_rank = e.rank
        elif e.retriever == "dense":
            dense_rank = e.rank
    chunk = hit.chunk  # read once (a lazy hit's first read loads it)
    locator = chunk.locator
    return {
        "source": hit.path,
        "title": hit.title,
        "heading": chunk.heading,
        "cite": hit.cite,
        "locator": locator.to_dict() if locator else {},
        "doc_id": chunk.doc_id,
        "chunk_id": chunk.id,
        "score": hit.score,
        "rank": hit.rank,
        "bm25_rank": bm25_rank,
        "dense_rank": dense_rank,
    }


def compare(field: str, op: str, value: Any, *, framework: str) -> Filter:
    """Our filter for ``field op value`` (op: ``=``, ``>=``, ``<=``, ``>``, ``<``)."""
    name = BUILT_IN_FIELDS.get(field, field)
    if name in ("path", "kind", "id"):
        if op != "=":
            raise ConfigError(f"{framework} filter: {field} takes equality or 'in', not {op}")
        return one_of(field, [value], framework=framework)
    if op not in ("=", ">=", "<=", ">", "<"):
        raise ConfigError(f"{framework} filter: operator {op!r} on {field!r} is not supported")
    if op == "=":
        return Filter(name, "=", _text(value, field, framework))
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError(f"{framework} filter: {field} {op} needs a number or an ISO date")
    return Filter.parse(f"{name}{op}{value}")


def one_of(field: str, values: Sequence[Any], *, framework: str) -> Filter:
    """Our filter for ``field in values``."""
    if isinstance(values, str) or not isinstance(values, Sequence) or not values:
        raise ConfigError(f"{framework} filter: {field} in ...: needs a non-empty list")
    texts = tuple(_text(v, field, framework) for v in values)
    name = BUILT_IN_FIELDS.get(field, field)
    if name == "path":
        if len(texts) != 1:
            raise ConfigError(f"{framework} filter: {field} in: give one path (or use a glob)")
        return Filter("path", "glob", _glob_escape(texts[0]))
    return Filter(name, "in", texts)


def unsupported(framework: str, op: str, supported: Sequence[str]) -> ConfigError:
    return ConfigError(
        f"{framework} filter: operator {op!r} is not supported by twokeys filters "
        f"(supported: {', '.join(supported)})"
    )


def _text(value: Any, field: str, framework: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    raise ConfigError(
        f"{framework} filter: {field}: value {value!r} is not a string, number or boolean"
    )


def _glob_escape(path: str) -> str:
    """``path`` as a glob that matches only itself."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in path)


def require(module: str, extra: str) -> None:
    """A :class:`MissingExtraError` with the install hint, if ``module`` is missing."""
    from importlib.util import find_spec

    if find_spec(module) is None:
        raise MissingExtraError(f"this adapter needs {module}: pip install 'twokeys[{extra}]'")
