"""Menus: the menu paths a corpus documents, and a query's path that leaves them.

Support pages guide a user through an app as menu paths written in bold or as code:
``**Settings > Hub > Network > History**``, ``**Camera settings > Audio**``. A path is a
sequence of *steps* just as a command line is a sequence of words
(:mod:`twokeys.rag.commands`), and a question that writes a path one step past a
documented one (``Settings > Hub > Network > Speed test``) asks about a menu entry the
corpus does not hold, while BM25 and the dense model see it as covered: its words are
the path's, and the rest of them are common.

A documented *path* is a bold or code span with at least two steps separated by `` > ``,
each a capitalised label of words (not code: ``x > 0``, ``hubctl log > out.txt``); each
step is a :class:`~twokeys.rag.commands.Word` whose term is its content terms
joined (``Delete my Lumatek ID``: ``delet lumatek id``). A query path is read from a
query that writes `` > `` itself: its first step is the end of the text before the first
`` > `` (``What does Camera settings``: a documented first step whose terms end that
text, the longest), its middle steps are whole, and its last step is the run of words
after the last `` > `` up to a stopword or punctuation (``Noise filter option`` in
``... > Noise filter option do?``); a documented step whose terms start that run is that
step (``Send test`` in ``Send test arrives``).

:func:`departure` follows the query path along the documented ones step by step
(:func:`twokeys.rag.commands.follow`) and reports the step where it leaves them, if it
follows at least the first step and leaves before its end. The step is *branching* when
every documented path matched that far goes on (``Settings > Hub > Diagnostics`` is
always followed by ``Create bundle``): no documented path has the query's step there.
It is *past a leaf* when some documented path ends there (``Camera settings > Audio``):
the pages may describe that screen's entries in prose (``Open Settings > Hub > Storage
and change clip retention``), which the caller checks (:mod:`twokeys.rag.grounding`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from twokeys.rag.commands import Command, Word, follow, text_words

if TYPE_CHECKING:
    from twokeys.analysis import Analyzer

_SPAN = re.compile(r"\*\*([^*\n]+?)\*\*|`([^`\n]+)`")
_STEP = re.compile(r"\s+>\s+")
_STEP_TEXT = re.compile(r"[A-Z][\w'’ &-]*")  # a label: capitalised words, not code (`x > 0`)
_BREAK = re.compile(r"[?!,;:()\[\]{}\"<>]|\.(?=\s|$)")


@dataclass(frozen=True, slots=True)
class Departure:
    """Where a query path leaves the documented paths."""

    written: str  # the query's path up to and including the step, as written
    step: Word  # the query's step that no documented path has there
    leaf: bool  # some documented path matched that far ends there
    matched: tuple[Command, ...]  # the documented paths that match up to the step
    depth: int  # how many steps match: the step's position


def menu_paths(text: str, analyzer: Analyzer) -> list[Command]:
    """The menu paths written in ``text`` (bold or code spans of two or more steps)."""
    out: list[Command] = []
    for m in _SPAN.finditer(text):
        steps = _STEP.split((m.group(1) or m.group(2)).strip())
        if len(steps) >= 2 and all(_STEP_TEXT.fullmatch(s) for s in steps):
            out.append(tuple(_step(s, analyzer) for s in steps))
    return out


def query_path(query: str) -> list[str] | None:
    """The query's text cut at `` > ``: two or more pieces, or None."""
    pieces = _STEP.split(query)
    return pieces if len(pieces) >= 2 else None


def head_term(pieces: Sequence[str], analyzer: Analyzer) -> str | None:
    """The term a documented path's first step must end with: the first piece's last."""
    words = [w for w in text_words(pieces[0], analyzer) if not w.stop]
    return words[-1].term if words else None


def departure(
    pieces: Sequence[str], known: Sequence[Command], analyzer: Analyzer
) -> Departure | None:
    """Where the query path (``pieces``, from :func:`query_path`) leaves ``known``; None
    when it does not follow one's first step or stays on the documented paths."""
    before = [w.term for w in text_words(pieces[0], analyzer) if not w.stop]
    heads = [c[0] for c in known if _ends_with(before, c[0].term)]
    if not heads:
        return None
    head = max(heads, key=lambda w: len(w.term.split()))
    middle = [_step(p, analyzer) for p in pieces[1:-1]]
    last_run = _leading_run(pieces[-1], analyzer)
    if not last_run:
        return None
    run = [head, *middle, _run_step(last_run)]
    j, matched = follow(run, 0, known)
    if j >= len(run):
        return None
    if j == len(run) - 1:
        # the last step: a documented step whose terms start the run is that step
        terms = [w.term for w in last_run]
        if any(len(c) > j and _starts_with(terms, c[j].term) for c in matched):
            return None
    texts = [head.text, *(p.strip() for p in pieces[1:-1]), " ".join(w.text for w in last_run)]
    leaf = any(len(c) == j for c in matched)
    return Departure(" > ".join(texts[: j + 1]), run[j], leaf, tuple(matched), j)


def _step(text: str, analyzer: Analyzer) -> Word:
    words = list(text_words(text, analyzer))
    terms = tuple(w.term for w in words if not w.stop)
    return Word(" ".join(terms) or text.strip().lower(), text.strip(), False, terms)


def _run_step(run: Sequence[Word]) -> Word:
    terms = tuple(w.term for w in run)
    return Word(" ".join(terms), " ".join(w.text for w in run), False, terms)


def _leading_run(piece: str, analyzer: Analyzer) -> list[Word]:
    """The words that start ``piece`` up to a stopword or punctuation."""
    out: list[Word] = []
    for word in text_words(_BREAK.split(piece, maxsplit=1)[0], analyzer):
        if word.stop:
            break
        out.append(word)
    return out


def _ends_with(terms: Sequence[str], step: str) -> bool:
    want = step.split()
    return bool(want) and list(terms[len(terms) - len(want) :]) == want


def _starts_with(terms: Sequence[str], step: str) -> bool:
    want = step.split()
    return bool(want) and list(terms[: len(want)]) == want
