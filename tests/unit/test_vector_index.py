"""Vector search: float16 exact scoring, the HNSW index against exact, the size threshold."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

import twokeys.dense.exact as exact_module
from twokeys.dense.ann import (
    HnswVectorIndex,
    encode_header,
    parse_header,
    require_faiss,
)
from twokeys.dense.exact import ExactVectorIndex, cosine_scores
from twokeys.dense.selection import DEFAULT_THRESHOLD, HnswParams, VectorIndexOptions
from twokeys.errors import ConfigError, MissingExtraError
from twokeys.store.pagecache import read_ahead, read_ahead_in_background

K = 10


def unit(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    out: npt.NDArray[np.float32] = x / np.linalg.norm(x, axis=-1, keepdims=True)
    return out


def clustered_set(
    n: int, dim: int = 48, seed: int = 7
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """Half the rows in 40 clusters, half isotropic noise; queries near random rows."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, dim)).astype(np.float32)
    clustered = centres[rng.integers(0, 40, n // 2)] + 0.5 * rng.standard_normal(
        (n // 2, dim)
    ).astype(np.float32)
    noise = rng.standard_normal((n - n // 2, dim)).astype(np.float32)
    base = unit(np.vstack([clustered, noise]))[rng.permutation(n)]
    picks = base[rng.integers(0, n, 200)]
    queries = unit(picks + 0.3 * rng.standard_normal(picks.shape).astype(np.float32) / dim**0.5)
    return base, queries


@pytest.fixture(scope="module")
def data() -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    return clustered_set(6000)


@pytest.fixture(scope="module")
def graph(data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]) -> HnswVectorIndex:
    return HnswVectorIndex.build(data[0], HnswParams())


def rows(hits: list) -> list[int]:  # type: ignore[type-arg]
    return [h.row for h in hits]


# -- exact, float16 ---------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 1023, 1024, 2500])
def test_float16_scores_equal_widening_first_bit_for_bit(n: int) -> None:
    rng = np.random.default_rng(n)
    matrix = rng.standard_normal((n, 32)).astype(np.float32) * 0.1
    if n:
        matrix[0, :4] = [0.0, -0.0, 1e-6, -3e-5]  # zeros and float16 subnormals
    half = matrix.astype(np.float16)
    query = rng.standard_normal(32).astype(np.float32)
    got = cosine_scores(half, query)
    assert got.dtype == np.float32
    assert np.array_equal(got, half.astype(np.float32) @ query)


def test_float16_exact_search_ranks_like_float32(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]],
) -> None:
    base, queries = data
    full, half = ExactVectorIndex(base), ExactVectorIndex(base.astype(np.float16))
    overlap = [len(set(rows(full.search(q, K))) & set(rows(half.search(q, K)))) for q in queries]
    assert np.mean(overlap) / K >= 0.99
    hit = half.search(queries[0], 1)[0]
    assert hit.score == pytest.approx(half.similarity(queries[0], hit.row), abs=1e-6)


# -- HNSW -------------------------------------------------------------------------------


def test_hnsw_recall_at_10_against_exact(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]], graph: HnswVectorIndex
) -> None:
    base, queries = data
    exact = ExactVectorIndex(base)
    found = [len(set(rows(graph.search(q, K))) & set(rows(exact.search(q, K)))) for q in queries]
    assert np.mean(found) / K >= 0.95


def test_hnsw_builds_are_identical(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]],
    graph: HnswVectorIndex,
    tmp_path: Path,
) -> None:
    again = HnswVectorIndex.build(data[0], HnswParams())
    graph.save(tmp_path / "first.faiss")
    again.save(tmp_path / "second.faiss")
    assert (tmp_path / "first.faiss").read_bytes() == (tmp_path / "second.faiss").read_bytes()
    for q in data[1][:50]:
        assert graph.search(q, K) == again.search(q, K)
    other_seed = HnswVectorIndex.build(data[0], HnswParams(seed=1))
    other_seed.save(tmp_path / "other.faiss")
    assert (tmp_path / "other.faiss").read_bytes() != (tmp_path / "first.faiss").read_bytes()


def test_hnsw_scores_are_exact_cosines_in_tie_order(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]], graph: HnswVectorIndex
) -> None:
    base, queries = data
    hits = graph.search(queries[3], 25)
    assert [h.rank for h in hits] == list(range(1, 26))
    for h in hits:
        assert h.score == pytest.approx(float(base[h.row] @ queries[3]), abs=1e-6)
        assert h.score == pytest.approx(graph.similarity(queries[3], h.row), abs=1e-6)
    keys = [(-h.score, h.row) for h in hits]
    assert keys == sorted(keys)


def test_hnsw_ties_order_by_row() -> None:
    base = unit(np.tile(np.array([[1.0, 0.0, 0.0, 0.0]], np.float32), (30, 1)))
    base[5:] = unit(np.random.default_rng(0).standard_normal((25, 4)).astype(np.float32))
    base[[2, 9, 17]] = base[0]  # four identical rows
    index = HnswVectorIndex.build(base, HnswParams())
    hits = index.search(base[0], 4)
    assert sorted(rows(hits)) == rows(hits)


def test_hnsw_small_graphs_and_large_k() -> None:
    base, queries = clustered_set(12, dim=8)
    index = HnswVectorIndex.build(base, HnswParams(m=2, ef_construction=1, ef_search=1))
    exact = ExactVectorIndex(base)
    assert rows(index.search(queries[0], 50)) == rows(exact.search(queries[0], 50))
    assert HnswVectorIndex.build(base[:0], HnswParams()).search(queries[0], 3) == []
    one = HnswVectorIndex.build(base[:1], HnswParams())
    assert rows(one.search(queries[0], 3)) == [0]


def test_hnsw_over_float16_storage(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]],
) -> None:
    base, queries = data
    half = base[:2000].astype(np.float16)
    index = HnswVectorIndex.build(half, HnswParams())
    hit = index.search(queries[0], 1)[0]
    widened = half.astype(np.float32)[hit.row]
    assert hit.score == pytest.approx(float(widened @ queries[0]), abs=1e-6)


def test_hnsw_round_trips_through_a_file(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]],
    graph: HnswVectorIndex,
    tmp_path: Path,
) -> None:
    base, queries = data
    graph.save(tmp_path / "g.faiss")
    header = parse_header(encode_header(graph.header()))
    assert header == graph.header()
    loaded = HnswVectorIndex.load(tmp_path / "g.faiss", header, base, HnswParams())
    for q in queries[:50]:
        assert loaded.search(q, K) == graph.search(q, K)
    half = base.astype(np.float16)  # the same graph over float16 storage is another digest
    with pytest.raises(ValueError, match="other vectors"):
        HnswVectorIndex.load(tmp_path / "g.faiss", header, half, HnswParams())


def test_a_stale_or_broken_graph_is_refused(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]],
    graph: HnswVectorIndex,
    tmp_path: Path,
) -> None:
    base, _ = data
    path = tmp_path / "g.faiss"
    graph.save(path)
    header = graph.header()
    other = base.copy()
    other[[0, -1]] = other[[-1, 0]]
    with pytest.raises(ValueError, match="other vectors"):
        HnswVectorIndex.load(path, header, other, HnswParams())
    with pytest.raises(ValueError, match="other parameters"):
        HnswVectorIndex.load(path, header, base, HnswParams(m=8))
    with pytest.raises(ValueError, match="format"):
        HnswVectorIndex.load(path, {**header, "format_version": 1}, base, HnswParams())
    with pytest.raises(ValueError, match="header"):
        HnswVectorIndex.load(path, {**header, "params": {"m": "x"}}, base, HnswParams())
    with pytest.raises(ValueError, match="header"):
        parse_header(np.frombuffer(b"[1, 2", np.uint8))
    # the header fits but the file is cut short, or holds vectors of another count
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(ValueError, match="faiss cannot read"):
        HnswVectorIndex.load(path, header, base, HnswParams())
    small = HnswVectorIndex.build(base[:100], HnswParams())
    small.save(path)
    with pytest.raises(ValueError, match="number or size"):
        HnswVectorIndex.load(path, header, base, HnswParams())
    # a different ef_search is a query-time setting: the saved graph still fits
    graph.save(path)
    assert HnswVectorIndex.load(path, header, base, HnswParams(ef_search=200)) is not None


def test_an_unwritable_graph_file_is_an_os_error(graph: HnswVectorIndex, tmp_path: Path) -> None:
    with pytest.raises(OSError, match="cannot write the HNSW graph"):
        graph.save(tmp_path / "no-such-folder" / "g.faiss")


def test_missing_extra_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "faiss", None)  # import fails as if not installed
    with pytest.raises(MissingExtraError, match=r"pip install 'twokeys\[ann\]'"):
        require_faiss()
    with pytest.raises(MissingExtraError):
        HnswVectorIndex.build(np.eye(3, dtype=np.float32), HnswParams())


# -- selection --------------------------------------------------------------------------


def test_auto_switches_at_the_threshold() -> None:
    auto = VectorIndexOptions()
    assert auto.choose(DEFAULT_THRESHOLD - 1) == "exact"
    assert auto.choose(DEFAULT_THRESHOLD) == "hnsw"
    assert auto.choose(0) == "exact"
    assert VectorIndexOptions(threshold=10).choose(10) == "hnsw"
    assert VectorIndexOptions(kind="exact").choose(10**7) == "exact"
    assert VectorIndexOptions(kind="hnsw").choose(3) == "hnsw"
    assert "3 vectors < threshold" in VectorIndexOptions(threshold=5).reason(3)


def test_options_round_trip_and_validate() -> None:
    options = VectorIndexOptions(kind="hnsw", threshold=10, hnsw=HnswParams(m=8, ef_search=32))
    assert VectorIndexOptions.from_dict(options.to_dict()) == options
    assert VectorIndexOptions.from_dict({}) == VectorIndexOptions()
    for bad in (
        {"kind": "ivf"},
        {"threshold": -1},
        {"threshold": "many"},
        {"graph": 1},
        {"hnsw": {"m": 1}},
        {"hnsw": {"ef_search": 1.5}},
        {"hnsw": {"efSearch": 10}},
        {"hnsw": []},
    ):
        with pytest.raises(ConfigError):
            VectorIndexOptions.from_dict(bad)


# -- page cache -------------------------------------------------------------------------


def test_read_ahead_reads_the_asked_range(tmp_path: Path) -> None:
    path = tmp_path / "blob"
    path.write_bytes(bytes(range(256)) * 40_000)  # 10.24 MB: more than one read call
    size = path.stat().st_size
    assert read_ahead(path) == size
    assert read_ahead(path, 1000, 5000) == 4000
    assert read_ahead(path, size - 10) == 10
    assert read_ahead(path, size + 5) == 0
    assert read_ahead(path, 50, 20) == 0
    read_ahead_in_background(path, 0, size).join(timeout=30)
    gone = read_ahead_in_background(tmp_path / "missing")  # a hint: errors are ignored
    gone.join(timeout=30)
    assert not gone.is_alive()


def test_mean_similarity_is_the_mean_cosine_over_all_rows(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]], graph: HnswVectorIndex
) -> None:
    base, queries = data
    exact16 = ExactVectorIndex(base.astype(np.float16))
    for q in queries[:5]:
        want = float(np.mean(base.astype(np.float64) @ q))
        assert ExactVectorIndex(base).mean_similarity(q) == pytest.approx(want, abs=1e-6)
        assert graph.mean_similarity(q) == pytest.approx(want, abs=1e-6)
        assert exact16.mean_similarity(q) == pytest.approx(want, abs=1e-3)
    assert ExactVectorIndex(np.zeros((0, 48), np.float32)).mean_similarity(queries[0]) == 0.0


def test_mean_similarity_of_a_large_index_reads_evenly_spaced_rows(
    data: tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base, queries = data
    monkeypatch.setattr(exact_module, "EXACT_MEAN_ROWS", 1500)
    monkeypatch.setattr(exact_module, "MEAN_ROWS", 1500)
    picked = np.linspace(0, len(base) - 1, 1500).astype(np.int64)
    sampled = float(np.mean(base[picked].astype(np.float64) @ queries[0]))
    assert ExactVectorIndex(base).mean_similarity(queries[0]) == pytest.approx(sampled, abs=1e-6)
    full = float(np.mean(base.astype(np.float64) @ queries[0]))
    assert sampled == pytest.approx(full, abs=0.01)  # an estimate of the same chance level
