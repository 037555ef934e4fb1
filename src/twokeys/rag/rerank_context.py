"""Re-ranking the fused hits for the answer's context: a linear model over the evidence
any hybrid search gives.

The fused order ranks a chunk by what it alone shares with the question. In a manual the
right page is usually found, but the chunk that holds the answer is often not the one
that repeats the question's words: those stand in its heading or in the chunk before,
and the answer follows. This re-ranker scores each of the fused top N by evidence that
is about the chunk *in its page*, read from the hits themselves (no model call; the
sentences are compared with the question by static vectors only):

* its own fused rank and score, and its BM25 and dense ranks and scores (from the
  search's ``explain`` evidence; a sensor that did not return it counts as rank N);
* its page's rank (pages ordered by their best chunk) and its rank among its page's
  chunks;
* its neighbours: the fused score of the previous and of the next chunk of the page when
  they are among the hits, and the share of the question's idf mass each of them holds;
* the share of the question's idf mass its text and its heading path hold;
* its place in the page and its length;
* how far its best sentence's cosine to the question stands below the best one's among
  the hits (static MiniLM vectors, :mod:`twokeys.rag.sentence_reader`: the one feature
  that reads the text's meaning, tens of milliseconds for a hundred hits).

:class:`Model` is a linear score over standardised features; the shipped weights
(``rerank_context_weights.json`` beside this module) are fitted by
``python -m benchmarks.rerank_context train OUT --write`` on the train splits of the
blind answer sets (a chunk is relevant when it is from a gold page and holds a gold
fact). :func:`rerank` returns the hits in the model's order (ties keep the fused order),
each with its fused rank and score unchanged, for a packer to read in that order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from twokeys.errors import ConfigError
from twokeys.rag.linear import Linear
from twokeys.rag.sentence_reader import Reader
from twokeys.text.tokens import approx_token_counter
from twokeys.types import Hit

WEIGHTS = Path(__file__).with_name("rerank_context_weights.json")

#: the features, in the order :func:`features` writes them
NAMES = (
    "log_rank",
    "score_ratio",
    "bm25_log_rank",
    "bm25_ratio",
    "dense_log_rank",
    "dense_gap",
    "page_log_rank",
    "in_page_log_rank",
    "prev_score_ratio",
    "next_score_ratio",
    "prev_held",
    "next_held",
    "held",
    "heading_held",
    "log_position",
    "log_tokens",
    "sentence_gap",
)

Held = Callable[[str], float]


def _sensor(hit: Hit, kind: str) -> tuple[int, float] | None:
    """The (rank, score) the sensor of ``kind`` ("bm25" or "dense") gave ``hit``, if any."""
    for evidence in hit.evidence:
        if evidence.retriever == kind:
            return evidence.rank, evidence.score
    return None


def relative(scores: Sequence[float]) -> list[float]:
    """Each score relative to the best, rising with the score and 1 for the best:
    ``score / best`` when the best is positive; otherwise (the best is zero or negative,
    as some fusions and sensors score) ``(score - lowest) / (best - lowest)``, and 1 for
    every score when they are all equal."""
    if not scores:
        return []
    best = max(scores)
    if best > 0:
        return [s / best for s in scores]
    lowest = min(scores)
    if best == lowest:
        return [1.0] * len(scores)
    return [(s - lowest) / (best - lowest) for s in scores]


def features(
    hits: Sequence[Hit], held: Held, read: Reader | None = None
) -> npt.NDArray[np.float64]:
    """One row of :data:`NAMES` per hit of one fused run (in fused order), read from the
    hits alone; ``held(text)`` is the share of the question's idf mass ``text`` holds, and
    ``read(texts)`` each text's best sentence's cosine to the question
    (:func:`twokeys.rag.sentence_reader.static_reader`). Without ``read`` every hit's
    ``sentence_gap`` is 0, which leaves the order to the other features."""
    n = len(hits)
    out = np.zeros((n, len(NAMES)), dtype=np.float64)
    if n == 0:
        return out
    if read is not None:
        cosines = read([h.text for h in hits])
        gaps = cosines - cosines.max()
    else:
        gaps = np.zeros(n)
    missing = math.log1p(n)
    fused = relative([h.score for h in hits])
    sensors = {kind: [_sensor(h, kind) for h in hits] for kind in ("bm25", "dense")}
    bm25_scores = {n: s[1] for n, s in enumerate(sensors["bm25"]) if s is not None}
    bm25_ratio = dict(zip(bm25_scores, relative(list(bm25_scores.values())), strict=True))
    dense_top = max((s[1] for s in sensors["dense"] if s is not None), default=0.0)
    dense_floor = min((s[1] for s in sensors["dense"] if s is not None), default=0.0)
    page_rank: dict[str, int] = {}
    in_page: list[int] = []
    seen: dict[str, int] = {}
    by_id: dict[str, int] = {}
    for i, hit in enumerate(hits):
        doc = hit.chunk.doc_id
        page_rank.setdefault(doc, len(page_rank))
        in_page.append(seen.get(doc, 0))
        seen[doc] = seen.get(doc, 0) + 1
        by_id[hit.chunk.id] = i
    held_text = [held(h.text) for h in hits]
    for i, hit in enumerate(hits):
        chunk = hit.chunk
        bm25, dense = sensors["bm25"][i], sensors["dense"][i]
        prev = by_id.get(f"{chunk.doc_id}#{chunk.position - 1}")
        nxt = by_id.get(f"{chunk.doc_id}#{chunk.position + 1}")
        out[i] = (
            math.log1p(i),
            fused[i],
            math.log1p(bm25[0]) if bm25 is not None else missing,
            bm25_ratio.get(i, 0.0),
            math.log1p(dense[0]) if dense is not None else missing,
            (dense[1] if dense is not None else dense_floor) - dense_top,
            math.log1p(page_rank[chunk.doc_id]),
            math.log1p(in_page[i]),
            fused[prev] if prev is not None else 0.0,
            fused[nxt] if nxt is not None else 0.0,
            held_text[prev] if prev is not None else 0.0,
            held_text[nxt] if nxt is not None else 0.0,
            held_text[i],
            held(" ".join(chunk.heading_path)) if chunk.heading_path else 0.0,
            math.log1p(chunk.position),
            math.log1p(approx_token_counter([hit.text])[0]),
            gaps[i],
        )
    return out


@dataclass(frozen=True)
class Model(Linear):
    """The re-ranker's linear score over :data:`NAMES` (standardised; see
    :class:`~twokeys.rag.linear.Linear`)."""

    kind: ClassVar[str] = "rerank_context"

    def __post_init__(self) -> None:
        """Refused when it is for other features than :data:`NAMES`, however it was made
        (read from a file or built by a fit)."""
        super().__post_init__()
        if self.names != NAMES:
            raise ConfigError(
                f"{self.kind}: the weights are for other features "
                f"({', '.join(self.names)}); refit them"
            )


@cache
def shipped_model() -> Model:
    """The weights that ship beside this module (a file missing or damaged in an install
    is a :class:`~twokeys.errors.ConfigError` naming it, not a traceback)."""
    return Model.load(WEIGHTS)


def rerank(
    hits: Sequence[Hit], held: Held, model: Model | None = None, read: Reader | None = None
) -> list[Hit]:
    """``hits`` (one fused run, best first, with ``explain`` evidence) in the model's
    order, best first; equal scores keep the fused order. Hits are returned unchanged.
    ``read``: as :func:`features` reads it (the shipped weights were fitted with
    :func:`~twokeys.rag.sentence_reader.static_reader`)."""
    if len(hits) < 2:
        return list(hits)
    scores = (model or shipped_model()).scores(features(hits, held, read))
    order = sorted(range(len(hits)), key=lambda i: (-float(scores[i]), i))
    return [hits[i] for i in order]
