"""Real PDF files written byte by byte for tests: pages of Helvetica text lines, a page
with a drawing and no text (as a scan has none), two columns, an outline. Every file
is a valid PDF 1.4 that PDFium, pypdf and any viewer open."""

from __future__ import annotations

from pathlib import Path


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(
    path: Path,
    pages: list[list[str] | None],
    *,
    columns: list[tuple[list[str], list[str]]] | None = None,
    outline: list[tuple[str, int]] = (),  # type: ignore[assignment]
    title: str = "",
) -> Path:
    """Write ``pages`` (each a list of text lines; None: a page with a drawing only) and
    then ``columns`` pages (left and right column lines) to ``path``; ``outline``:
    (title, 0-based page) bookmarks at one level."""
    objects: list[bytes] = []  # object n is objects[n - 1]

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in below
    pages_obj = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    kids: list[int] = []
    streams: list[bytes] = []
    for lines in pages:
        if lines is None:
            streams.append(b"0.5 g 72 72 450 650 re f")
        else:
            ops = ["BT /F1 11 Tf 14 TL 72 760 Td"] + [f"({_escape(line)}) Tj T*" for line in lines]
            streams.append((" ".join(ops) + " ET").encode("latin-1"))
    for left, right in columns or []:
        ops = ["BT /F1 9 Tf 12 TL 40 760 Td"] + [f"({_escape(x)}) Tj T*" for x in left] + ["ET"]
        ops += ["BT /F1 9 Tf 12 TL 320 760 Td"] + [f"({_escape(x)}) Tj T*" for x in right]
        streams.append((" ".join(ops) + " ET").encode("latin-1"))
    for stream in streams:
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] "
                b"/Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>"
                % (pages_obj, font, content)
            )
        )
    objects[pages_obj - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids),
        len(kids),
    )
    outline_ref = b""
    if outline:
        root = add(b"")
        items = []
        for _ in outline:
            items.append(add(b""))
        for i, (title_text, page) in enumerate(outline):
            links = b""
            if i > 0:
                links += b" /Prev %d 0 R" % items[i - 1]
            if i + 1 < len(items):
                links += b" /Next %d 0 R" % items[i + 1]
            objects[items[i] - 1] = b"<< /Title (%s) /Parent %d 0 R /Dest [%d 0 R /Fit]%s >>" % (
                _escape(title_text).encode("latin-1"),
                root,
                kids[page],
                links,
            )
        objects[root - 1] = b"<< /Type /Outlines /First %d 0 R /Last %d 0 R /Count %d >>" % (
            items[0],
            items[-1],
            len(items),
        )
        outline_ref = b" /Outlines %d 0 R" % root
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R%s >>" % (pages_obj, outline_ref)
    info = add(b"<< /Title (%s) >>" % _escape(title).encode("latin-1")) if title else 0
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    trailer = b"<< /Size %d /Root %d 0 R" % (len(objects) + 1, catalog)
    if info:
        trailer += b" /Info %d 0 R" % info
    out += b"trailer\n" + trailer + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref
    path.write_bytes(bytes(out))
    return path
