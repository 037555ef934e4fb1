"""Two ``twokeys serve`` processes on one PostgreSQL index: each adds, replaces and deletes
documents over HTTP while both are searched; nothing fails, counts stay exact, and each
server sees the other's writes (real uvicorn processes, real PostgreSQL)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conftest import ROOT, write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.store.postgres.writer import PostgresWriter

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.slow,
]
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

WRITES = 12  # per server: adds, with a replace every third and a delete every fourth
SEED = 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(location: str) -> tuple[subprocess.Popen[str], str]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT / 'tests'}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "twokeys.cli", "serve", "--index", location, "--port", str(port)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, f"http://127.0.0.1:{port}"


def _wait(proc: subprocess.Popen[str], url: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/healthz").status_code == 200:
                return
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{url} did not start: {proc.communicate(timeout=10)[1]}")
        time.sleep(0.1)


@pytest.fixture
def two_servers(tmp_path: Path, pg_url: str) -> Iterator[tuple[str, str]]:
    seed = {
        f"seed/{i}.md": f"# Seed {i}\n\nshared common words, seed page {i}.\n" for i in range(SEED)
    }
    build_index(write_docs(tmp_path / "seed", seed), pg_url, IndexOptions(encoder=None))
    started = [_serve(pg_url) for _ in range(2)]
    try:
        for proc, url in started:
            _wait(proc, url)
        yield started[0][1], started[1][1]
    finally:
        for proc, _ in started:
            proc.terminate()
        for proc, _ in started:
            _, err = proc.communicate(timeout=30)
            assert "Traceback" not in err, err


def _token(server: int, n: int, version: int = 0) -> str:
    return f"zq{server}x{n}v{version}"


def _search(client: httpx.Client, url: str, query: str, k: int = 50) -> list[str]:
    r = client.post(f"{url}/search", json={"query": query, "mode": "bm25", "k": k})
    assert r.status_code == 200, r.text
    return [h["doc_id"] for h in r.json()["hits"]]


def test_two_servers_on_one_database_write_and_see_each_other(
    two_servers: tuple[str, str], pg_url: str
) -> None:
    urls = two_servers
    live: list[dict[str, str]] = [{}, {}]  # per server: document id -> its current token
    errors: list[str] = []
    stop = threading.Event()
    searches = [0]

    def writer(server: int) -> None:
        url = urls[server]
        with httpx.Client(timeout=60) as client:
            for n in range(WRITES):
                doc_id = f"s{server}/{n}.md"
                token = _token(server, n)
                body = {
                    "documents": [
                        {"id": doc_id, "text": f"# Doc {n}\n\nshared common words {token}.\n"}
                    ]
                }
                r = client.post(f"{url}/documents", json=body)
                if r.status_code != 200:
                    errors.append(f"add {doc_id}: {r.status_code} {r.text}")
                    return
                live[server][doc_id] = token
                if n % 3 == 2:  # replace an earlier document of this server
                    old = f"s{server}/{n - 1}.md"
                    token = _token(server, n - 1, 1)
                    body = {
                        "documents": [{"id": old, "text": f"# Doc\n\nreplaced text {token}.\n"}]
                    }
                    r = client.post(f"{url}/documents", json=body)
                    if r.status_code != 200 or r.json()["changed"] != 1:
                        errors.append(f"replace {old}: {r.status_code} {r.text}")
                        return
                    live[server][old] = token
                if n % 4 == 3:  # delete an earlier document of this server
                    gone = f"s{server}/{n - 3}.md"
                    r = client.delete(f"{url}/documents/{gone}")
                    if r.status_code != 200:
                        errors.append(f"delete {gone}: {r.status_code} {r.text}")
                        return
                    del live[server][gone]

    def searcher() -> None:
        with httpx.Client(timeout=60) as client:
            while not stop.is_set():
                for url in urls:
                    try:
                        hits = _search(client, url, "shared common words")
                    except AssertionError as exc:
                        errors.append(f"search: {exc}")
                        return
                    if len(hits) != len(set(hits)):
                        errors.append(f"search: a document twice in {hits}")
                        return
                    searches[0] += 1

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(2)]
    reader = threading.Thread(target=searcher)
    reader.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    stop.set()
    reader.join(timeout=60)
    assert not any(t.is_alive() for t in [*threads, reader])
    assert errors == []
    assert searches[0] > 0
    expected = SEED + len(live[0]) + len(live[1])
    with httpx.Client(timeout=60) as client:
        for here, url in enumerate(urls):
            other = 1 - here
            # the other server's documents, as it left them, are found here
            for doc_id, token in live[other].items():
                assert _search(client, url, token) == [doc_id], (url, doc_id)
                r = client.get(f"{url}/documents/{doc_id}")
                assert r.status_code == 200 and token in r.json()["chunks"][0]["text"]
            for n in range(WRITES):  # its deleted and replaced versions are not
                doc_id = f"s{other}/{n}.md"
                if doc_id not in live[other]:
                    assert client.get(f"{url}/documents/{doc_id}").status_code == 404
                    assert not _search(client, url, _token(other, n))
            counts = client.get(f"{url}/stats").json()["counts"]
            assert (counts["documents"], counts["chunks"]) == (expected, expected), url
    with PostgresWriter(pg_url) as writer:
        assert writer.verify() == []
        assert writer.counts()["documents"] == expected
    with open_index(pg_url) as kb:
        ids = [h.doc_id for h in kb.search("shared common words", mode="bm25", k=1000)]
        assert len(ids) == len(set(ids))


def test_a_commit_landing_while_the_service_reopens_is_seen(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # another process commits after this server's fresh reader has read its counts but
    # before the server notes the database's version: the next read must still see it
    from twokeys.indexer import update_documents
    from twokeys.server.documents import read_document
    from twokeys.server.service import IndexService

    pages = {
        f"seed/{i}.md": f"# Seed {i}\n\nshared common words, seed page {i}.\n" for i in range(3)
    }
    build_index(write_docs(tmp_path / "seed", pages), pg_url, IndexOptions(encoder=None))
    service = IndexService(pg_url)
    opened = service._open

    def open_then_another_process_commits() -> object:
        fresh = opened()
        other = read_document(b"# Other\n\nwritten by the other server.\n", "other.md", ".md")
        update_documents(pg_url, [other], (), encoder=None)
        return fresh

    monkeypatch.setattr(service, "_open", open_then_another_process_commits)
    service.write([read_document(b"# Mine\n\nwritten here.\n", "mine.md", ".md")], ())
    monkeypatch.undo()
    with service.reader() as index:
        assert index.manifest.counts["documents"] == 5
        assert index.search("other server", mode="bm25")[0].doc_id == "other.md"
    service.close()
