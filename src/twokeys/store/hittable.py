"""What a hit shows, by chunk row, in three memory-mapped files beside SQLite.

A search answers rows; a user gets :class:`~twokeys.types.Hit` values with the chunk's
text, heading path and its document's title and path. Fetching those from SQLite cost
more than scoring the query (110-160 µs for ten rows on SciFact); these files give them
for a few slices of memory-mapped arrays::

    hits.strings.utf8         UTF-8 strings back to back: every chunk's text (row order),
                              then each document's id, title and path, then each
                              distinct heading path as JSON
    hits.strings.offsets.npy  int64, start of every string and the end of the last
    hits.rows.npy             int64 (chunks, 5): document number, position, start, end,
                              heading string number (-1 when the chunk has none)
    hits.locators.npy         int64 (chunks,): the chunk's locator string number (its
                              JSON, after the headings), -1 when it has none; written
                              only when some chunk has one (a page, a slide, lines)

An index without ``hits.locators.npy`` (written before locators, or with none) gives
chunks without a locator.

SQLite stays the record of documents and chunks (metadata, mtime, sha256, listings);
these files repeat what a hit needs and are written in the same generation. An index
built before they existed has none, and its hits come from SQLite as before.
"""

from __future__ import annotations

import json
import mmap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from twokeys.errors import IndexFormatError
from twokeys.store.base import DocumentInfo
from twokeys.types import Chunk, Locator

STRINGS = "hits.strings.utf8"
OFFSETS = "hits.strings.offsets.npy"
ROWS = "hits.rows.npy"
LOCATORS = "hits.locators.npy"
FILES = (STRINGS, OFFSETS, ROWS)
_DOC_CACHE = 1 << 16  # decoded (id, title, path) kept per open index, then started afresh
_WRITE_STRINGS = 4096  # strings encoded and written together


def write_hit_table(
    folder: Path, docs: Sequence[DocumentInfo], rows_chunks: Sequence[tuple[int, Chunk]]
) -> None:
    """Write the three files for ``rows_chunks`` (rows 0..n-1 in order) of ``docs``."""
    doc_number = {d.id: i for i, d in enumerate(docs)}
    headings: dict[tuple[str, ...], int] = {}
    meta: list[tuple[int, int, int, int, int]] = []
    strings: list[str] = []
    first_heading = len(rows_chunks) + 3 * len(docs)
    for expected, (row, chunk) in enumerate(rows_chunks):
        if row != expected:
            raise ValueError(f"hit table: row {row} where {expected} was expected")
        heading = -1
        if chunk.heading_path:
            heading = first_heading + headings.setdefault(chunk.heading_path, len(headings))
        meta.append((doc_number[chunk.doc_id], chunk.position, chunk.start, chunk.end, heading))
        strings.append(chunk.text)
    for doc in docs:
        strings += (doc.id, doc.title, doc.path)
    strings += (json.dumps(list(path), ensure_ascii=False) for path in headings)
    locators: dict[Locator, int] = {}
    located = np.full(len(rows_chunks), -1, np.int64)
    first_locator = len(strings)
    for row, chunk in rows_chunks:
        if chunk.locator:
            located[row] = first_locator + locators.setdefault(chunk.locator, len(locators))
    strings += (locator_json(loc) for loc in locators)
    lengths = np.empty(len(strings), np.int64)
    with open(folder / STRINGS, "wb") as fh:
        for at in range(0, len(strings), _WRITE_STRINGS):  # a few MB of UTF-8 at a time
            encoded = [text.encode("utf-8") for text in strings[at : at + _WRITE_STRINGS]]
            lengths[at : at + len(encoded)] = np.fromiter(map(len, encoded), np.int64)
            fh.writelines(encoded)
    offsets = np.zeros(len(strings) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    rows = np.array(meta, np.int64).reshape(len(meta), 5)
    np.save(folder / OFFSETS, offsets, allow_pickle=False)
    np.save(folder / ROWS, rows, allow_pickle=False)
    if locators:
        np.save(folder / LOCATORS, located, allow_pickle=False)


def locator_json(locator: Locator) -> str:
    """A locator as stored (in the hit files, SQLite and PostgreSQL): its set fields."""
    return json.dumps(locator.to_dict(), ensure_ascii=False, sort_keys=True)


def parse_locator(stored: str) -> Locator:
    """A stored locator back (ValueError when it is not one)."""
    data = json.loads(stored)
    if not isinstance(data, dict):
        raise ValueError("a locator is a JSON object")
    return Locator.from_dict(data)


class HitTable:
    """Chunks with their document's title and path, read from the hit files."""

    def __init__(self, folder: Path, n_chunks: int) -> None:
        self.folder = folder
        try:
            with open(folder / STRINGS, "rb") as fh:
                size = fh.seek(0, 2)
                self._strings: Any = (
                    mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
                )
            self._offsets: npt.NDArray[np.int64] = np.load(
                folder / OFFSETS, mmap_mode="r", allow_pickle=False
            ).view(np.ndarray)
            self._rows: npt.NDArray[np.int64] = np.load(
                folder / ROWS, mmap_mode="r", allow_pickle=False
            ).view(np.ndarray)
            self._located: npt.NDArray[np.int64] | None = None
            if (folder / LOCATORS).is_file():
                self._located = np.load(folder / LOCATORS, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise IndexFormatError(f"{folder}: unreadable hit table ({exc})") from exc
        if self._located is not None and self._located.shape != (n_chunks,):
            raise IndexFormatError(
                f"{folder / LOCATORS}: {self._located.shape} locators for {n_chunks} chunks"
            )
        if self._rows.shape != (n_chunks, 5) or self._offsets.size < n_chunks + 1:
            raise IndexFormatError(
                f"{folder / ROWS}: {self._rows.shape[0]} rows for {n_chunks} chunks"
            )
        if int(self._offsets[-1]) != size:
            raise IndexFormatError(f"{folder / STRINGS}: {size} bytes, offsets say otherwise")
        self._n = n_chunks
        # the same arrays as flat memoryviews: indexing one gives a Python int directly,
        # which for the ten rows of a hit list costs less than numpy's fancy indexing
        self._offset_at = memoryview(self._offsets).cast("B").cast("q")
        self._meta_at = memoryview(self._rows.reshape(-1)).cast("B").cast("q")
        self._docs: dict[int, tuple[str, str, str]] = {}
        self._headings: dict[int, tuple[str, ...]] = {}
        self._locators: dict[int, Locator] = {}

    @staticmethod
    def exists(folder: Path) -> bool:
        return all((folder / name).is_file() for name in FILES)

    def _string(self, i: int) -> str:
        start, end = int(self._offsets[i]), int(self._offsets[i + 1])
        return bytes(self._strings[start:end]).decode("utf-8")

    def _doc(self, number: int) -> tuple[str, str, str]:
        doc = self._docs.get(number)
        if doc is None:
            first = self._n + 3 * number
            ends = self._offsets[first : first + 4].tolist()
            strings = self._strings
            doc = (
                strings[ends[0] : ends[1]].decode("utf-8"),
                strings[ends[1] : ends[2]].decode("utf-8"),
                strings[ends[2] : ends[3]].decode("utf-8"),
            )
            if len(self._docs) >= _DOC_CACHE:
                self._docs.clear()
            self._docs[number] = doc
        return doc

    def _heading(self, number: int) -> tuple[str, ...]:
        heading = self._headings.get(number)
        if heading is None:
            heading = self._headings[number] = tuple(json.loads(self._string(number)))
        return heading

    def _locator(self, number: int) -> Locator:
        locator = self._locators.get(number)
        if locator is None:
            try:
                locator = self._locators[number] = parse_locator(self._string(number))
            except (ValueError, TypeError) as exc:
                raise IndexFormatError(f"{self.folder / STRINGS}: bad locator ({exc})") from exc
        return locator

    def locator_of(self, row: int) -> Locator | None:
        """The chunk's locator, None when it has none."""
        if self._located is None:
            return None
        number = int(self._located[row])
        return self._locator(number) if number >= 0 else None

    def locators(self) -> dict[int, Locator]:
        """Every located chunk's locator by row."""
        if self._located is None:
            return {}
        rows = np.flatnonzero(self._located >= 0)
        return {int(r): self._locator(int(self._located[r])) for r in rows}

    def chunks_with_source(self, rows: Sequence[int]) -> list[tuple[Chunk, str, str]]:
        """Each row's chunk, document title and path, in the order of ``rows``."""
        if not rows:
            return []
        if min(rows) < 0 or max(rows) >= self._n:
            bad = [int(r) for r in rows if not 0 <= r < self._n]
            raise IndexFormatError(f"{self.folder}: chunk rows {bad[:5]} missing from hit table")
        return [self._chunk_with_source(row) for row in rows]

    def chunk_with_source(self, row: int) -> tuple[Chunk, str, str]:
        """One row's chunk, document title and path (what a lazy hit reads on first use:
        this table is a :class:`~twokeys.types.HitSource`)."""
        if not 0 <= row < self._n:
            raise IndexFormatError(f"{self.folder}: chunk rows [{row}] missing from hit table")
        return self._chunk_with_source(row)

    def _chunk_with_source(self, row: int) -> tuple[Chunk, str, str]:
        meta_at, at = self._meta_at, 5 * row
        doc = meta_at[at]
        doc_id, title, path = self._docs.get(doc) or self._doc(doc)
        heading = meta_at[at + 4]
        chunk = Chunk(
            doc_id,
            meta_at[at + 1],
            self._strings[self._offset_at[row] : self._offset_at[row + 1]].decode("utf-8"),
            meta_at[at + 2],
            meta_at[at + 3],
            self._heading(heading) if heading >= 0 else (),
            self.locator_of(row) if self._located is not None else None,
        )
        return chunk, title, path

    def close(self) -> None:
        """Nothing to do: the mapped files are unmapped when the last reference goes,
        which may be a lazy hit made before the index was closed (it still reads its text)."""
