"""Token counting: the :data:`TokenCounter` shape every budget is measured with, and the
tokenizer-free estimate used when no model's tokenizer is at hand.

The chunker caps chunks in these counts, the context packer fills prompt budgets with
them, and encoders and language models supply their own counters of the same shape.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

TokenCounter = Callable[[Sequence[str]], list[int]]
"""Token counts of each string of a batch (no special tokens)."""

# Up to six word characters (a run of n holds ceil(n / 6) of them) or a punctuation run.
_APPROX_TOKEN = re.compile(r"\w{1,6}|[^\w\s]+")


def approx_token_counter(texts: Sequence[str]) -> list[int]:
    """A tokenizer-free estimate of subword token counts.

    Each word (run of ``\\w``) of n characters counts ``ceil(n / 6)`` and each run of
    punctuation counts 1; whitespace is free, so counts add up over whitespace joins.
    """
    return [len(_APPROX_TOKEN.findall(t)) for t in texts]
