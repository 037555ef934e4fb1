"""Every command and Python example in the README runs as written."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import ROOT
from twokeys.cli import main

pytestmark = pytest.mark.slow

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def test_readme_starts_with_the_two_commands() -> None:
    first = _blocks("console")[0]
    assert first.splitlines()[0].startswith("make demo")
    assert first.splitlines()[1].startswith("make test")


def test_readme_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    commands = [
        line[2:]
        for block in _blocks("console")
        for line in block.splitlines()
        if line.startswith("$ ")
    ]
    assert len(commands) >= 4
    runner = CliRunner()
    for command in commands:
        argv = shlex.split(command)
        assert argv[0] == "twokeys"
        result = runner.invoke(main, argv[1:])
        assert result.exit_code == 0, (command, result.output, result.stderr)
        assert result.stdout.strip(), command
    for code in _blocks("python"):
        exec(compile(code, "README.md", "exec"), {})


def test_readme_eval_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The `text` blocks' eval commands, on the small ADI collection they name."""
    if not (ROOT.parent / "shared" / "data" / "adi").is_dir():
        pytest.skip("../shared/data/adi is not here")
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("TWOKEYS_CACHE", str(tmp_path / "cache"))
    commands = [
        line
        for block in _blocks("text")
        for line in block.splitlines()
        if line.startswith("twokeys eval ")
    ]
    assert commands and all("../shared/data/adi" in c for c in commands)
    runner = CliRunner()
    for command in commands:
        argv = shlex.split(command)
        argv = [a.replace("adi.html", str(tmp_path / "adi.html")) for a in argv]
        result = runner.invoke(main, argv[1:])
        assert result.exit_code == 0, (command, result.output, result.stderr)
        assert "nDCG@10" in result.stdout, command
