"""Retrievers: query text in, ranked chunk rows out."""

from twokeys.retrievers.base import Retriever, RetrieverResult
from twokeys.retrievers.dense import DenseRetriever
from twokeys.retrievers.hybrid import HybridRetriever
from twokeys.retrievers.lexical import BM25Retriever

__all__ = ["BM25Retriever", "DenseRetriever", "HybridRetriever", "Retriever", "RetrieverResult"]
