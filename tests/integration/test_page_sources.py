"""The search page opens a PDF source at its page, in a real browser: Playwright driving
Debian's chromium (headless) against a served index of the Octave reference card (a
real PDF of the Debian package octave-doc, in examples/manuals) and a Markdown note.

A search finds the card's page 3; clicking the hit's citation opens a new tab at
``/files/octave-refcard.pdf#page=3`` (on a keyed server: the file fetched with the key,
shown from a blob URL with ``#page=3``). Headless chromium need not render the PDF, so
what is checked is what can be: the tab's URL, the response's status and content type,
and that its bytes are the file's.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="needs the serve extra")
sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (test extra)")

from conftest import ROOT  # noqa: E402
from serverutil import running  # noqa: E402
from twokeys import IndexOptions, build_index  # noqa: E402
from twokeys.server.app import create_app  # noqa: E402
from twokeys.server.config import ServerConfig  # noqa: E402
from twokeys.server.service import IndexService  # noqa: E402

pytestmark = pytest.mark.slow

CHROMIUM = os.environ.get("TWOKEYS_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
CARD = ROOT / "examples" / "manuals" / "octave-refcard.pdf"
QUERY = "fast fourier transform of a signal"
KEY = "page-key-0123456789abcdef"


@dataclass(frozen=True)
class Seen:
    """A response the browser got, read before the browser closes."""

    url: str
    status: int
    headers: dict[str, str]
    request_headers: dict[str, str]
    navigation: bool

    @classmethod
    def of(cls, r: Any) -> Seen:
        return cls(r.url, r.status, r.headers, r.request.headers, r.request.is_navigation_request())


@pytest.fixture(scope="module")
def kb_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which(CHROMIUM) is None and not Path(CHROMIUM).is_file():
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium)")
    root = tmp_path_factory.mktemp("sources")
    docs = root / "docs"
    docs.mkdir()
    shutil.copyfile(CARD, docs / "octave-refcard.pdf")
    (docs / "notes.md").write_text("# Notes\n\nThe gyroscope drifts half a degree an hour.\n")
    build_index(docs, root / "kb.twokeys", IndexOptions())  # the real MiniLM encoder
    return root / "kb.twokeys"


@pytest.fixture()
def service(kb_path: Path) -> Iterator[IndexService]:
    service = IndexService(kb_path)
    yield service
    service.close()


def _search_and_open(url: str, key: str | None) -> tuple[str, list[Seen], str]:
    """Search on the page, click the first fused hit's citation; the new tab's URL, the
    responses of /files/ requests, and the SHA-256 of the bytes the tab shows."""
    sync_api.expect.set_options(timeout=30_000)  # a shared, loaded machine: be patient
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            context = browser.new_context()
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            responses: list[Any] = []
            context.on("response", lambda r: responses.append(r))
            page.goto(url)
            if key is not None:
                page.fill("#key", key)
                page.click("#savekey")
            sync_api.expect(page.locator("#stats")).to_contain_text("2 documents")
            page.fill("#q", QUERY)
            page.click("#search")
            first = page.locator("#col-hybrid li.hit").first
            source = first.locator(".where a.source")
            sync_api.expect(source).to_have_text("octave-refcard.pdf p. 3 § Signal Processing")
            with context.expect_page() as opened:
                source.click()
            tab = opened.value
            tab.wait_for_load_state("commit")
            tab_url = tab.url
            bare = tab_url.split("#", 1)[0]
            digest = ""
            if not bare.startswith("blob:"):  # the bytes at the tab's address, fetched again
                digest = page.evaluate(
                    """async (u) => {
                        const r = await fetch(u);
                        const d = await crypto.subtle.digest("SHA-256", await r.arrayBuffer());
                        const hex = (b) => b.toString(16).padStart(2, "0");
                        return r.status + " " + Array.from(new Uint8Array(d), hex).join("");
                    }""",
                    bare,
                )
            assert errors == []
            return tab_url, [Seen.of(r) for r in responses], str(digest)
        finally:
            browser.close()


def test_a_pdf_hit_opens_the_served_file_at_its_page(service: IndexService) -> None:
    expected = hashlib.sha256(CARD.read_bytes()).hexdigest()
    with running(create_app(service)) as url:
        tab_url, responses, digest = _search_and_open(url, None)
    assert tab_url == f"{url}/files/octave-refcard.pdf#page=3"
    files = [r for r in responses if "/files/" in r.url]
    (opened,) = [r for r in files if r.navigation]
    assert opened.url == f"{url}/files/octave-refcard.pdf" and opened.status == 200
    assert opened.headers["content-type"] == "application/pdf"
    assert digest == f"200 {expected}"


def test_on_a_keyed_server_the_pdf_opens_from_a_blob_at_its_page(service: IndexService) -> None:
    data = CARD.read_bytes()
    with running(create_app(service, config=ServerConfig(api_key=KEY))) as url:
        tab_url, responses, _ = _search_and_open(url, KEY)
    assert tab_url.startswith(f"blob:{url}/") and tab_url.endswith("#page=3")
    (fetched,) = [r for r in responses if r.url == f"{url}/files/octave-refcard.pdf"]
    assert fetched.status == 200 and fetched.headers["content-type"] == "application/pdf"
    assert fetched.request_headers["authorization"] == f"Bearer {KEY}"
    assert fetched.headers["content-length"] == str(len(data))
    (shown,) = [r for r in responses if r.url == tab_url.split("#")[0]]  # the blob: that file
    assert shown.status == 200 and shown.headers["content-type"] == "application/pdf"
    assert shown.headers["content-length"] == str(len(data))
