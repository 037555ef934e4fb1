"""A self-contained HTML report of an evaluation: no scripts, no fonts, no network.

It holds the summary table (retriever x measure, ms/query), the paired comparison with
an inline SVG bar plot of the per-query nDCG@10 differences (sorted), and the queries
where BM25 and dense disagree. Every piece of text from the data is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

from twokeys.evaluation.disagreements import Disagreement, RankedDoc
from twokeys.evaluation.experiment import Experiment
from twokeys.evaluation.measures import PRIMARY, label
from twokeys.evaluation.significance import PairedComparison

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { padding: .25em .7em; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child, td:first-child { text-align: left; }
td.best { font-weight: bold; }
.muted { color: #777; } .rel { color: #2e7d32; } .nonrel { color: #999; }
.query { margin: 1.2em 0 .3em; } .reason { color: #555; font-style: italic; }
td.side { text-align: left; vertical-align: top; width: 50%; }
ol { margin: .2em 0; } svg { display: block; margin: .5em 0; }
"""


def render_report(experiment: Experiment, *, disagreements: int = 10) -> str:
    """The whole report as one HTML page; ``disagreements`` caps the queries listed."""
    e = experiment
    title = f"twokeys eval: {e.dataset} ({e.split or 'qrels'}, {len(e.queries)} queries)"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        "<h2>Summary</h2>",
        summary_table(e),
        '<p class="muted">Measures by ir-measures over document runs (chunk hits collapsed to '
        "their documents); ms/query is the mean wall time of one search.</p>",
    ]
    primary = [c for c in e.comparisons if c.measure == PRIMARY]
    if e.comparisons:
        a, b = e.comparisons[0].a, e.comparisons[0].b
        parts += [
            f"<h2>Paired comparison: {escape(b)} against {escape(a)}</h2>",
            comparison_table(e.comparisons),
        ]
        if primary:
            parts += [
                f"<h3>Per-query {escape(label(PRIMARY))} difference ({escape(b)} − {escape(a)})"
                "</h3>",
                delta_plot_svg(primary[0].deltas, e.queries, a, b),
            ]
    if e.disagreements:
        parts.append(disagreements_html(e, limit=disagreements))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def summary_table(e: Experiment) -> str:
    best = {m: max(e.scores[name].means[m] for name in e.runs) for m in e.measures}
    head = "".join(f"<th>{escape(label(m))}</th>" for m in e.measures)
    rows = []
    for name, run in e.runs.items():
        cells = []
        for m in e.measures:
            value = e.scores[name].means[m]
            mark = ' class="best"' if len(e.runs) > 1 and value == best[m] else ""
            cells.append(f"<td{mark}>{value:.4f}</td>")
        rows.append(
            f"<tr><td>{escape(name)}</td>{''.join(cells)}<td>{run.ms_per_query:.1f}</td></tr>"
        )
    return f"<table><tr><th>retriever</th>{head}<th>ms/query</th></tr>{''.join(rows)}</table>"


def comparison_table(comparisons: tuple[PairedComparison, ...]) -> str:
    a, b = comparisons[0].a, comparisons[0].b
    rows = []
    for c in comparisons:
        r = c.record
        rows.append(
            f"<tr><td>{escape(label(c.measure))}</td><td>{c.mean_a:.4f}</td>"
            f"<td>{c.mean_b:.4f}</td><td>{c.mean_delta:+.4f}</td>"
            f"<td>{r.wins} / {r.ties} / {r.losses}</td>"
            f"<td>{_p(c.t_pvalue)}</td><td>{_p(c.randomisation_pvalue)}</td></tr>"
        )
    first = comparisons[0]
    return (
        f"<table><tr><th>measure</th><th>{escape(a)}</th><th>{escape(b)}</th><th>Δ</th>"
        f"<th>{escape(b)} wins / ties / losses</th><th>paired t-test p</th>"
        f"<th>randomisation p</th></tr>{''.join(rows)}</table>"
        f'<p class="muted">{first.queries} queries; two-sided tests of mean Δ = 0; '
        f"randomisation: {first.permutations:,} sign flips (seed {first.seed}), "
        "Smucker, Allan &amp; Carterette, CIKM 2007.</p>"
    )


def _p(value: float) -> str:
    if value != value:  # nan
        return "n/a"
    return f"{value:.4f}" if value >= 1e-4 else "&lt; 0.0001"


def delta_plot_svg(
    deltas: Mapping[str, float],
    queries: Mapping[str, str],
    a: str,
    b: str,
    *,
    width: int = 760,
    height: int = 260,
) -> str:
    """Bars of ``b - a`` per query, largest first; each bar's tooltip names its query."""
    left, right, top, bottom = 52, 12, 14, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    ordered = sorted(deltas.items(), key=lambda item: (-item[1], item[0]))
    peak = max((abs(v) for v in deltas.values()), default=0.0)
    scale = max(0.25, -(-peak // 0.25) * 0.25)  # round the axis up to a multiple of 0.25
    zero_y = top + plot_h / 2

    def y(value: float) -> float:
        return zero_y - value / scale * (plot_h / 2)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(f"per-query difference, {b} minus {a}")}">'
    ]
    for tick in (scale, scale / 2, 0.0, -scale / 2, -scale):
        ty = y(tick)
        out.append(
            f'<line x1="{left}" x2="{width - right}" y1="{ty:.1f}" y2="{ty:.1f}" '
            f'stroke="{"#888" if tick == 0 else "#e4e4e4"}" stroke-width="1"/>'
            f'<text x="{left - 6}" y="{ty + 4:.1f}" font-size="11" text-anchor="end" '
            f'fill="#555">{tick:+.2f}</text>'
        )
    step = plot_w / max(1, len(ordered))
    bar_w = max(1.0, step * 0.8)
    for i, (qid, value) in enumerate(ordered):
        x = left + i * step + (step - bar_w) / 2
        y0, y1 = sorted((y(value), zero_y))
        fill = "#2e7d32" if value > 0 else "#c62828" if value < 0 else "#999"
        h = max(y1 - y0, 1.0)
        tip = f"{qid}: {value:+.4f} {queries.get(qid, '')}".strip()
        out.append(
            f'<rect x="{x:.2f}" y="{y0:.2f}" width="{bar_w:.2f}" '
            f'height="{h:.2f}" fill="{fill}"><title>{escape(tip)}</title></rect>'
        )
    better_b = sum(1 for v in deltas.values() if v > 0)
    better_a = sum(1 for v in deltas.values() if v < 0)
    caption = (
        f"{len(ordered)} queries, sorted; above zero: {b} better ({better_b}), "
        f"below: {a} better ({better_a})"
    )
    out.append(
        f'<text x="{left}" y="{height - 12}" font-size="12" fill="#333">{escape(caption)}</text>'
        "</svg>"
    )
    return "".join(out)


def disagreements_html(e: Experiment, *, limit: int) -> str:
    first = e.disagreements[0]
    titles: dict[str, str] = {}
    for run in e.runs.values():
        for docs in run.top.values():
            for doc in docs:
                titles.setdefault(doc.doc_id, doc.title)
    shown = e.disagreements[:limit]
    parts = [
        f"<h2>Where {escape(first.left)} and {escape(first.right)} disagree</h2>",
        f'<p class="muted">{len(e.disagreements)} of {len(e.queries)} queries: one side has a '
        "relevant document in its top 10 and the other not, or their top-1 differs. "
        f"Largest {escape(label(PRIMARY))} difference first; showing {len(shown)}.</p>",
    ]
    for d in shown:
        parts.append(_disagreement(d, titles))
    return "\n".join(parts)


def _disagreement(d: Disagreement, titles: Mapping[str, str]) -> str:
    def side(name: str, ndcg: float, docs: tuple[RankedDoc, ...]) -> str:
        items = "".join(
            f'<li class="{"rel" if doc.relevance > 0 else "nonrel"}">{escape(doc.doc_id)} '
            f"{escape(titles.get(doc.doc_id, ''))} "
            f"({'relevant ' + str(doc.relevance) if doc.relevance > 0 else 'not relevant'})</li>"
            for doc in docs
        )
        hits = items or "<li>no hits</li>"
        return f'<td class="side"><b>{escape(name)}</b> ({ndcg:.3f})<ol>{hits}</ol></td>'

    winner = "tie" if d.winner == "tie" else f"{d.winner} right"
    return (
        f'<p class="query"><b>{escape(d.query_id)}</b>: {escape(d.query)} '
        f'<span class="reason">{escape(d.reason)}; {escape(winner)}</span></p>'
        "<table><tr>"
        f"{side(d.left, d.left_ndcg, d.left_top)}{side(d.right, d.right_ndcg, d.right_top)}"
        "</tr></table>"
    )
