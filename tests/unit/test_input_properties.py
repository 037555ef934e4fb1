"""Property tests of the input paths issue 12 hardened: any text in, a clean error or a
valid result out (a quick run here; ``make fuzz`` runs the long ones)."""

from __future__ import annotations

import contextlib

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from twokeys.chunking import ChunkerConfig, approx_token_counter, chunk_document  # noqa: E402
from twokeys.errors import QuerySyntaxError  # noqa: E402
from twokeys.lexical.boolean import compile_query  # noqa: E402
from twokeys.sanitize import for_terminal, has_surrogates  # noqa: E402
from twokeys.types import Document  # noqa: E402

QUERY_PARTS = st.sampled_from(["(", ")", "NOT ", "-", "AND ", "OR ", '"', "a ", "b", " ", "the "])


@settings(max_examples=300, deadline=None)
@given(st.lists(QUERY_PARTS, max_size=400).map("".join))
def test_boolean_queries_parse_or_fail_with_a_syntax_error(query: str) -> None:
    with contextlib.suppress(QuerySyntaxError):
        compile_query(query, lambda text: [w for w in text.lower().split() if w != "the"])


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_terminal_text_has_no_control_characters(text: str) -> None:
    shown = for_terminal(text)
    assert not has_surrogates(shown)
    assert not any(ord(c) < 32 or 127 <= ord(c) < 160 for c in shown)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab-=. \n#"), max_size=6000))
def test_chunks_are_bounded_in_characters_and_map_back(text: str) -> None:
    config = ChunkerConfig(max_tokens=16, overlap_tokens=2, min_tokens=0)
    doc = Document(id="d", title="", text=text, path="d.md", mtime=0.0, sha256="0", kind="markdown")
    chunks = chunk_document(doc, approx_token_counter, config)
    assert bool(chunks) == bool(text.strip())
    for c in chunks:
        assert c.text == text[c.start : c.end] and len(c.text) <= config.max_chars


QUESTION_PARTS = st.sampled_from(
    [
        "If I ",
        "when ",
        "what does ",
        "how many ",
        "gigabytes ",
        "metres ",
        ", and ",
        " or ",
        "25 ",
        "fps",
        "Mbit/s ",
        "DHCP ",
        "stand for",
        "it ",
        "can I ",
        "?",
        ". ",
        "; ",
        "(",
        ")",
        "the Hub ",
        "is ",
        "2.4 GHz ",
        "Wi-Fi ",
        "How long ",
        "do I ",
        "refund ",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(QUESTION_PARTS, min_size=1, max_size=40).map("".join))
def test_question_reading_takes_any_question(question: str) -> None:
    from twokeys.rag.decompose import decompose, own_words

    if not question.strip():
        return
    parts = decompose(question, max_parts=4)
    assert 1 <= len(parts) <= 4 and all(p.strip() for p in parts)
    for text in (question, *parts):
        assert own_words(text) in text
