"""``hybrid-<fusion>`` modes: the hybrid retriever with a named fusion, for side-by-side runs.

``hybrid`` itself uses the default fusion (``adaptive``); these let ``search --mode``
and ``eval --retrievers`` compare the alternatives without extra flags.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from twokeys.retrievers.base import Retriever

if TYPE_CHECKING:
    from twokeys.engine import Index, SearchSettings


def _hybrid(index: Index, settings: SearchSettings, fusion: str) -> Retriever:
    return index.retriever("hybrid", replace(settings, fusion=fusion))


def build_rrf(index: Index, settings: SearchSettings) -> Retriever:
    return _hybrid(index, settings, "rrf")


def build_rrf_confidence(index: Index, settings: SearchSettings) -> Retriever:
    return _hybrid(index, settings, "rrf-confidence")


def build_minmax(index: Index, settings: SearchSettings) -> Retriever:
    return _hybrid(index, settings, "minmax")


def build_zscore(index: Index, settings: SearchSettings) -> Retriever:
    return _hybrid(index, settings, "zscore")


def build_dbsf(index: Index, settings: SearchSettings) -> Retriever:
    return _hybrid(index, settings, "dbsf")
