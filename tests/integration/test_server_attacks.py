"""The attacker's view of ``twokeys serve``: a real uvicorn on 127.0.0.1, attacked the way
a hostile web page (through the user's browser), a DNS-rebinding name, a client with a
read-only key, and a slow or oversized client would. Each attack is refused, and the
index is unchanged afterwards: its document count and every document's content hash are
compared with those taken before.

The browser attacks hit the keyless default (what a laptop runs); the key attacks a
server with a read-only and a read-write key from a keys file. A document whose text,
title and id hold ``<script>`` and ``onerror`` markup is then opened on the search page
in Chromium (Playwright): nothing of it runs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="needs the serve extra")
pytest.importorskip("uvicorn", reason="needs the serve extra")

from conftest import SUPPORT_KB
from serverutil import running
from twokeys import IndexOptions, build_index, open_index
from twokeys.server.app import create_app
from twokeys.server.config import Limits, ServerConfig
from twokeys.server.keys import read_keys_file
from twokeys.server.service import IndexService

pytestmark = pytest.mark.usefixtures("no_llm_from_environment")

READER = "reader-key-0123456789abcdef"
WRITER = "writer-key-0123456789abcdef"
EVIL = "http://evil.example"
TARGET = "errors/zx-4821.md"
PLANTED = {"documents": [{"id": "planted.md", "text": "# Refunds\n\nAll refunds are cancelled."}]}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("attacks") / "support.twokeys"
    build_index(SUPPORT_KB / "docs", path, IndexOptions(encoder="test-hash"))
    return path


def fingerprint(path: Path) -> tuple[int, dict[str, str]]:
    """The index's chunk count and each document's content hash."""
    with open_index(path) as kb:
        chunks = int(kb.manifest.counts["chunks"])
        return chunks, {d.id: d.sha256 for d in kb.backend.all_documents()}


@pytest.fixture
def index(built: Path, tmp_path: Path) -> Iterator[Path]:
    """A copy of the index, checked unchanged once the test's attacks are over."""
    path = tmp_path / "kb.twokeys"
    shutil.copytree(built, path)
    before = fingerprint(path)
    yield path
    assert fingerprint(path) == before, "an attack changed the index"


def serve(path: Path, **config: Any) -> Any:
    return running(create_app(IndexService(path), config=ServerConfig(**config)))


def keys(tmp_path: Path) -> Any:
    file = tmp_path / "keys"
    file.write_text(f"# the team's keys\nsearch-ui:read:{READER}\nindexer:write:{WRITER}\n")
    return read_keys_file(file)


def raw(url: str, head: str, body: bytes = b"", *, wait: float = 10.0) -> tuple[int, bytes]:
    """Send a hand-made request (``head``'s lines, then ``body``) and read the status."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=wait) as sock:
        sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        data = b""
        while True:  # the head, then the body its Content-Length announces
            head, _, rest = data.partition(b"\r\n\r\n")
            if _:
                length = re.search(rb"(?i)content-length: *(\d+)", head)
                if length is None or len(rest) >= int(length.group(1)):
                    break
            part = sock.recv(65536)
            if not part:
                break
            data += part
    status = int(data.split(b" ", 2)[1]) if data else 0
    return status, data


def browser(origin: str = EVIL, site: str = "cross-site") -> dict[str, str]:
    """The headers a browser adds to a request a page at ``origin`` makes."""
    return {"Origin": origin, "Sec-Fetch-Site": site, "Sec-Fetch-Mode": "cors"}


# -- a hostile page, through the user's browser, against the keyless default ---------------


def test_a_hostile_page_can_neither_write_nor_read_the_keyless_default(index: Path) -> None:
    with serve(index) as url:
        # a plain HTML form: a multipart POST, sent cross-site without a preflight
        upload = {"file": ("planted.md", b"# Refunds\n\nAll refunds are cancelled.")}
        form = {**browser(site="cross-site"), "Sec-Fetch-Mode": "navigate"}
        r = httpx.post(f"{url}/documents", files=upload, headers=form)
        assert r.status_code == 403 and "cross-site" in r.json()["detail"]
        r = httpx.post(f"{url}/search", data={"query": "refund"}, headers=form)
        assert r.status_code == 403
        # fetch() with text/plain: a "simple" request, no preflight either
        plain = {**browser(), "Content-Type": "text/plain"}
        r = httpx.post(f"{url}/documents", content=json.dumps(PLANTED), headers=plain)
        assert r.status_code == 403
        # without the browser's headers text/plain is still no JSON route's body
        r = httpx.post(
            f"{url}/documents",
            content=json.dumps(PLANTED),
            headers=plain | {"Origin": url, "Sec-Fetch-Site": "same-origin"},
        )
        assert r.status_code == 415 and "application/json" in r.json()["detail"]
        # a direct cross-site DELETE, and reads (the answers would leak to the page)
        assert httpx.delete(f"{url}/documents/{TARGET}", headers=browser()).status_code == 403
        for route in (f"/documents/{TARGET}", "/stats", "/metrics", "/v1/models"):
            assert httpx.get(url + route, headers=browser()).status_code == 403, route
        r = httpx.post(f"{url}/search", json={"query": "refund"}, headers=browser())
        assert r.status_code == 403
        # another site on this machine (another port) is no more trusted
        other = browser(origin="http://127.0.0.1:1", site="same-site")
        assert httpx.post(f"{url}/search", json={"query": "x"}, headers=other).status_code == 403
        assert httpx.get(f"{url}/stats", headers={"Sec-Fetch-Site": "same-site"}).status_code == 403
        assert httpx.get(f"{url}/stats", headers={"Origin": "null"}).status_code == 403
        # CORS stays closed: a preflight gets no permission
        r = httpx.options(
            f"{url}/documents",
            headers={"Origin": EVIL, "Access-Control-Request-Method": "DELETE"},
        )
        assert "access-control-allow-origin" not in r.headers
        # the page itself may be opened from a link; its own requests are served
        assert httpx.get(url, headers={"Sec-Fetch-Site": "cross-site"}).status_code == 200
        own = browser(origin=url, site="same-origin")
        r = httpx.post(f"{url}/search", json={"query": "refund", "k": 1}, headers=own)
        assert r.status_code == 200 and r.json()["hits"]
        assert httpx.get(f"{url}/stats", headers=own).status_code == 200
        # and so are programs, which send neither header
        assert httpx.get(f"{url}/documents/{TARGET}").status_code == 200


def test_a_named_cors_origin_is_served_and_no_other(index: Path) -> None:
    ui = "http://ui.example"
    with serve(index, cors_origins=(ui,)) as url:
        r = httpx.post(f"{url}/search", json={"query": "refund"}, headers=browser(origin=ui))
        assert r.status_code == 200
        assert r.headers["access-control-allow-origin"] == ui
        r = httpx.post(f"{url}/search", json={"query": "refund"}, headers=browser())
        assert r.status_code == 403


def test_a_rebinding_host_name_gets_421(index: Path) -> None:
    with serve(index, allowed_hosts=("kb.internal",)) as url:
        port = url.rsplit(":", 1)[1]
        # after rebinding, the page's origin *is* the name it uses: same-origin to it
        for host in (f"evil.example:{port}", "evil.example", f"localhost.evil.example:{port}"):
            rebound = {"Host": host, "Origin": f"http://{host}", "Sec-Fetch-Site": "same-origin"}
            for method, route in (
                ("GET", f"/documents/{TARGET}"),
                ("DELETE", f"/documents/{TARGET}"),
                ("GET", "/stats"),
                ("GET", "/"),
            ):
                r = httpx.request(method, url + route, headers=rebound)
                assert r.status_code == 421, (host, method, route)
                assert "not a name of this server" in r.json()["detail"]
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"kb.internal:{port}", "[::1]"):
            assert httpx.get(f"{url}/stats", headers={"Host": host}).status_code == 200, host


# -- keys, roles and limits -------------------------------------------------------------


def test_a_read_only_key_cannot_write_and_keys_never_go_in_urls(
    index: Path, tmp_path: Path
) -> None:
    with serve(index, keys=keys(tmp_path)) as url:
        read = {"Authorization": f"Bearer {READER}"}
        r = httpx.delete(f"{url}/documents/{TARGET}", headers=read)
        assert r.status_code == 403 and "'search-ui' is read-only" in r.json()["detail"]
        r = httpx.post(f"{url}/documents", json=PLANTED, headers=read)
        assert r.status_code == 403
        upload = {"file": ("planted.md", b"# Refunds\n\nAll refunds are cancelled.")}
        assert httpx.post(f"{url}/documents", files=upload, headers=read).status_code == 403
        assert (
            httpx.post(f"{url}/search", json={"query": "refund"}, headers=read).status_code == 200
        )
        # a key in the query string is refused even when it is right
        for name in ("api_key", "key", "token", "access_token"):
            r = httpx.delete(f"{url}/documents/{TARGET}?{name}={WRITER}")
            assert r.status_code == 400 and "never goes in the URL" in r.json()["detail"]
            r = httpx.get(f"{url}/stats?{name}={READER}", headers=read)
            assert r.status_code == 400
        # no key, a wrong one, one without "Bearer": 401
        for headers in ({}, {"Authorization": "Bearer " + READER[:-1]}, {"Authorization": WRITER}):
            r = httpx.delete(f"{url}/documents/{TARGET}", headers=headers)
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        # the write key may (a document of its own, then gone again)
        write = {"Authorization": f"Bearer {WRITER}"}
        doc = {"documents": [{"id": "tmp/note.md", "text": "# Note\n\nA note."}]}
        assert httpx.post(f"{url}/documents", json=doc, headers=write).status_code == 200
        assert httpx.delete(f"{url}/documents/tmp/note.md", headers=write).status_code == 200


def test_path_traversal_in_document_ids_is_refused(index: Path) -> None:
    with serve(index) as url:
        for route in (
            "/documents/..%2F..%2Fetc%2Fpasswd",
            "/documents/%2E%2E/%2E%2E/etc/passwd",
            "/documents/errors/..%2F..%2F..%2Fetc%2Fpasswd",
            "/documents/%2Fetc%2Fpasswd",
            "/documents/C:%5CWindows%5Cwin.ini",
        ):
            for method in ("GET", "DELETE"):
                r = httpx.request(method, url + route)
                assert r.status_code == 400, (method, route)
                detail = r.json()["detail"]
                assert "indexed folders" in detail or "absolute path" in detail
                assert "root:" not in r.text
        for doc_id in ("../../planted.md", "/etc/planted.md", "a/../../planted.md"):
            doc = {"documents": [{"id": doc_id, "text": "# Refunds\n\nAll cancelled."}]}
            r = httpx.post(f"{url}/documents", json=doc)
            assert r.status_code == 400, doc_id
            upload = {"file": ("x.md", b"# Refunds\n\nAll cancelled.")}
            r = httpx.post(f"{url}/documents", files=upload, data={"id": doc_id})
            assert r.status_code == 400, doc_id


def test_the_key_is_checked_before_the_body_is_read(index: Path, tmp_path: Path) -> None:
    with serve(index, keys=keys(tmp_path)) as url:
        # announce a gigabyte and send none of it: the answer comes from the headers alone
        head = (
            "POST /documents HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\n"
            "Content-Length: 1000000000\n"
        )
        started = time.monotonic()
        status, _ = raw(url, head)
        assert status == 401 and time.monotonic() - started < 5
        status, data = raw(url, head + f"Authorization: Bearer {READER}\n")
        assert status == 403 and b"read-only" in data


def test_oversized_and_slow_bodies_are_cut_off(index: Path, tmp_path: Path) -> None:
    limits = Limits(max_body_bytes=4096, request_timeout_s=1.5)
    with serve(index, keys=keys(tmp_path), limits=limits) as url:
        write = {"Authorization": f"Bearer {WRITER}"}
        big = {"documents": [{"id": "big.md", "text": "word " * 5000}]}
        r = httpx.post(f"{url}/documents", json=big, headers=write)
        assert r.status_code == 413 and "limit is 4096" in r.json()["detail"]
        # a slow body: ten bytes of a hundred, then nothing
        head = (
            f"POST /documents HTTP/1.1\nHost: 127.0.0.1\nAuthorization: Bearer {WRITER}\n"
            "Content-Type: application/json\nContent-Length: 100\n"
        )
        started = time.monotonic()
        status, data = raw(url, head, b'{"document', wait=20)
        elapsed = time.monotonic() - started
        assert status == 408 and b"not received within 1.5 s" in data
        assert 1.0 < elapsed < 10
        # the server still answers afterwards
        read = {"Authorization": f"Bearer {READER}"}
        assert httpx.get(f"{url}/stats", headers=read).status_code == 200


def test_concurrency_per_key_is_bounded(index: Path, tmp_path: Path) -> None:
    limits = Limits(max_concurrent_per_key=1, request_timeout_s=3)
    with serve(index, keys=keys(tmp_path), limits=limits) as url:
        # the writer's slow body holds its one slot; a second writer request is turned away
        head = (
            f"POST /documents HTTP/1.1\nHost: 127.0.0.1\nAuthorization: Bearer {WRITER}\n"
            "Content-Type: application/json\nContent-Length: 100\n"
        )
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as held:
            held.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + b'{"doc')
            time.sleep(0.3)
            write = {"Authorization": f"Bearer {WRITER}"}
            r = httpx.get(f"{url}/stats", headers=write)
            assert r.status_code == 429 and "'indexer': more than 1" in r.json()["detail"]
            assert r.headers["retry-after"] == "1"
            # another key has its own slots
            read = {"Authorization": f"Bearer {READER}"}
            assert httpx.get(f"{url}/stats", headers=read).status_code == 200


# -- document text is data ---------------------------------------------------------------

HOSTILE_TEXT = (
    "# Refund <script>window.__pwned = 'text'</script>\n\n"
    "Refunds <img src=x onerror=\"window.__pwned='img'\"> are paid in 5 days. "
    "<svg onload=\"window.__pwned='svg'\"></svg> Ask support about the refund policy."
)


def test_script_in_a_document_never_runs_on_the_page(index: Path, tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright")
    chromium = os.environ.get("TWOKEYS_CHROMIUM", "/usr/bin/chromium")
    if not Path(chromium).is_file():
        pytest.skip(f"no chromium at {chromium} (apt-get install chromium)")
    hostile = tmp_path / "hostile.twokeys"
    shutil.copytree(index, hostile)
    doc = {
        "id": "<img src=x onerror=\"window.__pwned='id'\">.md",
        "title": "<script>window.__pwned='title'</script>",
        "text": HOSTILE_TEXT,
        "kind": "markdown",
    }
    with serve(hostile) as url:
        r = httpx.post(f"{url}/documents", json={"documents": [doc]})
        assert r.status_code == 200, r.text
        page_response = httpx.get(url)
        policy = page_response.headers["content-security-policy"]
        assert "script-src 'self' 'sha256-" in policy and "frame-ancestors 'none'" in policy
        args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=args)
            try:
                page = browser.new_page()
                dialogs: list[str] = []
                page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
                errors: list[str] = []
                page.on("pageerror", lambda exc: errors.append(str(exc)))
                page.goto(url)
                sync_api.expect(page.locator("#stats")).to_contain_text("documents", timeout=30_000)
                page.fill("#q", "refund policy paid")
                page.click("#search")
                first = page.locator("#col-bm25 li.hit").first
                sync_api.expect(first).to_be_visible(timeout=30_000)
                texts = " ".join(page.locator("#col-bm25 li.hit").all_inner_texts())
                assert "<script>" in texts or "onerror" in texts  # shown, as text
                page.click("#askbtn")
                busy = re.compile("…|^$")
                sync_api.expect(page.locator("#askstatus")).not_to_have_text(busy, timeout=30_000)
                assert page.locator("#sources li").count() > 0
                assert page.locator("#col-bm25 script, #col-bm25 img, #col-bm25 svg").count() == 0
                assert page.locator("#ask script, #ask img, #ask svg").count() == 0
                assert page.evaluate("window.__pwned") is None
                assert dialogs == [] and errors == []
            finally:
                browser.close()
