"""Grounding in ``ask``: abstention before any model runs, sentence checks after it, the
extractive fallback when the model is down, the event stream and the JSON schema.

A lexical-only index of the support KB (fast); stub models stand in for real ones.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import SUPPORT_KB, DownLLM, ScriptedLLM
from twokeys import open_index
from twokeys.cli import main
from twokeys.evaluation.answers import load_qa
from twokeys.rag import Answer, AskOptions, ask
from twokeys.rag.ask import ABSTAINED, Done, Packed, Retrieved, TextDelta, ask_events
from twokeys.rag.grounding import (
    HEIGHT_FLOOR,
    STRONG_PEAK,
    THRESHOLD,
    Confidence,
    _name_runs,
    _names,
    retrieval_confidence,
)
from twokeys.rag.prompt import DECLINE, render_prompt
from twokeys.rag.support import check_sentences
from twokeys.server.openai_api import sources_text

BM25 = AskOptions(mode="bm25")


pytestmark = pytest.mark.usefixtures("no_llm_from_environment")


@pytest.fixture(scope="module")
def kb_path(support_kb_bm25: Path) -> Path:
    return support_kb_bm25


def stub_llm(answer: str) -> ScriptedLLM:
    """A model named "stub" that answers ``answer`` in one piece, whatever the sources say."""
    return ScriptedLLM(answer, name="stub", whole=True)


def test_a_model_that_ignores_the_sources_is_flagged_unsupported(kb_path: Path) -> None:
    llm = stub_llm("Paris.")
    options = AskOptions(mode="bm25", abstain=False)
    with open_index(kb_path) as kb:
        answer = ask(kb, "What does error code ZX-4821 mean?", llm=llm, options=options)
        cited = ask(
            kb, "What does error code ZX-4821 mean?", llm=stub_llm("Paris [1]."), options=options
        )
    assert answer.kind == "generated" and answer.text == "Paris."
    # cites nothing, and no source holds its words: unsupported all the same
    assert [c.status for c in answer.checks] == ["unsupported"] and answer.flagged == answer.checks
    assert [c.status for c in cited.checks] == ["unsupported"] and cited.checks[0].citations == (1,)
    data = cited.to_dict()
    assert data["sentences"] == [
        {
            "text": "Paris [1].",
            "citations": [1],
            "status": "unsupported",
            "support": 0.0,
            "model_verdict": None,
            "added": False,
        }
    ]


def test_a_model_that_says_the_sources_do_not_answer_abstains(kb_path: Path) -> None:
    # retrieval sees the question as covered; the model, reading the passages, declines
    question = "How loud is the siren of the Hub?"
    options = AskOptions(mode="bm25", abstain=False)
    with open_index(kb_path) as kb:
        declined = ask(kb, question, llm=stub_llm(DECLINE), options=options)
        worded = ask(kb, question, llm=stub_llm("The sources don't say."), options=options)
        strict = ask(kb, question, llm=stub_llm(DECLINE), options=replace(options, strict=True))
        answered = ask(kb, question, llm=stub_llm("Paris."), options=options)
    assert declined.kind == "generated" and declined.declined and declined.abstains
    assert [c.status for c in declined.checks] == ["declines"]
    assert declined.flagged == ()  # claims nothing, so needs no citation
    assert declined.to_dict()["declined"] is True
    assert sources_text(declined).startswith("\n\nClosest sources:")
    assert worded.declined
    with open_index(kb_path) as kb:
        cited = ask(kb, question, llm=stub_llm(f"{DECLINE} [1]"), options=options)
        claim = ask(
            kb, question, llm=stub_llm("The sources don't say, it is 85 dB [1]."), options=options
        )
    assert cited.declined and [c.status for c in cited.checks] == ["declines"]
    assert cited.checks[0].citations == (1,)
    assert not claim.declined and claim.checks[0].status == "unsupported"
    assert strict.text == DECLINE  # --strict keeps it
    assert not answered.declined and not answered.abstains and answered.flagged
    assert sources_text(answered).startswith("\n\nSources:")
    # an answer that declines one part and answers another is no abstention
    part = f"ZX-4821 means the input voltage is too low [1]. {DECLINE}"
    with open_index(kb_path) as kb:
        mixed = ask(kb, "What does error code ZX-4821 mean?", llm=stub_llm(part), options=BM25)
    assert [c.status for c in mixed.checks] == ["supported", "declines"]
    assert not mixed.declined


def test_eval_answers_counts_a_model_s_decline_as_abstention(kb_path: Path) -> None:
    from twokeys.evaluation.answers import evaluate_answers

    items = [i for i in load_qa(SUPPORT_KB / "qa.jsonl", split="dev") if i.id in ("qa01", "qa47")]
    options = AskOptions(mode="bm25", abstain=False)  # only the model can abstain
    with open_index(kb_path) as kb:
        declining = evaluate_answers(kb, items, options=options, llm=stub_llm(DECLINE))
        answering = evaluate_answers(kb, items, options=options, llm=stub_llm("Paris [1]."))
    assert declining.systems[0].abstention == 1.0  # qa47, the unanswerable one
    assert declining.systems[0].false_abstention == 1.0  # and qa01, which it could answer
    assert answering.systems[0].abstention == 0.0
    # nothing retrieved to answer from ("bake sourdough bread": no word BM25 knows) is no
    # answer either
    (nothing,) = [i for i in load_qa(SUPPORT_KB / "qa.jsonl", split="dev") if i.id == "qa46"]
    with open_index(kb_path) as kb:
        empty = evaluate_answers(kb, [nothing], options=options, llm=stub_llm("Paris [1]."))
    assert empty.systems[0].outcomes[0].answer is not None
    assert empty.systems[0].abstention == 1.0


def test_strict_drops_what_the_sources_do_not_back(kb_path: Path) -> None:
    text = (
        "ZX-4821 means the Hub found the voltage on its input rail below the safe operating "
        "threshold [1]. The capital of France is Paris [1]. It is sunny today."
    )
    with open_index(kb_path) as kb:
        loose = ask(kb, "What does error code ZX-4821 mean?", llm=stub_llm(text), options=BM25)
        strict = ask(
            kb,
            "What does error code ZX-4821 mean?",
            llm=stub_llm(text),
            options=AskOptions(mode="bm25", strict=True),
        )
    assert [c.status for c in loose.checks] == ["supported", "unsupported", "unsupported"]
    assert loose.text == text
    assert strict.text.startswith("ZX-4821 means") and "Paris" not in strict.text
    assert "sunny" not in strict.text


def test_a_sentence_that_cites_nothing_is_attributed_or_marked(kb_path: Path) -> None:
    # a weak model (the 270M Gemma) writes sentences without [n]: the one a source backs
    # gets that source's number, the other is unsupported; the CLI names why
    text = (
        "ZX-4821 means the Hub found the voltage on its input rail below the safe operating "
        "threshold. The capital of Australia is Sydney."
    )
    with open_index(kb_path) as kb:
        answer = ask(kb, "What does error code ZX-4821 mean?", llm=stub_llm(text), options=BM25)
        strict = ask(
            kb,
            "What does error code ZX-4821 mean?",
            llm=stub_llm(text),
            options=AskOptions(mode="bm25", strict=True),
        )
    zx = next(s.number for s in answer.sources if s.path == "errors/zx-4821.md")
    first, second = answer.checks
    assert first.status == "supported" and first.added and first.citations == (zx,)
    assert second.status == "unsupported" and second.citations == () and not second.added
    assert answer.text == text.replace("threshold.", f"threshold [{zx}].")
    assert answer.cited == (zx,)
    assert strict.text == f"{first.text[:-1]} [{zx}]."


def test_an_off_topic_question_abstains_before_the_model_runs(kb_path: Path) -> None:
    llm = stub_llm("Paris.")
    with open_index(kb_path) as kb:
        answer = ask(kb, "Who won the World Cup in the United Kingdom?", llm=llm, options=BM25)
        france = ask(kb, "What is the capital of France?", llm=llm, options=BM25)
        unknown_code = ask(kb, "What does error code ZX-9001 mean?", options=BM25)
    assert llm.calls == []
    assert answer.kind == "abstained" and answer.text.startswith(ABSTAINED)
    assert answer.sources  # the closest sources are still shown
    assert france.kind == "no-evidence"  # BM25 alone matches no word of it
    assert unknown_code.kind == "abstained" and "zx-9001" in unknown_code.text
    assert unknown_code.plan.confidence[0].missing == ("zx-9001",)


def test_a_product_name_built_from_corpus_words_abstains(kb_path: Path) -> None:
    # "Lumatek", "Cam", "Hub" and the ring light table are all in the corpus, so BM25
    # covers each word; no chunk holds "Lumatek Cam Hub" side by side.
    question = "What does the ring light of the Lumatek Cam Hub mean?"
    with open_index(kb_path) as kb:
        made_up = ask(kb, question, options=BM25)
        real = ask(kb, question.replace("Cam Hub", "Cam Exterior"), options=BM25)
        unnamed = retrieval_confidence(kb, question.lower())
    confidence = made_up.plan.confidence[0]
    assert confidence.unseen_names == () and confidence.missing == ()
    assert confidence.unseen_phrases == ("Lumatek Cam Hub",)
    assert made_up.kind == "abstained" and "Lumatek Cam Hub" in made_up.text
    assert unnamed.answerable and unnamed.lexical == confidence.lexical  # same words, no name
    assert real.kind == "extractive" and real.plan.confidence[0].unseen_phrases == ()


def _lexical_kb(tmp_path: Path, pages: dict[str, str]) -> Path:
    """A lexical-only index of ``pages`` (file name -> Markdown), built under ``tmp_path``."""
    from twokeys import IndexOptions, build_index

    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in pages.items():
        (docs / name).write_text(text, encoding="utf-8")
    path = tmp_path / "kb.twokeys"
    build_index(docs, path, IndexOptions(encoder=None))
    return path


def _abstains_naming(answer: Answer, rule: str, name: str) -> None:
    """``answer`` abstained on its one part, whose confidence names ``name`` under
    ``rule`` (a field of :class:`Confidence` and of its JSON), as the reason says."""
    confidence = answer.plan.confidence[0]
    assert getattr(confidence, rule) == (name,) and not confidence.answerable
    assert answer.kind == "abstained" and f"never mentions {name}" in answer.text
    assert confidence.to_dict()[rule] == [name]


def test_an_identifier_no_chunk_holds_whole_is_missing(kb_path: Path) -> None:
    # "--download" has its part "download" in the corpus, never the flag; one with a
    # digit must match whole (ZX-4821 is no help for ZX-482), and so must a quantity
    with open_index(kb_path) as kb:
        flag = retrieval_confidence(kb, "What does the --download flag measure?")
        code = retrieval_confidence(kb, "What does error code ZX-482 mean?")
        other = retrieval_confidence(kb, "Does the Hub have a 6.5GHz radio?")
    assert flag.missing == ("--download",) and not flag.answerable
    assert code.missing == ("zx-482",)
    assert other.missing == ("6.5ghz",) and not other.answerable


def test_an_unseen_phrase_counts_like_an_unseen_name() -> None:
    seen = Confidence("q", 0.9, 4.0, ())
    assert seen.answerable
    assert not replace(seen, unseen_phrases=("Lumatek Smart Lock",)).answerable
    assert replace(seen, dense=STRONG_PEAK, unseen_phrases=("Lumatek Smart Lock",)).answerable
    assert not replace(seen, dense=None, unseen_phrases=("Lumatek Smart Lock",)).answerable


def test_a_peak_of_chance_cosines_does_not_vouch() -> None:
    # a peak of 4 sd over a low, narrow spread of cosines (an off-topic question on a
    # large corpus) with little coverage: the height from chance decides
    seen = Confidence("q", 0.3, 4.0, (), height=0.30)
    assert seen.score >= THRESHOLD and seen.above_chance and seen.answerable
    assert not replace(seen, height=0.25).answerable  # 0.25 + 0.5 * 0.3 < HEIGHT_FLOOR
    assert replace(seen, height=HEIGHT_FLOOR).answerable
    assert replace(seen, height=None).answerable  # no height read: the peak rule alone
    assert replace(seen, height=0.25, found=("ZX-4821",)).answerable  # an exact identifier
    assert replace(seen, height=0.25).to_dict()["dense_height"] == 0.25


def test_name_runs_are_capitalised_words_side_by_side() -> None:
    assert _name_runs("How long does the Lumatek Smart Lock last?") == ["Lumatek Smart Lock"]
    assert (
        _name_runs("Lumatek Studio runs on which Chromebook?") == []
    )  # a sentence start is no name
    assert _name_runs("Does the Hub's Wi-Fi drop, and does Apple Home work?") == ["Apple Home"]
    assert _name_runs("Pair a Cam Go with your phone. Then open Studio Pro?") == [
        "Cam Go",
        "Studio Pro",
    ]
    assert _name_runs("Reset Hub Button Not Working") == []  # title case marks no name
    # a capitalised unit after a number is no name: "GHz Wi-Fi" is not a run
    assert _name_runs("Which channel should my router's 2.4 GHz Wi-Fi use?") == []
    assert _names("Which channel should my router's 2.4 GHz Wi-Fi use?") == ["Wi-Fi"]


def test_a_part_the_sources_do_not_answer_is_said_so(kb_path: Path) -> None:
    with open_index(kb_path) as kb:
        answer = ask(kb, "What does error code ZX-4821 mean, and what is ZX-9001?", options=BM25)
    assert answer.kind == "extractive"
    assert answer.plan.unanswered == ("what is ZX-9001",)
    assert "The sources do not answer this part." in answer.text
    assert all(s.path != "errors/zx-9001.md" for s in answer.sources)
    assert "below the safe operating threshold" in answer.text
    # BM25 finds nothing for ZX-9001; a part with hits gets its closest sources, packed
    # after the hits the answered part was judged on (those retrieved to fill the budget
    # come last), and nothing is quoted from a block only it brought
    with open_index(kb_path) as kb:
        answer = ask(
            kb, "What does error code ZX-4821 mean, and does the Hub support Z-Wave?", options=BM25
        )
    assert answer.plan.unanswered == ("does the Hub support Z-Wave",)
    # a model is told which part the sources do not answer, though its sources are there
    prompt = render_prompt(answer.plan.prompt)
    assert "1. What does error code ZX-4821 mean\n" in prompt
    assert "2. does the Hub support Z-Wave (the sources do not answer this part; say so)" in prompt
    blocks = answer.plan.context.blocks
    judged = {hit.chunk_id for hit in answer.plan.runs[0].hits[: BM25.k]}
    assert judged & set(blocks[0].chunk_ids)  # the answered part's best comes first
    own = [b.number for b in blocks if b.queries == (1,)]
    answered = [b.number for b in blocks if judged & set(b.chunk_ids)]
    filling = [b.number for b in blocks if b.queries == (0,) and b.number not in answered]
    assert own and min(own) > max(answered)
    assert filling and min(filling) > max(own)
    assert not set(own) & set(answer.cited)


def test_a_name_a_part_carries_from_the_part_before_is_not_its_own(kb_path: Path) -> None:
    # a sub-query carries the words of the part before it in a closing parenthesis; an
    # unseen name there ("VPN") was that part's question, not this one's
    with open_index(kb_path) as kb:
        carried = retrieval_confidence(kb, "how long does a factory reset take (Hub behind a VPN)")
        own = retrieval_confidence(kb, "what does the VPN mode do (power supply)")
    assert carried.unseen == ()
    assert own.unseen_names == ("VPN",) and not own.answerable


def test_an_unreachable_model_gives_the_extractive_answer(kb_path: Path) -> None:
    with open_index(kb_path) as kb:
        events = list(
            ask_events(kb, "What does error code ZX-4821 mean?", llm=DownLLM(), options=BM25)
        )
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["Retrieved", "Packed", "ModelFailed", "TextDelta", "Done"]
    answer = events[-1].answer  # type: ignore[union-attr]
    assert answer.kind == "extractive" and "connection refused" in (answer.model_error or "")
    assert "below the safe operating threshold" in answer.text


def test_events_arrive_in_order_and_the_answer_serialises(kb_path: Path) -> None:
    with open_index(kb_path) as kb:
        events = list(
            ask_events(
                kb,
                "What does error code ZX-4821 mean?",
                llm=stub_llm("Low voltage [1]."),
                options=BM25,
            )
        )
    assert isinstance(events[0], Retrieved) and isinstance(events[1], Packed)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Low voltage [1]."]
    done = events[-1]
    assert isinstance(done, Done) and done.answer.cited == (1,)
    data = json.loads(json.dumps(done.answer.to_dict(with_prompt=True)))
    assert data["kind"] == "generated" and data["confidence"][0]["answerable"] is True
    assert data["sources"][0]["path"] == "errors/zx-4821.md" and "prompt" in data


def test_a_merged_block_cites_the_heading_of_the_quoted_chunk(kb_path: Path) -> None:
    with open_index(kb_path) as kb:
        answer = ask(kb, "Why was nomic-embed-text chosen over mxbai-embed-large?", options=BM25)
    source = next(s for s in answer.sources if s.path == "engineering/decision-log.md")
    assert source.cited
    assert all("ADR-017" in h for h in source.quoted_headings), source.quoted_headings


def test_sentence_checks_attach_a_lone_citation_to_its_sentence() -> None:
    checks = check_sentences("Low voltage. [1]", (), str.split)
    assert [c.text for c in checks] == ["Low voltage. [1]"]


def test_cli_says_once_that_the_model_is_down_and_exits_3(kb_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "ask",
            "What does error code ZX-4821 mean?",
            "--index",
            str(kb_path),
            "--mode",
            "bm25",
            "--llm",
            "openai:x",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--prompt-style",
            "chat",
            "--timeout",
            "2",
        ],
    )
    assert result.exit_code == 3, result.output
    assert result.stderr.count("warning:") == 1 and "giving the extractive answer" in result.stderr
    assert "Answer (openai:x)" not in result.stdout
    assert result.stdout.startswith("Extractive answer")


def test_cli_abstains_with_the_closest_sources(kb_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "ask",
            "Who won the World Cup in the United Kingdom?",
            "--index",
            str(kb_path),
            "--mode",
            "bm25",
        ],
    )
    assert result.exit_code == 0
    assert result.stdout.startswith(ABSTAINED) and "Closest sources:" in result.stdout


def test_eval_answers_compares_ask_with_the_baselines(kb_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "eval-answers",
            str(SUPPORT_KB / "qa.jsonl"),
            "--index",
            str(kb_path),
            "--mode",
            "bm25",
            "--split",
            "dev",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    systems = {s["system"]: s for s in data["systems"]}
    assert list(systems) == ["twokeys", "naive-2000chars", "naive-4000chars", "top-k"]
    assert data["questions"] == 43 and data["budget"] == 1000
    ours = systems["twokeys"]
    assert ours["context_recall"] > systems["naive-2000chars"]["context_recall"]
    assert ours["abstention"] > 0.5 and systems["top-k"]["abstention"] == 0.0
    assert systems["naive-2000chars"]["fact_containment"] is None


def test_eval_answers_names_a_docs_folder_without_markdown(kb_path: Path, tmp_path: Path) -> None:
    args = ["eval-answers", str(SUPPORT_KB / "qa.jsonl"), "--index", str(kb_path), "--mode", "bm25"]
    result = CliRunner().invoke(main, [*args, "--split", "dev", "--docs", str(tmp_path)])
    assert result.exit_code != 0
    assert f"{tmp_path}: no Markdown files for the naive baseline" in result.output
    assert "Traceback" not in result.output


def test_an_empty_generated_answer_falls_back_to_the_extractive_one(kb_path: Path) -> None:
    with open_index(kb_path) as kb:
        answer = ask(kb, "What does error code ZX-4821 mean?", llm=stub_llm("  "), options=BM25)
    assert answer.kind == "extractive" and answer.model_error == "stub returned an empty answer"
    assert "below the safe operating threshold" in answer.text


def test_llm_decomposition_with_the_model_down_says_so_once(kb_path: Path) -> None:
    options = AskOptions(mode="bm25", decompose="llm")
    with open_index(kb_path) as kb:
        events = list(
            ask_events(kb, "What does error code ZX-4821 mean?", llm=DownLLM(), options=options)
        )
    assert [type(e).__name__ for e in events].count("ModelFailed") == 1
    answer = events[-1].answer  # type: ignore[union-attr]
    assert answer.kind == "extractive" and answer.model_error is not None


def test_eval_answers_with_a_model_counts_its_citations(kb_path: Path) -> None:
    from twokeys.evaluation.answers import evaluate_answers, load_qa

    items = [i for i in load_qa(SUPPORT_KB / "qa.jsonl", split="dev") if i.id in ("qa01", "qa07")]
    with open_index(kb_path) as kb:
        result = evaluate_answers(kb, items, options=BM25, llm=stub_llm("Paris [1]."))
    ours = result.systems[0]
    assert ours.name == "twokeys+stub"
    assert ours.fact_containment == 0.0  # the stub never states a gold fact
    assert ours.citation_precision == 1.0  # but block [1] holds it on both questions
