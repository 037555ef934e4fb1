"""SearchRequest: one value per search, validated once; mode shorthands parsed into fields."""

from __future__ import annotations

import math
import re

import pytest

from twokeys.errors import ConfigError
from twokeys.fusion.rrf import DEFAULT_K
from twokeys.request import DEFAULTS, MODES, SHORTHANDS, SearchRequest
from twokeys.retrievers.hybrid import DEFAULT_FUSION
from twokeys.retrievers.reranking import DEFAULT_TOP_N


def test_defaults_are_the_library_defaults() -> None:
    request = SearchRequest("power")
    assert request.retriever == "hybrid" and request.fusion == DEFAULT_FUSION
    assert request.rrf_k == DEFAULT_K and request.rerank_top == DEFAULT_TOP_N
    assert request.k == 10 and request.reranker is None and not request.explain
    assert DEFAULTS["k"] == 10 and "query" not in DEFAULTS


@pytest.mark.parametrize(
    ("mode", "fields"),
    [
        ("bm25", {"retriever": "bm25"}),
        ("hybrid-rrf", {"retriever": "hybrid", "fusion": "rrf"}),
        ("hybrid-rrf-confidence", {"retriever": "hybrid", "fusion": "rrf-confidence"}),
        ("hybrid-minmax", {"retriever": "hybrid", "fusion": "minmax"}),
        ("hybrid+e5", {"retriever": "hybrid", "reranker": "e5"}),
        ("hybrid+proximity", {"retriever": "hybrid", "reranker": "proximity"}),
        ("lsi", {"retriever": "lsi"}),
    ],
)
def test_mode_shorthands_become_fields(mode: str, fields: dict[str, str]) -> None:
    request = SearchRequest.parse("power", mode)
    assert {name: getattr(request, name) for name in fields} == fields
    assert request == SearchRequest("power", **fields)  # type: ignore[arg-type]


def test_every_mode_parses() -> None:
    assert len(MODES) == len(set(MODES))
    for mode in MODES:
        SearchRequest.parse("power", mode)
    assert set(SHORTHANDS) < set(MODES)


@pytest.mark.parametrize(
    ("mode", "options", "message"),
    [
        ("hybrid-rrf", {"fusion": "minmax"}, "mode hybrid-rrf sets fusion rrf; it conflicts"),
        ("hybrid+e5", {"reranker": "proximity"}, "mode hybrid+e5 sets reranker e5"),
        ("bm25", {"fusion": "rrf"}, "fusion: applies to the hybrid retriever only"),
        ("dense", {"candidates": 50}, "candidates: applies to the hybrid retriever only"),
        ("hybrid", {"rrf_k": 10.0}, "rrf_k: applies to the rrf fusions only"),
        ("hybrid-rrf", {"lexical_weight": 0.3}, "lexical_weight: applies to the fusions"),
        ("hybrid", {"rerank_top": 5}, "rerank_top: applies only with a reranker"),
        ("hybrid", {"colour": "red"}, "unknown option(s) colour"),
        ("bm26", {}, "mode: 'bm26' is not one of"),
    ],
)
def test_conflicting_or_unread_options_are_errors(
    mode: str, options: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        SearchRequest.parse("power", mode, **options)


def test_agreeing_options_and_explicit_parameters_are_fine() -> None:
    request = SearchRequest.parse("power", "hybrid-rrf", fusion="rrf", rrf_k=10.0)
    assert (request.fusion, request.rrf_k) == ("rrf", 10.0)
    request = SearchRequest.parse("power", "hybrid-minmax", lexical_weight=0.2)
    assert request.lexical_weight == 0.2
    request = SearchRequest.parse("power", "hybrid+e5", reranker="e5", rerank_top=5)
    assert (request.reranker, request.rerank_top) == ("e5", 5)
    assert SearchRequest.parse("power", None, fusion="rrf").retriever == "hybrid"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"query": "  "}, "query: is empty"),
        ({"k": 0}, "k: must be >= 1"),
        ({"k": 2.5}, "k: must be an integer"),
        ({"k": True}, "k: must be an integer"),
        ({"candidates": 0}, "candidates: must be >= 1"),
        ({"rerank_top": 0}, "rerank_top: must be >= 1"),
        ({"rrf_k": math.inf}, "rrf_k: must be finite"),
        ({"rrf_k": math.nan}, "rrf_k: must be finite"),
        ({"rrf_k": -1.0}, "rrf_k: must be >= 0"),
        ({"rrf_k": "60"}, "rrf_k: must be a number"),
        ({"lexical_weight": 1.5}, r"lexical_weight: must be in \[0, 1\]"),
        ({"lexical_weight": math.nan}, "lexical_weight: must be finite"),
        ({"fusion": "borda"}, "fusion: 'borda' is not one of"),
        ({"retriever": "hybrid-rrf"}, "a mode: use mode='hybrid-rrf'"),
        ({"reranker": ""}, "reranker: must be a reranker name"),
        ({"explain": "yes"}, "explain: must be true or false"),
    ],
)
def test_bad_values_name_their_field(fields: dict[str, object], message: str) -> None:
    values: dict[str, object] = {"query": "power", **fields}
    with pytest.raises(ConfigError, match=message):
        SearchRequest(**values)  # type: ignore[arg-type]


def test_frozen_and_round_trips_through_a_dict() -> None:
    request = SearchRequest.parse("power", "hybrid-rrf", rrf_k=20.0, k=3, explain=True)
    with pytest.raises(AttributeError):
        request.k = 4  # type: ignore[misc]
    assert SearchRequest.from_dict(request.to_dict()) == request
    assert SearchRequest.from_dict({"query": "power", "mode": "hybrid+e5"}).reranker == "e5"
    with pytest.raises(ConfigError, match="query: missing"):
        SearchRequest.from_dict({"mode": "bm25"})
    assert request.with_query("fuse").query == "fuse"
    assert request.with_query("fuse").pipeline == request.pipeline
