"""Token counting: the :data:`TokenCounter` shape every budget is measured with, and the
tokenizer-free estimate used when no model's tokenizer is at hand.

The chunker caps chunks in these counts, the context packer fills prompt budgets with
them, and encoders and language models supply their own counters of the same shape.
:class:`SpaceSplitCounter` counts a batch word by word, each distinct word once, for a
tokenizer whose counts add up over spaces.
"""

from __future__ import annotations

import itertools
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


class SpaceSplitCounter:
    """A :data:`TokenCounter` that counts each distinct space-separated word once.

    Valid only for a tokenizer whose count of a text is the sum of the counts of its
    pieces between ``" "`` characters: one that splits at every space, drops it, and
    lets no token, normalisation or context cross it. BERT's normaliser and
    pre-tokenizer in front of WordPiece do (each character is normalised on its own,
    a space is always a split, WordPiece works within a word), and so does
    :func:`approx_token_counter`; a byte-level BPE, whose tokens carry the space in
    front of a word, does not. Only ``" "`` splits here: other whitespace stays inside
    a word and is counted by ``count``, so the sum is exact whatever the tokenizer
    makes of it.

    Natural text repeats its words, so after the first few thousand documents nearly
    every word is remembered and a batch costs a ``str.split`` and a lookup a word
    instead of a tokenizer pass over its characters. At most ``max_words`` counts are
    kept; past that the memory starts afresh (a new dict: a call running in another
    thread keeps reading the old one).
    """

    def __init__(self, count: TokenCounter, max_words: int = 1 << 19) -> None:
        self._count = count
        self.max_words = max_words
        self._known: dict[str, int] = {"": 0}

    def __call__(self, texts: Sequence[str]) -> list[int]:
        known = self._known
        if len(known) > self.max_words:
            known = self._known = {"": 0}
        words = [text.split(" ") for text in texts]
        new = list(set(itertools.chain.from_iterable(words)).difference(known))
        if new:
            counts = list(self._count(new))
            if len(counts) != len(new):
                raise ValueError(
                    f"token counter returned {len(counts)} counts for {len(new)} texts"
                )
            known.update(zip(new, counts, strict=True))
        return [sum(map(known.__getitem__, text_words)) for text_words in words]
