"""The ``twokeys`` command line: a thin layer over the library.

Every user mistake surfaces as a one-line ``error: ...`` on stderr and exit status 1
(2 for bad usage, 130 when interrupted), never a traceback.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import click

from twokeys import __version__
from twokeys.cliutil import err, index_option, out, progress_bars, shown
from twokeys.errors import TwokeysError
from twokeys.optimize import DERIVED
from twokeys.registry import resolve
from twokeys.sanitize import for_terminal

# `twokeys --help` loads click and this module: every command imports what it alone
# needs when it runs (the engine, the indexer, the checker, rich tables), and the
# commands whose options' defaults need more than that (index, search, and those of
# other modules) are loaded only when named (_Group.LAZY).
if TYPE_CHECKING:
    from twokeys.store.check import CheckReport


class _Group(click.Group):
    """Turns library errors into one clean line; loads the commands of other modules
    when they are named (their help line is kept here, checked against theirs)."""

    #: command name -> ("module:attribute", the first paragraph of its help)
    LAZY: ClassVar[dict[str, tuple[str, str]]] = {
        "index": (
            "twokeys.cli_index:index",
            "Index SOURCE (a folder, or a .jsonl / BEIR corpus file) into --index.",
        ),
        "search": ("twokeys.cli_search:search", "Search the index for QUERY."),
        "ask": ("twokeys.cli_ask:ask", "Answer QUESTION from the index, citing its sources."),
        "eval": (
            "twokeys.evaluation.cli:eval_command",
            "Evaluate retrievers on the BEIR-layout collection in DATASET_DIR.",
        ),
        "eval-answers": (
            "twokeys.evaluation.answers_cli:eval_answers",
            "Score 'ask' on the questions of QA_FILE (JSONL with gold documents and facts).",
        ),
        "calibrate-verdict": (
            "twokeys.evaluation.verdicts_cli:calibrate_verdict",
            "Measure how often the model (--llm) says the passages answer, on QA_FILE's questions.",
        ),
        "serve": (
            "twokeys.server.cli:serve",
            "Serve the index over HTTP: /search, /ask, /documents, /v1 (OpenAI), / (a page).",
        ),
        "mcp": (
            "twokeys.server.cli:mcp",
            "Serve the index to MCP clients: tools search, ask, get_document (and put_document "
            "with --allow-write); documents as resources.",
        ),
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.LAZY})

    #: commands that do one short piece of work and exit (see _one_blas_thread)
    ONE_SHOT: ClassVar[frozenset[str]] = frozenset({"search"})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.ONE_SHOT:
            _one_blas_thread()
        if cmd_name not in self.commands and cmd_name in self.LAZY:
            command = resolve(self.LAZY[cmd_name][0])
            assert isinstance(command, click.Command)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list, without importing the commands not yet loaded."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for name in names:
            command = self.commands.get(name) or click.Command(name, help=self.LAZY[name][1])
            if not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        shown, warnings.showwarning = warnings.showwarning, _show_warning
        try:
            return super().invoke(ctx)
        except TwokeysError as exc:
            click.echo(f"error: {for_terminal(str(exc))}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            click.echo("interrupted; any previous index is unchanged", err=True)
            sys.exit(130)
        finally:
            warnings.showwarning = shown


#: the variables a user sets to size numpy's BLAS thread pool
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _one_blas_thread() -> None:
    """Load numpy with a BLAS of one thread, unless it is loaded or the user sized it.

    OpenBLAS starts a thread per core when numpy loads, and they spin before they
    sleep: in a process that runs one search (a product of one query vector at most)
    that is CPU time and nothing else, a third of numpy's import on two cores. The
    variable is set only while numpy loads, so no child process inherits it.
    """
    if "numpy" in sys.modules or any(name in os.environ for name in BLAS_THREADS):
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]


def _show_warning(message: Warning | str, *_: object, **__: object) -> None:
    """A library warning (a missing HNSW graph, ...) as one ``warning: ...`` line."""
    err.print(f"[yellow]warning:[/yellow] {shown(message)}", highlight=False)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="twokeys")
def main() -> None:
    """Hybrid lexical + dense retrieval over your documents."""


@main.command()
@index_option
@click.option(
    "--derive",
    type=click.Choice(DERIVED),
    multiple=True,
    default=("hnsw",),
    show_default=True,
    help="Build this derived structure if the index lacks it (repeatable).",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
def optimize(index_path: Path, derive: tuple[str, ...], quiet: bool) -> None:
    """Build an index's derived structures (HNSW graph, LSI factors); searches never do."""
    from twokeys.optimize import optimize as build_optimized

    with progress_bars(quiet) as stage:
        built = build_optimized(index_path, derive, progress=stage)
    out.print(f"built {', '.join(built)}" if built else "nothing to build")


@main.command()
@index_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def info(index_path: Path | str, as_json: bool) -> None:
    """Show an index's counts, sizes and parameters, and whether its files match them."""
    from twokeys.store.check import check_index
    from twokeys.store.contract import open_reader, reader_info

    # The store's own report, not an Index: an index an older analyzer built can't be
    # searched, but its counts and parameters can be shown (with what to run).
    if isinstance(index_path, str):  # a database: its own transactions keep it whole
        backend = open_reader(index_path)
        try:
            data = reader_info(backend)
        finally:
            backend.close()
        if as_json:
            out.print_json(json.dumps(data))
        else:
            _print_info(data)
        return
    verdict = check_index(index_path, deep=False)
    try:
        backend = open_reader(index_path)
        try:
            data = reader_info(backend)
        finally:
            backend.close()
    except TwokeysError:
        if verdict.ok or verdict.manifest_damaged():
            raise  # no manifest: its error says why
        data = {}
    if data:
        data["check"] = {
            "verdict": verdict.verdict(),
            "problems": [str(p) for p in verdict.problems],
        }
        if as_json:
            out.print_json(json.dumps(data))
        else:
            _print_info(data)
    if not verdict.ok:
        _print_problems(verdict)
        err.print(f"run 'twokeys check --index {index_path}' for a full check")
        sys.exit(1)


def _older_analyzer(analyzer: dict[str, Any]) -> str:
    """A note when an older twokeys' analyzer built the index (it can't be searched
    until ``twokeys index`` re-derives its lexical part), else nothing."""
    from twokeys.analysis import ANALYZER_VERSION

    version = analyzer.get("version")
    if isinstance(version, int) and version < ANALYZER_VERSION:
        return (
            f" (older than this twokeys' v{ANALYZER_VERSION}: run `twokeys index` on its "
            "source again to search it; chunks and vectors are kept)"
        )
    return ""


def _note_older_analyzer(index_path: Path) -> None:
    """Whole files, but built by an older analyzer: say so (the exit status stays 0:
    nothing is damaged, and ``twokeys index`` brings it up to date without re-embedding)."""
    from twokeys.store.contract import open_reader

    try:
        backend = open_reader(index_path)
    except TwokeysError:  # nothing to read: the check above said so
        return
    try:
        note = _older_analyzer(backend.manifest.analyzer.to_dict())
    finally:
        backend.close()
    if note:
        err.print(f"note: analyzer{note}", highlight=False)


def _print_problems(report: CheckReport) -> None:
    for problem in report.problems:
        err.print(f"[red]damaged:[/red] {shown(problem)}", highlight=False)


def _print_info(data: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(title=f"twokeys index {shown(data['path'])}", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value")
    counts = data["counts"]
    table.add_row("documents", f"{counts['documents']:,}")
    table.add_row("chunks", f"{counts['chunks']:,}")
    table.add_row("terms", f"{counts['terms']:,}")
    table.add_row("postings", f"{counts['postings']:,}")
    table.add_row("size on disk", f"{data['size_bytes'] / 1e6:.2f} MB")
    enc = data["encoder"]
    table.add_row("encoder", f"{enc['id']} ({enc['dtype']}, dim {enc['dim']})" if enc else "none")
    vectors = data["vector_search"]
    used = vectors["used"]
    if "hnsw" in vectors:
        h = vectors["hnsw"]
        used += f" M={h['m']} ef_construction={h['ef_construction']} ef_search={h['ef_search']}"
    table.add_row("vector index", f"{used} ({vectors['reason']})")
    table.add_row("bm25", f"k1={data['bm25']['k1']} b={data['bm25']['b']}")
    analyzer = data["analyzer"]
    table.add_row(
        "analyzer",
        f"{analyzer['name']} v{analyzer['version']} stemmer={analyzer['stemmer']} "
        f"stopwords={analyzer['stopwords']}" + _older_analyzer(analyzer),
    )
    table.add_row("chunker", ", ".join(f"{k}={v}" for k, v in data["chunker"].items()))
    table.add_row("format", f"v{data['format_version']}, {data['generation']}")
    table.add_row("built", f"{data['created_at']} by twokeys {data['twokeys_version']}")
    table.add_row("check", data["check"]["verdict"])
    out.print(table)


@main.command()
@index_option
@click.option("--repair", is_flag=True, help="Rebuild what is damaged from the stored chunks.")
@click.option("--quick", is_flag=True, help="Sizes and counts only (what 'info' checks).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
def check(index_path: Path, repair: bool, quick: bool, quiet: bool) -> None:
    """Check that an index's files match its manifest; with --repair, rebuild the damage.

    Exit status 0 when the index is whole (or was repaired), 1 when damage remains.
    """
    from twokeys.repair import repair_index
    from twokeys.store.check import check_index

    if not repair:
        found = check_index(index_path, deep=not quick)
        _print_problems(found)
        out.print(f"{index_path}: {found.verdict()}")
        if not found.ok:
            err.print(f"run 'twokeys check --repair --index {index_path}' to rebuild it")
            sys.exit(1)
        _note_older_analyzer(index_path)
        return
    with progress_bars(quiet) as stage:
        result = repair_index(index_path, progress=stage)
    _print_problems(result.found)
    if result.rebuilt is not None:
        rebuilt = result.rebuilt
        out.print(
            f"repaired: rebuilt {rebuilt.documents} documents, {rebuilt.chunks} chunks from the "
            f"stored chunks ({rebuilt.embedded_chunks} chunks embedded again)"
        )
    after = check_index(index_path, deep=True)
    out.print(f"{index_path}: {after.verdict()}")
    if result.kept_generations:
        err.print(f"kept {len(result.kept_generations)} older generation(s) that readers hold")
    if not after.ok:
        sys.exit(1)


if __name__ == "__main__":  # pragma: no cover
    main()
