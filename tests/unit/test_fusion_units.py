"""Fusion by cited unit (a PDF page): unit scores by hand, the adaptive fusion ranking a
page both sensors back through different chunks first, and the units an index reads
from its chunks' page locators (PDF chunks only)."""

from __future__ import annotations

from pathlib import Path

import pytest

from twokeys import IndexOptions, build_index, open_index
from twokeys.fusion.adaptive import AdaptiveParams, QueryFeatures, adaptive_fusion
from twokeys.fusion.units import unit_scores
from twokeys.types import ScoredChunk

REFCARD = Path(__file__).parents[2] / "examples" / "manuals" / "octave-refcard.pdf"


def run(*pairs: tuple[int, float]) -> list[ScoredChunk]:
    return [ScoredChunk(row, score, i + 1) for i, (row, score) in enumerate(pairs)]


def test_a_unit_scores_by_its_best_chunk_in_each_run() -> None:
    lexical = run((1, 1.0), (2, 0.6), (6, 0.4), (5, 0.2))  # normalised entries
    dense = run((3, 1.0), (4, 0.8), (5, 0.5))
    units = {1: 10, 3: 10, 2: 20, 4: 20, 5: 30, 6: 40}  # rows 1 and 3 on one page, ...
    got = unit_scores(lexical, dense, 0.5, units)
    assert got == pytest.approx(
        {
            10: 0.5 * 1.0 + 0.5 * 1.0,  # BM25 backs it by row 1, the dense model by row 3
            20: 0.5 * 0.6 + 0.5 * 0.8,
            30: 0.5 * 0.2 + 0.5 * 0.5,
            40: 0.5 * 0.4 + 0.5 * 0.5,  # absent from the dense run: its lowest entry
        }
    )
    assert unit_scores(lexical, dense, 0.5, {}) == {}


def test_a_page_both_sensors_back_by_different_chunks_outranks_a_middling_chunk() -> None:
    # BM25 ranks row 1 first, the dense model row 3; both on one page. Row 9, its own
    # page, is second in both runs.
    lexical = run((1, 10.0), (9, 9.0), (2, 2.0))
    dense = run((3, 0.9), (9, 0.85), (4, 0.2))
    features = QueryFeatures((), (), (), 0.8, 5)
    params = AdaptiveParams()
    plain = adaptive_fusion(lexical, dense, features, {}, params, weight=0.5)
    assert [h.row for h in plain][:3] == [9, 1, 3]  # chunk by chunk: 0.92, 0.61, 0.60
    units = {1: 1, 3: 1, 9: 9, 2: 2, 4: 4}
    paged = adaptive_fusion(lexical, dense, features, {}, params, weight=0.5, units=units)
    assert [h.row for h in paged] == [1, 3, 9, 2, 4]  # the page (1.0), its chunks by own score
    assert [h.rank for h in paged] == [1, 2, 3, 4, 5]
    assert paged[0].score == pytest.approx(1.0) == paged[1].score
    # rows outside any unit keep their chunk score and order
    assert adaptive_fusion(lexical, dense, features, {}, params, weight=0.5, units={}) == plain


def test_an_index_makes_a_unit_of_each_pdf_page_and_none_of_markdown(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "octave-refcard.pdf").write_bytes(REFCARD.read_bytes())
    (docs / "notes.md").write_text("# Notes\n\n" + "Plain words about plotting. " * 200)
    build_index(docs, tmp_path / "kb.twokeys", IndexOptions(encoder=None))
    with open_index(tmp_path / "kb.twokeys") as index:
        units = index.page_units()
        located = index.backend.row_locators()
        by_doc = {d.id: d for d in index.backend.all_documents()}
        pdf, notes = by_doc["octave-refcard.pdf"], by_doc["notes.md"]
        pdf_rows = range(pdf.first_row, pdf.first_row + pdf.n_chunks)
        assert set(units) == set(pdf_rows)
        assert not set(units) & set(range(notes.first_row, notes.first_row + notes.n_chunks))
        pages = {(located[r].page, located[r].page_end) for r in pdf_rows}
        assert len(set(units.values())) == len(pages)  # one unit per page (or pages)
        assert 2 <= len(pages) < pdf.n_chunks  # the card's pages hold several chunks each
        for row in pdf_rows:  # a unit is named by its first row, on the same page(s)
            first = units[row]
            assert first <= row
            assert (located[first].page, located[first].page_end) == (
                located[row].page,
                located[row].page_end,
            )
