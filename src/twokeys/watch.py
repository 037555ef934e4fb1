"""A watched folder: the index kept current as files are added, changed, renamed and
deleted (``twokeys index DIR --watch``, ``twokeys serve --watch DIR``).

`watchfiles <https://watchfiles.helpmanual.io>`_ (the ``twokeys[watch]`` extra) reports
changes, grouped until the folder has been quiet for ``debounce_ms``; each group is
answered by re-running the indexer on the folder (:func:`twokeys.indexer.build_index`),
whose content hashes say what changed: new and changed files are chunked and embedded,
unchanged ones kept as they are, the chunks of deleted (or renamed-away) files dropped.
The indexer publishes the result whole, as one commit (a new generation of a local
index), so searches never fail and never see half of it: they read the generation
before or the one after. A group that changed nothing searchable (a file saved again
unchanged) commits nothing.

A re-index that fails (the index locked by another writer, a disk full) is reported and
tried again at the next tick, so the index catches up once it can.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from twokeys.errors import MissingExtraError, TwokeysError
from twokeys.indexer import IndexOptions, IndexReport, build_index
from twokeys.ingest import SkippedFile

if TYPE_CHECKING:
    from twokeys.dense.encoder import Encoder

#: how long the folder must be quiet before a group of changes is indexed (milliseconds)
DEBOUNCE_MS = 500
#: how often a failed re-index is tried again (milliseconds)
RETRY_MS = 2000

#: ``run(build)`` runs a re-index as the one writer (a server's lock), returns its report
Runner = Callable[[Callable[[], IndexReport]], IndexReport]


@dataclass(frozen=True, slots=True)
class Update:
    """One answered group of changes: the paths reported (relative, POSIX), and the
    re-index's report (None, with ``error`` set, where it failed)."""

    paths: tuple[str, ...]
    report: IndexReport | None
    error: str = ""


def _require_watchfiles() -> None:
    try:
        import watchfiles  # noqa: F401
    except ImportError:
        raise MissingExtraError("--watch needs watchfiles: pip install 'twokeys[watch]'") from None


def changes(
    source: Path,
    *,
    ignore: Sequence[Path] = (),
    debounce_ms: int = DEBOUNCE_MS,
    tick_ms: int = RETRY_MS,
    stop: threading.Event | None = None,
) -> Iterator[tuple[str, ...]]:
    """Groups of changed paths under ``source`` (relative POSIX paths, sorted), one per
    quiet spell of ``debounce_ms``; an empty group every ``tick_ms`` without changes.
    Hidden entries (``.git``, ``.cache``) and the folders in ``ignore`` (the index, where
    it lies inside the folder) are not watched, as the indexer does not read them. Ends
    when ``stop`` is set; Ctrl-C raises KeyboardInterrupt."""
    _require_watchfiles()
    from watchfiles import DefaultFilter, watch

    root = source.resolve()
    ignored = tuple(str(p.resolve()) for p in ignore)

    class _Filter(DefaultFilter):
        def __call__(self, change: object, path: str) -> bool:
            rel = os.path.relpath(path, root)
            if rel.startswith("..") or any(part.startswith(".") for part in Path(rel).parts):
                return False
            if any(path == p or path.startswith(p + os.sep) for p in ignored):
                return False
            return bool(super().__call__(change, path))  # type: ignore[arg-type]

    for group in watch(
        root,
        watch_filter=_Filter(),
        debounce=debounce_ms,
        step=50,
        stop_event=stop,
        rust_timeout=tick_ms,
        yield_on_timeout=True,
        raise_interrupt=True,  # Ctrl-C ends the watch as KeyboardInterrupt (no log line)
    ):
        yield tuple(sorted({Path(os.path.relpath(p, root)).as_posix() for _, p in group}))


def keep_current(
    source: Path,
    location: Path | str,
    options: IndexOptions,
    *,
    encoder: Encoder | None = None,
    run: Runner | None = None,
    on_update: Callable[[Update], None] | None = None,
    on_skip: Callable[[SkippedFile], None] | None = None,
    stop: threading.Event | None = None,
    debounce_ms: int = DEBOUNCE_MS,
    tick_ms: int = RETRY_MS,
) -> None:
    """Re-index ``source`` into ``location`` after each group of changes, until ``stop``
    is set (or Ctrl-C). ``encoder`` is the index's encoder, loaded once by the caller;
    ``run`` runs each re-index (a server passes its writer lock and reopens after it)."""
    ignore = [Path(location)] if not str(location).startswith(("postgresql:", "postgres:")) else []

    def build() -> IndexReport:
        return build_index(source, location, options, encoder=encoder, on_skip=on_skip)

    pending: tuple[str, ...] = ()
    # due: a re-index is owed even without a new change. At the first tick: what changed
    # between the caller's last build and the watcher's start; after a failure: a retry.
    due = True
    for group in changes(
        source, ignore=ignore, debounce_ms=debounce_ms, tick_ms=tick_ms, stop=stop
    ):
        if not group and not due:
            continue
        pending = tuple(sorted({*pending, *group}))
        try:
            report = run(build) if run is not None else build()
        except (TwokeysError, OSError) as exc:
            due = True
            if on_update is not None:
                on_update(Update(pending, None, f"{exc}; trying again"))
            continue
        due = False
        if on_update is not None and (pending or report.committed):
            on_update(Update(pending, report))
        pending = ()


def describe(update: Update, generation: str = "") -> str:
    """One line for a person: what changed and what the index did about it."""
    paths = update.paths
    what = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    head = f"watch: {what} changed" if paths else "watch: folder read"
    if update.report is None:
        return f"{head}; not indexed yet: {update.error}"
    r = update.report
    skipped = f", {len(r.skipped)} skipped" if r.skipped else ""
    if not r.committed:
        return f"{head}; nothing to index{skipped}"
    at = f"; generation {generation}" if generation else ""
    return (
        f"{head}; {r.added} added, {r.changed} changed, {r.removed} removed{skipped} "
        f"({r.documents} documents, {r.chunks} chunks){at}"
    )


def watch_in_thread(
    source: Path,
    location: Path | str,
    options: IndexOptions,
    **kwargs: object,
) -> tuple[threading.Thread, threading.Event]:
    """:func:`keep_current` in a daemon thread; set the event returned to stop it."""
    _require_watchfiles()
    stop = threading.Event()
    thread = threading.Thread(
        target=keep_current,
        args=(source, location, options),
        kwargs={**kwargs, "stop": stop},
        name="twokeys-watch",
        daemon=True,
    )
    thread.start()
    return thread, stop


def watch_folder(
    source: Path,
    location: Path | str,
    options: IndexOptions,
    *,
    on_skip: Callable[[SkippedFile], None] | None = None,
    echo: Callable[[str], None] = print,
    stop: threading.Event | None = None,
) -> None:
    """``twokeys index SOURCE --watch``: keep the index at ``location`` current, one line
    per group of changes, until Ctrl-C (or ``stop``), which ends it normally: a re-index
    it cuts short leaves the index as last committed. The encoder is loaded once."""
    _require_watchfiles()
    from twokeys.dense.encoder import get_encoder

    encoder = get_encoder(options.encoder) if options.encoder is not None else None
    echo(f"watching {source} for changes (Ctrl-C to stop)")

    def show(update: Update) -> None:
        echo(describe(update, generation_of(location) if update.report is not None else ""))

    said: set[str] = set()  # every re-index reads the whole folder: say each warning once

    def skipped(item: SkippedFile) -> None:
        if on_skip is not None and str(item) not in said:
            said.add(str(item))
            on_skip(item)

    # Ctrl-C is the way a watch ends: a re-index it cuts short leaves the index as last
    # committed
    with contextlib.suppress(KeyboardInterrupt):
        keep_current(
            source, location, options, encoder=encoder, on_update=show, on_skip=skipped, stop=stop
        )
    echo("stopped watching")


def generation_of(location: Path | str) -> str:
    """The generation an index at ``location`` has committed last."""
    from twokeys.store.contract import open_reader

    reader = open_reader(location)
    try:
        return str(reader.manifest.generation)
    finally:
        reader.close()
