"""A cross-encoder reranker: sentence-transformers ``CrossEncoder`` over a model on disk.

A cross-encoder reads the query and the passage together and is the usual second stage
of a retrieval pipeline. twokeys never downloads a model: the name is
``cross-encoder:/path/to/model``, a local directory as saved by
``CrossEncoder.save_pretrained`` (or any Hugging Face sequence-classification model with
one output label), loaded on the CPU with the hub switched off (``HF_HUB_OFFLINE=1``).

Needs the optional extra: ``pip install 'twokeys[rerank]'`` (sentence-transformers and
torch). The first stage's score is not blended in (``blend = 0``): the cross-encoder's
own score orders the head of the run.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from twokeys.errors import ConfigError, MissingExtraError
from twokeys.rerank.base import Reranker, Scores


class CrossEncoderReranker(Reranker):
    """Scores each (query, passage) pair with a local sentence-transformers cross-encoder."""

    name = "cross-encoder"

    def __init__(
        self, model_path: str | Path, *, batch_size: int = 32, max_length: int | None = 512
    ) -> None:
        path = Path(model_path).expanduser()
        if not path.is_dir():
            raise ConfigError(
                f"reranker: cross-encoder model {str(model_path)!r} is not a local directory; "
                "twokeys loads models from disk only, never from a hub"
            )
        if batch_size < 1:
            raise ConfigError(f"cross-encoder.batch_size: must be >= 1, got {batch_size}")
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise MissingExtraError(
                "the cross-encoder reranker needs sentence-transformers: "
                "pip install 'twokeys[rerank]'"
            ) from exc
        self.path = path
        self.batch_size = batch_size
        self._model: Any = CrossEncoder(
            str(path), device="cpu", local_files_only=True, max_length=max_length
        )
        labels = int(getattr(self._model, "num_labels", 1))
        if labels != 1:
            raise ConfigError(
                f"reranker: cross-encoder {path} has {labels} output labels; "
                "a reranker needs a model with one relevance score"
            )

    def score(self, query: str, passages: Sequence[str]) -> Scores:
        if not passages:
            return np.empty(0, np.float64)
        pairs = [(query, p) for p in passages]
        scores = self._model.predict(
            pairs, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True
        )
        return np.asarray(scores, np.float64).reshape(len(passages))
