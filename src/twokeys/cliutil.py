"""Pieces every ``twokeys`` command shares: consoles, options defined once (``--index``,
``--encoder``, the model options), progress bars."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from twokeys.sanitize import for_terminal, from_argv
from twokeys.store.postgres.location import index_location

if TYPE_CHECKING:  # the model clients (httpx), rich and progress bars load when used
    from rich.console import Console

    from twokeys.llm.base import LLM

DEFAULT_INDEX = "kb.twokeys"


class IndexLocation(click.ParamType):  # type: ignore[type-arg, unused-ignore]
    """An index directory (a Path), or a ``postgresql://`` location kept as a string."""

    name = "index"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> str | Path:
        return index_location(value if isinstance(value, Path) else str(value))


class _LazyConsole:
    """A rich ``Console`` made on first use: importing rich costs a command that prints
    without it (``--help``, a search) a sixth of its start."""

    def __init__(self, *, stderr: bool) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    def get(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=self._stderr, highlight=False, soft_wrap=True)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.get(), name)


_err = _LazyConsole(stderr=True)
err = cast("Console", _err)
out = cast("Console", _LazyConsole(stderr=False))

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

_Command = TypeVar("_Command", bound=Callable[..., Any])


def _model_options() -> tuple[Callable[[_Command], _Command], ...]:
    from twokeys.llm.http import DEFAULT_TIMEOUT
    from twokeys.llm.spec import SPEC_FORMS

    return (
        click.option(
            "--llm",
            "llm_spec",
            envvar="TWOKEYS_LLM",
            default=None,
            help=f"Model for answers: {SPEC_FORMS} (env TWOKEYS_LLM). Without it answers are "
            "extractive.",
        ),
        click.option(
            "--base-url",
            envvar="TWOKEYS_BASE_URL",
            default=None,
            help="The model server's address, e.g. http://127.0.0.1:8080/v1 "
            "(env TWOKEYS_BASE_URL).",
        ),
        click.option(
            "--timeout",
            type=click.FloatRange(min=0.1),
            default=DEFAULT_TIMEOUT,
            show_default=True,
            help="Seconds to wait for the model (per attempt; between tokens when streaming).",
        ),
    )


def model_options(command: _Command) -> _Command:
    """``--llm``, ``--base-url`` and ``--timeout`` (parameters ``llm_spec``, ``base_url``,
    ``timeout``): the model behind ``ask``, ``eval-answers``, ``serve`` and ``mcp``."""
    for option in reversed(_model_options()):
        command = option(command)
    return command


def make_llm(
    spec: str | None, base_url: str | None, timeout: float, *, context_tokens: int | None = None
) -> LLM | None:
    """The model :func:`model_options` name, or None (extractive answers) without ``--llm``."""
    if not spec:
        return None
    from twokeys.llm.spec import from_spec

    return from_spec(spec, base_url=base_url, timeout=timeout, context_tokens=context_tokens)


def shown(text: object) -> str:
    """Untrusted text (a document's title, a file name, a message naming them) for a
    rich console line: control characters replaced, markup brackets escaped."""
    from rich.markup import escape

    return escape(for_terminal(str(text)))


def safe_echo(text: str, *, nl: bool = True, err: bool = False) -> None:
    """``click.echo`` of untrusted multi-line text (an answer, a prompt): escape
    sequences in documents or a model's output never reach the terminal."""
    click.echo(for_terminal(text, multiline=True), nl=nl, err=err)


def query_argument(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """A query from the command line as valid text (click callback).

    An argument that is not valid UTF-8 reaches Python with its bad bytes as lone
    surrogates; they become U+FFFD, with a warning, so the encoder never sees them.
    """
    clean = from_argv(value)
    if clean != value:
        err.print(
            "[yellow]warning:[/yellow] the query is not valid UTF-8; "
            "its undecodable bytes are replaced by U+FFFD"
        )
    return clean


StageFactory = Callable[[str, int | None], Callable[[int], None]]


class _PlainProgress:
    """Progress as plain lines: ``name: 1,200/5,183 (23%), 12 s``."""

    def __init__(self, write: Callable[[str], None], clock: Callable[[], float] = time.monotonic):
        self.write = write
        self.clock = clock
        self.name = ""
        self.total: int | None = None
        self.done = 0
        self.started = 0.0
        self.last = 0.0

    def stage(self, name: str, total: int | None) -> Callable[[int], None]:
        self.finish()
        self.name, self.total, self.done = name, total, 0
        self.started = self.last = self.clock()
        self.write(f"{name}: started" + (f" ({total:,})" if total is not None else ""))
        return self.advance

    def advance(self, n: int) -> None:
        self.done += n
        now = self.clock()
        if now - self.last >= PLAIN_INTERVAL:
            self.last = now
            self.write(f"{self.name}: {self._count()}, {now - self.started:.0f} s")

    def finish(self) -> None:
        if self.name:
            self.write(f"{self.name}: done, {self._count()} in {self.clock() - self.started:.1f} s")
            self.name = ""

    def _count(self) -> str:
        if self.total:
            return f"{self.done:,}/{self.total:,} ({100 * self.done // self.total}%)"
        return f"{self.done:,}"


PLAIN_INTERVAL = 10.0  # seconds between plain progress lines within a stage


@contextmanager
def progress_bars(quiet: bool) -> Iterator[StageFactory]:
    """``stage(name, total)`` opens a bar and returns its ``advance(n)``; stages run in turn.

    When stderr is not a terminal (a log file, a CI job) there are no bars to redraw:
    each stage prints plain lines instead, when it starts, every ten seconds and when it
    ends.
    """
    if quiet:
        yield lambda _name, _total: lambda _n: None
        return
    if not err.is_terminal:
        lines = _PlainProgress(lambda line: click.echo(line, err=True))
        try:
            yield lines.stage
        finally:
            lines.finish()
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        SpinnerColumn(),
        TextColumn("{task.description:<22}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=_err.get(), transient=False) as bar:

        def stage(name: str, total: int | None) -> Callable[[int], None]:
            # stages run one after another: starting one finishes the ones before it
            for previous in bar.tasks:
                if not previous.finished:
                    bar.update(previous.id, total=previous.completed)
                    bar.stop_task(previous.id)
            task = bar.add_task(name, total=total)
            return lambda n: bar.advance(task, n)

        yield stage
