"""``twokeys ask``: answer a question from the index, with cited sources.

Without ``--llm`` the answer is extractive (quoted sentences, labelled as such); with
one, the model's answer streams as it is generated. ``--show-context`` prints the exact
prompt the model saw and each section's share of the token budget.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from twokeys.cliutil import index_option, make_llm, model_options, query_argument, safe_echo
from twokeys.engine import MODES, open_index
from twokeys.rag.ask import (
    CONFIDENCES,
    ORDERS,
    RERANK_DEPTH,
    Answer,
    AskOptions,
    Done,
    ModelFailed,
    Packed,
    Plan,
    TextDelta,
    ask_events,
)
from twokeys.rag.conversation import Conversation, Turn
from twokeys.rag.judge import STAGES, SupportBudget
from twokeys.rag.packing import MIN_TOTAL, Budget
from twokeys.rag.prompt import render_prompt

EXIT_MODEL_UNREACHABLE = 3
_Command = TypeVar("_Command", bound=Callable[..., Any])
_ASK = AskOptions()  # the library's defaults, shown by --help

mode_option = click.option("--mode", type=click.Choice(MODES), default=_ASK.mode, show_default=True)


def budget_option(default: int, text: str) -> Callable[[_Command], _Command]:
    """``--budget``: tokens for the prompt plus the answer (``ask`` and ``eval-answers``)."""
    return click.option(
        "--budget",
        type=click.IntRange(min=MIN_TOTAL),
        default=default,
        show_default=True,
        help=text,
    )


def evidence_options(command: _Command) -> _Command:
    """``--order`` (fused or learned) and ``--confidence`` (the learned confidence or the
    grounding rules): how ``ask`` packs and judges its evidence, for ``ask`` and
    ``eval-answers`` alike."""
    command = click.option(
        "--confidence",
        "confidence_kind",
        type=click.Choice(CONFIDENCES),
        default=_ASK.confidence,
        show_default=True,
        help="What decides abstention: the learned confidence or the grounding rules.",
    )(command)
    return click.option(
        "--order",
        "order_kind",
        type=click.Choice(ORDERS),
        default=_ASK.order,
        show_default=True,
        help="The order hits are packed in: the search's fused order, or the fused top "
        f"{RERANK_DEPTH} re-ranked by the learned context re-ranker.",
    )(command)


def stage_options(command: _Command) -> _Command:
    """``--llm-stage`` (repeatable) and ``--verdict-calibration``: the model's optional
    stages, for ``ask``, ``eval-answers`` and ``serve`` alike."""
    command = click.option(
        "--verdict-calibration",
        type=click.Path(dir_okay=False),
        default=None,
        help="--llm-stage verdict: the model's measured reliability, written by "
        "'twokeys calibrate-verdict' [default: the one it keeps for the model in the cache].",
    )(command)
    return click.option(
        "--llm-stage",
        "llm_stages",
        type=click.Choice(STAGES),
        multiple=True,
        help="With --llm (repeatable): rerank the fused hits; ask its verdict on them (with "
        "--confidence learned); rewrite a follow-up (see --earlier) and split the question; "
        "judge each answer sentence's support.",
    )(command)


@click.command()
@click.argument("question", callback=query_argument)
@index_option
@mode_option
@click.option(
    "-k",
    "k",
    type=click.IntRange(min=1),
    default=_ASK.k,
    show_default=True,
    help="Hits read to judge each sub-query; more are retrieved while the budget has room.",
)
@budget_option(_ASK.budget.total, "Tokens for the whole prompt plus the answer.")
@model_options
@click.option(
    "--prompt-style",
    type=click.Choice(["auto", "chat", "completion"]),
    default=_ASK.prompt_style,
    show_default=True,
    help="chat messages, or a completion prompt with stop strings (auto: completion for "
    "the local base model).",
)
@click.option("--show-context", is_flag=True, help="Print the prompt and the budget use.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--no-decompose", is_flag=True, help="Retrieve for the question as a whole.")
@click.option(
    "--decompose-with-llm", is_flag=True, help="Split the question with the model, not rules."
)
@click.option(
    "--strict", is_flag=True, help="Drop generated sentences that their cited sources do not back."
)
@click.option(
    "--no-abstain",
    is_flag=True,
    help="Answer even when retrieval finds nothing close to the question.",
)
@evidence_options
@stage_options
@click.option(
    "--earlier",
    "earlier",
    multiple=True,
    metavar="QUESTION",
    help="An earlier question of the conversation, oldest first (repeatable): QUESTION is "
    "then a follow-up, searched as one standalone query.",
)
@click.option(
    "--support-sentences",
    type=click.IntRange(min=1),
    default=_ASK.support.sentences,
    show_default=True,
    help="--llm-stage support: judge at most this many sentences.",
)
@click.option(
    "--support-tokens",
    type=click.IntRange(min=1),
    default=_ASK.support.tokens,
    show_default=True,
    help="--llm-stage support: prompt tokens for all its questions together.",
)
@click.option(
    "--support-seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=_ASK.support.seconds,
    show_default=True,
    help="--llm-stage support: no new question after this many seconds.",
)
def ask(
    question: str,
    index_path: Path | str,
    mode: str,
    k: int,
    budget: int,
    llm_spec: str | None,
    base_url: str | None,
    timeout: float,
    prompt_style: str,
    show_context: bool,
    as_json: bool,
    no_decompose: bool,
    decompose_with_llm: bool,
    strict: bool,
    no_abstain: bool,
    order_kind: str,
    confidence_kind: str,
    llm_stages: tuple[str, ...],
    verdict_calibration: str | None,
    earlier: tuple[str, ...],
    support_sentences: int,
    support_tokens: int,
    support_seconds: float,
) -> None:
    """Answer QUESTION from the index, citing its sources.

    Exit status 0 with an answer (or an abstention), 3 when the model could not be
    reached and the extractive answer was given instead."""
    if no_decompose and decompose_with_llm:
        raise click.UsageError("--no-decompose and --decompose-with-llm exclude each other")
    options = AskOptions(
        mode=mode,
        k=k,
        budget=Budget.for_total(budget),
        decompose="none" if no_decompose else "llm" if decompose_with_llm else "rules",
        prompt_style=prompt_style,
        abstain=not no_abstain,
        strict=strict,
        order=order_kind,
        confidence=confidence_kind,
        llm_stages=llm_stages,
        support=SupportBudget(support_sentences, support_tokens, support_seconds),
        verdict_calibration=verdict_calibration,
    )
    conversation = (
        Conversation(question, tuple(Turn("user", q) for q in earlier if q.strip()))
        if earlier
        else None
    )
    with open_index(index_path) as kb:
        llm = make_llm(llm_spec, base_url, timeout, context_tokens=budget)
        answer: Answer | None = None
        streaming = not as_json and llm is not None and not strict
        header = False
        try:
            events = ask_events(kb, question, llm=llm, options=options, conversation=conversation)
            for event in events:
                if isinstance(event, Packed) and show_context and not as_json:
                    _print_context(event.plan, llm.name if llm else None)
                elif isinstance(event, ModelFailed) and not as_json:
                    safe_echo(f"warning: {event.error} (giving the extractive answer)", err=True)
                    streaming = False
                elif isinstance(event, TextDelta) and streaming:
                    if not header and llm is not None:
                        safe_echo(f"Answer ({llm.name}):")
                        header = True
                    safe_echo(event.text, nl=False)
                elif isinstance(event, Done):
                    answer = event.answer
        finally:
            if llm is not None:
                llm.close()
    assert answer is not None  # ask_events always ends with Done
    if as_json:
        click.echo(
            json.dumps(answer.to_dict(with_prompt=show_context), ensure_ascii=False, indent=2)
        )
    else:
        if not header:
            if answer.kind == "generated" and llm is not None:
                safe_echo(f"Answer ({llm.name}):")
            safe_echo(answer.text, nl=False)
        safe_echo("\n")
        followup = answer.plan.followup
        if followup is not None and followup.query != question.strip():
            by = {"llm": f"rewritten by {llm_spec}", "rule": "with earlier questions' words"}
            safe_echo(f"Searched for: {followup.query} ({by.get(followup.how, followup.how)})")
            if followup.model_error:
                safe_echo(f"warning: the rewrite failed: {followup.model_error}", err=True)
        _print_checks(answer, strict)
        _print_sources(answer)
    if answer.model_error is not None:
        sys.exit(EXIT_MODEL_UNREACHABLE)


def _print_checks(answer: Answer, strict: bool) -> None:
    flagged = answer.flagged
    if not flagged:
        return
    safe_echo("Dropped (--strict): " if strict else "Not backed by the cited sources:")
    for check in flagged:
        if check.status == "uncited":
            why = "cites no source"
        elif not check.citations:
            why = "cites no source, and no source backs it"
        else:
            why = "not in its cited sources"
        if check.model is False:
            why = f"{answer.llm} judged it not stated in its cited sources"
        safe_echo(f"  ! {check.text}  ({why})")
    safe_echo("")


def _print_context(plan: Plan, llm_name: str | None) -> None:
    seen = f"what {llm_name} saw" if llm_name else "no model: the context the quotes come from"
    safe_echo(f"──── prompt ({seen}) ────")
    safe_echo(render_prompt(plan.prompt) if llm_name else plan.context.text)
    if plan.template.stop and llm_name:
        safe_echo(f"(stop strings: {', '.join(repr(s) for s in plan.template.stop)})")
    ctx = plan.context
    safe_echo(f"──── budget: {ctx.total} tokens, counted with {plan.counter} ────")
    for s in ctx.sections:
        if s.name == "answer":
            safe_echo(f"  {s.name:<13} {s.budget:>6} reserved for the reply")
        else:
            safe_echo(f"  {s.name:<13} {s.used:>6} / {s.budget:<6}")
    for i, q in enumerate(ctx.queries, 1):
        blocks = " ".join(f"[{n}]" for n in q.blocks) or "none"
        safe_echo(f"    part {i}: {q.tokens:>5} tokens, blocks {blocks}  {q.query}")
    for b in ctx.blocks:
        cut = ", cut at a sentence end" if b.trimmed else ""
        safe_echo(f"    [{b.number}] {b.tokens:>5} tokens{cut}  {', '.join(b.chunk_ids)}")
    safe_echo("────")


def _print_sources(answer: Answer) -> None:
    if not answer.sources:
        return
    safe_echo("Closest sources:" if answer.abstains else "Sources:")
    for s in answer.sources:
        heading = "; ".join(s.quoted_headings) or s.heading
        where = f"  {heading}" if heading else ""
        quiet = s.cited or answer.abstains
        safe_echo(f"  [{s.number}] {s.cite or s.path}{where}{'' if quiet else '  (not cited)'}")
