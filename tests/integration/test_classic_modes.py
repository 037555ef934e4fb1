"""The classic retrieval modes through the engine, the CLI, the LSI cache and on ADI."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import SHARED_DATA, write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.cli import main
from twokeys.engine import MODES, Index
from twokeys.errors import ConfigError
from twokeys.evaluation.beir import load_collection
from twokeys.evaluation.runs import doc_ranking, evaluate
from twokeys.lexical import lsi
from twokeys.optimize import optimize
from twokeys.request import SearchRequest
from twokeys.retrievers import classic
from twokeys.store.base import DocumentInfo, IndexBackend, LexicalIndex, VectorIndex
from twokeys.store.local import LocalIndex, load_derived, save_derived
from twokeys.types import Chunk

CLASSIC = ("boolean", "tfidf", "bm25+", "bm25l", "lsi")

DOCS = {
    "power.md": "# Power\n\n## ZX-4821\n\nUndervoltage on the power supply. Replace the fuse.\n",
    "firmware.md": "# Firmware\n\n## ZX-4812\n\nSignature check failed after a firmware update.\n",
    "supply.md": "# Supply chain\n\nOur supply team knows the power of planning.\n",
    "alarms.md": "# Alarms\n\nUndervoltage alarms are unrelated to ZX-4821 firmware.\n",
    "refunds.md": "# Refunds\n\nA refund is issued when an item arrives damaged.\n",
}


def _build(tmp_path: Path) -> Path:
    src = write_docs(tmp_path / "docs", DOCS)
    index = tmp_path / "kb.twokeys"
    build_index(src, index, IndexOptions(encoder=None))
    return index


def test_modes_are_registered() -> None:
    assert set(CLASSIC) <= set(MODES)


@pytest.mark.parametrize("mode", CLASSIC)
def test_each_mode_searches_with_evidence(tmp_path: Path, mode: str) -> None:
    with open_index(_build(tmp_path)) as kb:
        hits = kb.search("firmware signature", mode=mode, k=3, explain=True)
        assert hits[0].path == "firmware.md"
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        assert all(a.score >= b.score for a, b in pairwise(hits))
        evidence = hits[0].evidence[0]
        assert evidence.retriever == mode and evidence.score == pytest.approx(hits[0].score)
        if mode != "lsi":
            assert {t for t, _ in evidence.matched_terms} == {"firmwar", "signatur"}
            total = sum(w for _, w in evidence.matched_terms)
            assert total == pytest.approx(hits[0].score, rel=1e-5)
        assert kb.search("zzzunknown", mode=mode if mode != "boolean" else "tfidf") == []


def test_weights_are_cached_per_open_index(tmp_path: Path) -> None:
    with open_index(_build(tmp_path)) as kb:
        first = kb.retriever(SearchRequest.parse("q", "tfidf"))
        assert kb.retriever(SearchRequest.parse("q", "tfidf")) is first
        assert classic.lexicon(kb, "tfidf") is classic.lexicon(kb, "bm25+")
        assert kb.retriever(SearchRequest.parse("q", "bm25+")) is kb.retriever(
            SearchRequest.parse("q", "bm25+")
        )


def test_lsi_factors_are_built_by_a_writer_and_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = _build(tmp_path)
    with open_index(index) as kb:
        gen_dir = kb.backend.gen_dir  # type: ignore[attr-defined]
        with pytest.warns(classic.LsiNotBuiltWarning, match="optimize"):
            expected = [h.chunk.id for h in kb.search("power fuse", mode="lsi", k=5)]
    assert not list(gen_dir.glob("derived.*"))  # reading never writes
    assert optimize(index, ["lsi"]) == ("lsi",)
    saved = sorted(p.name for p in gen_dir.glob("derived.*"))
    assert saved == [f"derived.lsi-v1-r200-s0.{key}.npy" for key in ("chunks", "s", "u")]
    assert optimize(index, ["lsi"]) == ()

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the saved factors should have been loaded")

    monkeypatch.setattr(lsi, "fit", refuse)
    with open_index(index) as kb:
        assert [h.chunk.id for h in kb.search("power fuse", mode="lsi", k=5)] == expected
        backend = kb.backend
        assert isinstance(backend, LocalIndex)
        assert load_derived(backend, "lsi-v1-r200-s0", ("u", "missing")) is None
        with pytest.raises(ValueError, match="derived array name"):
            save_derived(backend, "../escape", {"u": np.zeros(2)})
        save_derived(backend, "probe", {"x": np.arange(3.0)})
        arrays = load_derived(backend, "probe", ("x",))
        assert arrays is not None and arrays["x"].tolist() == [0.0, 1.0, 2.0]
        assert isinstance(arrays["x"], np.memmap)
        assert not list(backend.gen_dir.glob(".tmp-*"))


def test_index_derive_lsi_builds_the_factors(tmp_path: Path) -> None:
    src = write_docs(tmp_path / "docs", DOCS)
    index = tmp_path / "kb.twokeys"
    build_index(src, index, IndexOptions(encoder=None, derived=("lsi",)))
    with open_index(index) as kb:
        assert list(kb.backend.gen_dir.glob("derived.lsi-*"))  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="derive: 'pca' is not one of hnsw, lsi"):
        IndexOptions(derived=("pca",))


def test_lsi_rank_and_read_only_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = _build(tmp_path)

    def read_only(*args: object, **kwargs: object) -> None:
        raise PermissionError("read-only file system")

    monkeypatch.setattr(classic, "save_derived", read_only)
    monkeypatch.setenv(classic.LSI_RANK_ENV, "2")
    with open_index(index) as kb, pytest.warns(classic.LsiNotBuiltWarning):
        retriever = kb.retriever(SearchRequest.parse("q", "lsi"))
        assert isinstance(retriever, classic.LsiRetriever) and retriever.model.rank == 2
        assert kb.search("power fuse", mode="lsi", k=2)
        assert kb.retriever(SearchRequest.parse("q", "lsi")).model is retriever.model  # type: ignore[attr-defined]
        assert not list(kb.backend.gen_dir.glob("derived.*"))  # type: ignore[attr-defined]
        monkeypatch.setenv(classic.LSI_RANK_ENV, "0")
        with pytest.raises(ConfigError, match=r"lsi\.rank"):
            kb.retriever(SearchRequest.parse("q", "lsi"))
        monkeypatch.setenv(classic.LSI_RANK_ENV, "many")
        with pytest.raises(ConfigError, match=classic.LSI_RANK_ENV):
            kb.retriever(SearchRequest.parse("q", "lsi"))


class _NoTermMatrix(IndexBackend):
    """A backend that, like a server one would, offers no term-frequency matrix."""

    def __init__(self, inner: IndexBackend) -> None:
        self.inner = inner
        self.manifest = inner.manifest

    @property
    def lexical(self) -> LexicalIndex:
        return self.inner.lexical

    @property
    def vectors(self) -> VectorIndex | None:
        return self.inner.vectors

    def chunks(self, rows: Sequence[int]) -> list[Chunk]:
        return self.inner.chunks(rows)

    def documents(self, ids: Sequence[str]) -> dict[str, DocumentInfo]:
        return self.inner.documents(ids)

    def all_documents(self) -> list[DocumentInfo]:
        return self.inner.all_documents()


def test_modes_need_the_embedded_backend(tmp_path: Path) -> None:
    with open_index(_build(tmp_path)) as kb:
        other = Index(_NoTermMatrix(kb.backend))
        for mode in CLASSIC:
            with pytest.raises(ConfigError, match="embedded index backend"):
                other.search("power", mode=mode)
        assert other.search("power", mode="bm25")


def test_cli_search_modes(tmp_path: Path) -> None:
    index = str(_build(tmp_path))
    runner = CliRunner()
    result = runner.invoke(main, ["search", "power fuse", "--index", index, "--mode", "tfidf"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith("1. power.md")
    result = runner.invoke(
        main, ["search", "power fuse", "--index", index, "--mode", "bm25l", "--explain"]
    )
    assert result.exit_code == 0 and "bm25l" in result.stdout and "terms: fuse" in result.stdout
    result = runner.invoke(
        main, ["search", '"power supply" -fuse', "--index", index, "--mode", "boolean"]
    )
    assert result.exit_code == 0 and result.stdout.strip() == "no results"
    result = runner.invoke(main, ["search", "power (fuse", "--index", index, "--mode", "boolean"])
    assert result.exit_code == 1
    assert result.stderr.strip() == "error: query syntax: unbalanced parenthesis at column 7"


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED_DATA / "adi").is_dir(), reason="shared data not available")
def test_adi_quality(tmp_path: Path) -> None:
    collection = load_collection(SHARED_DATA / "adi", "test")
    index = tmp_path / "adi.twokeys"
    build_index(collection.corpus, index, IndexOptions(encoder=None))
    scores = {}
    with open_index(index) as kb:
        for mode in ("tfidf", "bm25+", "bm25l", "lsi"):
            run = {
                qid: doc_ranking(kb.search(q, mode=mode, k=300), 100)
                for qid, q in collection.queries.items()
            }
            scores[mode] = evaluate(collection.qrels, run, ["nDCG@10"])["nDCG@10"]
    assert min(scores.values()) > 0.3, scores
