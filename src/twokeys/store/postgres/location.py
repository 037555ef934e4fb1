"""Where a PostgreSQL index lives: ``postgresql://user@host:port/db[#schema]``.

The part before ``#`` is a libpq connection URI, passed as it is (so every libpq
parameter works: ``?sslmode=require``, ``?application_name=...``); the optional
``#schema`` names the PostgreSQL schema holding the index (default ``twokeys``), so
one database can hold several indexes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from twokeys.errors import IndexFormatError

SCHEMES = ("postgresql://", "postgres://")
DEFAULT_SCHEMA = "twokeys"
_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def check_name(name: str) -> str:
    """A schema name that is safe to quote into SQL as it is."""
    if not _NAME.fullmatch(name):
        raise IndexFormatError(
            f"postgres schema name {name!r}: use lower-case letters, digits and _ "
            "(at most 63, not starting with a digit)"
        )
    return name


def is_postgres_location(location: str | Path) -> bool:
    """Whether ``location`` names a PostgreSQL index rather than a directory."""
    return isinstance(location, str) and location.startswith(SCHEMES)


def index_location(value: str | Path) -> str | Path:
    """A command line's index: a ``postgresql://`` location as it is, else a path."""
    text = str(value)
    return text if is_postgres_location(text) else Path(text)


@dataclass(frozen=True)
class PostgresLocation:
    conninfo: str
    schema: str = DEFAULT_SCHEMA

    @classmethod
    def parse(cls, location: str) -> PostgresLocation:
        conninfo, _, schema = location.partition("#")
        return cls(conninfo, check_name(schema or DEFAULT_SCHEMA))

    def display(self) -> str:
        """The location without a password, for messages."""
        head, at, tail = self.conninfo.partition("@")
        if at and ":" in head.split("//", 1)[-1]:
            scheme, _, user = head.partition("//")
            head = f"{scheme}//{user.split(':', 1)[0]}:***"
        shown = f"{head}{at}{tail}"
        return shown if self.schema == DEFAULT_SCHEMA else f"{shown}#{self.schema}"
