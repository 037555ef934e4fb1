"""The cross-encoder reranker on a tiny BERT cross-encoder that the test builds and saves itself.

No cross-encoder weights can be installed here, so the model is random (2 layers, hidden
size 16, a 40-word WordPiece vocabulary): the test checks the plumbing, not relevance.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.chunking import indexed_text
from twokeys.errors import ConfigError
from twokeys.request import SearchRequest
from twokeys.rerank import get_reranker
from twokeys.rerank.cross_encoder import CrossEncoderReranker

pytestmark = pytest.mark.slow  # importing torch and transformers takes seconds

WORDS = (
    "power supply fuse undervoltage firmware signature update refund item damaged "
    "replace check failed the a is when after on of to alarm unrelated team "
    "planning issued arrives knows our"
).split()

DOCS = {
    "power.md": "# Power\n\nUndervoltage on the power supply. Replace the fuse.\n",
    "firmware.md": "# Firmware\n\nSignature check failed after a firmware update.\n",
    "supply.md": "# Supply\n\nOur supply team knows the power of planning.\n",
    "alarms.md": "# Alarms\n\nUndervoltage alarm is unrelated to firmware.\n",
    "refunds.md": "# Refunds\n\nA refund is issued when an item arrives damaged.\n",
}


def _tiny_cross_encoder(path: Path) -> Path:
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {token: i for i, token in enumerate([*specials, *WORDS])}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=64,
    ).save_pretrained(path)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        num_labels=1,
        initializer_range=0.5,  # spread the random scores
    )
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("sentence_transformers")  # here, not at import: keeps collection fast
    return _tiny_cross_encoder(tmp_path_factory.mktemp("tiny-cross-encoder"))


@pytest.fixture
def offline_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let monkeypatch restore the variables the reranker sets."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")


def test_scores_pairs_from_a_local_model(model_dir: Path, offline_env: None) -> None:
    import os

    reranker = get_reranker(f"cross-encoder:{model_dir}")
    assert isinstance(reranker, CrossEncoderReranker)
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    passages = ["replace the fuse", "firmware update failed", "a refund is issued"]
    scores = reranker.score("power fuse", passages)
    assert scores.shape == (3,) and scores.dtype == np.float64
    assert np.all(np.isfinite(scores))
    assert len(set(scores.round(6).tolist())) == 3  # a real model, not a constant
    again = reranker.score("power fuse", passages)
    np.testing.assert_allclose(scores, again, rtol=1e-6)
    assert reranker.score("power fuse", []).shape == (0,)


def test_refuses_hub_names_and_missing_directories(tmp_path: Path, offline_env: None) -> None:
    with pytest.raises(ConfigError, match="not a local directory"):
        get_reranker("cross-encoder:cross-encoder/ms-marco-MiniLM-L6-v2")
    with pytest.raises(ConfigError, match="not a local directory"):
        CrossEncoderReranker(tmp_path / "absent")


def test_reranking_retriever_orders_by_cross_encoder(
    tmp_path: Path, model_dir: Path, offline_env: None
) -> None:
    src = write_docs(tmp_path / "docs", DOCS)
    path = tmp_path / "kb.twokeys"
    build_index(src, path, IndexOptions(encoder="test-hash"))
    name = f"cross-encoder:{model_dir}"
    query = "power supply undervoltage fuse firmware"
    with open_index(path) as kb:
        plain = kb.search(query, mode="hybrid", k=5)
        hits = kb.search(query, mode="hybrid", k=5, rerank=name, rerank_top=5, explain=True)
        reranker = kb.retriever(SearchRequest("q", reranker=name)).reranker  # type: ignore[attr-defined]
    assert sorted(h.chunk.id for h in hits) == sorted(h.chunk.id for h in plain)
    expected = reranker.score(query, [indexed_text(h.chunk, h.title) for h in plain])
    order = sorted(range(len(plain)), key=lambda i: (-expected[i], i))
    assert [h.chunk.id for h in hits] == [plain[i].chunk.id for i in order]
    assert [h.chunk.id for h in hits] != [h.chunk.id for h in plain]  # it did re-order
    assert [h.score for h in hits] == pytest.approx([float(expected[i]) for i in order])
    for rank, hit in enumerate(hits, 1):
        ev = hit.evidence[-1]
        assert (ev.retriever, ev.rank) == ("cross-encoder", rank)
        assert ev.score == pytest.approx(hit.score)
