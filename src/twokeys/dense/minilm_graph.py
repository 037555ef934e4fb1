"""A fused float32 inference graph for a BERT sentence encoder, built from its weights.

The shipped all-MiniLM-L6-v2 model is a torch-dynamo export with weight-only int8
storage: every run computes in float32 (onnxruntime folds ``Cast`` + ``Mul`` of the
int8 weights into float32 tensors when the session starts), but the exporter spelled
attention out as a dozen small ops over ``(batch, heads, tokens, tokens)`` tensors
(mask ``Where``, ``Add``, ``Softmax``, then ``IsNaN`` + ``Where``), which onnxruntime's
fusions don't recognise and which cost about a fifth of a long batch.

:func:`read_weights` recovers the model's parameters under their PyTorch names;
:func:`build_graph` writes the same network with onnxruntime's fused CPU operators
(``com.microsoft`` ``Attention``, ``SkipLayerNormalization``, ``BiasGelu``) and
sentence-transformers' mean pooling in the graph, so a run returns ``(batch, dim)``
sentence vectors. Weights are dequantised exactly as the shipped graph does it; the
word table stays int8 and only the gathered rows are dequantised. Same weights, same
function: outputs agree with the shipped graph to float32 rounding (cosine > 0.99999),
not bit for bit, which is why the encoder's fingerprint names :data:`GRAPH_RECIPE`.

With ``int8=True`` the four matrix products of a layer that are not attention's own
(the attention output projection and the feed-forward pair: three quarters of the
multiply-adds) compute in int8, as onnxruntime's ``MatMulInteger`` (unsigned 8-bit
activations times the shipped signed 8-bit weights, int32 sums; AVX-512 VNNI / AVX2
kernels). The weights are the shipped int8 values and per-column scales, unchanged;
each token's activation row is quantised on its own (symmetric, its largest magnitude
to 127, stored with +128 so the operands are ``uint8 x int8``), so a text's vector
still doesn't depend on the texts batched with it, and an outlier token costs only its
own row's precision. The query/key/value projection stays float32 inside the fused
``Attention``: quantising it too was 5% faster and cost five times the error (cosine to
sentence-transformers' float32 vectors, minimum over SciFact passages, 0.995 against
0.998). This is :data:`INT8_RECIPE`.

The int32 sums must be exact on every CPU. x86 CPUs without VNNI (AVX2, AVX-512 before
VNNI) multiply ``uint8 x int8`` with ``vpmaddubsw``, which adds two products into a
saturating int16: a token row with large activations against large weights clips, and
the vectors move (measured on an AVX2 EPYC: cosine 0.9974 to the float32 graph where an
exact product gives 0.9981). There the weights are stored as ``uint8`` with zero point
128 (``uint8 x uint8``, which onnxruntime widens to int16 before multiplying, and whose
sums it corrects for both zero points: the same exact int32 sums), about a tenth slower
on that CPU. Where the CPU has VNNI (``vpdpbusd`` sums into int32) or where its flags
can't be read as x86's, see :func:`signed_products_exact`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from twokeys.dense import onnx_proto as pb
from twokeys.dense.onnx_proto import OnnxFormatError

#: changes whenever :func:`build_graph` would compute anything differently
GRAPH_RECIPE = "fused-fp32-v1"
#: the same with int8 output projection and feed-forward products (``int8=True``)
INT8_RECIPE = "fused-int8-v1"

_MS = "com.microsoft"


def signed_products_exact(flags: str | None = None) -> bool:
    """Whether onnxruntime's ``uint8 x int8`` matrix product sums exactly on this CPU:
    on x86, only with VNNI (``avx512_vnni`` or ``avx_vnni`` among the flags; see the
    module docstring). ``flags``: a ``/proc/cpuinfo`` flags line, read when not given;
    where there is none (another OS, another architecture) the answer is False, and the
    unsigned form, exact everywhere, is used."""
    if flags is None:
        flags = _cpu_flags_line()
    words = set(flags.split())
    return bool(words & {"avx512_vnni", "avx_vnni"})


def _cpu_flags_line() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return line.partition(":")[2]
    except OSError:
        pass
    return ""


@dataclass(frozen=True)
class Quantized:
    """A weight-only int8 tensor, ``q * scale`` (the scale broadcast over rows or
    columns)."""

    q: npt.NDArray[np.int8]
    scale: npt.NDArray[np.float32]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.q.shape)

    def dequantize(self) -> npt.NDArray[np.float32]:
        out = self.q.astype(np.float32)
        out *= self.scale
        return out


Weight = npt.NDArray[np.float32] | Quantized
Weights = Mapping[str, Weight]


def read_weights(model: bytes, *, prefix: str = "inner.") -> dict[str, Weight]:
    """The parameters of a BERT encoder exported to ONNX, under PyTorch names
    (``encoder.layer.0.attention.self.query.weight``, linear weights as ``(in, out)``).

    Weight-only int8 tensors (``Cast(q) * scale``) come back as :class:`Quantized`; a
    ``MatMul`` weight takes its name from the ``*.bias`` added to its output.
    """
    graph = pb.read_graph(model)
    values: dict[str, Weight] = {
        name: array.astype(np.float32, copy=False)
        for name, array in graph.initializers.items()
        if array.dtype == np.float32
    }
    int8_casts = {
        n.outputs[0]: graph.initializers[n.inputs[0]].astype(np.int8, copy=False)
        for n in graph.nodes
        if n.op_type == "Cast"
        and n.inputs[0] in graph.initializers
        and graph.initializers[n.inputs[0]].dtype == np.int8
    }
    for n in graph.nodes:
        if n.op_type == "Mul" and n.inputs[0] in int8_casts:
            scale = values.get(n.inputs[1])
            if isinstance(scale, np.ndarray):
                values[n.outputs[0]] = Quantized(int8_casts[n.inputs[0]], scale)
    weights = {
        name.removeprefix(prefix): w for name, w in values.items() if name.startswith(prefix)
    }
    producer = {n.outputs[0]: n for n in graph.nodes}
    for n in graph.nodes:
        if n.op_type != "Add" or not n.inputs[1].endswith(".bias"):
            continue
        matmul = producer.get(n.inputs[0])
        if matmul is not None and matmul.op_type == "MatMul" and matmul.inputs[1] in values:
            name = n.inputs[1].removeprefix(prefix).removesuffix(".bias") + ".weight"
            weights[name] = values[matmul.inputs[1]]
    return weights


@dataclass
class _Writer:
    """Collects the nodes and initialisers of a graph under construction."""

    weights: Weights
    int8: bool = False
    signed: bool = True  # int8 weights as stored (exact on VNNI), else uint8 + 128
    nodes: list[pb.Parts] = field(default_factory=list)
    inits: list[pb.Parts] = field(default_factory=list)

    def const(self, name: str, array: npt.NDArray[np.generic]) -> str:
        self.inits.append(pb.tensor(name, array))
        return name

    def op(self, op_type: str, inputs: list[str], out: str, **attrs: pb.Attr) -> str:
        domain = str(attrs.pop("domain", ""))
        self.nodes.append(pb.node(op_type, inputs, [out], domain=domain, **attrs))
        return out

    def weight(self, name: str, shape: tuple[int, ...] | None = None) -> Weight:
        weight = self.weights.get(name)
        if weight is None:
            raise OnnxFormatError(f"model weights: {name} not found")
        if shape is not None and weight.shape != shape:
            raise OnnxFormatError(
                f"model weights: {name} has shape {weight.shape}, expected {shape}"
            )
        return weight

    def floats(self, name: str, shape: tuple[int, ...]) -> npt.NDArray[np.float32]:
        """A weight as float32 (dequantised if stored as int8)."""
        weight = self.weight(name, shape)
        if isinstance(weight, Quantized):
            return weight.dequantize()
        return np.ascontiguousarray(weight, np.float32)

    def param(self, const_name: str, name: str, shape: tuple[int, ...]) -> str:
        return self.const(const_name, self.floats(name, shape))

    def linear(self, x: str, const_name: str, name: str, shape: tuple[int, int], out: str) -> str:
        """``x @ weight`` (no bias): in int8 when the graph is built so and the weight
        is stored as int8 with one scale per output column (or one in all), else in
        float32."""
        weight = self.weight(name, shape)
        columns = shape[1]
        if not (
            self.int8
            and isinstance(weight, Quantized)
            and weight.scale.size in (1, columns)
            and weight.scale.shape[:-1] in ((), (1,))
        ):
            return self.op("MatMul", [x, self.param(const_name, name, shape)], out)
        return _int8_matmul(self, x, const_name, weight, out)


def build_graph(
    weights: Weights,
    *,
    layers: int,
    heads: int,
    max_tokens: int,
    epsilon: float = 1e-12,
    int8: bool = False,
    signed: bool | None = None,
) -> bytes:
    """A serialised ONNX model: ``input_ids``, ``attention_mask`` (int64, ``(batch,
    tokens)``, at most ``max_tokens``) to ``sentence_embedding`` (float32, ``(batch,
    dim)``), the attention-mask-weighted mean of the last layer (not normalised).
    ``int8``: output projections and feed-forward products in int8 (module docstring).
    ``signed``: multiply by the int8 weights as stored (``uint8 x int8``) rather than
    shifted to ``uint8`` with zero point 128; both give the same sums where the CPU sums
    exactly. None: :func:`signed_products_exact`.
    """
    if signed is None:
        signed = signed_products_exact()
    g = _Writer(weights, int8=int8, signed=signed)
    dim = g.weight("embeddings.word_embeddings.weight").shape[1]
    x = _embeddings(g, dim, max_tokens, epsilon)
    mask = g.op("Cast", ["attention_mask"], "mask.int32", to=pb.INT32)
    if int8:
        g.op("Shape", ["input_ids"], "batch.tokens")
    for i in range(layers):
        x = _layer(g, i, x, mask, dim=dim, heads=heads, epsilon=epsilon)
    _mean_pool(g, x, "sentence_embedding")
    return pb.model(
        name="sentence-encoder",
        nodes=g.nodes,
        initializers=g.inits,
        inputs=[
            pb.value_info(n, pb.INT64, ["batch", "tokens"]) for n in ("input_ids", "attention_mask")
        ],
        outputs=[pb.value_info("sentence_embedding", pb.FLOAT, ["batch", dim])],
        opsets={"": 17, _MS: 1},
    )


def _embeddings(g: _Writer, dim: int, max_tokens: int, epsilon: float) -> str:
    """Word + position + token type embeddings, layer-normalised. Token type ids are
    always 0 here, so that row is added to the position table once, at build time."""
    e = "embeddings."
    positions = g.weight(e + "position_embeddings.weight")
    if positions.shape[0] < max_tokens or positions.shape[1:] != (dim,):
        raise OnnxFormatError(f"model weights: no position embeddings for {max_tokens} tokens")
    table = g.floats(e + "position_embeddings.weight", positions.shape)[:max_tokens]
    table = table + g.floats(e + "token_type_embeddings.weight", (2, dim))[0]
    zero = g.const("zero", np.array([0], np.int64))
    length = g.op("Shape", ["input_ids"], "tokens", start=1, end=2)
    pos = g.op("Slice", [g.const("position_embeddings", table), zero, length, zero], "positions")
    x = g.op("Add", [_word_rows(g, e + "word_embeddings.weight"), pos], "embedded")
    ln = [g.param("embeddings.ln.w", e + "LayerNorm.weight", (dim,))]
    ln.append(g.param("embeddings.ln.b", e + "LayerNorm.bias", (dim,)))
    return g.op("LayerNormalization", [x, *ln], "layer.in.0", axis=-1, epsilon=epsilon)


def _word_rows(g: _Writer, name: str) -> str:
    """Rows of the word table for ``input_ids``. An int8 table stays int8 in the graph
    (a quarter of the memory) and only the gathered rows are dequantised: the same
    float32 products as dequantising the whole table first."""
    table = g.weight(name)
    if not isinstance(table, Quantized):
        return g.op("Gather", [g.param("word_embeddings", name, table.shape), "input_ids"], "words")
    rows = g.op("Gather", [g.const("word_embeddings.q", table.q), "input_ids"], "words.q")
    if table.scale.shape == (table.shape[0], 1):  # a scale per token id
        scale_table = g.const("word_embeddings.scale", table.scale)
        scale = g.op("Gather", [scale_table, "input_ids"], "words.scale")
    elif table.scale.size in (1, table.shape[1]):  # one scale, or one per column
        scale = g.const("word_embeddings.scale", table.scale.reshape(-1))
    else:
        raise OnnxFormatError(f"model weights: {name} has a scale of shape {table.scale.shape}")
    return g.op("Mul", [g.op("Cast", [rows], "words.f", to=pb.FLOAT), scale], "words")


def _layer(g: _Writer, i: int, x: str, mask: str, *, dim: int, heads: int, epsilon: float) -> str:
    """One transformer layer: fused self-attention (Q, K, V projections in one
    matrix), output projection + residual + layer norm, GELU feed-forward + residual
    + layer norm."""
    p = f"encoder.layer.{i}."
    qkv = [p + f"attention.self.{n}" for n in ("query", "key", "value")]
    qkv_w = np.concatenate([g.floats(n + ".weight", (dim, dim)) for n in qkv], axis=1)
    qkv_b = np.concatenate([g.floats(n + ".bias", (dim,)) for n in qkv])
    attention_inputs = [x, g.const(f"{i}.qkv.w", qkv_w), g.const(f"{i}.qkv.b", qkv_b), mask]
    ctx = g.op("Attention", attention_inputs, f"{i}.context", domain=_MS, num_heads=heads)
    out = p + "attention.output."
    proj = g.linear(ctx, f"{i}.out.w", out + "dense.weight", (dim, dim), f"{i}.o")
    x = _add_and_norm(g, proj, x, out, f"{i}.attended", dim=dim, epsilon=epsilon)
    hidden = g.weight(p + "intermediate.dense.weight").shape[1]
    inner = p + "intermediate.dense."
    h = g.linear(x, f"{i}.in.w", inner + "weight", (dim, hidden), f"{i}.in")
    bias = g.param(f"{i}.in.b", inner + "bias", (hidden,))
    h = g.op("BiasGelu", [h, bias], f"{i}.gelu", domain=_MS)
    ffn = p + "output."
    h = g.linear(h, f"{i}.ffn.w", ffn + "dense.weight", (hidden, dim), f"{i}.ffn")
    return _add_and_norm(g, h, x, ffn, f"layer.in.{i + 1}", dim=dim, epsilon=epsilon)


def _int8_matmul(g: _Writer, x: str, name: str, weight: Quantized, out: str) -> str:
    """``x @ (q * scale)`` with ``x`` quantised token by token: each row of ``x`` (one
    token's activations) gets the scale that maps its largest magnitude to 127, is
    stored as ``uint8`` with zero point 128, multiplied by the int8 weights into int32
    sums, then scaled back by its own and each column's scale."""
    rows, columns = weight.shape
    x2 = g.op("Reshape", [x, g.const(f"{name}.rows", np.array([-1, rows], np.int64))], f"{name}.x")
    magnitude = g.op("Abs", [x2], f"{name}.abs")
    peak = g.op("ReduceMax", [magnitude], f"{name}.peak", axes=[1], keepdims=0)
    peak = g.op("Max", [peak, g.const(f"{name}.floor", np.array(1e-30, np.float32))], f"{name}.pk")
    scale = g.op("Mul", [peak, g.const(f"{name}.127", np.array(1 / 127, np.float32))], f"{name}.s")
    zero = g.const(f"{name}.zero", np.array(128, np.uint8))
    zeros = g.op("Expand", [zero, g.op("Shape", [scale], f"{name}.n")], f"{name}.zeros")
    xq = g.op("QuantizeLinear", [x2, scale, zeros], f"{name}.xq", axis=0)
    if g.signed:
        operands = [xq, g.const(f"{name}.q", weight.q), zero]
    else:  # q + 128 as uint8, zero point 128: the same products, summed without saturation
        shifted = (weight.q.astype(np.int16) + 128).astype(np.uint8)
        operands = [xq, g.const(f"{name}.q", shifted), zero, zero]
    sums = g.op("MatMulInteger", operands, f"{name}.sums")
    y = g.op("Cast", [sums], f"{name}.f", to=pb.FLOAT)
    columns_scale = g.const(f"{name}.cs", weight.scale.reshape(-1).astype(np.float32))
    y = g.op("Mul", [y, columns_scale], f"{name}.y1")
    one = g.const(f"{name}.one", np.array([1], np.int64))
    y = g.op("Mul", [y, g.op("Unsqueeze", [scale, one], f"{name}.s1")], f"{name}.y")
    shape = g.const(f"{name}.cols", np.array([columns], np.int64))
    shape = g.op("Concat", ["batch.tokens", shape], f"{name}.shape", axis=0)
    return g.op("Reshape", [y, shape], out)


def _add_and_norm(
    g: _Writer, h: str, residual: str, prefix: str, out: str, *, dim: int, epsilon: float
) -> str:
    """``LayerNorm(h + bias + residual)`` with the weights under ``prefix``."""
    inputs = [
        h,
        residual,
        g.param(f"{out}.ln.w", prefix + "LayerNorm.weight", (dim,)),
        g.param(f"{out}.ln.b", prefix + "LayerNorm.bias", (dim,)),
        g.param(f"{out}.bias", prefix + "dense.bias", (dim,)),
    ]
    return g.op("SkipLayerNormalization", inputs, out, domain=_MS, epsilon=epsilon)


def _mean_pool(g: _Writer, x: str, out: str) -> str:
    """Mean of the unmasked token vectors: ``(batch, 1, tokens) @ (batch, tokens,
    dim)``, divided by the token count."""
    weights = g.op("Cast", ["attention_mask"], "mask.float", to=pb.FLOAT)
    one = g.const("one", np.array([1], np.int64))
    summed = g.op("MatMul", [g.op("Unsqueeze", [weights, one], "mask.row"), x], "summed")
    count = g.op("ReduceSum", [weights, one], "count", keepdims=1)
    count = g.op("Max", [count, g.const("tiny", np.array(1e-9, np.float32))], "count.safe")
    return g.op("Div", [g.op("Squeeze", [summed, one], "summed.rows"), count], out)
