"""Counting word by word (twokeys.text.tokens.SpaceSplitCounter): the same counts as the
tokenizer's own, each distinct word counted once, and used only for tokenizers whose
counts add up over spaces."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from twokeys.text.tokens import (
    _APPROX_TOKEN,
    APPROX_ARRAY_MIN_CHARS,
    SpaceSplitCounter,
    _approx_counts,
    approx_token_counter,
)

tokenizers = pytest.importorskip("tokenizers")

# characters a normaliser or pre-tokenizer treats specially: controls it drops (some of
# them whitespace to Python), Unicode spaces, accents it strips, characters whose lower
# case or NFD form is longer (İ, ŉ, Hangul), CJK it pads, Greek sigma, emoji
CHARACTERS = (
    "aZ9 .,;'\"-_[]()#\t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u2000\u2028\u3000\u200b\u00ad\ufffd\x00"
    "éΣσςİı\u0301\u0327한中。！「」\U0001f600ŉǅﬁ"
)
PIECES = ["[CLS]", "[SEP]", "[MASK]", "[UNK]", "a" * 101, "b" * 99, "  ", "ZX-4821", "##ing"]
HOSTILE = [*CHARACTERS, *PIECES]


@pytest.fixture(scope="module")
def minilm() -> object:
    from twokeys.dense.onnx_minilm import model_files

    tokenizer = tokenizers.Tokenizer.from_file(str(model_files()[1]))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def _plain(tokenizer: object):  # type: ignore[no-untyped-def]
    def count(texts: Sequence[str]) -> list[int]:
        encodings = tokenizer.encode_batch(list(texts), add_special_tokens=False)  # type: ignore[attr-defined]
        return [len(e.ids) for e in encodings]

    return count


class Recording:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: Sequence[str]) -> list[int]:
        self.calls.append(sorted(texts))
        return approx_token_counter(texts)


def by_regex(texts: Sequence[str]) -> list[int]:
    return [len(_APPROX_TOKEN.findall(t)) for t in texts]


@given(st.lists(st.text(), max_size=8))
def test_approximate_counts_from_character_classes_are_the_regexs(texts: list[str]) -> None:
    assert _approx_counts(texts) == by_regex(texts)


def test_a_large_batch_is_counted_from_character_classes_with_the_same_counts() -> None:
    rng = random.Random(5)
    alphabet = [*CHARACTERS, "abcdefghijklmnop", "x_9", "---", "\ud800", "東京"]
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80))) for _ in range(3000)]
    texts += ["", " ", "a" * 13, "!" * 7, "\n"]
    assert sum(map(len, texts)) >= APPROX_ARRAY_MIN_CHARS
    assert approx_token_counter(texts) == by_regex(texts)
    assert approx_token_counter(["", ""] * 3000) == [0] * 6000


@given(st.lists(st.text(), max_size=8))
def test_same_counts_as_the_approximate_counter(texts: list[str]) -> None:
    assert SpaceSplitCounter(approx_token_counter)(texts) == approx_token_counter(texts)


def test_same_counts_as_the_default_encoders_tokenizer_on_hostile_text(minilm: object) -> None:
    from twokeys.dense.onnx_minilm import adds_over_spaces

    assert adds_over_spaces(minilm)
    rng = random.Random(11)
    texts = ["".join(rng.choice(HOSTILE) for _ in range(rng.randint(0, 30))) for _ in range(20_000)]
    plain = _plain(minilm)
    counter = SpaceSplitCounter(plain)
    expected = plain(texts)
    assert counter(texts) == expected
    assert counter(texts) == expected  # again, every word remembered
    assert max(expected) > 30  # some word became more tokens than characters were drawn


def test_a_token_may_cover_less_than_a_character(minilm: object) -> None:
    # why "at most one token a non-space character" is no bound for this tokenizer:
    # its normaliser decomposes a Hangul syllable into three jamo, each a token
    count = _plain(minilm)
    assert count(["한", "한국어", "cat"]) == [3, 8, 1]


def test_default_encoder_counts_through_the_word_cache(minilm: object) -> None:
    from twokeys.dense.onnx_minilm import OnnxMiniLM

    encoder = OnnxMiniLM(threads=1)
    texts = ["The ZX-4821 boots.", "", "Ünïcode  and\tCJK 中文。", "x" * 300]
    assert isinstance(encoder._counting(), SpaceSplitCounter)
    assert encoder.count_tokens(texts) == _plain(minilm)(texts)


def test_each_distinct_word_is_counted_once() -> None:
    inner = Recording()
    counter = SpaceSplitCounter(inner)
    assert counter(["the cat sat", "the  dog", ""]) == [3, 2, 0]
    assert inner.calls == [["cat", "dog", "sat", "the"]]
    assert counter(["the dog sat", "a cat"]) == [3, 2]
    assert inner.calls[1:] == [["a"]]
    assert counter(["sat the cat"]) == [3] and len(inner.calls) == 2  # nothing new


def test_memory_starts_afresh_past_max_words() -> None:
    inner = Recording()
    counter = SpaceSplitCounter(inner, max_words=3)
    counter(["one two three four"])
    assert counter(["one"]) == [1]
    assert inner.calls[-1] == ["one"]  # forgotten, counted again


def test_memory_starts_afresh_past_max_chars() -> None:
    inner = Recording()
    counter = SpaceSplitCounter(inner, max_chars=1000)
    blob = "x" * 2000  # one long unbroken word: remembered, then the budget is spent
    assert counter([blob, "short"]) == approx_token_counter([blob, "short"])
    assert counter(["short"]) == [1]
    assert inner.calls[-1] == ["short"]  # forgotten with the blob, counted again
    assert counter(["short"]) == [1] and len(inner.calls) == 2


def test_a_counter_answering_the_wrong_number_of_counts_is_an_error() -> None:
    counter = SpaceSplitCounter(lambda texts: [1])
    with pytest.raises(ValueError, match="returned 1 counts for 2 texts"):
        counter(["two words"])


def test_only_tokenizers_that_add_up_over_spaces_qualify(minilm: object) -> None:
    from twokeys.dense.onnx_minilm import adds_over_spaces

    bpe = tokenizers.Tokenizer(tokenizers.models.BPE())
    bpe.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel()
    assert not adds_over_spaces(bpe)  # its tokens carry the space before a word
    bert = tokenizers.Tokenizer.from_str(minilm.to_str())  # type: ignore[attr-defined]
    assert adds_over_spaces(bert)
    bert.add_tokens(["new york"])
    assert not adds_over_spaces(bert)  # one token across a space
