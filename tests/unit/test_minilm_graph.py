"""The fused MiniLM graphs (float32, and the default with int8 products) against the
shipped int8 graph and sentence-transformers, and the encoder built on them."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from conftest import SUPPORT_KB
from twokeys.dense.minilm_graph import (
    GRAPH_RECIPE,
    INT8_RECIPE,
    Quantized,
    build_graph,
    read_weights,
    signed_products_exact,
)
from twokeys.dense.onnx_minilm import (
    HEADS,
    LAYERS,
    MAX_TOKENS,
    OnnxMiniLM,
    fused_graph,
    model_files,
)
from twokeys.dense.onnx_proto import OnnxFormatError
from twokeys.errors import ConfigError


def _texts() -> list[str]:
    """Real text of many lengths: the example knowledge base, paragraph by paragraph."""
    out = []
    for path in sorted((SUPPORT_KB / "docs").rglob("*.md")):
        out += [p.strip() for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    long = " ".join(out)  # one text past the 256-token cap
    return [*out[:40], long, "ZX-4821", "Can I get my money back if the item arrived broken?"]


@pytest.fixture(scope="module")
def fused() -> OnnxMiniLM:
    return OnnxMiniLM(threads=1, graph="fused")


@pytest.fixture(scope="module")
def default() -> OnnxMiniLM:
    """The default encoder: the fused graph with int8 products."""
    return OnnxMiniLM(threads=1)


@pytest.fixture(scope="module")
def shipped() -> OnnxMiniLM:
    return OnnxMiniLM(threads=1, graph="shipped")


def test_weights_are_read_under_bert_names() -> None:
    weights = read_weights(model_files()[0].read_bytes())
    assert weights["embeddings.word_embeddings.weight"].shape == (30522, 384)
    assert weights["embeddings.position_embeddings.weight"].shape == (512, 384)
    for i in range(6):
        p = f"encoder.layer.{i}."
        assert weights[p + "attention.self.query.weight"].shape == (384, 384)
        assert weights[p + "intermediate.dense.weight"].shape == (384, 1536)
        assert weights[p + "output.dense.weight"].shape == (1536, 384)
        assert weights[p + "output.LayerNorm.bias"].shape == (384,)
    # weight-only int8 tensors stay int8 with their scales; the rest is float32
    word = weights["embeddings.word_embeddings.weight"]
    assert isinstance(word, Quantized) and word.scale.shape == (30522, 1)
    assert isinstance(weights["encoder.layer.0.output.dense.weight"], Quantized)
    assert all(w.dtype == np.float32 for w in weights.values() if not isinstance(w, Quantized))


def test_dequantising_is_the_shipped_graphs_arithmetic() -> None:
    q = np.array([[-128, 0, 127], [5, -7, 1]], np.int8)
    scale = np.array([[0.5], [0.03125]], np.float32)
    expected = q.astype(np.float32) * scale
    np.testing.assert_array_equal(Quantized(q, scale).dequantize(), expected)


@pytest.mark.parametrize("int8", [False, True])
def test_graph_build_is_deterministic(int8: bool) -> None:
    first = hashlib.sha256(fused_graph(model_files()[0], int8=int8)).hexdigest()
    assert hashlib.sha256(fused_graph(model_files()[0], int8=int8)).hexdigest() == first


def test_a_missing_weight_is_named() -> None:
    weights = read_weights(model_files()[0].read_bytes())
    del weights["encoder.layer.3.output.dense.bias"]
    with pytest.raises(OnnxFormatError, match=r"encoder\.layer\.3\.output\.dense\.bias"):
        build_graph(weights, layers=6, heads=12, max_tokens=MAX_TOKENS)


def test_fused_graph_agrees_with_the_shipped_graph(fused: OnnxMiniLM, shipped: OnnxMiniLM) -> None:
    texts = _texts()
    a = fused.encode(texts, "document")
    b = shipped.encode(texts, "document")
    cosine = np.sum(a * b, axis=1)
    # same weights, same function: only float32 rounding differs
    assert cosine.min() > 0.9999, cosine.min()
    assert np.abs(a - b).max() < 1e-3


def test_int8_products_stay_close_to_float32(default: OnnxMiniLM, fused: OnnxMiniLM) -> None:
    """Each token's activations get their own int8 scale: the vectors move a little
    (measured: cosine 0.9981 or more here on an AVX2 EPYC, 0.9984 to sentence-transformers
    on SciFact; 0.9974 on that CPU before its int8 sums were made exact, see below)."""
    texts = _texts()
    cosine = np.sum(default.encode(texts, "document") * fused.encode(texts, "document"), axis=1)
    assert cosine.min() > 0.998, cosine.min()


def test_signed_products_are_used_only_where_the_cpu_sums_them_exactly() -> None:
    avx2 = "fpu sse2 ssse3 avx avx2 fma bmi2 sha_ni"
    assert not signed_products_exact(avx2)
    assert not signed_products_exact(avx2 + " avx512f avx512bw avx512vl")  # no VNNI
    assert signed_products_exact(avx2 + " avx512f avx512bw avx512_vnni")
    assert signed_products_exact(avx2 + " avx_vnni")
    assert not signed_products_exact("")  # no x86 flags to read: the form exact anywhere


def _sentence_vectors(graph: bytes, encoder: OnnxMiniLM, texts: list[str]) -> np.ndarray:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
    rows = []
    for text in texts:
        ids = encoder._tokenizer.encode(text).ids  # one text a run: no padding
        feed = {
            "input_ids": np.array([ids], np.int64),
            "attention_mask": np.ones((1, len(ids)), np.int64),
        }
        (vector,) = session.run(["sentence_embedding"], feed)
        rows.append(vector[0] / np.linalg.norm(vector[0]))
    return np.stack(rows)


def test_unsigned_weights_give_the_exact_int8_sums(fused: OnnxMiniLM) -> None:
    """Weights shifted to uint8 with zero point 128 give the exact int32 sums on every
    CPU; the signed form only where the CPU has VNNI (elsewhere ``vpmaddubsw`` saturates
    int16 pairs). So the unsigned graph is never further from float32 than the signed one,
    and equal to it where signed products are exact."""
    weights = read_weights(Path(model_files()[0]).read_bytes())
    texts = _texts()[:12] + _texts()[-3:]
    shape = {"layers": LAYERS, "heads": HEADS, "max_tokens": MAX_TOKENS, "int8": True}
    signed = _sentence_vectors(build_graph(weights, **shape, signed=True), fused, texts)
    unsigned = _sentence_vectors(build_graph(weights, **shape, signed=False), fused, texts)
    reference = fused.encode(texts, "document")
    cos_signed = np.sum(signed * reference, axis=1)
    cos_unsigned = np.sum(unsigned * reference, axis=1)
    assert cos_unsigned.min() > 0.998, cos_unsigned.min()
    assert cos_unsigned.min() >= cos_signed.min() - 1e-6
    if signed_products_exact():
        np.testing.assert_allclose(signed, unsigned, atol=1e-6)


@pytest.mark.parametrize("graph", ["int8", "fused"])
def test_vectors_do_not_depend_on_the_batch(
    graph: str, default: OnnxMiniLM, fused: OnnxMiniLM
) -> None:
    encoder = default if graph == "int8" else fused
    texts = _texts()
    together = encoder.encode(texts, "document")
    alone = np.stack([encoder.encode_query(t) for t in texts])
    # padding is masked out, and int8 scales are per token: a text's vector is the same
    # alone or next to longer texts
    np.testing.assert_allclose(together, alone, atol=2e-5)
    again = encoder.encode(texts, "document")
    np.testing.assert_array_equal(together, again)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)


def test_embed_batch_and_encode_agree(default: OnnxMiniLM) -> None:
    texts = _texts()[:8]
    raw = default.embed_batch(texts, "document")
    raw /= np.linalg.norm(raw, axis=1, keepdims=True)
    np.testing.assert_allclose(raw, default.encode(texts, "document"), atol=2e-5)
    assert default.encode([], "query").shape == (0, 384)


def test_fingerprint_names_the_graph(
    default: OnnxMiniLM, fused: OnnxMiniLM, shipped: OnnxMiniLM
) -> None:
    model = Path(model_files()[0])
    file_hash = hashlib.sha256(model.read_bytes()).hexdigest()
    # the shipped graph keeps the fingerprint indexes were built with before
    assert shipped.fingerprint() == "sha256:" + file_hash
    expected = hashlib.sha256(f"{file_hash}\n{GRAPH_RECIPE}".encode()).hexdigest()
    assert fused.fingerprint() == "sha256:" + expected
    expected = hashlib.sha256(f"{file_hash}\n{INT8_RECIPE}".encode()).hexdigest()
    assert default.fingerprint() == "sha256:" + expected
    assert default.id == fused.id == shipped.id == "onnx:all-MiniLM-L6-v2-int8"


def test_bad_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="graph"):
        OnnxMiniLM(graph="fp16")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="batch_size"):
        OnnxMiniLM(batch_size=0)


def test_batches_respect_the_token_budget() -> None:
    shapes: list[tuple[int, int]] = []

    class Recording(OnnxMiniLM):
        def _run(self, token_ids):  # type: ignore[no-untyped-def]
            out = super()._run(token_ids)
            width = -(-max(len(t) for t in token_ids) // 8) * 8
            shapes.append((len(token_ids), min(width, MAX_TOKENS)))
            return out

    encoder = Recording(threads=1, batch_size=16, batch_tokens=300)
    texts = _texts()
    vectors = encoder.encode(texts, "document")
    assert sum(rows for rows, _ in shapes) == len(texts)
    for rows, width in shapes:
        assert rows <= 16 and (rows == 1 or rows * width <= 300), shapes
    assert vectors.shape == (len(texts), 384)


@pytest.mark.parametrize("signed", [False, True])
def test_int8_product_equals_exact_integer_arithmetic(signed: bool) -> None:
    """One ``_int8_matmul`` on values chosen to saturate an int16 pair sum (activations
    at the row's peak, weights at -128/127), against numpy's int64 arithmetic of the
    same quantisation: the unsigned form is exact on every CPU, the signed form only
    where :func:`signed_products_exact` says so (elsewhere it differs: saturation)."""
    import onnxruntime as ort

    from twokeys.dense import onnx_proto as pb
    from twokeys.dense.minilm_graph import _int8_matmul, _Writer

    rng = np.random.default_rng(3)
    rows, columns, tokens = 64, 16, 5
    q = rng.choice(np.array([-128, -127, 127], np.int8), size=(rows, columns))
    scale = rng.uniform(0.01, 0.02, size=(1, columns)).astype(np.float32)
    x = rng.choice(np.array([-1.0, 1.0], np.float32), size=(1, tokens, rows)) * 3.0
    g = _Writer({}, int8=True, signed=signed)
    g.op("Shape", ["input_ids"], "batch.tokens")
    _int8_matmul(g, "x", "m", Quantized(q, scale), "y")
    graph = pb.model(
        name="one-product",
        nodes=g.nodes,
        initializers=g.inits,
        inputs=[
            pb.value_info("x", pb.FLOAT, [1, tokens, rows]),
            pb.value_info("input_ids", pb.INT64, [1, tokens]),
        ],
        outputs=[pb.value_info("y", pb.FLOAT, [1, tokens, columns])],
        opsets={"": 17},
    )
    session = ort.InferenceSession(graph, providers=["CPUExecutionProvider"])
    (y,) = session.run(["y"], {"x": x, "input_ids": np.zeros((1, tokens), np.int64)})
    # the same steps in exact arithmetic: each row to 127 at its peak, + 128 as uint8
    x2 = x.reshape(tokens, rows)
    row_scale = np.float32(np.abs(x2).max(axis=1) * np.float32(1 / 127))
    xq = np.clip(np.rint(x2 / row_scale[:, None]) + 128, 0, 255).astype(np.int64)
    sums = (xq - 128) @ q.astype(np.int64)
    expected = (sums.astype(np.float32) * scale.reshape(-1)) * row_scale[:, None]
    exact = np.allclose(y.reshape(tokens, columns), expected, rtol=1e-6, atol=0)
    if not signed or signed_products_exact():
        assert exact, np.abs(y.reshape(tokens, columns) - expected).max()
