"""The chunks whose heading names the query's name: the section about it, not one using it.

A query that writes a name beside words ("DebugStruct helper for writing Debug
implementations", "AtomicBool flag shared between threads without a mutex") asks about
the thing the name names. Several chunks hold the name: the section that documents it,
and every section that uses it in passing (the ``Debug`` trait's page shows a
``DebugStruct``; the ``fence`` page's example uses an ``AtomicBool``). Both sensors read
them alike: BM25 sees the name in each, and the dense model, reading the words around
it, often prefers the page that uses the name in a context the words describe (the
``Debug`` trait for "Debug implementations"). What tells them apart is where the name
stands: a document is titled, and a section headed, by what it is about. The chunk's
heading line (its heading path, or its document's title where it has none; what the
index prepends to the chunk's text, :func:`twokeys.text.passages.heading_line`) holds
the name in the section that is about it and not in those that use it.

:func:`name_forms` gives the forms a query's name may stand in a heading under: the
whole identifier, its shorter ``::``/``.`` paths and joined parts as the analyzer gives
them (``slice::from_raw_parts`` -> ``from_raw_parts``), and its last name when that is an
identifier itself (``std::fmt::DebugStruct`` -> ``debugstruct``). :func:`headed_rows`
keeps the candidate rows under the one heading that holds one of them (read with the
analyzer the index was built with) when that heading names it (:func:`names`: its
innermost heading begins with it; a title that mentions the name inside a sentence does
not name it): a reference documents a thing in one place, while a name
several documents are titled by, or several sections headed by, is a topic they share
(SciFact's abstracts titled by ``IL-10``, ``PD-1``, ``HIV-1``; gnuplot's sections on the
``PostScript`` terminal), and the heading then singles nothing out, as a name several
chunks hold does not (the condition :func:`twokeys.fusion.adaptive.words_pick` reads).
The adaptive fusion ranks those rows first among the rows of equal exact-term count
(:func:`twokeys.fusion.adaptive.adaptive_fusion`, ``headed``): below the exact tier and
the verbatim rule, above the fused score. A one-word query is left to the bare-name
rules (its exact tier is ordered by BM25), and a heading that does not name it (most
headings: a manual's sections are titled by topic, ``Built-in Types``,
``git-config(1)``) changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence

from twokeys.fusion.adaptive import is_identifier_like
from twokeys.types import HEADING_SEPARATOR

_PATH = re.compile(r"::|[./]")


def name_forms(
    raws: Iterable[str], identifiers: Collection[str], terms_of: Callable[[str], Sequence[str]]
) -> frozenset[str]:
    """The forms the query's names may stand in a heading under.

    ``raws``: the query's raw tokens; ``identifiers``: the whole terms of those that name
    something (:attr:`twokeys.fusion.adaptive.QueryFeatures.identifiers`); ``terms_of``:
    the analyzer's query terms of a raw token (whole term first). Of a raw token whose
    whole term is an identifier: the whole term, its terms that join parts (holding a
    character other than a letter or digit: a shorter path, ``from_raw_parts``), and the
    whole term of its last name when that is identifier-like (``DebugStruct`` of
    ``std::fmt::DebugStruct``); never the plain words its parts are (``slice``,
    ``debug``), which many headings hold.
    """
    wanted = set(identifiers)
    forms: set[str] = set()
    for raw in raws:
        terms = terms_of(raw)
        if not terms or terms[0] not in wanted:
            continue
        forms.add(terms[0])
        forms.update(t for t in terms[1:] if not t.isalnum())
        last = _PATH.split(raw)[-1]
        if last != raw and is_identifier_like(last):
            forms.update(terms_of(last)[:1])
    return frozenset(forms)


def headed_rows(
    rows: Sequence[int],
    headings: Callable[[Sequence[int]], Sequence[tuple[str, str]]],
    forms: Collection[str],
    terms_of: Callable[[str], Iterable[str]],
    lead_terms: Callable[[str], Iterable[str]],
) -> frozenset[int]:
    """The rows of ``rows`` under the one heading that holds one of ``forms``, when that
    heading names it (:func:`names`); none when several headings of ``rows`` (of one
    document or several) hold the name, or the one that does only mentions it.

    ``headings(rows)``: each row's document id and heading line, in order; ``terms_of``
    and ``lead_terms``: the analyzer's index terms of a text and of its first word (the
    terms BM25 indexed them under). Nothing is read when ``forms`` or ``rows`` is empty."""
    if not forms or not rows:
        return frozenset()
    wanted = set(forms)
    cache: dict[str, bool] = {}  # a document's chunks share its title
    out: set[int] = set()
    places: set[tuple[str, str]] = set()  # (document, heading line) holding the name
    for row, (document, line) in zip(rows, headings(rows), strict=True):
        held = cache.get(line)
        if held is None:
            held = cache[line] = not wanted.isdisjoint(terms_of(line))
        if held:
            out.add(row)
            places.add((document, line))
    if len(places) != 1 or not names(next(iter(places))[1], wanted, lead_terms):
        return frozenset()
    return frozenset(out)


def names(line: str, forms: Collection[str], lead_terms: Callable[[str], Iterable[str]]) -> bool:
    """Whether a heading line names one of ``forms``: its innermost heading (after the
    last :data:`~twokeys.types.HEADING_SEPARATOR`) begins with it. A heading that names
    its section's subject puts it first (``DebugStruct in std::fmt``, ``Reference >
    html.stylesheet``, ``unittest.mock - mock object library``); a title that mentions
    the name inside a sentence is about something else (a study's finding about
    ``IL-10``, SciFact's titles)."""
    innermost = line.rsplit(HEADING_SEPARATOR, 1)[-1]
    return not set(forms).isdisjoint(lead_terms(innermost))
