"""The cheap passage reader: each text's best sentence against the question, in the
static MiniLM space."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from twokeys.rag import sentence_reader
from twokeys.rag.sentence_reader import best_sentence_cosines, static_reader


class _Axes:
    """A stand-in encoder: a text's vector counts the words "red", "blue", "green"."""

    WORDS = ("red", "blue", "green")

    def _vector(self, text: str) -> npt.NDArray[np.float32]:
        words = text.lower().replace(".", " ").split()
        return np.array([words.count(w) for w in self.WORDS], np.float32)

    def encode_one(self, text: str) -> npt.NDArray[np.float32]:
        v = self._vector(text)
        return v / max(float(np.linalg.norm(v)), 1e-12)

    def embed_batch(self, texts: Sequence[str], kind: str) -> npt.NDArray[np.float32]:
        return np.stack([3.0 * self._vector(t) for t in texts])  # not normalised


def test_the_best_sentence_decides_not_the_whole_text() -> None:
    texts = [
        "Blue blue blue. Green green. A red one.",  # one sentence on the question
        "Red blue. Red green.",  # every sentence half on it
        "",
        "Nothing here.",
    ]
    got = best_sentence_cosines(_Axes(), "red", texts)  # type: ignore[arg-type]
    assert got[0] == pytest.approx(1.0)
    assert got[1] == pytest.approx(1 / np.sqrt(2))
    assert got[2] == 0.0  # no sentence
    assert got[3] == 0.0  # a sentence of no known word: a zero vector
    assert best_sentence_cosines(_Axes(), "red", []).shape == (0,)  # type: ignore[arg-type]


def test_static_reader_prefers_the_passage_that_answers() -> None:
    read = static_reader("How long does the battery last on a full charge?")
    texts = [
        "The case is made of aluminium. On a full charge the battery lasts ten hours.",
        "The case is made of aluminium. It comes in three colours.",
    ]
    cosines = read(texts)
    assert cosines.shape == (2,)
    assert cosines[0] > cosines[1]
    assert np.array_equal(cosines, read(texts))  # deterministic


def test_the_encoder_is_loaded_at_the_first_read_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its table takes about 25 s to build on a machine's first use: a question whose
    hits are never read (fewer than two are not re-ranked) must not build it."""
    loaded: list[int] = []

    def encoder() -> _Axes:
        loaded.append(1)
        return _Axes()

    monkeypatch.setattr(sentence_reader, "static_encoder", encoder)
    read = static_reader("red")
    assert loaded == []
    assert list(read(["Red.", "Blue."])) == pytest.approx([1.0, 0.0])
    assert loaded == [1]
