# Types of the compiled text rules (_kernel.c).
from collections.abc import Callable, Sequence

def sentence_spans(
    text: str, start: int, end: int, is_abbreviation: Callable[[str, int, int], bool]
) -> list[tuple[int, int]]: ...
def approx_counts(texts: Sequence[str]) -> list[int]: ...
