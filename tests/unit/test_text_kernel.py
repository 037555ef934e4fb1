"""The compiled text rules (``twokeys.text._kernel``) against their Python references:
the same sentence spans (:func:`twokeys.text.sentences.python_sentence_spans`) and the
same approximate token counts (the regex of :mod:`twokeys.text.tokens`)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from twokeys.text import sentences, tokens
from twokeys.text.sentences import python_sentence_spans
from twokeys.text.tokens import _APPROX_TOKEN

kernel = sentences._kernel
needs_kernel = pytest.mark.skipif(kernel is None, reason="twokeys.text._kernel not built")

# what the rules look at: sentence punctuation (Western and CJK), closers and openers,
# digits (decimal, and digits and numerics that are not decimal), upper, lower and title
# case beyond ASCII, letters re's IGNORECASE matches to ASCII (Kelvin sign, long s,
# dotted I), whitespace to Python (and not), a backslash (escaped in the closers' class),
# characters of every str width, and the words the abbreviation rule lists
CHARACTERS = (
    ".!?。！？\"'“”‘’()[]*_`」』）】〕〉》\\-:;,/"
    "0123456789٣²½ⅫAZÉΣǅazéσ\u212a\u017f\u0130ı中한\U0001d400\U0001f600"
    " \t\n\r\x0b\x0c\x1c\x85\xa0\u2000\u2028\u3000\u200b"
)
WORDS = ["e.g.", "i.e", "U.S", "Dr", "dR", "etc", "approx", "no", "nos", "vs", "al", "Fig"]
WORDS += ["ab", "abcdef", "abcdefg", "1.", "42", "123456789", "1234567890", "x", "ſt", "Kca"]
PIECES = [*CHARACTERS, *WORDS]


def random_texts(seed: int, n: int, longest: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choices(PIECES, k=rng.randint(0, longest))) for _ in range(n)]


def test_the_compiled_text_kernel_is_built() -> None:
    """`pip install -e .` (or `make venv`) compiles it; without it chunking is slower."""
    assert kernel is not None, (
        "twokeys.text._kernel is not built: run `pip install -e .` (needs a C compiler)"
    )


@needs_kernel
def test_compiled_sentence_spans_are_the_pythons_on_random_text() -> None:
    rng = random.Random(3)
    for text in random_texts(1, 20_000, 40):
        assert sentences.sentence_spans(text) == python_sentence_spans(text, 0, len(text)), text
        start = rng.randint(0, len(text))
        end = rng.randint(start, len(text))
        assert sentences.sentence_spans(text, start, end) == python_sentence_spans(
            text, start, end
        ), (text, start, end)


@needs_kernel
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join), st.data())
def test_compiled_sentence_spans_are_the_pythons(text: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    assert sentences.sentence_spans(text, start, end) == python_sentence_spans(text, start, end)


@needs_kernel
@given(st.text(max_size=60))
def test_compiled_sentence_spans_are_the_pythons_on_any_text(text: str) -> None:
    assert sentences.sentence_spans(text) == python_sentence_spans(text, 0, len(text))


@needs_kernel
def test_words_beyond_ascii_ask_the_pattern_about_abbreviations() -> None:
    # re's IGNORECASE matches the long s to "s" (and the Kelvin sign to "k"); the compiled
    # rule leaves such words to the pattern, so both keep "ſt." and "Mrſ." whole
    for text in ("Ask ſt. Clair. Then go.", "Ask Mrſ. Lee. Then go.", "Née. Then."):
        assert sentences.sentence_spans(text) == python_sentence_spans(text, 0, len(text))
    assert len(sentences.sentence_spans("Ask ſt. Clair. Then go.")) == 2
    assert len(sentences.sentence_spans("Ask Mrſ. Lee. Then go.")) == 2


def by_regex(texts: list[str]) -> list[int]:
    return [len(_APPROX_TOKEN.findall(t)) for t in texts]


@needs_kernel
def test_compiled_counts_are_the_regexs_on_random_text() -> None:
    texts = [*random_texts(2, 20_000, 30), "", "a" * 13, "_" * 6, "\ud800x", "!" * 7]
    assert tokens.approx_token_counter(texts) == by_regex(texts)
    assert tokens.python_approx_counts(texts) == by_regex(texts)


@needs_kernel
@given(st.lists(st.text(), max_size=8))
def test_compiled_counts_are_the_regexs(texts: list[str]) -> None:
    assert tokens.approx_token_counter(texts) == by_regex(texts)


@needs_kernel
def test_compiled_counts_want_strings() -> None:
    assert kernel is not None
    with pytest.raises(TypeError, match="item 1 is bytes"):
        kernel.approx_counts(["a", b"b"])


@given(st.text(max_size=60), st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60))))
def test_span_counts_are_the_counts_of_the_slices(text: str, pairs: list[tuple[int, int]]) -> None:
    spans = [(min(a, b, len(text)), min(max(a, b), len(text))) for a, b in pairs]
    expected = by_regex([text[a:b] for a, b in spans])
    assert tokens.approx_span_counts(text, spans) == expected


@needs_kernel
def test_compiled_span_counts_want_spans_within_the_text() -> None:
    assert kernel is not None
    assert kernel.approx_span_counts("ab cd!", [(0, 2), (2, 6), (0, 0)]) == [1, 2, 0]
    with pytest.raises(ValueError, match=r"span 1 \(3, 9\) is not within the text"):
        kernel.approx_span_counts("ab cd", [(0, 2), (3, 9)])
    with pytest.raises(ValueError, match="span 0"):
        kernel.approx_span_counts("ab cd", [(3, 2)])
    with pytest.raises(TypeError, match="span 0 is not a pair"):
        kernel.approx_span_counts("ab cd", [[0, 2]])


def test_span_counts_without_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_kernel", None)
    text = "Hello, world!  x_1 abcdefghijklm"
    spans = [(0, 6), (7, 13), (15, 18), (19, 32), (0, 32)]
    assert tokens.approx_span_counts(text, spans) == by_regex([text[a:b] for a, b in spans])


@needs_kernel
@given(st.text(max_size=40), st.integers(0, 0x110000))
def test_all_below_is_every_characters_test(text: str, code: int) -> None:
    assert kernel is not None
    assert kernel.all_below(text, code) == all(ord(c) < code for c in text)
