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
from types import ModuleType

import numpy as np
import numpy.typing as npt

_kernel: ModuleType | None
try:  # the compiled count (``_kernel.c``); the same counts without it
    from twokeys.text import _kernel
except ImportError:  # pragma: no cover - depends on the build
    _kernel = None

TokenCounter = Callable[[Sequence[str]], list[int]]
"""Token counts of each string of a batch (no special tokens)."""

# Up to six word characters (a run of n holds ceil(n / 6) of them) or a punctuation run.
_APPROX_TOKEN = re.compile(r"\w{1,6}|[^\w\s]+")
_SPACE, _WORD, _OTHER = 0, 1, 2
#: from this many characters a batch is counted with numpy (below, the regex is faster)
APPROX_ARRAY_MIN_CHARS = 4096


def approx_token_counter(texts: Sequence[str]) -> list[int]:
    """A tokenizer-free estimate of subword token counts.

    Each word (run of ``\\w``) of n characters counts ``ceil(n / 6)`` and each run of
    punctuation counts 1; whitespace is free, so counts add up over whitespace joins.
    Counted by the compiled kernel where it is built (a pass over each text's
    characters); without it a batch of :data:`APPROX_ARRAY_MIN_CHARS` or more characters
    is counted from an array of character classes (the same counts, in under half the
    regex's time), a smaller one by the regex.
    """
    if _kernel is not None:
        counts: list[int] = _kernel.approx_counts(texts)
        return counts
    return python_approx_counts(texts)


def approx_span_counts(text: str, spans: Sequence[tuple[int, int]]) -> list[int]:
    """``approx_token_counter([text[a:b] for a, b in spans])``, read in place where the
    compiled kernel is built (no piece of ``text`` copied out)."""
    if _kernel is not None:
        counts: list[int] = _kernel.approx_span_counts(text, spans)
        return counts
    return python_approx_counts([text[a:b] for a, b in spans])


def python_approx_counts(texts: Sequence[str]) -> list[int]:
    """:func:`approx_token_counter` without the compiled kernel: the reference it is
    tested against."""
    if sum(map(len, texts)) < APPROX_ARRAY_MIN_CHARS:
        return [len(_APPROX_TOKEN.findall(t)) for t in texts]
    return _approx_counts(texts)


def _char_class(char: str) -> int:
    """``char``'s class by the very patterns of :data:`_APPROX_TOKEN`."""
    if re.fullmatch(r"\w", char):
        return _WORD
    return _SPACE if re.fullmatch(r"\s", char) else _OTHER


_ASCII_CLASSES = np.array([_char_class(chr(code)) for code in range(128)], np.int8)


def _classes(codes: npt.NDArray[np.uint32]) -> npt.NDArray[np.int8]:
    """The class of each code point (the few distinct ones above ASCII looked up)."""
    classes = _ASCII_CLASSES[np.minimum(codes, 127)]
    high = codes >= 128
    if high.any():
        unique, where = np.unique(codes[high], return_inverse=True)
        found = [_char_class(chr(code)) for code in unique.tolist()]
        classes[high] = np.array(found, np.int8)[where]
    return classes


def _approx_counts(texts: Sequence[str]) -> list[int]:
    """:func:`approx_token_counter` of a batch, from the runs of character classes of
    the texts joined by newlines (whitespace, so no run crosses two texts)."""
    joined = "\n".join(texts)
    if not joined:
        return [0] * len(texts)
    classes = _classes(np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), np.uint32))
    starts = np.flatnonzero(classes[1:] != classes[:-1]) + 1
    starts = np.concatenate(([0], starts))
    lengths = np.diff(starts, append=len(classes))
    run_classes = classes[starts]
    tokens = np.where(run_classes == _WORD, (lengths + 5) // 6, run_classes == _OTHER)
    total = np.concatenate(([0], np.cumsum(tokens)))
    sizes = np.fromiter(map(len, texts), np.int64, len(texts))
    begin = np.cumsum(sizes + 1) - (sizes + 1)
    first = np.searchsorted(starts, begin)  # runs starting inside a text are its own
    last = np.searchsorted(starts, begin + sizes)
    counts: list[int] = (total[last] - total[first]).tolist()
    return counts


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
    instead of a tokenizer pass over its characters. At most ``max_words`` counts, of
    words of at most ``max_chars`` characters in all, are kept (about 100 bytes a word:
    26 MB at the default; a corpus of long unbroken lines fills the character budget
    first); past either the memory starts afresh (a new dict: a call running in another
    thread keeps reading the old one).
    """

    def __init__(
        self, count: TokenCounter, max_words: int = 1 << 18, max_chars: int = 1 << 23
    ) -> None:
        self._count = count
        self.max_words = max_words
        self.max_chars = max_chars
        self._known: dict[str, int] = {"": 0}
        self._chars = 0

    def __call__(self, texts: Sequence[str]) -> list[int]:
        known = self._known
        if len(known) > self.max_words or self._chars > self.max_chars:
            known = self._known = {"": 0}
            self._chars = 0
        words = [text.split(" ") for text in texts]
        new = list(set(itertools.chain.from_iterable(words)).difference(known))
        if new:
            counts = list(self._count(new))
            if len(counts) != len(new):
                raise ValueError(
                    f"token counter returned {len(counts)} counts for {len(new)} texts"
                )
            known.update(zip(new, counts, strict=True))
            self._chars += sum(map(len, new))
        return [sum(map(known.__getitem__, text_words)) for text_words in words]
