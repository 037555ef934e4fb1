"""Options that several commands take are defined once, with the library's defaults."""

from __future__ import annotations

import ast
import inspect
from collections import Counter

import click
import pytest

from conftest import ROOT
from twokeys.cli import main
from twokeys.evaluation.answers import evaluate_answers
from twokeys.llm.http import DEFAULT_TIMEOUT
from twokeys.rag.ask import AskOptions
from twokeys.registry import resolve
from twokeys.server.config import HTTP_PORT, LOOPBACK, MCP_PORT, ServerConfig

SHARED = ("--llm", "--base-url", "--timeout", "--budget", "--host", "--port", "--api-key-file")


def _option(command: str, name: str) -> click.Option:
    cmd = main.get_command(click.Context(main), command)
    assert cmd is not None, command
    found = [p for p in cmd.params if isinstance(p, click.Option) and name in p.opts]
    assert len(found) == 1, (command, name)
    return found[0]


def test_shared_options_are_defined_in_one_place_each() -> None:
    """Counts ``click.option("--name", ...)`` calls over the source tree."""
    defined: Counter[str] = Counter()
    for file in sorted((ROOT / "src" / "twokeys").rglob("*.py")):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "option"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                defined[str(node.args[0].value)] += 1
    assert {name: defined[name] for name in SHARED} == dict.fromkeys(SHARED, 1)


@pytest.mark.parametrize("name", ["--llm", "--base-url", "--timeout"])
def test_model_options_are_the_same_everywhere(name: str) -> None:
    options = [_option(c, name) for c in ("ask", "eval-answers", "serve", "mcp")]
    first = options[0]
    for other in options[1:]:
        assert (other.opts, other.envvar, other.default, other.help) == (
            first.opts,
            first.envvar,
            first.default,
            first.help,
        )
    assert _option("ask", "--timeout").default == DEFAULT_TIMEOUT


def test_defaults_come_from_the_library() -> None:
    ask = AskOptions()
    assert _option("ask", "--mode").default == _option("eval-answers", "--mode").default == ask.mode
    assert _option("ask", "-k").default == ask.k
    assert _option("ask", "--budget").default == ask.budget.total
    assert _option("ask", "--prompt-style").default == ask.prompt_style
    budget = inspect.signature(evaluate_answers).parameters["budget"].default
    assert _option("eval-answers", "--budget").default == budget
    assert _option("serve", "--host").default == _option("mcp", "--host").default == LOOPBACK
    assert _option("serve", "--port").default == HTTP_PORT
    assert _option("mcp", "--port").default == MCP_PORT
    assert _option("serve", "--model-name").default == ServerConfig().model_name


@pytest.mark.parametrize("name", sorted(type(main).LAZY))  # type: ignore[attr-defined]
def test_a_lazy_command_is_listed_with_its_own_help(name: str) -> None:
    """``twokeys --help`` lists the commands of other modules without importing them,
    from a copy of their help's first paragraph: it must be theirs."""
    path, first_paragraph = type(main).LAZY[name]  # type: ignore[attr-defined]
    command = main.get_command(click.Context(main), name)
    assert command is resolve(path)
    assert command.help is not None
    assert " ".join(command.help.split("\n\n")[0].split()) == first_paragraph
    assert not command.hidden
    assert name in main.list_commands(click.Context(main))
