"""Boolean retrieval: a query language over posting lists (the exact-match model).

The query syntax, after Lucene's classic query parser::

    query   := or ;
    or      := and ( "OR" and )* ;
    and     := not ( [ "AND" ] not )* ;       adjacent terms are ANDed
    not     := ( "NOT" | "-" ) not | primary ;
    primary := "(" or ")" | '"' phrase '"' | word ;

so NOT binds tighter than AND, and AND tighter than OR. Operators are upper case
(``and``/``or``/``not`` are plain words, stopwords under the default analyzer). ``-``
negates when it starts a word (``-firmware``); a flag such as ``-v`` or ``--force`` must
be quoted (``"-v"``); inner hyphens never negate (``E-4821``).

:func:`parse` turns the text into a syntax tree of raw words; :func:`analyse` runs
each word through the index's analyzer (a word with several terms, such as
``nomic-embed-text``, becomes the AND of them; a word with none, a stopword, is
dropped with the operators around it); :func:`evaluate` computes the matching rows
with set operations on sorted posting lists. A phrase matches a chunk that contains
all of its terms (posting intersection) and whose analysed text contains them as a
contiguous sequence (checked by the caller's ``verify_phrase``, see
:func:`contains_sequence`). Ranking the matches is the caller's business (BM25 over
:func:`positive_terms` in :mod:`twokeys.retrievers.classic`).

Syntax errors raise :class:`~twokeys.errors.QuerySyntaxError` naming the 1-based column.
Parentheses and negations nest at most :data:`MAX_DEPTH` levels deep, so every stage
(parser, analysis, evaluation), each recursive over the tree, stays far from Python's
recursion limit; a deeper query is a syntax error, not a ``RecursionError``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from twokeys.errors import QuerySyntaxError

Rows = npt.NDArray[np.int64]

MAX_DEPTH = 100  # parentheses and NOTs nested in one another

# -- syntax tree (raw words, as typed) ----------------------------------------------


@dataclass(frozen=True)
class Word:
    text: str
    column: int


@dataclass(frozen=True)
class Phrase:
    text: str
    column: int


@dataclass(frozen=True)
class Not:
    operand: Node


@dataclass(frozen=True)
class And:
    operands: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    operands: tuple[Node, ...]


Node = Word | Phrase | Not | And | Or

# -- analysed tree (index terms) -----------------------------------------------------


@dataclass(frozen=True)
class TermQuery:
    term: str


@dataclass(frozen=True)
class PhraseQuery:
    terms: tuple[str, ...]


@dataclass(frozen=True)
class NotQuery:
    operand: Query


@dataclass(frozen=True)
class AndQuery:
    operands: tuple[Query, ...]


@dataclass(frozen=True)
class OrQuery:
    operands: tuple[Query, ...]


Query = TermQuery | PhraseQuery | NotQuery | AndQuery | OrQuery

# -- tokens --------------------------------------------------------------------------

Kind = Literal["word", "phrase", "and", "or", "not", "minus", "lparen", "rparen", "end"]
_OPERATORS: dict[str, Kind] = {"AND": "and", "OR": "or", "NOT": "not"}
_DELIMITERS = frozenset('()"')


@dataclass(frozen=True)
class _Token:
    kind: Kind
    text: str
    column: int  # 1-based


def _error(message: str) -> QuerySyntaxError:
    return QuerySyntaxError(f"query syntax: {message}")


def tokenize(query: str) -> list[_Token]:
    """Split the query into words, quoted phrases, operators and parentheses."""
    tokens: list[_Token] = []
    i, n = 0, len(query)
    while i < n:
        c = query[i]
        col = i + 1
        if c.isspace():
            i += 1
        elif c in "()":
            tokens.append(_Token("lparen" if c == "(" else "rparen", c, col))
            i += 1
        elif c == '"':
            end = query.find('"', i + 1)
            if end < 0:
                raise _error(f"unterminated quote at column {col}")
            tokens.append(_Token("phrase", query[i + 1 : end], col))
            i = end + 1
        elif c == "-" and i + 1 < n and not query[i + 1].isspace() and query[i + 1] != "-":
            tokens.append(_Token("minus", c, col))
            i += 1
        else:
            start = i
            while i < n and not query[i].isspace() and query[i] not in _DELIMITERS:
                i += 1
            text = query[start:i]
            tokens.append(_Token(_OPERATORS.get(text, "word"), text, col))
    tokens.append(_Token("end", "", n + 1))
    return tokens


# -- parser --------------------------------------------------------------------------

_STARTS_OPERAND = frozenset({"word", "phrase", "not", "minus", "lparen"})


class _Parser:
    """Recursive descent over the token list; one method per grammar rule."""

    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.depth = 0  # parentheses and negations open around the current token

    def enter(self, token: _Token) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _error(
                f"nested more than {MAX_DEPTH} levels deep (parentheses and NOTs) "
                f"at column {token.column}"
            )

    @property
    def current(self) -> _Token:
        return self.tokens[self.pos]

    def advance(self) -> _Token:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def parse(self) -> Node:
        if self.current.kind == "end":
            raise _error("the query is empty")
        node = self.parse_or()
        token = self.current
        if token.kind == "rparen":
            raise _error(f"unbalanced parenthesis at column {token.column}")
        if token.kind != "end":  # pragma: no cover - every other token starts an operand
            raise _error(f"unexpected {token.text!r} at column {token.column}")
        return node

    def parse_or(self) -> Node:
        operands = [self.parse_and()]
        while self.current.kind == "or":
            operator = self.advance()
            operands.append(self.parse_operand_after(operator, self.parse_and))
        return operands[0] if len(operands) == 1 else Or(tuple(operands))

    def parse_and(self) -> Node:
        operands = [self.parse_not()]
        while True:
            if self.current.kind == "and":
                operator = self.advance()
                operands.append(self.parse_operand_after(operator, self.parse_not))
            elif self.current.kind in _STARTS_OPERAND:
                operands.append(self.parse_not())
            else:
                break
        return operands[0] if len(operands) == 1 else And(tuple(operands))

    def parse_not(self) -> Node:
        if self.current.kind in ("not", "minus"):
            operator = self.advance()
            self.enter(operator)
            node = Not(self.parse_operand_after(operator, self.parse_not))
            self.depth -= 1
            return node
        return self.parse_primary()

    def parse_primary(self) -> Node:
        token = self.current
        if token.kind == "word":
            self.advance()
            return Word(token.text, token.column)
        if token.kind == "phrase":
            self.advance()
            if not token.text.strip():
                raise _error(f"empty phrase at column {token.column}")
            return Phrase(token.text, token.column)
        if token.kind == "lparen":
            self.advance()
            if self.current.kind == "rparen":
                raise _error(f"empty parentheses at column {token.column}")
            self.enter(token)
            node = self.parse_or()
            if self.advance().kind != "rparen":
                raise _error(f"unbalanced parenthesis at column {token.column}")
            self.depth -= 1
            return node
        if token.kind == "rparen":
            raise _error(f"unbalanced parenthesis at column {token.column}")
        if token.kind in ("and", "or"):
            raise _error(f"missing term before {token.text} at column {token.column}")
        raise _error("the query is empty")  # pragma: no cover - "end" is handled by callers

    def parse_operand_after(self, operator: _Token, rule: Callable[[], Node]) -> Node:
        token = self.current
        if token.kind in _STARTS_OPERAND:
            return rule()
        name = "-" if operator.kind == "minus" else operator.text
        raise _error(f"missing term after {name} at column {operator.column}")


def parse(query: str) -> Node:
    """The syntax tree of ``query``; raises :class:`QuerySyntaxError` with the column."""
    return _Parser(tokenize(query)).parse()


# -- analysis ------------------------------------------------------------------------

Analyze = Callable[[str], Sequence[str]]


def analyse(node: Node, analyze: Analyze) -> Query | None:
    """Replace raw words by index terms; None if nothing searchable is left."""
    if isinstance(node, Word):
        terms = _unique(analyze(node.text))
        if not terms:
            return None
        if len(terms) == 1:
            return TermQuery(terms[0])
        return AndQuery(tuple(TermQuery(t) for t in terms))
    if isinstance(node, Phrase):
        phrase = tuple(analyze(node.text))
        if not phrase:
            return None
        return TermQuery(phrase[0]) if len(phrase) == 1 else PhraseQuery(phrase)
    if isinstance(node, Not):
        operand = analyse(node.operand, analyze)
        return None if operand is None else NotQuery(operand)
    operands = tuple(q for q in (analyse(o, analyze) for o in node.operands) if q is not None)
    if not operands:
        return None
    if len(operands) == 1:
        return operands[0]
    return AndQuery(operands) if isinstance(node, And) else OrQuery(operands)


def _unique(terms: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(terms))


def positive_terms(query: Query, negated: bool = False) -> tuple[str, ...]:
    """The distinct terms not under a NOT (or under an even number of them), in order."""
    if isinstance(query, TermQuery):
        return () if negated else (query.term,)
    if isinstance(query, PhraseQuery):
        return () if negated else tuple(_unique(query.terms))
    if isinstance(query, NotQuery):
        return positive_terms(query.operand, not negated)
    found: list[str] = []
    for operand in query.operands:
        found.extend(positive_terms(operand, negated))
    return tuple(_unique(found))


def compile_query(query: str, analyze: Analyze) -> Query:
    """Parse and analyse ``query``; it must keep at least one positive term."""
    tree = analyse(parse(query), analyze)
    if tree is None:
        raise _error("no searchable terms left (every word is a stopword or punctuation)")
    if not positive_terms(tree):
        raise _error("a query needs at least one positive term (NOT alone matches no ranking)")
    return tree


# -- evaluation ----------------------------------------------------------------------

Postings = Callable[[str], Rows]  # sorted unique rows containing a term (empty if unknown)
VerifyPhrase = Callable[[Rows, tuple[str, ...]], Rows]  # the candidates that hold the phrase


def evaluate(query: Query, postings: Postings, n_docs: int, verify_phrase: VerifyPhrase) -> Rows:
    """The sorted rows matching ``query``."""
    if isinstance(query, TermQuery):
        return postings(query.term)
    if isinstance(query, PhraseQuery):
        candidates = _intersect([postings(t) for t in _unique(query.terms)])
        return verify_phrase(candidates, query.terms) if candidates.size else candidates
    if isinstance(query, NotQuery):
        excluded = evaluate(query.operand, postings, n_docs, verify_phrase)
        return np.setdiff1d(np.arange(n_docs, dtype=np.int64), excluded, assume_unique=True)
    if isinstance(query, OrQuery):
        out = np.empty(0, np.int64)
        for operand in query.operands:
            out = np.union1d(out, evaluate(operand, postings, n_docs, verify_phrase))
        return out
    # AND: intersect the positive operands, then subtract the negated ones
    positive = [o for o in query.operands if not isinstance(o, NotQuery)]
    negative = [o.operand for o in query.operands if isinstance(o, NotQuery)]
    if positive:
        rows = _intersect([evaluate(o, postings, n_docs, verify_phrase) for o in positive])
    else:
        rows = np.arange(n_docs, dtype=np.int64)
    for operand in negative:
        if not rows.size:
            break
        excluded = evaluate(operand, postings, n_docs, verify_phrase)
        rows = np.setdiff1d(rows, excluded, assume_unique=True)
    return rows


def _intersect(lists: Sequence[Rows]) -> Rows:
    ordered = sorted(lists, key=len)
    out = ordered[0]
    for rows in ordered[1:]:
        if not out.size:
            break
        out = np.intersect1d(out, rows, assume_unique=True)
    return out


def contains_sequence(terms: Sequence[str], phrase: Sequence[str]) -> bool:
    """Whether ``phrase`` occurs in ``terms`` as a contiguous run."""
    n = len(phrase)
    wanted = list(phrase)
    return any(list(terms[i : i + n]) == wanted for i in range(len(terms) - n + 1))
