"""``twokeys search``: one query against an index, its hits printed one by one.

Loaded when the command is named (``cli._Group.LAZY``). The hits are printed with
click's styles, not rich, which a search would load for two styles: a bm25 search in
a fresh process imports only the request, the engine and the store it reads
(``tests/integration/test_cold_start.py``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from twokeys.cliutil import index_option, query_argument
from twokeys.dense.encoder import encoder_variant
from twokeys.request import DEFAULTS, MODES, RRF_FUSIONS, SearchRequest
from twokeys.retrievers.hybrid import FUSIONS
from twokeys.sanitize import for_terminal
from twokeys.text.passages import heading_line

if TYPE_CHECKING:
    from twokeys.types import Hit

SEARCH_K = 5  # a terminal shows fewer hits than the library returns (DEFAULTS["k"])
ONE_QUERY = "twokeys.dense.onnx_minilm:one_query"


@click.command()
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
    # one query per process: the default encoder without its thread pool
    with encoder_variant("minilm", ONE_QUERY), open_index(index_path) as kb:
        hits = kb.search(request)
    if as_json:
        _print_json([h.to_dict() for h in hits])
        return
    if not hits:
        click.echo("no results")
        return
    for hit in hits:
        _print_hit(hit, explain, request.rrf_k if request.fusion in RRF_FUSIONS else None)


def _print_json(data: object) -> None:
    """Indented JSON; coloured by rich on a terminal (the same text)."""
    text = json.dumps(data, ensure_ascii=False)
    if sys.stdout.isatty():
        from twokeys.cliutil import out

        out.print_json(text)
    else:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def _print_hit(hit: Hit, explain: bool, rrf_k: float | None) -> None:
    """A hit's rank, citation, heading and score, its text's start, with --explain each
    retriever's evidence. Every field from the documents passes :func:`for_terminal`."""
    where = for_terminal(heading_line(hit.chunk.heading_path, hit.title))
    click.echo(
        f"{click.style(f'{hit.rank}.', bold=True)} {for_terminal(hit.cite)}  "
        f"{click.style(where, dim=True)}  score={hit.score:.4f}"
    )
    snippet = for_terminal(" ".join(hit.text.split()))
    click.echo(f"   {snippet[:240]}{'…' if len(snippet) > 240 else ''}")
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
        click.echo(line)
    if hit.evidence and len(hit.evidence) < 2 and any(e.fused for e in hit.evidence):
        missing = {"bm25", "dense"} - {e.retriever for e in hit.evidence}
        click.echo(f"   · {', '.join(sorted(missing))}: not in its top candidates")
