"""The HTTP API's request and response shapes, derived from the library's own values.

The request bodies are built from the library's dataclasses (:class:`SearchRequest`,
:class:`AskOptions`) field by field, with their types and defaults, so the OpenAPI
schema and the library cannot drift apart; the library still validates every value
(the body is handed to :meth:`SearchRequest.from_dict`). Responses are typed dicts of
the shapes ``Hit.to_dict`` and ``Answer.to_dict`` produce (a test compares the keys).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, NotRequired, get_args, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model
from typing_extensions import TypedDict  # pydantic reads only this one on 3.11

from twokeys.rag.ask import DECOMPOSE, PROMPT_STYLES, AskOptions
from twokeys.rag.packing import MIN_TOTAL, Budget
from twokeys.request import MODES, RETRIEVERS, SearchRequest
from twokeys.retrievers.hybrid import FUSIONS

_STRICT = ConfigDict(extra="forbid", strict=True)
_DERIVED = ConfigDict(extra="forbid")  # strictness per field (fields_of)

#: allowed values, shown in the schema (the library checks them again)
_CHOICES: dict[str, tuple[str, ...]] = {
    "retriever": RETRIEVERS,
    "fusion": FUSIONS,
    "mode": MODES,
    "decompose": DECOMPOSE,
    "prompt_style": PROMPT_STYLES,
}


#: fields whose JSON form differs from their Python type: filters travel as the strings
#: ``SearchRequest.to_dict`` writes and ``SearchRequest.from_dict`` parses
_WIRE_TYPES: dict[str, tuple[Any, str]] = {
    "filters": (
        list[str],
        "all must hold: path:policies/* (glob), path:policies/ (prefix), kind:markdown,html, "
        "id:a.md,b.md, lang=en (metadata), version>=2, updated<2024-06-01; within one: "
        "a | b (either), !a (not)",
    ),
}


def fields_of(cls: type[Any], *, exclude: frozenset[str] = frozenset()) -> dict[str, Any]:
    """``create_model`` field definitions for a dataclass's fields: its types and defaults.

    Scalars are strict (``"5"`` is not a ``k``); containers are not, so a JSON array
    fills a tuple field.
    """
    hints = get_type_hints(cls)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name in exclude:
            continue
        hint = hints[f.name]
        options: dict[str, Any] = {"strict": True} if _scalar(hint) else {}
        if f.name in _WIRE_TYPES:
            hint, options["description"] = _WIRE_TYPES[f.name]
        if f.name in _CHOICES:
            options["json_schema_extra"] = {"enum": list(_CHOICES[f.name])}
        if f.default is not dataclasses.MISSING:
            options["default"] = list(f.default) if isinstance(f.default, tuple) else f.default
        elif f.default_factory is not dataclasses.MISSING:
            options["default_factory"] = f.default_factory
        out[f.name] = (hint, Field(**options))
    return out


def _scalar(hint: Any) -> bool:
    args = [a for a in get_args(hint) if a is not type(None)] if get_args(hint) else [hint]
    return all(a in (str, int, float, bool) for a in args)


SearchBody: type[BaseModel] = create_model(
    "SearchBody",
    __config__=_DERIVED,
    __doc__="A search: the fields of twokeys.request.SearchRequest; ``mode`` is a shorthand "
    "(hybrid-rrf, hybrid+e5, ...) for retriever/fusion/reranker.",
    mode=(str | None, Field(default=None, strict=True, json_schema_extra={"enum": list(MODES)})),
    **fields_of(SearchRequest),
    offset=(
        int,
        Field(default=0, ge=0, strict=True, description="skip this many hits (a page's start)"),
    ),
    min_score=(
        float | None,
        Field(default=None, description="drop hits scoring below this (the hits' own score)"),
    ),
    group_by_document=(
        bool,
        Field(
            default=False,
            strict=True,
            description="the best hit of each document, with 'others': its further hits",
        ),
    ),
    fields=(
        list[str] | None,
        Field(default=None, description="keep only these keys of each hit"),
    ),
)

SearchBatchBody: type[BaseModel] = create_model(
    "SearchBatchBody",
    __config__=_DERIVED,
    __doc__="Several searches, answered together from one generation of the index.",
    searches=(list[SearchBody], Field(min_length=1)),  # type: ignore[valid-type]
)

AskBody: type[BaseModel] = create_model(
    "AskBody",
    __config__=_DERIVED,
    __doc__="A question, with the options of twokeys.rag.AskOptions; ``budget`` is the total "
    "of tokens for prompt plus answer; ``stream`` answers with server-sent events.",
    question=(str, Field(strict=True)),
    stream=(bool, Field(default=False, strict=True)),
    with_context=(
        bool,
        Field(default=False, strict=True, description="include the context and prompt"),
    ),
    budget=(int, Field(default=Budget().total, ge=MIN_TOTAL, strict=True)),
    # a calibration file is the server's to choose (its model's, in its cache): a client
    # never names a path on the server
    **fields_of(AskOptions, exclude=frozenset({"budget", "verdict_calibration"})),
)


def ask_options(body: BaseModel, defaults: AskOptions | None = None) -> AskOptions:
    """The :class:`AskOptions` an :data:`AskBody` names: what it sets over ``defaults``
    (the server's, :attr:`~twokeys.server.config.ServerConfig.answers`)."""
    given: dict[str, Any] = {  # validated values (a dump makes the support budget a dict)
        name: tuple(value) if isinstance(value, list) else value
        for name in body.model_fields_set - {"question", "stream", "with_context", "budget"}
        for value in [getattr(body, name)]
    }
    budget = Budget.for_total(body.budget)  # type: ignore[attr-defined]
    return dataclasses.replace(defaults or AskOptions(), budget=budget, **given)


class DocumentBody(BaseModel):
    """A document to add or replace: its text parsed as ``kind`` (as if it were a file)."""

    model_config = _STRICT
    id: str = Field(min_length=1, max_length=512)
    text: str
    title: str | None = Field(default=None, description="default: the text's first heading")
    kind: Literal["markdown", "text", "html", "rst"] = "markdown"
    metadata: dict[str, str] = Field(default_factory=dict)


class DocumentsBody(BaseModel):
    """Documents to add or replace, committed together."""

    model_config = _STRICT
    documents: list[DocumentBody] = Field(min_length=1)


# -- responses ----------------------------------------------------------------------


class EvidenceData(TypedDict):
    retriever: str
    rank: int
    score: float
    fused: float
    weight: float
    matched_terms: list[tuple[str, float]]


class HitData(TypedDict, total=False):  # total=False: a search's ``fields`` picks keys
    rank: int
    score: float
    doc_id: str
    chunk_id: str
    path: str
    title: str
    heading: str
    heading_path: list[str]
    start: int
    end: int
    locator: dict[str, Any]  # the set fields of the chunk's Locator (page, slide, ...)
    cite: str  # "manual.pdf p. 12", or the path
    text: str
    evidence: list[EvidenceData]
    others: int  # group_by_document: further hits of its document


class SearchResponse(TypedDict):
    request: dict[str, Any]
    offset: int
    more: bool  # a next page (offset + k) has hits
    hits: list[HitData]
    generation: str


class SearchBatchResponse(TypedDict):
    results: list[SearchResponse]


class SourceData(TypedDict):
    number: int
    path: str
    cite: str  # "manual.pdf pp. 12-13", 'corpus.jsonl #17 "Title"', or the path
    title: str
    heading: str
    quoted_headings: list[str]
    chunk_ids: list[str]
    cited: bool


class AnswerData(TypedDict):
    question: str
    answer: str
    kind: str
    llm: str | None
    model_error: str | None
    declined: bool  # the model said the sources do not answer
    sub_queries: list[str]
    confidence: list[dict[str, Any]]
    sentences: list[dict[str, Any]]
    sources: list[SourceData]
    budget: dict[str, Any]
    followup: dict[str, Any] | None  # a follow-up's standalone query (ask --earlier)
    context: NotRequired[str]
    prompt: NotRequired[str]


class ChunkData(TypedDict):
    chunk_id: str
    position: int
    heading: str
    start: int
    end: int
    locator: dict[str, Any]  # the set fields of the chunk's Locator (page, slide, ...)
    cite: str  # "manual.pdf p. 12", or the path
    text: str


class DocumentData(TypedDict):
    id: str
    title: str
    path: str
    kind: str
    sha256: str
    metadata: dict[str, Any]
    chunks: list[ChunkData]


class DocumentSummary(TypedDict):
    id: str
    title: str
    path: str
    kind: str
    sha256: str
    metadata: dict[str, Any]
    chunks: int  # how many chunks it was cut into


class DocumentPage(TypedDict):
    total: int  # documents the filters allow, over all pages
    offset: int
    limit: int
    filters: list[str]
    documents: list[DocumentSummary]


class WriteResponse(TypedDict):
    added: int
    changed: int
    unchanged: int
    removed: int
    embedded_chunks: int
    documents: int
    chunks: int
    generation: str
    seconds: float
