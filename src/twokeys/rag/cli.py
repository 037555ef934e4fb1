"""``twokeys ask``: answer a question from the index, with cited sources.

Without ``--llm`` the answer is extractive (quoted sentences, labelled as such); with
one, the model's answer streams as it is generated. ``--show-context`` prints the exact
prompt the model saw and each section's share of the token budget.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from twokeys.cliutil import index_option
from twokeys.engine import MODES, open_index
from twokeys.llm.base import SPEC_FORMS, from_spec
from twokeys.llm.http import DEFAULT_TIMEOUT
from twokeys.rag.ask import Answer, AskOptions, Plan, generate, prepare
from twokeys.rag.packing import MIN_TOTAL, Budget
from twokeys.rag.prompt import render_prompt


@click.command()
@click.argument("question")
@index_option
@click.option("--mode", type=click.Choice(MODES), default="hybrid", show_default=True)
@click.option(
    "-k",
    "k",
    type=click.IntRange(min=1),
    default=6,
    show_default=True,
    help="Hits retrieved per sub-query.",
)
@click.option(
    "--budget",
    type=click.IntRange(min=MIN_TOTAL),
    default=2048,
    show_default=True,
    help="Tokens for the whole prompt plus the answer.",
)
@click.option(
    "--llm",
    "llm_spec",
    envvar="TWOKEYS_LLM",
    default=None,
    help=f"Model: {SPEC_FORMS} (env TWOKEYS_LLM). Without it the answer is extractive.",
)
@click.option(
    "--base-url",
    envvar="TWOKEYS_BASE_URL",
    default=None,
    help="Server address, e.g. http://127.0.0.1:8080/v1 (env TWOKEYS_BASE_URL).",
)
@click.option(
    "--prompt-style",
    type=click.Choice(["auto", "chat", "completion"]),
    default="auto",
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
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=DEFAULT_TIMEOUT,
    show_default=True,
    help="Seconds to wait for the model (per attempt; between tokens when streaming).",
)
def ask(
    question: str,
    index_path: Path | str,
    mode: str,
    k: int,
    budget: int,
    llm_spec: str | None,
    base_url: str | None,
    prompt_style: str,
    show_context: bool,
    as_json: bool,
    no_decompose: bool,
    decompose_with_llm: bool,
    timeout: float,
) -> None:
    """Answer QUESTION from the index, citing its sources."""
    if no_decompose and decompose_with_llm:
        raise click.UsageError("--no-decompose and --decompose-with-llm exclude each other")
    options = AskOptions(
        mode=mode,
        k=k,
        budget=Budget.for_total(budget),
        decompose="none" if no_decompose else "llm" if decompose_with_llm else "rules",
        prompt_style=prompt_style,
    )
    with open_index(index_path) as kb:
        llm = (
            from_spec(llm_spec, base_url=base_url, timeout=timeout, context_tokens=budget)
            if llm_spec
            else None
        )
        try:
            plan = prepare(kb, question, llm=llm, options=options)
            if show_context and not as_json:
                _print_context(plan, llm.name if llm else None)
            streaming = not as_json and llm is not None
            if streaming:
                click.echo(f"Answer ({llm.name if llm else ''}):")
            answer = generate(
                plan,
                llm=llm,
                analyzer_terms=(kb.analyzer.query_terms, kb.analyzer.index_terms),
                options=options,
                on_text=(lambda t: click.echo(t, nl=False)) if streaming else None,
            )
        finally:
            if llm is not None:
                llm.close()
    if as_json:
        click.echo(json.dumps(answer_to_dict(answer, show_context), ensure_ascii=False, indent=2))
        return
    if not streaming:
        click.echo(answer.text, nl=False)
    click.echo("\n")
    _print_sources(answer)


def answer_to_dict(answer: Answer, with_prompt: bool = False) -> dict[str, Any]:
    """An answer as plain JSON-ready data."""
    plan = answer.plan
    data: dict[str, Any] = {
        "question": answer.question,
        "answer": answer.text,
        "kind": answer.kind,
        "llm": answer.llm,
        "sub_queries": list(plan.parts),
        "sources": [
            {
                "number": s.number,
                "path": s.path,
                "title": s.title,
                "heading": s.heading,
                "chunk_ids": list(s.chunk_ids),
                "cited": s.cited,
            }
            for s in answer.sources
        ],
        "budget": _usage(plan),
    }
    if with_prompt:
        data["context"] = plan.context.text
        data["prompt"] = render_prompt(plan.prompt)
    return data


def _usage(plan: Plan) -> dict[str, Any]:
    ctx = plan.context
    return {
        "counter": plan.counter,
        "total": plan.context.total,
        "sections": [{"name": s.name, "budget": s.budget, "used": s.used} for s in ctx.sections],
        "sub_queries": [
            {"query": q.query, "tokens": q.tokens, "blocks": list(q.blocks)} for q in ctx.queries
        ],
        "blocks": [
            {"number": b.number, "tokens": b.tokens, "trimmed": b.trimmed} for b in ctx.blocks
        ],
    }


def _print_context(plan: Plan, llm_name: str | None) -> None:
    seen = f"what {llm_name} saw" if llm_name else "no model: the context the quotes come from"
    click.echo(f"──── prompt ({seen}) ────")
    click.echo(render_prompt(plan.prompt) if llm_name else plan.context.text)
    if plan.template.stop and llm_name:
        click.echo(f"(stop strings: {', '.join(repr(s) for s in plan.template.stop)})")
    ctx = plan.context
    click.echo(f"──── budget: {ctx.total} tokens, counted with {plan.counter} ────")
    for s in ctx.sections:
        if s.name == "answer":
            click.echo(f"  {s.name:<13} {s.budget:>6} reserved for the reply")
        else:
            click.echo(f"  {s.name:<13} {s.used:>6} / {s.budget:<6}")
    for i, q in enumerate(ctx.queries, 1):
        blocks = " ".join(f"[{n}]" for n in q.blocks) or "none"
        click.echo(f"    part {i}: {q.tokens:>5} tokens, blocks {blocks}  {q.query}")
    for b in ctx.blocks:
        cut = ", cut at a sentence end" if b.trimmed else ""
        click.echo(f"    [{b.number}] {b.tokens:>5} tokens{cut}  {', '.join(b.chunk_ids)}")
    click.echo("────")


def _print_sources(answer: Answer) -> None:
    if not answer.sources:
        return
    click.echo("Sources:")
    for s in answer.sources:
        where = f"  {s.heading}" if s.heading else ""
        mark = "" if s.cited or answer.kind == "no-evidence" else "  (not cited)"
        click.echo(f"  [{s.number}] {s.path}{where}{mark}")
