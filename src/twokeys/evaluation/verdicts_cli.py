"""``twokeys calibrate-verdict``: measure a model's verdicts on labelled questions, so that
``ask --llm-stage verdict`` weighs them by what they were worth
(:mod:`twokeys.evaluation.verdicts`, :mod:`twokeys.rag.verdicts`)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from twokeys.cli_ask import budget_option, mode_option
from twokeys.cliutil import index_option, make_llm, model_options, out
from twokeys.engine import open_index
from twokeys.evaluation.answers import load_qa
from twokeys.evaluation.answers_cli import split_option
from twokeys.evaluation.verdicts import calibrate
from twokeys.rag.ask import AskOptions
from twokeys.rag.packing import Budget
from twokeys.rag.verdicts import default_path

_ASK = AskOptions()


@click.command("calibrate-verdict")
@click.argument("qa_file", type=click.Path(path_type=Path))
@index_option
@mode_option
@budget_option(_ASK.budget.total, "Tokens for the prompt plus the answer, as 'ask' will use.")
@split_option
@model_options
@click.option(
    "--out",
    "out_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Where to write the calibration [default: where 'ask' looks for the model's, "
    "in the cache].",
)
def calibrate_verdict(
    qa_file: Path,
    index_path: Path,
    mode: str,
    budget: int,
    split: str | None,
    llm_spec: str | None,
    base_url: str | None,
    timeout: float,
    out_path: Path | None,
) -> None:
    """Measure how often the model (--llm) says the passages answer, on QA_FILE's questions.

    It is asked what 'ask --llm-stage verdict' asks, about each question's first hits; its
    yes and no replies to questions good to answer (answerable, a gold fact in the packed
    context) and to the others are kept, and 'ask --confidence learned --llm-stage verdict'
    then moves the confidence by what each reply was worth."""
    if not llm_spec:
        raise click.UsageError("--llm names the model to measure")
    items = load_qa(qa_file, split=split)
    llm = make_llm(llm_spec, base_url, timeout, context_tokens=budget)
    assert llm is not None
    try:
        down = llm.unreachable()
        if down is not None:
            raise click.ClickException(down)
        which = f"split {split}" if split else "all splits"
        with open_index(index_path) as kb:
            options = AskOptions(mode=mode, budget=Budget.for_total(budget))
            found = calibrate(
                kb,
                items,
                llm,
                options=options,
                trained_on=f"{qa_file.name} ({which}, {len(items)} questions), index "
                f"{Path(index_path).name}, mode {mode}, budget {budget}",
                progress=_progress,
            )
    finally:
        llm.close()
    table = Table(title=f"{found.model}: does the passage answer? ({found.trained_on})")
    for column in ("questions", "yes", "no", "neither"):
        table.add_column(column, justify="right" if column != "questions" else "left")
    table.add_row("good to answer (gold fact packed)", str(found.good_yes), str(found.good_no), "")
    table.add_row("the others", str(found.bad_yes), str(found.bad_no), "")
    table.add_row("all", "", "", str(found.unread))
    out.print(table)
    out.print(
        f"a yes adds {found.log_ratio(1.0):+.2f} to the log-odds that the sources answer, "
        f"a no {found.log_ratio(0.0):+.2f}"
    )
    path = found.save(out_path or default_path(found.model))
    out.print(f"wrote {path}")


def _progress(done: int, total: int) -> None:
    if done % 10 == 0 or done == total:
        click.echo(f"calibrate-verdict: {done}/{total} questions", err=True)
