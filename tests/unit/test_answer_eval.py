"""Answer evaluation: the measures by hand, the QA file's validation, the shipped QA set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SUPPORT_KB
from twokeys.errors import ConfigError
from twokeys.evaluation.answers import (
    KINDS,
    GoldFact,
    Piece,
    citation_precision,
    context_recall,
    fact_containment,
    holds,
    load_qa,
    normalize,
)

GOLD = (GoldFact("a.md", "full refund"), GoldFact("b.md", "ten minutes"))


def test_facts_match_through_case_markup_and_whitespace() -> None:
    assert normalize("A **Full**\n  `refund`") == "a full refund"
    assert holds("It qualifies for a **full\nrefund**.", "Full refund")
    assert not holds("a refund in full", "full refund")


def test_measures_by_hand() -> None:
    pieces = (
        Piece("a.md", "It qualifies for a full refund."),
        Piece("c.md", "Valid for ten minutes."),  # the fact, but from another document
        Piece("b.md", "Nothing here."),
    )
    assert context_recall(GOLD, pieces) == 0.5
    assert context_recall(GOLD, (*pieces, Piece("b.md", "valid for ten  minutes"))) == 1.0
    assert citation_precision(GOLD, pieces, (0, 1, 2)) == pytest.approx(1 / 3)
    assert fact_containment(GOLD, "You get a full refund [1].") == 0.5
    assert context_recall((), pieces) == 0.0


def _write(tmp_path: Path, *records: object) -> Path:
    path = tmp_path / "qa.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def test_a_bad_qa_line_is_named(tmp_path: Path) -> None:
    good = {"id": "a", "question": "q?", "kind": "identifier", "gold": [{"doc": "x", "fact": "y"}]}
    cases = [
        ({**good, "kind": "trivia"}, "kind: 'trivia' is not one of"),
        ({**good, "gold": []}, "gold: kind 'identifier' needs a gold fact"),
        ({**good, "kind": "unanswerable"}, "gold: kind 'unanswerable' needs no gold fact"),
        ({**good, "gold": [{"doc": "x"}]}, "gold[0]: doc and fact must be non-empty strings"),
        ({**good, "question": " "}, "question: expected a non-empty string"),
        ({**good, "split": ""}, "split: expected a non-empty string"),
    ]
    for record, message in cases:
        path = _write(tmp_path, good | {"id": "first"}, record)
        with pytest.raises(ConfigError, match=rf"qa.jsonl:2: {message}".replace("[", r"\[")):
            load_qa(path)
    with pytest.raises(ConfigError, match="id: 'a' appears twice"):
        load_qa(_write(tmp_path, good, good))
    with pytest.raises(ConfigError, match="not valid JSON"):
        (tmp_path / "bad.jsonl").write_text("{nope\n", encoding="utf-8")
        load_qa(tmp_path / "bad.jsonl")


def test_a_qa_file_names_its_own_splits(tmp_path: Path) -> None:
    good = {"question": "q?", "kind": "unanswerable", "gold": []}
    path = _write(tmp_path, good | {"id": "a", "split": "train"}, good | {"id": "b"})
    assert [i.id for i in load_qa(path, split="train")] == ["a"]
    assert [i.split for i in load_qa(path)] == ["train", "test"]  # "test" when unnamed
    with pytest.raises(
        ConfigError, match=r"no questions in split 'dev' \(its splits: test, train\)"
    ):
        load_qa(path, split="dev")


def test_the_shipped_qa_set_is_written_against_the_documents() -> None:
    items = load_qa(SUPPORT_KB / "qa.jsonl")
    assert len(items) >= 40
    kinds = {k: [i for i in items if i.kind == k] for k in KINDS}
    assert len(kinds["unanswerable"]) >= 10
    assert all(len(kinds[k]) >= 5 for k in KINDS)
    assert all(len(i.gold) >= 2 for i in kinds["multi-part"])
    splits = {i.split for i in items}
    assert splits == {"dev", "test", *(f"heldout{n}" for n in ("", *range(2, 25)))}
    for split in splits:  # each split holds answerable and unanswerable questions
        assert {i.answerable for i in items if i.split == split} == {True, False}
    for item in items:
        for gold in item.gold:
            text = (SUPPORT_KB / "docs" / gold.doc).read_text(encoding="utf-8")
            assert holds(text, gold.fact), (item.id, gold)
