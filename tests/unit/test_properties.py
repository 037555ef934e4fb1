"""Property-based tests of the pure kernels: analyzer, Boolean parser, fusion, chunker, packer.

The normal suite runs a few dozen derandomised cases each; ``make fuzz`` runs 10,000 per
property (``TWOKEYS_HYPOTHESIS=fuzz``, profiles in ``tests/conftest.py``) and prints
hypothesis' statistics.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from twokeys.analysis import Analyzer, AnalyzerSpec
from twokeys.chunking import ChunkerConfig, approx_token_counter, chunk_document
from twokeys.errors import QuerySyntaxError
from twokeys.fusion.adaptive import (
    AdaptiveParams,
    QueryFeatures,
    TermEvidence,
    adaptive_fusion,
    anchor_terms,
    lexical_weight,
    semantic_support,
)
from twokeys.fusion.convex import convex_combination
from twokeys.fusion.normalization import normalizer
from twokeys.fusion.rrf import rrf
from twokeys.lexical import boolean
from twokeys.rag.packing import SEPARATOR, Budget, SubQueryHits, pack
from twokeys.types import Chunk, Document, Hit, ScoredChunk

# -- text that looks like what gets indexed ----------------------------------------------

_WORDS = st.sampled_from(
    [
        "hub",
        "the",
        "power",
        "ZX-4821",
        "qwen2.5:14b",
        "nomic-embed-text",
        "don't",
        "O'Brien",
        "résumé",
        "naïve",
        "Straße",
        "東京都",
        "データベース",
        "서울",
        "über",
        "C++",
        "node.js",
        "v1.2.3",
        "e.g.",
        "a",
        "I",
        "--force",
        "-v",
        "foo_bar",
        "camelCase",
        "HTTPServer",
        "x86_64",
        "10.0.0.1",
        "$HOME",
        "#tag",
        "@user",
        "ﬁle",
        "Ａｂｃ",
        "٣٤",
        "🙂",
        "\u200b",
        "AND",
        "OR",
        "NOT",
        "(",
        ")",
        '"',
        "-",
        "*",
        "...",
        "?",
        "!",
        "\t",
        "\r\n",
    ]
)
_JOINERS = st.sampled_from([" ", " ", " ", "\n", "\n\n", "-", ".", ", ", "\t", ""])


@st.composite
def prose(draw: st.DrawFn, max_words: int = 40) -> str:
    words = draw(st.lists(st.one_of(_WORDS, st.text(max_size=8)), max_size=max_words))
    out = []
    for word in words:
        out.append(word)
        out.append(draw(_JOINERS))
    return "".join(out)


_LINE_STARTS = st.sampled_from(
    ["", "", "", "# ", "## ", "### ", "- ", "* ", "1. ", "> ", "| a | b |\n", "```\n", "    "]
)


@st.composite
def markdownish(draw: st.DrawFn) -> str:
    lines = draw(st.lists(st.tuples(_LINE_STARTS, prose(max_words=15)), max_size=25))
    return "\n".join(start + text for start, text in lines)


# -- analyzer -----------------------------------------------------------------------------

_ANALYZER = Analyzer()


@given(st.one_of(prose(), st.text(max_size=200)), st.one_of(prose(), st.text(max_size=60)))
def test_analyzer_is_deterministic_and_terms_are_storable(text: str, other: str) -> None:
    warm = _ANALYZER.index_terms(other) and _ANALYZER.index_terms(text)  # caches warmed
    fresh = Analyzer(AnalyzerSpec())
    for kind in ("index_terms", "query_terms"):
        first = getattr(fresh, kind)(text)
        assert getattr(fresh, kind)(text) == first
        assert getattr(_ANALYZER, kind)(text) == first  # whatever the cache held before
        for term in first:
            # a term is one line of lexical.vocab.txt: never empty, never a line break
            assert term and isinstance(term, str)
            assert "\n" not in term and "\r" not in term
    assert warm == fresh.index_terms(text) or not warm
    # the analyzer's fast path equals the token-by-token path it is checked against
    slow = [t for tok in fresh.tokens(text) for t in fresh.terms_of(tok, for_query=False)]
    assert fresh.index_terms(text) == slow


# -- Boolean queries ----------------------------------------------------------------------

_BOOL_WORDS = ["alpha", "beta", "gamma", "delta", "the", "x-1", "beta-gamma", "zz"]


@st.composite
def boolean_text(draw: st.DrawFn) -> str:
    pieces = st.sampled_from([*_BOOL_WORDS, "AND", "OR", "NOT", "(", ")", '"', "-", "--", "*"])
    parts = draw(st.lists(st.one_of(pieces, st.text(max_size=4)), max_size=25))
    return " ".join(parts) if draw(st.booleans()) else "".join(parts)


def _simple_analyze(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w != "the"]


def _reference(query: boolean.Query, docs: Sequence[list[str]]) -> set[int]:
    """Set semantics over analysed chunk terms, written independently of ``evaluate``."""
    everything = set(range(len(docs)))
    if isinstance(query, boolean.TermQuery):
        return {i for i, d in enumerate(docs) if query.term in d}
    if isinstance(query, boolean.PhraseQuery):
        return {i for i, d in enumerate(docs) if boolean.contains_sequence(d, query.terms)}
    if isinstance(query, boolean.NotQuery):
        return everything - _reference(query.operand, docs)
    results = [_reference(o, docs) for o in query.operands]
    if isinstance(query, boolean.AndQuery):
        return set.intersection(everything, *results)
    return set().union(*results)


@given(
    boolean_text(), st.lists(st.lists(st.sampled_from([*_BOOL_WORDS[:4], "x", "1"])), max_size=8)
)
def test_boolean_parser_errors_are_syntax_errors_and_evaluation_is_set_algebra(
    text: str, corpus: list[list[str]]
) -> None:
    try:
        query = boolean.compile_query(text, _simple_analyze)
    except QuerySyntaxError as exc:
        assert str(exc).startswith("query syntax:")
        return
    docs = [_simple_analyze(" ".join(d)) for d in corpus]

    def postings(term: str) -> np.ndarray:
        return np.array([i for i, d in enumerate(docs) if term in d], np.int64)

    def verify(rows: np.ndarray, phrase: tuple[str, ...]) -> np.ndarray:
        return np.array([r for r in rows if boolean.contains_sequence(docs[r], phrase)], np.int64)

    rows = boolean.evaluate(query, postings, len(docs), verify)
    assert rows.tolist() == sorted(_reference(query, docs))
    assert boolean.positive_terms(query)


# -- fusion -------------------------------------------------------------------------------


@st.composite
def runs(draw: st.DrawFn) -> dict[str, list[ScoredChunk]]:
    out: dict[str, list[ScoredChunk]] = {}
    for name in draw(st.lists(st.sampled_from("abcde"), min_size=1, max_size=4, unique=True)):
        rows = draw(st.lists(st.integers(0, 40), max_size=15, unique=True))
        scores = sorted(
            draw(
                st.lists(
                    st.floats(-50, 50, allow_nan=False, width=32),
                    min_size=len(rows),
                    max_size=len(rows),
                )
            ),
            reverse=True,
        )
        out[name] = [
            ScoredChunk(r, s, i + 1) for i, (r, s) in enumerate(zip(rows, scores, strict=True))
        ]
    return out


def _check_run(fused: list[ScoredChunk], inputs: dict[str, list[ScoredChunk]]) -> None:
    assert [h.rank for h in fused] == list(range(1, len(fused) + 1))
    assert {h.row for h in fused} == {h.row for run in inputs.values() for h in run}
    keys = [(-h.score, h.row) for h in fused]
    assert keys == sorted(keys)


@given(runs(), st.randoms(use_true_random=False), st.floats(0, 1000))
def test_fusion_does_not_depend_on_input_order(
    inputs: dict[str, list[ScoredChunk]], rnd: object, k: float
) -> None:
    names = list(inputs)
    rnd.shuffle(names)  # type: ignore[attr-defined]
    shuffled = {name: inputs[name] for name in names}  # each run stays in rank order
    weights = {name: 0.1 + i for i, name in enumerate(sorted(inputs))}
    fused = rrf(inputs, k=k, weights=weights)
    assert rrf(shuffled, k=k, weights=weights) == fused
    _check_run(fused, inputs)
    for method in ("minmax", "zscore", "dbsf"):
        combined = convex_combination(inputs, weights, normalizer(method))
        assert convex_combination(shuffled, weights, normalizer(method)) == combined
        _check_run(combined, inputs)
        assert all(np.isfinite(h.score) for h in combined)


# -- chunker ------------------------------------------------------------------------------


@given(
    st.one_of(markdownish(), prose(max_words=120), st.text(max_size=400)),
    st.sampled_from(["markdown", "text", "html", "rst", "jsonl"]),
    st.integers(16, 80),
    st.data(),
)
def test_chunk_offsets_map_back_to_the_text(
    text: str, kind: str, cap: int, data: st.DataObject
) -> None:
    overlap = data.draw(st.integers(0, (cap - 1) // 2))
    config = ChunkerConfig(max_tokens=cap, overlap_tokens=overlap, min_tokens=min(24, cap // 4))
    doc = Document("d", "Title", text, "d.md", 0.0, "0" * 64, kind)
    chunks = chunk_document(doc, approx_token_counter, config)
    assert chunk_document(doc, approx_token_counter, config) == chunks  # deterministic
    if not text.strip():  # a title and no body: one empty chunk that carries the title
        assert [(c.text, c.heading_path) for c in chunks] == [("", ("Title",))]
        return
    previous_start = -1
    for i, chunk in enumerate(chunks):
        assert chunk.position == i and chunk.doc_id == "d"
        assert 0 <= chunk.start < chunk.end <= len(text)
        assert chunk.text == text[chunk.start : chunk.end]
        assert chunk.text.strip()
        assert chunk.start >= previous_start
        previous_start = chunk.start
        assert all(isinstance(h, str) for h in chunk.heading_path)


# -- packer -------------------------------------------------------------------------------


@st.composite
def hit_runs(draw: st.DrawFn) -> list[SubQueryHits]:
    texts = draw(st.lists(st.one_of(prose(max_words=60), markdownish()), min_size=1, max_size=5))
    chunks: list[Chunk] = []
    for d, text in enumerate(texts):
        doc = Document(f"doc{d}", f"Doc {d}", text, f"doc{d}.md", 0.0, "0" * 64, "markdown")
        chunks.extend(
            chunk_document(
                doc,
                approx_token_counter,
                ChunkerConfig(max_tokens=40, overlap_tokens=8, min_tokens=4),
            )
        )
    assume(chunks)
    out = []
    for q in range(draw(st.integers(1, 3))):
        picked = draw(st.lists(st.sampled_from(chunks), max_size=8))
        hits = tuple(
            Hit(i + 1, 1.0 / (i + 1), c, c.doc_id.title(), f"{c.doc_id}.md")
            for i, c in enumerate(picked)
        )
        out.append(SubQueryHits(f"query {q}", hits))
    return out


def _vowels(query: int, text: str) -> float:
    """A focus that rates texts by something unrelated to position: cuts move anywhere."""
    return float(sum(text.count(v) for v in "aeiou") % (query + 7))


@given(
    hit_runs(),
    st.integers(0, 400),
    st.sampled_from([None, "Why?", "What does ZX-4821 mean?"]),
    st.sampled_from([None, _vowels]),
)
def test_packer_stays_within_budget(
    runs_: list[SubQueryHits],
    context: int,
    question: str | None,
    focus: Callable[[int, str], float] | None,
) -> None:
    budget = Budget(total=context + 300, answer=100, instructions=100, question=100, min_context=0)
    fixed = {"question": question} if question else None
    packed = pack(runs_, budget, approx_token_counter, fixed=fixed, focus=focus)
    context_budget = (
        budget.total - budget.answer - (approx_token_counter([question])[0] if question else 0)
    )
    text = SEPARATOR.join(b.render() for b in packed.blocks)
    assert (approx_token_counter([text])[0] if packed.blocks else 0) <= context_budget
    assert packed.section("context").used <= packed.section("context").budget
    assert [b.number for b in packed.blocks] == list(range(1, len(packed.blocks) + 1))
    ids = [cid for b in packed.blocks for cid in b.chunk_ids]
    assert len(ids) == len(set(ids))
    assert pack(runs_, budget, approx_token_counter, fixed=fixed, focus=focus) == packed
    chunks = {hit.chunk.id: hit.chunk for run in runs_ for hit in run.hits}
    for block in packed.blocks:  # a block of one chunk is a run of that chunk's text
        if len(block.chunk_ids) == 1:
            assert block.text in chunks[block.chunk_ids[0]].text


@given(
    lexical_scores=st.lists(
        st.floats(0.01, 100.0, allow_nan=False), min_size=1, max_size=30, unique=True
    ),
    dense_scores=st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=1, max_size=30),
    similarity=st.floats(-1.0, 1.0, allow_nan=False),
    chance_level=st.floats(-0.5, 0.5, allow_nan=False),
    holders=st.integers(1, 3),
)
def test_a_bare_name_bm25_singles_out_keeps_its_chunk_in_the_top_3(
    lexical_scores: list[float],
    dense_scores: list[float],
    similarity: float,
    chance_level: float,
    holders: int,
) -> None:
    """Issue 33's property on generated runs: a one-word query whose term BM25's top hit
    holds and the sensors' evidence anchors (rare, in none of BM25's next chunks, in none
    of the dense top) keeps that chunk in the top 3, whatever the dense run says.
    BM25's rows are 0..n-1; the dense run ranks other rows (and maybe BM25's) first."""
    lexical = [
        ScoredChunk(row, score, rank)
        for rank, (row, score) in enumerate(
            enumerate(sorted(lexical_scores, reverse=True)), start=1
        )
    ]
    dense = [
        ScoredChunk(1000 + i, s, i + 1) for i, s in enumerate(sorted(dense_scores, reverse=True))
    ]
    params = AdaptiveParams()
    evidence = [TermEvidence("isnan", 1.0, in_dense_top=False, word_pieces=3, chunk_share=0.0001)]
    anchors = anchor_terms(evidence, params.anchor_share, params.rare_chunk_share)
    features = QueryFeatures((), (), (), 1.0, 1, anchors=anchors, n_words=1)
    assert features.exact_terms == ("isnan",)
    support = semantic_support(lexical, dense, similarity)
    alpha = lexical_weight(features, params, support)
    assert alpha == params.one_word_lexical_weight
    exact = {row: 1 for row in range(holders)}  # the top hit holds it, maybe a few others
    fused = adaptive_fusion(
        lexical, dense, features, exact, params, 100, alpha, (0.0, chance_level)
    )
    assert 0 in [h.row for h in fused[:3]]
