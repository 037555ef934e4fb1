"""Run the example queries under BM25, dense and hybrid search and show where each lands.

python examples/compare_modes.py --index .demo/support-kb.twokeys
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from twokeys import open_index
from twokeys.evaluation.runs import doc_rank

HERE = Path(__file__).resolve().parent
MODES = ("bm25", "dense", "hybrid")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--queries", type=Path, default=HERE / "support-kb" / "queries.jsonl")
    args = parser.parse_args()
    queries = [json.loads(line) for line in args.queries.read_text().splitlines() if line.strip()]

    table = Table(title="Rank of the expected document (1 = top; - = not in top 10)")
    table.add_column("kind")
    table.add_column("query", max_width=58)
    for mode in MODES:
        table.add_column(mode, justify="right")
    top1 = {(m, k): 0 for m in MODES for k in ("identifier", "paraphrase")}
    totals = {"identifier": 0, "paraphrase": 0}
    with open_index(args.index) as kb:
        for q in queries:
            ranks = []
            for mode in MODES:
                rank = doc_rank(kb.search(q["query"], mode=mode, k=10), q["expected"])
                top1[(mode, q["kind"])] += rank == 1
                style = "green" if rank == 1 else ("yellow" if rank and rank <= 3 else "red")
                ranks.append(f"[{style}]{rank or '-'}[/{style}]")
            totals[q["kind"]] += 1
            table.add_row(q["kind"], q["query"], *ranks)
    for kind, n in totals.items():
        table.add_row(
            f"[bold]{kind}[/bold]",
            "[bold]top-1 count[/bold]",
            *(f"[bold]{top1[(m, kind)]}/{n}[/bold]" for m in MODES),
        )
    Console().print(table)


if __name__ == "__main__":
    main()
