"""Headings detected from type, scored against the outline of PDFs that have one.

``python -m benchmarks.pdf_headings`` reads real manuals from Debian documentation
packages that carry an outline (bookmarks), runs the heading detection of
:mod:`twokeys.ingest.pdfheadings` on their text as if they had none, and scores it
against their outline: a detected heading and an outline entry match when they are on
the same page and their titles agree (case, spacing and a leading section number
aside, the shorter a prefix of the longer). The rules were written looking at PDFs
without an outline (the Octave reference card, LilyPond's changes and music glossary),
so these manuals are held out. Printed per file: outline entries, detected headings,
precision, recall and, of the matches, the share whose level order agrees with the
outline's (a deeper outline entry detected at a deeper level).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pypdfium2 as pdfium

from twokeys.ingest.pdfheadings import StyledLine, detect_headings
from twokeys.ingest.readers.pdf import _outline, _page_text

DOC = Path("/usr/share/doc")
PDFS = {
    "gnuplot.pdf": "gnuplot/gnuplot.pdf",
    "liboctave.pdf": "octave/liboctave.pdf",
    "lilypond-usage.pdf": "lilypond/html/Documentation/usage.pdf",
    "lilypond-extending.pdf": "lilypond/html/Documentation/extending.pdf",
    "lilypond-essay.pdf": "lilypond/html/Documentation/essay.pdf",
    "libtasn1.pdf": "libtasn1-doc/libtasn1.pdf",
    "shared-mime-info-spec.pdf": "shared-mime-info/shared-mime-info-spec.pdf",
}
# a leading section number (of a lower-cased title): "2.3 ", "a.1 ", "appendix b "
_NUMBER = re.compile(
    r"^(?:(?:chapter|appendix|section)\s+\w+\.?\s+|\d+(?:\.\d+)*\.?\s+|[a-z](?:\.\d+)+\.?\s+)"
)


def _norm(title: str) -> str:
    title = " ".join(title.split()).lower()
    return _NUMBER.sub("", title)[:40]


def _agree(a: str, b: str) -> bool:
    x, y = _norm(a), _norm(b)
    return bool(x and y) and (x.startswith(y) or y.startswith(x))


def score(path: Path) -> tuple[int, int, int, int, float]:
    """(outline entries, detected, detected that match, entries matched, level agreement)."""
    pdf = pdfium.PdfDocument(str(path))
    try:
        n = len(pdf)
        outline = _outline(pdf, n)
        styled: list[StyledLine] = []
        for index in range(n):
            _page_text(pdf, index, styled)
    finally:
        pdf.close()
    detected = detect_headings(styled, n)
    by_page: dict[int, list[tuple[int, str]]] = {}
    for page, level, title in outline:
        by_page.setdefault(page, []).append((level, title))
    good = 0
    matched: set[tuple[int, int, str]] = set()
    pairs: list[tuple[int, int]] = []  # (outline level, detected level) of each match
    for page, level, title in detected:
        hit = next((e for e in by_page.get(page, []) if _agree(e[1], title)), None)
        if hit is not None:
            good += 1
            matched.add((page, *hit))
            pairs.append((hit[0], level))
    ordered = [
        (a[0] < b[0]) == (a[1] < b[1])
        for i, a in enumerate(pairs)
        for b in pairs[i + 1 : i + 40]
        if a[0] != b[0]
    ]
    agree = sum(ordered) / len(ordered) if ordered else float("nan")
    return len(outline), len(detected), good, len(matched), agree


def main() -> int:
    print("| PDF | outline entries | detected | precision | recall | level order agrees |")
    print("|---|---:|---:|---:|---:|---:|")
    totals = [0, 0, 0, 0]
    for name, rel in PDFS.items():
        path = DOC / rel
        if not path.is_file():
            print(f"| {name} | (missing {path}) |||||")
            continue
        entries, found, good, hit, agree = score(path)
        totals = [t + v for t, v in zip(totals, (entries, found, good, hit), strict=True)]
        precision = good / found if found else float("nan")
        print(
            f"| {name} | {entries} | {found} | {precision:.2f} | {hit / entries:.2f} "
            f"| {agree:.2f} |"
        )
    entries, found, good, hit = totals
    print(f"| all | {entries} | {found} | {good / found:.2f} | {hit / entries:.2f} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
