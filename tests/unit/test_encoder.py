"""The encoder base class: a repeated query runs the model once."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from conftest import HashEncoder
from twokeys.dense import encoder as encoder_module


def test_a_repeated_query_is_encoded_once_and_read_only() -> None:
    enc = HashEncoder()
    first = enc.encode_query("reset the hub")
    again = enc.encode_query("reset the hub")
    assert again is first and enc.encoded == 1
    assert np.array_equal(first, enc.encode(["reset the hub"], "query")[0])
    with pytest.raises(ValueError):
        first[0] = 1.0  # a shared vector cannot be changed by one of its readers
    other = enc.encode_query("pair a sensor")
    assert not np.array_equal(other, first) and enc.encoded == 3


def test_the_query_cache_keeps_the_most_recent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encoder_module, "QUERY_CACHE_SIZE", 2)
    enc = HashEncoder()
    for text in ("a b", "c d", "a b", "e f"):  # "c d" is the least recently used
        enc.encode_query(text)
    assert enc.encoded == 3
    enc.encode_query("a b")
    assert enc.encoded == 3
    enc.encode_query("c d")
    assert enc.encoded == 4


def test_threads_share_one_cache() -> None:
    enc = HashEncoder()
    vectors: list[np.ndarray] = []
    threads = [
        threading.Thread(target=lambda: vectors.append(enc.encode_query("same words")))
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(vectors) == 8 and all(np.array_equal(v, vectors[0]) for v in vectors)
    enc.encode_query("same words")
    assert enc.encoded <= 8  # computed at most once per racing thread, then kept


def test_an_encoder_variant_is_named_within_its_block_only() -> None:
    made: list[str] = []

    def variant() -> HashEncoder:
        made.append("variant")
        return HashEncoder()

    before = encoder_module.encoder_names()
    with encoder_module.encoder_variant("minilm", variant):
        assert isinstance(encoder_module.get_encoder("minilm"), HashEncoder)
    assert made == ["variant"]
    assert encoder_module.encoder_names() == before
    with encoder_module.encoder_variant("hash-only", variant):
        assert "hash-only" in encoder_module.encoder_names()
    assert "hash-only" not in encoder_module.encoder_names()
