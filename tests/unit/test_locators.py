"""Locators: the chunker keeps segments apart (or joins small ones, saying so), the
local index stores each chunk's locator, hits cite it, and filters select by it."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from twokeys import IndexOptions, build_index, open_index
from twokeys.chunking import ChunkerConfig, approx_token_counter, chunk_document
from twokeys.filters import Filter
from twokeys.store.check import check_index
from twokeys.types import Document, Locator, Segment

WORDS = "The ZX-4821 power supply feeds the rack and its fans run at full speed. "


def _paged(pages: list[str], *, joinable: bool = True, kind: str = "pdf") -> Document:
    text, segments = "", []
    for number, page in enumerate(pages, start=1):
        if text:
            text += "\n\n"
        segments.append(Segment(len(text), len(text) + len(page), Locator(page=number), joinable))
        text += page
    return Document("m.pdf", "Manual", text, "m.pdf", 0.0, "x", kind, segments=tuple(segments))


def test_no_chunk_crosses_a_page_and_each_takes_its_page() -> None:
    doc = _paged([WORDS * 30, WORDS * 30, WORDS * 30], joinable=False)
    chunks = chunk_document(doc, approx_token_counter)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.locator is not None and chunk.locator.page_end is None
        seg = doc.segments[chunk.locator.page - 1]
        assert seg.start <= chunk.start and chunk.end <= seg.end
    assert [c.locator.page for c in chunks if c.locator] == sorted(
        c.locator.page for c in chunks if c.locator
    )


def test_small_joinable_pages_are_chunked_together_and_the_chunk_says_pages() -> None:
    doc = _paged(["Cover page: the ZX-4821 manual.", "Contents: power, fans.", WORDS * 30])
    chunks = chunk_document(doc, approx_token_counter)
    first = chunks[0]
    assert first.locator == Locator(page=1, page_end=2)
    assert first.locator.label("m.pdf") == "m.pdf pp. 1-2"
    assert "Cover page" in first.text and "Contents" in first.text
    # the big page is not joined to them
    assert all(c.locator == Locator(page=3) for c in chunks[1:])


def test_segments_do_not_change_a_document_without_them() -> None:
    doc = _paged([WORDS * 30, WORDS * 30])
    plain = Document(doc.id, doc.title, doc.text, doc.path, 0.0, "x", "text")
    chunks = chunk_document(plain, approx_token_counter, ChunkerConfig())
    assert all(c.locator is None for c in chunks)


def test_a_segment_outside_the_text_is_a_clear_error() -> None:
    doc = Document("a", "A", "short", "a", 0.0, "x", "pdf", segments=(Segment(0, 99, Locator()),))
    with pytest.raises(ValueError, match="outside the text"):
        chunk_document(doc, approx_token_counter)


def test_a_section_path_heads_the_segment_chunks() -> None:
    text = "Plug the ZX-4821 into the rack."
    seg = Segment(0, len(text), Locator(page=4, section="Setup > Power"))
    doc = Document("m.pdf", "M", text, "m.pdf", 0.0, "x", "pdf", segments=(seg,))
    (chunk,) = chunk_document(doc, approx_token_counter)
    assert chunk.heading_path == ("Setup", "Power")


def _notebook(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Flux analysis\n\nWe load the capacitor readings."),
        nbformat.v4.new_code_cell("import pandas as pd\nreadings = pd.read_csv('flux.csv')"),
        nbformat.v4.new_markdown_cell("## Calibration\n\nThe gyroscope drift is removed here."),
        nbformat.v4.new_code_cell(
            "def remove_drift(series):\n    return series - series.rolling(50).mean()",
            outputs=[nbformat.v4.new_output("stream", text="secret-output-token\n")],
        ),
    ]
    nbformat.write(nb, str(path))


def test_a_notebook_is_indexed_by_cell_cited_and_filtered(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    _notebook(docs / "flux.ipynb")
    (docs / "notes.md").write_text("# Notes\n\nThe gyroscope is recalibrated weekly.\n")
    build_index(docs, tmp_path / "kb.twokeys", IndexOptions(encoder=None))
    assert check_index(tmp_path / "kb.twokeys", deep=True).problems == ()
    with open_index(tmp_path / "kb.twokeys") as kb:
        hits = kb.search("remove_drift rolling mean", mode="bm25", k=3)
        top = hits[0]
        assert top.path == "flux.ipynb"
        assert top.locator == Locator(cell=4)
        assert top.cite == "flux.ipynb cell 4"
        assert top.chunk.heading_path == ("Flux analysis", "Calibration")
        assert top.to_dict()["locator"] == {"cell": 4}
        assert not kb.search("secret-output-token", mode="bm25", k=3)  # outputs left out
        # a locator filter is per chunk; a chunk without the field falls back to metadata
        only = kb.search("gyroscope", mode="bm25", k=5, filters=["cell>=3"])
        assert [h.cite for h in only] == ["flux.ipynb cell 3"]
        assert kb.search("gyroscope", mode="bm25", k=5, filters=["kind=notebook", "cell=1"]) == []


def test_locator_filters_parse_and_match_page_ranges() -> None:
    f = Filter.parse("page>=13")
    assert f.on_chunks
    assert f.matches_locator(Locator(page=12, page_end=13)) is True
    assert f.matches_locator(Locator(page=12)) is False
    assert f.matches_locator(Locator(slide=2)) is None  # no page: the document decides
    assert Filter.parse("page=13").matches_locator(Locator(page=12, page_end=14)) is True
    assert Filter.parse("symbol=Pool.acquire").matches_locator(Locator(symbol="Pool.acquire"))
    assert Filter.parse("kind=pdf") == Filter("kind", "in", ("pdf",))
