"""``twokeys check --repair``: rebuild a damaged index from the chunks it stores.

The database holds every chunk's text and every document's record, and everything else
in a generation is derived from them: the lexical arrays by analysing the chunks again,
the vectors by embedding them again (a vector that is still finite and unit length is
kept). So a damaged array or vocabulary is repaired without the sources; a damaged
database or manifest is not, and the error says to re-index from the sources.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from twokeys.dense.encoder import Encoder, get_encoder
from twokeys.errors import EncoderMismatchError, TwokeysError
from twokeys.indexer import (
    IndexOptions,
    IndexReport,
    ProgressFactory,
    _noop_progress,
    _Pending,
    _with_rows,
    _write,
)
from twokeys.store.check import CheckReport, check_index
from twokeys.store.local import (
    DATABASE,
    MANIFEST,
    GenerationWriter,
    LocalIndex,
    read_manifest,
    remove_stale,
    write_lock,
)


@dataclass(frozen=True)
class RepairReport:
    """What :func:`repair_index` found and did; ``rebuilt`` is None when nothing was wrong."""

    found: CheckReport
    rebuilt: IndexReport | None
    kept_generations: tuple[str, ...]  # superseded folders still held by readers


def repair_index(
    path: Path, *, encoder: Encoder | None = None, progress: ProgressFactory | None = None
) -> RepairReport:
    """Check ``path`` deeply and, if damaged, commit a generation rebuilt from its chunks.

    Raises :class:`~twokeys.errors.TwokeysError` when the chunks themselves cannot be
    read back (damaged database or manifest): then only re-indexing the sources helps.
    """
    stage = progress or _noop_progress
    read_manifest(path)  # no index: say so (and create no folder for the lock)
    with write_lock(path):
        found = check_index(path, deep=True)
        if found.ok:
            return RepairReport(found, None, tuple(remove_stale(path)))
        unrepairable = [
            p
            for p in found.problems
            if p.file.name in (DATABASE, MANIFEST) or p.file == path / found.generation
        ]
        if unrepairable:
            raise TwokeysError(
                f"{unrepairable[0]}; the stored chunks cannot be read back: re-index from "
                f"the sources with 'twokeys index SOURCE --index {path}'"
            )
        previous = LocalIndex(path)
        try:
            old = previous.manifest
            if old.encoder is not None:
                encoder = encoder or get_encoder(old.encoder.name)
                if (encoder.id, encoder.fingerprint()) != (old.encoder.id, old.encoder.fingerprint):
                    raise EncoderMismatchError(
                        f"index was built with encoder {old.encoder.id}, not {encoder.id}: "
                        "repair with the original encoder or re-index"
                    )
            options = IndexOptions(
                analyzer=old.analyzer,
                bm25=old.bm25,
                chunker=old.chunker,
                encoder=old.encoder.name if old.encoder is not None else None,
                dtype=old.encoder.dtype if old.encoder is not None else "float32",
                vector_index=old.vector_index,
            )
            pending = [
                _Pending(_with_rows(doc, 0, doc.n_chunks), [], old_first_row=doc.first_row)
                for doc in previous.all_documents()
            ]
            report = IndexReport(unchanged=len(pending), repaired=list(found.problems))
            writer = GenerationWriter(path)
            try:
                manifest = _write(
                    writer, pending, options, encoder, options.encoder, previous, stage, report
                )
                writer.commit(manifest)
            except BaseException:
                writer.abort()
                raise
        finally:
            previous.close()
        return RepairReport(found, report, tuple(remove_stale(path)))
