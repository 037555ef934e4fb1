"""The chunks that define the query's name: its reference entry, not a page using it.

A reference manual documents each name in one entry that opens with the name: an API
description's signature line (Sphinx's ``.. method:: setdefault(key[, default])`` in its
reST source, ``setdefault(key[, default])`` or ``pickle.loads(data, /, *, ...)`` as its
HTML renders the entry's term), a definition list's term on a line of its own
(``core.excludesFile`` in the Git manual). Many manuals title their pages by module or
topic (``Built-in Types``, ``pickle - Python object serialization``), so the heading rule
(:mod:`twokeys.fusion.headings`) reads nothing there, and the pages that only *use* the
name (``defaultdict``'s text mentions ``dict.setdefault``; ``shelve``'s mentions
``pickle.loads``) hold it as BM25 sees it, often with more of the query's words.

:func:`name_spellings` gives the spellings a query's name may be defined under: each raw
token whose whole term is an identifier *written as a path* (``dict.setdefault``,
``std::fmt::DebugStruct``), and its shorter paths (``dict.setdefault`` ->
``setdefault``: a member is defined inside its owner's entry by its own name). A path
names one member, whose entry is the one that defines its last name. A bare name is not
read: beside a member's name (``ComplexMatrix cumprod``) a class's name is defined by
its own entry, which lists the constructors as lines opening with the class name
(``ComplexMatrix (void)``), and that entry is not the page about the member.
:func:`defining_rows` keeps the candidate rows whose text holds a line that *begins*
with one of them as a definition does (:func:`defines`: after indentation, a reST
directive marker ``.. kind::`` and the name, or the name alone on its line, or the name
and an argument list that closes the line), when

* those rows are all of one place (document and heading line) and hold the query's
  other words: a reference defines a name once, and a name several pages define (an
  attribute of several classes) singles no page out; and
* one of them is among the dense run's first results (``confirmed``, the adaptive
  fusion's ``dense_top``): the words beside the name describe that entry too. A name
  defined in one place may be asked about where it is used (``default_factory``, an
  attribute of ``defaultdict``, asked about as a parameter of ``dataclasses.field``);
  there the dense model, reading the words, does not place the definition on its first
  page.

The adaptive fusion ranks those rows as it ranks a heading's that names the name
(:func:`twokeys.fusion.adaptive.adaptive_fusion`, ``headed``): first among the rows of
equal exact-term count, below the exact tier and the verbatim rule. A one-word query is
left to the bare-name rules. Prose that starts a line with the name followed by other
words (``Weak<T> does not auto-dereference``) is not a definition line, nor is a line
that calls it in an expression (``d.setdefault(k)``, ``io::stdin().read_line(&mut
s)?;``: the line goes on after the argument list, which a chunk cut inside a code block
shows without its opening fence), nor any line of a fenced code block (Markdown's
```` ``` ```` or ``~~~``, as :mod:`twokeys.ingest.html` writes ``<pre>``): an example
uses names, it does not define them (``thread::current().id()`` in the ``ThreadId``
page's example). A reference's own declarations in code (rustdoc's ``pub fn current()
-> Thread``) open with a keyword and are not read either: the heading rule covers pages
titled by the item.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence

_PATH = re.compile(r"::|[./]")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")


def name_spellings(
    raws: Iterable[str], identifiers: Collection[str], terms_of: Callable[[str], Sequence[str]]
) -> tuple[str, ...]:
    """The raw spellings the query's names may be defined under, longest first.

    ``raws``: the query's raw tokens; ``identifiers``: the whole terms of those that name
    something (:attr:`twokeys.fusion.adaptive.QueryFeatures.identifiers`); ``terms_of``:
    the analyzer's query terms of a raw token (whole term first). Of a raw token whose
    whole term is an identifier and which is written as a path (``::``, ``.`` or ``/``
    inside it): the token and each shorter path it ends with (``std::fmt::DebugStruct``
    -> ``fmt::DebugStruct``, ``DebugStruct``). A bare name gives nothing."""
    wanted = set(identifiers)
    out: set[str] = set()
    for raw in raws:
        terms = terms_of(raw)
        if not terms or terms[0] not in wanted or not _PATH.search(raw):
            continue
        out.add(raw)
        for cut in _PATH.finditer(raw):
            if cut.end() < len(raw):
                out.add(raw[cut.end() :])
    return tuple(sorted(out, key=lambda s: (-len(s), s)))


def definition_pattern(spellings: Sequence[str]) -> re.Pattern[str]:
    """Where a line may define one of ``spellings`` (case-insensitive): after indentation,
    either a reST directive marker (``.. function::``, ``.. py:method::``) and the
    spelling as a whole name (group ``directive``), or the spelling followed by the
    line's end or an opening ``(`` (group ``open``), whose argument list
    :func:`defines` then reads."""
    names = "|".join(re.escape(s) for s in spellings)
    return re.compile(
        rf"^[ \t]*(?:(?P<directive>\.\.[ \t]+[\w:-]+::[ \t]+)(?:{names})(?![\w.:])"
        rf"|(?:{names})[ \t]*(?:(?P<open>\()|$))",
        re.M | re.I,
    )


def defines(text: str, pattern: re.Pattern[str]) -> bool:
    """Whether a line of ``text`` outside its fenced code blocks (:func:`outside_code`)
    defines a spelling of ``pattern`` (:func:`definition_pattern`): a directive naming
    it, the name alone on its line (a definition list's term), or the name and an
    argument list that closes the line (brackets balanced; then nothing, Sphinx's
    ``¶``, a ``:`` or a ``->`` return annotation). A call in an expression goes on
    after its argument list (``io::stdin().read_line(&mut s)?;``,
    ``thread::current().id()``) and is not read as a definition. A text none of whose
    lines opens as a definition is answered without splitting it into lines (a line of
    its prose is a line of the text)."""
    if pattern.search(text) is None:
        return False
    prose = outside_code(text)
    for found in pattern.finditer(prose):
        if found.group("directive") or not found.group("open"):
            return True
        end = prose.find("\n", found.end())
        if _closes_line(prose[found.end() : end if end >= 0 else len(prose)]):
            return True
    return False


def _closes_line(rest: str) -> bool:
    """Whether an argument list opened just before ``rest`` closes and ends the line."""
    depth = 1
    for i, char in enumerate(rest):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                tail = rest[i + 1 :].strip()
                return tail in ("", "\u00b6", ":") or tail.startswith("->")
    return False


def defining_rows(
    rows: Sequence[int],
    texts: Callable[[Sequence[int]], Sequence[str]],
    places: Callable[[Sequence[int]], Sequence[tuple[str, str]]],
    spellings: Sequence[str],
    confirmed: Collection[int],
    described: Callable[[Sequence[int]], Sequence[bool]] | None = None,
) -> frozenset[int]:
    """The rows of ``rows`` (BM25's candidates) whose text holds a line defining one of
    ``spellings`` (:func:`defines`) and, given ``described``, the query's other words
    (``described(rows)``: whether each row holds them), when they are all of one place
    and one of them is in ``confirmed`` (the dense run's first rows); none otherwise.

    ``texts(rows)`` and ``places(rows)``: each row's chunk text and place (document id
    and heading line), in order. Nothing is read when ``spellings`` or ``rows`` is
    empty; a text that does not hold a spelling (lower-cased) is not searched for
    definition lines."""
    if not spellings or not rows:
        return frozenset()
    pattern = definition_pattern(spellings)
    lowered = tuple(s.lower() for s in spellings)

    def held(text: str) -> bool:
        low = text.lower()
        return any(s in low for s in lowered)

    found = [
        row
        for row, text in zip(rows, texts(rows), strict=True)
        if held(text) and defines(text, pattern)
    ]
    if found and described is not None:
        found = [row for row, kept in zip(found, described(found), strict=True) if kept]
    if not any(row in confirmed for row in found):
        return frozenset()
    if len(set(places(found))) != 1:
        return frozenset()
    return frozenset(found)


def outside_code(text: str) -> str:
    """``text`` without the lines of its fenced code blocks (fence lines included): from
    a line opening with three or more backticks or tildes to the next line opening with
    the same character run at least as long, or the text's end. A chunk cut inside a
    block, holding its closing fence only, reads that fence as opening one: the lines
    after it are dropped, a definition missed rather than an example read as one."""
    kept: list[str] = []
    fence = ""
    for line in text.split("\n"):
        found = _FENCE.match(line)
        if fence:
            if found and found.group(1)[0] == fence[0] and len(found.group(1)) >= len(fence):
                fence = ""
            continue
        if found:
            fence = found.group(1)
            continue
        kept.append(line)
    return "\n".join(kept)
