"""The ``Retriever`` interface shared by every retrieval model."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from twokeys.store.base import IndexBackend
from twokeys.text.passages import indexed_text
from twokeys.types import Evidence, ScoredChunk


@dataclass(frozen=True)
class RetrieverResult:
    """A ranked run plus, per row, the evidence each underlying retriever contributed,
    and the run's chance level: the score a chunk unrelated to the query gets (0 for
    BM25, which matches none of its terms; the query's mean cosine for the dense model)."""

    run: Sequence[ScoredChunk]
    evidence: Mapping[int, tuple[Evidence, ...]] = field(default_factory=dict)
    chance: float = 0.0


class Retriever(ABC):
    """Ranks chunk rows for a query string."""

    name: str

    @abstractmethod
    def retrieve(self, query: str, k: int, *, explain: bool = False) -> RetrieverResult:
        """The top ``k`` rows; with ``explain``, evidence for each returned row."""

    def retrieve_many(
        self, queries: Sequence[str], k: int, *, explain: bool = False
    ) -> list[RetrieverResult]:
        """:meth:`retrieve` for each query, with identical results.

        This default retrieves one query after another; a retriever that can batch
        (BM25) overrides it.
        """
        return [self.retrieve(query, k, explain=explain) for query in queries]


def indexed_texts(backend: IndexBackend, rows: Sequence[int]) -> list[str]:
    """The texts of chunk ``rows`` as they were indexed (heading line, then the body:
    :func:`~twokeys.text.passages.indexed_text`), in the order asked."""
    return [indexed_text(chunk, title) for chunk, title, _ in backend.chunks_with_source(rows)]
