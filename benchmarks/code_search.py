"""Symbol-level code search on a real repository: requests 2.32.3, from its PyPI sdist.

``python -m benchmarks.code_search`` fetches the sdist the way a user would
(``pip download --no-deps --no-binary :all: requests==2.32.3``, into ``--cache``,
default ``/work/cache/code``; nothing is fetched when it is there), indexes its
``src/requests`` folder with twokeys' code reader (tree-sitter, one segment per
function/class/method) and the default MiniLM encoder, and runs the 48 queries of
``benchmarks/code_search/requests-2.32.3.tsv`` (24 ``symbol`` queries, a name as a
user types it, and 24 ``behaviour`` queries, what the code does in words; written from
memory of the library's API before any retrieval was run) with bm25, dense and hybrid.

Relevance is per symbol: a query's gold is one or more symbol paths
(``sessions.SessionRedirectMixin.resolve_redirects``). A run's ranked chunks become a
ranked list of symbols (each chunk's :attr:`~twokeys.types.Locator.symbol`, the first
chunk of a symbol giving its rank; a long method has several chunks), scored by
nDCG@10 and Recall@10 (ir-measures). Prints a table per query kind; the figures are in
``benchmarks/RESULTS.md`` ("Code search") and ``benchmarks/results/code-search.json``.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path

from benchmarks.common import log, save_result
from twokeys.engine import open_index
from twokeys.evaluation.measures import Evaluator
from twokeys.indexer import IndexOptions, build_index

PACKAGE = "requests"
VERSION = "2.32.3"
QUERIES = Path(__file__).resolve().parent / "code_search" / f"{PACKAGE}-{VERSION}.tsv"
MODES = ("bm25", "dense", "hybrid")
KINDS = ("symbol", "behaviour")
CHUNK_DEPTH = 50  # chunks retrieved per query, enough for 10 distinct symbols
MEASURES = ("nDCG@10", "R@10")


def fetch(cache: Path) -> Path:
    """The sdist's package folder, downloaded and unpacked into ``cache`` if missing."""
    folder = cache / f"{PACKAGE}-{VERSION}" / "src" / PACKAGE
    if folder.is_dir():
        return folder
    cache.mkdir(parents=True, exist_ok=True)
    archive = cache / f"{PACKAGE}-{VERSION}.tar.gz"
    if not archive.exists():
        log(f"downloading the {PACKAGE} {VERSION} sdist")
        subprocess.run(
            [
                *(sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"),
                *("--no-binary", ":all:", f"{PACKAGE}=={VERSION}", "--dest", str(cache)),
            ],
            check=True,
        )
    with tarfile.open(archive) as tar:
        tar.extractall(cache, filter="data")
    return folder


def load_queries() -> list[dict[str, str]]:
    lines = QUERIES.read_text(encoding="utf-8").splitlines()
    rows = csv.DictReader((ln for ln in lines if not ln.startswith("#")), delimiter="\t")
    return list(rows)


def symbol_run(hits: list[object]) -> dict[str, float]:
    """Ranked chunks as ranked symbols: each symbol at its first chunk's rank."""
    ranked: list[str] = []
    for hit in hits:
        locator = getattr(hit, "locator", None)
        symbol = locator.symbol if locator is not None else None
        if symbol and symbol not in ranked:
            ranked.append(symbol)
    return {symbol: float(len(ranked) - i) for i, symbol in enumerate(ranked)}


def evaluate(index: Path, queries: list[dict[str, str]]) -> dict[str, dict[str, dict[str, float]]]:
    """mode -> kind -> measure -> mean."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    with open_index(index) as kb:
        for mode in MODES:
            run = {
                q["id"]: symbol_run(list(kb.search(q["query"], mode=mode, k=CHUNK_DEPTH)))
                for q in queries
            }
            out[mode] = {}
            for kind in (*KINDS, "all"):
                chosen = [q for q in queries if kind in ("all", q["kind"])]
                qrels: Mapping[str, Mapping[str, int]] = {
                    q["id"]: dict.fromkeys(q["gold"].split("|"), 1) for q in chosen
                }
                scores = Evaluator(qrels, MEASURES).score({q["id"]: run[q["id"]] for q in chosen})
                out[mode][kind] = {m: round(v, 4) for m, v in scores.means.items()}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, default=Path("/work/cache/code"))
    args = parser.parse_args()
    source = fetch(args.cache)
    queries = load_queries()
    with tempfile.TemporaryDirectory() as tmp:
        index = Path(tmp) / "index"
        report = build_index(source, index, IndexOptions())
        log(f"indexed {report.documents} files, {report.chunks} chunks in {report.seconds:.1f}s")
        results = evaluate(index, queries)
    print(
        f"{PACKAGE} {VERSION}: {report.documents} files, {report.chunks} chunks, "
        f"{len(queries)} queries; symbol-level nDCG@10 / Recall@10"
    )
    print(f"{'mode':8}" + "".join(f"{k:>22}" for k in (*KINDS, "all")))
    for mode, kinds in results.items():
        cells = "".join(
            f"{kinds[k]['nDCG@10']:>13.3f} / {kinds[k]['R@10']:.3f}" for k in (*KINDS, "all")
        )
        print(f"{mode:8}{cells}")
    save_result(
        "code-search",
        {
            "repository": f"{PACKAGE} {VERSION} (PyPI sdist)",
            "files": report.documents,
            "chunks": report.chunks,
            "queries": {k: sum(q["kind"] == k for q in queries) for k in KINDS},
            "results": results,
        },
    )


if __name__ == "__main__":
    main()
