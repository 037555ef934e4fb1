"""Just enough of the ONNX protobuf encoding to read a model's weights and write a graph.

The default encoder rebuilds its inference graph from the shipped model's weights
(:mod:`twokeys.dense.minilm_graph`). Doing that with the ``onnx`` package would add a
31 MB dependency for two small jobs, so this module speaks the protobuf wire format
(https://protobuf.dev/programming-guides/encoding/) for the few ONNX messages involved
(field numbers from ``onnx/onnx.proto``). Reading keeps tensor bytes as zero-copy
views; writing is deterministic: the same graph always gives the same bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from twokeys.errors import TwokeysError

# TensorProto.DataType
FLOAT, UINT8, INT8, INT32, INT64, BOOL = 1, 2, 3, 6, 7, 9
_DTYPES: dict[int, type[np.generic]] = {
    FLOAT: np.float32,
    UINT8: np.uint8,
    INT8: np.int8,
    INT32: np.int32,
    INT64: np.int64,
    BOOL: np.bool_,
}
_CODES = {np.dtype(t): code for code, t in _DTYPES.items()}

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


class OnnxFormatError(TwokeysError):
    """The model file is not the ONNX this module can read."""


# --- reading -------------------------------------------------------------------------


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise OnnxFormatError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def fields(buf: memoryview) -> Iterator[tuple[int, int | memoryview]]:
    """(field number, value) of one message: ints for varint and fixed-width fields,
    zero-copy views for length-delimited ones (strings, bytes, sub-messages)."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        value: int | memoryview
        if wire == _VARINT:
            value, pos = _varint(buf, pos)
        elif wire == _LEN:
            size, pos = _varint(buf, pos)
            value = buf[pos : pos + size]
            pos += size
        elif wire == _I64:
            value = int.from_bytes(buf[pos : pos + 8], "little")
            pos += 8
        elif wire == _I32:
            value = int.from_bytes(buf[pos : pos + 4], "little")
            pos += 4
        else:
            raise OnnxFormatError(f"unsupported protobuf wire type {wire}")
        if pos > len(buf):
            raise OnnxFormatError("truncated message")
        yield number, value


def _view(value: int | memoryview) -> memoryview:
    if isinstance(value, int):
        raise OnnxFormatError("expected a length-delimited field, got a number")
    return value


def _text(value: int | memoryview) -> str:
    return bytes(_view(value)).decode("utf-8")


@dataclass(frozen=True)
class Node:
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


@dataclass(frozen=True)
class Graph:
    """The parts of a model's main graph that a weight reader needs."""

    nodes: tuple[Node, ...]
    initializers: Mapping[str, npt.NDArray[np.generic]]


def _node(buf: memoryview) -> Node:
    op_type, inputs, outputs = "", [], []
    for number, value in fields(buf):
        if number == 1:
            inputs.append(_text(value))
        elif number == 2:
            outputs.append(_text(value))
        elif number == 4:
            op_type = _text(value)
    return Node(op_type, tuple(inputs), tuple(outputs))


def _tensor(buf: memoryview) -> tuple[str, npt.NDArray[np.generic] | None]:
    """A tensor's name and values (``None`` for a type this module does not read)."""
    name, dims, code, raw = "", [], 0, None
    for number, value in fields(buf):
        if number == 1:
            if isinstance(value, int):
                dims.append(value)
            else:  # packed repeated int64
                pos = 0
                while pos < len(value):
                    dim, pos = _varint(value, pos)
                    dims.append(dim)
        elif number == 2 and isinstance(value, int):
            code = value
        elif number == 8:
            name = _text(value)
        elif number == 9:
            raw = _view(value)
        elif number == 14 and value == 1:  # data_location EXTERNAL
            raise OnnxFormatError(f"tensor {name!r}: external data is not supported")
    if code not in _DTYPES:
        return name, None
    if raw is None:
        raise OnnxFormatError(f"tensor {name!r}: only raw_data tensors are supported")
    array = np.frombuffer(raw, dtype=np.dtype(_DTYPES[code]).newbyteorder("<"))
    return name, array.reshape(dims)


def read_graph(data: bytes) -> Graph:
    """The nodes and initialisers of a serialised ``ModelProto``'s graph (initialisers
    of types other than float32, (u)int8, int32, int64 and bool are left out)."""
    graph = None
    for number, value in fields(memoryview(data)):
        if number == 7:
            graph = _view(value)
    if graph is None:
        raise OnnxFormatError("no graph in the model")
    nodes: list[Node] = []
    initializers: dict[str, npt.NDArray[np.generic]] = {}
    for number, value in fields(graph):
        if number == 1:
            nodes.append(_node(_view(value)))
        elif number == 5:
            name, array = _tensor(_view(value))
            if array is not None:
                initializers[name] = array
    return Graph(tuple(nodes), initializers)


# --- writing -------------------------------------------------------------------------
#
# A message being written is a list of byte chunks, joined once at the end, so that
# tensor data (tens of MB) is copied once, not once per level of nesting.

Parts = list[bytes | memoryview]


def _encode_varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64 values are ten-byte two's complement
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _encode_varint(number << 3 | wire)


def _len(number: int, payload: Parts) -> Parts:
    size = sum(len(p) for p in payload)
    return [_key(number, _LEN) + _encode_varint(size), *payload]


def _int(number: int, value: int) -> Parts:
    return [_key(number, _VARINT) + _encode_varint(value)]


def _str(number: int, text: str) -> Parts:
    return _len(number, [text.encode("utf-8")])


Attr = int | float | str | Sequence[int]


def _attribute(name: str, value: Attr) -> Parts:
    out = _str(1, name)
    if isinstance(value, bool):
        raise TypeError(f"attribute {name}: use an int, not a bool")
    if isinstance(value, int):
        return out + _int(3, value) + _int(20, 2)  # i, type INT
    if isinstance(value, float):
        return [*out, _key(2, _I32) + struct.pack("<f", value), *_int(20, 1)]  # f, FLOAT
    if isinstance(value, str):
        return out + _str(4, value) + _int(20, 3)  # s, STRING
    return out + [c for v in value for c in _int(8, v)] + _int(20, 7)  # ints, INTS


def node(
    op_type: str,
    inputs: Sequence[str],
    outputs: Sequence[str],
    *,
    domain: str = "",
    **attributes: Attr,
) -> Parts:
    """A ``NodeProto`` (attributes in name order, for stable bytes); named after its
    first output."""
    out: Parts = [c for i in inputs for c in _str(1, i)]
    out += [c for o in outputs for c in _str(2, o)]
    out += _str(3, outputs[0]) + _str(4, op_type)
    for k in sorted(attributes):
        out += _len(5, _attribute(k, attributes[k]))
    return out + (_str(7, domain) if domain else [])


def tensor(name: str, array: npt.NDArray[np.generic]) -> Parts:
    """A ``TensorProto`` holding ``array`` as little-endian raw data."""
    dtype = np.dtype(array.dtype)
    if dtype not in _CODES:
        raise TypeError(f"tensor {name}: unsupported dtype {dtype}")
    data = np.ascontiguousarray(array, dtype=dtype.newbyteorder("<"))
    out: Parts = [c for d in array.shape for c in _int(1, d)]
    return out + _int(2, _CODES[dtype]) + _str(8, name) + _len(9, [data.data.cast("B")])


def value_info(name: str, elem_type: int, shape: Sequence[int | str]) -> Parts:
    """A ``ValueInfoProto``: a graph input or output with its tensor type; a ``str``
    dimension is symbolic (``"batch"``)."""
    dims: Parts = []
    for d in shape:
        dims += _len(1, _str(2, d) if isinstance(d, str) else _int(1, d))
    tensor_type = _int(1, elem_type) + _len(2, dims)
    return _str(1, name) + _len(2, _len(1, tensor_type))


def model(
    *,
    name: str,
    nodes: Sequence[Parts],
    initializers: Sequence[Parts],
    inputs: Sequence[Parts],
    outputs: Sequence[Parts],
    opsets: Mapping[str, int],
    ir_version: int = 8,
    producer: str = "twokeys",
) -> bytes:
    """A serialised ``ModelProto`` from its parts (see :func:`node`, :func:`tensor`,
    :func:`value_info`); opsets maps a domain (``""`` for the standard one) to its
    version."""
    graph: Parts = []
    for n in nodes:
        graph += _len(1, n)
    graph += _str(2, name)
    for t in initializers:
        graph += _len(5, t)
    for i in inputs:
        graph += _len(11, i)
    for o in outputs:
        graph += _len(12, o)
    out = _int(1, ir_version) + _str(2, producer) + _len(7, graph)
    for domain, version in sorted(opsets.items()):
        out += _len(8, (_str(1, domain) if domain else []) + _int(2, version))
    return b"".join(out)
