"""The ``Reranker`` interface, the pure re-ordering step, and the registry that names rerankers.

A reranker re-scores the first ``top_n`` entries of a run (the fused hybrid candidates,
say) with something too slow to run over the whole index: a cross-encoder, a second
embedding model, a term-proximity score. A backend implements one method,
:meth:`Reranker.score`; the base class re-orders a run (:meth:`Reranker.rerank`) or a
list of hits (:meth:`Reranker.rerank_hits`) with it.

Each reranker has a ``blend``: the weight of the first-stage score in the new order.
With ``blend = 0`` the head of the run is ordered by the reranker's score alone (a
cross-encoder); with ``0 < blend < 1`` both scores are min-max normalised over the
head and mixed, ``blend * first + (1 - blend) * reranker``. Ties keep the original
order, and entries past ``top_n`` keep their place and score.

Rerankers are looked up by name, like encoders: ``"e5"``, ``"proximity"``, or a family
``PREFIX:ARGUMENT`` such as ``cross-encoder:/path/to/model``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np
import numpy.typing as npt

from twokeys.errors import ConfigError
from twokeys.registry import Target, resolve
from twokeys.text.passages import indexed_text
from twokeys.types import Hit, ScoredChunk

if TYPE_CHECKING:
    from twokeys.analysis import Analyzer
    from twokeys.store.base import IndexBackend

Scores = npt.NDArray[np.float64]


class IndexView(Protocol):
    """What a reranker may read of the index it serves (a :class:`twokeys.engine.Index`):
    named here, not imported, so the engine that holds rerankers is not imported back."""

    @property
    def analyzer(self) -> Analyzer: ...

    @property
    def backend(self) -> IndexBackend: ...


class Reranker(ABC):
    """Scores (query, passage) pairs; higher is more relevant."""

    #: a short name, shown as the ``retriever`` of the evidence it adds
    name: str = "rerank"
    #: weight of the first-stage score in the new order (0: the reranker's score alone)
    blend: float = 0.0

    @abstractmethod
    def score(self, query: str, passages: Sequence[str]) -> Scores:
        """One relevance score per passage, in the order given."""

    def for_index(self, index: IndexView) -> Reranker:
        """This reranker adapted to ``index`` (its analyzer, its statistics); by default itself."""
        return self

    def rerank(
        self, query: str, run: Sequence[ScoredChunk], passages: Sequence[str], top_n: int
    ) -> list[ScoredChunk]:
        """``run`` with its first ``top_n`` entries re-ordered by this reranker.

        ``passages`` are the texts of those entries (at least ``min(top_n, len(run))``).
        """
        head = _head_size(run, passages, top_n)
        scores = self.score(query, list(passages[:head])) if head else np.empty(0)
        return reorder(run, scores, blend=self.blend)

    def rerank_hits(self, query: str, hits: Sequence[Hit], top_n: int) -> list[Hit]:
        """``hits`` with the first ``top_n`` re-ordered, each scored on its indexed text."""
        head = min(top_n, len(hits))
        passages = [indexed_text(h.chunk, h.title) for h in hits[:head]]
        run = [ScoredChunk(i, h.score, h.rank) for i, h in enumerate(hits)]  # row: list index
        return [
            replace(hits[s.row], rank=s.rank, score=s.score)
            for s in self.rerank(query, run, passages, top_n)
        ]


def reorder(run: Sequence[ScoredChunk], scores: Scores, *, blend: float = 0.0) -> list[ScoredChunk]:
    """Re-order the first ``len(scores)`` entries of ``run`` by ``scores``.

    With ``blend > 0`` the order is by ``blend * minmax(first-stage) + (1 - blend) *
    minmax(scores)`` over those entries. Ties keep the original order; the rest of the
    run follows unchanged. Re-ordered entries carry their new (blended) score.
    """
    if not 0.0 <= blend <= 1.0:
        raise ConfigError(f"blend: must be in [0, 1], got {blend}")
    head = len(scores)
    if head > len(run):
        raise ConfigError(f"reranker: {head} scores for a run of {len(run)}")
    values = np.asarray(scores, np.float64)
    if not np.all(np.isfinite(values)):
        raise ConfigError("reranker: returned a score that is NaN or infinite")
    if blend > 0.0:
        first = np.array([s.score for s in run[:head]], np.float64)
        values = blend * _minmax(first) + (1.0 - blend) * _minmax(values)
    order = sorted(range(head), key=lambda i: (-values[i], i))
    out = [ScoredChunk(run[i].row, float(values[i]), rank) for rank, i in enumerate(order, 1)]
    out.extend(ScoredChunk(s.row, s.score, rank) for rank, s in enumerate(run[head:], head + 1))
    return out


def _minmax(values: Scores) -> Scores:
    if values.size == 0:
        return values
    low, high = float(values.min()), float(values.max())
    if high - low <= 0.0:
        return np.ones_like(values)
    return (values - low) / (high - low)


def _head_size(run: Sequence[ScoredChunk], passages: Sequence[str], top_n: int) -> int:
    if top_n < 1:
        raise ConfigError(f"top_n: must be >= 1, got {top_n}")
    head = min(top_n, len(run))
    if len(passages) < head:
        raise ConfigError(f"reranker: {len(passages)} passages for the top {head} of the run")
    return head


# -- registry --------------------------------------------------------------------------

RerankerFactory = Callable[[], Reranker]
RerankerFamily = Callable[[str], Reranker]
# name -> a factory, or the "module:attribute" path of one, imported on first use
_REGISTRY: dict[str, Target] = {}
_FAMILIES: dict[str, Target] = {}


def register_reranker(name: str, factory: RerankerFactory | str) -> None:
    """Make a reranker available by name (to ``get_reranker``, the CLI and the modes);
    ``factory`` may be the ``"module:attribute"`` path of one, imported on first use."""
    _REGISTRY[name] = factory


def register_reranker_family(prefix: str, factory: RerankerFamily | str) -> None:
    """Make every ``PREFIX:ARGUMENT`` name resolve to ``factory(ARGUMENT)``."""
    _FAMILIES[prefix] = factory


def reranker_names() -> list[str]:
    return sorted(_REGISTRY) + [f"{p}:PATH" for p in sorted(_FAMILIES)]


def get_reranker(name: str) -> Reranker:
    """Instantiate a registered reranker or one of a family (``cross-encoder:/models/x``);
    an unknown name is a :class:`ConfigError`."""
    factory = _REGISTRY.get(name)
    if factory is not None:
        return cast(Reranker, resolve(factory)())
    prefix, _, argument = name.partition(":")
    family = _FAMILIES.get(prefix) if argument else None
    if family is None:
        raise ConfigError(
            f"reranker: unknown reranker {name!r}; available: {', '.join(reranker_names())}"
        )
    return cast(Reranker, resolve(family)(argument))
