"""Where a PostgreSQL index lives: the location string (no server needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from twokeys.errors import IndexFormatError
from twokeys.store.postgres.location import (
    PostgresLocation,
    index_location,
    is_postgres_location,
)


def test_location_with_and_without_a_schema() -> None:
    loc = PostgresLocation.parse("postgresql://app@db:5433/kb?sslmode=require#tenant_7")
    assert loc.conninfo == "postgresql://app@db:5433/kb?sslmode=require"
    assert loc.schema == "tenant_7"
    assert PostgresLocation.parse("postgres://db/kb").schema == "twokeys"


@pytest.mark.parametrize("name", ["Kb", "7kb", "kb-2", 'a"; DROP TABLE x; --', "x" * 64])
def test_schema_names_that_could_not_be_quoted_safely_are_refused(name: str) -> None:
    with pytest.raises(IndexFormatError, match="schema name"):
        PostgresLocation.parse(f"postgresql://db/kb#{name}")


def test_display_hides_the_password() -> None:
    shown = PostgresLocation.parse("postgresql://app:s3cret@db/kb#x").display()
    assert "s3cret" not in shown and shown == "postgresql://app:***@db/kb#x"
    assert PostgresLocation.parse("postgresql://db/kb").display() == "postgresql://db/kb"


def test_command_line_locations_stay_strings_and_paths_stay_paths() -> None:
    assert index_location("postgresql://db/kb") == "postgresql://db/kb"
    assert index_location("kb.twokeys") == Path("kb.twokeys")
    assert is_postgres_location("postgres://db/kb")
    assert not is_postgres_location(Path("postgresql:/db/kb"))
    assert not is_postgres_location("kb.twokeys")
