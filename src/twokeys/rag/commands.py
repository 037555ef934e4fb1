"""Commands: the command lines a corpus documents, and query runs naming one it lacks.

Support and engineering pages document tools as command lines (``hubctl diag purge
--older-than 14d``). A question that writes such a command with a subcommand the pages
never give (``hubctl diag upload``) asks about something the corpus does not hold, yet
BM25 and the dense model both see it as covered: every one of its words is in the
corpus (``upload`` elsewhere), most of them in the chunks about that tool.

A *command* is a code line (a line of a fenced block, or an inline code span) cut at
the shell's separators (``|``, ``&&``, ``;``, redirections) and at `` = `` (a setting
line), read as :class:`Word` s: its first word is the *head* (the program); quoted
strings and identifier-like tokens (flags, paths, values, numbers) are *arguments*;
the other words are command words (subcommands and plain positional words). A span
whose command words hold a stopword reads as prose (``store passwords in a recoverable
format``, a link's text; ``filesystem encoding and error handler``, a glossary term)
and is no command.

A query *run* is a maximal sequence of the query's tokens with no stopword and no
punctuation between them. :func:`unseen_subcommand` matches a run, from a word that
heads some command, against those commands word by word; the run names an unseen
subcommand when it follows a command for at least two words (the head and a command
word: one word in common with a code span is no sign the query writes a command, and
inline spans are often prose, such as a glossary term) and then goes on with a command
word while every command matching that far goes on with a command word too (the
matched part is never a whole command: ``hubctl diag`` is always followed by ``list``,
``purge`` or ``create``) and that word is nowhere further in them. A run that goes past
a whole command (``hubctl radio status zigbee report``) or past a command's last
command word (``hubctl diag purge used``, before ``--older-than``) reads on as prose,
and an argument in the query is left to the identifier check of
:mod:`twokeys.rag.grounding`.

On Debian's Git and Python documentation (``benchmarks/techdocs.py``: 210 and 213
queries, all answerable) it names nothing. Matching one word, it named 6 and 4 of them
(``several branches`` after a code span ``several days later``); matching two, one was
left (``storing password hashes`` after a reST link's text), which the prose test
removes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from twokeys.rag.runs import token_runs
from twokeys.text.sentences import is_fence

if TYPE_CHECKING:
    from twokeys.analysis import Analyzer, Token

Command = tuple["Word", ...]


@dataclass(frozen=True, slots=True)
class Word:
    """One token of a command or of a query run."""

    term: str  # the analyzer's term (stemmed word, identifier whole); a stopword lowercased
    text: str  # as written
    argument: bool  # an identifier-like token or a quoted string: not a command word
    parts: tuple[str, ...] = ()  # an identifier's parts (com.lumatek.Studio: studio, ...)
    stop: bool = False  # a stopword


_INLINE = re.compile(r"`([^`\n]+)`")
_COMMENT = re.compile(r"\s*(?:#|//|;|--\s)")
_SEPARATOR = re.compile(r"\s(?:\|\|?|&&|;|\d?>>?|<)(?=\s|$)")
_SETTING = re.compile(r"\s=(?:\s|$)")
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")
_BREAK = re.compile(r"[?!,;()\[\]{}\"<>]|[.:](?=\s|$)|\s[-–—]+\s|\s'|'(?=\s|$)")
_HEAD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)*")


def code_lines(text: str) -> list[str]:
    """The code lines of a chunk's text: each line of its fenced blocks (comments left
    out) and each inline code span of its other lines.

    A chunk may start or end inside a fenced block (a block cut to fit, or code lines
    repeated as overlap); when its fences do not pair up, which lines are code cannot be
    told, and only the inline spans are read."""
    lines = text.splitlines()
    paired = sum(1 for line in lines if is_fence(line)) % 2 == 0
    out: list[str] = []
    inside = False
    for line in lines:
        if paired and is_fence(line):
            inside = not inside
        elif inside:
            if line.strip() and not _COMMENT.match(line):
                out.append(line)
        else:
            out.extend(m.group(1) for m in _INLINE.finditer(line))
    return out


def commands(line: str, analyzer: Analyzer) -> list[Command]:
    """The commands of one code line (see the module docstring)."""
    out: list[Command] = []
    for part in _SEPARATOR.split(_SETTING.split(line, maxsplit=1)[0]):
        words: list[Word] = []
        last = 0
        for m in _QUOTED.finditer(part):
            words.extend(text_words(part[last : m.start()], analyzer))
            quoted = tuple(analyzer.index_terms(m.group()))
            words.append(Word(m.group(), m.group(), argument=True, parts=quoted))
            last = m.end()
        words.extend(text_words(part[last:], analyzer))
        if words and _HEAD.fullmatch(words[0].text) and not _prose(words):
            out.append(tuple(words))
    return out


def _prose(words: Sequence[Word]) -> bool:
    """Whether a code span reads as prose: a stopword among its command words (a link's
    text, a glossary term, a log message); a command's stopwords come after a flag."""
    for word in words:
        if word.argument:
            return False
        if word.stop:
            return True
    return False


def text_words(text: str, analyzer: Analyzer) -> Iterable[Word]:
    for token in analyzer.tokens(text):
        terms = analyzer.terms_of(token, for_query=True)
        term = terms[0] if terms else token.text.lower()
        parts = analyzer.terms_of(token, for_query=False)
        yield Word(term, token.text, token.is_identifier, parts, stop=not terms)


def query_runs(query: str, analyzer: Analyzer) -> list[tuple[Word, ...]]:
    """The query's runs of two or more tokens with no stopword or punctuation between."""

    def word(token: Token, terms: tuple[str, ...]) -> Word | None:
        return Word(terms[0], token.text, token.is_identifier) if terms else None

    return token_runs(query, analyzer, _BREAK, word, shortest=2)


def heads(run: Sequence[Word]) -> list[int]:
    """Positions in ``run`` that could head a command and are followed by more of it."""
    return [i for i, w in enumerate(run[:-1]) if _HEAD.fullmatch(w.text)]


def follow(run: Sequence[Word], start: int, known: Sequence[Command]) -> tuple[int, list[Command]]:
    """How many words of ``run`` from ``start`` follow some of ``known`` word by word (0:
    none starts with ``run[start]``), and the sequences that match that far."""
    candidates = [c for c in known if c and c[0].term == run[start].term]
    if not candidates:
        return 0, []
    j = 1
    while start + j < len(run):
        longer = [c for c in candidates if len(c) > j and c[j].term == run[start + j].term]
        if not longer:
            break
        candidates = longer
        j += 1
    return j, candidates


def unseen_subcommand(run: Sequence[Word], start: int, known: Sequence[Command]) -> str | None:
    """The part of ``run`` from ``start`` that names a subcommand none of ``known`` (the
    commands headed by ``run[start]``) has, as written; None when there is none."""
    j, candidates = follow(run, start, known)
    if j < 2:
        return None  # only the head matches: one word is no sign the query writes a command
    if start + j >= len(run):
        return None  # the whole run is (a prefix of) a documented command
    following = run[start + j]
    if following.argument:
        return None  # a flag or value: the identifier check's
    if not all(len(c) > j and not c[j].argument for c in candidates):
        return None  # the matched part is a whole command; the rest reads as prose
    if any(following.term in (w.term, *w.parts) for c in candidates for w in c[j:]):
        return None  # a word further in the command (a positional word, a value's part)
    return " ".join(w.text for w in run[start : start + j + 1])
