"""The HTML report of ``twokeys eval-answers --html``: one page people look at.

It shows, for one QA file: the measures of every system at the main budget; context
recall by budget (twokeys beside plain top-k); the risk-coverage curve of the answer
confidence as an inline SVG (answering only the questions whose confidence is at least
each value, from the most confident down: coverage is the share answered, risk the share
of those whose cited blocks hold no gold fact, an unanswerable question answered counts
as a miss) with the operating point marked, and the same curve over the answerable
questions only (selective answering among questions the sources do answer: coverage
is the share of *those* answered, so the share of unanswerable questions in a set no
longer caps it); and a table with one row per question:
the question, its gold fact, the blocks packed (their labels), answered or abstained,
and why. Pure: evaluations in, a string of HTML out.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from twokeys.evaluation.answers import AnswerEvaluation, Outcome
from twokeys.rag.confidence import RiskPoint, risk_coverage

WIDTH, HEIGHT, PAD = 420, 260, 40


def good(outcome: Outcome) -> bool:
    """An answer that cites a block holding a gold fact (never an unanswerable one)."""
    return outcome.item.answerable and bool(outcome.citation_precision)


def curve(outcomes: Sequence[Outcome], answerable_only: bool = False) -> list[RiskPoint]:
    """The risk-coverage curve of the outcomes that carry a confidence; with
    ``answerable_only``, over the answerable questions alone."""
    scored = [
        o
        for o in outcomes
        if o.confidence is not None and (o.item.answerable or not answerable_only)
    ]
    return risk_coverage([float(o.confidence or 0.0) for o in scored], [good(o) for o in scored])


def svg(points: Sequence[RiskPoint], threshold: float | None, label: str = "") -> str:
    """The risk-coverage curve as an inline SVG (``label``: what it is over)."""

    def xy(p: RiskPoint) -> tuple[float, float]:
        return PAD + p.coverage * (WIDTH - 2 * PAD), HEIGHT - PAD - p.risk * (HEIGHT - 2 * PAD)

    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(p) for p in points))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img" aria-label="risk-coverage curve{label and ", " + label}">',
        f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" '
        'stroke="#444"/>',
        f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{HEIGHT - PAD}" stroke="#444"/>',
        f'<text x="{WIDTH / 2}" y="{HEIGHT - 8}" text-anchor="middle" font-size="12">'
        "coverage</text>",
        f'<text x="12" y="{HEIGHT / 2}" font-size="12" transform="rotate(-90 12 {HEIGHT / 2})"'
        ' text-anchor="middle">risk</text>',
        f'<text x="{PAD}" y="{HEIGHT - PAD + 14}" font-size="10">0</text>',
        f'<text x="{WIDTH - PAD}" y="{HEIGHT - PAD + 14}" font-size="10">1</text>',
        f'<text x="{PAD - 12}" y="{PAD + 4}" font-size="10">1</text>',
        f'<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="{path}"/>',
    ]
    if threshold is not None:
        at = [p for p in points if p.threshold >= threshold]
        if at:
            x, y = xy(at[-1])
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="#d62728"/>')
            parts.append(
                f'<text x="{x + 8:.1f}" y="{y - 8:.1f}" font-size="11">operating point '
                f"(p &#8805; {threshold:.2f}): coverage {at[-1].coverage:.2f}, "
                f"risk {at[-1].risk:.2f}</text>"
            )
    parts.append("</svg>")
    return "\n".join(parts)


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def render(
    title: str,
    main: AnswerEvaluation,
    by_budget: Sequence[AnswerEvaluation] = (),
    threshold: float | None = None,
) -> str:
    """The whole report (module docstring)."""
    e = html.escape
    rows = []
    for s in main.systems:
        d = s.to_dict()
        cells = "".join(
            f"<td>{_f(d[k])}</td>"  # type: ignore[arg-type]
            for k in (
                "context_recall",
                "citation_precision",
                "fact_containment",
                "abstention",
                "false_abstention",
            )
        )
        rows.append(f"<tr><td>{e(s.name)}</td>{cells}<td>{_f(d['tokens'])}</td></tr>")  # type: ignore[arg-type]
    recall_rows = []
    for ev in sorted(by_budget or [main], key=lambda ev: ev.budget):
        cells = "".join(
            f"<td>{_f(s.context_recall)}</td>" for s in ev.systems if s.name in ("twokeys", "top-k")
        )
        recall_rows.append(f"<tr><td>{ev.budget:,}</td>{cells}</tr>")
    ours = main.systems[0]
    points = curve(ours.outcomes)
    plot = svg(points, threshold) if points else "<p>No confidence was read for these answers.</p>"
    among = curve(ours.outcomes, answerable_only=True)
    plot_answerable = (
        svg(among, threshold, "answerable questions only")
        if among
        else "<p>No answerable question carries a confidence.</p>"
    )
    question_rows = []
    for o in ours.outcomes:
        gold = "; ".join(f"{g.doc}: {g.fact}" for g in o.item.gold) or "(unanswerable)"
        packed = "<br>".join(e(p.text.split("\n", 1)[0]) for p in o.pieces)
        verdict = "abstained" if o.abstained else "answered"
        why = e(o.why or "")
        ok = "yes" if (good(o) if not o.abstained else not o.item.answerable) else "no"
        conf = "-" if o.confidence is None else f"{o.confidence:.2f}"
        question_rows.append(
            f"<tr><td>{e(o.item.id)}</td><td>{e(o.item.question)}</td><td>{e(gold)}</td>"
            f"<td>{_f(o.context_recall) if o.item.answerable else '-'}</td><td>{packed}</td>"
            f"<td>{verdict}</td><td>{conf}</td><td>{why}</td><td>{ok}</td></tr>"
        )
    answerable = sum(i.answerable for i in main.items)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>
<style>body{{font-family:sans-serif;margin:2em}}
table{{border-collapse:collapse;margin:1em 0}}
td,th{{border:1px solid #ccc;padding:4px 8px;vertical-align:top;font-size:13px}}</style></head>
<body><h1>{e(title)}</h1>
<p>{len(main.items)} questions, {answerable} answerable; budget {main.budget:,} tokens.</p>
<h2>Measures</h2>
<table><tr><th>system</th><th>context recall</th><th>citation precision</th>
<th>fact containment</th><th>abstention</th><th>false abstention</th><th>context tokens</th></tr>
{"".join(rows)}</table>
<h2>Context recall by budget</h2>
<table><tr><th>budget</th><th>twokeys</th><th>top-k</th></tr>{"".join(recall_rows)}</table>
<h2>Risk-coverage</h2>
<p>All questions: coverage is the share of all questions answered; an answered
unanswerable question counts as a miss.</p>
{plot}
<h3>Answerable questions only</h3>
<p>Coverage is the share of the answerable questions answered; risk the share of those
answered whose cited blocks hold no gold fact.</p>
{plot_answerable}
<h2>Questions</h2>
<table><tr><th>id</th><th>question</th><th>gold</th><th>recall</th><th>packed</th><th>answer</th>
<th>confidence</th><th>why</th><th>right</th></tr>
{"".join(question_rows)}</table>
</body></html>
"""
