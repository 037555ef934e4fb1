# Types of the compiled BM25 top-k, one query and a batch (_kernel.c).
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

def top_k(
    indptr: npt.NDArray[np.int64],
    indices: npt.NDArray[np.int32],
    weights: npt.NDArray[np.float32],
    terms: Sequence[int],
    qtfs: Sequence[float],
    k: int,
    scores: npt.NDArray[np.float32],
    touched: npt.NDArray[np.int32],
    maxw: npt.NDArray[np.float32] = ...,
    cand: npt.NDArray[np.int64] = ...,
    prune_from: int = ...,
) -> tuple[list[int], list[float]]: ...
def top_k_many(
    indptr: npt.NDArray[np.int64],
    indices: npt.NDArray[np.int32],
    weights: npt.NDArray[np.float32],
    terms: npt.NDArray[np.int64],
    bounds: npt.NDArray[np.int64],
    k: int,
    threads: int,
    n_rows: int,
    rows: npt.NDArray[np.int32],
    scores: npt.NDArray[np.float32],
    counts: npt.NDArray[np.int64],
) -> None: ...

class RawTable:
    def __init__(self) -> None: ...
    def encode(
        self,
        items: list[str | list[str]],
        learn: Callable[[list[str]], tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]],
    ) -> tuple[bytes, bytes]: ...
    def size(self) -> int: ...

def postings(
    blocks: list[npt.NDArray[np.int32]],
    lengths: list[npt.NDArray[np.int64]],
    remap: npt.NDArray[np.int32],
    fill: bool,
    df: npt.NDArray[np.int64],
    next: npt.NDArray[np.int64],
    indices: npt.NDArray[np.int32],
    tf: npt.NDArray[np.float32],
) -> None: ...

_T = TypeVar("_T")

def instances(cls: type[_T], names: tuple[str, ...], columns: tuple[Any, ...]) -> list[_T]: ...
