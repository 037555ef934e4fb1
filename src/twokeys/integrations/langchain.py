"""A twokeys search as a LangChain retriever (``pip install 'twokeys[langchain]'``).

from twokeys.integrations.langchain import TwokeysRetriever
retriever = TwokeysRetriever(index="kb.twokeys", k=5)
docs = retriever.invoke("What does error code E-4821 mean?")

Each :class:`~langchain_core.documents.Document` holds the passage as ``page_content``
and, as metadata, its source, cite and locator, ids, score and rank, and the two sensors'
ranks (:func:`twokeys.integrations.common.hit_metadata`). ``filter`` takes LangChain's
metadata filter dict (``{"lang": "en"}``, ``{"version": {"$gte": 2}}``, ``$in``,
``$and``); an operator twokeys filters lack (``$ne``, ``$nin``, ``$or``) is a
:class:`~twokeys.errors.ConfigError` that names it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from twokeys.integrations.common import require

require("langchain_core", "langchain")

from langchain_core.callbacks import (  # noqa: E402
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from pydantic import ConfigDict, Field, PrivateAttr  # noqa: E402

from twokeys.client import Client  # noqa: E402
from twokeys.engine import Index  # noqa: E402
from twokeys.errors import ConfigError  # noqa: E402
from twokeys.filters import Filter  # noqa: E402
from twokeys.integrations.common import (  # noqa: E402
    Searcher,
    compare,
    hit_metadata,
    one_of,
    unsupported,
)

__all__ = ["TwokeysRetriever", "map_filter"]

_COMPARISONS = {"$eq": "=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_SUPPORTED = ("field: value", *_COMPARISONS, "$in", "$and")


class TwokeysRetriever(BaseRetriever):
    """A LangChain retriever over a twokeys index (``index=``) or ``twokeys serve``
    (``client=``). ``k``, ``mode``, ``fusion``, ``filter`` (LangChain's dict) and
    ``filters`` (twokeys filter strings) are fields; ``query_encoder="minilm-static"``
    embeds queries with the static encoder (fast mode); ``options`` holds any other
    :class:`~twokeys.request.SearchRequest` field. ``invoke(query, k=..., filter=...)``
    overrides ``k`` and adds a filter for one call."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: str | Path | Index | None = None
    client: Client | None = None
    k: int = 4
    mode: str | None = None
    fusion: str | None = None
    filter: dict[str, Any] | None = None
    filters: list[str] | None = None
    explain: bool = True
    #: an encoder name for the queries of a local index (``"minilm-static"``: fast mode)
    query_encoder: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)

    _searcher: Searcher = PrivateAttr()
    _fixed: tuple[Filter, ...] = PrivateAttr(default=())

    def model_post_init(self, context: Any, /) -> None:
        options = {**self.options, "mode": self.mode, "fusion": self.fusion}
        options.update(explain=self.explain, filters=self.filters, k=self.k)
        if self.query_encoder is not None:  # else options' own, if any, stands
            options["query_encoder"] = self.query_encoder
        self._searcher = Searcher(self.index, self.client, options)
        self._fixed = map_filter(self.filter) if self.filter else ()

    def _search(self, query: str, k: int | None, filter: Mapping[str, Any] | None) -> list[Any]:
        filters = (*self._fixed, *(map_filter(filter) if filter else ()))
        return [
            Document(page_content=hit.text, metadata=hit_metadata(hit), id=hit.chunk_id)
            for hit in self._searcher.search(query, k=k, filters=filters)
        ]

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        filter: Mapping[str, Any] | None = None,
    ) -> list[Document]:
        return self._search(query, k, filter)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        filter: Mapping[str, Any] | None = None,
    ) -> list[Document]:
        # the search is CPU-bound (local) or blocking HTTP: off the event loop
        return await asyncio.to_thread(self._search, query, k, filter)


def map_filter(spec: Mapping[str, Any]) -> tuple[Filter, ...]:
    """Our filters (all must hold) for a LangChain metadata filter dict."""
    if not isinstance(spec, Mapping):
        raise ConfigError(f"langchain filter: must be a dict, got {type(spec).__name__}")
    out: list[Filter] = []
    for key, value in spec.items():
        if key == "$and":
            if not isinstance(value, Sequence) or isinstance(value, str):
                raise ConfigError("langchain filter: $and takes a list of filters")
            for part in value:
                out.extend(map_filter(part))
        elif key.startswith("$"):
            raise unsupported("langchain", key, _SUPPORTED)
        elif isinstance(value, Mapping):
            for op, operand in value.items():
                if op in _COMPARISONS:
                    out.append(compare(key, _COMPARISONS[op], operand, framework="langchain"))
                elif op == "$in":
                    out.append(one_of(key, operand, framework="langchain"))
                else:
                    raise unsupported("langchain", op, _SUPPORTED)
        else:
            out.append(compare(key, "=", value, framework="langchain"))
    return tuple(out)
