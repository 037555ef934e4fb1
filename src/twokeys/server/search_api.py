"""Search for applications: pages of hits, a score threshold, one hit per document, a
choice of fields, and several searches in one call.

A ``POST /search`` body is a :class:`~twokeys.request.SearchRequest` plus the fields of
:data:`PAGE_FIELDS`, applied to its hits in this order:

* ``min_score``: hits scoring below it are dropped (the score is the request's fused or
  single retriever score, as the hits show it);
* ``group_by_document``: the best hit of each document, with ``others``: how many more
  of its chunks were among the hits read (up to :data:`GROUP_DEPTH` times the page's
  end, within ``--max-candidates``);
* ``offset``: the page starts after this many hits (or documents), ``k`` long; ``more``
  says whether a next page has hits;
* ``fields``: each hit keeps only these keys (any of ``Hit.to_dict``'s and ``others``).

``POST /search/batch`` runs up to :data:`MAX_BATCH` such searches against one
generation of the index (all or none: a bad one is a 400 naming its position).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from twokeys.engine import Index
from twokeys.errors import ConfigError
from twokeys.request import SearchRequest
from twokeys.server.config import Limits, RequestError

PAGE_FIELDS = ("offset", "min_score", "group_by_document", "fields")
HIT_FIELDS = (
    "rank",
    "score",
    "doc_id",
    "chunk_id",
    "path",
    "title",
    "heading",
    "start",
    "end",
    "locator",
    "cite",
    "text",
    "evidence",
    "others",
)
GROUP_DEPTH = 4
MAX_BATCH = 32


def run_search(index: Index, body: Mapping[str, Any], limits: Limits) -> dict[str, Any]:
    """One search body's response (module docstring)."""
    given = {k: v for k, v in body.items() if k not in PAGE_FIELDS}
    request = SearchRequest.from_dict(given)
    limits.check_text("query", request.query)
    limits.check_count("k", request.k, limits.max_k)
    limits.check_count("candidates", request.candidates, limits.max_candidates)
    limits.check_count("rerank_top", request.rerank_top, limits.max_candidates)
    offset = int(body.get("offset") or 0)
    if offset < 0:
        raise ConfigError(f"offset: must be >= 0, got {offset}")
    limits.check_count("offset", offset, limits.max_candidates)
    fields = body.get("fields")
    if fields is not None:
        unknown = [f for f in fields if f not in HIT_FIELDS]
        if unknown:
            raise ConfigError(f"fields: {unknown[0]!r} is not one of {', '.join(HIT_FIELDS)}")
    grouped = bool(body.get("group_by_document"))
    end = offset + request.k
    depth = min(limits.max_candidates, end * GROUP_DEPTH if grouped else end + 1)
    hits = [h.to_dict() for h in index.search(_deeper(request, depth))]
    min_score = body.get("min_score")
    if min_score is not None:
        hits = [h for h in hits if h["score"] >= min_score]
    if grouped:
        hits = _group(hits)
    page = hits[offset:end]
    if fields is not None:
        page = [{f: h[f] for f in fields if f in h} for h in page]
    return {
        "request": request.to_dict(),
        "offset": offset,
        "more": len(hits) > end,
        "hits": page,
        "generation": index.manifest.generation,
    }


def run_batch(index: Index, searches: Sequence[Mapping[str, Any]], limits: Limits) -> list[Any]:
    if not searches:
        raise RequestError(400, "searches: is empty")
    limits.check_count("searches", len(searches), MAX_BATCH)
    out = []
    for i, body in enumerate(searches):
        try:
            out.append(run_search(index, body, limits))
        except (ConfigError, RequestError) as exc:
            message = exc.message if isinstance(exc, RequestError) else str(exc)
            raise RequestError(400, f"searches[{i}]: {message}") from None
    return out


def _deeper(request: SearchRequest, depth: int) -> SearchRequest:
    if depth <= request.k:
        return request
    data = request.to_dict()
    data["k"] = depth
    data["candidates"] = max(request.candidates, depth)
    return SearchRequest.from_dict(data)


def _group(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    best: dict[str, dict[str, Any]] = {}
    for hit in hits:
        doc = hit["doc_id"]
        if doc in best:
            best[doc]["others"] += 1
        else:
            best[doc] = {**hit, "others": 0}
    out = list(best.values())
    for rank, hit in enumerate(out, 1):
        hit["rank"] = rank
    return out
