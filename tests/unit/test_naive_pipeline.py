"""The naive baseline is the Ollama hybrid-pipeline project's context as that project
builds it: file-level cosine hits first, paragraph-level BM25 hits after, at most three
pieces of 600 characters, the whole cut at the character budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import HashEncoder
from twokeys.errors import ConfigError
from twokeys.evaluation.naive_pipeline import HEADER, NaivePipeline, tokenize


def _folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    (docs / "errors").mkdir(parents=True)
    (docs / "errors" / "zx-4821.md").write_text(
        "# Error ZX-4821\n\nThe Hub found its input voltage below the safe threshold.\n\n"
        + "Filler paragraph about nothing in particular. " * 30,
        encoding="utf-8",
    )
    (docs / "shipping.md").write_text(
        "# Shipping\n\nOrders placed before 14:00 leave the same day.\n\nParcels to islands "
        "take two extra days.\n",
        encoding="utf-8",
    )
    (docs / "notes.txt").write_text("ZX-4821 ZX-4821 ZX-4821", encoding="utf-8")  # not Markdown
    return docs


def test_the_tokenizer_keeps_hyphenated_terms_whole() -> None:
    assert tokenize("Why was nomic-embed-text chosen (v3.3)") == [
        "why",
        "was",
        "nomic-embed-text",
        "chosen",
        "v3",
        "3",
    ]
    # as in the project, '?' is no separator: the question's last word keeps it
    assert tokenize("What does ZX-4821 mean?") == ["what", "does", "zx-4821", "mean?"]


def test_bm25_alone_gives_the_best_paragraphs(tmp_path: Path) -> None:
    context = NaivePipeline(_folder(tmp_path), None).context("ZX-4821 voltage", 4000)
    assert [p.text for p in context.pieces] == [
        "# Error ZX-4821",
        "The Hub found its input voltage below the safe threshold.",
    ]
    assert {p.path for p in context.pieces} == {"errors/zx-4821.md"}
    assert context.text.startswith(HEADER + "### zx-4821\n# Error ZX-4821\n\n### zx-4821\n")


def test_cosine_hits_come_first_and_pieces_are_cut(tmp_path: Path) -> None:
    pipeline = NaivePipeline(_folder(tmp_path), HashEncoder())
    context = pipeline.context("filler paragraph about nothing in particular", 4000)
    first = context.pieces[0]
    assert first.path == "errors/zx-4821.md"
    assert first.text.startswith("# Error ZX-4821") and len(first.text) == 600  # the preview
    assert 1 < len(context.pieces) <= 3
    assert all(len(p.text) <= 600 for p in context.pieces)


def test_the_character_budget_cuts_the_whole_context(tmp_path: Path) -> None:
    pipeline = NaivePipeline(_folder(tmp_path), HashEncoder())
    short = pipeline.context("filler paragraph about nothing in particular", 90)
    assert len(short.text) == 90
    assert len(short.pieces) == 1 and len(short.pieces[0].text) < 90
    assert short.text.endswith(short.pieces[-1].text)


def test_no_markdown_no_baseline(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("text", encoding="utf-8")
    with pytest.raises(ConfigError, match="no Markdown files"):
        NaivePipeline(tmp_path, None)
