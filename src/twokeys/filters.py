"""Metadata filters: which documents a search may return, applied before top-k.

A filter is written as one string (``search --filter``, ``eval --filter``) or built as a
:class:`Filter`; a request's filters must all hold (AND):

=====================  ===============================================================
``path:policies/*``    the document's path matches the glob (``*`` also crosses ``/``)
``path:policies/``     the path starts with the prefix (a value without ``* ? [``)
``kind:markdown,html`` the file kind is one of these
``id:a.md,b.md``       the document id is one of these
``lang=en``            the front-matter (or record metadata) field equals the value;
                       a list field holds it
``version>=2``         ``>=``, ``<=``, ``>``, ``<``: a numeric range, or a date range
``updated<2024-06-01`` when both sides are ISO dates (``YYYY-MM-DD[ HH:MM[:SS]]``)
=====================  ===============================================================

Conditions combine within one string: ``a | b`` holds when either holds (OR), and
``!a`` (or ``not a``) when ``a`` does not (NOT), e.g. ``path:guides/* | path:faq/*``,
``!kind:html``, ``!path:drafts/ | reviewed=yes``; ``|`` cannot appear inside a value.

A document whose field is missing, or not comparable with the value, does not match
(so ``!lang=en`` matches a document without ``lang``).
The engine turns the filters into the set of chunk rows they allow
(:func:`allowed_rows`), and every retriever ranks only those, so a filtered search
still returns ``k`` hits when ``k`` chunks match.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import Any

import numpy as np
import numpy.typing as npt

from twokeys.errors import ConfigError
from twokeys.types import DocumentInfo

OPERATORS = ("glob", "prefix", "in", "=", ">=", "<=", ">", "<", "or")
_RANGE = (">=", "<=", ">", "<")
_BUILT_IN = ("path", "kind", "id")
_NOT = re.compile(r"^\s*(?:!|not\s+)", re.I)
_FIELD = re.compile(r"^(?P<field>[A-Za-z_][\w.-]*)\s*(?P<op>>=|<=|=|>|<|:)\s*(?P<value>.*)$")


@dataclass(frozen=True)
class Filter:
    """One condition on a document: ``field`` (``path``, ``kind``, ``id`` or a metadata
    field), an operator from :data:`OPERATORS`, and the value(s)."""

    field: str
    op: str
    value: str | tuple[str, ...]
    negate: bool = False  # holds when the condition does not
    alternatives: tuple[Filter, ...] = ()  # op "or": holds when any of these holds

    def __post_init__(self) -> None:
        if self.op not in OPERATORS:
            raise ConfigError(f"filter: operator {self.op!r} is not one of {', '.join(OPERATORS)}")
        if self.op == "or":
            if len(self.alternatives) < 2:
                raise ConfigError("filter: 'or' needs two or more alternatives")
            return
        if not self.field:
            raise ConfigError("filter: no field named")
        if self.op in ("glob", "prefix") and self.field != "path":
            raise ConfigError(f"filter: {self.op} applies to path only, not to {self.field}")
        if (self.op == "in") != isinstance(self.value, tuple):
            raise ConfigError(f"filter: {self.field}: 'in' takes a tuple of values")
        if isinstance(self.value, tuple) and not self.value:
            raise ConfigError(f"filter: {self.field}: no values")

    @classmethod
    def parse(cls, text: str) -> Filter:
        """A filter from its string form (see the module doc); ConfigError naming it."""
        parts = [p.strip() for p in text.split("|")]
        if len(parts) > 1:
            if not all(parts):
                raise ConfigError(f"filter {text!r}: an empty side of '|'")
            return cls("", "or", (), alternatives=tuple(cls.parse(p) for p in parts))
        negated = _NOT.match(text)
        if negated is not None:
            inner = cls.parse(text[negated.end() :])
            return replace(inner, negate=not inner.negate)
        return cls._condition(text)

    @classmethod
    def _condition(cls, text: str) -> Filter:
        match = _FIELD.match(text.strip())
        if match is None:
            raise ConfigError(
                f"filter {text!r}: expected path:GLOB, kind:K, id:ID, FIELD=VALUE or "
                "FIELD>=VALUE (also <=, >, <)"
            )
        field, op, value = match["field"], match["op"], match["value"].strip()
        if not value:
            raise ConfigError(f"filter {text!r}: no value")
        if op == ":":
            if field == "path":
                glob = any(c in value for c in "*?[")
                return cls("path", "glob" if glob else "prefix", value)
            if field in ("kind", "id"):
                return cls(field, "in", tuple(v.strip() for v in value.split(",") if v.strip()))
            raise ConfigError(
                f"filter {text!r}: '{field}:' is not a filter; use path:, kind:, id: or "
                f"{field}=VALUE for a metadata field"
            )
        if op in _RANGE and _comparable(value) is None:
            raise ConfigError(f"filter {text!r}: {op} needs a number or an ISO date")
        return cls(field, op, value)

    def matches(self, doc: DocumentInfo) -> bool:
        return self._holds(doc) != self.negate

    def _holds(self, doc: DocumentInfo) -> bool:
        if self.op == "or":
            return any(a.matches(doc) for a in self.alternatives)
        if self.field == "path":
            if self.op == "prefix":
                return doc.path.startswith(str(self.value))
            if self.op == "glob":
                return fnmatchcase(doc.path, str(self.value))
        if self.field in ("kind", "id") and self.op == "in":
            return (doc.kind if self.field == "kind" else doc.id) in self.value
        return _matches_metadata(doc.metadata, self)

    def __str__(self) -> str:
        return f"!{self._text()}" if self.negate else self._text()

    def _text(self) -> str:
        if self.op == "or":
            return " | ".join(str(a) for a in self.alternatives)
        if self.op in ("glob", "prefix"):
            return f"path:{self.value}"
        if self.op == "in":
            return f"{self.field}:{','.join(self.value)}"
        return f"{self.field}{self.op}{self.value}"


def parse_filters(texts: Iterable[str | Filter]) -> tuple[Filter, ...]:
    """Filters from strings (or filters), in order."""
    return tuple(t if isinstance(t, Filter) else Filter.parse(t) for t in texts)


def allowed_rows(
    documents: Sequence[DocumentInfo], filters: Sequence[Filter], n_rows: int
) -> npt.NDArray[np.bool_]:
    """A mask over the index's chunk rows: the rows of the documents every filter allows."""
    mask = np.zeros(n_rows, np.bool_)
    for doc in documents:
        if all(f.matches(doc) for f in filters):
            mask[doc.first_row : doc.first_row + doc.n_chunks] = True
    return mask


def _matches_metadata(metadata: Mapping[str, Any], f: Filter) -> bool:
    value = _lookup(metadata, f.field)
    if value is None:
        return False
    if f.op == "=":
        if isinstance(value, list):
            return any(_equal(v, str(f.value)) for v in value)
        return _equal(value, str(f.value))
    if f.op == "in":
        return any(_equal(value, v) for v in f.value)
    left, right = _comparable(value), _comparable(str(f.value))
    if isinstance(left, float) and isinstance(right, float):
        return _compare(left, right, f.op)
    if isinstance(left, datetime.datetime) and isinstance(right, datetime.datetime):
        return _compare(left, right, f.op)
    return False


def _compare(left: Any, right: Any, op: str) -> bool:
    if op == ">=":
        return bool(left >= right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    return bool(left < right)


def _lookup(metadata: Mapping[str, Any], field: str) -> Any:
    """``metadata[field]``, or a nested field by dots (``owner.team``) if there is none."""
    if field in metadata:
        return metadata[field]
    value: Any = metadata
    for part in field.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _equal(value: Any, wanted: str) -> bool:
    if isinstance(value, bool):
        return wanted.lower() == str(value).lower()
    if isinstance(value, int | float):
        number = _number(wanted)
        return number is not None and float(value) == number
    return str(value) == wanted


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _comparable(value: Any) -> float | datetime.datetime | None:
    """A number, or an ISO date / datetime (as a naive datetime), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        return None
    number = _number(value)
    if number is not None:
        return number
    try:
        moment = datetime.datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return moment.replace(tzinfo=None)
