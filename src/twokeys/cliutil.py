"""Pieces every ``twokeys`` command shares: consoles, the ``--index`` option, progress bars."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from twokeys.store.postgres.location import index_location

DEFAULT_INDEX = "kb.twokeys"


class IndexLocation(click.ParamType):  # type: ignore[type-arg, unused-ignore]
    """An index directory (a Path), or a ``postgresql://`` location kept as a string."""

    name = "index"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> str | Path:
        return index_location(value if isinstance(value, Path) else str(value))


err = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)

index_option = click.option(
    "--index",
    "index_path",
    type=IndexLocation(),
    default=DEFAULT_INDEX,
    show_default=True,
    envvar="TWOKEYS_INDEX",
    help="Index directory, or postgresql://... (env TWOKEYS_INDEX).",
)

encoder_option = click.option(
    "--encoder",
    default="minilm",
    show_default=True,
    envvar="TWOKEYS_ENCODER",
    help="Dense encoder: minilm, ollama:MODEL or openai:MODEL.",
)

StageFactory = Callable[[str, int | None], Callable[[int], None]]


@contextmanager
def progress_bars(quiet: bool) -> Iterator[StageFactory]:
    """``stage(name, total)`` opens a bar and returns its ``advance(n)``; stages run in turn."""
    if quiet:
        yield lambda _name, _total: lambda _n: None
        return
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description:<22}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=err, transient=False) as bar:

        def stage(name: str, total: int | None) -> Callable[[int], None]:
            # stages run one after another: starting one finishes the ones before it
            for previous in bar.tasks:
                if not previous.finished:
                    bar.update(previous.id, total=previous.completed)
                    bar.stop_task(previous.id)
            task = bar.add_task(name, total=total)
            return lambda n: bar.advance(task, n)

        yield stage
