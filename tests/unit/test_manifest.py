"""The manifest is the index's spec (what defines results) plus counts and how it is
stored; its file format is unchanged, so manifests written before the split open."""

from __future__ import annotations

from dataclasses import replace

import pytest

from twokeys.analysis import AnalyzerSpec
from twokeys.chunking import ChunkerConfig
from twokeys.errors import IndexFormatError
from twokeys.lexical.bm25 import BM25Params
from twokeys.store.base import EncoderInfo, IndexSpec, Manifest, StoredState

ENCODER = EncoderInfo("minilm", "all-MiniLM-L6-v2", "sha256:abc", 384, "float32", "sha256:tok")
SPEC = IndexSpec(AnalyzerSpec(), BM25Params(), ChunkerConfig(), ENCODER)

# a manifest as an earlier twokeys wrote it: no tokenizer, vector index, source or hashes
OLD = {
    "format": "twokeys-index",
    "format_version": 1,
    "twokeys_version": "0.1.0",
    "created_at": "2025-01-01T00:00:00Z",
    "generation": "gen-1",
    "analyzer": AnalyzerSpec().to_dict(),
    "bm25": {"k1": 1.2, "b": 0.75},
    "chunker": ChunkerConfig().to_dict(),
    "encoder": {
        "name": "minilm",
        "id": "all-MiniLM-L6-v2",
        "fingerprint": "sha256:abc",
        "dim": 384,
    },
    "counts": {"documents": 2, "chunks": 3, "terms": 10, "postings": 12},
    "files": {"twokeys.sqlite": 4096},
}


def test_an_old_manifest_opens_with_its_spec_and_layout() -> None:
    manifest = Manifest.from_dict(OLD, "manifest.json")
    assert manifest.spec.bm25 == BM25Params(1.2, 0.75)
    assert manifest.spec.encoder is not None and manifest.spec.encoder.tokenizer == ""
    assert manifest.stored == StoredState("gen-1", {"twokeys.sqlite": 4096}, {})
    assert (manifest.generation, manifest.bm25, manifest.source) == (
        "gen-1",
        manifest.spec.bm25,
        "",
    )


def test_the_file_format_round_trips_flat() -> None:
    manifest = Manifest(
        SPEC, {"documents": 1}, StoredState("gen-2", {"a": 1}, {"a": "f"}), source="/d"
    )
    data = manifest.to_dict()
    assert data["generation"] == "gen-2" and data["bm25"] == SPEC.bm25.to_dict()
    assert "spec" not in data and "stored" not in data  # the file keeps its version-1 shape
    assert Manifest.from_dict(data, "m") == manifest


def test_a_newer_format_is_refused_saying_what_to_do() -> None:
    with pytest.raises(IndexFormatError, match="format version 2 is not supported.*rebuild"):
        Manifest.from_dict({**OLD, "format_version": 2}, "kb/manifest.json")
    with pytest.raises(IndexFormatError, match="kb/manifest.json: malformed manifest"):
        Manifest.from_dict({k: v for k, v in OLD.items() if k != "chunker"}, "kb/manifest.json")


def test_what_forbids_reusing_stored_chunks() -> None:
    assert SPEC.reuse_conflict(SPEC) == ""
    assert SPEC.reuse_conflict(replace(SPEC, bm25=BM25Params(1.2, 0.75))) == ""
    assert SPEC.reuse_conflict(replace(SPEC, analyzer=AnalyzerSpec(stemmer="none"))) == ""
    chunker = ChunkerConfig(max_tokens=100, overlap_tokens=10)
    assert SPEC.reuse_conflict(replace(SPEC, chunker=chunker)) == "chunker settings changed"
    assert SPEC.reuse_conflict(replace(SPEC, encoder=None)) == "dense index added or removed"
    other = replace(ENCODER, fingerprint="sha256:def")
    assert "encoder changed" in SPEC.reuse_conflict(replace(SPEC, encoder=other))
    half = replace(ENCODER, dtype="float16")
    assert "vector dtype changed" in SPEC.reuse_conflict(replace(SPEC, encoder=half))
