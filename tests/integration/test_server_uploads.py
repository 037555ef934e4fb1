"""Uploads take every format ``twokeys index`` reads (issue: documents API): a real PDF,
a DOCX and a notebook made here with their real libraries, and source code, each sent
as a multipart upload to a running ``twokeys serve``, read by the same reader as a
folder, searchable at once and cited by its locator; a damaged file or a format with no
reader is a 400 naming the file, and nothing stored changes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="needs the serve extra")
pytest.importorskip("pypdfium2", reason="the [pdf] extra")
docx = pytest.importorskip("docx", reason="the [office] extra")
pytest.importorskip("tree_sitter", reason="the [code] extra")

from conftest import SUPPORT_KB  # noqa: E402
from serverutil import running  # noqa: E402
from twokeys import IndexOptions, build_index  # noqa: E402
from twokeys.server.app import create_app  # noqa: E402
from twokeys.server.service import IndexService  # noqa: E402

CARD = Path(__file__).resolve().parents[2] / "examples" / "manuals" / "octave-refcard.pdf"


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("uploads") / "kb.twokeys"
    build_index(SUPPORT_KB / "docs", path, IndexOptions(encoder="test-hash"))
    service = IndexService(path)
    with running(create_app(service)) as base:
        yield base
    service.close()


def _upload(url: str, name: str, raw: bytes, doc_id: str | None = None) -> httpx.Response:
    data = {"id": doc_id} if doc_id else None
    return httpx.post(f"{url}/documents", files={"file": (name, raw)}, data=data, timeout=60)


def _top(url: str, query: str, **extra: Any) -> dict[str, Any]:
    body = {"query": query, "mode": "bm25", "k": 3, **extra}
    hits = httpx.post(f"{url}/search", json=body, timeout=30).json()["hits"]
    assert hits, query
    return dict(hits[0])


def _count(url: str) -> int:
    return int(httpx.get(f"{url}/documents", params={"limit": 1}).json()["total"])


def test_a_pdf_upload_is_read_by_page(url: str) -> None:
    r = _upload(url, "octave-refcard.pdf", CARD.read_bytes(), "manuals/refcard.pdf")
    assert r.status_code == 200, r.text
    record = httpx.get(f"{url}/documents/manuals/refcard.pdf").json()
    pages = {c["locator"].get("page") for c in record["chunks"]}
    assert {1, 2, 3} <= pages
    assert all(c["cite"].startswith("manuals/refcard.pdf p") for c in record["chunks"])
    hit = _top(url, "quadrature", filters=["page >= 2"])
    assert hit["doc_id"] == "manuals/refcard.pdf"
    assert hit["cite"].startswith("manuals/refcard.pdf p. 3")


def test_a_docx_upload_keeps_its_sections_and_table(url: str, tmp_path: Path) -> None:
    document = docx.Document()
    document.add_heading("Returns", level=1)
    document.add_paragraph("A restocking fee applies to opened items.")
    document.add_heading("Fees", level=2)
    table = document.add_table(rows=2, cols=2)
    table.rows[0].cells[0].text, table.rows[0].cells[1].text = "Code", "Fee"
    table.rows[1].cells[0].text, table.rows[1].cells[1].text = "QV-5170", "15 percent"
    file = tmp_path / "returns.docx"
    document.save(file)
    assert _upload(url, "returns.docx", file.read_bytes()).status_code == 200
    hit = _top(url, "QV-5170")
    assert hit["doc_id"] == "returns.docx"
    assert "Code: QV-5170" in hit["text"] and "Fee: 15 percent" in hit["text"]
    assert hit["cite"].startswith("returns.docx §") and "Fees" in hit["cite"]


def test_a_notebook_and_source_code_upload_carry_cells_and_symbols(url: str) -> None:
    notebook = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Calibration\n"]},
            {
                "cell_type": "code",
                "metadata": {},
                "execution_count": 1,
                "outputs": [],
                "source": ["gyroscope_drift = measure_drift(samples)\n"],
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    raw = json.dumps(notebook).encode()
    assert _upload(url, "calibrate.ipynb", raw).status_code == 200
    assert _top(url, "gyroscope_drift")["cite"] == "calibrate.ipynb cell 2"
    code = (
        b"class Users:\n"
        b"    def get_user_by_id(self, uid):\n"
        b'        """Fetch one."""\n'
        b"        return uid\n"
    )
    assert _upload(url, "users.py", code, "app/users.py").status_code == 200
    hit = _top(url, "get user by id")
    assert hit["doc_id"] == "app/users.py"
    assert hit["cite"].startswith("app/users.py:2-4") and "Users.get_user_by_id" in hit["cite"]


def test_a_damaged_file_or_a_corpus_file_is_a_400_naming_it_and_nothing_changes(
    url: str,
) -> None:
    before = _count(url)
    r = _upload(url, "broken.pdf", CARD.read_bytes()[:2000])
    assert r.status_code == 400 and r.json()["detail"].startswith("broken.pdf: ")
    r = _upload(url, "corpus.jsonl", b'{"id": "a", "text": "x"}\n')
    assert r.status_code == 400 and "unsupported file type '.jsonl'" in r.json()["detail"]
    assert _count(url) == before
