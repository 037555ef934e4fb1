"""Names a question gives a product's settings, options and features (twokeys.rag.elements)."""

from __future__ import annotations

import pytest

from twokeys.rag.elements import Element, elements


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("What does the pet detection setting do?", ["pet detection"]),
        ("How do I use the energy monitoring dashboard in Studio?", ["energy monitoring"]),
        ("What does the wide dynamic range option change?", ["wide dynamic range"]),
        ("Is there a dark mode in Studio?", ["dark"]),
        ("Which plan do I need, and what does the charge limit setting do?", ["charge limit"]),
        ("What do my notification settings control?", ["notification"]),
    ],
)
def test_a_determiner_a_name_and_an_element_noun(question: str, names: list[str]) -> None:
    assert [e.name for e in elements(question)] == names


@pytest.mark.parametrize(
    "question",
    [
        "Which night illumination setting makes the battery last longer?",  # no determiner
        "How do I change settings?",  # no name
        "What does the --quiet option do?",  # an identifier, not words
        "Where is the setting for the lens heater?",  # the noun comes first: no name
    ],
)
def test_other_wordings_name_no_element(question: str) -> None:
    assert elements(question) == []


def test_setting_before_up_or_off_is_a_verb() -> None:
    assert elements("Why do the bushes in my yard keep setting off alerts?") == []
    assert elements("How long does setting up the Hub take?") == []


def test_an_element_is_documented_by_its_name_or_a_tail_of_it_with_the_noun() -> None:
    # "the camera leave setup mode" reads a verb into the name; "setup mode" documents it
    (element,) = elements("Does the camera leave setup mode after E-102?")
    assert element == Element("camera leave setup", "mode")
    assert element.writings() == [
        "camera leave setup",
        "camera leave setup mode",
        "leave setup mode",
        "setup mode",
    ]
