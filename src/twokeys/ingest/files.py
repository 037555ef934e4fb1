"""Load documents from a folder or a single file.

A folder is walked in a deterministic order (entries sorted by name at each level,
depth first, with an explicit stack, so any depth is fine), skipping hidden entries
(``.git``, ``.venv``), what ``.gitignore`` and ``.twokeysignore`` files say (gitignore
rules, read by ``pathspec``, each file applying below its folder), and by default
dependency and build folders: ``node_modules``, ``__pycache__``, virtual environments
(a folder with ``pyvenv.cfg``), ``site-packages``, ``*.egg-info``, ``build``, ``dist``,
``_build`` and ``target``. Files of a kind no reader reads (binaries among them) are
left out silently; a legacy ``.doc``/``.ppt`` is a named skip; a file over the size
limit (``max_file_bytes``; JSONL corpora excepted) is a named skip.

Each file is read by the reader of its suffix (:mod:`twokeys.ingest.readers`). A reader
whose optional extra is not installed is named once per run, with the count of files
it left out (and what an index holds of them is kept).

Symbolic links are followed only to regular files inside the folder; a link to a
folder, to anything outside the folder, a dangling link, a link loop and a special
file (FIFO, socket, device) are reported and left out. A file that cannot be read or
decoded is reported through ``on_skip`` and the walk goes on: one bad file never aborts
an ingest. File names that are not valid UTF-8 are kept with U+FFFD in place of the
undecodable bytes, and reported (``SkippedFile.kept``).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

import pathspec

from twokeys.errors import IngestError
from twokeys.ingest.base import OnSkip as OnSkip
from twokeys.ingest.base import SkippedFile as SkippedFile
from twokeys.ingest.base import SourceFile, os_reason
from twokeys.ingest.base import unix_newlines as unix_newlines
from twokeys.ingest.limits import MAX_FILE_BYTES as MAX_FILE_BYTES
from twokeys.ingest.readers import NOT_READ, READERS, ReaderSpec, spec_for, suffix_of
from twokeys.sanitize import has_surrogates, replace_surrogates
from twokeys.types import Document

#: the suffixes a reader reads (whether or not its extra is installed)
SUPPORTED_SUFFIXES: Final[tuple[str, ...]] = tuple(READERS)
#: the default limit on one file's size (a named skip above it); JSONL corpora excepted
#: folders left out of a walk by default (dependencies, build output)
SKIPPED_FOLDERS: Final = frozenset(
    {"node_modules", "__pycache__", "site-packages", "build", "dist", "_build", "target"}
)
IGNORE_FILES: Final = (".gitignore", ".twokeysignore")


def load_documents(
    source: Path,
    *,
    on_skip: OnSkip | None = None,
    exclude: Sequence[Path] = (),
    max_file_bytes: int = MAX_FILE_BYTES,
) -> Iterator[Document]:
    """Yield the documents under ``source``, a folder or a single supported file.

    Ids are paths relative to the folder in POSIX form (the file name for a single
    file). Records of a ``.jsonl`` file get the ids ``<relpath>#<record id>`` in a
    folder and their bare record ids when the file itself is the source (a BEIR
    corpus). Raises :class:`IngestError` at once, before iteration, when ``source``
    does not exist or is a file of an unsupported type. Folders in ``exclude`` (the
    index being built, when it lies inside ``source``) are left out of the walk, silently.
    """
    report = on_skip if on_skip is not None else _ignore
    if source.is_dir():
        return _load_folder(source, report, exclude, max_file_bytes)
    if source.is_file():
        spec = spec_for(source.name)
        if spec is None:
            supported = " ".join(SUPPORTED_SUFFIXES)
            raise IngestError(f"unsupported file type: {source} (supported: {supported})")
        if not spec.available():
            raise IngestError(f"{source}: {_missing_extra(spec)}")
        name = _checked_name(source.name, report)
        return _load_file(SourceFile(source, name, spec.kind), spec, report, max_file_bytes)
    if source.exists():
        raise IngestError(f"not a regular file or directory: {source}")
    raise IngestError(f"no such file or directory: {source}")


def _ignore(skipped: SkippedFile) -> None:
    del skipped


def _missing_extra(spec: ReaderSpec) -> str:
    return (
        f"reading {spec.kind} files needs the '{spec.extra}' extra: "
        f"pip install 'twokeys[{spec.extra}]'"
    )


def _load_folder(
    root: Path, report: OnSkip, exclude: Sequence[Path], max_file_bytes: int
) -> Iterator[Document]:
    missing: dict[ReaderSpec, list[str]] = {}
    ignore = Ignores(root)
    for path, rel in _walk(root, report, exclude, ignore):
        spec = spec_for(path.name)
        if spec is None:
            reason = NOT_READ.get(suffix_of(path.name))
            if reason:
                report(SkippedFile(_shown(rel), reason))
            continue
        rel = _checked_name(rel, report)
        if not spec.available():
            missing.setdefault(spec, []).append(rel)
            continue
        source = SourceFile(path, rel, spec.kind, id_prefix=f"{rel}#")
        yield from _load_file(source, spec, report, max_file_bytes)
    for spec, rels in missing.items():  # once per reader, not a line per file
        n = len(rels)
        files = f"{n} {spec.kind} file{'s' if n != 1 else ''}"
        report(
            SkippedFile(files, _missing_extra(spec), keep_indexed=True, count=n, paths=tuple(rels))
        )


def _load_file(
    source: SourceFile, spec: ReaderSpec, report: OnSkip, max_file_bytes: int
) -> Iterator[Document]:
    if spec.kind != "jsonl":
        try:
            size = source.path.stat().st_size
        except OSError as exc:
            report(SkippedFile(source.rel, f"unreadable ({os_reason(exc)})", keep_indexed=True))
            return
        if size > max_file_bytes:
            report(
                SkippedFile(
                    source.rel,
                    f"{_size(size)} is over the {_size(max_file_bytes)} limit per file "
                    "(index --max-file-mb)",
                )
            )
            return
    yield from spec.reader()(source, report)


def _size(n: int) -> str:
    return f"{n / (1 << 20):,.1f} MB" if n >= 1 << 20 else f"{n / 1024:,.0f} KB"


def _checked_name(rel: str, report: OnSkip) -> str:
    """``rel`` as valid text; a name that is not valid UTF-8 is reported and repaired."""
    if not has_surrogates(rel):
        return rel
    shown = replace_surrogates(rel)
    report(SkippedFile(shown, "file name is not valid UTF-8 (bytes shown as U+FFFD)", kept=True))
    return shown


class Ignores:
    """What a walk leaves out: the default folders, and the rules of each ``.gitignore``
    and ``.twokeysignore`` met (gitignore syntax, relative to the folder holding it)."""

    def __init__(self, root: Path) -> None:
        self._specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []
        self.enter(root, "")

    def enter(self, folder: Path, rel: str) -> None:
        """Read the ignore files of a folder the walk goes into."""
        lines: list[str] = []
        for name in IGNORE_FILES:
            try:
                lines += (folder / name).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
        if lines:
            prefix = f"{rel}/" if rel else ""
            self._specs.append((prefix, pathspec.GitIgnoreSpec.from_lines(lines)))

    def _ignored(self, rel: str) -> bool:
        return any(
            rel.startswith(prefix) and spec.match_file(rel[len(prefix) :])
            for prefix, spec in self._specs
        )

    def skips_folder(self, entry: os.DirEntry[str], rel: str) -> bool:
        name = entry.name
        if name in SKIPPED_FOLDERS or name.endswith(".egg-info"):
            return True
        if os.path.exists(os.path.join(entry.path, "pyvenv.cfg")):
            return True
        return bool(self._specs) and self._ignored(f"{rel}/")

    def skips_file(self, rel: str) -> bool:
        return bool(self._specs) and self._ignored(rel)


def _walk(
    root: Path, report: OnSkip, exclude: Sequence[Path], ignore: Ignores
) -> Iterator[tuple[Path, str]]:
    """Yield ``(path, relative POSIX path)`` of the regular files below ``root`` that
    no ignore rule leaves out."""
    real_root = os.path.realpath(root)
    excluded = {ident for p in exclude if (ident := _identity(p)) is not None}
    excluded_inodes = {inode for _, inode in excluded}
    stack = [iter(_entries(root, "", report))]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
            continue
        rel, entry = item
        try:
            is_link = entry.is_symlink()
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = entry.is_file(follow_symlinks=False)
        except OSError as exc:
            report(SkippedFile(_shown(rel), f"unreadable ({os_reason(exc)})"))
            continue
        if is_dir:
            if ignore.skips_folder(entry, rel):
                continue
            # the index being built, inside its own source folder, is no document
            if entry.inode() not in excluded_inodes or _identity(entry.path) not in excluded:
                ignore.enter(Path(entry.path), rel)
                stack.append(iter(_entries(Path(entry.path), rel, report)))
        elif ignore.skips_file(rel):
            continue
        elif is_file:
            yield Path(entry.path), rel
        elif is_link:
            reason = _link_problem(entry.path, real_root)
            if reason:
                report(SkippedFile(_shown(rel), reason))
            else:
                yield Path(entry.path), rel
        else:
            report(SkippedFile(_shown(rel), f"not a regular file ({_special_kind(entry)})"))


def _identity(path: str | Path) -> tuple[int, int] | None:
    """(device, inode) of an existing folder, the same whatever path leads to it."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _entries(folder: Path, rel_folder: str, report: OnSkip) -> list[tuple[str, os.DirEntry[str]]]:
    """The folder's visible entries, sorted by name (an unreadable folder is reported)."""
    try:
        with os.scandir(folder) as scan:
            found = sorted(scan, key=lambda entry: entry.name)
    except OSError as exc:
        where = _shown(rel_folder) or "."
        report(SkippedFile(where, f"unreadable directory ({os_reason(exc)})"))
        return []
    return [
        (f"{rel_folder}/{e.name}" if rel_folder else e.name, e)
        for e in found
        if not e.name.startswith(".")
    ]


def _link_problem(path: str, real_root: str) -> str:
    """Why a symbolic link is not followed, or "" for a link to a file inside the folder."""
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symbolic link loop"
        if exc.errno == errno.ENOENT:
            return f"dangling symbolic link (to {replace_surrogates(os.readlink(path))})"
        return f"unreadable symbolic link ({os_reason(exc)})"
    target = os.path.realpath(path)
    if os.path.commonpath([real_root, target]) != real_root:
        return "symbolic link to outside the folder; not followed"
    if stat.S_ISDIR(info.st_mode):
        return "symbolic link to a folder; not followed (its files are indexed where they are)"
    if not stat.S_ISREG(info.st_mode):
        return "symbolic link to a special file; not followed"
    return ""


def _special_kind(entry: os.DirEntry[str]) -> str:
    try:
        mode = entry.stat(follow_symlinks=False).st_mode
    except OSError:
        return "unknown"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


def _shown(rel: str) -> str:
    return replace_surrogates(rel)
