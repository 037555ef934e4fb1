"""The learned confidence through `ask` and `eval-answers --html`
on the example support KB (BM25 index: the dense features read 0)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from twokeys import open_index
from twokeys.cli import main
from twokeys.rag.ask import AskOptions, ask
from twokeys.rag.confidence import shipped
from twokeys.rag.packing import EXCERPT_TOKENS

SUPPORT_KB = Path(__file__).resolve().parents[2] / "examples" / "support-kb"
LEARNED = AskOptions(mode="bm25", confidence="learned")

pytestmark = pytest.mark.usefixtures("no_llm_from_environment")


def test_ask_with_the_learned_confidence_answers_and_reports_its_probability(
    support_kb_bm25: Path,
) -> None:
    with open_index(support_kb_bm25) as kb:
        answer = ask(kb, "What does error code ZX-4821 mean?", options=LEARNED)
    data = answer.to_dict()
    probability = data["confidence"][0]["probability"]
    assert 0.0 <= probability <= 1.0
    assert data["confidence"][0]["answerable"] == (probability >= shipped(lexical=True).threshold)
    assert "the confidence that the sources answer is" in data["confidence"][0]["reason"]
    if answer.kind == "extractive":
        assert "below the safe operating threshold" in answer.text
    assert all(s["path"] for s in data["sources"])


def test_eval_answers_writes_the_html_report(support_kb_bm25: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    args = [
        "eval-answers",
        str(SUPPORT_KB / "qa.jsonl"),
        "--index",
        str(support_kb_bm25),
        "--mode",
        "bm25",
        "--split",
        "dev",
        "--confidence",
        "learned",
        "--html",
        str(report),
        "--recall-budget",
        "1000",
        "--json",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    page = report.read_text(encoding="utf-8")
    assert "<svg" in page and "operating point" in page
    assert page.count("<tr><td>qa") == data["questions"] == 43
    assert "What does error code ZX-4821 mean?" in page


def test_a_report_path_that_cannot_be_written_is_a_one_line_error(
    support_kb_bm25: Path, tmp_path: Path
) -> None:
    args = ["eval-answers", str(SUPPORT_KB / "qa.jsonl"), "--index", str(support_kb_bm25)]
    args += ["--mode", "bm25", "--split", "dev", "--recall-budget", "1000"]
    result = CliRunner().invoke(main, [*args, "--html", str(tmp_path / "no" / "r.html")])
    assert result.exit_code != 0
    assert "r.html: cannot write" in result.output and "Traceback" not in result.output


def test_the_model_re_ranks_the_fused_hits_and_gives_its_verdict(
    support_kb_bm25: Path, tmp_path: Path
) -> None:
    from conftest import ScriptedLLM
    from twokeys.rag.ask import prepare
    from twokeys.rag.verdicts import Reliability

    question = "What does error code ZX-4821 mean?"
    measured = Reliability("scripted", 30, 10, 10, 30).save(tmp_path / "scripted.json")
    plain = AskOptions(mode="bm25", confidence="learned")
    staged = replace(plain, llm_stages=("rerank", "verdict"), verdict_calibration=str(measured))
    llm = ScriptedLLM("2, 1")
    with open_index(support_kb_bm25) as kb:
        before = prepare(kb, question, options=plain)
        after = prepare(kb, question, llm=llm, options=staged)
    hits, reranked = before.runs[0].hits, after.runs[0].hits
    assert [h.chunk_id for h in reranked[:2]] == [hits[1].chunk_id, hits[0].chunk_id]
    assert [h.chunk_id for h in reranked[2:]] == [h.chunk_id for h in hits[2:]]
    asked = [str(p) for p in llm.prompts]
    assert "List the numbers of the passages" in asked[0]
    assert "Do these passages state the answer" in asked[1]  # "2, 1": neither yes nor no
    (confidence,) = after.confidence
    assert confidence.model_verdict is None and confidence.verdict_log_ratio == 0.0


def test_a_lexical_index_gets_the_model_fitted_without_dense_features(
    support_kb_bm25: Path,
) -> None:
    # the hybrid model reads a BM25-only index's dense features (all 0) as far below any
    # collection it was fitted on and abstains on every answerable question; the lexical
    # model, fitted on BM25-only indexes, answers most (README "Answers": 7 of 28
    # answerable and 7 of 8 unanswerable abstained on, this split)
    from twokeys.evaluation.answers import load_qa
    from twokeys.rag.evidence import gather

    items = load_qa(SUPPORT_KB / "qa.jsonl", split="test")
    lexical, hybrid = shipped(lexical=True), shipped()
    with open_index(support_kb_bm25) as kb:
        evidence = [
            (i.answerable, gather(kb, i.question, kb.search(i.question, mode="bm25", k=10)))
            for i in items
        ]
    answerable = [e.as_features() for gold, e in evidence if gold]
    unanswerable = [e.as_features() for gold, e in evidence if not gold]
    assert len(answerable) == 28 and len(unanswerable) == 8
    assert all(hybrid.probability(f) < hybrid.threshold for f in answerable)
    assert sum(lexical.probability(f) < lexical.threshold for f in answerable) <= 9
    assert sum(lexical.probability(f) < lexical.threshold for f in unanswerable) >= 6


def test_the_learned_order_packs_the_re_ranked_hits_and_judges_the_fused(
    support_kb_bm25: Path,
) -> None:
    from twokeys.rag.ask import RERANK_DEPTH, prepare, retrieval_depth
    from twokeys.rag.evidence import idf_held
    from twokeys.rag.rerank_context import rerank as learned_order
    from twokeys.rag.sentence_reader import static_reader

    question = "Why does the hub show a red light after a firmware update?"
    fused = AskOptions(mode="bm25", decompose="none", confidence="learned", order="fused")
    learned = AskOptions(mode="bm25", decompose="none", confidence="learned", order="learned")
    depth = retrieval_depth(fused.k, fused.budget.context_floor)
    with open_index(support_kb_bm25) as kb:
        before = prepare(kb, question, options=fused)
        after = prepare(kb, question, options=learned)
        deep = kb.search(question, mode="bm25", k=RERANK_DEPTH, explain=True)
        read = static_reader(question)
        expected = learned_order(deep, idf_held(kb, question), read=read)[:depth]
    # packed: the shipped model's order of the fused top RERANK_DEPTH, cut to the depth
    assert [h.chunk_id for h in after.runs[0].hits] == [h.chunk_id for h in expected]
    assert [h.chunk_id for h in after.runs[0].hits] != [h.chunk_id for h in before.runs[0].hits]
    # abstention still reads the fused hits it was fitted on
    assert after.confidence[0].probability == before.confidence[0].probability
    assert after.context.blocks[0].chunk_ids != before.context.blocks[0].chunk_ids


def test_order_must_be_known() -> None:
    from twokeys.errors import ConfigError

    with pytest.raises(ConfigError, match="order"):
        AskOptions(order="reranked")


def test_the_learned_order_re_ranks_only_the_fused_top_rerank_depth(
    support_kb_bm25: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A budget that retrieves more than RERANK_DEPTH hits keeps the hits below the fused
    top RERANK_DEPTH in the fused order: the model was fitted on (and its rank features
    are read within) the top RERANK_DEPTH."""
    from importlib import import_module

    from twokeys.rag.rerank_context import Held
    from twokeys.rag.sentence_reader import Reader
    from twokeys.types import Hit

    ask_module = import_module("twokeys.rag.ask")  # the package's `ask` shadows the module

    real = ask_module.learned_order
    seen: list[int] = []

    def spy(hits: Sequence[Hit], held: Held, read: Reader | None = None) -> list[Hit]:
        seen.append(len(hits))
        return list(reversed(real(hits, held, read=read)))  # any order unlike the fused one

    top = 5
    monkeypatch.setattr(ask_module, "RERANK_DEPTH", top)
    monkeypatch.setattr(ask_module, "learned_order", spy)
    question = "Why does the hub show a red light after a firmware update?"
    fused = AskOptions(mode="bm25", decompose="none", order="fused")
    learned = AskOptions(mode="bm25", decompose="none", order="learned")
    depth = ask_module.retrieval_depth(fused.k, fused.budget.context_floor)
    with open_index(support_kb_bm25) as kb:
        before = ask_module.prepare(kb, question, options=fused).runs[0].hits
        after = ask_module.prepare(kb, question, options=learned).runs[0].hits
    assert depth > top and len(before) > top
    assert seen == [top]  # the model reads the fused top RERANK_DEPTH only
    ids = [h.chunk_id for h in after]
    assert sorted(ids[:top]) == sorted(h.chunk_id for h in before[:top])
    assert ids[:top] != [h.chunk_id for h in before[:top]]
    assert ids[top:] == [h.chunk_id for h in before[top:]]  # the rest: the fused order


def test_the_learned_order_packs_with_excerpts_and_the_fused_order_without(
    support_kb_bm25: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    ask_module = importlib.import_module("twokeys.rag.ask")
    real = ask_module.pack
    caps: list[int | None] = []

    def spy(*args: object, **kwargs: object) -> object:
        caps.append(kwargs.get("excerpt_tokens"))  # type: ignore[arg-type]
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ask_module, "pack", spy)
    question = "Why does the hub show a red light after a firmware update?"
    with open_index(support_kb_bm25) as kb:
        for order in ("fused", "learned"):
            ask_module.prepare(kb, question, options=AskOptions(mode="bm25", order=order))
    assert caps == [None, EXCERPT_TOKENS]
