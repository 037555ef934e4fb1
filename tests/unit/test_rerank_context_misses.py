"""benchmarks.rerank_context's miss_reason: why a gold fact is not in a packed context."""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks import rerank_context as rc

from twokeys.evaluation.answers import GoldFact
from twokeys.rag.packing import Budget, PackedContext, SubQueryHits, pack
from twokeys.text.tokens import approx_token_counter
from twokeys.types import Chunk, Hit

FILLER = "The valve opens slowly when the pump starts. "


def _hit(doc: str, position: int, text: str, rank: int) -> Hit:
    chunk = Chunk(doc, position, text, 1000 * position, 1000 * position + len(text), ("Guide",))
    return Hit(rank, 1.0 / rank, chunk, doc.title(), f"{doc}.md")


def _pack(hits: Sequence[Hit], context: int) -> PackedContext:
    frame = Budget(total=context + 1, answer=1, instructions=0, question=0, min_context=0)
    return pack([SubQueryHits("q", tuple(hits))], frame, approx_token_counter)


GOLD = GoldFact("gold.md", "the blue lever resets the meter")


def test_a_packed_fact_is_no_miss() -> None:
    hits = [_hit("gold", 0, "Pull it: the blue lever resets the meter.", 1)]
    assert rc.miss_reason(hits, _pack(hits, 200), GOLD) is None


def test_retrieval_misses() -> None:
    other = [_hit(f"doc{n}", 0, FILLER, n + 1) for n in range(3)]
    assert rc.miss_reason(other, _pack(other, 200), GOLD) == rc.MISS_REASONS[0]
    gold = _hit("gold", 0, "Pull it: the blue lever resets the meter.", 4)
    hits = [*other, gold]
    # ranked past the hits pack reads (here 2)
    assert rc.miss_reason(hits, _pack(hits[:2], 200), GOLD, depth=2) == rc.MISS_REASONS[1]


def test_packing_misses() -> None:
    long = [_hit(f"doc{n}", 0, FILLER * 6, n + 1) for n in range(3)]
    gold = _hit("gold", 0, "Pull it: the blue lever resets the meter.", 4)
    hits = [*long, gold]
    spent = _pack(hits, 60)  # the first chunks use the budget up
    assert rc.miss_reason(hits, spent, GOLD) == rc.MISS_REASONS[2]
    wordy = _hit(
        "gold", 0, "Pull it now, " + "very " * 40 + "hard: the blue lever resets the meter.", 2
    )
    hits = [long[0], wordy]
    over = _pack(hits, 80)  # what is left holds not even its first sentence
    assert rc.miss_reason(hits, over, GOLD) == rc.MISS_REASONS[3]
    copy = _hit("gold", 0, "Pull it: the blue lever resets the meter.", 2)
    hits = [_hit("copy", 0, "Pull it: the blue lever resets the meter.", 1), copy]
    assert rc.miss_reason(hits, _pack(hits, 200), GOLD) == rc.MISS_REASONS[4]
    cut = _hit("gold", 0, FILLER * 3 + "Pull it: the blue lever resets the meter.", 1)
    assert rc.miss_reason([cut], _pack([cut], 25), GOLD) == rc.MISS_REASONS[5]
