"""Kind words: a word a corpus only ever writes qualified, and a query's qualifier it lacks."""

from __future__ import annotations

import pytest

from twokeys.analysis import Analyzer
from twokeys.rag.kinds import (
    RunWord,
    is_quantity,
    numbered,
    qualifiers,
    runs,
    table_members,
    unseen_kind,
    unseen_number,
    written_pairs,
)

A = Analyzer()

PAGE = """Hold the button until the Hub enters setup mode. Put a sensor into pairing mode
as its leaflet says. A scene can turn camera privacy mode on; switch tiles to snapshot
mode, which refreshes less often. The report lists errors, and a second report follows.
Weekly reports and daily reports, monthly reports: a report is kept for a year.
Two cards: memory cards, gift cards, reference cards.
"""


def _runs(text: str = PAGE) -> list[tuple[RunWord, ...]]:
    return runs(text, A)


def _word(text: str) -> RunWord:
    (run,) = runs(text, A)
    (word,) = run
    return word


def _pair(text: str) -> tuple[RunWord, RunWord]:
    (run,) = runs(text, A)
    first, second = run
    return first, second


def test_runs_stop_at_stopwords_punctuation_and_identifiers() -> None:
    got = [" ".join(w.text for w in r) for r in _runs("Turn on vacation mode, then run hubctl.")]
    assert got == ["Turn", "vacation mode", "run hubctl"]  # a plain word: not an identifier
    got = [" ".join(w.text for w in r) for r in _runs("Set tile_default_mode = snapshot mode")]
    assert got == ["Set", "snapshot mode"]  # an identifier breaks a run
    assert _word("Pairing").term == "pair" and _word("Pairing").word == "pairing"


def test_a_word_always_qualified_by_three_kinds_is_a_kind_word() -> None:
    family = qualifiers(_word("mode"), _runs())
    assert family == frozenset({"setup", "pair", "privaci", "snapshot"})
    # "report" ends a run alone ("a second report", "a report is kept"): no family
    assert qualifiers(_word("report"), _runs()) is None
    # "reports" is always qualified, but "report" (the same term) is written alone
    assert qualifiers(_word("reports"), _runs()) is None
    # "cards": "Two cards", "memory cards", "gift cards", "reference cards": four kinds
    assert qualifiers(_word("cards"), _runs()) == frozenset({"two", "memori", "gift", "refer"})
    # two qualifiers are a phrase or two, not a family
    assert qualifiers(_word("mode"), _runs("Setup mode and pairing mode.")) is None


def test_a_qualifier_the_pages_never_give_a_kind_word_is_named() -> None:
    family = qualifiers(_word("mode"), _runs())
    written = written_pairs(_runs())
    assert unseen_kind(_pair("vacation mode"), family, written, rarer=True) == "vacation mode"
    assert unseen_kind(_pair("Night Mode"), family, written, rarer=True) == "Night Mode"
    # a qualifier the pages give, in any form
    assert unseen_kind(_pair("pair mode"), family, written, rarer=True) is None
    assert unseen_kind(_pair("privacy mode"), family, written, rarer=True) is None
    # the qualifier must be the rarer word: a common one ("app take") names no member
    assert unseen_kind(_pair("vacation mode"), family, written, rarer=False) is None
    # no family, nothing to leave
    assert unseen_kind(_pair("vacation report"), None, written, rarer=True) is None


def test_a_pair_written_inside_a_longer_run_counts_as_written() -> None:
    page = PAGE + "The night mode settings screen lists the options."
    family = qualifiers(_word("mode"), _runs(page))
    assert family is not None and "night" not in family  # "mode" does not end that run
    assert unseen_kind(_pair("night mode"), family, written_pairs(_runs(page)), True) is None


# --- numbered members ----------------------------------------------------------------------


def test_a_word_and_a_number_that_is_no_quantity_name_a_member() -> None:
    found = numbered(
        "What does exit code 5 from lumatek-cli mean? And a level 4 reset?", A.query_terms
    )
    assert [(n.term, n.number, n.text) for n in found] == [
        ("code", 5, "code 5"),
        ("level", 4, "level 4"),
    ]
    assert numbered("### Level 1: Restart", A.query_terms)[0].text == "Level 1"


@pytest.mark.parametrize(
    "text",
    [
        "wait 10 seconds",  # a duration
        "mount it 2 metres up",  # a distance
        "version 3.2.1 fixed it",  # a version, not a whole number
        "set it to 5",  # a stopword before the number
        "code 1234",  # more than three digits
    ],
)
def test_quantities_versions_and_stopwords_name_no_member(text: str) -> None:
    assert numbered(text, A.query_terms) == []


def test_a_table_column_headed_by_one_word_numbers_its_members() -> None:
    text = "Exit codes\n| Code | Meaning |\n| --- | --- |\n| 0 | Success |\n| 4 | Unreachable |"
    assert table_members(text, A.query_terms) == {"code": {0, 4}}
    assert (
        table_members("| Exit code | Meaning |\n| --- | --- |\n| 0 | Success |", A.query_terms)
        == {}
    )


def test_a_number_outside_a_family_of_three_is_unseen() -> None:
    asked = numbered("exit code 5", A.query_terms)[0]
    assert unseen_number(asked, {0, 1, 2, 3, 4}) == "code 5"
    assert unseen_number(asked, {0, 5}) is None  # two members: no family
    assert unseen_number(numbered("exit code 3", A.query_terms)[0], {0, 1, 2, 3, 4}) is None
    assert not is_quantity("4 reset") and is_quantity("10 seconds")
