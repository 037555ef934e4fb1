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
token whose whole term is an identifier, and its shorter paths (``dict.setdefault`` ->
``setdefault``: a member is defined inside its owner's entry by its own name).
:func:`defining_rows` keeps the candidate rows whose text holds a line that *begins*
with one of them as a definition does (:func:`definition_pattern`: after indentation and
an optional reST directive marker ``.. kind::``, the spelling followed by an argument
list ``(`` or the line's end), when

* those rows are all of one document: a reference defines a name once, and a name
  several pages define (an attribute of several classes) singles no page out; and
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
words (``Weak<T> does not auto-dereference``) is not a definition line, nor is a code
line that calls it on something (``pickle.loads(data)`` is, when the query wrote
``pickle.loads``; ``d.setdefault(k)`` is not).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence

_PATH = re.compile(r"::|[./]")


def name_spellings(
    raws: Iterable[str], identifiers: Collection[str], terms_of: Callable[[str], Sequence[str]]
) -> tuple[str, ...]:
    """The raw spellings the query's names may be defined under, longest first.

    ``raws``: the query's raw tokens; ``identifiers``: the whole terms of those that name
    something (:attr:`twokeys.fusion.adaptive.QueryFeatures.identifiers`); ``terms_of``:
    the analyzer's query terms of a raw token (whole term first). Of a raw token whose
    whole term is an identifier: the token and each shorter path it ends with
    (``std::fmt::DebugStruct`` -> ``fmt::DebugStruct``, ``DebugStruct``)."""
    wanted = set(identifiers)
    out: set[str] = set()
    for raw in raws:
        terms = terms_of(raw)
        if not terms or terms[0] not in wanted:
            continue
        out.add(raw)
        for cut in _PATH.finditer(raw):
            if cut.end() < len(raw):
                out.add(raw[cut.end() :])
    return tuple(sorted(out, key=lambda s: (-len(s), s)))


def definition_pattern(spellings: Sequence[str]) -> re.Pattern[str]:
    """A line that defines one of ``spellings`` (case-insensitive): after indentation,
    either a reST directive marker (``.. function::``, ``.. py:method::``) and the
    spelling as a whole name, or the spelling followed by an argument list ``(`` or the
    line's end."""
    names = "|".join(re.escape(s) for s in spellings)
    return re.compile(
        rf"^[ \t]*(?:\.\.[ \t]+[\w:-]+::[ \t]+(?:{names})(?![\w.:])|(?:{names})[ \t]*(?:\(|$))",
        re.M | re.I,
    )


def defining_rows(
    rows: Sequence[int],
    texts: Callable[[Sequence[int]], Sequence[str]],
    documents: Callable[[Sequence[int]], Sequence[str]],
    spellings: Sequence[str],
    confirmed: Collection[int],
) -> frozenset[int]:
    """The rows of ``rows`` (BM25's candidates) whose text holds a line defining one of
    ``spellings`` (:func:`definition_pattern`), when they are all of one document and one
    of them is in ``confirmed`` (the dense run's first rows); none otherwise.

    ``texts(rows)`` and ``documents(rows)``: each row's chunk text and document id, in
    order. Nothing is read when ``spellings`` or ``rows`` is empty."""
    if not spellings or not rows:
        return frozenset()
    pattern = definition_pattern(spellings)
    found = [row for row, text in zip(rows, texts(rows), strict=True) if pattern.search(text)]
    if not any(row in confirmed for row in found):
        return frozenset()
    if len(set(documents(found))) != 1:
        return frozenset()
    return frozenset(found)
