# Types of the compiled text rules (_kernel.c).
from collections.abc import Callable, Sequence

def sentence_spans(
    text: str, start: int, end: int, is_abbreviation: Callable[[str, int, int], bool]
) -> list[tuple[int, int]]: ...
def approx_counts(texts: Sequence[str]) -> list[int]: ...
def approx_span_counts(text: str, spans: Sequence[tuple[int, int]]) -> list[int]: ...
def pack(
    spans: list[tuple[int, int]],
    counts: list[int],
    block_sizes: list[int],
    block_code: list[bool],
    section_blocks: list[int],
    budgets: list[int],
    max_chars: int,
    overlap_tokens: int,
    min_tokens: int,
) -> list[tuple[int, int, int]] | None: ...
def all_below(text: str, code: int) -> bool: ...
