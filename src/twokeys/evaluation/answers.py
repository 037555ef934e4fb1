"""Answer evaluation: is the evidence in the context, is the answer in the evidence?

A QA file (JSONL) gives, per question, the documents that answer it and a short *gold
fact* from each, written verbatim as the document says it::

    {"id": "qa01", "question": "What does error code E-4821 mean?", "kind": "identifier",
     "split": "test", "gold": [{"doc": "errors/e-4821.md",
                                "fact": "below the safe operating threshold"}]}

A multi-part question has one gold entry per part; a question the corpus cannot answer
has ``"gold": []``. ``split`` (any name; ``test`` when left out) keeps the questions rules
were tuned on apart from the ones only reported: the shipped
``examples/support-kb/qa.jsonl`` tunes on ``dev`` and reports ``test`` and ``heldout``
to ``heldout20``, each written after the splits before it had been looked at, the last
fourteen by people who had read no rule (its README tells them apart).

Measures (facts compared case-insensitively, Markdown ``*`` and backticks and runs of
whitespace ignored):

* **context recall**: share of a question's gold facts found inside a context piece
  taken from the gold document, read as the model reads it: a twokeys block with its
  label line, whose heading path may hold the fact (``[2] release-notes/changelog.md |
  Changelog > Studio > 1.2.9`` answers which release added an option); a
  baseline's piece is the chunk or paragraph text it passes on;
* **citation precision**: share of the blocks an answer cites that hold a gold fact;
* **fact containment**: share of gold facts quoted in the (extractive) answer itself;
* **abstention**: share of unanswerable questions given no answer: "the sources do not
  answer this" before any model runs, nothing retrieved to answer from, or (with a
  model) an answer that only declines (:attr:`~twokeys.rag.ask.Answer.abstains`);
  **false abstention**: share of answerable questions given no answer;
* **tokens**: context tokens, counted with :func:`~twokeys.chunking.approx_token_counter`.

Systems compared on the same index, question by question:

* ``twokeys``: :func:`twokeys.rag.ask` (decomposition, fair packing, abstention,
  extractive answer) at the token budget;
* ``naive-Nchars``: the context of the Ollama hybrid-pipeline project, as that project
  builds it (:mod:`twokeys.evaluation.naive_pipeline`: file-level cosine top 2 and
  paragraph-level BM25 top 2 over the index's source documents, merged to at most 3
  pieces of 600 characters) and cut at N characters;
* ``top-k``: the whole question, the default hybrid top chunks added whole in rank
  order while they fit the same context token budget twokeys had.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import mean

from twokeys.engine import Index
from twokeys.errors import ConfigError
from twokeys.evaluation.naive_pipeline import NaivePipeline
from twokeys.llm.base import LLM
from twokeys.rag.ask import AskOptions, ask, retrieval_depth
from twokeys.rag.packing import SEPARATOR, Budget, PackedContext
from twokeys.text.tokens import approx_token_counter

KINDS = ("identifier", "paraphrase", "multi-part", "unanswerable")
NAIVE_CHARS = (2000, 4000)  # the project's CONTEXT_INJECT_LIMIT: 2,000 in v3, 4,000 since
EVAL_BUDGET = 1000  # tokens for prompt plus answer: what the README's answers table uses
TOPK_K = 10


@dataclass(frozen=True, slots=True)
class GoldFact:
    doc: str
    fact: str


@dataclass(frozen=True, slots=True)
class QAItem:
    id: str
    question: str
    kind: str
    split: str
    gold: tuple[GoldFact, ...]

    @property
    def answerable(self) -> bool:
        return bool(self.gold)


@dataclass(frozen=True, slots=True)
class Piece:
    """One passage of a context, with the document it comes from."""

    path: str
    text: str


def pieces_of(context: PackedContext) -> tuple[Piece, ...]:
    """The blocks of ``context`` as the pieces context recall reads: each as the model
    reads it, its label included."""
    return tuple(Piece(b.path, b.render()) for b in context.blocks)


@dataclass(frozen=True)
class Outcome:
    """What one system did with one question."""

    item: QAItem
    pieces: tuple[Piece, ...]
    tokens: int
    answer: str | None = None  # None: the system gives no answer of its own
    cited: tuple[int, ...] | None = None  # indices into pieces
    abstained: bool = False
    budget: int = 0  # the context's token budget
    confidence: float | None = None  # the learned confidence that the sources answer
    why: str | None = None  # why it answered or abstained

    @property
    def context_recall(self) -> float:
        return context_recall(self.item.gold, self.pieces)

    @property
    def fact_containment(self) -> float | None:
        if self.answer is None:
            return None
        return fact_containment(self.item.gold, self.answer)

    @property
    def citation_precision(self) -> float | None:
        if self.cited is None or not self.cited:
            return None
        return citation_precision(self.item.gold, self.pieces, self.cited)


@dataclass(frozen=True)
class SystemScore:
    """One system's measures over the questions."""

    name: str
    outcomes: tuple[Outcome, ...]

    def _answerable(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.item.answerable]

    def _unanswerable(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.item.answerable]

    @property
    def context_recall(self) -> float | None:
        return _mean(o.context_recall for o in self._answerable())

    @property
    def citation_precision(self) -> float | None:
        return _mean(o.citation_precision for o in self._answerable())

    @property
    def fact_containment(self) -> float | None:
        return _mean(o.fact_containment for o in self._answerable())

    @property
    def abstention(self) -> float | None:
        return _mean(float(o.abstained) for o in self._unanswerable())

    @property
    def false_abstention(self) -> float | None:
        return _mean(float(o.abstained) for o in self._answerable())

    @property
    def tokens(self) -> float | None:
        return _mean(float(o.tokens) for o in self._answerable())

    def to_dict(self) -> dict[str, object]:
        return {
            "system": self.name,
            "context_recall": self.context_recall,
            "citation_precision": self.citation_precision,
            "fact_containment": self.fact_containment,
            "abstention": self.abstention,
            "false_abstention": self.false_abstention,
            "tokens": self.tokens,
        }


@dataclass(frozen=True)
class AnswerEvaluation:
    """Every system's score on the same questions."""

    budget: int
    items: tuple[QAItem, ...]
    systems: tuple[SystemScore, ...] = field(default=())

    def system(self, name: str) -> SystemScore:
        for s in self.systems:
            if s.name == name:
                return s
        raise KeyError(name)

    def to_dict(self) -> dict[str, object]:
        return {
            "budget": self.budget,
            "questions": len(self.items),
            "answerable": sum(i.answerable for i in self.items),
            "systems": [s.to_dict() for s in self.systems],
            "misses": {
                s.name: [
                    {"id": o.item.id, "context_recall": o.context_recall, "abstained": o.abstained}
                    for o in s.outcomes
                    if (o.item.answerable and (o.context_recall < 1 or o.abstained))
                    or (not o.item.answerable and not o.abstained)
                ]
                for s in self.systems
            },
        }


# --- the QA file ----------------------------------------------------------------------


def load_qa(path: str | Path, *, split: str | None = None) -> list[QAItem]:
    """The questions of a QA file (see the module docstring); ``split`` keeps one split."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    items: list[QAItem] = []
    seen: set[str] = set()
    splits: set[str] = set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        item = _parse_item(line, f"{path}:{number}")
        if item.id in seen:
            raise ConfigError(f"{path}:{number}: id: {item.id!r} appears twice")
        seen.add(item.id)
        splits.add(item.split)
        if split is None or item.split == split:
            items.append(item)
    if not items and split is not None and splits:
        raise ConfigError(
            f"{path}: no questions in split {split!r} (its splits: {', '.join(sorted(splits))})"
        )
    if not items:
        raise ConfigError(f"{path}: no questions")
    return items


def _parse_item(line: str, where: str) -> QAItem:
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise ConfigError(f"{where}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a JSON object")

    def text(name: str, default: str | None = None) -> str:
        value = data.get(name, default)
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}: {name}: expected a non-empty string, got {value!r}")
        return value.strip()

    kind = text("kind")
    if kind not in KINDS:
        raise ConfigError(f"{where}: kind: {kind!r} is not one of {', '.join(KINDS)}")
    split = text("split", "test")
    raw_gold = data.get("gold")
    if not isinstance(raw_gold, list):
        raise ConfigError(f"{where}: gold: expected a list of {{doc, fact}} objects")
    gold = []
    for i, entry in enumerate(raw_gold):
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: gold[{i}]: expected an object with doc and fact")
        doc, fact = entry.get("doc"), entry.get("fact")
        if not isinstance(doc, str) or not doc or not isinstance(fact, str) or not fact.strip():
            raise ConfigError(f"{where}: gold[{i}]: doc and fact must be non-empty strings")
        gold.append(GoldFact(doc, fact))
    if (kind == "unanswerable") != (not gold):
        raise ConfigError(f"{where}: gold: kind {kind!r} needs {'no' if gold else 'a'} gold fact")
    return QAItem(text("id"), text("question"), kind, split, tuple(gold))


# --- measures (pure) ------------------------------------------------------------------

_MARKUP = re.compile(r"[*`]")


def normalize(text: str) -> str:
    """Lowercase, Markdown emphasis and code marks dropped, whitespace collapsed."""
    return " ".join(_MARKUP.sub("", text).lower().split())


def holds(text: str, fact: str) -> bool:
    return normalize(fact) in normalize(text)


def context_recall(gold: Sequence[GoldFact], pieces: Sequence[Piece]) -> float:
    """Share of ``gold`` facts inside a piece of their own document."""
    if not gold:
        return 0.0
    found = sum(any(p.path == g.doc and holds(p.text, g.fact) for p in pieces) for g in gold)
    return found / len(gold)


def fact_containment(gold: Sequence[GoldFact], answer: str) -> float:
    """Share of ``gold`` facts the answer states verbatim."""
    if not gold:
        return 0.0
    return sum(holds(answer, g.fact) for g in gold) / len(gold)


def citation_precision(
    gold: Sequence[GoldFact], pieces: Sequence[Piece], cited: Sequence[int]
) -> float:
    """Share of the cited pieces that hold one of the gold facts (from its document)."""
    if not cited:
        return 0.0
    good = sum(
        any(pieces[i].path == g.doc and holds(pieces[i].text, g.fact) for g in gold) for i in cited
    )
    return good / len(cited)


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return mean(kept) if kept else None


def _tokens(text: str) -> int:
    return approx_token_counter([text])[0] if text else 0


# --- systems --------------------------------------------------------------------------


def run_twokeys(index: Index, item: QAItem, options: AskOptions, llm: LLM | None = None) -> Outcome:
    answer = ask(index, item.question, options=options, llm=llm)
    pieces = pieces_of(answer.context)
    cited = tuple(n - 1 for n in answer.cited)
    verdicts = answer.plan.confidence
    probabilities = [c.probability for c in verdicts if c.probability is not None]
    return Outcome(
        item,
        pieces,
        answer.context.section("context").used,
        answer=answer.text,
        cited=cited,
        abstained=answer.abstains,
        budget=answer.context.section("context").budget,
        confidence=max(probabilities) if probabilities else None,
        why="; ".join(f"{c.query}: {c.reason}" for c in verdicts) or None,
    )


def run_naive(pipeline: NaivePipeline, item: QAItem, chars: int) -> Outcome:
    """The Ollama hybrid-pipeline project's context for the whole question, cut at
    ``chars`` characters."""
    context = pipeline.context(item.question, chars)
    pieces = tuple(Piece(p.path, p.text) for p in context.pieces)
    return Outcome(item, pieces, _tokens(context.text))


def run_topk(index: Index, item: QAItem, tokens: int, *, mode: str, k: int = TOPK_K) -> Outcome:
    """Whole top chunks in rank order while they fit ``tokens`` (no decomposition, no
    merging, no trimming). At least ``k`` are retrieved, more when ``tokens`` has room
    for more (:func:`~twokeys.rag.ask.retrieval_depth`, as ``ask`` retrieves), so that a
    larger budget is filled."""
    pieces: list[Piece] = []
    for hit in index.search(item.question, mode=mode, k=retrieval_depth(k, tokens)):
        candidate = [*pieces, Piece(hit.path, hit.text)]
        if _tokens(SEPARATOR.join(p.text for p in candidate)) > tokens:
            break
        pieces = candidate
    return Outcome(item, tuple(pieces), _tokens(SEPARATOR.join(p.text for p in pieces)))


def evaluate_answers(
    index: Index,
    items: Sequence[QAItem],
    *,
    budget: int = EVAL_BUDGET,
    options: AskOptions | None = None,
    naive_chars: Sequence[int] = NAIVE_CHARS,
    llm: LLM | None = None,
    docs: str | Path | None = None,
) -> AnswerEvaluation:
    """Score twokeys' ``ask`` and the baselines on ``items`` (see the module docstring).

    ``options`` sets the retrieval of ``ask`` (its budget is replaced by ``budget``);
    with ``llm`` the answers are generated (fact containment then counts the gold facts
    the model wrote verbatim), else extractive. ``docs`` is the folder of the documents
    the naive baseline reads (default: the folder the index was built from)."""
    if not items:
        raise ConfigError("questions: none to evaluate")
    base = options or AskOptions()
    ask_options = replace(base, budget=Budget.for_total(budget))
    ours = [run_twokeys(index, item, ask_options, llm) for item in items]
    systems = [SystemScore(f"twokeys+{llm.name}" if llm else "twokeys", tuple(ours))]
    if naive_chars:
        folder = docs if docs is not None else index.manifest.source
        if not folder:
            raise ConfigError("docs: the naive baseline needs the documents' folder (--docs)")
        pipeline = NaivePipeline(folder, index.encoder if index.manifest.encoder else None)
        for chars in naive_chars:
            runs = tuple(run_naive(pipeline, item, chars) for item in items)
            systems.append(SystemScore(f"naive-{chars}chars", runs))
    # the same context budget twokeys' packer had for each question
    runs = tuple(run_topk(index, o.item, o.budget, mode=base.mode) for o in ours)
    systems.append(SystemScore("top-k", runs))
    return AnswerEvaluation(budget, tuple(items), tuple(systems))
