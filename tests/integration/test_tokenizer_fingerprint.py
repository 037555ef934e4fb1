"""A changed tokenizer is an encoder mismatch; an index that recorded none still opens."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import HashEncoder, write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.errors import EncoderMismatchError
from twokeys.store.local import MANIFEST


class TokenizedHash(HashEncoder):
    def __init__(self, tokenizer: str) -> None:
        super().__init__()
        self.tokenizer = tokenizer

    def tokenizer_fingerprint(self) -> str:
        return f"sha256:{self.tokenizer}"


def test_the_tokenizer_is_part_of_the_encoder(tmp_path: Path) -> None:
    src = write_docs(tmp_path / "docs", {"a.md": "# A\n\npower fuse\n"})
    index = tmp_path / "kb.twokeys"
    build_index(src, index, IndexOptions(encoder=None), encoder=TokenizedHash("v1"))
    manifest = json.loads((index / MANIFEST).read_text())
    assert manifest["encoder"]["tokenizer"] == "sha256:v1"
    with open_index(index, encoder=TokenizedHash("v1")) as kb:
        assert kb.search("power", mode="dense")
    with pytest.raises(EncoderMismatchError, match="tokenizer sha256:v1, not tokenizer sha256:v2"):
        open_index(index, encoder=TokenizedHash("v2"))
    report = build_index(src, index, IndexOptions(encoder=None), encoder=TokenizedHash("v2"))
    assert report.full_rebuild_reason.startswith("encoder changed")
    manifest = json.loads((index / MANIFEST).read_text())
    assert manifest["encoder"]["tokenizer"] == "sha256:v2"
    del manifest["encoder"]["tokenizer"]  # an index written before tokenizers were recorded
    (index / MANIFEST).write_text(json.dumps(manifest))
    with open_index(index, encoder=TokenizedHash("v3")) as kb:
        assert kb.search("power", mode="dense")
