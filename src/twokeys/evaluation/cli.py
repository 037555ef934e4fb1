"""``twokeys eval``: score retrievers on a BEIR-layout collection and compare them.

Prints one table (retriever x measure, ms/query), a paired comparison of two retrievers
with significance tests and, with ``--disagreements``, the queries where BM25 and dense
disagree most. ``--report`` writes the same as one HTML page, ``--save-runs`` TREC run
files, ``--json`` everything as JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.markup import escape
from rich.table import Table

from twokeys.cliutil import encoder_option, err, out, progress_bars
from twokeys.engine import open_index
from twokeys.errors import TwokeysError
from twokeys.evaluation.beir import load_collection
from twokeys.evaluation.disagreements import RankedDoc
from twokeys.evaluation.experiment import (
    Experiment,
    default_index_path,
    ensure_index,
    run_retrievers,
    score_experiment,
    write_trec_runs,
)
from twokeys.evaluation.measures import PRIMARY, label
from twokeys.evaluation.report import render_report
from twokeys.evaluation.significance import PairedComparison
from twokeys.filters import parse_filters
from twokeys.optimize import DERIVED, optimize
from twokeys.request import MODES, VECTOR_MODES

DEFAULT_RETRIEVERS = "bm25,dense,hybrid"
DISAGREEMENT_PAIR = ("bm25", "dense")
T = TypeVar("T")
ALPHA = 0.05  # only for the wording of the verdict line; the p-values are printed


def _names(value: str, option: str) -> list[str]:
    names = list(dict.fromkeys(n.strip() for n in value.split(",") if n.strip()))
    for name in names:
        if name not in MODES:
            raise click.BadParameter(
                f"{name!r} is not a retriever; choose from {', '.join(MODES)}", param_hint=option
            )
    if not names:
        raise click.BadParameter("no retriever named", param_hint=option)
    return names


def _retrievers(value: str | None, no_dense: bool) -> list[str]:
    names = _names(value or ("bm25" if no_dense else DEFAULT_RETRIEVERS), "--retrievers")
    needs_vectors = [n for n in names if n in VECTOR_MODES]
    if no_dense and needs_vectors:
        raise click.BadParameter(
            f"{', '.join(needs_vectors)} need dense vectors, which --no-dense leaves out",
            param_hint="--retrievers",
        )
    return names


def _compare_pair(value: str | None, names: list[str]) -> tuple[str, str] | None:
    if value is None:
        if "bm25" in names and "hybrid" in names:
            return ("bm25", "hybrid")
        return (names[0], names[1]) if len(names) >= 2 else None
    pair = _names(value, "--compare")
    if len(pair) != 2:
        raise click.BadParameter("expected two different retrievers, A,B", param_hint="--compare")
    for name in pair:
        if name not in names:
            raise click.BadParameter(f"{name!r} is not in --retrievers", param_hint="--compare")
    return (pair[0], pair[1])


@click.command("eval")
@click.argument("dataset_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("--split", default="test", show_default=True, help="Qrels split: qrels/SPLIT.tsv.")
@click.option(
    "--retrievers",
    default=None,
    help=f"Comma list of {', '.join(MODES)} [default: {DEFAULT_RETRIEVERS}; bm25 with --no-dense]",
)
@click.option(
    "--index",
    "index_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Index to reuse or build [default: ~/.cache/twokeys/eval/<name>-<hash>.twokeys, "
    "under $TWOKEYS_CACHE when set].",
)
@encoder_option
@click.option("--no-dense", is_flag=True, help="BM25 only: no embeddings.")
@click.option("--rebuild", is_flag=True, help="Update the index from the corpus even if it exists.")
@click.option(
    "--compare",
    default=None,
    metavar="A,B",
    help="Paired comparison of B against baseline A [default: bm25,hybrid when both run, "
    "else the first two retrievers].",
)
@click.option(
    "--disagreements",
    type=click.IntRange(min=1),
    is_flag=False,
    flag_value=10,
    default=None,
    metavar="[N]",
    help="Show the N (default 10) queries where bm25 and dense disagree most.",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write an HTML report (tables, per-query delta plot, disagreements).",
)
@click.option(
    "--save-runs",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Write one TREC run file per retriever into this folder.",
)
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="FILTER",
    help="Search only documents that match (repeatable; as for 'twokeys search').",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
def eval_command(
    dataset_dir: Path,
    split: str,
    retrievers: str | None,
    index_path: Path | None,
    encoder: str,
    no_dense: bool,
    rebuild: bool,
    compare: str | None,
    disagreements: int | None,
    report_path: Path | None,
    save_runs: Path | None,
    filters: tuple[str, ...],
    as_json: bool,
    quiet: bool,
) -> None:
    """Evaluate retrievers on the BEIR-layout collection in DATASET_DIR.

    DATASET_DIR holds corpus.jsonl, queries.jsonl and qrels/<split>.tsv. The corpus is
    indexed once and the index reused. Measures (ir-measures): nDCG@10, Recall@10,
    Recall@100, MRR@10, MAP, over documents (chunk hits collapse to their document).
    """
    names = _retrievers(retrievers, no_dense)
    parse_filters(filters)  # a malformed filter fails before any indexing
    pair = _compare_pair(compare, names)
    disagreement_pair = None
    if disagreements is not None:
        missing = [n for n in DISAGREEMENT_PAIR if n not in names]
        if missing:
            raise click.BadParameter(
                f"compares bm25 and dense; add {', '.join(missing)} to --retrievers",
                param_hint="--disagreements",
            )
        disagreement_pair = DISAGREEMENT_PAIR

    collection = load_collection(dataset_dir, split)
    if not collection.queries:
        raise TwokeysError(f"{dataset_dir}: no judged queries in qrels/{split}.tsv")
    unjudgeable = len(collection.qrels) - len(collection.queries)
    if unjudgeable:
        what = "query has" if unjudgeable == 1 else "queries have"
        err.print(
            f"[yellow]warning:[/yellow] {unjudgeable} judged {what} no text in queries.jsonl; "
            "skipped"
        )
    path = index_path or default_index_path(dataset_dir)
    with progress_bars(quiet) as stage:
        prepared = ensure_index(
            collection, path, encoder=None if no_dense else encoder, rebuild=rebuild, progress=stage
        )
        # eval owns its index: it saves the derived structures its retrievers read
        optimize(path, [name for name in DERIVED if name in ("hnsw", *names)], progress=stage)
    if prepared.built:
        err.print(f"indexed {escape(str(path))} ({escape(prepared.reason)})")
    else:
        err.print(f"reusing index {escape(str(path))}")
    with open_index(path) as kb, progress_bars(quiet) as stage:
        runs = run_retrievers(kb, collection, names, filters=filters, progress=stage)
    experiment = score_experiment(
        collection, runs, split=split, compare_pair=pair, disagreement_pair=disagreement_pair
    )

    if save_runs is not None:
        written = _write(save_runs, lambda: write_trec_runs(runs, save_runs))
        err.print(f"wrote {', '.join(escape(str(p)) for p in written)}")
    if report_path is not None:
        html = render_report(experiment, disagreements=disagreements or 10)
        _write(report_path, lambda: _write_text(report_path, html))
        err.print(f"wrote {escape(str(report_path))}")
    if as_json:
        data = experiment.to_dict(disagreements=disagreements or 0)
        data["index"] = str(path)
        click.echo(json.dumps(_finite(data), indent=2, ensure_ascii=False))
        return
    out.print(summary_table(experiment))
    if experiment.comparisons:
        print_comparison(experiment.comparisons)
    if disagreements is not None:
        print_disagreements(experiment, disagreements)


def _write(path: Path, write: Callable[[], T]) -> T:
    try:
        return write()
    except OSError as exc:
        raise TwokeysError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _finite(value: Any) -> Any:
    """JSON has no NaN or infinity: write them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def summary_table(e: Experiment) -> Table:
    table = Table(title=f"{e.dataset} ({e.split}, {len(e.queries)} queries)")
    table.add_column("retriever", style="bold")
    for m in e.measures:
        table.add_column(label(m), justify="right")
    table.add_column("ms/query", justify="right")
    best = {m: max(e.scores[n].means[m] for n in e.runs) for m in e.measures}
    for name, run in e.runs.items():
        cells = []
        for m in e.measures:
            value = e.scores[name].means[m]
            bold = len(e.runs) > 1 and value == best[m]
            cells.append(f"[bold]{value:.4f}[/bold]" if bold else f"{value:.4f}")
        table.add_row(escape(name), *cells, f"{run.ms_per_query:.1f}")
    return table


def _p(value: float) -> str:
    if math.isnan(value):
        return "n/a"
    return f"{value:.4f}" if value >= 1e-4 else "<0.0001"


def print_comparison(comparisons: tuple[PairedComparison, ...]) -> None:
    first = comparisons[0]
    a, b = first.a, first.b
    table = Table(
        title=f"{b} vs {a} (baseline), paired over {first.queries} queries",
        caption=f"W/T/L: queries {b} wins, ties, loses; two-sided tests; rand.: randomisation "
        f"test, {first.permutations:,} sign flips, seed {first.seed}",
    )
    for column in ("measure", a, b, "Δ", "W/T/L", "t-test p", "rand. p"):
        table.add_column(escape(column), justify="left" if column == "measure" else "right")
    for c in comparisons:
        r = c.record
        table.add_row(
            label(c.measure),
            f"{c.mean_a:.4f}",
            f"{c.mean_b:.4f}",
            f"{c.mean_delta:+.4f}",
            f"{r.wins}/{r.ties}/{r.losses}",
            _p(c.t_pvalue),
            _p(c.randomisation_pvalue),
        )
    out.print(table)
    main = next((c for c in comparisons if c.measure == PRIMARY), first)
    significant = max(main.t_pvalue, main.randomisation_pvalue) < ALPHA
    verdict = "significant" if significant else "not significant"
    delta = main.mean_delta
    direction = "beats" if delta > 0 else "trails" if delta < 0 else "ties"
    margin = f" by {abs(delta):.4f}" if delta else ""
    out.print(
        f"{b} {direction} {a} on {label(main.measure)}{margin} "
        f"({main.record.wins} wins, {main.record.ties} ties, {main.record.losses} losses): "
        f"{verdict} at {ALPHA} (paired t-test p = {_p(main.t_pvalue)}, "
        f"randomisation p = {_p(main.randomisation_pvalue)})",
        markup=False,
    )


def print_disagreements(e: Experiment, limit: int) -> None:
    left, right = DISAGREEMENT_PAIR
    shown = e.disagreements[:limit]
    out.print(
        f"\n[bold]Where {left} and {right} disagree[/bold]: {len(e.disagreements)} of "
        f"{len(e.queries)} queries (one side has a relevant doc in its top 10 and the other "
        f"not, or top-1 differs); largest {label(PRIMARY)} difference first"
    )
    if not shown:
        out.print("none")
    width = max(len(left), len(right))
    for number, d in enumerate(shown, 1):
        winner = "tie" if d.winner == "tie" else f"{d.winner} right"
        out.print(f"{number:>2}. [{d.query_id}] {d.query}", markup=False)
        out.print(f"    {d.reason}; {winner}", markup=False)
        for name, ndcg, top in (
            (d.left, d.left_ndcg, d.left_top),
            (d.right, d.right_ndcg, d.right_top),
        ):
            out.print(
                f"    {name:<{width}}  {label(PRIMARY)} {ndcg:.3f}  {_docs(top)}", markup=False
            )


def _docs(top: tuple[RankedDoc, ...]) -> str:
    if not top:
        return "no hits"
    return "  ".join(
        f"{r.doc_id} {'✓' + str(r.relevance) if r.relevance > 0 else '✗'}" for r in top
    )
