"""Token-id input without the ``token-ids`` extra: a 400 that says both ways out."""

from __future__ import annotations

import sys

import pytest

from twokeys.server import token_ids
from twokeys.server.config import RequestError


def test_without_the_extra_token_ids_are_refused_naming_both_fixes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "bpe_openai", None)  # import fails as if not installed
    token_ids._encoding.cache_clear()
    try:
        with pytest.raises(RequestError) as caught:
            token_ids.decode_inputs([[9906, 1917]])
    finally:
        token_ids._encoding.cache_clear()
    assert caught.value.status == 400
    assert "twokeys[token-ids]" in caught.value.message
    assert "check_embedding_ctx_length=False" in caught.value.message


def test_ids_decode_to_their_text_one_list_or_many() -> None:
    cl100k = pytest.importorskip("bpe_openai", reason="the token-ids extra").get_encoding(
        "cl100k_base"
    )
    ids = cl100k.encode("git commit --no-verify")
    assert token_ids.decode_inputs(ids) == ["git commit --no-verify"]
    assert token_ids.decode_inputs([ids, cl100k.encode("isnan")]) == [
        "git commit --no-verify",
        "isnan",
    ]
    with pytest.raises(RequestError, match=r"input\[1\]: holds no token ids"):
        token_ids.decode_inputs([ids, []])
