"""``twokeys index``: build or update an index from a folder or a corpus file.

Loaded when the command is named (``cli._Group.LAZY``): its options' defaults come from
the analyzer, the chunker and BM25, which ``twokeys --help`` and a search don't need.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from twokeys.analysis import STEMMERS, STOPWORD_SETS, AnalyzerSpec
from twokeys.chunking import ChunkerConfig
from twokeys.cliutil import encoder_option, err, index_option, out, progress_bars, shown
from twokeys.dense.selection import DEFAULT_THRESHOLD, KINDS, VectorIndexOptions
from twokeys.ingest.limits import MAX_FILE_BYTES
from twokeys.lexical.bm25 import BM25Params
from twokeys.optimize import DERIVED

if TYPE_CHECKING:
    from twokeys.ingest import SkippedFile


@click.command()
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
