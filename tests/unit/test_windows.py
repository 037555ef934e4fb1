"""Sentence windows (twokeys.rag.windows): the sentences that carry the query, from
many chunks, within the budget."""

from __future__ import annotations

from twokeys.rag.windows import GAP, WindowOptions, pack_windows
from twokeys.text.tokens import approx_token_counter
from twokeys.types import Chunk, Hit

FILLER = " ".join(f"Filler sentence number {i} says nothing useful here." for i in range(30))


def hit(doc: str, text: str, rank: int) -> Hit:
    return Hit(rank, 1.0 / rank, Chunk(doc, 0, text, 0, len(text), ("Guide", doc)), doc, doc)


def held_of(*words: str):  # type: ignore[no-untyped-def]
    def held(text: str) -> float:
        low = text.lower()
        return sum(w in low for w in words) / len(words)

    return held


def test_the_sentence_with_the_query_terms_is_kept_from_a_long_low_ranked_chunk() -> None:
    hits = [
        hit("a.md", FILLER, 1),
        hit("b.md", FILLER.replace("number 3", "number three"), 2),
        hit("c.md", f"{FILLER} The frobnicator runs every six weeks. {FILLER}", 3),
    ]
    blocks = pack_windows(hits, 120, approx_token_counter, held=held_of("frobnicator", "weeks"))
    text = "\n".join(b.render() for b in blocks)
    assert "The frobnicator runs every six weeks." in text
    assert blocks[0].path == "c.md" and blocks[0].number == 1
    assert blocks[0].trimmed and GAP.strip() not in blocks[0].text.split("weeks.")[0][:3]
    assert approx_token_counter(["\n\n".join(b.render() for b in blocks)])[0] <= 120


def test_a_window_brings_the_next_sentence_and_duplicates_are_skipped() -> None:
    body = f"{FILLER} The setting is named alpha. Its default is 42. {FILLER}"
    hits = [hit("a.md", body, 1), hit("copy.md", body, 2)]
    options = WindowOptions(before=0, after=1, dense=0.0)
    blocks = pack_windows(hits, 200, approx_token_counter, held=held_of("alpha"), options=options)
    text = "\n".join(b.render() for b in blocks)
    assert "The setting is named alpha. Its default is 42." in text
    assert text.count("named alpha") == 1  # the copy in copy.md is a duplicate


def test_dense_cosines_count_when_weighted() -> None:
    hits = [hit("a.md", "Cats purr. Dogs bark loudly.", 1)]

    def cosines(texts):  # type: ignore[no-untyped-def]
        return [1.0 if "bark" in t else 0.0 for t in texts]

    blocks = pack_windows(
        hits,
        17,  # the label and one sentence
        approx_token_counter,
        held=lambda _t: 0.0,
        cosines=cosines,
        options=WindowOptions(before=0, after=0, dense=1.0),
    )
    assert [b.text for b in blocks] == ["Dogs bark loudly."]
