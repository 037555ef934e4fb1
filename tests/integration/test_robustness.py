"""Hostile but realistic input through the command line: every failure is one line,
every silent drop a named warning (issue 12)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from conftest import write_docs
from twokeys.cli import main

DOCS = {
    "a.md": "# Power\n\n## ZX-4821\n\nUndervoltage on the power supply.\n",
    "b.md": "# Firmware\n\n## ZX-4812\n\nSignature check failed.\n",
}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("kb")
    src = write_docs(root / "docs", DOCS)
    index = str(root / "kb.twokeys")
    code, _, err = run("index", str(src), "--index", index, "--encoder", "test-hash", "-q")
    assert code == 0, err
    return index


@pytest.mark.parametrize(
    ("value", "shown"), [("-60", "-60.0"), ("nan", "nan"), ("inf", "inf"), ("-inf", "-inf")]
)
def test_bad_rrf_k_is_one_line(kb: str, value: str, shown: str) -> None:
    code, out, err = run("search", "power", "--index", kb, "--fusion", "rrf", "--rrf-k", value)
    assert code == 1 and out == ""
    assert err == f"error: rrf.k: must be a finite number >= 0, got {shown}\n"
