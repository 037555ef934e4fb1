"""A watched folder: a real watchfiles watcher on a temporary folder keeps the index
current (added, changed, renamed, deleted files), searches during the changes never fail
nor see half a change, and the server shows the generation advancing. Every wait is
bounded."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from twokeys.engine import Index
from twokeys.indexer import IndexOptions, build_index
from twokeys.server.service import IndexService, watched_service
from twokeys.watch import Update, describe, watch_in_thread

pytest.importorskip("watchfiles", reason="the [watch] extra")

WAIT = 20.0  # seconds: the most any change may take to be searchable
LEXICAL = IndexOptions(encoder=None)


def wait_for(what: str, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {WAIT:.0f} s: {what}")
        time.sleep(0.05)


def paths_for(service: IndexService, query: str) -> set[str]:
    with service.reader() as index:
        return {hit.path for hit in index.search(query, mode="bm25", k=20)}


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[Path, IndexService, list[Update]]]:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "intro.md").write_text("# Intro\n\nThe pump primes in ten seconds.\n")
    build_index(folder, tmp_path / "index", LEXICAL)
    service = IndexService(tmp_path / "index")
    updates: list[Update] = []
    thread, stop = watch_in_thread(
        folder,
        tmp_path / "index",
        LEXICAL,
        run=service.rebuild,
        on_update=updates.append,
        debounce_ms=200,
        tick_ms=300,
    )
    try:
        yield folder, service, updates
    finally:
        stop.set()
        thread.join(timeout=WAIT)
        service.close()
    assert not thread.is_alive()


def test_added_changed_renamed_and_deleted_files_follow_the_folder(
    watched: tuple[Path, IndexService, list[Update]],
) -> None:
    folder, service, updates = watched
    first = service.generation

    (folder / "valve.md").write_text("# Valve\n\nThe flange gasket seals the valve.\n")
    wait_for("an added file is found", lambda: paths_for(service, "flange gasket") == {"valve.md"})
    assert service.generation != first

    (folder / "valve.md").write_text("# Valve\n\nThe bonnet bolts hold the valve.\n")
    wait_for(
        "a changed file's new text", lambda: paths_for(service, "bonnet bolts") == {"valve.md"}
    )
    assert paths_for(service, "flange gasket") == set()

    (folder / "sub").mkdir()
    (folder / "valve.md").rename(folder / "sub" / "valve-v2.md")
    wait_for("a renamed file", lambda: paths_for(service, "bonnet") == {"sub/valve-v2.md"})

    (folder / "sub" / "valve-v2.md").unlink()
    wait_for("a deleted file is gone", lambda: paths_for(service, "bonnet") == set())
    with service.reader() as index:
        assert index.backend.stats()["documents"] == 1
    assert paths_for(service, "pump primes") == {"intro.md"}
    assert all(u.error == "" for u in updates)
    # the rename is reported by its new path, or (when the file lands in the new folder
    # before inotify watches it, as under load) by the new folder: the re-index reads the
    # folder's files either way, as the searches above show
    reported = {p for u in updates for p in u.paths}
    assert "sub/valve-v2.md" in reported or "sub" in reported


def test_files_nobody_reads_commit_nothing(
    watched: tuple[Path, IndexService, list[Update]],
) -> None:
    folder, service, updates = watched
    before = service.generation
    (folder / ".hidden.md").write_text("hidden\n")  # hidden entries are not read
    (folder / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n")  # a type no reader takes
    time.sleep(1.5)
    assert service.generation == before
    assert all(not u.report or not u.report.committed for u in updates)


def test_searches_during_changes_never_fail_nor_see_half_a_change(
    watched: tuple[Path, IndexService, list[Update]],
) -> None:
    folder, service, _ = watched
    errors: list[BaseException] = []
    mixed: list[set[str]] = []
    searches = [0]
    done = threading.Event()

    def search() -> None:
        while not done.is_set():
            try:
                with service.reader() as index:
                    versions = versions_in(index)
                if len(versions) > 1:  # a.md and b.md change together, in one commit
                    mixed.append(versions)
                searches[0] += 1
            except BaseException as exc:  # any failure is the finding
                errors.append(exc)

    workers = [threading.Thread(target=search) for _ in range(3)]
    for worker in workers:
        worker.start()
    try:
        for version in range(1, 6):
            for name in ("a.md", "b.md"):
                (folder / name).write_text(f"# {name}\n\nrelease marker v{version}x\n")
            wait_for(
                f"version {version} searchable",
                lambda v=version: paths_for(service, f"v{v}x") == {"a.md", "b.md"},
            )
        (folder / "a.md").unlink()
        (folder / "b.md").unlink()
        wait_for("both deleted", lambda: paths_for(service, "release marker") == set())
    finally:
        done.set()
        for worker in workers:
            worker.join(timeout=WAIT)
    assert errors == []
    assert mixed == []
    assert searches[0] > 10


def versions_in(index: Index) -> set[str]:
    hits = index.search("release marker", mode="bm25", k=10)
    return {word for hit in hits for word in hit.text.split() if word.endswith("x")}


def test_a_failed_reindex_is_reported_and_retried(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nalpha\n")
    build_index(folder, tmp_path / "index", LEXICAL)
    updates: list[Update] = []
    failures = [2]

    def flaky(build: Callable[[], object]) -> object:
        if failures[0]:
            failures[0] -= 1
            raise OSError(28, "No space left on device")
        return build()

    thread, stop = watch_in_thread(
        folder,
        tmp_path / "index",
        LEXICAL,
        run=flaky,
        on_update=updates.append,
        debounce_ms=100,
        tick_ms=200,
    )
    try:
        wait_for("the first try (the watcher's catch-up) fails", lambda: bool(updates))
        (folder / "b.md").write_text("# B\n\nbeta\n")
        wait_for("a retry that lands", lambda: any(u.report is not None for u in updates))
    finally:
        stop.set()
        thread.join(timeout=WAIT)
    errors = [u for u in updates if u.report is None]
    assert len(errors) == 2
    assert describe(errors[0]) == (
        "watch: folder read; not indexed yet: [Errno 28] No space left on device; trying again"
    )
    landed = next(u for u in updates if u.report is not None)
    assert landed.report is not None and landed.report.added == 1  # b.md, after the retries


def test_serve_watch_shows_the_generation_advancing(tmp_path: Path) -> None:
    httpx = pytest.importorskip("httpx")
    from serverutil import running
    from twokeys.server.app import create_app

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nThe compressor hums.\n")
    lines: list[str] = []
    build_index(folder, tmp_path / "index", LEXICAL)
    service, stop = watched_service(tmp_path / "index", folder, echo=lines.append)
    try:
        with running(create_app(service)) as url:
            first = httpx.get(f"{url}/v1/models").json()["data"][0]["generation"]
            assert first == httpx.get(f"{url}/stats").json()["generation"]
            (folder / "b.md").write_text("# B\n\nThe turbine whistles.\n")

            def found() -> bool:
                body = {"query": "turbine whistles", "mode": "bm25", "k": 3}
                hits = httpx.post(f"{url}/search", json=body).json()["hits"]
                return [h["path"] for h in hits] == ["b.md"]

            wait_for("the new file served", found)
            second = httpx.get(f"{url}/v1/models").json()["data"][0]["generation"]
            assert second != first
            assert httpx.get(f"{url}/stats").json()["generation"] == second
    finally:
        stop.set()
        service.close()
    assert lines[0] == "watch: folder read; nothing to index"
    assert any(line.startswith("watch: b.md changed; 1 added") for line in lines)


def test_index_watch_cli_until_ctrl_c(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nalpha\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    # SIGINT at its default in the child, as a terminal's foreground job has it: a child
    # inherits an ignored SIGINT (POSIX: how background jobs ignore Ctrl-C), and Python
    # then installs no KeyboardInterrupt handler; a library in this test process may have
    # left it ignored
    start = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler);"
        " from twokeys.cli import main; sys.argv[0] = 'twokeys'; main()"
    )
    command = [sys.executable, "-c", start, "index", str(folder)]
    command += ["--index", str(tmp_path / "index"), "--no-dense", "--watch", "-q"]
    proc = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stderr is not None
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True).start()

    def next_line() -> str:
        try:
            return lines.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError("no line within the wait") from None

    try:
        assert next_line().startswith("watching")
        (folder / "b.md").write_text("# B\n\nbeta\n")
        # b.md: seen as a change, or read by the watcher's first look if written before it
        line = next_line()
        assert line.startswith(("watch: b.md changed; ", "watch: folder read; ")), line
        assert "1 added, 0 changed, 0 removed (2 documents, 2 chunks); generation gen-" in line
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=WAIT) == 0
        while (line := next_line()) != "stopped watching\n":
            assert line.startswith("watch: "), line  # (a late look at the folder)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_the_page_shows_the_generation_advancing(tmp_path: Path) -> None:
    """The search page's header follows the watched index's generation (a real browser)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (test extra)")
    chromium = os.environ.get("TWOKEYS_CHROMIUM", "/usr/bin/chromium")
    if not Path(chromium).is_file():
        pytest.skip(f"no chromium at {chromium}")
    from serverutil import running
    from twokeys.server.app import create_app

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nThe compressor hums.\n")
    build_index(folder, tmp_path / "index", LEXICAL)
    service, stop = watched_service(tmp_path / "index", folder, echo=lambda _: None)
    try:
        with running(create_app(service)) as url, sync_api.sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=chromium, headless=True, args=["--no-sandbox", "--disable-gpu"]
            )
            try:
                page = browser.new_page()
                page.goto(url)
                stats = page.locator("#stats")
                first = service.generation
                sync_api.expect(stats).to_contain_text("1 documents, 1 chunks", timeout=20_000)
                sync_api.expect(stats).to_contain_text(f"generation {first}")
                (folder / "b.md").write_text("# B\n\nThe turbine whistles.\n")
                wait_for("the new generation", lambda: service.generation != first)
                sync_api.expect(stats).to_contain_text("2 documents", timeout=20_000)
                sync_api.expect(stats).to_contain_text(f"generation {service.generation}")
            finally:
                browser.close()
    finally:
        stop.set()
        service.close()
