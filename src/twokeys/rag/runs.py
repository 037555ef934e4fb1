"""Runs: a text's stretches of words with nothing between them that breaks a name.

The command rule (:mod:`twokeys.rag.commands`) and the kind rule
(:mod:`twokeys.rag.kinds`) read a question the same way: cut it at break characters (each
rule has its own), then walk its tokens, keeping the words the rule wants and closing
the run at any other token. What a rule keeps, and how short a run it drops, are its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from twokeys.analysis import Analyzer, Token

W = TypeVar("W")


def token_runs(
    text: str,
    analyzer: Analyzer,
    breaks: re.Pattern[str],
    word: Callable[[Token, tuple[str, ...]], W | None],
    shortest: int = 1,
) -> list[tuple[W, ...]]:
    """The runs of ``text`` between ``breaks``, in order: ``word(token, query terms)``
    gives a token's word, or None for a token that ends the run; runs of fewer than
    ``shortest`` words are left out."""
    out: list[tuple[W, ...]] = []
    for piece in breaks.split(text):
        run: list[W] = []
        for token in analyzer.tokens(piece):
            kept = word(token, analyzer.terms_of(token, for_query=True))
            if kept is not None:
                run.append(kept)
                continue
            if len(run) >= shortest:
                out.append(tuple(run))
            run = []
        if len(run) >= shortest:
            out.append(tuple(run))
    return out
