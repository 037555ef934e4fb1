"""The model as a judge (twokeys.rag.judge), with scripted models: re-ranking the fused
hits and the verdict, and what a broken or unreachable model leaves."""

from __future__ import annotations

import pytest

from conftest import DownLLM, ScriptedLLM
from twokeys.errors import ConfigError
from twokeys.rag.judge import NOT_ASKED, SupportBudget, rerank, support_verdicts, verdict
from twokeys.types import Chunk, Hit


def hits(n: int) -> list[Hit]:
    return [
        Hit(i, 1.0 / i, Chunk(f"d{i}.md", 0, f"passage {i}", 0, 9), f"d{i}", f"d{i}.md")
        for i in range(1, n + 1)
    ]


def test_rerank_puts_the_listed_passages_first_in_the_models_order() -> None:
    llm = ScriptedLLM("3, 1, 3, 99")
    ranked = rerank(llm, "which?", hits(12), n=5)
    assert [h.rank for h in ranked] == [3, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    prompt = llm.prompts[0]
    assert "[5] passage 5" in str(prompt) and "passage 6" not in str(prompt)


def test_a_reply_without_numbers_or_a_model_down_keeps_the_fused_order() -> None:
    assert [h.rank for h in rerank(ScriptedLLM("I cannot tell."), "q", hits(4))] == [1, 2, 3, 4]
    assert [h.rank for h in rerank(DownLLM(), "q", hits(4))] == [1, 2, 3, 4]


def test_the_verdict_reads_yes_no_and_anything_else_as_not_asked() -> None:
    assert verdict(ScriptedLLM("Yes."), "q", ["a"]) == 1.0
    assert verdict(ScriptedLLM("no"), "q", ["a"]) == 0.0
    assert verdict(ScriptedLLM("Maybe"), "q", ["a"]) == NOT_ASKED
    assert verdict(DownLLM(), "q", ["a"]) == NOT_ASKED
    assert verdict(ScriptedLLM("yes"), "q", []) == 0.0


def test_support_verdicts_read_yes_no_and_stop_at_the_time_budget() -> None:
    sentences = [(f"Claim {i} [1].", ["passage"]) for i in range(4)]
    ticks = iter([0.0, 0.0, 1.0, 2.5, 9.0])  # the start, then one reading before each call
    llm = ScriptedLLM("no")
    said = support_verdicts(llm, sentences, SupportBudget(seconds=2.0), clock=lambda: next(ticks))
    assert said == [False, False, None, None]  # the third call would start 2.5 s in
    assert len(llm.prompts) == 2
    assert support_verdicts(ScriptedLLM("Yes, it is."), sentences[:1]) == [True]
    assert support_verdicts(ScriptedLLM("Perhaps"), sentences[:1]) == [None]
    assert support_verdicts(DownLLM(), sentences) == [None] * 4


def test_a_base_model_is_asked_in_text_and_a_bad_budget_is_named() -> None:
    llm = ScriptedLLM("yes", chat=False)
    assert support_verdicts(llm, [("The fee is 5 EUR [1].", ["The fee is 5 EUR."])]) == [True]
    (prompt,) = llm.prompts
    assert isinstance(prompt, str) and prompt.endswith("Reply yes or no.\nAnswer:")
    with pytest.raises(ConfigError, match=r"support.sentences: expected an integer >= 1, got 0"):
        SupportBudget(sentences=0)
