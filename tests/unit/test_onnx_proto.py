"""The minimal ONNX protobuf reader/writer: round trips, onnxruntime runs what it writes."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from twokeys.dense import onnx_proto as pb
from twokeys.dense.onnx_proto import OnnxFormatError


def _affine_model(w: np.ndarray, b: np.ndarray) -> bytes:
    """y = LayerNorm(x @ w + b) over the last axis, then Softmax over it."""
    return pb.model(
        name="affine",
        nodes=[
            pb.node("MatMul", ["x", "w"], ["xw"]),
            pb.node("Add", ["xw", "b"], ["z"]),
            pb.node("LayerNormalization", ["z", "g", "beta"], ["n"], axis=-1, epsilon=1e-5),
            pb.node("Softmax", ["n"], ["y"], axis=-1),
        ],
        initializers=[
            pb.tensor("w", w),
            pb.tensor("b", b),
            pb.tensor("g", np.ones(w.shape[1], np.float32)),
            pb.tensor("beta", np.zeros(w.shape[1], np.float32)),
        ],
        inputs=[pb.value_info("x", pb.FLOAT, ["batch", w.shape[0]])],
        outputs=[pb.value_info("y", pb.FLOAT, ["batch", w.shape[1]])],
        opsets={"": 17},
    )


def test_onnxruntime_runs_a_written_model() -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((5, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    session = ort.InferenceSession(_affine_model(w, b), providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": x})
    z = x @ w + b
    n = (z - z.mean(-1, keepdims=True)) / np.sqrt(z.var(-1, keepdims=True) + 1e-5)
    expected = np.exp(n) / np.exp(n).sum(-1, keepdims=True)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
    assert session.get_inputs()[0].shape == ["batch", 5]


def test_read_back_what_was_written() -> None:
    w = np.arange(15, dtype=np.float32).reshape(5, 3)
    b = np.array([-1.5, 0.0, 2.25], np.float32)
    graph = pb.read_graph(_affine_model(w, b))
    assert [n.op_type for n in graph.nodes] == ["MatMul", "Add", "LayerNormalization", "Softmax"]
    assert graph.nodes[1].inputs == ("xw", "b") and graph.nodes[1].outputs == ("z",)
    np.testing.assert_array_equal(graph.initializers["w"], w)
    np.testing.assert_array_equal(graph.initializers["b"], b)
    assert graph.initializers["w"].dtype == np.float32


@pytest.mark.parametrize(
    "array",
    [
        np.array([[-128, 0, 127]], np.int8),
        np.array([0, 255], np.uint8),
        np.array([-(2**40), 7], np.int64),
        np.array([-5, 5], np.int32),
        np.array([True, False]),
        np.array(3.5, np.float32),  # a scalar: no dims
    ],
)
def test_tensor_types_round_trip(array: np.ndarray) -> None:
    data = pb.model(
        name="t",
        nodes=[],
        initializers=[pb.tensor("t", array)],
        inputs=[],
        outputs=[],
        opsets={"": 17},
    )
    out = pb.read_graph(data).initializers["t"]
    assert out.dtype == array.dtype and out.shape == array.shape
    np.testing.assert_array_equal(out, array)


def test_writing_is_deterministic() -> None:
    w = np.ones((2, 2), np.float32)
    assert _affine_model(w, np.zeros(2, np.float32)) == _affine_model(w, np.zeros(2, np.float32))


def test_negative_ints_and_floats_in_attributes_survive() -> None:
    x = np.array([[1.0, 2.0], [3.0, 5.0]], np.float32)
    model = pb.model(
        name="attrs",
        nodes=[
            pb.node("Softmax", ["x"], ["s"], axis=-2),
            pb.node("LeakyRelu", ["s"], ["y"], alpha=0.25),
        ],
        initializers=[],
        inputs=[pb.value_info("x", pb.FLOAT, [2, 2])],
        outputs=[pb.value_info("y", pb.FLOAT, [2, 2])],
        opsets={"": 17},
    )
    (y,) = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(y, np.exp(x) / np.exp(x).sum(0), rtol=1e-6)


def test_bad_input_is_a_format_error() -> None:
    with pytest.raises(OnnxFormatError):
        pb.read_graph(b"\x3a\xff")  # graph field whose length runs past the end
    with pytest.raises(OnnxFormatError, match="no graph"):
        pb.read_graph(b"\x08\x08")  # only ir_version


def test_matches_the_onnx_package_where_installed() -> None:
    onnx = pytest.importorskip("onnx")
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    data = _affine_model(w, np.ones(2, np.float32))
    model = onnx.load_from_string(data)
    onnx.checker.check_model(model)
    assert [n.op_type for n in model.graph.node] == [
        "MatMul",
        "Add",
        "LayerNormalization",
        "Softmax",
    ]
    ln = model.graph.node[2]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in ln.attribute}
    assert attrs["axis"] == -1 and attrs["epsilon"] == pytest.approx(1e-5)
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(model.graph.initializer[0]), w)
    assert model.SerializeToString() == data  # same field order as protobuf's own writer
