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
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from twokeys.rag.runs import token_runs

if TYPE_CHECKING:
    from twokeys.analysis import Analyzer, Token

MIN_KINDS = 3  # distinct qualifiers: the texts name a family, not one fixed phrase

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
