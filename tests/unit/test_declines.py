"""A model's own abstention: which sentences say the sources do not answer."""

from __future__ import annotations

import pytest

from twokeys.rag.declines import declines, is_decline
from twokeys.rag.prompt import DECLINE, SYSTEM


@pytest.mark.parametrize(
    "sentence",
    [
        DECLINE,
        "The sources don't say how loud the siren is.",
        "The provided context does not mention face recognition.",
        "The passages do not contain this information.",
        "The provided documents do not mention it.",
        "The documentation doesn't specify a price for the Studio Pro licence.",
        "The sources cannot answer this question.",
        "This is not mentioned in the sources.",
        "The price of the dock is not stated in the provided passages.",
        "The question cannot be answered from the context.",
        "I don't know.",
        "I cannot find this in the sources.",
        "There is no information about two-way talk.",
        "No information on instalment payments.",
        "  - The sources do not answer this.",
        "I'm sorry, but the provided passages do not contain information about instalments.",
        "Unfortunately, the context does not specify the siren's volume.",
        "Based on the provided context, there is no information about face recognition.",
        "According to the sources, this is not mentioned in the passages.",
    ],
)
def test_a_sentence_that_says_the_sources_do_not_answer_declines(sentence: str) -> None:
    assert declines(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "The Hub does not support Z-Wave.",
        "There is no fee for returns within 30 days.",
        "The sources say the siren is 85 dB.",
        "Restart the Hub and wait two minutes.",
        "Refunds are not given for opened software.",
        "The context window of the model is 2,048 tokens.",
        "I know the answer: ZX-4821 means low voltage.",
        "Documents do not need to be re-indexed after a rename.",
        "Documents do not include PDFs yet.",
        "The information does not include your password.",
        "However, the Hub does not support Z-Wave [1].",
        "Based on the sources, the siren is 85 dB.",
    ],
)
def test_an_answer_does_not_decline(sentence: str) -> None:
    assert not declines(sentence)


def test_the_prompt_asks_for_the_sentence_that_declines() -> None:
    assert f'"{DECLINE}"' in SYSTEM


def test_the_asked_for_sentence_is_known_word_for_word() -> None:
    assert is_decline(DECLINE) and is_decline("the sources do not answer this")
    assert not is_decline("The sources do not answer this, but the Hub is 85 dB.")
