"""From chunk hits to document runs, and scoring runs with ir-measures."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from twokeys.evaluation.measures import evaluate_run
from twokeys.types import Hit

Run = dict[str, dict[str, float]]  # query id -> doc id -> score


def doc_ranking(hits: Iterable[Hit], depth: int) -> dict[str, float]:
    """Collapse ranked chunk hits to documents (each document at its best chunk's rank).

    Scores are derived from rank (``depth - rank + 1``), so ties from different
    retrievers' scales can't reorder documents inside ir-measures.

    Best chunk, not the sum of a document's best two chunks nor whole-document BM25, by
    measurement (issue 10): on the Git manual's dev split (long pages) the sum of the
    best two gained 0.013 nDCG@10 for BM25 and the hybrid, but on MEDLINE, CISI and
    Cranfield it lost 0.05-0.07 for BM25 and up to 0.016 for the hybrid (the sum favours
    the few documents long enough for two chunks). Whole-document BM25 (same analyzer,
    k1 and b) is below chunk BM25 on both documentation dev splits (Python 0.899 vs
    0.906, Git 0.796 vs 0.843), and fused with the hybrid's document ranking it lowered
    Git for every weight tried (min-max 0.1-0.3, RRF 0.25-1); see README "Figures".
    """
    ranking: dict[str, float] = {}
    for hit in hits:
        if hit.doc_id not in ranking:
            ranking[hit.doc_id] = float(depth - len(ranking))
            if len(ranking) == depth:
                break
    return ranking


def evaluate(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    measures: Sequence[str],
) -> dict[str, float]:
    """Mean of each measure (e.g. "nDCG@10", "R@100") over the judged queries."""
    return evaluate_run(qrels, run, measures).means


def doc_rank(hits: Iterable[Hit], doc_id: str) -> int | None:
    """1-based rank of ``doc_id`` among the distinct documents of ``hits``, or None."""
    seen: list[str] = []
    for hit in hits:
        if hit.doc_id not in seen:
            seen.append(hit.doc_id)
            if hit.doc_id == doc_id:
                return len(seen)
    return None
