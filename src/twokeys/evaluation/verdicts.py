"""Measuring a model's verdicts (:mod:`twokeys.rag.verdicts`): how often it says the
passages answer a question, on questions that are good to answer and on the others.

A question is *good to answer* as the learned confidence was fitted: it is answerable and
a gold fact is in the context ``ask`` packs for it (its own document's block). The model
is asked exactly what ``ask --llm-stage verdict`` asks it, about the same first hits, so
its counts weigh what it will say there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from twokeys.engine import Index
from twokeys.errors import ConfigError
from twokeys.evaluation.answers import QAItem, context_recall, pieces_of
from twokeys.llm.base import LLM
from twokeys.rag.ask import AskOptions, prepare
from twokeys.rag.judge import verdict
from twokeys.rag.verdicts import MIN_EACH, Reliability

Progress = Callable[[int, int], None]  # (questions asked, of how many)


@dataclass(frozen=True, slots=True)
class Labelled:
    """A question, whether it is good to answer, and the passages the model is shown."""

    item: QAItem
    good: bool
    texts: tuple[str, ...]


def label(index: Index, item: QAItem, options: AskOptions) -> Labelled:
    """``item`` labelled by the context ``ask`` packs for it with ``options`` (the whole
    question as one part), with the first hits the verdict reads."""
    whole = replace(options, decompose="none", abstain=False, llm_stages=(), confidence="rules")
    plan = prepare(index, item.question, options=whole)
    good = item.answerable and context_recall(item.gold, pieces_of(plan.context)) > 0
    where = {"filters": list(options.filters)} if options.filters else {}
    hits = index.search(item.question, mode=options.mode, k=options.k, **where)
    return Labelled(item, good, tuple(h.text for h in hits))


def calibrate(
    index: Index,
    items: Sequence[QAItem],
    llm: LLM,
    *,
    options: AskOptions | None = None,
    trained_on: str = "",
    progress: Progress | None = None,
) -> Reliability:
    """The model's verdicts on ``items``, counted (module docstring). Fewer than
    :data:`~twokeys.rag.verdicts.MIN_EACH` questions of either kind, or a model that reads
    none of them, is a :class:`~twokeys.errors.ConfigError` (nothing measured)."""
    options = options or AskOptions()
    labelled = [label(index, item, options) for item in items]
    good = sum(x.good for x in labelled)
    if min(good, len(labelled) - good) < MIN_EACH:
        raise ConfigError(
            f"calibrate-verdict: {good} questions good to answer and {len(labelled) - good} "
            f"not (unanswerable, or the gold fact not in the context); need {MIN_EACH} of each"
        )
    replies = []
    for n, x in enumerate(labelled, 1):
        replies.append((x.good, verdict(llm, x.item.question, x.texts)))
        if progress is not None:
            progress(n, len(labelled))
    found = Reliability.of(llm.name, replies, trained_on)
    if found.unread == len(labelled):
        raise ConfigError(
            f"calibrate-verdict: {llm.name} answered none of the {len(labelled)} questions "
            "with yes or no (or could not be reached); nothing measured"
        )
    return found
