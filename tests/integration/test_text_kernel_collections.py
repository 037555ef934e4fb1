"""The compiled text rules on real text: every document of the six shared collections and
of the support KB is split into the same sentences, and its text and sentences counted
the same, by ``twokeys.text._kernel`` as by the Python references."""

from __future__ import annotations

import pytest

from conftest import SHARED_DATA, SUPPORT_KB
from twokeys.ingest.files import load_documents
from twokeys.text import sentences, tokens
from twokeys.text.tokens import _APPROX_TOKEN

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="shared data not available"),
    pytest.mark.skipif(sentences._kernel is None, reason="twokeys.text._kernel not built"),
]

COLLECTIONS = ("scifact", "cranfield", "cisi", "medline", "adi", "cacm")


@pytest.mark.parametrize("source", [*COLLECTIONS, "support-kb"])
def test_compiled_rules_agree_on_every_document(
    source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = SUPPORT_KB / "docs" if source == "support-kb" else SHARED_DATA / source / "corpus.jsonl"
    texts = [t for doc in load_documents(path) for t in (doc.text, doc.title)]
    assert len(texts) > 10
    compiled = [sentences.sentence_spans(t) for t in texts]
    markdown = [sentences.split_sentences(t) for t in texts]
    pieces = [t[a:b] for t, spans in zip(texts, compiled, strict=True) for a, b in spans]
    counts = tokens.approx_token_counter(texts + pieces)
    monkeypatch.setattr(sentences, "_kernel", None)
    assert compiled == [sentences.python_sentence_spans(t, 0, len(t)) for t in texts]
    assert markdown == [sentences.split_sentences(t) for t in texts]
    assert counts == [len(_APPROX_TOKEN.findall(t)) for t in texts + pieces]
