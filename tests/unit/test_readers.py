"""The readers of users' own documents, on real files: PDFs from Debian documentation
packages (checked page by page against pypdf, an independent extractor), PDFs written
byte by byte (two columns, an outline, a page without text, 5,000 pages), and Word,
PowerPoint and hostile files made in the test with the real libraries."""

from __future__ import annotations

import re
import time
import tracemalloc
import zipfile
from pathlib import Path

import docx
import pptx
import pypdf
import pytest
from pptx.util import Inches

from pdfmaker import make_pdf
from twokeys import IndexOptions, build_index, open_index
from twokeys.ingest import SkippedFile, load_documents
from twokeys.ingest.base import SourceFile
from twokeys.ingest.pdftext import clean_pages
from twokeys.ingest.readers import office
from twokeys.ingest.readers import pdf as pdf_reader
from twokeys.types import Document, Locator

#: a real manual from a Debian package (octave-doc; .ci/run installs it)
LIBOCTAVE = Path("/usr/share/doc/octave/liboctave.pdf")
needs_octave_doc = pytest.mark.skipif(
    not LIBOCTAVE.is_file(), reason="apt-get install octave-doc (CI installs it)"
)


def _read(path: Path) -> tuple[list[Document], list[SkippedFile]]:
    skipped: list[SkippedFile] = []
    docs = list(load_documents(path, on_skip=skipped.append))
    return docs, skipped


def _page_text(doc: Document, page: int) -> str:
    return "\n".join(doc.text[s.start : s.end] for s in doc.segments if s.locator.page == page)


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


# --- cleaning (pure text) ------------------------------------------------------------


def test_line_end_hyphens_join_words_and_keep_real_hyphenated_tokens() -> None:
    page = (
        "Hybrid retrie-\nval beats either.\nThe ZX-\n4821 board; run git commit --no-\n"
        "verify; files in utf-\n8; a well-\nknown fact, well-known indeed.\n"
        "PDFium marks a break: para\ufffemeter and gloss\ufffe2."
    )
    (cleaned,) = clean_pages([page])
    assert "retrieval beats" in cleaned
    assert "ZX-4821" in cleaned and "--no-verify" in cleaned and "utf-8" in cleaned
    assert "well-known fact" in cleaned  # the hyphenated form occurs elsewhere: kept
    assert "parameter" in cleaned and "gloss-2" in cleaned


def test_ligatures_and_odd_spaces_are_normalised() -> None:
    (cleaned,) = clean_pages(["e\ufb03cient \ufb01le\u00a0name\u2009here\u200b, so\u00adft"])
    assert cleaned == "efficient file name here, soft"


def test_running_headers_footers_and_page_numbers_are_removed() -> None:
    pages = [
        f"ZX-4821 Service Manual\nChapter {i} body text about item {i}.\nMore words.\n"
        f"Page {i} of 40"
        for i in range(1, 41)
    ]
    cleaned = clean_pages(pages)
    assert all("Service Manual" not in p and "of 40" not in p for p in cleaned)
    assert cleaned[6].startswith("Chapter 7 body text")


# --- PDF -------------------------------------------------------------------------------


@needs_octave_doc
def test_a_debian_manual_is_read_page_by_page_as_pypdf_sees_its_pages() -> None:
    (doc,), skipped = _read(LIBOCTAVE)
    assert skipped == []
    reference = pypdf.PdfReader(LIBOCTAVE)
    assert doc.kind == "pdf" and doc.metadata["pages"] == len(reference.pages)

    def words(text: str) -> set[str]:
        return {w for w in re.findall(r"[a-z]{6,}", text.lower())}

    n = len(reference.pages)
    theirs = {  # body lines: the first and last are the running header and footer
        i: words("\n".join(reference.pages[i].extract_text().split("\n")[1:-1]))
        for i in range(1, n)
        if (i - 1) % 6 < 3
    }
    checked = 0
    for page in range(2, n - 1, 6):
        ours = words(_page_text(doc, page + 1))
        if len(theirs[page]) < 12:
            continue
        checked += 1
        shared = len(ours & theirs[page]) / len(theirs[page])
        assert shared >= 0.9, (page + 1, sorted(theirs[page] - ours)[:10])
        # the words are this page's, not a neighbour's
        for other in (page - 1, page + 1):
            assert len(ours & theirs[page]) >= len(ours & theirs[other]), (page + 1, other + 1)
    assert checked >= 4
    # the outline gives sections; chunks keep pages, and none crosses a page unsaid
    assert any(s.locator.section for s in doc.segments)
    sections = {s.locator.section for s in doc.segments}
    assert any("Array" in (s or "") for s in sections)


def test_two_columns_outline_and_a_page_without_text(tmp_path: Path) -> None:
    left = [f"Left column line {i} about the gyroscope drift." for i in range(20)]
    right = [f"Right column line {i} about the capacitor bank." for i in range(20)]
    path = make_pdf(
        tmp_path / "m.pdf",
        [
            ["ZX-4821 manual", "Power", "Connect the supply before the fans start.", "1"],
            None,
        ],
        columns=[(left, right)],
        outline=[("Power", 0), ("Sensors", 2)],
        title="ZX-4821 Service Manual",
    )
    (doc,), skipped = _read(path)
    assert doc.title == "ZX-4821 Service Manual"
    (warning,) = skipped
    assert warning.kept and "1 of 3 pages have no text layer" in warning.reason
    assert "pages 2 are not searchable" in warning.reason
    page3 = _page_text(doc, 3)
    assert page3.index("Left column line 19") < page3.index("Right column line 0")
    power = [s for s in doc.segments if s.locator.section == "Power"]
    assert power and doc.text[power[0].start :].startswith("Power")
    assert {s.locator.section for s in doc.segments if s.locator.page == 3} == {"Sensors"}


def _encrypted(source: Path, target: Path) -> Path:
    writer = pypdf.PdfWriter(clone_from=source)
    writer.encrypt(user_password="secret", owner_password="owner", algorithm="AES-128")
    with open(target, "wb") as fh:
        writer.write(fh)
    return target


def test_hostile_pdfs_are_named_warnings_and_the_run_goes_on(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    good = make_pdf(docs / "good.pdf", [["The gyroscope manual.", "Drift is corrected daily."]])
    (docs / "empty.pdf").write_bytes(b"")
    (docs / "cut.pdf").write_bytes(good.read_bytes()[:60])
    (docs / "junk.pdf").write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 100)
    make_pdf(docs / "scan.pdf", [None, None])
    _encrypted(good, docs / "locked.pdf")
    found, skipped = _read(docs)
    assert [d.id for d in found] == ["good.pdf"]
    reasons = {s.path: s.reason for s in skipped}
    assert set(reasons) == {"empty.pdf", "cut.pdf", "junk.pdf", "scan.pdf", "locked.pdf"}
    assert reasons["empty.pdf"].startswith("empty file (0 bytes)")
    assert reasons["locked.pdf"].startswith("encrypted PDF")
    assert "no text layer on any of its 2 pages" in reasons["scan.pdf"]
    assert reasons["cut.pdf"].startswith("damaged")
    assert reasons["junk.pdf"].startswith("damaged")
    assert all(s.keep_indexed for s in skipped)


def test_a_pdf_that_breaks_later_keeps_what_was_indexed(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    make_pdf(docs / "manual.pdf", [["The gyroscope manual.", "Drift is corrected daily."]])
    build_index(docs, tmp_path / "kb.twokeys", IndexOptions(encoder=None))
    (docs / "manual.pdf").write_bytes(b"%PDF-1.4\ntruncated")
    seen: list[SkippedFile] = []
    report = build_index(
        docs, tmp_path / "kb.twokeys", IndexOptions(encoder=None), on_skip=seen.append
    )
    assert report.removed == 0 and [s.path for s in seen] == ["manual.pdf"]
    with open_index(tmp_path / "kb.twokeys") as kb:
        (hit,) = kb.search("gyroscope drift", mode="bm25", k=1)
        assert hit.cite == "manual.pdf p. 1"


def test_a_5000_page_pdf_is_read_in_bounded_time_and_memory(tmp_path: Path) -> None:
    pages = [
        ["Big catalogue", f"Item Q{i} has part number PN-{i:05d}.", "It ships in a box.", str(i)]
        for i in range(1, 5001)
    ]
    path = make_pdf(tmp_path / "big.pdf", pages)
    tracemalloc.start()
    started = time.perf_counter()
    (doc,) = list(pdf_reader.read(SourceFile(path, "big.pdf", "pdf"), print))
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(doc.segments) == 5000 and doc.segments[-1].locator == Locator(page=5000)
    assert "PN-04999" in _page_text(doc, 4999) and "Big catalogue" not in doc.text
    assert seconds < 120 and peak < 200 << 20  # generous: 6 s alone, 30 s on a busy machine


# --- Word and PowerPoint -----------------------------------------------------------------


def _report_docx(path: Path) -> Path:
    document = docx.Document()
    document.add_heading("Quarterly report", 0)
    document.add_paragraph("This report covers the ZX-4821 rollout.")
    document.add_heading("Results", 1)
    document.add_paragraph("Uptime rose to 99.9 percent.")
    document.add_heading("Costs", 2)
    document.add_paragraph("Cooling was the largest cost.", style="List Bullet")
    document.add_paragraph("Spare fans came second.", style="List Bullet")
    table = document.add_table(rows=3, cols=2)
    for row, (model, volts) in enumerate(
        [("Model", "Voltage"), ("ZX-4821", "12 V"), ("ZX-9", "5 V")]
    ):
        table.cell(row, 0).text = model
        table.cell(row, 1).text = volts
    document.add_heading("Next steps", 1)
    document.add_paragraph("Replace the gyroscope in every rack.")
    document.save(str(path))
    return path


def test_a_word_file_has_sections_table_rows_and_list_items(tmp_path: Path) -> None:
    (doc,), skipped = _read(_report_docx(tmp_path / "report.docx"))
    assert skipped == [] and doc.title == "Quarterly report" and doc.kind == "docx"
    sections = [(s.locator.section, doc.text[s.start : s.end]) for s in doc.segments]
    assert [name for name, _ in sections] == [None, "Results", "Results > Costs", "Next steps"]
    costs = dict(sections)["Results > Costs"]
    assert "- Cooling was the largest cost.\n\n- Spare fans came second." in costs
    assert "Model: ZX-4821; Voltage: 12 V" in costs and "Model: ZX-9; Voltage: 5 V" in costs
    assert "Quarterly report" not in doc.text  # the title is the title, not body text


def _deck(path: Path) -> Path:
    deck = pptx.Presentation()
    title_slide = deck.slides.add_slide(deck.slide_layouts[0])
    title_slide.shapes.title.text = "Fleet review"
    title_slide.placeholders[1].text = "Operations, spring"
    bullets = deck.slides.add_slide(deck.slide_layouts[1])
    bullets.shapes.title.text = "Gyroscope drift"
    body = bullets.placeholders[1].text_frame
    body.text = "Drift doubled in March"
    sub = body.add_paragraph()
    sub.text = "Recalibrate weekly"
    sub.level = 1
    bullets.notes_slide.notes_text_frame.text = "Mention the capacitor recall here."
    table_slide = deck.slides.add_slide(deck.slide_layouts[5])
    table_slide.shapes.title.text = "Parts"
    shape = table_slide.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(6), Inches(1))
    for col, (head, value) in enumerate([("Part", "ZX-4821"), ("Stock", "12")]):
        shape.table.cell(0, col).text = head
        shape.table.cell(1, col).text = value
    deck.save(str(path))
    return path


def test_slides_are_sections_with_number_title_and_notes(tmp_path: Path) -> None:
    (doc,), skipped = _read(_deck(tmp_path / "deck.pptx"))
    assert skipped == [] and doc.title == "Fleet review"
    slides = {s.locator.slide: (s.locator.section, doc.text[s.start : s.end]) for s in doc.segments}
    assert slides[1] == ("Fleet review", "Operations, spring")
    title, text = slides[2]
    assert title == "Gyroscope drift"
    assert "- Drift doubled in March\n  - Recalibrate weekly" in text
    assert "Speaker notes: Mention the capacitor recall here." in text
    assert slides[3] == ("Parts", "Part: ZX-4821; Stock: 12")
    assert Locator(slide=2, section="Gyroscope drift").label("deck.pptx") == (
        "deck.pptx slide 2 § Gyroscope drift"
    )


def test_damaged_and_bomb_office_files_are_refused_in_bounded_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(office, "MAX_PART_BYTES", 8 << 20)
    docs = tmp_path / "docs"
    docs.mkdir()
    good = _report_docx(docs / "good.docx")
    with (
        zipfile.ZipFile(good) as source,
        zipfile.ZipFile(docs / "bomb.docx", "w", zipfile.ZIP_DEFLATED) as bomb,
    ):
        for item in source.infolist():
            if item.filename == "word/document.xml":
                with bomb.open(item.filename, "w") as out:
                    for _ in range(24):  # 24 MB of spaces, a few KB packed
                        out.write(b" " * (1 << 20))
            else:
                bomb.writestr(item, source.read(item.filename))
    (docs / "cut.pptx").write_bytes(_deck(tmp_path / "d.pptx").read_bytes()[:500])
    (docs / "zero.docx").write_bytes(b"")
    tracemalloc.start()
    found, skipped = _read(docs)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert [d.id for d in found] == ["good.docx"]
    reasons = {s.path: s.reason for s in skipped}
    assert reasons["bomb.docx"].startswith("refused: word/document.xml unpacks to over 8 MB")
    assert reasons["cut.pptx"].startswith("damaged")
    assert reasons["zero.docx"].startswith("empty file")
    assert peak < 64 << 20


# --- end to end ------------------------------------------------------------------------


def test_hits_cite_page_slide_and_section(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    make_pdf(
        docs / "manual.pdf",
        [["Intro page about the rack."], ["Safety", "Never open the capacitor bank live."]],
        outline=[("Intro", 0), ("Safety", 1)],
    )
    _report_docx(docs / "report.docx")
    _deck(docs / "deck.pptx")
    build_index(docs, tmp_path / "kb.twokeys", IndexOptions(encoder=None))
    with open_index(tmp_path / "kb.twokeys") as kb:
        assert kb.search("capacitor bank live", mode="bm25", k=1)[0].cite == (
            "manual.pdf p. 2 § Safety"
        )
        assert kb.search("recalibrate weekly", mode="bm25", k=1)[0].cite == (
            "deck.pptx slide 2 § Gyroscope drift"
        )
        assert kb.search("cooling spare fans", mode="bm25", k=1)[0].cite == (
            "report.docx § Results > Costs"
        )
        assert [h.cite for h in kb.search("capacitor", mode="bm25", k=5, filters=["page=2"])] == [
            "manual.pdf p. 2 § Safety"
        ]
