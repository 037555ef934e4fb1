"""Commands a corpus documents (code lines), and query runs naming a subcommand they lack."""

from __future__ import annotations

from twokeys.analysis import Analyzer
from twokeys.rag.commands import (
    Command,
    code_lines,
    commands,
    heads,
    query_runs,
    unseen_subcommand,
)

A = Analyzer()

PAGE = """Storage > How to fix it
Remove old bundles with `hubctl diag list` first.

```sh
# a comment line is no command
hubctl diag purge --older-than 14d
hubctl net history --days 3 > net-history.txt
hubctl log --since 10m | grep rail_in
flatpak install flathub com.lumatek.Studio
hubctl diag create --note "for support ticket"
```

```ini
partition = monthly
```
"""


def _known(text: str = PAGE) -> list[Command]:
    return [c for line in code_lines(text) for c in commands(line, A)]


def _unseen(query: str, known: list[Command] | None = None) -> list[str]:
    known = _known() if known is None else known
    found = []
    for run in query_runs(query, A):
        for start in heads(run):
            hit = unseen_subcommand(run, start, known)
            if hit is not None:
                found.append(hit)
    return found


def _show(command: Command) -> str:
    return " ".join(f"[{w.text}]" if w.argument else w.text for w in command)


def test_code_lines_are_fenced_lines_and_inline_spans() -> None:
    lines = code_lines(PAGE)
    assert lines[0] == "hubctl diag list"
    assert "hubctl diag purge --older-than 14d" in lines
    assert not any(line.startswith("#") for line in lines)
    assert "Remove old bundles" not in " ".join(lines)
    # a chunk that starts inside a block: which lines are code cannot be told
    cut = "hubctl diag list\n```\nThen restart the Hub with `hubctl reboot`."
    assert code_lines(cut) == ["hubctl reboot"]


def test_a_code_line_is_cut_into_commands_with_their_arguments() -> None:
    shown = [_show(c) for c in _known()]
    assert "hubctl diag purge [--older-than] [14d]" in shown
    assert "hubctl net history [--days] [3]" in shown  # the redirection is no part of it
    assert "hubctl log [--since] [10m]" in shown and "grep [rail_in]" in shown
    assert 'hubctl diag create [--note] ["for support ticket"]' in shown
    assert "partition" in shown  # a setting's name, not its value
    # a span whose command words hold a stopword is prose (a link's text, a glossary
    # term); a command's stopwords come after a flag
    assert commands("store passwords in a recoverable format", A) == []
    assert [_show(c) for c in commands("hubctl notify test --to me", A)] == [
        "hubctl notify test [--to] me"
    ]


def test_query_runs_stop_at_stopwords_and_punctuation() -> None:
    runs = [" ".join(w.text for w in r) for r in query_runs("What does hubctl diag upload do?", A)]
    assert runs == ["hubctl diag upload"]
    runs = [" ".join(w.text for w in r) for r in query_runs("Is qwen2.5:14b fast, or slow?", A)]
    assert runs == ["qwen2.5:14b fast"]


def test_a_subcommand_the_pages_never_give_is_named() -> None:
    assert _unseen("What does hubctl diag upload do?") == ["hubctl diag upload"]
    assert _unseen("What does hubctl net reset do?") == ["hubctl net reset"]


def test_documented_commands_and_the_prose_after_them_are_not() -> None:
    assert _unseen("What does hubctl diag purge do?") == []
    assert _unseen("What is hubctl diag purge used for?") == []  # past the command words
    assert _unseen("What does hubctl diag create --note do?") == []
    assert _unseen("What does hubctl net history --days 3 write to the file?") == []
    assert _unseen("Does flatpak install studio?") == []  # a word further in the command
    assert _unseen("What does hubctl diag --force do?") == []  # flags are identifiers' work
    assert _unseen("What is a monthly partition?") == []  # no run starts at a head
    # only the head in common: "flatpak" is a command, "flatpak remove" may be prose
    assert _unseen("Can flatpak remove the old Studio?") == []
    # a whole command goes on as prose
    known = _known("`hubctl radio status zigbee`")
    assert _unseen("What does hubctl radio status zigbee report?", known) == []
    assert _unseen("What does hubctl radio status thread report?", known) == [
        "hubctl radio status thread"
    ]
