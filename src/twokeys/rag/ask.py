"""Answer with evidence: decompose -> retrieve each part -> pack fairly -> generate or extract.

import twokeys
from twokeys.llm import from_spec
from twokeys.rag import ask

with twokeys.open_index("kb.twokeys") as kb:
    answer = ask(kb, "What does error code ZX-4821 mean?")            # extractive
    answer = ask(kb, "...", llm=from_spec("ollama:qwen2.5:7b"))        # generated
    print(answer.text)
    for source in answer.sources:
        print(source.number, source.path, source.heading)

:func:`prepare` does everything up to the prompt (so a caller can show it first) and
:func:`generate` runs the model on it, or quotes the best sentences when there is none.
Tokens are counted with the model's tokenizer when the backend exposes it, else with
:func:`~twokeys.chunking.approx_token_counter`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from twokeys.chunking import TokenCounter, approx_token_counter
from twokeys.engine import MODES, Index
from twokeys.errors import ConfigError
from twokeys.llm.base import LLM, Prompt
from twokeys.rag.decompose import DEFAULT_MAX_PARTS, decompose, decompose_with_llm
from twokeys.rag.extractive import extract
from twokeys.rag.packing import Budget, PackedContext, SubQueryHits, pack
from twokeys.rag.prompt import Template, question_text

DECOMPOSE = ("rules", "llm", "none")
PROMPT_STYLES = ("auto", "chat", "completion")
APPROXIMATE = "approximate (ceil(len/6) per word + 1 per punctuation run)"
NO_EVIDENCE = "No passage in the index matches this question, so there is nothing to answer from."

Kind = Literal["generated", "extractive", "no-evidence"]


@dataclass(frozen=True)
class AskOptions:
    """How to retrieve, pack and generate."""

    mode: str = "hybrid"
    k: int = 6  # hits retrieved per sub-query
    budget: Budget = field(default_factory=Budget)
    decompose: str = "rules"  # "rules", "llm" or "none"
    max_parts: int = DEFAULT_MAX_PARTS
    prompt_style: str = "auto"  # "auto": completion for base models, chat otherwise
    temperature: float = 0.0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"mode: {self.mode!r} is not one of {', '.join(MODES)}")
        if self.k < 1:
            raise ConfigError(f"k: must be >= 1, got {self.k}")
        if self.decompose not in DECOMPOSE:
            raise ConfigError(f"decompose: {self.decompose!r} is not one of {', '.join(DECOMPOSE)}")
        if self.prompt_style not in PROMPT_STYLES:
            raise ConfigError(
                f"prompt_style: {self.prompt_style!r} is not one of {', '.join(PROMPT_STYLES)}"
            )
        if self.max_parts < 1:
            raise ConfigError(f"max_parts: must be >= 1, got {self.max_parts}")


@dataclass(frozen=True, slots=True)
class Source:
    """A block of the context, as a source of the answer."""

    number: int
    path: str
    title: str
    heading: str
    chunk_ids: tuple[str, ...]
    cited: bool


@dataclass(frozen=True)
class Plan:
    """Everything up to generation: the parts, their hits, the packed context, the prompt."""

    question: str
    parts: tuple[str, ...]
    runs: tuple[SubQueryHits, ...]
    context: PackedContext
    template: Template
    prompt: Prompt
    counter: str  # how tokens were counted


@dataclass(frozen=True)
class Answer:
    """An answer and the evidence it rests on."""

    question: str
    text: str
    kind: Kind
    llm: str | None
    plan: Plan
    sources: tuple[Source, ...]

    @property
    def cited(self) -> tuple[int, ...]:
        return tuple(s.number for s in self.sources if s.cited)

    @property
    def context(self) -> PackedContext:
        return self.plan.context


def prepare(
    index: Index, question: str, *, llm: LLM | None = None, options: AskOptions | None = None
) -> Plan:
    """Decompose, retrieve each part, and pack the context into the prompt."""
    options = options or AskOptions()
    question = question.strip()
    if not question:
        raise ConfigError("question: is empty")
    if options.decompose == "llm":
        if llm is None:
            raise ConfigError("decompose: 'llm' needs a language model (--llm)")
        parts = decompose_with_llm(question, llm, max_parts=options.max_parts)
    elif options.decompose == "rules":
        parts = decompose(question, max_parts=options.max_parts)
    else:
        parts = [question]
    runs = tuple(
        SubQueryHits(part, tuple(index.search(part, mode=options.mode, k=options.k)))
        for part in parts
    )
    template = Template(_style(options.prompt_style, llm))
    counter: TokenCounter | None = llm.token_counter() if llm is not None else None
    asked = question_text(question, parts)
    context = pack(
        runs,
        options.budget,
        counter or approx_token_counter,
        fixed={"instructions": template.instructions, "question": asked},
    )
    return Plan(
        question=question,
        parts=tuple(parts),
        runs=runs,
        context=context,
        template=template,
        prompt=template.render(context.text, asked),
        counter=f"{llm.name} tokenizer" if counter is not None and llm else APPROXIMATE,
    )


def generate(
    plan: Plan,
    *,
    llm: LLM | None = None,
    analyzer_terms: tuple[Callable[[str], list[str]], Callable[[str], list[str]]] | None = None,
    options: AskOptions | None = None,
    on_text: Callable[[str], None] | None = None,
) -> Answer:
    """Run ``llm`` on the plan's prompt (streaming to ``on_text``), or, without one, quote
    the best sentences. ``analyzer_terms`` is the index analyzer's (query, text) term
    functions, used by the extractive answer."""
    options = options or AskOptions()
    blocks = plan.context.blocks
    if not blocks:
        return _answer(plan, NO_EVIDENCE, "no-evidence", llm, ())
    if llm is None:
        query_terms, text_terms = analyzer_terms or (_plain_terms, _plain_terms)
        quoted = extract(plan.context, plan.parts, query_terms=query_terms, text_terms=text_terms)
        if on_text is not None:
            on_text(quoted.text)
        return _answer(plan, quoted.text, "extractive", None, quoted.cited)
    pieces = []
    for piece in llm.stream(
        plan.prompt,
        stop=plan.template.stop,
        max_tokens=plan.context.section("answer").budget,
        temperature=options.temperature,
    ):
        pieces.append(piece)
        if on_text is not None:
            on_text(piece)
    text = "".join(pieces).strip()
    return _answer(plan, text, "generated", llm, citations(text, len(blocks)))


def ask(
    index: Index,
    question: str,
    *,
    llm: LLM | None = None,
    options: AskOptions | None = None,
    on_text: Callable[[str], None] | None = None,
) -> Answer:
    """Answer ``question`` from ``index`` (see the module docstring)."""
    options = options or AskOptions()
    plan = prepare(index, question, llm=llm, options=options)
    terms = (index.analyzer.query_terms, index.analyzer.index_terms)
    return generate(plan, llm=llm, analyzer_terms=terms, options=options, on_text=on_text)


_CITATION = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")


def citations(text: str, n_blocks: int) -> tuple[int, ...]:
    """The citation numbers ``[n]``, ``[n, m]`` in ``text`` that name a block."""
    found = {int(n) for group in _CITATION.findall(text) for n in re.split(r"\s*[,;]\s*", group)}
    return tuple(sorted(n for n in found if 1 <= n <= n_blocks))


def _style(style: str, llm: LLM | None) -> Literal["chat", "completion"]:
    if style == "chat":
        return "chat"
    if style == "completion" or (llm is not None and not llm.chat):
        return "completion"
    return "chat"


def _plain_terms(text: str) -> list[str]:
    return re.findall(r"\w[\w.:/-]*\w|\w", text.lower())


def _answer(plan: Plan, text: str, kind: Kind, llm: LLM | None, cited: tuple[int, ...]) -> Answer:
    sources = tuple(
        Source(b.number, b.path, b.title, b.heading, b.chunk_ids, b.number in cited)
        for b in plan.context.blocks
    )
    return Answer(plan.question, text, kind, llm.name if llm else None, plan, sources)
