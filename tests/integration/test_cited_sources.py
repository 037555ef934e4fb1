"""Where a passage came from, in every face: CLI text and JSON, ``ask`` sources, the
HTTP API and its file route (a PDF opened at its page), and JSONL records cited by id
and title, on an index of a real (hand-written) PDF, a notebook and a JSONL corpus."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

pytest.importorskip("fastapi", reason="needs the serve extra")

from pdfmaker import make_pdf
from serverutil import running
from twokeys import IndexOptions, build_index, open_index
from twokeys.cli import main
from twokeys.rag.ask import ask as ask_index
from twokeys.server.app import create_app
from twokeys.server.service import IndexService

pytestmark = pytest.mark.usefixtures("no_llm_from_environment")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cited")
    docs = root / "docs"
    docs.mkdir()
    make_pdf(
        docs / "manual.pdf",
        [
            ["ZX-4821 service manual", "Read this before opening the rack.", "1"],
            ["Fans", "The gyroscope fan spins at 4000 rpm when the rack is hot.", "2"],
            ["Power", "Replace the capacitor bank only when the power is off.", "3"],
        ],
        outline=[("Intro", 0), ("Fans", 1), ("Power", 2)],
    )
    records = [
        {"_id": "r17", "title": "Thermal paste", "text": "Thermal paste dries out in five years."},
        {"_id": "r18", "title": "Cables", "text": "Label every cable before moving a rack."},
    ]
    (docs / "faq.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    build_index(docs, root / "kb.twokeys", IndexOptions(encoder="test-hash"))
    return root / "kb.twokeys"


def test_search_hits_and_ask_sources_cite_page_and_record(built: Path) -> None:
    with open_index(built) as kb:
        (hit,) = kb.search("capacitor bank power off", mode="bm25", k=1)
        assert hit.cite == "manual.pdf p. 3 § Power"
        assert hit.to_dict()["locator"] == {"page": 3, "section": "Power"}
        (record,) = kb.search("thermal paste dries", mode="bm25", k=1)
        assert record.cite == 'faq.jsonl #r17 "Thermal paste"'
        answer = ask_index(kb, "When should the capacitor bank be replaced?")
    cites = [s["cite"] for s in answer.to_dict()["sources"]]
    # the block holds the manual's three short pages, merged: it says so
    assert "manual.pdf pp. 1-3" in cites and 'faq.jsonl #r17 "Thermal paste"' in cites


def test_cli_text_and_json_show_the_citation(built: Path) -> None:
    runner = CliRunner()
    search = ["search", "--index", str(built), "--mode", "bm25"]
    text = runner.invoke(main, [*search, "-k", "1", "gyroscope fan rpm"])
    assert text.exit_code == 0 and "manual.pdf p. 2 § Fans" in text.output
    data = runner.invoke(main, [*search, "-k", "1", "--json", "gyroscope fan rpm"])
    (hit,) = json.loads(data.output)
    assert hit["cite"] == "manual.pdf p. 2 § Fans" and hit["locator"]["page"] == 2
    filtered = runner.invoke(
        main, [*search, "--json", "--filter", "page>=3", "capacitor gyroscope"]
    )
    assert {h["locator"]["page"] for h in json.loads(filtered.output)} == {3}


@pytest.fixture(scope="module")
def base(built: Path) -> Iterator[str]:
    service = IndexService(built)
    with running(create_app(service)) as url:
        yield url
    service.close()


def test_http_hits_cite_and_the_file_route_serves_the_pdf(base: str) -> None:
    hits = httpx.post(f"{base}/search", json={"query": "gyroscope fan", "k": 1}).json()["hits"]
    assert hits[0]["cite"] == "manual.pdf p. 2 § Fans" and hits[0]["locator"]["page"] == 2
    pdf = httpx.get(f"{base}/files/manual.pdf")
    assert pdf.status_code == 200 and pdf.headers["content-type"] == "application/pdf"
    assert pdf.content.startswith(b"%PDF-1.4")
    climbing = httpx.get(f"{base}/files/..%2F..%2Fetc%2Fpasswd")  # refused as every id route
    assert climbing.status_code == 400 and "climbs out" in climbing.json()["detail"]
    record = httpx.get(f"{base}/files/faq.jsonl%23r17")
    assert record.status_code == 200  # its file, served as data: no script of it runs here
    assert record.headers["x-content-type-options"] == "nosniff"
    assert record.headers["content-security-policy"].startswith("sandbox")
    page = httpx.get(f"{base}/").text
    assert "sourceLink(hit)" in page and "#page=" in page
