"""Filters: parsed from one string each, matched against a document's record."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from twokeys.errors import ConfigError
from twokeys.filters import Filter, allowed_rows, parse_filters
from twokeys.store.base import DocumentInfo


def doc(
    path: str, kind: str = "markdown", first_row: int = 0, n: int = 1, **meta: Any
) -> DocumentInfo:
    return DocumentInfo(path, path, path, kind, 0.0, "", first_row, n, meta)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("path:policies/*", Filter("path", "glob", "policies/*")),
        ("path:policies/", Filter("path", "prefix", "policies/")),
        ("kind:markdown,html", Filter("kind", "in", ("markdown", "html"))),
        ("id:a.md", Filter("id", "in", ("a.md",))),
        ("lang=en", Filter("lang", "=", "en")),
        ("version >= 2", Filter("version", ">=", "2")),
        ("updated<2024-06-01", Filter("updated", "<", "2024-06-01")),
    ],
)
def test_parse_and_print_back(text: str, parsed: Filter) -> None:
    assert Filter.parse(text) == parsed
    assert Filter.parse(str(parsed)) == parsed


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("lang", "expected path:GLOB"),
        ("lang=", "no value"),
        ("lang:en", "'lang:' is not a filter; use path:, kind:, id: or lang=VALUE"),
        ("version>=two", ">= needs a number or an ISO date"),
    ],
)
def test_bad_filters_say_why(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Filter.parse(text)


def test_path_kind_and_id() -> None:
    policy = doc("policies/eu/refunds.md")
    guide = doc("guides/setup.html", kind="html")
    assert Filter.parse("path:policies/*").matches(policy)
    assert Filter.parse("path:*/refunds.md").matches(policy)
    assert not Filter.parse("path:policies/*").matches(guide)
    assert Filter.parse("path:policies/eu").matches(policy)
    assert not Filter.parse("path:guides/").matches(policy)
    assert Filter.parse("kind:html,rst").matches(guide)
    assert not Filter.parse("kind:html,rst").matches(policy)
    assert Filter.parse("id:x,policies/eu/refunds.md").matches(policy)


def test_front_matter_equality_lists_numbers_and_dates() -> None:
    page = doc(
        "a.md",
        lang="en",
        tags=["power", "ZX-4821"],
        version=3,
        draft=False,
        updated="2024-05-01",
        owner={"team": "support"},
    )
    assert Filter.parse("lang=en").matches(page)
    assert not Filter.parse("lang=de").matches(page)
    assert Filter.parse("tags=ZX-4821").matches(page)
    assert not Filter.parse("tags=firmware").matches(page)
    assert Filter.parse("version=3").matches(page) and Filter.parse("version=3.0").matches(page)
    assert Filter.parse("version>=3").matches(page) and not Filter.parse("version>3").matches(page)
    assert Filter.parse("version<10").matches(page)  # numeric, not string, order
    assert Filter.parse("draft=false").matches(page)
    assert Filter.parse("updated>=2024-05-01").matches(page)
    assert Filter.parse("updated<2024-05-01 12:00").matches(page)
    assert not Filter.parse("updated>2024-05-01").matches(page)
    assert Filter.parse("owner.team=support").matches(page)
    assert not Filter.parse("missing=x").matches(page)
    assert not Filter.parse("lang>=2").matches(page)  # not comparable: no match
    assert not Filter.parse("updated>=3").matches(page)  # a date is not a number


def test_allowed_rows_cover_each_matching_documents_chunks() -> None:
    docs = [doc("a.md", first_row=0, n=2, lang="en"), doc("b.md", first_row=2, n=3, lang="de")]
    mask = allowed_rows(docs, parse_filters(["lang=de"]), 5)
    assert mask.tolist() == [False, False, True, True, True]
    both = allowed_rows(docs, parse_filters(["lang=de", "path:a*"]), 5)
    assert not both.any()
    assert allowed_rows(docs, (), 5).all() and mask.dtype == np.bool_


def test_or_and_not_within_one_filter() -> None:
    guides, faq, page = doc("guides/a.md"), doc("general/faq.md"), doc("guides/b.html", "html")
    either = Filter.parse("path:guides/* | path:general/")
    assert either.op == "or" and str(either) == "path:guides/* | path:general/"
    assert [either.matches(d) for d in (guides, faq, page)] == [True, True, True]
    not_html = Filter.parse("!kind:html")
    assert str(not_html) == "!kind:html" and Filter.parse(str(not_html)) == not_html
    assert [not_html.matches(d) for d in (guides, faq, page)] == [True, True, False]
    assert Filter.parse("not kind:html") == not_html
    mixed = parse_filters(["!path:general/ | lang=en", "kind:markdown"])
    english_faq = doc("general/faq.md", lang="en")
    assert [all(f.matches(d) for f in mixed) for d in (guides, faq, english_faq, page)] == [
        True,
        False,
        True,
        False,
    ]
    assert Filter.parse("!lang=en").matches(guides)  # no field: not equal
    second = doc("general/faq.md", first_row=1)
    rows = allowed_rows([guides, second], parse_filters(["!path:guides/"]), 2)
    assert rows.tolist() == [False, True]
    with pytest.raises(ConfigError, match="an empty side of '|'"):
        Filter.parse("path:guides/* |")
    with pytest.raises(ConfigError, match="filter 'colour': expected"):
        Filter.parse("!colour")
