"""Answer with evidence: decompose -> retrieve each part -> judge the evidence -> pack
-> generate or extract -> check the answer against its sources.

:func:`ask_events` yields the work as typed events (retrieved, packed, model failed,
text delta, done) for a CLI or a server to stream; :func:`ask` consumes them.

Each part retrieves ``k`` hits, or one per :data:`FILL_TOKENS` tokens of the context
when that is more, so a larger budget holds more evidence; with ``order="learned"`` it
retrieves at least :data:`RERANK_DEPTH`, re-orders the fused top :data:`RERANK_DEPTH` by
:mod:`twokeys.rag.rerank_context` (any further hits follow in the fused order) and packs
the first of them, each hit cut to an excerpt once the context budget runs low
(:func:`~twokeys.rag.packing.pack`'s ``excerpt_tokens``). Abstention is read on the
first ``k`` hits (:mod:`twokeys.rag.grounding`, or the learned
:mod:`twokeys.rag.confidence`): when no part is answerable the answer says so and lists
the closest sources; a part the sources do not answer gets only the room the others
leave, no quote, and a note to the model. A generated answer is checked sentence by
sentence (:mod:`twokeys.rag.support`); ``strict`` drops what its sources do not back.
A model that cannot be reached or fails gives way to the extractive answer, with
``model_error`` saying why. ``llm_stages`` turns on the model's optional stages
(:mod:`twokeys.rag.judge`); a stage that fails leaves what the rules did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from twokeys.engine import MODES, Index
from twokeys.errors import ConfigError
from twokeys.filters import parse_filters
from twokeys.llm.base import LLM, Prompt
from twokeys.llm.http import ServiceError
from twokeys.rag.confidence import shipped as shipped_model
from twokeys.rag.conversation import Conversation
from twokeys.rag.decompose import DEFAULT_MAX_PARTS, decompose, decompose_with_llm
from twokeys.rag.evidence import gather, idf_held, sentence_similarity
from twokeys.rag.extractive import EXTRACTIVE_NOTE, extract
from twokeys.rag.followup import Followup, standalone_query
from twokeys.rag.grounding import Confidence, retrieval_confidence
from twokeys.rag.judge import NOT_ASKED, STAGES, SupportBudget, judge_sentences, rerank, verdict
from twokeys.rag.packing import EXCERPT_TOKENS, Budget, PackedContext, SubQueryHits, pack
from twokeys.rag.prompt import DECLINE, Template, question_text, render_prompt
from twokeys.rag.rerank_context import rerank as learned_order
from twokeys.rag.sentence_reader import static_reader
from twokeys.rag.support import (
    SentenceCheck,
    check_sentences,
    sentence_citations,
    strict_text,
    with_added_citations,
)
from twokeys.rag.verdicts import Reliability, for_model
from twokeys.text.tokens import TokenCounter, approx_token_counter

DECOMPOSE = ("rules", "llm", "none")
CONFIDENCES = ("learned", "rules")
ORDERS = ("fused", "learned")
RERANK_DEPTH = 100  # hits the learned order re-ranks (twokeys.rag.rerank_context)
PROMPT_STYLES = ("auto", "chat", "completion")
APPROXIMATE = "approximate (ceil(len/6) per word + 1 per punctuation run)"
NO_EVIDENCE = "No passage in the index matches this question, so there is nothing to answer from."
ABSTAINED = DECLINE

Kind = Literal["generated", "extractive", "abstained", "no-evidence"]


FILL_TOKENS = 50  # a sub-query retrieves one hit per this many tokens of the context


def retrieval_depth(k: int, context_tokens: int) -> int:
    """How many hits a sub-query retrieves for a context of ``context_tokens``: ``k``, or
    one per :data:`FILL_TOKENS` when that is more (module docstring)."""
    return max(k, context_tokens // FILL_TOKENS)


@dataclass(frozen=True)
class AskOptions:
    """How to retrieve, judge, pack and generate."""

    mode: str = "hybrid"
    k: int = 6  # hits read to judge each sub-query; more are retrieved to fill the budget
    budget: Budget = field(default_factory=Budget)
    decompose: str = "rules"  # "rules", "llm" or "none"
    max_parts: int = DEFAULT_MAX_PARTS
    prompt_style: str = "auto"  # "auto": asks the server whether the model has a chat template
    temperature: float = 0.0
    abstain: bool = True  # answer "the sources do not answer this" when retrieval is weak
    strict: bool = False  # drop generated sentences its cited blocks do not back
    filters: tuple[str, ...] = ()  # a search's filters (all hold): only these documents
    confidence: str = "rules"  # "learned": twokeys.rag.confidence; "rules": grounding's rules
    # the order hits are packed in: "fused" (the search's), or "learned": the fused top
    # RERANK_DEPTH re-ranked by twokeys.rag.rerank_context (abstention still reads the
    # fused order; with the model's "rerank" stage both read the model's order of the
    # learned one); not the default (README "A cheap passage reader")
    order: str = "fused"
    # with a model (twokeys.rag.judge): "rerank", "verdict", "rewrite" (the follow-up made
    # standalone and the question split by the model), "support" (each sentence judged)
    llm_stages: tuple[str, ...] = ()
    support: SupportBudget = field(default_factory=SupportBudget)  # the support stage's
    # the "verdict" stage's measure of the model (twokeys.rag.verdicts): this file, else
    # the one calibrate-verdict keeps for the model in the cache
    verdict_calibration: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "filters", tuple(str(f) for f in self.filters))
        object.__setattr__(self, "llm_stages", tuple(dict.fromkeys(self.llm_stages)))  # once each
        parse_filters(self.filters)  # a bad filter is named now, not at the first search
        choices = {
            "mode": MODES,
            "decompose": DECOMPOSE,
            "prompt_style": PROMPT_STYLES,
            "confidence": CONFIDENCES,
            "order": ORDERS,
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                value = getattr(self, name)
                raise ConfigError(f"{name}: {value!r} is not one of {', '.join(allowed)}")
        for name in ("k", "max_parts"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}: must be >= 1, got {getattr(self, name)}")
        unknown = [s for s in self.llm_stages if s not in STAGES]
        if unknown:
            raise ConfigError(f"llm_stages: {', '.join(unknown)} not among {', '.join(STAGES)}")
        if "verdict" in self.llm_stages and self.confidence != "learned":
            raise ConfigError(
                "llm_stages: the model's verdict is weighed by the learned confidence; "
                "use it with confidence 'learned' (--confidence learned)"
            )


@dataclass(frozen=True, slots=True)
class Source:
    """A block of the context, as a source of the answer."""

    number: int
    path: str
    title: str
    heading: str  # of the block's first chunk
    chunk_ids: tuple[str, ...]
    cited: bool
    quoted_headings: tuple[str, ...] = ()  # headings of the chunks quotes were taken from
    #: the citation a person reads: ``manual.pdf pp. 12-13``, ``corpus.jsonl #17 "Title"``
    cite: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "path": self.path,
            "cite": self.cite or self.path,
            "title": self.title,
            "heading": self.heading,
            "quoted_headings": list(self.quoted_headings),
            "chunk_ids": list(self.chunk_ids),
            "cited": self.cited,
        }


@dataclass(frozen=True)
class Plan:
    """Everything up to generation: the parts, their hits and confidence, the context, the
    prompt."""

    question: str
    parts: tuple[str, ...]
    runs: tuple[SubQueryHits, ...]
    context: PackedContext
    template: Template
    prompt: Prompt
    counter: str  # how tokens were counted
    confidence: tuple[Confidence, ...] = ()
    followup: Followup | None = None  # a follow-up's search query and how it was made

    @property
    def answerable(self) -> bool:
        """False when the abstention rule found no part the sources answer."""
        return not self.confidence or any(c.answerable for c in self.confidence)

    @property
    def unanswered(self) -> tuple[str, ...]:
        """Parts the sources do not answer (when others are answered)."""
        return tuple(c.query for c in self.confidence if not c.answerable)


@dataclass(frozen=True)
class Answer:
    """An answer and the evidence it rests on."""

    question: str
    text: str
    kind: Kind
    llm: str | None
    plan: Plan
    sources: tuple[Source, ...]
    checks: tuple[SentenceCheck, ...] = ()  # generated answers: each sentence vs its sources
    model_error: str | None = None  # the model failed; this is the extractive fallback

    @property
    def cited(self) -> tuple[int, ...]:
        return tuple(s.number for s in self.sources if s.cited)

    @property
    def context(self) -> PackedContext:
        return self.plan.context

    @property
    def flagged(self) -> tuple[SentenceCheck, ...]:
        """Sentences of a generated answer that are unsupported or uncited."""
        return tuple(c for c in self.checks if c.status in ("unsupported", "uncited"))

    @property
    def declined(self) -> bool:
        """A generated answer whose every sentence says the sources do not answer: the
        model's own abstention, where retrieval saw the question as covered."""
        return (
            self.kind == "generated"
            and bool(self.checks)
            and all(c.status == "declines" for c in self.checks)
        )

    @property
    def abstains(self) -> bool:
        """No answer given: abstained before generation, nothing retrieved to answer
        from, or declined by the model."""
        return self.kind in ("abstained", "no-evidence") or self.declined

    def to_dict(self, *, with_prompt: bool = False) -> dict[str, Any]:
        """The answer as JSON-ready data (the one schema the CLI and a server print)."""
        plan = self.plan
        data: dict[str, Any] = {
            "question": self.question,
            "answer": self.text,
            "kind": self.kind,
            "llm": self.llm,
            "model_error": self.model_error,
            "declined": self.declined,
            "sub_queries": list(plan.parts),
            "confidence": [c.to_dict() for c in plan.confidence],
            "sentences": [c.to_dict() for c in self.checks],
            "sources": [s.to_dict() for s in self.sources],
            "budget": _usage(plan),
            "followup": plan.followup.to_dict() if plan.followup is not None else None,
        }
        if with_prompt:
            data["context"] = plan.context.text
            data["prompt"] = render_prompt(plan.prompt)
        return data


# --- events ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Retrieved:
    """Every sub-query retrieved and judged."""

    parts: tuple[str, ...]
    runs: tuple[SubQueryHits, ...]
    confidence: tuple[Confidence, ...]


@dataclass(frozen=True, slots=True)
class Packed:
    """The context is packed and the prompt built."""

    plan: Plan


@dataclass(frozen=True, slots=True)
class ModelFailed:
    """The model could not be reached; the extractive answer follows."""

    error: str


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the answer's text, as it is generated (or the whole extractive text)."""

    text: str


@dataclass(frozen=True, slots=True)
class Done:
    """The finished answer."""

    answer: Answer


Event = Retrieved | Packed | ModelFailed | TextDelta | Done


def ask_events(
    index: Index,
    question: str,
    *,
    llm: LLM | None = None,
    options: AskOptions | None = None,
    search: str | None = None,
    conversation: Conversation | None = None,
) -> Iterator[Event]:
    """The work of :func:`ask`, one event at a time.

    ``search``: the query to retrieve with, when it is not the question. ``conversation``:
    the chat so far, fitted to its share of the context (``options.budget`` is what is
    left), shown to a chat model; with earlier questions and no ``search``, the question
    is searched made standalone (:func:`~twokeys.rag.followup.standalone_query`)."""
    options = options or AskOptions()
    down = llm.unreachable() if llm is not None else None
    followup = None
    if search is not None and search.strip():
        query = search
    elif conversation is not None and conversation.earlier_questions:
        rewrites = llm if "rewrite" in options.llm_stages and down is None else None
        followup = standalone_query(index, conversation, llm=rewrites)
        if down is not None and "rewrite" in options.llm_stages:
            followup = replace(followup, model_error=down)  # the rule's query, and why
        query = followup.query
    else:
        query = question
    if down is None:
        try:
            parts, runs, confidence = _retrieve(index, query, llm, options)
        except ServiceError as exc:  # the model splitting the question failed
            down = str(exc)
    if down is not None:  # down, hung or failing: the rules' answer, and why
        yield ModelFailed(down)
        llm, options = None, replace(options, decompose="rules", llm_stages=())
        parts, runs, confidence = _retrieve(index, query, None, options)
    yield Retrieved(parts, runs, confidence)
    plan = _plan(index, question, parts, runs, confidence, llm, options, conversation)
    plan = replace(plan, followup=followup)
    yield Packed(plan)
    yield from _generate_events(plan, llm, options, index, down)


def ask(
    index: Index,
    question: str,
    *,
    llm: LLM | None = None,
    options: AskOptions | None = None,
    on_text: Callable[[str], None] | None = None,
) -> Answer:
    """Answer ``question`` from ``index`` (see the module docstring)."""
    for event in ask_events(index, question, llm=llm, options=options):
        if isinstance(event, TextDelta) and on_text is not None:
            on_text(event.text)
        elif isinstance(event, Done):
            return event.answer
    raise AssertionError("ask_events ended without an answer")  # pragma: no cover


def prepare(
    index: Index, question: str, *, llm: LLM | None = None, options: AskOptions | None = None
) -> Plan:
    """Decompose, retrieve and judge each part, and pack the context into the prompt."""
    options = options or AskOptions()
    parts, runs, confidence = _retrieve(index, question, llm, options)
    return _plan(index, question, parts, runs, confidence, llm, options)


# --- the steps ---------------------------------------------------------------------------


def _retrieve(
    index: Index, question: str, llm: LLM | None, options: AskOptions
) -> tuple[tuple[str, ...], tuple[SubQueryHits, ...], tuple[Confidence, ...]]:
    question = question.strip()
    if not question:
        raise ConfigError("question: is empty")
    measured = None  # the model's measured reliability, read before it is asked anything
    if llm is not None and "verdict" in options.llm_stages:
        measured = for_model(llm.name, options.verdict_calibration)
    rewrite = llm is not None and "rewrite" in options.llm_stages and options.decompose == "rules"
    if options.decompose == "llm" or rewrite:
        if llm is None:
            raise ConfigError("decompose: 'llm' needs a language model (--llm)")
        parts = decompose_with_llm(question, llm, max_parts=options.max_parts)
    elif options.decompose == "rules":
        parts = decompose(question, max_parts=options.max_parts)
    else:
        parts = [question]
    depth = retrieval_depth(options.k, options.budget.context_floor)
    where = {"filters": list(options.filters)} if options.filters else {}
    learned = options.order == "learned"
    runs, judged = [], []
    for part in parts:
        # with the learned order: the fused top RERANK_DEPTH re-ranked (what its model
        # was fitted on), from the sensors' ranks in the search's explain evidence
        hits = index.search(
            part,
            mode=options.mode,
            k=max(depth, RERANK_DEPTH) if learned else depth,
            explain=learned,
            **where,
        )
        judged.append(SubQueryHits(part, tuple(hits[:depth])))
        if learned:
            read = static_reader(part)
            hits = [
                *learned_order(hits[:RERANK_DEPTH], idf_held(index, part), read=read),
                *hits[RERANK_DEPTH:],
            ]
        runs.append(SubQueryHits(part, tuple(hits[:depth])))
    if llm is not None and "rerank" in options.llm_stages:
        runs = judged = [SubQueryHits(r.query, tuple(rerank(llm, r.query, r.hits))) for r in runs]
    if not options.abstain:
        confidence: tuple[Confidence, ...] = ()
    elif options.confidence == "learned":
        confidence = tuple(learned_confidence(index, run, llm, measured) for run in judged)
    else:
        confidence = tuple(retrieval_confidence(index, run.query) for run in judged)
    return tuple(parts), tuple(runs), confidence


def learned_confidence(
    index: Index,
    run: SubQueryHits,
    llm: LLM | None = None,
    measured: Reliability | None = None,
) -> Confidence:
    """The learned confidence (:mod:`twokeys.rag.confidence`) that ``run``'s hits answer
    its query, as a :class:`~twokeys.rag.grounding.Confidence` that decides by it; with
    ``llm`` and its ``measured`` reliability, the model's verdict on the first hits moves
    it by what that reply was measured to be worth (:mod:`twokeys.rag.verdicts`)."""
    model = shipped_model(lexical=index.backend.vectors is None)
    said = NOT_ASKED
    if llm is not None and measured is not None and run.hits:  # no passages: nothing to ask
        said = verdict(llm, run.query, [h.text for h in run.hits])
    evidence = gather(index, run.query, run.hits)
    shift = measured.log_ratio(said) if measured is not None else 0.0
    return Confidence(
        run.query,
        evidence.lexical,
        evidence.dense_peak,
        (),
        height=evidence.dense_height,
        probability=model.probability(evidence.as_features(), shift),
        threshold=model.threshold,
        model_verdict=None if said == NOT_ASKED else said == 1.0,
        verdict_log_ratio=shift,
    )


def _plan(
    index: Index,
    question: str,
    parts: tuple[str, ...],
    runs: tuple[SubQueryHits, ...],
    confidence: tuple[Confidence, ...],
    llm: LLM | None,
    options: AskOptions,
    conversation: Conversation | None = None,
) -> Plan:
    question = question.strip()
    # parts the sources do not answer get their closest sources (as a whole question that
    # abstains does), but only in the room the answered parts leave
    deferred = (
        {i for i, c in enumerate(confidence) if not c.answerable}
        if any(c.answerable for c in confidence)
        else set()
    )
    template = Template(_style(options.prompt_style, llm))
    counter: TokenCounter | None = llm.token_counter() if llm is not None else None
    asked = question_text(question, parts, deferred)
    fixed = {"instructions": template.instructions, "question": asked}
    # how much of part i a text holds: the share of its idf mass, so rare words count most
    held = [idf_held(index, run.query) for run in runs]
    context = pack(
        runs,
        options.budget,
        counter or approx_token_counter,
        fixed=fixed,
        deferred=deferred,
        first=options.k,
        focus=lambda i, text: held[i](text),
        # excerpts once the budget runs low: measured with the learned order (README
        # "Excerpts once the budget runs low"); the fused default keeps whole chunks
        excerpt_tokens=EXCERPT_TOKENS if options.order == "learned" else None,
    )
    return Plan(
        question=question,
        parts=parts,
        runs=runs,
        context=context,
        template=template,
        prompt=template.render(
            context.text,
            asked,
            conversation.messages() if conversation is not None else (),
            conversation.system if conversation is not None else "",
        ),
        counter=f"{llm.name} tokenizer" if counter is not None and llm else APPROXIMATE,
        confidence=confidence,
    )


def _generate_events(
    plan: Plan,
    llm: LLM | None,
    options: AskOptions,
    index: Index,
    model_error: str | None = None,
) -> Iterator[Event]:
    blocks = plan.context.blocks
    if not blocks:
        yield Done(_answer(plan, NO_EVIDENCE, "no-evidence", llm, ()))
        return
    if not plan.answerable:
        text = _abstention_text(plan)
        yield TextDelta(text)
        yield Done(_answer(plan, text, "abstained", llm, ()))
        return
    if llm is not None:
        pieces: list[str] = []
        try:
            for piece in llm.stream(
                plan.prompt,
                stop=plan.template.stop,
                max_tokens=plan.context.section("answer").budget,
                temperature=options.temperature,
            ):
                pieces.append(piece)
                yield TextDelta(piece)
        except ServiceError as exc:  # unreachable, too slow, or an error answer (a 404 model)
            if pieces:
                raise  # text already shown; replaying another answer would mix two
            model_error = f"{llm.name}: {exc}"
        text = "".join(pieces).strip()
        if model_error is None and not text:
            model_error = f"{llm.name} returned an empty answer"
        if model_error is None:
            checks = check_sentences(text, blocks, index.analyzer.index_terms)
            if "support" in options.llm_stages:
                checks = judge_sentences(llm, checks, blocks, options.support)
            text = strict_text(checks) if options.strict else with_added_citations(text, checks)
            answer = _answer(plan, text, "generated", llm, sentence_citations(text, len(blocks)))
            yield Done(replace(answer, checks=checks))
            return
        yield ModelFailed(model_error)
    yield from _extractive_events(plan, index, options, model_error)


def _extractive_events(
    plan: Plan, index: Index, options: AskOptions, model_error: str | None
) -> Iterator[Event]:
    skip = {i for i, c in enumerate(plan.confidence) if not c.answerable}
    quoted = extract(
        plan.context,
        plan.parts,
        query_terms=index.analyzer.query_terms,
        text_terms=index.analyzer.index_terms,
        similarity=sentence_similarity(index),
        unanswered=skip,
        evidence=quote_evidence(plan.runs, plan.context, options.k),
    )
    text = quoted.text
    if model_error is not None:  # say why there is no generated answer
        text = text.replace(EXTRACTIVE_NOTE, model_failed_note(model_error), 1)
    quoted = replace(quoted, text=text)
    yield TextDelta(quoted.text)
    headings: dict[int, list[str]] = {}
    for q in quoted.quotes:
        if q.heading and q.heading not in headings.setdefault(q.number, []):
            headings[q.number].append(q.heading)
    answer = _answer(plan, quoted.text, "extractive", None, quoted.cited, headings)
    yield Done(replace(answer, model_error=model_error))


def model_failed_note(error: str) -> str:
    """The first line of an extractive answer given because the model failed."""
    return (
        f"Extractive answer (the language model was not reached: {error}): the most "
        "relevant sentences from the sources, quoted as written, not a generated answer."
    )


def quote_evidence(runs: Sequence[SubQueryHits], context: PackedContext, k: int) -> list[set[str]]:
    """For each sub-query, the ids of the chunks its quotes come from: its first ``k`` hits
    (those it was judged on) and a block standing in for one as a near-duplicate; the
    hits that fill a larger budget are for a model (quoting them lost 10 facts and gained
    4 over the support KB's 930 questions)."""
    evidence = [{hit.chunk_id for hit in run.hits[:k]} for run in runs]
    for skipped in context.skipped:
        if not skipped.block or skipped.chunk_id not in evidence[skipped.query]:
            continue
        block = context.block(skipped.block)
        if skipped.chunk_id not in block.chunk_ids:  # a near-duplicate: the block stands in
            evidence[skipped.query].update(block.chunk_ids)
    return evidence


def _abstention_text(plan: Plan) -> str:
    reasons = "; ".join(f"{c.query}: {c.reason}" for c in plan.confidence)
    return f"{ABSTAINED} ({reasons}.) The closest passages are listed below."


def _style(style: str, llm: LLM | None) -> Literal["chat", "completion"]:
    """``auto``: a completion prompt for a model without a chat template."""
    auto = style == "auto" and llm is not None and not llm.detect_chat()
    return "completion" if style == "completion" or auto else "chat"


def _answer(
    plan: Plan,
    text: str,
    kind: Kind,
    llm: LLM | None,
    cited: tuple[int, ...],
    headings: dict[int, list[str]] | None = None,
) -> Answer:
    headings = headings or {}
    sources = tuple(
        Source(
            b.number,
            b.path,
            b.title,
            b.heading,
            b.chunk_ids,
            b.number in cited,
            tuple(headings.get(b.number, ())),
            b.cite or b.path,
        )
        for b in plan.context.blocks
    )
    return Answer(plan.question, text, kind, llm.name if llm else None, plan, sources)


def _usage(plan: Plan) -> dict[str, Any]:
    ctx = plan.context
    return {
        "counter": plan.counter,
        "total": ctx.total,
        "sections": [{"name": s.name, "budget": s.budget, "used": s.used} for s in ctx.sections],
        "sub_queries": [
            {"query": q.query, "tokens": q.tokens, "blocks": list(q.blocks)} for q in ctx.queries
        ],
        "blocks": [
            {"number": b.number, "tokens": b.tokens, "trimmed": b.trimmed} for b in ctx.blocks
        ],
    }
