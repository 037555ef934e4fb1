"""The one sentence splitter (twokeys.text.sentences) that chunking, packing, quotes and
grounding share: prose rules, edge cases, Markdown structure."""

from __future__ import annotations

import re

import pytest

from twokeys.text.sentences import _ABBREVIATION, _LONGEST_LISTED, sentence_spans, split_sentences


def prose(text: str) -> list[str]:
    return [text[a:b] for a, b in sentence_spans(text)]


def pieces(text: str) -> list[str]:
    return [text[a:b] for a, b in split_sentences(text)]


def test_sentence_boundaries() -> None:
    text = (
        "Use a tool, e.g. Grep, to search. Ask Dr. Smith vs. Dr. Jones! "
        "Version 1.2.10 fixed foo.bar() in the U.S. Army build. Why? "
        '"Quoted start." (Bracketed start.) 42 is a number. lowercase does not split. End'
    )
    assert prose(text) == [
        "Use a tool, e.g. Grep, to search.",
        "Ask Dr. Smith vs. Dr. Jones!",
        "Version 1.2.10 fixed foo.bar() in the U.S. Army build.",
        "Why?",
        '"Quoted start."',
        "(Bracketed start.)",
        "42 is a number. lowercase does not split.",
        "End",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # abbreviations and initials are not sentence ends; the sentence after them is
        (
            "Pick a mode, i.e. Hybrid. Ask Prof. Lee, St. Clair et al. Today.",
            ["Pick a mode, i.e. Hybrid.", "Ask Prof. Lee, St. Clair et al. Today."],
        ),
        (
            "J. R. R. Tolkien wrote it. The U.S. Army used it.",
            ["J. R. R. Tolkien wrote it.", "The U.S. Army used it."],
        ),
        # decimals and version strings: a dot with no space after never splits
        (
            "The ratio is 2.5 at most. 3.5 is too much.",
            ["The ratio is 2.5 at most.", "3.5 is too much."],
        ),
        (
            "Run ollama pull qwen2.5:14b. Then set TWOKEYS_LLM=ollama:qwen2.5:14b now.",
            ["Run ollama pull qwen2.5:14b.", "Then set TWOKEYS_LLM=ollama:qwen2.5:14b now."],
        ),
        # inline code and paths
        (
            "Call `client.search()` with k=5. Edit /etc/grub.d/40_custom. Done.",
            ["Call `client.search()` with k=5.", "Edit /etc/grub.d/40_custom.", "Done."],
        ),
        # a numbered list's marker opening a sentence is not a sentence of its own
        (
            "Inputs: 1. The equations. 2. The regions. It ends in section 3. The end.",
            [
                "Inputs: 1.",
                "The equations.",
                "2. The regions.",
                "It ends in section 3.",
                "The end.",
            ],
        ),
        # CJK: full-width stops end a sentence though no space follows
        (
            "日本語の文です。次の文！これは質問？最後の文",
            ["日本語の文です。", "次の文！", "これは質問？", "最後の文"],
        ),
        ("他说：「好的。」然后走了。", ["他说：「好的。」", "然后走了。"]),
        # whitespace is trimmed, nothing empty comes back
        ("  Lead space. Trail space.  ", ["Lead space.", "Trail space."]),
        ("   ", []),
    ],
)
def test_edge_cases(text: str, expected: list[str]) -> None:
    assert prose(text) == expected


def test_spans_are_offsets_into_a_slice_of_the_text() -> None:
    text = "Before. One here. Two here. After."
    start, end = text.index("One"), text.index(" After")
    assert [text[a:b] for a, b in sentence_spans(text, start, end)] == ["One here.", "Two here."]


def test_sentences_split_prose_lists_and_keep_code_fences_whole() -> None:
    text = (
        "ZX-4821 means low voltage, e.g. from a weak adapter. Studio 1.2.10 fixed it!\n"
        "A soft-wrapped line\ncontinues here. Next one?\n\n"
        "- first item\n- second item.\n\n"
        "```sh\nhubctl log --since 10m\n\nhubctl restart\n```\n"
        "| a | b |\n| 1 | 2 |\n"
    )
    assert pieces(text) == [
        "ZX-4821 means low voltage, e.g. from a weak adapter.",
        "Studio 1.2.10 fixed it!",
        "A soft-wrapped line\ncontinues here.",
        "Next one?",
        "- first item",
        "- second item.",
        "```sh\nhubctl log --since 10m\n\nhubctl restart\n```",
        "| a | b |",
        "| 1 | 2 |",
    ]


def test_bullet_and_numbered_lists_keep_their_markers() -> None:
    text = "1. Install the app. Then reboot.\n2. Sign in.\n- a bullet. Another one.\n* star item"
    assert pieces(text) == [
        "1. Install the app.",
        "Then reboot.",
        "2. Sign in.",
        "- a bullet.",
        "Another one.",
        "* star item",
    ]


def test_code_in_a_fence_is_never_split() -> None:
    text = "```python\nx = 1. Y = 2\nprint(x)\n```\nAfter the code. Done."
    assert pieces(text) == ["```python\nx = 1. Y = 2\nprint(x)\n```", "After the code.", "Done."]


def test_an_unclosed_fence_runs_to_the_end() -> None:
    text = "Intro.\n```\ncode. More code.\n"
    assert pieces(text) == ["Intro.", "```\ncode. More code."]


def test_a_cjk_line_end_starts_a_new_piece() -> None:
    assert pieces("第一行。\n第二行") == ["第一行。", "第二行"]


def test_abbreviation_shortcut_covers_every_listed_word() -> None:
    """_is_abbreviation skips the pattern when the word before the dot is longer than
    every listed abbreviation; that bound must follow the list."""
    listed = re.search(r"\(\?:(etc\|[^)]*)\)", _ABBREVIATION.pattern)
    assert listed is not None
    assert max(len(w) for w in listed.group(1).split("|")) == _LONGEST_LISTED
    text = "See approx. Ten. Also abcdefg. Next, and e.g. This and x. Y."
    got = [text[a:b] for a, b in sentence_spans(text)]
    assert got == ["See approx. Ten.", "Also abcdefg.", "Next, and e.g. This and x. Y."]


def test_sentence_end_followed_by_another_end_is_still_a_candidate() -> None:
    # the second "." is looked at as a sentence end of its own, not skipped as the
    # character after the first one
    text = "One . . Two. three"
    got = [text[a:b] for a, b in sentence_spans(text)]
    assert got == ["One . .", "Two. three"]
