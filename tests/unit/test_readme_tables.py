"""Every Markdown table in the README is well formed: a header, a separator, equal rows."""

from __future__ import annotations

import re

from conftest import ROOT

_SEPARATOR = re.compile(r"^\|(\s*:?-+:?\s*\|)+$")


def _cells(line: str) -> list[str]:
    body = line.strip()[1:-1]
    return [c.strip() for c in re.split(r"(?<!\\)\|", body)]


def _tables(text: str) -> list[tuple[int, list[str]]]:
    """(first line number, lines) of each run of table lines outside code fences."""
    tables: list[tuple[int, list[str]]] = []
    current: list[str] = []
    start = 0
    fenced = False
    for number, line in enumerate([*text.splitlines(), ""], 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        is_row = not fenced and line.strip().startswith("|")
        if is_row:
            if not current:
                start = number
            current.append(line)
        elif current:
            tables.append((start, current))
            current = []
    return tables


def test_readme_tables_are_well_formed() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    tables = _tables(text)
    assert len(tables) >= 3
    for start, lines in tables:
        assert len(lines) >= 3, f"README.md:{start}: a table needs a header, a separator, rows"
        assert _SEPARATOR.match(lines[1].strip()), f"README.md:{start + 1}: not a separator"
        width = len(_cells(lines[0]))
        assert len(_cells(lines[1])) == width, f"README.md:{start + 1}: separator width"
        for offset, line in enumerate(lines[2:], 2):
            assert line.strip().endswith("|"), f"README.md:{start + offset}: row not closed"
            cells = _cells(line)
            assert len(cells) == width, (
                f"README.md:{start + offset}: {len(cells)} cells, the header has {width}"
            )


def test_the_check_catches_a_stray_row() -> None:
    bad = "| a | b |\n|---|---|\n| x | y |\n| 1 | 2 | 3 |\n"
    (_, lines) = _tables(bad)[0]
    assert len(_cells(lines[3])) != len(_cells(lines[0]))
