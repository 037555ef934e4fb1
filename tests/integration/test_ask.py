"""``ask`` over the example support KB: extractive answers, fair decomposition, the CLI.

The index is lexical-only (fast to build); one test uses the hashing fake encoder for
the default hybrid mode. A scripted LLM stands in for a model where generation is tested.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import SUPPORT_KB, HashEncoder, ScriptedLLM
from twokeys import IndexOptions, build_index, open_index
from twokeys.chunking import approx_token_counter
from twokeys.cli import main
from twokeys.rag import AskOptions, Budget, ask
from twokeys.rag.extractive import EXTRACTIVE_NOTE
from twokeys.rag.prompt import COMPLETION_STOP, SYSTEM, render_prompt

THREE_PARTS = (
    "What does error code ZX-4821 mean, why was nomic-embed-text chosen, "
    "and what does the -v flag do in lumatek-cli?"
)
THREE_DOCS = {"errors/zx-4821.md", "engineering/decision-log.md", "guides/studio-cli.md"}
BM25 = AskOptions(mode="bm25")


pytestmark = pytest.mark.usefixtures("no_llm_from_environment")


@pytest.fixture(scope="module")
def kb_path(support_kb_bm25: Path) -> Path:
    return support_kb_bm25


def test_extractive_answer_quotes_and_cites_the_right_page(kb_path: Path) -> None:
    with open_index(kb_path) as kb:
        answer = ask(kb, "What does error code ZX-4821 mean?", options=BM25)
    assert answer.kind == "extractive" and answer.llm is None
    assert answer.text.startswith(EXTRACTIVE_NOTE)
    assert "below the safe operating threshold. [1]" in answer.text
    assert answer.sources[0].path == "errors/zx-4821.md" and answer.cited[0] == 1
    context = answer.context
    assert approx_token_counter([context.text])[0] == context.section("context").used
    assert context.section("context").used <= context.section("context").budget
    assert context.used + context.section("answer").budget <= context.total == 2048


def test_decomposition_keeps_every_part_s_document_where_one_query_loses_one(
    kb_path: Path,
) -> None:
    budget = Budget.for_total(1024)
    with open_index(kb_path) as kb:
        split = ask(kb, THREE_PARTS, options=AskOptions(mode="bm25", budget=budget))
        whole = ask(
            kb, THREE_PARTS, options=AskOptions(mode="bm25", budget=budget, decompose="none")
        )
    assert len(split.plan.parts) == 3
    assert {s.path for s in split.sources} >= THREE_DOCS
    # each part's best evidence comes first, in part order
    assert [split.context.block(q.blocks[0]).path for q in split.context.queries] == [
        "errors/zx-4821.md",
        "engineering/decision-log.md",
        "guides/studio-cli.md",
    ]
    assert "errors/zx-4821.md" not in {s.path for s in whole.sources}
    for answer in (split, whole):
        assert answer.context.section("context").used <= answer.context.section("context").budget
    # the extractive answer has a quote for each part
    assert all(f"{part}:" in split.text for part in split.plan.parts)


def test_a_larger_budget_is_filled_with_more_hits_and_judged_on_the_same_ones(
    kb_path: Path,
) -> None:
    question = "How do I reset the Hub?"
    with open_index(kb_path) as kb:
        small = ask(kb, question, options=AskOptions(mode="bm25", budget=Budget.for_total(1024)))
        large = ask(kb, question, options=AskOptions(mode="bm25", budget=Budget.for_total(8192)))
    assert len(large.plan.runs[0].hits) > len(small.plan.runs[0].hits) >= BM25.k
    assert large.context.section("context").used > 3 * small.context.section("context").used
    # abstention reads the first k hits, as many as the default budget retrieves
    assert large.plan.confidence == small.plan.confidence


def test_a_chat_model_gets_messages_and_its_citations_are_read_back(kb_path: Path) -> None:
    llm = ScriptedLLM("ZX-4821 means the input voltage is too low [1]. See also [99] and [2, 3].")
    streamed: list[str] = []
    with open_index(kb_path) as kb:
        answer = ask(
            kb, "What does error code ZX-4821 mean?", llm=llm, options=BM25, on_text=streamed.append
        )
    assert answer.kind == "generated" and answer.llm == "scripted"
    assert "".join(streamed) == llm.answer and answer.text == llm.answer
    assert answer.cited == (1, 2, 3)  # [99] names no block
    prompt, stop, max_tokens = llm.calls[0]
    assert isinstance(prompt, list) and prompt[0].content == SYSTEM
    assert answer.context.text in prompt[1].content
    assert "Question: What does error code ZX-4821 mean?" in prompt[1].content
    assert stop == () and max_tokens == 384


def test_a_base_model_gets_a_completion_prompt_with_stop_strings(kb_path: Path) -> None:
    llm = ScriptedLLM(" Low input voltage [1].", chat=False)
    with open_index(kb_path) as kb:
        answer = ask(kb, "What does error code ZX-4821 mean?", llm=llm, options=BM25)
    prompt, stop, _ = llm.calls[0]
    assert isinstance(prompt, str) and prompt.endswith(
        "Question: What does error code ZX-4821 mean?\nAnswer:"
    )
    assert stop == COMPLETION_STOP and answer.cited == (1,)
    assert render_prompt(answer.plan.prompt) == prompt


def test_no_matching_passage_means_no_generation(kb_path: Path) -> None:
    llm = ScriptedLLM("should not be asked")
    with open_index(kb_path) as kb:
        answer = ask(kb, "xylophonic quaternion", llm=llm, options=BM25)
    assert answer.kind == "no-evidence" and answer.sources == () and llm.calls == []


def test_hybrid_mode_with_the_fake_encoder(tmp_path: Path) -> None:
    path = tmp_path / "hybrid.twokeys"
    encoder = HashEncoder()
    build_index(SUPPORT_KB / "docs", path, IndexOptions(encoder="test-hash"), encoder=encoder)
    with open_index(path, encoder=encoder) as kb:
        answer = ask(kb, "What does error code ZX-4821 mean?")
    assert answer.sources[0].path == "errors/zx-4821.md"


# --- CLI ---------------------------------------------------------------------------------


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["ask", *args])
    return result.exit_code, result.stdout, result.stderr


def test_cli_ask_prints_an_extractive_answer_and_its_sources(kb_path: Path) -> None:
    code, out, _ = cli(
        "What does error code ZX-4821 mean?", "--index", str(kb_path), "--mode", "bm25"
    )
    assert code == 0
    assert out.startswith("Extractive answer (no language model configured)")
    # the source line names the heading of each chunk a quote came from
    assert (
        "\nSources:\n  [1] errors/zx-4821.md  Error ZX-4821: Power supply undervoltage detected"
        in out
    )
    assert "Power supply undervoltage detected > Summary" in out.split("Sources:")[1]
    assert "(not cited)" in out


def test_cli_ask_json_and_show_context(kb_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TWOKEYS_INDEX", str(kb_path))
    code, out, _ = cli(
        THREE_PARTS, "--mode", "bm25", "--budget", "1024", "--json", "--show-context"
    )
    assert code == 0
    data = json.loads(out)
    assert data["kind"] == "extractive" and len(data["sub_queries"]) == 3
    assert {s["path"] for s in data["sources"]} >= THREE_DOCS
    sections = {s["name"]: s for s in data["budget"]["sections"]}
    assert sections["context"]["used"] <= sections["context"]["budget"]
    assert data["budget"]["total"] == 1024 and data["context"].startswith("[1] errors/zx-4821.md")

    code, out, _ = cli(
        "What does error code ZX-4821 mean?", "--mode", "bm25", "--show-context", "-k", "2"
    )
    assert code == 0
    assert (
        "──── prompt (no model: the context the quotes come from) ────\n[1] errors/zx-4821.md"
        in out
    )
    assert "──── budget: 2048 tokens, counted with approximate" in out
    assert "  answer           384 reserved for the reply" in out
    assert "    part 1:" in out

    code, out, _ = cli(THREE_PARTS, "--mode", "bm25", "--no-decompose", "--json")
    assert json.loads(out)["sub_queries"] == [THREE_PARTS]


def test_cli_ask_errors_are_one_line(kb_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for args, message in [
        (["--llm", "gpt4"], "error: llm: unknown model spec 'gpt4'"),
        (
            ["--llm", "openai:gpt-4o-mini"],
            "error: llm: openai:MODEL at api.openai.com needs OPENAI_API_KEY",
        ),
        ([], "error: this index has no dense vectors"),  # default mode is hybrid
        (
            ["--mode", "bm25", "--decompose-with-llm"],
            "error: decompose: 'llm' needs a language model",
        ),
    ]:
        code, _, err = cli("What is ZX-4821?", "--index", str(kb_path), *args)
        assert code == 1 and err.startswith(message) and len(err.strip().splitlines()) == 1, err
    code, _, err = cli("x", "--index", str(kb_path), "--budget", "100")
    assert code == 2 and "--budget" in err
