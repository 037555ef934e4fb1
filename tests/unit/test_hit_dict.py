"""``Hit.from_dict`` reads back what ``Hit.to_dict`` writes (the client's wire form)."""

from __future__ import annotations

import json

import pytest

from twokeys.types import Chunk, Evidence, Hit, Locator


def _hit(**chunk: object) -> Hit:
    base = {"doc_id": "manual.pdf", "position": 3, "text": "Reset the hub.", "start": 10}
    return Hit(
        rank=2,
        score=0.5,
        chunk=Chunk(**{**base, "end": 24, **chunk}),  # type: ignore[arg-type]
        title="Manual",
        path="manual.pdf",
        evidence=(
            Evidence("bm25", 1, 7.25, fused=0.016, matched_terms=(("reset", 3.5),)),
            Evidence("dense", 4, 0.61, fused=0.015, weight=0.5),
        ),
    )


@pytest.mark.parametrize(
    "chunk",
    [
        {},
        {"heading_path": ("Setup", "Power > Reset")},  # a heading holding the separator
        {"locator": Locator(page=12, page_end=13, section="2.3")},
        {"locator": Locator(line_start=120, line_end=148, symbol="Pool.acquire")},
    ],
)
def test_round_trip_through_json(chunk: dict[str, object]) -> None:
    hit = _hit(**chunk)
    again = Hit.from_dict(json.loads(json.dumps(hit.to_dict())))
    assert again == hit
    assert again.cite == hit.cite and again.evidence == hit.evidence


def test_a_doc_id_with_hashes_keeps_its_position() -> None:
    hit = _hit(doc_id="corpus.jsonl#doc-17")
    assert Hit.from_dict(hit.to_dict()).chunk_id == "corpus.jsonl#doc-17#3"


def test_malformed_hits_name_the_field() -> None:
    data = _hit().to_dict()
    with pytest.raises(ValueError, match="missing field 'text'"):
        Hit.from_dict({k: v for k, v in data.items() if k != "text"})
    with pytest.raises(ValueError, match="chunk_id 'other#1' is not 'manual.pdf#<position>'"):
        Hit.from_dict({**data, "chunk_id": "other#1"})
    with pytest.raises(ValueError, match="locator: unknown field"):
        Hit.from_dict({**data, "locator": {"chapter": 2}})
