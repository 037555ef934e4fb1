"""``twokeys index --from LOCAL_INDEX --index postgresql://...``: copy an embedded index
(indexing a source into PostgreSQL is the one indexer's, :func:`twokeys.indexer.build_index`)."""

from __future__ import annotations

from pathlib import Path

import click

from twokeys.cliutil import progress_bars
from twokeys.indexer import IndexReport


def copy_postgres(location: Path | str, from_index: Path, quiet: bool) -> IndexReport:
    if not isinstance(location, str):
        raise click.UsageError("--from copies into a postgresql:// --index only")
    from twokeys.store.postgres.indexer import copy_into_postgres

    with progress_bars(quiet) as stage:
        return copy_into_postgres(from_index, location, progress=stage)
