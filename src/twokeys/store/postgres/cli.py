"""``twokeys index`` with a ``postgresql://`` --index: from a source, or ``--from`` an
embedded index."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from twokeys.cliutil import progress_bars
from twokeys.indexer import IndexOptions, IndexReport
from twokeys.ingest import SkippedFile


def index_postgres(
    source: Path | None,
    location: Path | str,
    from_index: Path | None,
    options: IndexOptions,
    quiet: bool,
    warn: Callable[[SkippedFile], None],
) -> IndexReport:
    if not isinstance(location, str):
        raise click.UsageError("--from copies into a postgresql:// --index only")
    if (source is None) == (from_index is None):
        raise click.UsageError("give either SOURCE or --from LOCAL_INDEX, not both or neither")
    from twokeys.store.postgres.indexer import copy_into_postgres, index_into_postgres

    with progress_bars(quiet) as stage:
        if from_index is not None:
            return copy_into_postgres(from_index, location, progress=stage)
        assert source is not None
        return index_into_postgres(source, location, options, progress=stage, on_skip=warn)
