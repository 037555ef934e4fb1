"""A passage's indexed text is built in one place (twokeys.text.passages) and its bytes
never change: BM25 terms and embeddings of every existing index were made from them."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from conftest import SUPPORT_KB, HashEncoder, write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.chunking import approx_token_counter, chunk_document
from twokeys.dense.encoder import Kind
from twokeys.ingest.files import load_documents
from twokeys.retrievers.base import indexed_texts
from twokeys.text.passages import heading_line, heading_text, indexed_text, stream_indexed_texts
from twokeys.types import Chunk

# sha256 of every support-KB chunk's indexed text (approximate token counts, default
# chunker), each followed by a NUL byte: computed before the builder moved to text/.
# If it changes, every index built so far embeds other text than new ones would.
SUPPORT_KB_INDEXED = "1d69ac72921f1623c819beba915fae8ee549b1b8462d8908a7efa1878cdbb37f"


def pinned_format(chunk: Chunk, title: str) -> str:
    """The format indexes on disk were built with, spelled out."""
    line = " > ".join(chunk.heading_path) if chunk.heading_path else " ".join(title.split())
    return f"{line}\n{chunk.text}" if line else chunk.text


def test_heading_line_and_indexed_text() -> None:
    c = Chunk("d", 0, "Body text.", 0, 10, ("Troubleshooting", "Power"))
    assert heading_text(c.heading_path) == c.heading == "Troubleshooting > Power"
    assert heading_line(c.heading_path, "ignored") == "Troubleshooting > Power"
    assert indexed_text(c, "Title") == "Troubleshooting > Power\nBody text."
    bare = Chunk("d", 0, "Body text.", 0, 10)
    assert heading_line((), " My \t Title\n") == "My Title"
    assert indexed_text(bare, "My  Title\n") == "My Title\nBody text."
    assert indexed_text(bare, "") == "Body text."
    title_only = Chunk("d", 0, "", 0, 0, ("A title",))
    assert indexed_text(title_only, "A title") == "A title\n"


def test_support_kb_indexed_texts_are_byte_identical_to_the_pinned_format() -> None:
    digest = hashlib.sha256()
    for doc in load_documents(SUPPORT_KB / "docs"):
        for chunk in chunk_document(doc, approx_token_counter):
            text = indexed_text(chunk, doc.title)
            assert text == pinned_format(chunk, doc.title), chunk.id
            digest.update(text.encode("utf-8") + b"\0")
    assert digest.hexdigest() == SUPPORT_KB_INDEXED


def test_streamed_indexed_texts_are_each_chunks_indexed_text() -> None:
    # the build makes them a document's run of chunks at a time (its title's line once)
    pairs = [
        (chunk, doc.title)
        for doc in load_documents(SUPPORT_KB / "docs")
        for chunk in chunk_document(doc, approx_token_counter)
    ]
    body = Chunk("d", 0, "Body.", 0, 5, ())
    headed = Chunk("d", 1, "More.", 6, 11, ("Top", "Sub"))
    same = "A  title"
    pairs += [(body, same), (body, same), (headed, same), (body, "A title"), (body, "")]
    pairs += [(body, "".join(["A  ", "title"])), (headed, ""), (body, "  ")]
    assert list(stream_indexed_texts(pairs)) == [indexed_text(c, t) for c, t in pairs]


class RecordingEncoder(HashEncoder):
    """The hash encoder, keeping every document text it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.documents: list[str] = []

    def embed_batch(self, texts: Sequence[str], kind: Kind) -> npt.NDArray[np.float32]:
        if kind == "document":
            self.documents.extend(texts)
        return super().embed_batch(texts, kind)


def test_what_is_embedded_is_what_retrievers_read_back(tmp_path: Path) -> None:
    docs = write_docs(
        tmp_path / "docs",
        {
            "guide.md": "# Guide\n\nIntro text.\n\n## Power\n\nThe ZX-4821 light blinks. Fix it.\n",
            "notes.txt": "Plain  notes without a heading.\n\nA second paragraph.\n",
            "records.jsonl": '{"id": "r1", "title": "A  spaced\\ttitle", "text": "Body one."}\n'
            '{"id": "r2", "title": "Only a title", "text": ""}\n',
        },
    )
    encoder = RecordingEncoder()
    build_index(docs, tmp_path / "kb.twokeys", IndexOptions(encoder="test-hash"), encoder=encoder)
    expected = [
        pinned_format(chunk, doc.title)
        for doc in sorted(load_documents(docs), key=lambda d: d.id)
        for chunk in chunk_document(doc, encoder.count_tokens)
    ]
    assert sorted(encoder.documents) == sorted(expected)
    with open_index(tmp_path / "kb.twokeys", encoder=encoder) as kb:
        rows = list(range(len(expected)))
        assert sorted(indexed_texts(kb.backend, rows)) == sorted(expected)
