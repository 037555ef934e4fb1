"""A static query encoder in the default MiniLM's vector space: tens of microseconds a
query instead of milliseconds, so an index built with ``minilm`` is searched unchanged.

A text's vector is a weighted sum of rows of a token table, one row per WordPiece of
the MiniLM tokenizer (no network runs at query time), mapped into the full model's
space by one affine map and L2-normalised. Both parts come from the shipped model:

- **The table** (model2vec's idea): each vocabulary entry run alone through the int8
  MiniLM graph (``[CLS] token [SEP]``, mean-pooled, as the full encoder pools), the
  mean row subtracted (what every such one-token text shares), and each row weighted
  by the log of its vocabulary rank (WordPiece vocabularies list common pieces first;
  model2vec's Zipf weighting). Built from the model on first use, about 25 s of one
  core, and kept in the user's cache folder (:func:`table_path`; keyed by the model's
  fingerprint, this recipe, onnxruntime's version and the CPU, as the encoder's
  optimised graph is); a file that doesn't load is rebuilt.
- **The map** (:data:`MAP_FILE`, 385 x 384 float32, 0.6 MB, shipped): a least-squares
  fit, with a small ridge, from the normalised static sums (plus a bias) to the full
  model's normalised vectors, on text from no benchmark collection (Debian's Rust,
  Cargo and CMake manuals). ``python -m benchmarks.static_minilm fit`` rebuilds it and
  reports the cosine to the full model on held-out manuals (Octave, gnuplot, nginx).

What it costs: the vectors are an approximation (mean cosine about 0.74 to the full
model's on held-out sentences), so dense ranking is coarser; the hybrid's BM25 side is
unchanged. Its quality against the default is measured in ``benchmarks/NOTES.md``
(the frameworks benchmark's ``twokeys-langchain-static`` row). Use it where query
latency matters more than the last points of ranking quality:
``open_index(path, query_encoder="minilm-static")`` or an adapter's
``query_encoder="minilm-static"``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

from twokeys.dense.encoder import Encoder, Kind
from twokeys.dense.onnx_minilm import (
    MAX_TOKENS,
    MODEL_ID,
    adds_over_spaces,
    graph_fingerprint,
    model_files,
    tokenizer_fingerprint,
)
from twokeys.errors import ConfigError
from twokeys.text.tokens import SpaceSplitCounter

STATIC_ID = "static:all-MiniLM-L6-v2-int8"
#: bumped when the table's recipe changes (it names the cached file)
TABLE_RECIPE = "static-minilm-table-v1: [CLS] t [SEP] mean-pooled, centred, x log1p(rank)"
MAP_FILE = Path(__file__).with_name("static_minilm_map.npy")
DIM = 384
BUILD_BATCH = 1024


def table_path(folder: Path | None = None) -> Path:
    """Where the token table of this model, recipe, onnxruntime and CPU is cached
    (``folder``, default ``<user cache>/static``)."""
    from twokeys.cachedir import cache_home
    from twokeys.dense.onnx_cache import cache_key

    model, tokenizer = model_files()  # rows are the tokenizer's ids: its file keys them too
    source = (
        f"{graph_fingerprint(model, 'int8')}\n{tokenizer_fingerprint(tokenizer)}\n{TABLE_RECIPE}"
    )
    key = cache_key(source, 0)
    return (cache_home() / "static" if folder is None else folder) / f"minilm-{key}.npy"


def build_table() -> npt.NDArray[np.float32]:
    """The token table (vocabulary x 384, float32): each WordPiece alone through the
    int8 MiniLM graph, centred, weighted by ``log1p`` of its id."""
    from twokeys.dense.onnx_minilm import OnnxMiniLM

    encoder = OnnxMiniLM(threads=1)
    tokenizer = encoder._tokenizer
    size = tokenizer.get_vocab_size()
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    if cls is None or sep is None:
        raise ConfigError("minilm-static: the tokenizer has no [CLS] or [SEP] token")
    table = np.empty((size, DIM), np.float32)
    for start in range(0, size, BUILD_BATCH):
        ids = np.arange(start, min(size, start + BUILD_BATCH), dtype=np.int64)
        batch = np.stack([np.full_like(ids, cls), ids, np.full_like(ids, sep)], axis=1)
        feeds = {"input_ids": batch, "attention_mask": np.ones_like(batch)}
        (pooled,) = encoder._session.run(["sentence_embedding"], feeds)
        table[start : start + len(ids)] = np.asarray(pooled, np.float32)
    table -= table.mean(axis=0, dtype=np.float64).astype(np.float32)
    table *= np.log1p(np.arange(size, dtype=np.float32))[:, None]
    return table


def load_table(path: Path | None = None, *, rows: int | None = None) -> npt.NDArray[np.float32]:
    """The cached table (memory-mapped), built and saved first when it is missing, does
    not load, or is not ``rows`` (the vocabulary's size, when given) by 384. Where the
    cache can't be written, the table is kept in memory only."""
    path = table_path() if path is None else path
    with contextlib.suppress(OSError, ValueError):
        loaded = np.load(path, mmap_mode="r", allow_pickle=False)
        shape_ok = loaded.ndim == 2 and loaded.shape[1] == DIM
        if loaded.dtype == np.float32 and shape_ok and rows in (None, loaded.shape[0]):
            return np.asarray(loaded)
    table = build_table()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, scratch = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".npy", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            np.save(fh, table, allow_pickle=False)
        os.replace(scratch, path)
    except OSError:
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(scratch)
    return table


@cache
def _map_bytes() -> bytes:
    return MAP_FILE.read_bytes()


def load_map() -> npt.NDArray[np.float32]:
    """The shipped affine map, (385, 384): the last row is the bias."""
    import io

    weights = np.load(io.BytesIO(_map_bytes()), allow_pickle=False)
    if weights.shape != (DIM + 1, DIM):
        raise ConfigError(f"minilm-static: {MAP_FILE} has shape {weights.shape}")
    return np.asarray(weights, np.float32)


def static_sums(
    table: npt.NDArray[np.float32], token_ids: Sequence[Sequence[int]]
) -> npt.NDArray[np.float32]:
    """Each text's sum of table rows, L2-normalised (a text without tokens: zeros)."""
    out = np.zeros((len(token_ids), table.shape[1]), np.float32)
    for row, ids in enumerate(token_ids):
        if ids:
            out[row] = table[np.asarray(ids, np.intp)].sum(axis=0)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    normed: npt.NDArray[np.float32] = out / np.maximum(norms, 1e-12)
    return normed


class StaticMiniLM(Encoder):
    """Query vectors for an index built with ``minilm`` (:func:`vector_space` names
    it), from a static token table and the shipped map (module docstring)."""

    id = STATIC_ID
    dim = DIM
    max_tokens = MAX_TOKENS
    batch_size = 256

    def __init__(self, *, table: Path | None = None) -> None:
        """``table``: the cached table's path (default: :func:`table_path`)."""
        from tokenizers import Tokenizer

        model, tokenizer_file = model_files()
        self._model = model
        self._tokenizer_file = tokenizer_file
        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self._count_with: Callable[[Sequence[str]], list[int]] | None = None
        self._table = load_table(table, rows=self._tokenizer.get_vocab_size())
        weights = load_map()
        self._linear = np.ascontiguousarray(weights[:DIM])
        self._bias = np.ascontiguousarray(weights[DIM])

    def fingerprint(self) -> str:
        """A hash of the source model's fingerprint, the table's recipe and the map."""
        digest = hashlib.sha256()
        digest.update(f"{graph_fingerprint(self._model, 'int8')}\n{TABLE_RECIPE}\n".encode())
        digest.update(_map_bytes())
        return "sha256:" + digest.hexdigest()

    def tokenizer_fingerprint(self) -> str:
        return tokenizer_fingerprint(self._tokenizer_file)

    def vector_space(self) -> tuple[str, str, str]:
        """The int8 MiniLM's: the map was fitted to its vectors."""
        return MODEL_ID, graph_fingerprint(self._model, "int8"), self.tokenizer_fingerprint()

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """The full encoder's counts (no special tokens, no truncation), word by word where
        they add up over spaces, as :class:`~twokeys.dense.onnx_minilm.OnnxMiniLM` counts:
        the hybrid's term evidence reads them."""
        if self._count_with is None:
            self._count_with = (
                SpaceSplitCounter(self._count_texts)
                if adds_over_spaces(self._tokenizer)
                else self._count_texts
            )
        return self._count_with(texts)

    def _count_texts(self, texts: Sequence[str]) -> list[int]:
        return [len(e.ids) for e in self._tokenizer.encode_batch(list(texts), False)]

    def _ids(self, texts: Sequence[str]) -> list[list[int]]:
        """WordPiece ids without special tokens, at most ``max_tokens - 2`` (as the full
        model, which truncates with its two special tokens included)."""
        encoded = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [e.ids[: MAX_TOKENS - 2] for e in encoded]

    def embed_batch(self, texts: Sequence[str], kind: Kind) -> npt.NDArray[np.float32]:
        mapped: npt.NDArray[np.float32] = (
            static_sums(self._table, self._ids(texts)) @ self._linear + self._bias
        )
        return mapped

    def encode_one(self, text: str) -> npt.NDArray[np.float32]:
        """One query: a gather, a sum, a 384 x 384 product; no batch tokeniser."""
        ids = self._tokenizer.encode(text, add_special_tokens=False).ids[: MAX_TOKENS - 2]
        summed = self._table[ids].sum(axis=0) if ids else np.zeros(DIM, np.float32)
        summed /= max(float(np.linalg.norm(summed)), 1e-12)
        vector = summed @ self._linear + self._bias
        out: npt.NDArray[np.float32] = vector / max(float(np.linalg.norm(vector)), 1e-12)
        return out
