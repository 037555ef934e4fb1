"""Chunks stay byte-identical through the chunker's speed work (issue 11).

Every chunk (document id, position, offsets, heading path, text) of the six shared
collections and the support KB is hashed, chunked as ``build_index`` chunks (batches of
``CHUNK_BATCH`` documents) with the approximate counter and with the default encoder's
counter, at the default chunker setting and at a small one that cuts most paragraphs.
The pinned digests were computed with the code of dda168a, before the word-count cache
(:class:`twokeys.text.tokens.SpaceSplitCounter`) and the rest of that work; a change to
any chunk of an existing index's corpus shows here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import SHARED_DATA, SUPPORT_KB
from twokeys.chunking import ChunkerConfig, approx_token_counter, chunk_documents, has_text
from twokeys.indexer import CHUNK_BATCH
from twokeys.ingest.files import load_documents
from twokeys.text.tokens import TokenCounter
from twokeys.types import Document

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="shared data not available"),
]

COLLECTIONS = ("scifact", "cranfield", "cisi", "medline", "adi", "cacm")
CONFIGS = {
    "default": ChunkerConfig(),
    "small": ChunkerConfig(max_tokens=48, overlap_tokens=8, min_tokens=4),
}
# sha256 over every source, in the order above, then the support KB: computed at dda168a
PINNED = {
    ("approx", "default"): "6119176ee59985503dbfeebc26778ecda8f69079147206f6a6283ef13529f163",
    ("approx", "small"): "738086bc2c7bffb9e185a88f76d2945cb782eb4df9eb018a1a84166eb16fe501",
    ("minilm", "default"): "b30476e3ec35179a0023af33c6a750469e47767bf0c27aab4f8d1bd6b52aaa0a",
    ("minilm", "small"): "f31a6a098738acde03ea34c1911313bca04c42acc624832dd69a3eeec12b09e8",
}


def _sources() -> list[Path]:
    return [SHARED_DATA / name / "corpus.jsonl" for name in COLLECTIONS] + [SUPPORT_KB / "docs"]


def _batches(source: Path) -> Iterator[list[Document]]:
    batch: list[Document] = []
    for doc in load_documents(source):
        if has_text(doc):
            batch.append(doc)
            if len(batch) == CHUNK_BATCH:
                yield batch
                batch = []
    if batch:
        yield batch


def chunk_digest(count: TokenCounter, config: ChunkerConfig) -> str:
    digest = hashlib.sha256()
    for source in _sources():
        for batch in _batches(source):
            for chunks in chunk_documents(batch, count, config):
                for c in chunks:
                    row = (c.doc_id, c.position, c.start, c.end, c.heading_path, c.text)
                    digest.update(repr(row).encode("utf-8") + b"\0")
    return digest.hexdigest()


@pytest.fixture(scope="module")
def minilm_count() -> TokenCounter:
    from twokeys.dense.onnx_minilm import OnnxMiniLM

    return OnnxMiniLM(threads=1).count_tokens


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_chunks_with_the_approximate_counter_are_unchanged(config: str) -> None:
    assert chunk_digest(approx_token_counter, CONFIGS[config]) == PINNED["approx", config]


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_chunks_with_the_default_encoders_counter_are_unchanged(
    config: str, minilm_count: TokenCounter
) -> None:
    assert chunk_digest(minilm_count, CONFIGS[config]) == PINNED["minilm", config]


if __name__ == "__main__":  # print the digests of the code on the path (to pin them)
    from twokeys.dense.onnx_minilm import OnnxMiniLM

    counters = {"approx": approx_token_counter, "minilm": OnnxMiniLM(threads=1).count_tokens}
    for (counter, config), _ in PINNED.items():
        print(counter, config, chunk_digest(counters[counter], CONFIGS[config]))
