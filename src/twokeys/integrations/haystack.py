"""A twokeys search as a Haystack 2 retriever component (``pip install 'twokeys[haystack]'``).

from haystack import Pipeline
from twokeys.integrations.haystack import TwokeysRetriever
pipeline = Pipeline()
pipeline.add_component("retriever", TwokeysRetriever(index="kb.twokeys", top_k=5))
pipeline.run({"retriever": {"query": "What does error code E-4821 mean?"}})

``run(query, top_k, filters)`` returns ``{"documents": [...]}``: Haystack
:class:`~haystack.Document` values with the passage as ``content``, the chunk's stable id
as ``id``, the fused score and :func:`twokeys.integrations.common.hit_metadata` as
``meta``. ``filters`` take Haystack's syntax (``{"field": "meta.lang", "operator": "==",
"value": "en"}``, comparisons ``==``, ``>``, ``>=``, ``<``, ``<=``, ``in``, and ``AND``);
``!=``, ``not in``, ``OR`` and ``NOT`` are a :class:`~twokeys.errors.ConfigError` that
names them. The component opens a local index in :meth:`warm_up`; ``to_dict`` /
``from_dict`` round-trip an index path or a server URL, so a pipeline serialises.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from twokeys.integrations.common import require

require("haystack", "haystack")

from haystack import Document, component, default_from_dict, default_to_dict  # noqa: E402

from twokeys.client import Client  # noqa: E402
from twokeys.engine import Index  # noqa: E402
from twokeys.errors import ConfigError  # noqa: E402
from twokeys.filters import Filter  # noqa: E402
from twokeys.integrations.common import (  # noqa: E402
    Searcher,
    check_options,
    compare,
    hit_metadata,
    one_of,
    unsupported,
)

__all__ = ["TwokeysRetriever", "map_filters"]

_COMPARISONS = {"==": "=", ">": ">", ">=": ">=", "<": "<", "<=": "<="}
_SUPPORTED = (*_COMPARISONS, "in", "AND")


@component
class TwokeysRetriever:
    """A Haystack retriever over a twokeys index (``index=``, a path or an open index)
    or ``twokeys serve`` (``client=``); ``top_k``, ``mode``, ``filters`` (Haystack's
    syntax) and any other :class:`~twokeys.request.SearchRequest` field as keywords;
    ``query_encoder="minilm-static"`` embeds queries with the static encoder (fast mode)."""

    def __init__(
        self,
        *,
        index: str | Path | Index | None = None,
        client: Client | None = None,
        top_k: int = 10,
        mode: str | None = None,
        filters: dict[str, Any] | None = None,
        explain: bool = True,
        **options: Any,
    ) -> None:
        if (index is None) == (client is None):
            raise ConfigError("give index= (a path or an open index) or client=, not both")
        self.index = index
        self.client = client
        self.top_k = top_k
        self.mode = mode
        self.filters = filters
        self.explain = explain
        self.options = options
        self._fixed = map_filters(filters) if filters else ()
        check_options({**options, "mode": mode, "k": top_k, "explain": explain})
        self._searcher: Searcher | None = None
        if not isinstance(index, str | Path):  # nothing to load
            self.warm_up()

    def warm_up(self) -> None:
        """Open the index (a path) once, before the first run."""
        if self._searcher is None:
            options = {**self.options, "mode": self.mode, "k": self.top_k}
            self._searcher = Searcher(self.index, self.client, {**options, "explain": self.explain})

    @component.output_types(documents=list[Document])
    def run(
        self, query: str, top_k: int | None = None, filters: dict[str, Any] | None = None
    ) -> dict[str, list[Document]]:
        self.warm_up()
        assert self._searcher is not None  # for mypy: warm_up sets it
        extra = map_filters(filters) if filters else ()
        hits = self._searcher.search(query, k=top_k, filters=(*self._fixed, *extra))
        return {
            "documents": [
                Document(id=hit.chunk_id, content=hit.text, score=hit.score, meta=hit_metadata(hit))
                for hit in hits
            ]
        }

    def to_dict(self) -> dict[str, Any]:
        if isinstance(self.index, str | Path):
            where: dict[str, Any] = {"index": str(self.index)}
        elif self.client is not None:
            where = {"url": self.client.url}  # never the API key
        else:
            raise ConfigError("to_dict: a retriever over an open Index has no path to save")
        return default_to_dict(
            self,
            **where,
            top_k=self.top_k,
            mode=self.mode,
            filters=self.filters,
            explain=self.explain,
            **self.options,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TwokeysRetriever:
        params = dict(data.get("init_parameters", {}))
        if "url" in params:
            params["client"] = Client(params.pop("url"))
        data = {**data, "init_parameters": params}
        retriever: TwokeysRetriever = default_from_dict(cls, data)
        return retriever


def map_filters(spec: Mapping[str, Any]) -> tuple[Filter, ...]:
    """Our filters (all must hold) for a Haystack 2 filter dict."""
    if not isinstance(spec, Mapping):
        raise ConfigError(f"haystack filters: must be a dict, got {type(spec).__name__}")
    if "conditions" in spec:
        op = str(spec.get("operator", ""))
        if op != "AND":
            raise unsupported("haystack", op, _SUPPORTED)
        out: list[Filter] = []
        for part in spec["conditions"]:
            out.extend(map_filters(part))
        return tuple(out)
    missing = [k for k in ("field", "operator", "value") if k not in spec]
    if missing:
        raise ConfigError(f"haystack filters: condition {dict(spec)!r} lacks {', '.join(missing)}")
    field = str(spec["field"])
    field = field.removeprefix("meta.")
    op = str(spec["operator"])
    if op == "in":
        return (one_of(field, spec["value"], framework="haystack"),)
    if op not in _COMPARISONS:
        raise unsupported("haystack", op, _SUPPORTED)
    return (compare(field, _COMPARISONS[op], spec["value"], framework="haystack"),)
