"""HTML to light Markdown, so a Markdown-aware chunker sees the page's structure.

Headings become ``#`` lines, blocks (paragraphs, divs, list items) are separated by
blank lines, ``<pre>`` becomes a fenced block kept verbatim and table rows become
cells joined by `` | ``. Page chrome (navigation, header, footer, asides) and
non-text elements (scripts, styles, SVG) are dropped.
"""

from __future__ import annotations

import re
from typing import Final

from bs4 import BeautifulSoup
from bs4.element import NavigableString, PageElement, PreformattedString, Tag

_DROPPED: Final = (
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "nav",
    "footer",
    "header",
    "aside",
)
# Kept in the tree so the <title> can be read, but never rendered as body text.
_NOT_RENDERED: Final = frozenset({"head", "title", "meta", "link", "base"})
_HEADINGS: Final = {f"h{level}": level for level in range(1, 7)}
_BLOCKS: Final = frozenset(
    {
        "address",
        "article",
        "blockquote",
        "body",
        "caption",
        "dd",
        "details",
        "dialog",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "form",
        "hr",
        "html",
        "legend",
        "main",
        "p",
        "section",
        "summary",
    }
)
_LISTS: Final = frozenset({"ul", "ol"})
# What ends a heading's text: an unclosed <h1> swallows the blocks after it
_ENDS_HEADING: Final = _BLOCKS | _LISTS | frozenset(_HEADINGS) | {"pre", "table", "li"}
_SPACES = re.compile(r"\s+")


def html_to_markdown(html: str) -> tuple[str, str]:
    """Return ``(title, text)``: the page title and its body as light Markdown.

    The title is the ``<title>`` element, else the first ``<h1>``, else "".
    """
    soup = BeautifulSoup(html, "html.parser")
    for element in soup.find_all(_DROPPED):
        element.decompose()
    h1 = soup.find("h1")
    title = _first_text(soup, "title") or (_heading_text(h1)[0] if isinstance(h1, Tag) else "")
    writer = _MarkdownWriter()
    writer.render(soup)
    return title, writer.finish()


def _first_text(soup: BeautifulSoup, name: str) -> str:
    tag = soup.find(name)
    return _inline_text(tag) if isinstance(tag, Tag) else ""


def _inline_text(tag: Tag) -> str:
    """The tag's visible text on one line, whitespace collapsed (``<br>`` -> space)."""
    return _text_of([tag])


def _text_of(nodes: list[PageElement]) -> str:
    parts: list[str] = []
    for top in nodes:
        descendants = top.descendants if isinstance(top, Tag) else ()
        for node in (top, *descendants):
            if isinstance(node, NavigableString) and not isinstance(node, PreformattedString):
                parts.append(str(node))
            elif isinstance(node, Tag) and node.name == "br":
                parts.append(" ")
    return _collapse("".join(parts))


def _heading_text(tag: Tag) -> tuple[str, list[PageElement]]:
    """A heading's text and the block elements it swallowed (an unclosed ``<h1>``
    holds the paragraphs after it: the heading is the text before the first of them)."""
    children = list(tag.children)
    first_block = next(
        (i for i, c in enumerate(children) if isinstance(c, Tag) and c.name in _ENDS_HEADING),
        len(children),
    )
    return _text_of(children[:first_block]), children[first_block:]


def _collapse(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


class _MarkdownWriter:
    """Accumulates Markdown blocks while walking the tree; inline text is buffered
    until the next block boundary."""

    def __init__(self) -> None:
        self._blocks: list[str] = []
        self._inline: list[str] = []
        self._prefix = ""  # "- " (indented by nesting) for the first block of a list item
        self._list_depth = 0

    def finish(self) -> str:
        self._flush()
        return "\n\n".join(self._blocks)

    def render(self, node: PageElement) -> None:
        if isinstance(node, NavigableString):
            # Comments, doctypes, CDATA and processing instructions are not text.
            if not isinstance(node, PreformattedString):
                self._inline.append(_SPACES.sub(" ", str(node)))
            return
        if not isinstance(node, Tag) or node.name in _NOT_RENDERED:
            return
        name = node.name
        if name == "br":
            self._inline.append("\n")
        elif name in _HEADINGS:
            self._heading(node, _HEADINGS[name])
        elif name == "pre":
            self._pre(node)
        elif name == "table":
            self._table(node)
        elif name == "li":
            self._list_item(node)
        elif name in _LISTS:
            self._flush()
            self._list_depth += 1
            self._children(node)
            self._list_depth -= 1
        elif name in _BLOCKS:
            self._flush()
            self._children(node)
            self._flush()
        else:
            self._children(node)

    def _children(self, node: Tag) -> None:
        for child in node.children:
            self.render(child)

    def _heading(self, node: Tag, level: int) -> None:
        self._flush()
        text, swallowed = _heading_text(node)
        if text:
            self._blocks.append(f"{'#' * level} {text}")
        for child in swallowed:
            self.render(child)
        self._flush()

    def _list_item(self, node: Tag) -> None:
        self._flush()
        self._prefix = "  " * max(self._list_depth - 1, 0) + "- "
        self._children(node)
        self._flush()
        self._prefix = ""

    def _pre(self, node: Tag) -> None:
        self._flush()
        code = node.get_text()
        code = code.removeprefix("\n").rstrip("\n")  # HTML drops the newline after <pre>
        if not code.strip():
            return
        longest_run = max((len(run) for run in re.findall(r"`+", code)), default=0)
        fence = "`" * max(3, longest_run + 1)
        self._blocks.append(f"{fence}{_code_language(node)}\n{code}\n{fence}")

    def _table(self, node: Tag) -> None:
        self._flush()
        rows: list[str] = []
        caption = node.find("caption")
        if isinstance(caption, Tag) and _inline_text(caption):
            rows.append(_inline_text(caption))
        for row in node.find_all("tr"):
            if not isinstance(row, Tag) or row.find_parent("table") is not node:
                continue  # a row of a nested table is part of its cell's text
            cells = [
                _inline_text(cell)
                for cell in row.find_all(["td", "th"], recursive=False)
                if isinstance(cell, Tag)
            ]
            if any(cells):
                rows.append(" | ".join(cells))
        if rows:
            self._blocks.append("\n".join(rows))

    def _flush(self) -> None:
        lines = [_collapse(line) for line in "".join(self._inline).split("\n")]
        self._inline.clear()
        text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")
        if text:
            self._blocks.append(self._prefix + text)
            self._prefix = ""


def _code_language(pre: Tag) -> str:
    """The language of ``<pre><code class="language-x">``, or ""."""
    code = pre.find("code")
    if not isinstance(code, Tag):
        return ""
    for css_class in code.get_attribute_list("class"):
        for marker in ("language-", "lang-"):
            if isinstance(css_class, str) and css_class.startswith(marker):
                return css_class.removeprefix(marker)
    return ""
