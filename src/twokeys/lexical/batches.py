"""The term matrix of a build's chunk texts, read a batch at a time.

The texts are cut into consecutive slices of about :data:`BATCH_CHARS` characters, each
turned into term ids by one :class:`~twokeys.lexical.coding.TermCoder` (which analyses
each distinct raw token once) and kept as 4 bytes a term occurrence until
:func:`~twokeys.lexical.bm25.build_term_matrix_from_ids` lays them out: a generator of
texts is never held whole, and no term string is made per occurrence.

Analysis runs in this process. Forked worker processes analysed large builds before the
coder existed; with it, one core analyses some tens of millions of characters a second,
and workers (each a cold coder, its batches sent back as term lists and mapped to the
parent's ids) took longer than this process alone even at 51 million characters
(``benchmarks/NOTES.md``, build time), and held memory of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from twokeys.analysis import Analyzer, AnalyzerSpec
from twokeys.grouping import groups_by_size
from twokeys.lexical.bm25 import IdBatch, TermMatrix, build_term_matrix_from_ids
from twokeys.lexical.coding import TermCoder

#: characters of chunk text analysed as one batch
BATCH_CHARS = 1 << 18


def analysed_matrix(
    texts: Iterable[str],
    spec: AnalyzerSpec,
    progress: Callable[[int], None] | None = None,
) -> TermMatrix:
    """The term matrix of ``texts`` (in order) analysed with ``spec``; ``progress(n)``
    after each batch of n texts. ``texts`` is read as the batches are needed."""
    coder = TermCoder(Analyzer(spec))

    def encoded() -> Iterator[IdBatch]:
        for group in groups_by_size(texts, len, BATCH_CHARS):
            yield coder.encode(group)
            if progress is not None:
                progress(len(group))
        coder.forget_raw_tokens()  # before the postings are laid out: a lower peak

    return build_term_matrix_from_ids(encoded(), coder.terms)
