"""The definition rule: the spellings a query's name may be defined under, the lines that
define it, the rows kept (one document's, confirmed by the dense run), and the hybrid
ranking a Sphinx page's API entry above a page that uses the name."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from conftest import HashEncoder, hash_index, open_hybrid
from twokeys import open_index
from twokeys.analysis import Analyzer
from twokeys.dense.encoder import Kind
from twokeys.fusion.definitions import (
    defines,
    defining_rows,
    definition_pattern,
    name_spellings,
    outside_code,
)

QUERY = "dict.setdefault insert a key with a default if it is missing"


def spellings_of(query: str) -> tuple[str, ...]:
    analyzer = Analyzer()
    raws = [t.text for t in analyzer.tokens(query)]
    identifiers = [analyzer.query_terms(raw)[0] for raw in raws if any(c in raw for c in ":._")]
    return name_spellings(raws, identifiers, analyzer.query_terms)


def test_a_names_spellings_are_the_token_and_the_shorter_paths_it_ends_with() -> None:
    assert spellings_of(QUERY) == ("dict.setdefault", "setdefault")
    assert spellings_of("std::fmt::DebugStruct helper for Debug") == (
        "std::fmt::DebugStruct",
        "fmt::DebugStruct",
        "DebugStruct",
    )
    assert spellings_of("asyncio.create_subprocess_exec run a program") == (
        "asyncio.create_subprocess_exec",
        "create_subprocess_exec",
    )
    assert spellings_of("insert a key with a default") == ()


def test_a_name_not_written_as_a_path_is_not_read() -> None:
    """A bare name may be a class named beside a member, whose own entry (its
    constructors, lines opening with the class name) is not the member's page."""
    assert spellings_of("create_subprocess_exec run a program") == ()
    analyzer = Analyzer()
    whole = analyzer.query_terms("ComplexMatrix")[0]
    assert name_spellings(["ComplexMatrix", "cumsum"], [whole], analyzer.query_terms) == ()
    assert name_spellings(
        ["ComplexMatrix.cumsum"],
        [analyzer.query_terms("ComplexMatrix.cumsum")[0]],
        analyzer.query_terms,
    ) == ("ComplexMatrix.cumsum", "cumsum")
    analyzer = Analyzer()  # a token whose whole term is not an identifier gives nothing
    assert name_spellings(["pickle.loads", "data"], ["x_y"], analyzer.query_terms) == ()


@pytest.mark.parametrize(
    "text",
    [
        "   .. method:: setdefault(key[, default])",  # reST source (Sphinx)
        ".. py:method:: dict.setdefault(key)",
        "setdefault(key[, default])¶",  # Sphinx HTML's entry term, as html.py renders it
        "Prose first.\n\n  SETDEFAULT (key)",
        "setdefault(key, default=(1, 2)) -> object",  # an annotation after the list
        "setdefault(key):",
        ".. data:: setdefault",
        "setdefault",  # a definition list's term on its own line
    ],
)
def test_a_definition_line_opens_with_the_name(text: str) -> None:
    assert defines(text, definition_pattern(("dict.setdefault", "setdefault")))


@pytest.mark.parametrize(
    "text",
    [
        "setdefault is handy when grouping",  # prose opening with the name
        "Weak<T> does not auto-dereference",
        "    d.setdefault(k, []).append(v)",  # a call on something else
        "simpler and faster than dict.setdefault(key)",  # inside a sentence
        ".. method:: setdefaults(key)",  # another name
        ".. method:: setdefault.extra",
        "setdefaultx(key)",
        "setdefault(key).append(value)",  # calls: the line goes on after the list
        "    setdefault(key, [])?;",
        "setdefault(key, [",  # an argument list the line does not close
        "```\nsetdefault(key)\n```",  # an example
    ],
)
def test_other_lines_do_not_define_it(text: str) -> None:
    assert not defines(text, definition_pattern(("dict.setdefault", "setdefault")))


def test_defining_rows_are_one_documents_and_confirmed_by_the_dense_run() -> None:
    texts = {
        1: "When each key is first seen, dict.setdefault(key) is slower.",
        2: ".. method:: setdefault(key[, default])\n\n   If key is in the dictionary...",
        3: "   .. method:: get(key[, default])",
        4: ".. method:: setdefault(key)\n\n   The mapping's own.",
    }
    documents = {1: "collections", 2: "stdtypes", 3: "stdtypes", 4: "mapping"}
    asked: list[list[int]] = []

    def read(rows: Sequence[int]) -> list[str]:
        asked.append(list(rows))
        return [texts[r] for r in rows]

    def docs(rows: Sequence[int]) -> list[tuple[str, str]]:
        return [(documents[r], "") for r in rows]

    names = ("dict.setdefault", "setdefault")
    assert defining_rows([1, 2, 3], read, docs, names, {2, 3}) == {2}
    # the dense run's first page does not hold the definition: nothing
    assert defining_rows([1, 2, 3], read, docs, names, {1, 3}) == frozenset()
    # two documents define the name: it singles no page out
    assert defining_rows([1, 2, 4], read, docs, names, {2, 4}) == frozenset()
    # the query's words beside the name must be held by the entry
    assert defining_rows([1, 2, 3], read, docs, names, {2}, lambda rows: [False] * len(rows)) == (
        frozenset()
    )
    asked.clear()
    assert defining_rows([1, 2], read, docs, (), {2}) == frozenset()
    assert defining_rows([], read, docs, names, {2}) == frozenset()
    assert asked == []  # nothing read without spellings or rows


def test_an_examples_lines_do_not_define_the_name() -> None:
    example = (
        "A ThreadId can be retrieved from the id method.\n\n## Examples\n\n```\n"
        "let other = thread::spawn(|| {\n    thread::current().id()\n});\n```\n"
    )
    assert definition_pattern(("thread::current", "current")).search(example)
    assert not defines(example, definition_pattern(("thread::current", "current")))
    assert outside_code(example) == (
        "A ThreadId can be retrieved from the id method.\n\n## Examples\n\n"
    )
    after = "~~~~\ncurrent()\n~~~\nstill code\n~~~~\ncurrent()\n"  # a longer run closes
    assert outside_code(after) == "current()\n"
    # a chunk cut inside a block: its closing fence reads as opening one
    assert outside_code("current()\n```\ncurrent()") == "current()"
    texts = {1: example, 2: "current()\n\n   Returns a handle to the calling thread."}
    documents = {1: "thread/struct.ThreadId", 2: "thread/fn.current"}

    def read(rows: Sequence[int]) -> list[str]:
        return [texts[r] for r in rows]

    def docs(rows: Sequence[int]) -> list[tuple[str, str]]:
        return [(documents[r], "") for r in rows]

    names = ("thread::current", "current")
    assert defining_rows([1, 2], read, docs, names, {1, 2}) == {2}
    assert defining_rows([1], read, docs, names, {1}) == frozenset()


class PrefersTheUse(HashEncoder):
    """A dense model that reads "insert a key with a default if it is missing" as the
    ``defaultdict`` page: the query and any text about it share one direction, and the
    API entry is second."""

    def embed_batch(self, texts: Sequence[str], kind: Kind) -> npt.NDArray[np.float32]:
        out = np.full((len(texts), self.dim), 1e-3, np.float32)
        for i, text in enumerate(texts):
            if kind == "query" or "defaultdict" in text:
                out[i, 0] = 1.0
            else:
                out[i, 0], out[i, 1] = 0.5, 1.0
        return out


PAGES = {
    # Sphinx's HTML for an API entry: the page is titled by topic, the entry's term is
    # the signature (its id names the method)
    "stdtypes.html": (
        "<html><head><title>Built-in Types</title></head><body><h1>Built-in Types</h1>"
        '<dl class="py method"><dt class="sig sig-object py" id="dict.setdefault">'
        '<span class="sig-name descname">setdefault</span>(<em>key</em>[, <em>default</em>])'
        '<a class="headerlink" href="#dict.setdefault">¶</a></dt>'
        "<dd><p>If key is in the dictionary, return its value. If not, store it with a "
        "value of default and return default.</p></dd></dl></body></html>"
    ),
    "collections.md": (
        "# defaultdict objects\n\nA defaultdict is a dict subclass: insert a key with a "
        "default when it is missing, simpler and faster than dict.setdefault. A missing "
        "key gets a default if it is missing.\n"
    ),
}


def test_the_definition_ranks_first_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through ``Index.search``: BM25 and the dense model both put the page that uses the
    name first, so without the rule the hybrid does; with it, the page defining it."""
    import twokeys.retrievers.hybrid as hybrid

    encoder = PrefersTheUse()
    path = hash_index(tmp_path, PAGES, encoder)
    with open_hybrid(path, encoder, "dict.setdefault") as (index, bare):
        assert index.search(QUERY, mode="dense", k=1)[0].path == "collections.md"
        assert index.search(QUERY, mode="bm25", k=1)[0].path == "collections.md"
        assert index.search(QUERY, mode="hybrid", k=1)[0].path == "stdtypes.html"
        # a one-word query is left to the bare-name rules: no text is read for it
        monkeypatch.setattr(hybrid, "defining_rows", _unread)
        bare.retrieve("dict.setdefault", 2)
        with pytest.raises(AssertionError, match="read"):
            bare.retrieve(QUERY, 2)
    monkeypatch.setattr(hybrid, "defining_rows", lambda *args: frozenset())
    with open_index(path, encoder=encoder) as index:
        assert index.search(QUERY, mode="hybrid", k=1)[0].path == "collections.md"


def _unread(*args: object) -> frozenset[int]:
    raise AssertionError("read")
