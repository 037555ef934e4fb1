"""A twokeys search as a LlamaIndex retriever (``pip install 'twokeys[llamaindex]'``).

from twokeys.integrations.llamaindex import TwokeysRetriever
retriever = TwokeysRetriever(index="kb.twokeys", k=5)
nodes = retriever.retrieve("What does error code E-4821 mean?")

Returns :class:`~llama_index.core.schema.NodeWithScore` values: a ``TextNode`` whose id
is the chunk's stable id, whose text is the passage and whose metadata is
:func:`twokeys.integrations.common.hit_metadata`'s, with the fused score. ``filters``
takes LlamaIndex's :class:`MetadataFilters` (``==``, ``>``, ``>=``, ``<``, ``<=``,
``in``, ``contains`` on a list field; AND, nested); another operator or an OR/NOT
condition is a :class:`~twokeys.errors.ConfigError` that names it. Usable wherever
LlamaIndex takes a retriever, e.g. ``RetrieverQueryEngine.from_args(retriever, llm=...)``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from twokeys.integrations.common import require

require("llama_index.core", "llamaindex")

from llama_index.core.retrievers import BaseRetriever  # noqa: E402
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode  # noqa: E402
from llama_index.core.vector_stores import (  # noqa: E402
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

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
from twokeys.types import Hit  # noqa: E402

__all__ = ["TwokeysRetriever", "map_filters"]

_COMPARISONS = {
    FilterOperator.EQ: "=",
    FilterOperator.CONTAINS: "=",  # a list field holds the value: our "=" on a list
    FilterOperator.GT: ">",
    FilterOperator.GTE: ">=",
    FilterOperator.LT: "<",
    FilterOperator.LTE: "<=",
}
_SUPPORTED = (*(op.value for op in _COMPARISONS), "in", "AND")


class TwokeysRetriever(BaseRetriever):
    """A LlamaIndex retriever over a twokeys index (``index=``) or ``twokeys serve``
    (``client=``); ``k``, ``mode``, ``filters`` (:class:`MetadataFilters`) and any other
    :class:`~twokeys.request.SearchRequest` field as keywords; ``query_encoder=
    "minilm-static"`` embeds queries with the static encoder (fast mode)."""

    def __init__(
        self,
        *,
        index: str | Path | Index | None = None,
        client: Client | None = None,
        k: int = 4,
        mode: str | None = None,
        filters: MetadataFilters | None = None,
        explain: bool = True,
        **options: Any,
    ) -> None:
        callback_manager = options.pop("callback_manager", None)
        super().__init__(callback_manager=callback_manager)
        self._searcher = Searcher(
            index, client, {**options, "mode": mode, "k": k, "explain": explain}
        )
        self._filters = map_filters(filters) if filters is not None else ()

    def _nodes(self, query: str) -> list[NodeWithScore]:
        return [_node(hit) for hit in self._searcher.search(query, filters=self._filters)]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(query_bundle.query_str)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._nodes, query_bundle.query_str)


def _node(hit: Hit) -> NodeWithScore:
    metadata = hit_metadata(hit)
    node = TextNode(
        id_=hit.chunk_id,
        text=hit.text,
        metadata=metadata,
        # the prompt shows where a passage is from, not our ids and ranks
        excluded_llm_metadata_keys=[k for k in metadata if k not in ("cite", "title")],
        excluded_embed_metadata_keys=list(metadata),
    )
    return NodeWithScore(node=node, score=hit.score)


def map_filters(filters: MetadataFilters) -> tuple[Filter, ...]:
    """Our filters (all must hold) for LlamaIndex :class:`MetadataFilters`."""
    if not isinstance(filters, MetadataFilters):
        raise ConfigError(
            f"llamaindex filters: must be MetadataFilters, got {type(filters).__name__}"
        )
    condition = filters.condition or FilterCondition.AND
    if condition != FilterCondition.AND and len(filters.filters) > 1:
        raise unsupported("llamaindex", str(condition.value).upper(), _SUPPORTED)
    if condition == FilterCondition.NOT:
        raise unsupported("llamaindex", "NOT", _SUPPORTED)
    out: list[Filter] = []
    for f in filters.filters:
        if isinstance(f, MetadataFilters):
            out.extend(map_filters(f))
        elif isinstance(f, MetadataFilter):
            out.append(_one(f))
    return tuple(out)


def _one(f: MetadataFilter) -> Filter:
    if f.operator == FilterOperator.IN:
        values = f.value if isinstance(f.value, list) else [f.value]
        return one_of(f.key, values, framework="llamaindex")
    op = _COMPARISONS.get(f.operator)
    if op is None:
        raise unsupported("llamaindex", str(f.operator.value), _SUPPORTED)
    return compare(f.key, op, f.value, framework="llamaindex")
