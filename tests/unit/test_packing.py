"""The context packer: budgets, whole sentences, de-duplication, merging, fairness."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

import pytest

from twokeys.chunking import approx_token_counter
from twokeys.errors import ConfigError
from twokeys.rag.ask import quote_evidence
from twokeys.rag.packing import (
    EXCERPT_TOKENS,
    SEPARATOR,
    Budget,
    SubQueryHits,
    pack,
)
from twokeys.text.sentences import split_sentences
from twokeys.types import Chunk, Hit

SENTENCE = "Sentence {i} of {doc} explains the {topic} setting in plain words."


def words(texts: Sequence[str]) -> list[int]:
    """One token per whitespace-separated word: easy to compute by hand."""
    return [len(t.split()) for t in texts]


def make_doc(doc: str, n_chunks: int, sentences: int = 4, topic: str = "power") -> list[Chunk]:
    """Chunks of one document laid out like the chunker's: one sentence of overlap."""
    body = [
        SENTENCE.format(i=i, doc=doc, topic=topic) for i in range(n_chunks * (sentences - 1) + 1)
    ]
    text = " ".join(body)
    starts = [sum(len(s) + 1 for s in body[:i]) for i in range(len(body))]
    chunks = []
    for c in range(n_chunks):
        first, last = c * (sentences - 1), c * (sentences - 1) + sentences - 1
        start, end = starts[first], starts[last] + len(body[last])
        chunks.append(Chunk(doc, c, text[start:end], start, end, ("Guide", doc)))
    return chunks


def hit(chunk: Chunk, rank: int, path: str | None = None) -> Hit:
    return Hit(rank, 1.0 / rank, chunk, chunk.doc_id.title(), path or f"{chunk.doc_id}.md")


def run(query: str, chunks: Sequence[Chunk]) -> SubQueryHits:
    return SubQueryHits(query, tuple(hit(c, i) for i, c in enumerate(chunks, 1)))


def budget_for_context(context: int, answer: int = 10) -> Budget:
    return Budget(total=context + answer, answer=answer, instructions=0, question=0, min_context=0)


# --- budgets -----------------------------------------------------------------------------


def test_budget_is_never_exceeded_and_blocks_end_at_sentence_ends() -> None:
    rng = random.Random(7)
    docs = [make_doc(f"doc{d}", 4, sentences=rng.randint(2, 6)) for d in range(6)]
    all_chunks = [c for d in docs for c in d]
    for context in range(20, 900, 23):
        runs = [run(f"q{i}", rng.sample(all_chunks, 8)) for i in range(rng.randint(1, 3))]
        packed = pack(runs, budget_for_context(context), approx_token_counter)
        used = approx_token_counter([packed.text])[0] if packed.blocks else 0
        assert used <= context
        assert packed.section("context").used == used
        assert sum(q.tokens for q in packed.queries) == used
        for block in packed.blocks:
            assert block.text.rstrip().endswith((".", "!", "?"))  # whole sentences only
            assert block.tokens == approx_token_counter([block.render()])[0]


def test_sections_have_their_own_budgets_and_the_context_gets_the_rest() -> None:
    chunks = make_doc("a", 3)
    budget = Budget(total=400, answer=100, instructions=50, question=40, min_context=100)
    packed = pack(
        [run("q", chunks)], budget, words, fixed={"instructions": "x " * 30, "question": "y " * 10}
    )
    sections = {s.name: (s.budget, s.used) for s in packed.sections}
    assert sections["instructions"] == (50, 30)
    assert sections["question"] == (40, 10)
    assert sections["answer"] == (100, 0)
    assert sections["context"][0] == 400 - 100 - 30 - 10  # unused caps flow to the context
    assert sections["context"][1] <= sections["context"][0]
    assert packed.total == 400


def test_a_long_question_cannot_starve_the_context() -> None:
    budget = Budget(total=400, answer=100, instructions=50, question=40, min_context=100)
    with pytest.raises(ConfigError, match="question: 60 tokens, over its budget of 40"):
        pack([run("q", make_doc("a", 2))], budget, words, fixed={"question": "w " * 60})
    assert budget.context_floor == 210


def test_budget_validation() -> None:
    with pytest.raises(ConfigError, match="leave 16 for retrieved context"):
        Budget(total=400, answer=128, instructions=128, question=128)
    with pytest.raises(ConfigError, match="budget.answer"):
        Budget(answer=0)
    with pytest.raises(ConfigError, match="at least 512"):
        Budget.for_total(300)
    b = Budget.for_total(1024)
    assert (b.answer, b.instructions, b.question, b.context_floor) == (256, 192, 128, 448)
    with pytest.raises(ConfigError, match="unknown section 'system'"):
        pack([], b, words, fixed={"system": "x"})


def test_a_superadditive_tokenizer_still_fits_after_the_final_check() -> None:
    # one extra token per full 200 characters of a text: the joined context costs more
    # than the sum of its blocks, which the final count catches
    def lumpy(texts: Sequence[str]) -> list[int]:
        return [len(t.split()) + len(t) // 200 for t in texts]

    chunks = [c for d in ("a", "b", "c", "d") for c in make_doc(d, 2)]
    for context in (60, 120, 200, 333):
        packed = pack([run("q", chunks)], budget_for_context(context), lumpy)
        assert lumpy([packed.text])[0] <= context


# --- de-duplication and merging ----------------------------------------------------------


def test_the_same_chunk_from_two_sub_queries_is_one_block() -> None:
    a = make_doc("a", 1)[0]
    b = make_doc("b", 1, topic="network")[0]
    packed = pack([run("q1", [a]), run("q2", [a, b])], budget_for_context(500), words)
    assert [blk.chunk_ids for blk in packed.blocks] == [(a.id,), (b.id,)]
    assert packed.blocks[0].queries == (0, 1)
    assert any(s.chunk_id == a.id and s.reason == "already in [1]" for s in packed.skipped)


def test_near_duplicate_text_from_another_document_is_dropped() -> None:
    original = make_doc("policy", 1)[0]
    copy = Chunk("archive/policy", 0, original.text.replace("plain words", "plain terms", 1), 0, 99)
    other = make_doc("other", 1, topic="camera")[0]
    packed = pack([run("q", [original, copy, other])], budget_for_context(500), words)
    assert [b.chunk_ids[0] for b in packed.blocks] == [original.id, other.id]
    assert ("archive/policy#0", "near-duplicate of [1]") in {
        (s.chunk_id, s.reason) for s in packed.skipped
    }


def test_adjacent_chunks_merge_in_reading_order_without_the_overlap() -> None:
    c0, c1, c2 = make_doc("guide", 3)
    doc_text = " ".join(  # the document text the chunks were cut from
        SENTENCE.format(i=i, doc="guide", topic="power") for i in range(10)
    )
    # ranked out of reading order, and interleaved with another document
    other = make_doc("other", 1, topic="camera")[0]
    packed = pack([run("q", [c1, other, c0, c2])], budget_for_context(1000), words)
    first = packed.blocks[0]
    assert first.number == 1 and first.chunk_ids == (c0.id, c1.id, c2.id)
    assert first.text == doc_text[c0.start : c2.end]  # overlap sentences appear once
    assert first.text.count("Sentence 3 of guide") == 1
    assert [b.number for b in packed.blocks] == [1, 2]
    assert packed.blocks[1].chunk_ids == (other.id,)


def test_a_heading_change_inside_a_merged_block_is_written_as_a_heading() -> None:
    a = Chunk("d", 0, "Intro text ends here.", 0, 21, ("Doc",))
    b = Chunk("d", 1, "Setup text starts here.", 35, 58, ("Doc", "Setup"))
    packed = pack([run("q", [a, b])], budget_for_context(200), words)
    assert packed.blocks[0].text == "Intro text ends here.\n\n## Setup\n\nSetup text starts here."
    assert packed.blocks[0].label == "[1] d.md | Doc"
    # a neighbour cut to fit keeps the heading line that leads it
    c = Chunk("d", 1, "Setup text starts here. It goes on at length.", 35, 80, ("Doc", "Setup"))
    budget = budget_for_context(17)  # the intro block (8) and the heading with one sentence (6)
    (block,) = pack([run("q", [a, c])], budget, words).blocks
    assert block.trimmed
    assert block.text == "Intro text ends here.\n\n## Setup\n\nSetup text starts here."


def test_labels_carry_number_path_and_heading_path() -> None:
    chunk = Chunk(
        "errors/zx-4821.md", 0, "ZX-4821 means low voltage.", 0, 26, ("Error ZX-4821", "Summary")
    )
    packed = pack(
        [SubQueryHits("q", (hit(chunk, 1, "errors/zx-4821.md"),))], budget_for_context(100), words
    )
    assert packed.text == (
        "[1] errors/zx-4821.md | Error ZX-4821 > Summary\nZX-4821 means low voltage."
    )


# --- trimming ------------------------------------------------------------------------------


def test_a_block_that_does_not_fit_is_cut_after_a_whole_sentence() -> None:
    chunk = make_doc("long", 1, sentences=6)[0]
    label = 3  # "[1] long.md | Guide > long"
    per_sentence = len(SENTENCE.split())  # 11 words each
    packed = pack([run("q", [chunk])], budget_for_context(label + 2 * per_sentence + 5), words)
    (block,) = packed.blocks
    assert block.trimmed
    assert chunk.text.startswith(block.text)
    assert len(split_sentences(block.text)) == 2
    # not even one sentence fits: skipped, not cut mid-sentence
    packed = pack([run("q", [chunk])], budget_for_context(label + per_sentence - 1), words)
    assert packed.blocks == () and packed.skipped[0].reason == "over budget"


def test_with_a_focus_a_cut_keeps_the_sentences_that_hold_the_query() -> None:
    c0, c1 = make_doc("long", 2, sentences=6)
    text = c1.text
    spans = split_sentences(text)
    answer = text[spans[3][0] : spans[3][1]]  # "Sentence 8 of long ..."

    def focus(query: int, piece: str) -> float:
        assert query == 0
        return float("Sentence 8 " in piece)

    label = 3
    per_sentence = len(SENTENCE.split())
    budget = budget_for_context(label + 2 * per_sentence + 5)
    (block,) = pack([run("q", [c1])], budget, words, focus=focus).blocks
    assert block.trimmed and answer in block.text and block.text in text
    assert len(split_sentences(block.text)) == 2
    # past the prefix that fits: the run through it that starts as early as fits
    assert block.text.startswith("Sentence 7 ")
    # without a focus, the prefix, as before
    (prefix,) = pack([run("q", [c1])], budget, words).blocks
    assert text.startswith(prefix.text) and answer not in prefix.text
    # nothing rates higher than the rest: the prefix too
    (flat,) = pack([run("q", [c1])], budget, words, focus=lambda q, t: 0.0).blocks
    assert flat.text == prefix.text

    # the prefix holds the best-rated sentence: kept, though a later run rates as high
    def early(query: int, piece: str) -> float:
        return float("Sentence 6 " in piece) + 0.5 * ("Sentence 9 " in piece)

    (kept,) = pack([run("q", [c1])], budget, words, focus=early).blocks
    assert kept.text == prefix.text
    # a block whose head was cut is not extended backwards (the text would have a gap):
    # four other parts keep the first round's share small, and leave room for c0 after
    others = [run(f"q{i}", [Chunk(f"t{i}", 0, "A tiny note.", 0, 12, ("T",))]) for i in range(4)]
    packed = pack([run("q", [c1, c0]), *others], budget_for_context(150), words, focus=focus)
    assert packed.blocks[0].chunk_ids == (c1.id,)
    assert packed.blocks[0].text.startswith("Sentence 7 ")
    assert [b.chunk_ids for b in packed.blocks if c0.id in b.chunk_ids] == [(c0.id,)]


def test_once_the_budget_runs_low_each_further_hit_is_an_excerpt() -> None:
    docs = [make_doc(f"d{i}", 1, sentences=6)[0] for i in range(6)]
    hits = run("q", docs)
    budget = budget_for_context(200)

    def focus(query: int, piece: str) -> float:  # the fifth sentence answers, in every doc
        return float(re.search(r"Sentence 4 ", piece) is not None)

    whole = pack([hits], budget, words, focus=focus, excerpt_tokens=None)
    cut = pack([hits], budget, words, focus=focus, excerpt_tokens=30)
    assert len(cut.blocks) > len(whole.blocks)  # more sources in the same budget
    assert cut.section("context").used <= 200
    # the blocks chosen while 40% or more of the budget was left are whole, as before
    spent = 0
    for before, after in zip(whole.blocks, cut.blocks, strict=False):
        if 200 - spent < 0.4 * 200:
            break
        assert after.text == before.text and not after.trimmed
        spent += after.tokens
    # the later ones cost at most the excerpt's tokens and keep the answering sentence
    late = cut.blocks[len(cut.blocks) - 2 :]
    assert all(b.trimmed and b.tokens <= 30 for b in late)
    assert all("Sentence 4 " in b.text for b in late)
    # off by default; a cap below the smallest block is an error
    assert pack([hits], budget, words, focus=focus) == whole
    assert pack([hits], budget, words, focus=focus, excerpt_tokens=EXCERPT_TOKENS).blocks
    with pytest.raises(ConfigError, match="excerpt_tokens"):
        pack([hits], budget, words, excerpt_tokens=2)


# --- fairness ------------------------------------------------------------------------------


def test_every_sub_query_gets_its_best_evidence_before_any_gets_its_second() -> None:
    topics = ("embedding", "bootloader", "changelog")
    docs = {t: make_doc(t, 3, sentences=3, topic=t) for t in topics}
    runs = [run(f"about {t}", [docs[t][0], docs[t][2]]) for t in topics]
    packed = pack(runs, budget_for_context(3 * 30), words)  # room for three blocks
    assert [b.chunk_ids[0] for b in packed.blocks] == [docs[t][0].id for t in topics]
    assert [q.blocks for q in packed.queries] == [(1,), (2,), (3,)]
    # one query whose ranking favours two of the topics loses the third
    merged = run(
        "all",
        [docs["embedding"][0], docs["embedding"][2], docs["bootloader"][0], docs["changelog"][0]],
    )
    single = pack([merged], budget_for_context(3 * 30), words)
    assert "changelog#0" not in {cid for b in single.blocks for cid in b.chunk_ids}


TOPICS = ("embedding", "bootloader", "changelog")


def _topic_runs(picks: Sequence[int]) -> tuple[dict[str, list[Chunk]], list[SubQueryHits]]:
    """One document per topic, and one sub-query per topic whose hits are its chunks
    numbered ``picks``."""
    docs = {t: make_doc(t, max(picks) + 1, sentences=3, topic=t) for t in TOPICS}
    return docs, [run(f"about {t}", [docs[t][i] for i in picks]) for t in TOPICS]


def test_deferred_sub_queries_only_fill_the_room_the_others_leave() -> None:
    docs, runs = _topic_runs([0, 2])
    # the middle sub-query is deferred: the others get both their hits first
    packed = pack(runs, budget_for_context(5 * 40), words, deferred={1})  # 39 a block
    firsts = [b.chunk_ids[0] for b in packed.blocks]
    assert firsts == [
        docs["embedding"][0].id,
        docs["changelog"][0].id,
        docs["embedding"][2].id,
        docs["changelog"][2].id,
        docs["bootloader"][0].id,
    ]
    assert packed.queries[1].blocks == (5,)
    # with no room left after the others, it gets nothing
    tight = pack(runs, budget_for_context(4 * 40), words, deferred={1})
    assert all(b.queries != (1,) for b in tight.blocks) and len(tight.blocks) == 4
    with pytest.raises(ConfigError, match="deferred: no sub-query 3"):
        pack(runs, budget_for_context(90), words, deferred={3})


def test_hits_past_first_come_after_every_part_s_judged_hits() -> None:
    docs, runs = _topic_runs([0, 2, 4])
    packed = pack(runs, budget_for_context(6 * 40), words, deferred={1}, first=1)
    firsts = [b.chunk_ids[0] for b in packed.blocks]
    # the answered parts' first hits, the deferred part's first, then the further hits
    assert firsts == [
        docs["embedding"][0].id,
        docs["changelog"][0].id,
        docs["bootloader"][0].id,
        docs["embedding"][2].id,
        docs["changelog"][2].id,
        docs["embedding"][4].id,
    ]
    # without it the deferred part waits for every hit of the others
    plain = pack(runs, budget_for_context(6 * 40), words, deferred={1})
    assert all(b.queries != (1,) for b in plain.blocks)
    with pytest.raises(ConfigError, match="first: must be >= 1"):
        pack(runs, budget_for_context(90), words, first=0)


def test_a_block_names_the_chunk_at_each_offset() -> None:
    first = Chunk("d.md", 0, "Intro text here.", 0, 16, ("Doc", "A"))
    second = Chunk("d.md", 1, "Second part text.", 17, 34, ("Doc", "B"))
    hits = tuple(Hit(i + 1, 1.0, c, "Doc", "d.md") for i, c in enumerate((first, second)))
    block = pack([SubQueryHits("q", hits)], budget_for_context(200), words).blocks[0]
    assert block.chunk_ids == (first.id, second.id)
    start = block.text.index("Second")
    assert block.chunk_at(0) == first.id and block.chunk_at(len("Intro text")) == first.id
    assert block.chunk_at(start) == second.id and block.chunk_at(len(block.text)) == second.id
    assert block.chunk_at(block.text.index("## B")) == second.id  # its heading line is its own


def test_in_the_first_round_a_long_best_hit_cannot_crowd_out_the_others() -> None:
    long_doc = make_doc("long", 1, sentences=12, topic="embedding")[0]
    short = [make_doc(t, 1, sentences=2, topic=t)[0] for t in ("bootloader", "changelog")]
    runs = [run("q1", [long_doc]), run("q2", [short[0]]), run("q3", [short[1]])]
    packed = pack(runs, budget_for_context(90), words)
    assert [b.chunk_ids[0] for b in packed.blocks] == [long_doc.id, short[0].id, short[1].id]
    assert packed.blocks[0].trimmed and packed.blocks[0].tokens <= 30


def test_output_is_deterministic() -> None:
    chunks = [c for d in ("a", "b", "c") for c in make_doc(d, 3)]
    runs = [run("q1", chunks[::2]), run("q2", chunks[1::2])]
    first = pack(runs, budget_for_context(150), words)
    assert all(pack(runs, budget_for_context(150), words) == first for _ in range(3))
    assert SEPARATOR.join(b.render() for b in first.blocks) == first.text
    assert re.match(r"\[1\] ", first.text)


def test_a_merged_block_knows_the_heading_of_each_chunk() -> None:
    first = Chunk("d.md", 0, "Intro text here.", 0, 16, ("Doc", "ADR-015"))
    second = Chunk("d.md", 1, "Second part text.", 17, 34, ("Doc", "ADR-017"))
    third = Chunk("d.md", 2, "Third part text.", 35, 51, ("Doc", "ADR-018"))
    hits = tuple(Hit(i + 1, 1.0, c, "Doc", "d.md") for i, c in enumerate((second, third, first)))
    block = pack([SubQueryHits("q", hits)], Budget(), approx_token_counter).blocks[0]
    assert block.chunk_ids == ("d.md#0", "d.md#1", "d.md#2")  # the first was prepended
    assert block.heading_path == ("Doc", "ADR-015")
    for chunk in (first, second, third):
        offset = block.text.index(chunk.text)
        assert block.heading_at(offset) == " > ".join(chunk.heading_path)


def test_quotes_come_from_the_hits_each_part_was_judged_on() -> None:
    first, second = make_doc("guide", 2, topic="reset")
    copy = Chunk("mirror", 0, first.text, first.start, first.end, ("Guide", "mirror"))
    other = make_doc("other", 1, topic="power")[0]
    runs = [
        run("q0", [first, second, other]),  # second joins first's block in round two
        run("q1", [copy]),  # a near-duplicate of that block's text
        run("q2", [first]),  # already in that block
    ]
    context = pack(runs, budget_for_context(400), words)
    assert context.blocks[0].chunk_ids == (first.id, second.id)
    # q0's first hit only: a hit that joined its block later is not evidence at k=1
    assert quote_evidence(runs, context, k=1)[0] == {first.id}
    assert quote_evidence(runs, context, k=3)[0] == {first.id, second.id, other.id}
    # the block holding the text of q1's near-duplicate stands in for it; q2's chunk,
    # already in the block, is its own evidence, not the whole block
    evidence = quote_evidence(runs, context, k=1)
    assert evidence[1] == {copy.id, first.id, second.id}
    assert evidence[2] == {first.id}
