"""Query decomposition: rule-based splits, and the LLM-based one with its fallback."""

from __future__ import annotations

import pytest

from conftest import ScriptedLLM
from twokeys.errors import ConfigError
from twokeys.rag.decompose import decompose, decompose_with_llm, parse_query_list


@pytest.mark.parametrize(
    ("prompt", "parts"),
    [
        (
            "Why was nomic-embed-text chosen, what does the --unrestricted flag do, "
            "and when did the Hub start sending Retry-After headers?",
            [
                "Why was nomic-embed-text chosen",
                "what does the --unrestricted flag do",
                "when did the Hub start sending Retry-After headers",
            ],
        ),
        (
            "What is the warranty period? How long does shipping take?",
            ["What is the warranty period", "How long does shipping take"],
        ),
        (
            "Is the hub under warranty, and can I return it?",
            ["Is the hub under warranty", "can I return it (hub under warranty)"],
        ),
        (
            "How much memory does Studio need, and can Studio 1 read Studio 2 rules?",
            ["How much memory does Studio need", "can Studio 1 read Studio 2 rules"],
        ),
        (
            "What does ZX-4821 mean and how do I fix it?",
            ["What does ZX-4821 mean", "how do I fix it (ZX-4821)"],
        ),
        ("router port; camera resolution", ["router port", "camera resolution"]),
        (
            # a numbered item is carried with the identifiers; a quantity is not one
            "My script got exit code 4 from lumatek-cli, what does that mean?",
            [
                "My script got exit code 4 from lumatek-cli",
                "what does that mean (lumatek-cli code 4)",
            ],
        ),
        (
            "I waited 10 minutes, is that normal?",
            ["I waited 10 minutes", "is that normal (waited 10 minutes)"],
        ),
        (
            # a condition after the first question qualifies the question after it
            "How long is the warranty, and if the case arrived cracked can I get a refund?",
            ["How long is the warranty", "if the case arrived cracked can I get a refund"],
        ),
        (
            "How long is the warranty, and if it arrived broken, how long do I have to report it?",
            [
                "How long is the warranty",
                "if it arrived broken, how long do I have to report it (long warranty)",
            ],
        ),
        (
            # a condition that asks a question itself is a part of its own
            "If I order this morning will it ship today, and can I get a refund?",
            ["If I order this morning will it ship today", "can I get a refund"],
        ),
        # a question word after "when" makes a question, not a condition
        (
            "When does it ship, and when will it arrive?",
            ["When does it ship", "when will it arrive (ship)"],
        ),
    ],
)
def test_several_questions_become_several_sub_queries(prompt: str, parts: list[str]) -> None:
    assert decompose(prompt) == parts


@pytest.mark.parametrize(
    "prompt",
    [
        "What does error code ZX-4821 mean?",
        "How do I reset and re-pair the hub?",
        "Can I get my money back if the item arrived broken?",
        "What to do when the hub is offline",
        "Why is qwen2.5:14b the model used for summaries?",
        "What changed in Studio 1.2.10?",
        "Adding a menu entry to /etc/grub.d/40_custom",
        "Is it safe, and why?",  # "why" alone is no sub-query
        "Does the Hub work with Alexa and can Google use it?",  # no comma before "and"
        "Open the app, and if the light is red the Hub is offline.",  # no question follows
        "If I write to the helpdesk, how soon do I hear back?",  # a condition and its question
        "After a power outage, does the Hub catch up on the rules it missed?",
    ],
)
def test_one_question_stays_whole(prompt: str) -> None:
    assert decompose(prompt) == [prompt]


def test_at_most_max_parts_the_rest_joined_into_the_last() -> None:
    prompt = "What is A1? What is B2? What is C3? What is D4? What is E5?"
    assert decompose(prompt, max_parts=3) == [
        "What is A1",
        "What is B2",
        "What is C3; What is D4; What is E5",
    ]
    with pytest.raises(ConfigError, match="max_parts"):
        decompose(prompt, max_parts=0)
    with pytest.raises(ConfigError, match="question: is empty"):
        decompose("   ")


def test_llm_decomposition_parses_lines_and_falls_back_to_rules() -> None:
    llm = ScriptedLLM("1. Why was nomic-embed-text chosen?\n- What does --unrestricted do?\n\n")
    assert decompose_with_llm("why X and what Y", llm) == [
        "Why was nomic-embed-text chosen?",
        "What does --unrestricted do?",
    ]
    assert llm.prompts and not isinstance(llm.prompts[0], str)  # chat messages
    base = ScriptedLLM("\n".join(f"query {i}" for i in range(9)), chat=False)
    prompt = "What is the warranty period? How long does shipping take?"
    assert decompose_with_llm(prompt, base) == decompose(prompt)  # too many lines: rules
    assert isinstance(base.prompts[0], str)  # a completion prompt for a base model
    assert decompose_with_llm("What is ZX-4821?", ScriptedLLM("")) == ["What is ZX-4821?"]


def test_parse_query_list_strips_bullets_numbers_and_quotes() -> None:
    assert parse_query_list('1) "first"\n* second\n\n3. `third`\n* second') == [
        "first",
        "second",
        "third",
    ]


def test_llm_decomposition_rejects_chat_template_junk() -> None:
    prompt = "Why was nomic-embed-text chosen, and what does --unrestricted do?"
    for junk in (
        "<|im_end|>\n<|im_start|>",
        "<end_of_turn>\nuser",
        "Queries:\nRequest: x",
        "--\n?",
    ):
        assert decompose_with_llm(prompt, ScriptedLLM(junk)) == decompose(prompt), junk
