"""Headings detected in PDFs without an outline: the rules on styled lines (pure), a
PDF written by fpdf2 with real fonts and known headings (the chunks' section paths are
those headings), and the Octave reference card of the Debian package octave-doc (copied
into examples/manuals), whose sections are set in bold type and have no bookmarks."""

from __future__ import annotations

from pathlib import Path

from fpdf import FPDF

from twokeys import IndexOptions, build_index, open_index
from twokeys.ingest import SkippedFile, load_documents
from twokeys.ingest.pdfheadings import StyledLine, detect_headings
from twokeys.types import Document

REFCARD = Path(__file__).parents[2] / "examples" / "manuals" / "octave-refcard.pdf"


def _lines(page: int, *styled: tuple[str, float, bool]) -> list[StyledLine]:
    return [StyledLine(page, text, size, bold) for text, size, bold in styled]


BODY = ("Body text of the page, set in the size that carries the most characters", 10.0, False)


def test_sizes_rank_levels_and_numbered_bold_lines_are_the_lowest() -> None:
    lines = [
        *_lines(0, ("A Service Guide", 24.0, True), BODY, BODY),
        *_lines(1, ("1 Installation", 18.0, True), BODY, ("1.1 Mounting", 14.0, True), BODY),
        *_lines(1, ("1.1.1 Bolts", 10.0, True), BODY, ("Warning: keep the bank cold.", 10.0, True)),
        *_lines(2, ("2 Calibration", 18.0, True), BODY, ("Drift of the", 14.0, True)),
        *_lines(2, ("gyroscope", 14.0, True), BODY, ("x = y + 1", 11.0, False), BODY),
    ]
    assert detect_headings(lines, 3) == [
        (1, 1, "1 Installation"),
        (1, 2, "1.1 Mounting"),
        (1, 3, "1.1.1 Bolts"),
        (2, 1, "2 Calibration"),
        (2, 2, "Drift of the gyroscope"),  # one heading broken over two lines
    ]


def test_title_page_running_headers_body_set_large_and_glyph_runs_are_not_headings() -> None:
    pages = [
        _lines(0, ("The Title", 20.0, True), ("The authors", 14.0, False), BODY),
        *(
            _lines(p, ("Manual of the rack", 14.0, True), BODY, BODY, ("hhhh Nh", 20.0, False))
            for p in range(1, 5)
        ),
    ]
    assert detect_headings([line for page in pages for line in page], 5) == []
    # a document set all in one large size has no headings
    large = _lines(0, *[("Short line of words", 16.0, False)] * 5, BODY)
    assert detect_headings(large, 1) == []


def test_a_title_pages_subtitle_in_section_type_is_not_a_section() -> None:
    # LilyPond's manuals: title, subtitle and the authors' line (set in the bold type of
    # the sections) above the first page's first paragraph
    chapter = ("1 Running the program", 17.0, True)
    section = ("1.1 Normal usage", 14.0, True)
    title = _lines(
        0,
        ("LilyPond", 20.0, True),
        ("The typesetter", 10.0, False),
        ("Usage", 20.0, True),
        ("The development team", 14.0, True),
        BODY,
        BODY,
    )
    later = [
        *_lines(1, chapter, BODY, BODY, section, BODY, BODY, BODY),
        *_lines(2, ("1.2 More", 14.0, True), BODY, BODY, BODY, BODY),
    ]
    assert detect_headings([*title, *later], 3) == [
        (1, 1, "1 Running the program"),
        (1, 2, "1.1 Normal usage"),
        (2, 2, "1.2 More"),
    ]
    # an article: the headings below its first page's first paragraph are kept
    article = _lines(0, ("A Paper", 20.0, True), BODY, BODY, ("1 Introduction", 14.0, True), BODY)
    assert detect_headings([*article, *later], 3)[0] == (0, 2, "1 Introduction")
    # a first page set in no larger type than later ones has no title block
    opening = _lines(0, ("The development team", 14.0, True), BODY, BODY)
    assert detect_headings([*opening, *later], 3)[0] == (0, 2, "The development team")


def _guide(path: Path) -> Path:
    """A service guide written by fpdf2 with the PDF core fonts: a title page, then
    numbered chapters (18 pt bold) and sections (14 pt bold) over 11 pt body text, a
    running header, a code line in Courier and a bold warning sentence."""
    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(auto=False)

    def text(words: str, size: float, style: str = "", family: str = "Helvetica") -> None:
        pdf.set_font(family, style, size)
        pdf.multi_cell(0, size * 0.6, words, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(2)

    def page() -> None:
        pdf.add_page()
        text("ZX-4821 Service Guide", 9)

    pdf.add_page()
    text("ZX-4821 Service Guide", 26, "B")
    text("Prepared by the field engineering group for the rack technicians.", 11)
    page()
    text("1 Installation", 18, "B")
    text("The rack ships on a pallet; unpack it next to its final place. " * 3, 11)
    text("1.1 Mounting the rack", 14, "B")
    text("Torque the eight floor bolts to forty newton metres before powering up. " * 2, 11)
    text("Warning: never lift the rack by its cable tray.", 11, "B")
    page()
    text("1.2 Wiring", 14, "B")
    text("Run the mains feed through the left gland and the signal loom on the right. " * 2, 11)
    text("set_feed(phase=3, fuse=32)", 11, family="Courier")
    text("2 Calibration", 18, "B")
    text("Calibration takes an hour and needs the reference gyroscope kit. " * 2, 11)
    page()
    text("2.1 Drift", 14, "B")
    text("Measure the drift at rest for ten minutes and write it in the logbook. " * 2, 11)
    page()
    text("The drift budget is half a degree per hour over the whole temperature range. " * 2, 11)
    pdf.output(str(path))
    return path


def _read(path: Path) -> Document:
    skipped: list[SkippedFile] = []
    (doc,) = list(load_documents(path, on_skip=skipped.append))
    assert skipped == []
    return doc


def _section_of(doc: Document, words: str) -> str | None:
    at = doc.text.index(words)
    (segment,) = [s for s in doc.segments if s.start <= at < s.end]
    return segment.locator.section


def test_a_pdf_written_with_real_fonts_gets_its_headings_as_section_paths(tmp_path: Path) -> None:
    path = _guide(tmp_path / "guide.pdf")
    doc = _read(path)
    assert _section_of(doc, "Prepared by the field") is None  # the title page
    assert _section_of(doc, "The rack ships") == "1 Installation"
    assert _section_of(doc, "Torque the eight") == "1 Installation > 1.1 Mounting the rack"
    assert _section_of(doc, "never lift the rack") == "1 Installation > 1.1 Mounting the rack"
    assert _section_of(doc, "Run the mains feed") == "1 Installation > 1.2 Wiring"
    assert _section_of(doc, "set_feed(phase=3") == "1 Installation > 1.2 Wiring"
    assert _section_of(doc, "Calibration takes") == "2 Calibration"
    assert _section_of(doc, "Measure the drift") == "2 Calibration > 2.1 Drift"
    assert _section_of(doc, "The drift budget") == "2 Calibration > 2.1 Drift"  # next page
    sections = {s.locator.section for s in doc.segments}
    assert sections == {
        None,
        "1 Installation",
        "1 Installation > 1.1 Mounting the rack",
        "1 Installation > 1.2 Wiring",
        "2 Calibration",
        "2 Calibration > 2.1 Drift",
    }
    build_index(tmp_path / "guide.pdf", tmp_path / "kb.twokeys", IndexOptions(encoder=None))
    with open_index(tmp_path / "kb.twokeys") as kb:
        assert kb.search("floor bolts torque", mode="bm25", k=1)[0].cite == (
            "guide.pdf p. 2 § 1 Installation > 1.1 Mounting the rack"
        )
        assert kb.search("drift budget temperature", mode="bm25", k=1)[0].cite == (
            "guide.pdf pp. 4-5 § 2 Calibration > 2.1 Drift"  # small pages of one section
        )


def test_the_octave_reference_card_gets_its_bold_headings_as_sections() -> None:
    doc = _read(REFCARD)
    sections = [s.locator.section for s in doc.segments]
    titles = {s for s in sections if s}
    for title in (
        "Starting Octave",
        "Stopping Octave",
        "Killing and Yanking",
        "Linear Algebra",
        "Equations, ODEs, DAEs, Quadrature",
        "C-style Input and Output",
    ):
        assert title in titles, title
    assert all(" > " not in t for t in titles)  # one heading size: one level
    assert len(titles) >= 35  # every box of the card; no code line taken for a heading
    assert _section_of(doc, "quit or exit") == "Stopping Octave"
    assert _section_of(doc, "fft (a)") == "Signal Processing"
