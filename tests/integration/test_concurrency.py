"""One Index, many threads: every answer equals the serial one (engine module docstring)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from conftest import write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.analysis import Analyzer, AnalyzerSpec
from twokeys.request import SearchRequest
from twokeys.types import Hit

THREADS = 8
PER_THREAD = 500
MODES = (
    "bm25",
    "dense",
    "hybrid",
    "hybrid-rrf",
    "hybrid-minmax",
    "hybrid-rrf-confidence",
    "tfidf",
    "bm25+",
    "bm25l",
    "boolean",
    "lsi",
    "hybrid+proximity",
)
WORDS = (
    "power supply hub firmware signature reset button grub menu entry embed model refund "
    "broken parcel delivery battery charge cable screen update network fuse ZX-4821 ZX-4812 "
    "undervoltage alarms planning running runner runs connection connected qwen2.5:14b"
).split()


@pytest.fixture(scope="module")
def index_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("concurrency")
    rng = np.random.default_rng(11)
    docs = {
        f"doc-{i:03d}.md": f"# Doc {i}\n\n## Part\n\n" + " ".join(rng.choice(WORDS, 30)) + "\n"
        for i in range(120)
    }
    path = root / "kb.twokeys"
    build_index(
        write_docs(root / "docs", docs), path, IndexOptions(encoder="test-hash", derived=("lsi",))
    )
    return path


def _requests(seed: int) -> list[SearchRequest]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(PER_THREAD):
        words = " ".join(rng.choice(WORDS, int(rng.integers(1, 5))))
        mode = str(rng.choice(MODES))
        query = words.replace(" ", " OR ", 1) if mode == "boolean" else words
        explain = bool(rng.integers(0, 2))
        out.append(SearchRequest.parse(query, mode, k=int(rng.integers(1, 15)), explain=explain))
    return out


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Switch threads every 10 microseconds, so that unguarded state races show."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(before)


def test_threads_get_the_serial_answers(index_path: Path, fast_switching: None) -> None:
    work = [_requests(seed) for seed in range(THREADS)]
    with open_index(index_path) as kb:
        serial = [[kb.search(r) for r in requests] for requests in work]
    answers: list[list[list[Hit]] | None] = [None] * THREADS
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)
    with open_index(index_path) as kb:  # fresh: every lazy load happens under contention

        def run(i: int) -> None:
            try:
                start.wait()
                answers[i] = [kb.search(r) for r in work[i]]
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors[0]
    assert answers == serial
    assert sum(len(h) for hits in serial for h in hits) > THREADS * PER_THREAD  # not empty


def test_one_analyzer_many_threads(fast_switching: None) -> None:
    texts = [
        " ".join(np.random.default_rng(i).choice(WORDS, 20)) + f" running{i}s" for i in range(400)
    ]
    spec = AnalyzerSpec()
    serial = [Analyzer(spec).query_terms(t) for t in texts]
    shared = Analyzer(spec)
    results: dict[int, list[list[str]]] = {}

    def run(i: int) -> None:
        results[i] = [shared.query_terms(t) for t in texts]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(results[i] == serial for i in range(THREADS))


def test_an_open_index_keeps_its_generation_through_a_reindex(tmp_path: Path) -> None:
    """Searches, from threads started before and after a re-index commits, see the old
    generation whole; a reopened index sees the new one."""
    src = write_docs(tmp_path / "docs", {"a.md": "# A\n\nalpha power fuse\n"})
    path = tmp_path / "kb.twokeys"
    build_index(src, path, IndexOptions(encoder="test-hash"))
    queries = [("power fuse", "bm25"), ("power fuse", "hybrid"), ("beta", "bm25")]
    with open_index(path) as old:
        before = [old.search(q, mode=m) for q, m in queries]
        write_docs(src, {"a.md": "# A\n\nbeta only now\n", "b.md": "# B\n\npower beta\n"})
        build_index(src, path, IndexOptions(encoder="test-hash"))
        assert not (path / old.manifest.generation).exists()  # the old folder is gone
        seen: list[list[list[Hit]]] = []

        def run() -> None:
            seen.append([old.search(q, mode=m) for q, m in queries])

        threads = [threading.Thread(target=run) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert seen == [before] * 4
    with open_index(path) as new:
        assert new.search("beta", mode="bm25") and not before[2]


def test_lazy_loads_happen_once_under_contention(
    index_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The encoder, the vector index and the LSI model: each loaded by one thread only."""
    import time

    from twokeys import engine
    from twokeys.store import vectors

    calls: dict[str, int] = {"encoder": 0, "vectors": 0}

    def slow(name: str, real):  # type: ignore[no-untyped-def]
        def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
            calls[name] += 1
            time.sleep(0.05)
            return real(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(engine, "get_encoder", slow("encoder", engine.get_encoder))
    monkeypatch.setattr(vectors, "open_vector_index", slow("vectors", vectors.open_vector_index))
    start = threading.Barrier(THREADS)
    with open_index(index_path) as kb:

        def run() -> None:
            start.wait()
            kb.search("power fuse", mode="hybrid", k=3)

        threads = [threading.Thread(target=run) for _ in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert calls == {"encoder": 1, "vectors": 1}
