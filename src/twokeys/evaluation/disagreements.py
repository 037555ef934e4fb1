"""The queries where two retrievers (typically BM25 and dense) disagree most.

A query is a disagreement when exactly one side has a relevant document in its top
``depth`` (10), or when the two sides' top-1 documents differ. They are listed by the
size of the per-query nDCG@10 difference, largest first: the view that shows which
sensor a collection's queries need. nDCG@10 values come in from ir-measures
(:mod:`twokeys.evaluation.measures`); this module only compares rankings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

TIE = "tie"


@dataclass(frozen=True)
class Side:
    """One retriever's view of the queries: ranked doc ids and per-query nDCG@10."""

    name: str
    rankings: Mapping[str, Sequence[str]]  # query id -> doc ids, best first
    ndcg: Mapping[str, float]  # query id -> nDCG@10


@dataclass(frozen=True)
class RankedDoc:
    """A document in a side's top list and its judged relevance (0 when unjudged)."""

    doc_id: str
    relevance: int


@dataclass(frozen=True)
class Disagreement:
    """One query the two sides disagree on, with each side's top documents."""

    query_id: str
    query: str
    reason: str  # e.g. "only dense has a relevant doc in its top 10", "top-1 differs"
    left: str
    right: str
    left_top: tuple[RankedDoc, ...]
    right_top: tuple[RankedDoc, ...]
    left_ndcg: float
    right_ndcg: float
    winner: str  # the side with the higher nDCG@10, or "tie"

    @property
    def delta(self) -> float:
        """Right minus left nDCG@10."""
        return self.right_ndcg - self.left_ndcg


def _has_relevant(ranking: Sequence[str], judged: Mapping[str, int], depth: int) -> bool:
    return any(judged.get(doc, 0) > 0 for doc in ranking[:depth])


def find_disagreements(
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    left: Side,
    right: Side,
    *,
    depth: int = 10,
    shown: int = 3,
) -> list[Disagreement]:
    """Every disagreement on the judged queries, largest ``|ΔnDCG@10|`` first.

    Ties in the difference are ordered by query id (numerically where it is a number), so
    the list is deterministic.
    """
    found: list[Disagreement] = []
    for qid, judged in qrels.items():
        left_rank = left.rankings.get(qid, ())
        right_rank = right.rankings.get(qid, ())
        left_found = _has_relevant(left_rank, judged, depth)
        right_found = _has_relevant(right_rank, judged, depth)
        if left_found != right_found:
            only = left.name if left_found else right.name
            reason = f"only {only} has a relevant doc in its top {depth}"
        elif list(left_rank[:1]) != list(right_rank[:1]):
            reason = "top-1 differs"
        else:
            continue
        left_ndcg = float(left.ndcg.get(qid, 0.0))
        right_ndcg = float(right.ndcg.get(qid, 0.0))
        if left_ndcg > right_ndcg:
            winner = left.name
        elif right_ndcg > left_ndcg:
            winner = right.name
        else:
            winner = TIE
        found.append(
            Disagreement(
                query_id=qid,
                query=queries.get(qid, ""),
                reason=reason,
                left=left.name,
                right=right.name,
                left_top=tuple(RankedDoc(d, judged.get(d, 0)) for d in left_rank[:shown]),
                right_top=tuple(RankedDoc(d, judged.get(d, 0)) for d in right_rank[:shown]),
                left_ndcg=left_ndcg,
                right_ndcg=right_ndcg,
                winner=winner,
            )
        )
    found.sort(key=lambda item: (-abs(item.delta), natural_key(item.query_id)))
    return found


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that orders "q2" before "q10"."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part
    )
