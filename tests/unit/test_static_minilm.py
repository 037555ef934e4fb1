"""The static query encoder (``minilm-static``): its cached token table, its vectors
against the full int8 MiniLM's on text it was not fitted on, and searching a ``minilm``
index with it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from conftest import SUPPORT_KB
from twokeys.dense import static_minilm
from twokeys.dense.encoder import get_encoder
from twokeys.dense.onnx_minilm import MODEL_ID, OnnxMiniLM
from twokeys.dense.static_minilm import DIM, StaticMiniLM, load_map, load_table, table_path

#: the mean cosine to the full model on these texts measured 0.684 when this test was
#: written (0.743 on the fit's held-out Debian manuals); a floor under it that a broken
#: table, map or tokenisation falls far below (the unmapped sums: 0.45 on the manuals)
MEAN_COSINE_FLOOR = 0.62


def _held_out() -> list[str]:
    """Text the map was not fitted on: the example knowledge base, paragraph by paragraph,
    and a few queries."""
    out = []
    for path in sorted((SUPPORT_KB / "docs").rglob("*.md")):
        out += [p.strip() for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    return [*out[:60], "ZX-4821", "Can I get my money back if the item arrived broken?"]


@pytest.fixture(scope="module")
def static() -> StaticMiniLM:
    return StaticMiniLM()


@pytest.fixture(scope="module")
def full() -> OnnxMiniLM:
    return OnnxMiniLM(threads=1)


def test_map_is_shipped_with_its_shape() -> None:
    assert load_map().shape == (DIM + 1, DIM)


def test_table_is_built_once_then_loaded_and_rebuilt_when_damaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[int] = []

    def build() -> npt.NDArray[np.float32]:
        built.append(1)
        return np.arange(4 * DIM, dtype=np.float32).reshape(4, DIM)

    monkeypatch.setattr(static_minilm, "build_table", build)
    path = tmp_path / "static" / "table.npy"
    first = load_table(path)
    assert built == [1] and path.exists()
    again = load_table(path)
    assert built == [1]  # loaded from the cache
    np.testing.assert_array_equal(first, again)
    path.write_bytes(path.read_bytes()[:100])  # truncated: doesn't load
    np.testing.assert_array_equal(load_table(path), first)
    assert built == [1, 1]
    np.testing.assert_array_equal(load_table(path), first)
    assert built == [1, 1]
    # a table of another vocabulary's size (another tokenizer) is rebuilt, not indexed
    np.save(path, np.zeros((3, DIM), np.float32))
    np.testing.assert_array_equal(load_table(path, rows=4), first)
    assert built == [1, 1, 1]


def test_table_path_is_in_the_user_cache_and_names_the_recipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TWOKEYS_CACHE", str(tmp_path))
    path = table_path()
    assert path.parent == tmp_path / "static"
    monkeypatch.setattr(static_minilm, "TABLE_RECIPE", "another recipe")
    assert table_path() != path


@pytest.mark.slow
def test_vectors_have_the_full_models_shape_and_are_deterministic(static: StaticMiniLM) -> None:
    texts = _held_out()
    vectors = static.encode(texts, "query")
    assert vectors.shape == (len(texts), DIM) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(vectors, static.encode(texts, "query"))
    for text, row in zip(texts[:5], vectors[:5], strict=True):
        np.testing.assert_allclose(static.encode_one(text), row, atol=1e-6)
    fresh = StaticMiniLM()  # the cached table, loaded again
    np.testing.assert_array_equal(fresh.encode(texts, "query"), vectors)
    assert static.encode([""], "query").shape == (1, DIM)


@pytest.mark.slow
def test_vectors_are_close_to_the_full_models_on_held_out_text(
    static: StaticMiniLM, full: OnnxMiniLM
) -> None:
    texts = _held_out()
    cosines = (static.encode(texts, "query") * full.encode(texts, "query")).sum(axis=1)
    assert float(cosines.mean()) >= MEAN_COSINE_FLOOR
    # the map does the work: the bare sums are far from the full model's vectors
    ids = [e.ids[1:-1] for e in full._tokenizer.encode_batch(texts)]
    bare = static_minilm.static_sums(static._table, ids)
    assert float((bare * full.encode(texts, "query")).sum(axis=1).mean()) < 0.6


@pytest.mark.slow
def test_a_minilm_index_is_searched_with_static_queries(tmp_path: Path) -> None:
    from twokeys import IndexOptions, build_index, open_index
    from twokeys.errors import ConfigError, EncoderMismatchError
    from twokeys.integrations.common import Searcher

    path = tmp_path / "kb.twokeys"
    build_index(SUPPORT_KB / "docs", path, IndexOptions())
    static = get_encoder("minilm-static")
    assert static.vector_space()[0] == MODEL_ID
    index = open_index(path, query_encoder="minilm-static")
    assert index.query_encoder.id == static.id
    hits = index.search("ZX-4821", k=3)
    assert hits and "ZX-4821" in hits[0].text
    searcher = Searcher(path, None, {"query_encoder": "minilm-static", "k": 3})
    assert [h.chunk_id for h in searcher.search("ZX-4821")] == [h.chunk_id for h in hits]
    # a query-side stand-in embeds no index, and is no index's own encoder
    with pytest.raises(ConfigError, match="'minilm-static' embeds queries only"):
        build_index(
            SUPPORT_KB / "docs", tmp_path / "s.twokeys", IndexOptions(encoder="minilm-static")
        )
    assert not (tmp_path / "s.twokeys").exists()
    with pytest.raises(EncoderMismatchError, match="encoder"):
        open_index(path, encoder=static)
    with pytest.raises(ConfigError, match="unknown encoder 'minilm-sttic'"):
        open_index(path, query_encoder="minilm-sttic")  # at open, not at the first search
    # another space: a bm25-only index's queries can't be embedded; another model is refused
    other = tmp_path / "hash.twokeys"
    build_index(SUPPORT_KB / "docs", other, IndexOptions(encoder="test-hash"))
    with pytest.raises(EncoderMismatchError):
        open_index(other, query_encoder=static)


def test_query_encoder_is_refused_for_a_client() -> None:
    from twokeys.client import Client
    from twokeys.errors import ConfigError
    from twokeys.integrations.common import Searcher

    with pytest.raises(ConfigError, match="query_encoder"):
        Searcher(None, Client("http://127.0.0.1:9"), {"query_encoder": "minilm-static"})
