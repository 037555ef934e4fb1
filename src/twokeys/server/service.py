"""One index behind a server: readers lease the open generation, one writer at a time.

A reader takes a lease on the current :class:`~twokeys.engine.Index` for the length of
its request (a whole streamed answer included) and so always reads one committed
generation. A write (:meth:`IndexService.write`) commits through the index's writer
with :func:`~twokeys.indexer.update_documents`, whatever the backend, under an
in-process lock (one writer), then opens the new state and makes it current; the
previous one is closed when its last lease ends. Across processes the backend
serialises writers: a local folder's lock (a second writer gets
:class:`IndexBusyError`), PostgreSQL's row lock (a second writer waits its turn). A
commit made by another process (``twokeys index`` run beside the server, or another
server on the same database) is noticed on the next request: by the manifest's change
time for a folder, by the reader's :meth:`~twokeys.store.base.IndexBackend.version`
for another backend.

Each generation is *warmed* when opened (its lexical arrays and vectors mapped), so
readers still on a generation that the commit removed from disk keep reading the open
files: nothing is loaded lazily from a folder that may be gone.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from twokeys.dense.encoder import Encoder
from twokeys.engine import Index
from twokeys.errors import TwokeysError
from twokeys.indexer import IndexOptions, IndexReport, build_index, update_documents
from twokeys.store.contract import LOCAL, open_reader, scheme_of
from twokeys.store.local import MANIFEST
from twokeys.types import Document

Stamp = tuple[object, ...]


class UnknownDocumentError(TwokeysError):
    """No document has this id."""


class IndexBusyError(TwokeysError):
    """Another process holds the index's write lock (``twokeys index`` running beside)."""


class IndexService:
    """The current generation of the index at ``path``, leased to readers."""

    def __init__(self, location: str | Path, *, encoder: Encoder | None = None) -> None:
        self.location = location
        #: the folder of a local index; None for another backend
        self.path: Path | None = Path(location) if scheme_of(location) == LOCAL else None
        if isinstance(location, str) and location.startswith("file://"):
            self.path = Path(urlsplit(location).path)
        self._encoder = encoder
        self._lock = threading.Lock()  # guards the fields below
        self._write_lock = threading.Lock()  # one writer (and one reopen) at a time
        self._leases: dict[int, int] = {}
        self._stamp = self._manifest_stamp()
        self._current = self._open()
        if self.path is None:
            self._stamp = self._manifest_stamp()
        self.writes = 0

    def _manifest_stamp(self) -> Stamp:
        """What changes when another process commits: the manifest file's identity for a
        folder, the open reader's :meth:`version` for another backend."""
        if self.path is None:
            current = getattr(self, "_current", None)
            return (current.backend.version(),) if current is not None else ()
        try:
            st = os.stat(self.path / MANIFEST)
        except OSError:
            return (0, 0, 0)
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def _open(self) -> Index:
        index = Index(open_reader(self.location), encoder=self._encoder)
        backend = index.backend
        backend.lexical  # noqa: B018 - map the arrays now (see the module docstring)
        if index.manifest.encoder is not None:
            backend.vectors  # noqa: B018
            self._encoder = index.encoder  # loaded once, shared by every later generation
        return index

    @property
    def encoder(self) -> Encoder | None:
        return self._encoder

    @contextmanager
    def reader(self) -> Iterator[Index]:
        """The current index, kept open until the block ends."""
        if self._manifest_stamp() != self._stamp:
            self._reopen()
        with self._lease() as index:
            yield index

    @contextmanager
    def _lease(self) -> Iterator[Index]:
        with self._lock:
            index = self._current
            self._leases[id(index)] = self._leases.get(id(index), 0) + 1
        try:
            yield index
        finally:
            self._release(index)

    def _release(self, index: Index) -> None:
        with self._lock:
            left = self._leases[id(index)] - 1
            if left:
                self._leases[id(index)] = left
                return
            del self._leases[id(index)]
            retired = index is not self._current
        if retired:
            index.close()

    def _reopen(self) -> None:
        # a writer in this process swaps in its own commit: readers keep the current
        # generation meanwhile instead of waiting for it
        if not self._write_lock.acquire(blocking=False):
            return
        try:
            stamp = self._manifest_stamp()
            if stamp != self._stamp:  # else another thread reopened it
                self._swap(stamp)
        finally:
            self._write_lock.release()

    def _swap(self, stamp: Stamp | None = None) -> None:
        if stamp is None:
            # another backend: its version read before the fresh reader reads anything, so
            # that a commit of another process landing in between (the fresh reader's
            # counts may predate it) makes the next read reopen; read after, it hid that
            # commit's counts for good
            stamp = (self._current.backend.version(),)
        fresh = self._open()
        with self._lock:
            old, self._current, self._stamp = self._current, fresh, stamp
            idle = id(old) not in self._leases
        if idle:
            old.close()

    def write(self, upserts: Sequence[Document] = (), deletes: Sequence[str] = ()) -> IndexReport:
        """Add or replace ``upserts`` and delete ``deletes`` in one commit, then serve it."""
        with self._write_lock:
            if deletes:
                with self._lease() as index:
                    found = index.backend.documents(deletes)
                missing = [d for d in deletes if d not in found]
                if missing:
                    raise UnknownDocumentError(f"no document {missing[0]!r}")
            location = self.path if self.path is not None else self.location
            try:
                report = update_documents(location, upserts, deletes, encoder=self._encoder)
            except TwokeysError as exc:
                if "being written by another" in str(exc):  # store.local.write_lock's refusal
                    raise IndexBusyError(f"{exc}; try again when it is done") from None
                raise
            finally:
                if self.path is None:
                    self._swap()  # (a database may have committed some batches)
                else:
                    stamp = self._manifest_stamp()
                    if stamp != self._stamp:  # committed (even if a later step failed)
                        self._swap(stamp)
            self.writes += 1
            return report

    def rebuild(self, build: Callable[[], IndexReport]) -> IndexReport:
        """Run ``build`` (a re-index of the watched folder, :mod:`twokeys.watch`) as the
        one writer, then serve what it committed."""
        with self._write_lock:
            try:
                return build()
            finally:
                stamp = self._manifest_stamp() if self.path is not None else None
                if stamp is None or stamp != self._stamp:
                    self._swap(stamp)

    @property
    def generation(self) -> str:
        """The generation being served (a local folder's name, a database's counter)."""
        with self.reader() as index:
            return str(index.manifest.generation)

    def close(self) -> None:
        with self._lock:
            self._current.close()


def watched_service(
    location: str | Path, folder: Path, *, echo: Callable[[str], None]
) -> tuple[IndexService, threading.Event]:
    """``twokeys serve --watch FOLDER``: the service of the index at ``location``, kept
    current with ``folder`` (:mod:`twokeys.watch`). The folder is indexed at once (the
    index built if there is none yet; a folder the index was not built from is refused
    here), then again after each group of changes, in a thread, as the service's one
    writer; set the event returned to stop watching."""
    from twokeys.watch import Update, describe, watch_in_thread

    if scheme_of(location) == LOCAL and not (Path(location) / MANIFEST).exists():
        echo(f"watch: no index at {location} yet: indexing {folder}")
        build_index(folder, location, IndexOptions())
    service = IndexService(location)
    with service.reader() as index:
        options = IndexOptions.of(index.manifest.spec)
    target = service.path if service.path is not None else location

    def build() -> IndexReport:
        return build_index(folder, target, options, encoder=service.encoder)

    def show(update: Update) -> None:
        echo(describe(update, service.generation if update.report is not None else ""))

    try:
        show(Update((), service.rebuild(build)))
    except BaseException:
        service.close()
        raise
    _, stop = watch_in_thread(
        folder, target, options, encoder=service.encoder, run=service.rebuild, on_update=show
    )
    return service, stop
