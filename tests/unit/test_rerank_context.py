"""The context re-ranker: its features read the hits as documented, and its order follows
the model's weights."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from twokeys.errors import ConfigError
from twokeys.rag import rerank_context
from twokeys.rag.rerank_context import (
    NAMES,
    WEIGHTS,
    Model,
    features,
    relative,
    rerank,
    shipped_model,
)
from twokeys.types import Chunk, Evidence, Hit


def _hit(
    rank: int,
    score: float,
    doc: str,
    position: int,
    text: str,
    bm25: int | None = None,
    dense: tuple[int, float] | None = None,
    heading: tuple[str, ...] = (),
) -> Hit:
    chunk = Chunk(doc, position, text, 0, len(text), heading)
    evidence = []
    if bm25 is not None:
        evidence.append(Evidence("bm25", bm25, 10.0 / (bm25 + 1)))
    if dense is not None:
        evidence.append(Evidence("dense", dense[0], dense[1]))
    return Hit(rank, score, chunk, doc, f"{doc}.md", tuple(evidence))


def _held(words: set[str]):  # type: ignore[no-untyped-def]
    def held(text: str) -> float:
        found = {w.strip(".,").lower() for w in text.split()}
        return len(words & found) / len(words)

    return held


HITS = [
    _hit(
        1, 0.9, "a", 3, "How to set the stash option.", bm25=0, dense=(1, 0.6), heading=("Stash",)
    ),
    _hit(2, 0.6, "b", 0, "Unrelated words here.", dense=(0, 0.7)),
    _hit(3, 0.5, "a", 4, "It keeps the index intact.", bm25=1),
    _hit(4, 0.3, "a", 9, "Other text.", bm25=2, dense=(2, 0.4)),
]


def test_features_read_the_hits() -> None:
    x = features(HITS, _held({"stash", "option"}))
    assert x.shape == (4, len(NAMES))
    col = {name: x[:, i] for i, name in enumerate(NAMES)}
    assert list(col["log_rank"]) == pytest.approx([math.log1p(i) for i in range(4)])
    assert list(col["score_ratio"]) == pytest.approx([1.0, 0.6 / 0.9, 0.5 / 0.9, 0.3 / 0.9])
    # a sensor that did not return the hit counts as rank N
    assert col["bm25_log_rank"][1] == pytest.approx(math.log1p(4))
    assert col["dense_log_rank"][2] == pytest.approx(math.log1p(4))
    assert col["dense_gap"][1] == pytest.approx(0.0)  # the best cosine
    assert col["dense_gap"][2] == pytest.approx(0.4 - 0.7)  # missing: the lowest seen
    # pages by their best chunk; a chunk's rank among its page's
    assert list(col["page_log_rank"]) == pytest.approx([0, math.log1p(1), 0, 0])
    assert list(col["in_page_log_rank"]) == pytest.approx([0, 0, math.log1p(1), math.log1p(2)])
    # neighbours: a#4 follows a#3, which holds the question's words; a#9 has none here
    assert col["prev_score_ratio"][2] == pytest.approx(1.0)
    assert col["prev_held"][2] == pytest.approx(1.0)
    assert col["next_held"][0] == 0.0 and col["next_held"][3] == 0.0
    assert col["next_score_ratio"][0] == pytest.approx(0.5 / 0.9)
    assert col["prev_score_ratio"][3] == 0.0 and col["next_score_ratio"][3] == 0.0
    assert col["heading_held"][0] == pytest.approx(0.5) and col["heading_held"][2] == 0.0
    assert list(col["log_position"]) == pytest.approx([math.log1p(p) for p in (3, 0, 4, 9)])


def _model(**weights: float) -> Model:
    n = len(NAMES)
    return Model(NAMES, (0.0,) * n, (1.0,) * n, tuple(weights.get(k, 0.0) for k in NAMES))


def test_order_follows_the_weights() -> None:
    held = _held({"stash", "option"})
    # only the fused rank: the fused order
    assert rerank(HITS, held, _model(log_rank=-1.0)) == HITS
    # the chunk after a strong chunk first
    after = rerank(HITS, held, _model(prev_score_ratio=1.0))
    assert after[0] is HITS[2]
    assert after[1:] == [HITS[0], HITS[1], HITS[3]]  # ties keep the fused order
    # a zero model changes nothing
    assert rerank(HITS, held, _model()) == HITS
    assert rerank(HITS[:1], held, _model(log_rank=5.0)) == HITS[:1]


def test_model_round_trip_and_refusals() -> None:
    model = _model(held=2.0, log_rank=-1.0)
    again = Model.from_dict(model.to_dict())
    assert again == model
    rows = features(HITS, _held({"stash"}))
    assert np.allclose(again.scores(rows), model.scores(rows))
    with pytest.raises(ConfigError, match="other features"):
        Model.from_dict(
            {**model.to_dict(), "names": ["x"], "means": [0], "scales": [1], "weights": [1]}
        )
    with pytest.raises(ConfigError, match="positive"):
        Model(NAMES, (0.0,) * len(NAMES), (0.0,) * len(NAMES), (1.0,) * len(NAMES))
    # built, not read: a model of the features before the last one added is refused
    # where it is made, not by a shape error when it scores
    n = len(NAMES) - 1
    with pytest.raises(ConfigError, match="rerank_context: the weights are for other features"):
        Model(NAMES[:n], (0.0,) * n, (1.0,) * n, (1.0,) * n)
    with pytest.raises(ConfigError, match="w.json: rerank_context: .* other features"):
        Model.from_dict({**model.to_dict(), "names": list(reversed(NAMES))}, "w.json")


def test_shipped_weights_load() -> None:
    model = shipped_model()
    assert model.names == NAMES
    assert model.trained_on  # says what it was fitted on
    assert any(w != 0 for w in model.weights)


def test_score_ratios_rise_with_the_score_whatever_the_top_score() -> None:
    col = {name: i for i, name in enumerate(NAMES)}
    for scores in ((-1.0, -2.0, -3.0, -4.0), (0.0, -0.5, -1.0, -2.0), (0.0, 0.0, 0.0, 0.0)):
        hits = [
            Hit(n + 1, s, h.chunk, h.doc_id, h.path, (Evidence("bm25", n, s),))
            for n, (s, h) in enumerate(zip(scores, HITS, strict=True))
        ]
        x = features(hits, _held({"stash"}))
        for name in ("score_ratio", "bm25_ratio"):
            ratio = list(x[:, col[name]])
            assert ratio[0] == pytest.approx(1.0)  # the best
            assert all(0.0 <= r <= 1.0 for r in ratio)
            assert ratio == sorted(ratio, reverse=True)  # never above a better score's
        # a#4 follows a#3, the best hit
        assert x[2, col["prev_score_ratio"]] == pytest.approx(1.0)


def test_relative_scores() -> None:
    assert relative([2.0, 1.0, -1.0]) == pytest.approx([1.0, 0.5, -0.5])
    assert relative([-1.0, -2.0, -3.0]) == pytest.approx([1.0, 0.5, 0.0])
    assert relative([0.0, 0.0]) == [1.0, 1.0]
    assert relative([]) == []


def test_sentence_gap_reads_the_best_sentence_below_the_best_hit() -> None:
    col = NAMES.index("sentence_gap")

    def read(texts: Sequence[str]) -> npt.NDArray[np.float64]:
        return np.array([0.2, 0.5, 0.9, 0.1][: len(texts)])

    x = features(HITS, _held({"stash"}), read)
    assert list(x[:, col]) == pytest.approx([-0.7, -0.4, 0.0, -0.8])
    assert list(features(HITS, _held({"stash"}))[:, col]) == [0.0] * 4  # no reader
    # the chunk whose sentence reads closest to the question first
    assert rerank(HITS, _held({"stash"}), _model(sentence_gap=1.0), read)[0] is HITS[2]


@pytest.mark.parametrize("damage", ["missing", "truncated", "a list"])
def test_a_missing_or_damaged_shipped_weights_file_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    """``ask --order learned`` reads the shipped file: an install without it, or with a
    damaged one, says which file, as the confidence's loader does."""
    path = tmp_path / "rerank_context_weights.json"
    if damage == "truncated":
        path.write_text(WEIGHTS.read_text(encoding="utf-8")[:200], encoding="utf-8")
    elif damage == "a list":
        path.write_text("[]", encoding="utf-8")
    monkeypatch.setattr(rerank_context, "WEIGHTS", path)
    shipped_model.cache_clear()
    try:
        with pytest.raises(ConfigError, match="rerank_context_weights.json: "):
            shipped_model()
    finally:
        shipped_model.cache_clear()
