"""A passage's text: its heading line over its body, built here and nowhere else.

The *heading line* is the chunk's heading path joined by ``" > "`` or, for a chunk
outside any heading, its document's title with whitespace runs collapsed; the
*indexed text* is that line, a newline, then the chunk's body (the body alone when
there is no line). It is what BM25 analyses, what the dense encoder embeds, what
rerankers score and what phrase queries are checked against, so its bytes are part of
every index: a change here makes existing indexes disagree with new queries
(``tests/unit/test_passages.py`` pins the format). The chunker counts the heading
line's tokens against the cap with :func:`heading_line` too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from twokeys.types import HEADING_SEPARATOR, Chunk


def heading_text(path: Sequence[str]) -> str:
    """A heading path as one string: ``Troubleshooting > Power``."""
    return HEADING_SEPARATOR.join(path)


def heading_line(path: Sequence[str], title: str) -> str:
    """The heading path, or ``title`` (whitespace collapsed) when there is none."""
    return heading_text(path) if path else " ".join(title.split())


def indexed_text(chunk: Chunk, title: str) -> str:
    """The text retrievers index: the heading line (see :func:`heading_line`), then the body."""
    line = heading_line(chunk.heading_path, title)
    return _joined(line, chunk.text)


def stream_indexed_texts(chunks_and_titles: Iterable[tuple[Chunk, str]]) -> Iterator[str]:
    """:func:`indexed_text` of each ``(chunk, title)`` in turn, a title's line made once
    for a run of chunks of that title (a document's)."""
    title_of_line, title_line = None, ""
    for chunk, title in chunks_and_titles:
        if chunk.heading_path:
            yield _joined(heading_text(chunk.heading_path), chunk.text)
            continue
        if title is not title_of_line:
            title_of_line, title_line = title, heading_line((), title)
        yield _joined(title_line, chunk.text)


def _joined(line: str, body: str) -> str:
    return f"{line}\n{body}" if line else body
