"""Source code, read by symbol: one segment per function, class and method.

A code file is parsed with tree-sitter (the ``twokeys[code]`` extra: the ``tree-sitter``
bindings and one grammar wheel per language, compiled in, nothing downloaded at run
time) and cut into :class:`~twokeys.types.Segment` values that cover the whole text in
order. Each definition (function, class, method, struct, trait, impl, interface,
namespace, shell function) is a segment whose :class:`~twokeys.types.Locator` carries
its line range and its symbol path ``module.Class.method`` (the module is the file's
stem; a package's ``__init__.py`` is named by its folder). The comments directly above
a definition (and Rust's ``#[...]`` attributes) belong to it, as do Python's decorators
and docstrings, which the grammar already puts inside it. A class with methods is cut
into its own lines (the header, docstring, attributes: symbol ``module.Class``) and one
segment per method; code between definitions at module level is a segment of its own,
named by the module.

A ``.h`` file that does not parse as C but does as C++ is read as C++. A file that does
not parse cleanly, or whose language has no grammar installed, is cut
into windows of :data:`WINDOW_LINES` lines instead, with a warning that says why.

Which parser: the per-language grammar wheels over ``tree-sitter-language-pack`` (which
downloads its grammars at first use, so fails offline) and ``tree-sitter-languages``
(pinned to tree-sitter 0.21, parsing at the same speed); figures in
``benchmarks/RESULTS.md`` ("Code parsers").
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING, Final

from twokeys.ingest.base import OnSkip, SkippedFile, SourceFile
from twokeys.types import Document, Locator, Segment

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

#: lines per segment where a file is read without a parser
WINDOW_LINES: Final = 60
EXTRA_HINT: Final = "pip install 'twokeys[code]'"

#: file suffix -> language
LANGUAGES: Final[Mapping[str, str]] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".sh": "bash",
    ".bash": "bash",
}
SUFFIXES: Final[tuple[str, ...]] = tuple(LANGUAGES)

_COMMENTS: Final = frozenset({"comment", "line_comment", "block_comment", "attribute_item"})
# what is left of a container around its members that is not worth a segment of its own
_PUNCTUATION: Final = frozenset("{}();,")


@dataclass(frozen=True)
class _Grammar:
    """How one language's tree names its definitions."""

    module: str  # the grammar wheel's module
    function: str = "language"  # its function that returns the language
    #: definitions: node type -> the field holding the body whose members are split out
    #: ("" for a definition read whole)
    definitions: Mapping[str, str] = ()  # type: ignore[assignment]
    #: nodes that wrap a definition (a decorator, ``export``, ``template<...>``)
    wrappers: frozenset[str] = frozenset()


_JS_DEFINITIONS: Final = {
    "function_declaration": "",
    "generator_function_declaration": "",
    "class_declaration": "body",
    "abstract_class_declaration": "body",
    "method_definition": "",
    "lexical_declaration": "",
    "variable_declaration": "",
    "interface_declaration": "",
    "type_alias_declaration": "",
    "enum_declaration": "",
    "internal_module": "body",
    "module": "body",
}
_JS_WRAPPERS: Final = frozenset({"export_statement", "expression_statement"})
_C_DEFINITIONS: Final = {"function_definition": "", "struct_specifier": "", "type_definition": ""}

_GRAMMARS: Final[Mapping[str, _Grammar]] = {
    "python": _Grammar(
        "tree_sitter_python",
        definitions={"function_definition": "", "class_definition": "body"},
        wrappers=frozenset({"decorated_definition"}),
    ),
    "javascript": _Grammar(
        "tree_sitter_javascript", definitions=_JS_DEFINITIONS, wrappers=_JS_WRAPPERS
    ),
    "typescript": _Grammar(
        "tree_sitter_typescript",
        "language_typescript",
        definitions=_JS_DEFINITIONS,
        wrappers=_JS_WRAPPERS,
    ),
    "tsx": _Grammar(
        "tree_sitter_typescript", "language_tsx", definitions=_JS_DEFINITIONS, wrappers=_JS_WRAPPERS
    ),
    "go": _Grammar(
        "tree_sitter_go",
        definitions={"function_declaration": "", "method_declaration": "", "type_declaration": ""},
    ),
    "rust": _Grammar(
        "tree_sitter_rust",
        definitions={
            "function_item": "",
            "struct_item": "",
            "enum_item": "",
            "union_item": "",
            "type_item": "",
            "macro_definition": "",
            "trait_item": "body",
            "impl_item": "body",
            "mod_item": "body",
        },
    ),
    "java": _Grammar(
        "tree_sitter_java",
        definitions={
            "class_declaration": "body",
            "interface_declaration": "body",
            "enum_declaration": "body",
            "record_declaration": "body",
            "method_declaration": "",
            "constructor_declaration": "",
        },
    ),
    "c": _Grammar("tree_sitter_c", definitions=_C_DEFINITIONS),
    "cpp": _Grammar(
        "tree_sitter_cpp",
        definitions={
            **_C_DEFINITIONS,
            "class_specifier": "body",
            "struct_specifier": "body",
            "namespace_definition": "body",
        },
        wrappers=frozenset({"template_declaration"}),
    ),
    "bash": _Grammar("tree_sitter_bash", definitions={"function_definition": ""}),
}


def language_of(path: str) -> str | None:
    """The language of a file, by its suffix (None: not a code file)."""
    return LANGUAGES.get(os.path.splitext(path)[1].lower())


def read(source: SourceFile, report: OnSkip) -> Iterator[Document]:
    """The one document of a code file, cut by symbol (a skip or warning, reported)."""
    import twokeys.ingest.readers.text as text  # decoded as any text file is

    for doc in text.read(SourceFile(source.path, source.rel, "text"), report):
        document, warning = read_code(doc)
        if warning:
            report(SkippedFile(source.rel, warning, kept=True))
        yield document


def read_code(doc: Document) -> tuple[Document, str]:
    """``doc`` (a decoded code file) with its symbol segments, kind ``code`` and its
    path as title; and a warning ("" if none) where it was cut into line windows."""
    language = language_of(doc.path) or ""
    segments, warning = code_segments(doc.text, doc.path, language)
    metadata = {**doc.metadata, "language": language}
    read = replace(doc, kind="code", title=doc.path, segments=segments, metadata=metadata)
    return read, warning


def code_segments(text: str, path: str, language: str) -> tuple[tuple[Segment, ...], str]:
    """The segments of ``text``, the source of ``path`` in ``language``, and a warning
    ("" if none) where it was cut into line windows instead of symbols."""
    try:
        parser = _parser(language)
    except ImportError as exc:
        why = f"no {language or 'known'} grammar ({exc.name or exc}; {EXTRA_HINT})"
        return line_windows(text, module_name(path)), f"{why}; indexed by line windows"
    source = text.encode("utf-8", "surrogatepass")
    tree = parser.parse(source)
    if tree.root_node.has_error and language == "c" and path.lower().endswith(".h"):
        with contextlib.suppress(ImportError):  # a C++ header, perhaps
            cpp_tree = _parser("cpp").parse(source)
            if not cpp_tree.root_node.has_error:
                tree, language = cpp_tree, "cpp"
    if tree.root_node.has_error:
        row = _first_error_row(tree.root_node)
        where = f" (line {row + 1})" if row is not None else ""
        return (
            line_windows(text, module_name(path)),
            f"does not parse as {language}{where}; indexed by line windows",
        )
    spans = list(_definitions(tree.root_node, (), _GRAMMARS[language], source))
    return _segments(text, source, spans, module_name(path)), ""


def module_name(path: str) -> str:
    """The first part of a file's symbol paths: its stem (``pool`` for ``src/db/pool.py``),
    or its folder's name for a package's ``__init__``/``mod``/``index`` file."""
    folder, name = os.path.split(path.replace("\\", "/"))
    stem = os.path.splitext(name)[0]
    if stem in ("__init__", "mod", "index") and folder:
        return os.path.basename(folder)
    return stem


def line_windows(text: str, module: str, size: int = WINDOW_LINES) -> tuple[Segment, ...]:
    """``text`` cut into windows of ``size`` lines (the reading without a parser)."""
    segments: list[Segment] = []
    lines = text.splitlines(keepends=True)
    at = 0
    for first in range(0, len(lines), size):
        block = lines[first : first + size]
        end = at + sum(map(len, block))
        if block and "".join(block).strip():
            last = first + len(block)
            locator = Locator(line_start=first + 1, line_end=last, symbol=module)
            segments.append(Segment(at, end, locator))
        elif segments:  # blank lines: the previous window's
            segments[-1] = replace(segments[-1], end=end)
        at = end
    return tuple(segments)


@cache
def _parser(language: str) -> Parser:
    grammar = _GRAMMARS.get(language)
    if grammar is None:
        raise ImportError(f"no grammar for {language!r}", name=language or None)
    from tree_sitter import Language, Parser

    module = importlib.import_module(grammar.module)
    return Parser(Language(getattr(module, grammar.function)()))


def _first_error_row(node: Node) -> int | None:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.is_error or current.is_missing:
            return int(current.start_point.row)
        stack.extend(reversed([c for c in current.children if c.has_error or c.is_missing]))
    return None


@dataclass(frozen=True, slots=True)
class _Span:
    """A definition's bytes ``[start, end)``, its symbol path and nesting depth."""

    start: int
    end: int
    symbol: tuple[str, ...]
    depth: int


def _definitions(
    body: Node, scope: tuple[str, ...], grammar: _Grammar, source: bytes
) -> Iterator[_Span]:
    """The definitions among ``body``'s children (a module, a class body), their
    comments above them included, and the members of each container, depth first."""
    children = body.children
    for i, child in enumerate(children):
        found = _definition(child, grammar)
        if found is None:
            continue
        node, member_field = found
        name = _name(node, source)
        if not name:
            continue
        start = child.start_byte
        row = child.start_point.row
        # the comments right above it; before a body's first member, they may sit just
        # before the body (Python puts a comment after ``class X:`` in the class)
        above = itertools.chain((children[j] for j in range(i - 1, -1, -1)), _siblings_before(body))
        for prev in above:
            if prev.type not in _COMMENTS or prev.end_point.row < row - 1:
                break
            start, row = prev.start_byte, prev.start_point.row
        symbol = (*scope, *name.split("."))
        yield _Span(start, child.end_byte, symbol, len(scope))
        members = node.child_by_field_name(member_field) if member_field else None
        if members is not None:
            yield from _definitions(members, symbol, grammar, source)


def _siblings_before(node: Node) -> Iterator[Node]:
    prev = node.prev_sibling
    while prev is not None:
        yield prev
        prev = prev.prev_sibling


def _definition(node: Node, grammar: _Grammar) -> tuple[Node, str] | None:
    """The definition ``node`` is or wraps, and its members' field; None for other code."""
    if node.type in grammar.wrappers:
        inner = node.child_by_field_name("declaration") or node.child_by_field_name("definition")
        candidates = [inner] if inner is not None else node.named_children
        for candidate in candidates:
            if candidate.type in grammar.definitions:
                return candidate, grammar.definitions[candidate.type]
        return None
    if node.type in grammar.definitions:
        return node, grammar.definitions[node.type]
    return None


def _text(node: Node | None, source: bytes) -> str:
    if node is None:
        return ""
    return source[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _name(node: Node, source: bytes) -> str:
    """A definition's name (``Type.method`` for a Go method): "" for a node that defines
    nothing by name (a ``const x = 1``, an anonymous struct)."""
    kind = node.type
    namer = _NAMERS.get(kind)
    if namer is not None:
        return namer(node, source)
    return _text(node.child_by_field_name("name"), source)


def _declared_function(node: Node, source: bytes) -> str:
    """``const f = () => ...``: the name of the first function or class declared."""
    for declarator in node.named_children:
        if declarator.type != "variable_declarator":
            continue
        value = declarator.child_by_field_name("value")
        if value is not None and value.type in {
            "arrow_function",
            "function_expression",
            "function",
            "generator_function",
            "class",
        }:
            return _text(declarator.child_by_field_name("name"), source)
    return ""


def _c_function(node: Node, source: bytes) -> str:
    """The name inside a C/C++ declarator chain (``*get``, ``Foo::bar``)."""
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type not in {
        "identifier",
        "field_identifier",
        "qualified_identifier",
        "destructor_name",
        "operator_name",
        "type_identifier",
    }:
        declarator = declarator.child_by_field_name("declarator")
    return _text(declarator, source).replace("::", ".")


def _c_type(node: Node, source: bytes) -> str:
    """A ``typedef``'s name, where it defines a struct, union or enum with a body."""
    inner = node.child_by_field_name("type")
    if inner is None or inner.child_by_field_name("body") is None:
        return ""
    return _text(node.child_by_field_name("declarator"), source)


def _c_struct(node: Node, source: bytes) -> str:
    if node.child_by_field_name("body") is None:
        return ""
    return _text(node.child_by_field_name("name"), source)


def _go_method(node: Node, source: bytes) -> str:
    receiver = node.child_by_field_name("receiver")
    owner = ""
    stack = [receiver] if receiver is not None else []
    while stack and not owner:
        current = stack.pop()
        if current.type == "type_identifier":
            owner = _text(current, source)
        stack.extend(reversed(current.named_children))
    name = _text(node.child_by_field_name("name"), source)
    return f"{owner}.{name}" if owner else name


def _go_type(node: Node, source: bytes) -> str:
    for spec in node.named_children:
        if spec.type in {"type_spec", "type_alias"}:
            return _text(spec.child_by_field_name("name"), source)
    return ""


def _rust_impl(node: Node, source: bytes) -> str:
    target = node.child_by_field_name("type")
    while target is not None and target.type not in {"type_identifier", "scoped_type_identifier"}:
        target = target.child_by_field_name("type") or (
            target.named_children[0] if target.named_children else None
        )
    return _text(target, source).replace("::", ".")


def _cpp_namespace(node: Node, source: bytes) -> str:
    return _text(node.child_by_field_name("name"), source).replace("::", ".") or "(anonymous)"


_NAMERS: Final[Mapping[str, Callable[[Node, bytes], str]]] = {
    "lexical_declaration": _declared_function,
    "variable_declaration": _declared_function,
    "function_definition": lambda node, source: (
        _text(node.child_by_field_name("name"), source) or _c_function(node, source)
    ),
    "type_definition": _c_type,
    "struct_specifier": _c_struct,
    "class_specifier": _c_struct,
    "method_declaration": lambda node, source: (
        _go_method(node, source)
        if node.child_by_field_name("receiver") is not None
        else _text(node.child_by_field_name("name"), source)
    ),
    "type_declaration": _go_type,
    "impl_item": _rust_impl,
    "namespace_definition": _cpp_namespace,
}


def _segments(text: str, source: bytes, spans: list[_Span], module: str) -> tuple[Segment, ...]:
    """Cut ``text`` at the definitions' edges: each piece belongs to the innermost
    definition that holds it (the module where none does); blank pieces and leftover
    braces join the piece before. One sweep over the edges: a file of thousands of
    definitions costs no more per definition than a small one."""
    edges = _CharOffsets(text, source, [x for s in spans for x in (s.start, s.end)])
    char_spans = [(edges.line_start(s.start), edges.line_end(s.end)) for s in spans]
    cuts = sorted({0, len(text)} | {x for span in char_spans for x in span})
    # spans nest (a method inside its class): the innermost open one owns a piece
    order = sorted(range(len(spans)), key=lambda i: (char_spans[i][0], -char_spans[i][1]))
    pieces: list[tuple[int, int, int]] = []  # (start, end, owning span index or -1)
    stack: list[int] = []
    j = 0
    for a, b in itertools.pairwise(cuts):
        while j < len(order) and char_spans[order[j]][0] <= a:
            while stack and char_spans[stack[-1]][1] <= a:
                stack.pop()
            if char_spans[order[j]][1] > a:
                stack.append(order[j])
            j += 1
        while stack and char_spans[stack[-1]][1] <= a:
            stack.pop()
        owner = stack[-1] if stack else -1
        if pieces and (
            pieces[-1][2] == owner
            or not text[a:b].strip()
            or set("".join(text[a:b].split())) <= _PUNCTUATION
        ):
            pieces[-1] = (pieces[-1][0], b, pieces[-1][2])
        else:
            pieces.append((a, b, owner))
    if len(pieces) > 1 and not text[pieces[0][0] : pieces[0][1]].strip():
        first, second = pieces[0], pieces[1]  # leading blank lines: the next piece's
        pieces[:2] = [(first[0], second[1], second[2])]
    segments = []
    lines = _LineCounter(text)
    for start, end, owner in pieces:
        symbol = ".".join((module, *spans[owner].symbol)) if owner >= 0 else module
        body = text[start:end]
        lead = len(body) - len(body.lstrip())
        tail = max(len(body.rstrip()), lead + 1)
        first_line = lines.line_of(start + lead)
        last_line = max(first_line, lines.line_of(start + tail - 1))
        locator = Locator(line_start=first_line, line_end=last_line, symbol=symbol)
        segments.append(Segment(start, end, locator))
    return tuple(segments)


class _LineCounter:
    """1-based line numbers of offsets asked for in increasing order (mostly)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._at = 0
        self._line = 1

    def line_of(self, offset: int) -> int:
        if offset < self._at:
            self._at, self._line = 0, 1
        self._line += self.text.count("\n", self._at, offset)
        self._at = offset
        return self._line


class _CharOffsets:
    """Byte offsets of the UTF-8 source as offsets into the text, snapped to lines: a
    definition starts at its line's start and ends after its line's newline, where only
    blanks lie between. The offsets used are converted at once, in one pass."""

    def __init__(self, text: str, source: bytes, offsets: list[int]) -> None:
        self.text = text
        self._chars: dict[int, int] | None = None
        if len(source) != len(text):  # not ASCII: count the characters before each
            self._chars = {}
            at = chars = 0
            for byte in sorted(set(offsets)):
                chars += len(source[at:byte].decode("utf-8", "surrogatepass"))
                self._chars[byte] = chars
                at = byte

    def char(self, byte: int) -> int:
        return byte if self._chars is None else self._chars[byte]

    def line_start(self, byte: int) -> int:
        at = self.char(byte)
        before = self.text.rfind("\n", 0, at) + 1
        return before if not self.text[before:at].strip() else at

    def line_end(self, byte: int) -> int:
        at = self.char(byte)
        newline = self.text.find("\n", at)
        after = len(self.text) if newline < 0 else newline + 1
        return after if not self.text[at:after].strip() else at
