"""``twokeys eval-answers``: measure answers, not just rankings (see
:mod:`twokeys.evaluation.answers`), twokeys' ``ask`` beside the naive baselines."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from twokeys.cli_ask import budget_option, evidence_options, mode_option, stage_options
from twokeys.cliutil import index_option, make_llm, model_options, out
from twokeys.engine import open_index
from twokeys.evaluation.answers import (
    EVAL_BUDGET,
    AnswerEvaluation,
    evaluate_answers,
    load_qa,
)
from twokeys.evaluation.answers_report import render
from twokeys.rag.ask import AskOptions
from twokeys.rag.confidence import shipped

REPORT_BUDGETS = (1000, 2000, 4000)
COLUMNS = (  # short titles: the table fits 80 columns
    ("recall", "context_recall"),
    ("cite prec", "citation_precision"),
    ("facts", "fact_containment"),
    ("abstain", "abstention"),
    ("false abst", "false_abstention"),
    ("tokens", "tokens"),
)
LEGEND = (
    "recall: gold facts inside the packed context; cite prec: cited blocks holding a gold "
    "fact; facts: gold facts quoted in the answer; abstain: unanswerable questions "
    "abstained on; false abst: answerable ones abstained on; tokens: mean context tokens"
)


split_option = click.option(
    "--split",
    default=None,
    help="Only the questions of this split (a QA file's own names, such as dev or test) "
    "[default: all].",
)


@click.command("eval-answers")
@click.argument("qa_file", type=click.Path(path_type=Path))
@index_option
@mode_option
@budget_option(EVAL_BUDGET, "Tokens for the whole prompt plus the answer, as in 'ask'.")
@split_option
@model_options
@click.option(
    "--docs",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="The documents' folder, read by the naive baseline [default: the index's source].",
)
@evidence_options
@stage_options
@click.option(
    "--html",
    "html_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Also write an HTML report (measures, recall by budget, risk-coverage, questions).",
)
@click.option(
    "--recall-budget",
    "recall_budgets",
    type=int,
    multiple=True,
    help="Budgets of the report's context-recall table (repeatable) [default: 1000, 2000, 4000].",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def eval_answers(
    qa_file: Path,
    index_path: Path,
    mode: str,
    budget: int,
    split: str | None,
    llm_spec: str | None,
    base_url: str | None,
    timeout: float,
    docs: Path | None,
    order_kind: str,
    confidence_kind: str,
    llm_stages: tuple[str, ...],
    verdict_calibration: str | None,
    html_path: Path | None,
    recall_budgets: tuple[int, ...],
    as_json: bool,
) -> None:
    """Score 'ask' on the questions of QA_FILE (JSONL with gold documents and facts)."""
    items = load_qa(qa_file, split=split)
    llm = make_llm(llm_spec, base_url, timeout, context_tokens=budget)
    try:
        options = AskOptions(
            mode=mode,
            order=order_kind,
            confidence=confidence_kind,
            llm_stages=llm_stages,
            verdict_calibration=verdict_calibration,
        )
        with open_index(index_path) as kb:
            result = evaluate_answers(kb, items, budget=budget, options=options, llm=llm, docs=docs)
            if html_path is not None:
                by_budget = [
                    result
                    if b == budget
                    else evaluate_answers(
                        kb, items, budget=b, options=options, llm=llm, naive_chars=()
                    )
                    for b in (recall_budgets or REPORT_BUDGETS)
                ]
                lexical = kb.backend.vectors is None
                learned = confidence_kind == "learned"
                threshold = shipped(lexical).threshold if learned else None
                page = render(f"twokeys eval-answers: {qa_file.name}", result, by_budget, threshold)
                try:
                    html_path.write_text(page, encoding="utf-8")
                except OSError as exc:
                    raise click.ClickException(
                        f"{html_path}: cannot write: {exc.strerror or exc}"
                    ) from None
    finally:
        if llm is not None:
            llm.close()
    if as_json:
        out.print_json(json.dumps(result.to_dict()))
        return
    _print(result, split)


def _print(result: AnswerEvaluation, split: str | None) -> None:
    answerable = sum(i.answerable for i in result.items)
    which = f"split {split}" if split else "all splits"
    table = Table(
        title=f"{len(result.items)} questions ({which}; {answerable} answerable), "
        f"budget {result.budget} tokens"
    )
    table.add_column("system", no_wrap=True)
    for title, _ in COLUMNS:
        table.add_column(title, justify="right")
    for system in result.systems:
        data = system.to_dict()
        cells = []
        for _, key in COLUMNS:
            value = data[key]
            if value is None:
                cells.append("-")
            elif key == "tokens":
                cells.append(f"{value:.0f}")
            else:
                cells.append(f"{value:.3f}")
        table.add_row(system.name, *cells)
    out.print(table)
    out.print(LEGEND)
    misses = result.to_dict()["misses"]
    ours = misses.get(result.systems[0].name) if isinstance(misses, dict) else None
    if ours:
        ids = ", ".join(str(m["id"]) for m in ours)
        out.print(f"twokeys misses (evidence not packed, or wrong abstention): {ids}")
