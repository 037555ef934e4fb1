"""Bare identifiers (issue 33): a query that is one name (``isnan``, ``fetch.prune``,
``ManuallyDrop``) keeps the page BM25 finds for it.

On the collections ``benchmarks/identifiers.py`` builds from Debian's documentation
packages (the gold is the page defining the name, read from the pages' structure), the
default hybrid scores at least BM25's nDCG@10, and issue 10's property holds: when
BM25's top page holds a rare query term that no other page of its top 10 holds, the
hybrid keeps that page in its top 3.

``rust-ids-slice`` (the item pages of six ``std`` modules, about 110 pages and 90 names)
runs in ``make test``; the whole collections (thousands of names, many minutes to
embed) are ``full``. Indexes come from the eval cache (``$TWOKEYS_CACHE``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from test_exact_term_property import MAX_CHUNK_SHARE, _violations, property_cases

from conftest import ROOT
from twokeys import open_index
from twokeys.evaluation.beir import load_collection
from twokeys.evaluation.experiment import ensure_index, run_retrievers
from twokeys.evaluation.runs import evaluate

sys.path.insert(0, str(ROOT))  # benchmarks/ sits beside the package, not on the tests' path
from benchmarks.identifiers import PACKAGES, build, shared_index

pytestmark = pytest.mark.slow


def _collection(name: str) -> Path:
    """The collection built under the eval cache (the documentation fetched with
    ``apt-get download`` there when it is not installed)."""
    base = os.environ.get("TWOKEYS_CACHE") or str(Path.home() / ".cache" / "twokeys")
    out = Path(base) / "identifiers"
    try:
        build(out, [name])
    except SystemExit as exc:
        pytest.skip(f"{PACKAGES[name]}: {exc}")
    return out / name


def _check(name: str, max_chunk_share: float = MAX_CHUNK_SHARE) -> None:
    root = _collection(name)
    collection = load_collection(root, "test")
    prepared = ensure_index(collection, shared_index(root))  # the benchmark's index too
    with open_index(prepared.path) as index:
        runs = run_retrievers(index, collection, ["bm25", "hybrid"])
        cases = property_cases(index, collection.queries, max_chunk_share)
    scores = {
        name: evaluate(collection.qrels, run.run, ["nDCG@10"])["nDCG@10"]
        for name, run in runs.items()
    }
    assert scores["hybrid"] >= scores["bm25"], scores
    assert len(cases) >= 10, f"the property applies to {len(cases)} {name} queries"
    assert _violations(cases) == []


def test_rust_slice() -> None:
    """About 200 chunks: no term is in fewer than 0.1% of them, so the bound is lifted
    (as for the support KB): every name BM25's top page alone holds among its top 10."""
    _check("rust-ids-slice", max_chunk_share=1.0)


@pytest.mark.full
@pytest.mark.parametrize("name", ["python-ids", "rust-ids", "git-ids"])
def test_whole_collection(name: str) -> None:
    _check(name)
