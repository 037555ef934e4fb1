"""The things an existence question asks for (twokeys.rag.existence)."""

from __future__ import annotations

import pytest

from twokeys.analysis import Analyzer
from twokeys.rag.existence import asked_for

A = Analyzer()


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("Is there a student discount on the Hub?", ["student discount"]),
        ("Can I buy an extended warranty for my cameras?", ["extended warranty"]),
        ("Do you offer gift wrapping on store orders?", ["gift wrapping"]),  # no article
        ("Does Lumatek make a video doorbell that works with the Hub?", ["video doorbell"]),
        ("Do you have a trade-in programme for old Hubs?", ["trade-in programme"]),
        ("Are there any outdoor sirens I can add?", ["outdoor sirens"]),
        ("is there a solar panel accessory kit for it", ["solar panel accessory"]),  # at most 3
        ("My Hub is great. Can we order a wall bracket?", ["wall bracket"]),  # mid-text
    ],
)
def test_the_compound_after_an_existence_lead(question: str, names: list[str]) -> None:
    assert asked_for(question, A) == [(n,) for n in names]


@pytest.mark.parametrize(
    ("question", "alternatives"),
    [
        (
            "Do you offer a student or education discount?",
            ("student discount", "education discount"),
        ),
        ("Is there a wall or ceiling mount?", ("wall mount", "ceiling mount")),
        ("Do you sell smoke detectors or CO alarms?", ("smoke detectors", "CO alarms")),
    ],
)
def test_alternatives_joined_by_or(question: str, alternatives: tuple[str, ...]) -> None:
    assert asked_for(question, A) == [alternatives]


def test_an_alternative_of_one_word_is_left_to_the_sensors() -> None:
    assert asked_for("Do you sell smoke detectors or sirens?", A) == []


@pytest.mark.parametrize(
    "question",
    [
        "Is there a way to turn off the light?",  # one generic noun: left to the sensors
        "Can I get my money back if it arrived broken?",  # possessive: nothing new asked
        "Is there the option to export?",  # definite article
        "Does the Cam Go have a swappable battery?",  # a product's part, described freely
        "Does Studio have a dark mode?",  # what a product has, not what a company offers
        "Is there anything I can do about ZX-4812?",  # the name does not follow the lead
        "Is there a ZX-4812 fix?",  # a code breaks the run: "fix" alone
        "How do I buy a licence?",  # no existence lead
    ],
)
def test_other_questions_ask_for_nothing(question: str) -> None:
    assert asked_for(question, A) == []
