"""The ``twokeys`` command line: a thin layer over the library.

Every user mistake surfaces as a one-line ``error: ...`` on stderr and exit status 1
(2 for bad usage, 130 when interrupted), never a traceback.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import click

from twokeys import __version__
from twokeys.analysis import STEMMERS, STOPWORD_SETS, AnalyzerSpec
from twokeys.chunking import ChunkerConfig
from twokeys.cliutil import (
    encoder_option,
    err,
    index_option,
    out,
    progress_bars,
    query_argument,
    shown,
)
from twokeys.dense.selection import DEFAULT_THRESHOLD, KINDS, VectorIndexOptions
from twokeys.errors import TwokeysError
from twokeys.ingest.limits import MAX_FILE_BYTES
from twokeys.lexical.bm25 import BM25Params
from twokeys.optimize import DERIVED
from twokeys.registry import resolve
from twokeys.request import DEFAULTS, MODES, RRF_FUSIONS, SearchRequest
from twokeys.retrievers.hybrid import FUSIONS
from twokeys.sanitize import for_terminal
from twokeys.text.passages import heading_line

# A command imports what it alone needs when it runs (the indexer, the checker, rich
# tables, and the engine's backends), so `twokeys --help` and a bm25 search stay quick;
# the commands of other modules load only when named (_Group.LAZY).
if TYPE_CHECKING:
    from twokeys.ingest import SkippedFile
    from twokeys.store.check import CheckReport
    from twokeys.types import Hit

SEARCH_K = 5  # a terminal shows fewer hits than the library returns (DEFAULTS["k"])


class _Group(click.Group):
    """Turns library errors into one clean line; loads the commands of other modules
    when they are named (their help line is kept here, checked against theirs)."""

    #: command name -> ("module:attribute", the first paragraph of its help)
    LAZY: ClassVar[dict[str, tuple[str, str]]] = {
        "ask": ("twokeys.rag.cli:ask", "Answer QUESTION from the index, citing its sources."),
        "eval": (
            "twokeys.evaluation.cli:eval_command",
            "Evaluate retrievers on the BEIR-layout collection in DATASET_DIR.",
        ),
        "eval-answers": (
            "twokeys.evaluation.answers_cli:eval_answers",
            "Score 'ask' on the questions of QA_FILE (JSONL with gold documents and facts).",
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

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
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


def _show_warning(message: Warning | str, *_: object, **__: object) -> None:
    """A library warning (a missing HNSW graph, ...) as one ``warning: ...`` line."""
    err.print(f"[yellow]warning:[/yellow] {shown(message)}", highlight=False)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="twokeys")
def main() -> None:
    """Hybrid lexical + dense retrieval over your documents."""


@main.command()
@click.argument("source", type=click.Path(path_type=Path), required=False)
@index_option
@click.option(
    "--from",
    "from_index",
    type=click.Path(path_type=Path),
    default=None,
    help="Copy this embedded index into a postgresql:// --index (nothing is re-embedded).",
)
@encoder_option
@click.option("--no-dense", is_flag=True, help="Build a lexical-only index (no embeddings).")
@click.option(
    "--max-file-mb",
    type=click.FloatRange(min=0, min_open=True),
    default=MAX_FILE_BYTES / (1 << 20),
    show_default=True,
    help="Skip (and name) files bigger than this; JSONL corpora are exempt.",
)
@click.option("--float16", is_flag=True, help="Store vectors as float16 (half the size).")
@click.option("--k1", type=float, default=BM25Params().k1, show_default=True, help="BM25 k1.")
@click.option("--b", "b", type=float, default=BM25Params().b, show_default=True, help="BM25 b.")
@click.option(
    "--chunk-tokens",
    type=int,
    default=ChunkerConfig().max_tokens,
    show_default=True,
    help="Chunk cap.",
)
@click.option(
    "--chunk-overlap",
    type=int,
    default=ChunkerConfig().overlap_tokens,
    show_default=True,
    help="Overlap.",
)
@click.option(
    "--stemmer", type=click.Choice(STEMMERS), default=AnalyzerSpec().stemmer, show_default=True
)
@click.option(
    "--stopwords",
    type=click.Choice(list(STOPWORD_SETS)),
    default=AnalyzerSpec().stopwords,
    show_default=True,
)
@click.option(
    "--vector-index",
    type=click.Choice(KINDS),
    default=VectorIndexOptions().kind,
    show_default=True,
    help=f"Dense search: exact, an HNSW graph (needs twokeys[ann]), or auto "
    f"(HNSW from {DEFAULT_THRESHOLD:,} chunks).",
)
@click.option(
    "--replace",
    is_flag=True,
    help="Make an index built from another source an index of SOURCE alone (its other "
    "documents are removed).",
)
@click.option(
    "--derive",
    type=click.Choice(DERIVED[1:]),
    multiple=True,
    help="Also build this derived structure (repeatable); the HNSW graph is built "
    "whenever the vector index is HNSW.",
)
@click.option(
    "--watch",
    is_flag=True,
    help="Then keep the index current as SOURCE changes, until Ctrl-C (needs twokeys[watch]).",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
def index(
    source: Path | None,
    index_path: Path | str,
    from_index: Path | None,
    encoder: str,
    no_dense: bool,
    max_file_mb: float,
    float16: bool,
    k1: float,
    b: float,
    chunk_tokens: int,
    chunk_overlap: int,
    stemmer: str,
    stopwords: str,
    vector_index: str,
    replace: bool,
    derive: tuple[str, ...],
    watch: bool,
    quiet: bool,
) -> None:
    """Index SOURCE (a folder, or a .jsonl / BEIR corpus file) into --index.

    Re-running on the same source embeds only new or changed files and drops deleted ones.
    An index mirrors one source: indexing another one into it is refused when that would
    remove documents, unless --replace.
    """
    from twokeys.indexer import IndexOptions, build_index

    options = IndexOptions(
        analyzer=AnalyzerSpec(stemmer=stemmer, stopwords=stopwords),
        bm25=BM25Params(k1=k1, b=b),
        chunker=ChunkerConfig(
            max_tokens=chunk_tokens,
            overlap_tokens=chunk_overlap,
            min_tokens=min(ChunkerConfig().min_tokens, chunk_tokens // 4),
        ),
        encoder=None if no_dense else encoder,
        dtype="float16" if float16 else "float32",
        vector_index=VectorIndexOptions(kind=vector_index),
        derived=derive,
    )

    def warn(item: SkippedFile) -> None:
        err.print(f"[yellow]warning:[/yellow] {shown(item)}")

    if from_index is not None:
        if source is not None:
            raise click.UsageError("give either SOURCE or --from LOCAL_INDEX, not both")
        if not isinstance(index_path, str):
            raise click.UsageError("--from copies into a postgresql:// --index only")
        from twokeys.migrate import copy_into_postgres

        with progress_bars(quiet) as stage:
            report = copy_into_postgres(from_index, index_path, progress=stage)
    elif source is None:
        raise click.UsageError("Missing argument 'SOURCE'.")
    else:
        with progress_bars(quiet) as stage:
            report = build_index(
                source,
                index_path,
                options,
                progress=stage,
                on_skip=warn,
                replace_source=replace,
                max_file_bytes=int(max_file_mb * (1 << 20)),
            )
    if report.full_rebuild_reason:
        err.print(f"full rebuild: {shown(report.full_rebuild_reason)}")
    out.print(
        f"indexed {report.documents} documents, {report.chunks} chunks into {shown(index_path)} "
        f"({report.added} added, {report.changed} changed, {report.unchanged} unchanged, "
        f"{report.removed} removed; {report.embedded_chunks} chunks embedded; "
        f"{sum(item.count for item in report.skipped)} skipped"
        + (f", {len(report.warnings)} with warnings" if report.warnings else "")
        + f") in {report.seconds:.1f}s"
        + (f"; vector index: {report.vector_index}" if report.vector_index != "none" else "")
    )
    if watch:
        if source is None or from_index is not None:
            raise click.UsageError("--watch keeps an index of SOURCE current: give SOURCE")
        from twokeys.watch import watch_folder

        watch_folder(source, index_path, options, on_skip=warn, echo=lambda s: err.print(shown(s)))


@main.command()
@click.argument("query", callback=query_argument)
@index_option
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default=None,
    help=f"A retriever, or a shorthand such as hybrid-rrf or hybrid+e5 "
    f"[default: {DEFAULTS['retriever']}].",
)
@click.option(
    "-k", "k", type=click.IntRange(min=1), default=SEARCH_K, show_default=True, help="Hits shown."
)
@click.option(
    "--candidates",
    type=click.IntRange(min=1),
    default=None,
    help=f"Per-retriever depth fused in hybrid mode [default: {DEFAULTS['candidates']}].",
)
@click.option(
    "--fusion",
    type=click.Choice(FUSIONS),
    default=None,
    help=f"How hybrid mode fuses BM25 and dense rankings [default: {DEFAULTS['fusion']}].",
)
@click.option(
    "--rrf-k",
    type=float,
    default=None,
    help=f"RRF constant k, for the rrf fusions [default: {DEFAULTS['rrf_k']:g}].",
)
@click.option(
    "--lexical-weight",
    type=float,
    default=None,
    help="BM25's weight in the minmax, zscore, dbsf and chance fusions "
    f"[default: {DEFAULTS['lexical_weight']:g}].",
)
@click.option(
    "--rerank",
    default=None,
    envvar="TWOKEYS_RERANK",
    help="Re-order the top hits with a reranker: e5, proximity or cross-encoder:PATH "
    "(env TWOKEYS_RERANK) [default: none].",
)
@click.option(
    "--rerank-top",
    type=click.IntRange(min=1),
    default=None,
    help=f"How many of the top hits --rerank re-scores [default: {DEFAULTS['rerank_top']}].",
)
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="FILTER",
    help="Only documents that match, e.g. 'path:policies/*', 'kind:markdown', 'id:a.md', "
    "'lang=en', 'version>=2', 'updated<2024-06-01' (repeatable; all must match).",
)
@click.option("--explain", is_flag=True, help="Show why each hit ranked where it did.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def search(
    query: str,
    index_path: Path | str,
    mode: str | None,
    k: int,
    candidates: int | None,
    fusion: str | None,
    rrf_k: float | None,
    lexical_weight: float | None,
    rerank: str | None,
    rerank_top: int | None,
    filters: tuple[str, ...],
    explain: bool,
    as_json: bool,
) -> None:
    """Search the index for QUERY."""
    from twokeys.engine import open_index

    request = SearchRequest.parse(
        query,
        mode,
        k=k,
        candidates=candidates,
        fusion=fusion,
        rrf_k=rrf_k,
        lexical_weight=lexical_weight,
        reranker=rerank,
        rerank_top=rerank_top,
        filters=filters,
        explain=explain or as_json,
    )
    with open_index(index_path) as kb:
        hits = kb.search(request)
    if as_json:
        out.print_json(json.dumps([h.to_dict() for h in hits], ensure_ascii=False))
        return
    if not hits:
        out.print("no results")
        return
    for hit in hits:
        _print_hit(hit, explain, request.rrf_k if request.fusion in RRF_FUSIONS else None)


def _print_hit(hit: Hit, explain: bool, rrf_k: float | None) -> None:
    where = shown(heading_line(hit.chunk.heading_path, hit.title))
    out.print(
        f"[bold]{hit.rank}.[/bold] {shown(hit.cite)}  [dim]{where}[/dim]  score={hit.score:.4f}"
    )
    snippet = for_terminal(" ".join(hit.text.split()))
    out.print(f"   {snippet[:240]}{'…' if len(snippet) > 240 else ''}", markup=False)
    if not explain:
        return
    for ev in hit.evidence:
        line = f"   · {ev.retriever:<6} rank {ev.rank:>3}  "
        if ev.retriever == "dense":
            line += f"cosine {ev.score:.4f}"
        else:
            line += f"score {ev.score:.4f}"
        if ev.fused and rrf_k is not None:
            weight = f"{ev.weight:.2f}*" if ev.weight != 1.0 else ""
            line += f"  rrf {weight}1/({rrf_k:g}+{ev.rank}) = {ev.fused:.5f}"
        elif ev.fused:
            line += f"  weight {ev.weight:.2f} x normalised = {ev.fused:.4f}"
        if ev.matched_terms:
            terms = for_terminal(", ".join(f"{t} {w:.2f}" for t, w in ev.matched_terms))
            line += f"  terms: {terms}"
        out.print(line, markup=False)
    if hit.evidence and len(hit.evidence) < 2 and any(e.fused for e in hit.evidence):
        missing = {"bm25", "dense"} - {e.retriever for e in hit.evidence}
        out.print(f"   · {', '.join(sorted(missing))}: not in its top candidates", markup=False)


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
    from twokeys.engine import open_index
    from twokeys.store.check import check_index

    if isinstance(index_path, str):  # a database: its own transactions keep it whole
        with open_index(index_path) as kb:
            data = kb.info()
        if as_json:
            out.print_json(json.dumps(data))
        else:
            _print_info(data)
        return
    verdict = check_index(index_path, deep=False)
    try:
        with open_index(index_path) as kb:
            data = kb.info()
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
        f"stopwords={analyzer['stopwords']}",
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
