"""Kinds: a word the corpus only ever writes qualified, and a query's qualifier it lacks.

Some nouns name a family of things and never stand alone: a support site writes
"setup mode", "pairing mode", "privacy mode", "snapshot mode", never "the mode". Each
such compound names one member of the family. A question that puts a qualifier the
pages never put there ("vacation mode") asks about a member the corpus does not
document, while BM25 and the dense model see it as covered: "mode" and often the
qualifier too are corpus words, and the rest of the question is common. This is the
shape of the command rule (:mod:`twokeys.rag.commands`: ``hubctl diag`` is always
followed by one of its subcommands) read on prose compounds.

A *run* is a sequence of words with no stopword, identifier or punctuation between
them (``pairing mode`` in "Put the device into pairing mode as described"). A word
*ends* a run when it is its last word, and is *qualified* there when a word precedes it
in the run. A word is a *kind word* of some texts when every run ending in any form of
it (its analyzer term: ``takes`` for ``take``, ``time`` for ``times``) is qualified,
and it has at least :data:`MIN_KINDS` different qualifiers as written (lowercased): the
texts name several members of its family and never the word alone. Read as written
only, verbs pass too (``may take``, ``can take``, ``vectors take``; ``three times``,
``busy times``) and name answerable questions ("How long does the Hub take"); their
other forms stand alone. :func:`unseen_kind` reads the query's runs for an adjacent
pair whose second word is a kind word and whose first word qualifies it nowhere in the
texts (compared by the analyzer's term, so ``pair mode`` is ``pairing mode``) and is
the rarer word of the two in the corpus: the specific part of a name, where the kind
word is the generic one (``app take`` names nothing).

Numbers name members too: "Level 1", "Level 2", "Level 3" of a reset page, the exit
codes 0 to 4 of a table headed "Code". A *numbered member* is a content word followed
by a whole number of at most three digits that is not a quantity with its unit ("wait
10 seconds" measures, it names nothing; "a level 4 reset" names a level), or a number
in a table column whose header is that one word. When the texts holding a word number
at least :data:`MIN_MEMBERS` different members of it, :func:`unseen_number` reads a
question's "exit code 5" or "level 4" as a member they do not document; a question
giving a number they do give ("exit code 3") is answerable by the same reading.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from twokeys.rag.answer_types import DURATION, TYPES
from twokeys.rag.runs import token_runs

if TYPE_CHECKING:
    from twokeys.analysis import Analyzer, Token

MIN_KINDS = 3  # distinct qualifiers: the texts name a family, not one fixed phrase
MIN_MEMBERS = 3  # distinct numbers: the texts number a family, not one thing

_BREAK = re.compile(r"[?!,;:()\[\]{}\"<>|*`]|\.(?=\s|$)|\s[-–—]+\s")


@dataclass(frozen=True, slots=True)
class RunWord:
    """One word of a run: its analyzer term and its lowercased written form."""

    term: str
    word: str
    text: str  # as written


def runs(text: str, analyzer: Analyzer) -> list[tuple[RunWord, ...]]:
    """The runs of ``text`` (one word or more), in order."""

    def word(token: Token, terms: tuple[str, ...]) -> RunWord | None:
        if terms and not token.is_identifier:
            return RunWord(terms[0], token.text.lower(), token.text)
        return None

    return token_runs(text, analyzer, _BREAK, word)


def qualifiers(head: RunWord, runs_of_texts: Iterable[Sequence[RunWord]]) -> frozenset[str] | None:
    """The terms that qualify ``head`` (as written) where it ends a run, when it is a kind
    word of these runs (module docstring); None when it is not."""
    found: set[str] = set()
    for run in runs_of_texts:
        if run[-1].term != head.term:
            continue
        if len(run) < 2:
            return None  # written alone, in some form: the word names a thing, not a family
        if run[-1].word == head.word:
            found.add(run[-2].term)
    return frozenset(found) if len(found) >= MIN_KINDS else None


def written_pairs(runs_of_texts: Iterable[Sequence[RunWord]]) -> set[tuple[str, str]]:
    """Every adjacent pair of terms the runs write."""
    return {(a.term, b.term) for run in runs_of_texts for a, b in itertools.pairwise(run)}


def unseen_kind(
    pair: tuple[RunWord, RunWord],
    family: frozenset[str] | None,
    written: set[tuple[str, str]],
    rarer: bool,
) -> str | None:
    """``pair`` as written when its second word is a kind word with ``family`` as its
    qualifiers, its first word qualifies it nowhere (``written``: the texts' pairs) and
    is the rarer of the two (``rarer``, from the caller's document frequencies); None
    otherwise."""
    qualifier, head = pair
    if family is None or not rarer:
        return None
    if qualifier.term in family or (qualifier.term, head.term) in written:
        return None
    return f"{qualifier.text} {head.text}"


# --- numbered members ---------------------------------------------------------------------

_NUMBERED = re.compile(r"(?<![\w-])([^\W\d_][\w'-]*)[ \t]+(\d{1,3})(?![\w.,/:-]?\d)(?![\w%°'-])")
_NEXT_WORD = re.compile(r"[ \t]+([^\W\d_][\w'-]*)")
_TABLE_SEPARATOR = re.compile(r"^\|?\s*:?-{3,}")


@dataclass(frozen=True, slots=True)
class Numbered:
    """A member named by number: its word's analyzer term, the number, as written."""

    term: str
    number: int
    text: str  # "code 5"


def numbered(text: str, query_terms: Callable[[str], Sequence[str]]) -> list[Numbered]:
    """The numbered members ``text`` names in prose (module docstring), in order;
    ``query_terms``: the analyzer's."""
    found = []
    for m in _NUMBERED.finditer(text):
        terms = query_terms(m.group(1))
        if len(terms) != 1:
            continue  # a stopword ("to 5", "at 3") or more than one word
        after = _NEXT_WORD.match(text, m.end())
        if after is not None and is_quantity(f"{m.group(2)} {after.group(1)}"):
            continue  # "10 seconds", "2 metres": a measure, not a member
        found.append(Numbered(terms[0], int(m.group(2)), f"{m.group(1)} {m.group(2)}"))
    return found


def is_quantity(text: str) -> bool:
    """Whether ``text``, a number and the word after it, is a number with its unit, as
    :mod:`twokeys.rag.answer_types` reads values (a duration, a distance, a price...)."""
    return any(
        (m := kind.stated.match(text)) is not None and m.end() == len(text)
        for kind in (*TYPES, DURATION)
    )


def table_members(text: str, query_terms: Callable[[str], Sequence[str]]) -> dict[str, set[int]]:
    """The numbers of each Markdown table column of ``text`` whose header is one
    content word, by that word's analyzer term."""
    members: dict[str, set[int]] = {}
    lines = text.splitlines()
    for i in range(len(lines) - 1):
        if not lines[i].lstrip().startswith("|") or not _TABLE_SEPARATOR.match(lines[i + 1]):
            continue
        header = [query_terms(c) for c in _cells(lines[i])]
        for row in itertools.takewhile(lambda r: r.lstrip().startswith("|"), lines[i + 2 :]):
            for terms, cell in zip(header, _cells(row), strict=False):
                if len(terms) == 1 and re.fullmatch(r"\d{1,3}", cell):
                    members.setdefault(terms[0], set()).add(int(cell))
    return members


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def unseen_number(asked: Numbered, members: set[int]) -> str | None:
    """``asked`` as written when ``members`` (the numbers the texts give its word) are
    a family (at least :data:`MIN_MEMBERS`) without its number; None otherwise."""
    if len(members) < MIN_MEMBERS or asked.number in members:
        return None
    return asked.text
