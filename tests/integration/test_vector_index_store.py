"""Exact or HNSW in an on-disk index: chosen at build, graph saved beside the vectors,
searched exactly when missing or stale until ``optimize`` builds it (a reader never
writes), replaced when a re-index changes the vectors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.cli import main
from twokeys.dense.ann import HnswVectorIndex
from twokeys.dense.exact import ExactVectorIndex
from twokeys.dense.selection import VectorIndexOptions
from twokeys.errors import MissingExtraError
from twokeys.optimize import optimize
from twokeys.request import SearchRequest
from twokeys.store.local import MANIFEST, LocalIndex
from twokeys.store.vectors import GraphMissingWarning

WORDS = (
    "power supply hub firmware signature reset button grub menu entry embed model "
    "refund broken parcel delivery battery charge cable screen update network"
).split()


def corpus(n_docs: int, seed: int = 0) -> dict[str, str]:
    rng = np.random.default_rng(seed)
    return {
        f"doc-{i:03d}.md": f"# Doc {i}\n\n" + " ".join(rng.choice(WORDS, 12)) + "\n"
        for i in range(n_docs)
    }


HNSW = IndexOptions(encoder="test-hash", vector_index=VectorIndexOptions(kind="hnsw"))


def graph_files(index: Path) -> list[str]:
    gen = json.loads((index / MANIFEST).read_text())["generation"]
    return sorted(p.name for p in (index / gen).glob("derived.hnsw-*"))


def dense_run(index: Path, query: str, k: int = 10) -> list[tuple[int, float]]:
    with open_index(index) as kb:
        return [
            (h.row, h.score)
            for h in kb.retriever(SearchRequest.parse("q", "dense")).retrieve(query, k).run
        ]


def exact_run(index: Path, query: str, k: int = 10) -> list[tuple[int, float]]:
    with open_index(index) as kb:
        embeddings = LocalIndex(index).embeddings()
        assert embeddings is not None
        vector = kb.encoder.encode_query(query)
        return [(h.row, h.score) for h in ExactVectorIndex(embeddings).search(vector, k)]


def assert_same_ranking(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> None:
    """Same scores; the same rows at each score above the last one (the fake encoder
    makes many ties, and the two searches may round a tied cosine differently)."""
    assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-6)

    def above_last(run: list[tuple[int, float]]) -> list[tuple[float, int]]:
        last = round(want[-1][1], 5)
        return sorted((round(s, 5), r) for r, s in run if round(s, 5) > last)

    assert above_last(got) == above_last(want)


@pytest.fixture
def hnsw_index(tmp_path: Path) -> tuple[Path, Path]:
    src = write_docs(tmp_path / "docs", corpus(60))
    index = tmp_path / "kb.twokeys"
    report = build_index(src, index, HNSW)
    assert report.vector_index == "hnsw"
    return src, index


def test_the_graph_is_built_at_index_time_and_used(hnsw_index: tuple[Path, Path]) -> None:
    _, index = hnsw_index
    files = graph_files(index)
    assert [f.rsplit(".", 2)[-2:] for f in files] == [["graph", "faiss"], ["meta", "npy"]]
    with open_index(index) as kb:
        assert isinstance(kb.backend.vectors, HnswVectorIndex)
        assert kb.info()["vector_search"]["used"] == "hnsw"
        hybrid = kb.search("firmware signature reset", mode="hybrid", k=3)
        assert len(hybrid) == 3
    for query in ("firmware signature", "refund broken parcel", "grub menu entry"):
        assert_same_ranking(dense_run(index, query), exact_run(index, query))


def test_a_missing_or_stale_graph_means_exact_search_until_optimize(
    hnsw_index: tuple[Path, Path],
) -> None:
    _, index = hnsw_index
    before = dense_run(index, "battery charge cable")
    gen = index / json.loads((index / MANIFEST).read_text())["generation"]
    for file in gen.glob("derived.hnsw-*"):
        file.unlink()
    old_layout = [gen / f"derived.hnsw-v1-m16-efc100-s100.{key}.npy" for key in ("a", "meta")]
    for file in old_layout:  # an hnswlib graph saved by an earlier version
        np.save(file, np.zeros(3))
    listing = sorted(p.name for p in gen.iterdir())
    warned = pytest.warns(GraphMissingWarning, match="searching them exactly")
    with warned as caught, open_index(index) as kb:
        assert isinstance(kb.backend.vectors, ExactVectorIndex)
        for query in ("battery charge cable", "refund", "grub menu entry"):
            kb.search(query, mode="hybrid", k=3)
    assert len(caught) == 1  # one warning per open index, not one per query
    assert sorted(p.name for p in gen.iterdir()) == listing  # the reader wrote nothing
    with pytest.warns(GraphMissingWarning):
        assert_same_ranking(dense_run(index, "battery charge cable"), before)
    assert optimize(index) == ("hnsw",)
    assert not any(file.exists() for file in old_layout)  # replaced, so removed
    assert optimize(index) == ()  # nothing left to build
    with open_index(index) as kb:
        assert isinstance(kb.backend.vectors, HnswVectorIndex)
    meta = next(gen.glob("derived.hnsw-*.meta.npy"))
    np.save(meta, np.frombuffer(b'{"format_version": 0}', np.uint8))
    with pytest.warns(GraphMissingWarning):
        assert_same_ranking(dense_run(index, "battery charge cable"), before)
    assert optimize(index) == ("hnsw",)
    assert np.load(meta).size > 50  # the rebuilt header replaced the stale one


def test_reindex_replaces_the_graph_with_one_of_the_new_vectors(
    hnsw_index: tuple[Path, Path],
) -> None:
    src, index = hnsw_index
    (src / "doc-007.md").write_text("# Doc 7\n\nnetwork update screen only\n")
    (src / "doc-008.md").unlink()
    write_docs(src, {"new.md": "# New\n\nnetwork update screen refund\n"})
    report = build_index(src, index, HNSW)
    assert (report.changed, report.removed, report.added) == (1, 1, 1)
    assert report.vector_index == "hnsw" and graph_files(index)
    for query in ("network update screen", "refund", "power supply hub"):
        assert_same_ranking(dense_run(index, query), exact_run(index, query))


def test_auto_picks_by_size_and_old_manifests_read_as_auto(tmp_path: Path) -> None:
    src = write_docs(tmp_path / "docs", corpus(20))
    small = tmp_path / "small.twokeys"
    report = build_index(src, small, IndexOptions(encoder="test-hash"))
    assert report.vector_index == "exact" and not graph_files(small)
    with open_index(small) as kb:
        assert isinstance(kb.backend.vectors, ExactVectorIndex)
        assert "< threshold" in kb.info()["vector_search"]["reason"]
    manifest = json.loads((small / MANIFEST).read_text())
    del manifest["vector_index"]  # written before the setting existed
    (small / MANIFEST).write_text(json.dumps(manifest))
    with open_index(small) as kb:
        assert kb.manifest.vector_index == VectorIndexOptions()
    low = IndexOptions(encoder="test-hash", vector_index=VectorIndexOptions(threshold=10))
    big = tmp_path / "big.twokeys"
    assert build_index(src, big, low).vector_index == "hnsw"
    assert graph_files(big)


def test_without_faiss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "faiss", None)
    src = write_docs(tmp_path / "docs", corpus(20))
    encoded: list[int] = []
    monkeypatch.setattr("conftest.HashEncoder.embed_batch", lambda *a: encoded.append(1))
    with pytest.raises(MissingExtraError, match="twokeys\\[ann\\]"):
        build_index(src, tmp_path / "forced.twokeys", HNSW)
    assert not encoded  # refused before embedding anything
    monkeypatch.undo()
    monkeypatch.setitem(sys.modules, "faiss", None)
    auto = IndexOptions(encoder="test-hash", vector_index=VectorIndexOptions(threshold=10))
    index = tmp_path / "auto.twokeys"
    assert build_index(src, index, auto).vector_index == "exact"
    with open_index(index) as kb:
        assert "faiss not installed" in kb.info()["vector_search"]["reason"]
        assert len(kb.search("refund", mode="dense", k=3)) == 3


def test_cli_forces_a_vector_index_and_info_shows_it(tmp_path: Path) -> None:
    src = write_docs(tmp_path / "docs", corpus(10))
    index = str(tmp_path / "kb.twokeys")
    runner = CliRunner()
    args = ["index", str(src), "--index", index, "--encoder", "test-hash", "-q"]
    result = runner.invoke(main, [*args, "--vector-index", "hnsw"])
    assert result.exit_code == 0 and "vector index: hnsw" in result.stdout
    result = runner.invoke(main, ["info", "--index", index])
    assert "hnsw M=16" in result.stdout
    result = runner.invoke(main, [*args, "--vector-index", "exact"])
    assert result.exit_code == 0 and "vector index: exact" in result.stdout
    result = runner.invoke(main, ["info", "--index", index, "--json"])
    assert json.loads(result.stdout)["vector_search"]["used"] == "exact"


def test_cli_warns_once_and_optimize_builds_the_graph(hnsw_index: tuple[Path, Path]) -> None:
    _, index = hnsw_index
    gen = index / json.loads((index / MANIFEST).read_text())["generation"]
    for file in gen.glob("derived.hnsw-*"):
        file.unlink()
    args = ["search", "refund broken parcel", "--index", str(index), "--mode", "dense"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert result.stderr.count("warning:") == 1
    assert "HNSW graph of its 60 vectors is missing" in result.stderr
    assert "twokeys optimize --index" in result.stderr
    assert "refund" in result.stdout or "parcel" in result.stdout
    assert not graph_files(index)
    result = CliRunner().invoke(main, ["optimize", "--index", str(index), "-q"])
    assert result.exit_code == 0 and result.stdout.strip() == "built hnsw"
    assert graph_files(index)
    result = CliRunner().invoke(main, ["optimize", "--index", str(index), "-q"])
    assert result.stdout.strip() == "nothing to build"
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0 and "warning" not in result.stderr
