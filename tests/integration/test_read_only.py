"""Reading never writes: an index on a read-only medium opens and searches in every mode.

The index is searched in a separate process that cannot write it, two ways:

* **read-only mount**: the index folder is bind-mounted read-only onto itself in a private
  mount namespace of the reader (``unshare --mount``; as another user than root, inside
  a user namespace too), so every write fails with EROFS, as on a read-only medium;
* **no write permission**: ``chmod -R a-w``; run as root, the reader keeps uid 0 but
  has every capability dropped (``setpriv --bounding-set=-all``), so permission bits
  bind it while it still reads the checkout and the venv as their owner.

Neither depends on who else can read the checkout (a clean clone in a ``mktemp -d``
folder is private to root). A way this machine cannot offer (no ``unshare``, mounts
refused, a checkout root cannot read without capabilities) is a skip naming why. A
missing HNSW graph or unsaved LSI factors are then a warning and an in-memory fallback,
never a write, and the folder's listing, sizes and times are unchanged afterwards.
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
    """A folder outside pytest's, whose write permission is restored before removal."""
    path = Path(tempfile.mkdtemp(prefix="twokeys-ro-"))
    yield path
    for p in [path, *path.rglob("*")]:
        if p.is_dir():
            p.chmod(p.stat().st_mode | stat.S_IWUSR)
    shutil.rmtree(path)


# $1: the folder to mount read-only onto itself; the rest: the command to run there
_MOUNT_READ_ONLY = (
    'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" "$1" && shift && exec "$@"'
)


def _reader(medium: str, index: Path) -> list[str]:
    """The command prefix that runs the reader unable to write ``index`` (module docstring)."""
    if medium == "read-only mount":
        unshare = shutil.which("unshare")
        if unshare is None:
            pytest.skip("no unshare command: cannot mount the index read-only")
        own = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
        prefix = [unshare, *own, "--mount", "--propagation", "private", "--"]
        prefix += ["sh", "-c", _MOUNT_READ_ONLY, "sh", str(index)]
    elif os.geteuid() != 0:
        prefix = []  # the permission bits bind any user but root
    else:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot drop the capabilities")
        prefix = [setpriv, "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", "--"]
    probe = [*prefix, sys.executable, "-c", _PROBE, str(index)]
    done = subprocess.run(probe, capture_output=True, text=True, env=_env(index), timeout=60)
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        pytest.skip(f"{medium}: the reader cannot start this way here ({why})")
    refused = done.stdout.strip()
    assert refused == ("EROFS" if medium == "read-only mount" else "EACCES"), refused
    return prefix


_PROBE = """
import errno, os, sys
import twokeys, conftest
try:
    os.close(os.open(os.path.join(sys.argv[1], "probe"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
except OSError as exc:
    print(errno.errorcode.get(exc.errno, exc.errno))
else:
    os.remove(os.path.join(sys.argv[1], "probe"))
    print("writable")
"""


def _env(index: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": "/nonexistent",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")]),
        "PYTHONDONTWRITEBYTECODE": "1",
        "TWOKEYS_CACHE": str(index.parent / "no-cache"),
    }


def _search_read_only(index: Path, medium: str) -> dict[str, list[list[str]]]:
    prefix = _reader(medium, index)
    command = [*prefix, sys.executable, "-c", SEARCH, str(index), ",".join(MODES), *QUERIES]
    done = subprocess.run(command, capture_output=True, text=True, env=_env(index), timeout=300)
    assert done.returncode == 0, done.stderr
    result: dict[str, list[list[str]]] = json.loads(done.stdout)
    return result


@pytest.mark.filterwarnings("ignore::twokeys.retrievers.classic.LsiNotBuiltWarning")
@pytest.mark.filterwarnings("ignore::twokeys.store.vectors.GraphMissingWarning")
@pytest.mark.parametrize("graph", ["saved", "missing"])
@pytest.mark.parametrize("medium", ["read-only mount", "no write permission"])
def test_a_read_only_index_opens_and_searches_in_every_mode(
    tmp_path: Path, shared_dir: Path, graph: str, medium: str
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
    if medium == "no write permission":
        for p in [index, *index.rglob("*")]:
            p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    before = _snapshot(index)
    got = _search_read_only(index, medium)
    assert _snapshot(index) == before
    warnings = got.pop("warnings")
    want_warnings = ["LsiNotBuiltWarning"]
    if graph == "missing":
        want_warnings.insert(0, "GraphMissingWarning")
    assert warnings == want_warnings  # one each, whatever the number of queries
    assert got == expected
