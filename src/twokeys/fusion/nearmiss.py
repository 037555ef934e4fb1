"""Near-miss codes: the chunks that write a code like the query's, but not the query's.

A code (a name holding digits: ``ZX-4821``, ``v3.3``, ``qwen2.5:14b``, ``HSV-2``) names one
thing, and its near-misses, the same letters and separators around other digits
(``ZX-4812``, ``v3.2``, ``qwen2.5:32b``, ``HSV-1``), name others. Neither sensor keeps them
apart when the query has other words:

* the dense model reads a code by its word pieces, so a near-miss is nearly the same
  text to it, and the page about the near-miss that also matches the other words ranks
  first (``ZX-4821 after firmware update``: the ``ZX-4812`` page, about a firmware
  update that fails, above every chunk of the ``ZX-4821`` page);
* BM25 does not match the near-miss, but it weighs the code against the query's other
  words: a code several chunks hold has a modest idf, and two common words
  (``firmware``, ``update``) outweigh it, so the near-miss page, writing both words
  often, ranks above the chunks holding the code.

So the exact-term tier (:mod:`twokeys.fusion.adaptive`), which waits for the sensors to
back a name, does not fire, and the hybrid answered about the wrong code. What is read
here is the text itself: a candidate chunk whose heading line and text write a
near-miss of one of the query's codes and none of the query's codes is what the user
did not ask for, and ranks below the other candidates (:func:`near_miss_rows`). A chunk
writing both (a list of error codes) is not moved, and nothing is read for a query
without a code.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

_RUNS = re.compile(r"\d+|[^\W\d_]+|.", re.S)


def is_code(raw: str) -> bool:
    """Whether a query token is a code: it holds a digit and at least one other
    character (``ZX-4821``, ``v3.3``; not ``2024``, which has no near-miss shape to
    tell it by)."""
    return any(c.isdigit() for c in raw) and not raw.isdigit()


def shape(code: str) -> str:
    """A pattern for ``code`` and its near-misses: its letters and separators as they
    are (letters case-insensitive), each run of digits as any run of as many digits,
    not inside a longer word or number (``ZX-4821`` -> ``zx-\\d{4}``)."""
    parts = []
    for run in _RUNS.findall(code):
        parts.append(rf"\d{{{len(run)}}}" if run.isdigit() else re.escape(run))
    return r"(?<![^\W_])" + "".join(parts) + r"(?![^\W_])"


def near_miss_rows(
    codes: Iterable[str],
    rows: Sequence[int],
    read: Callable[[Sequence[int]], Sequence[str]],
) -> frozenset[int]:
    """Those of ``rows`` whose text (``read(rows)``: each row's heading line and text)
    writes a near-miss of one of ``codes`` (the query's codes, as the query writes
    them) and none of ``codes`` itself; nothing is read when ``codes`` is empty."""
    wanted = sorted({c.lower() for c in codes if is_code(c)})
    if not wanted or not rows:
        return frozenset()
    # each code's pattern, and the longest run of it that is not digits: a text without
    # that run (most texts) holds neither the code nor a near-miss, and no pattern runs
    patterns = [
        (max(re.split(r"\d+", code), key=len), re.compile(shape(code), re.I)) for code in wanted
    ]
    out = set()
    for row, text in zip(rows, read(rows), strict=True):
        low = text.lower()
        found = {
            m.group(0).lower()
            for literal, pattern in patterns
            if literal in low
            for m in pattern.finditer(text)
        }
        if found and not found.intersection(wanted):
            out.add(row)
    return frozenset(out)
