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
from twokeys.indexer import IndexReport, ProgressFactory, _noop_progress
from twokeys.store.check import CheckReport, check_index
from twokeys.store.local import DATABASE, MANIFEST, read_manifest, remove_stale, write_lock
from twokeys.store.localwriter import LocalWriter


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
        old = read_manifest(path)
        if old.encoder is not None:
            encoder = encoder or get_encoder(old.encoder.name)
            if (encoder.id, encoder.fingerprint()) != (old.encoder.id, old.encoder.fingerprint):
                raise EncoderMismatchError(
                    f"index was built with encoder {old.encoder.id}, not {encoder.id}: "
                    "repair with the original encoder or re-index"
                )
        # every document kept, nothing put: the writer analyses all chunks again and
        # embeds again the vectors the check found damaged
        with LocalWriter(
            path, None, encoder=encoder, progress=stage, lock=False, repaired=found.problems
        ) as writer:
            report = IndexReport(unchanged=len(writer.stored()), repaired=list(found.problems))
            committed = writer.commit()
        report.committed = committed.written
        report.documents = int(committed.counts["documents"])
        report.chunks = int(committed.counts["chunks"])
        report.embedded_chunks = committed.embedded
        report.vector_index = committed.vector_index
        return RepairReport(found, report, tuple(remove_stale(path)))
