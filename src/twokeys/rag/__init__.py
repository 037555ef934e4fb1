"""Answer with evidence: query decomposition, context packing within a token budget,
prompts, extractive answers and the ``ask`` orchestration."""

from __future__ import annotations

from twokeys.rag.ask import (
    Answer,
    AskOptions,
    Done,
    Event,
    ModelFailed,
    Packed,
    Plan,
    Retrieved,
    Source,
    TextDelta,
    ask,
    ask_events,
    prepare,
)
from twokeys.rag.decompose import decompose, decompose_with_llm
from twokeys.rag.packing import Block, Budget, PackedContext, SubQueryHits, pack

__all__ = [
    "Answer",
    "AskOptions",
    "Block",
    "Budget",
    "Done",
    "Event",
    "ModelFailed",
    "Packed",
    "PackedContext",
    "Plan",
    "Retrieved",
    "Source",
    "SubQueryHits",
    "TextDelta",
    "ask",
    "ask_events",
    "decompose",
    "decompose_with_llm",
    "pack",
    "prepare",
]
