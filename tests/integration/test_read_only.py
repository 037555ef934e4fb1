"""Reading never writes: an index on a read-only medium opens and searches in every mode.

The index is made read-only (``chmod -R a-w``) and searched in a separate process; run
as root, that process drops to the ``nobody`` user, whom permissions do bind. A missing
HNSW graph or unsaved LSI factors are then a warning and an in-memory fallback, never
a write, and the folder's listing, sizes and times are unchanged afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.dense.selection import VectorIndexOptions

pytestmark = pytest.mark.slow

MODES = ("bm25", "dense", "hybrid", "hybrid-rrf", "tfidf", "bm25+", "boolean", "lsi")
QUERIES = ("power fuse", "firmware signature", "refund broken parcel", "grub OR menu")
WORDS = (
    "power supply hub firmware signature reset button grub menu entry embed model "
    "refund broken parcel delivery battery charge cable screen update network fuse"
).split()

SEARCH = """
import json, sys, warnings
import conftest  # registers the test encoder
from twokeys import open_index
warnings.simplefilter("always")
out = {}
with warnings.catch_warnings(record=True) as caught:
    with open_index(sys.argv[1]) as kb:
        for mode in sys.argv[2].split(","):
            out[mode] = [[h.chunk.id for h in kb.search(q, mode=mode, k=5)] for q in sys.argv[3:]]
out["warnings"] = sorted(type(w.message).__name__ for w in caught)
print(json.dumps(out))
"""


def _corpus() -> dict[str, str]:
    rng = np.random.default_rng(7)
    return {
        f"doc-{i:02d}.md": f"# Doc {i}\n\n" + " ".join(rng.choice(WORDS, 14)) + "\n"
        for i in range(40)
    }


def _snapshot(root: Path) -> list[tuple[str, int, int, int]]:
    return sorted(
        (str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns, p.stat().st_mode)
        for p in [root, *root.rglob("*")]
    )


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder another user can read (pytest's tmp_path is private to its owner)."""
    path = Path(tempfile.mkdtemp(prefix="twokeys-ro-"))
    path.chmod(0o755)
    yield path
    for p in [path, *path.rglob("*")]:
        if p.is_dir():
            p.chmod(p.stat().st_mode | stat.S_IWUSR)
    shutil.rmtree(path)


def _as_reader() -> list[str]:
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot search as a user that cannot write")
    for needed in (ROOT, Path(sys.prefix)):
        if not _others_can_read(needed):
            pytest.skip(f"{needed} is not readable by other users: cannot search as 'nobody'")
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]


def _others_can_read(path: Path) -> bool:
    """Whether a user with no rights of its own can reach and list ``path`` (a checkout in a
    private folder, such as one from ``mktemp -d``, is out of the ``nobody`` user's reach)."""
    path = path.resolve()
    if not path.stat().st_mode & stat.S_IROTH:
        return False
    return all(p.stat().st_mode & stat.S_IXOTH for p in [path, *path.parents])


def _search_read_only(index: Path) -> dict[str, list[list[str]]]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": "/nonexistent",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")]),
        "PYTHONDONTWRITEBYTECODE": "1",
        "TWOKEYS_CACHE": str(index.parent / "no-cache"),
    }
    command = [*_as_reader(), sys.executable, "-c", SEARCH, str(index), ",".join(MODES), *QUERIES]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    result: dict[str, list[list[str]]] = json.loads(done.stdout)
    return result


@pytest.mark.filterwarnings("ignore::twokeys.retrievers.classic.LsiNotBuiltWarning")
@pytest.mark.filterwarnings("ignore::twokeys.store.vectors.GraphMissingWarning")
@pytest.mark.parametrize("graph", ["saved", "missing"])
def test_a_read_only_index_opens_and_searches_in_every_mode(
    tmp_path: Path, shared_dir: Path, graph: str
) -> None:
    src = write_docs(tmp_path / "docs", _corpus())
    index = shared_dir / "kb.twokeys"
    options = IndexOptions(encoder="test-hash", vector_index=VectorIndexOptions(kind="hnsw"))
    build_index(src, index, options)
    if graph == "missing":
        for file in index.glob("gen-*/derived.hnsw-*"):
            file.unlink()
    with open_index(index) as kb:  # the same searches, by the writer, on the writable folder
        expected = {
            mode: [[h.chunk.id for h in kb.search(q, mode=mode, k=5)] for q in QUERIES]
            for mode in MODES
        }
    assert not list(index.glob("gen-*/derived.lsi-*"))  # the writer's searches saved nothing
    for p in [index, *index.rglob("*")]:
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    before = _snapshot(index)
    got = _search_read_only(index)
    assert _snapshot(index) == before
    warnings = got.pop("warnings")
    want_warnings = ["LsiNotBuiltWarning"]
    if graph == "missing":
        want_warnings.insert(0, "GraphMissingWarning")
    assert warnings == want_warnings  # one each, whatever the number of queries
    assert got == expected
