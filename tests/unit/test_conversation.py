"""Reading a chat client's conversation, fitting it into a token budget, detecting chat
clients' background tasks, and cutting a reply at stop sequences or a token limit."""

from __future__ import annotations

import pytest

from twokeys.errors import ConfigError
from twokeys.rag.conversation import Conversation, Turn
from twokeys.server.chat import Shaper
from twokeys.server.messages import conversation_of, fit, strip_sources
from twokeys.server.tasks import detect
from twokeys.text.tokens import approx_token_counter


def words(n: int, word: str = "lorem") -> str:
    return " ".join([word] * n)


def test_conversation_of_reads_system_turns_and_the_newest_question() -> None:
    c = conversation_of(
        [
            ("system", "Be brief."),
            ("user", "What is ZX-4821?"),
            ("assistant", "A low voltage [1].\n\nSources:\n[1] errors/zx-4821.md"),
            ("tool", "ignored"),
            ("developer", "Cite."),
            ("user", "  how do I fix it?  "),
        ]
    )
    assert c.system == "Be brief.\n\nCite."
    assert c.turns == (Turn("user", "What is ZX-4821?"), Turn("assistant", "A low voltage [1]."))
    assert c.question == "how do I fix it?"
    assert c.earlier_questions == ("What is ZX-4821?",)
    with pytest.raises(ConfigError, match="messages: no user message with text"):
        conversation_of([("system", "x"), ("user", "  ")])


def test_strip_sources_takes_only_this_service_s_tail() -> None:
    assert strip_sources("Yes [1].\n\nClosest sources:\n[1] a.md\n[2] b.md") == "Yes [1]."
    assert strip_sources("Sources: are cited inline.") == "Sources: are cited inline."
    reply = (
        "No [2]. [not supported by the cited source] Yes [1].\n\n"
        "Not supported by the cited sources:\n- Yes [1].\n\n"
        "Searched for: refund days\n\nSources:\n[1] a.md — Refunds"
    )
    assert strip_sources(reply) == "No [2]. Yes [1]."


def test_fit_keeps_the_system_text_and_the_newest_turns() -> None:
    turns = tuple(
        Turn("user" if i % 2 == 0 else "assistant", f"turn{i} {words(50)}") for i in range(20)
    )
    c = Conversation("newest?", turns, system=words(100, "rule"))
    fitted = fit(c, 600, approx_token_counter)
    assert fitted.system == c.system and not fitted.system_cut
    assert fitted.turns == turns[-len(fitted.turns) :]  # a suffix: no hole in the middle
    assert 0 < len(fitted.turns) < 20 and fitted.dropped == 20 - len(fitted.turns)
    assert fitted.question == "newest?"
    assert fit(c, 10_000, approx_token_counter) == c


def test_fit_cuts_a_system_text_over_half_the_budget_at_a_sentence_end() -> None:
    system = " ".join(f"Rule number {i} says to be polite." for i in range(200))
    fitted = fit(Conversation("q", (), system), 200, approx_token_counter)
    assert fitted.system_cut and fitted.system.endswith("polite.")
    assert approx_token_counter([fitted.system])[0] <= 100
    assert system.startswith(fitted.system)


def test_messages_alternate_from_a_user_turn_to_an_assistant_turn() -> None:
    c = Conversation(
        "q",
        (
            Turn("assistant", "Hello!"),
            Turn("user", "a"),
            Turn("user", "b"),
            Turn("assistant", "c"),
            Turn("user", "d"),
        ),
    )
    assert [(m.role, m.content) for m in c.messages()] == [("user", "a\n\nb"), ("assistant", "c")]


def test_background_tasks_are_detected_by_their_shape() -> None:
    title = (
        '### Task:\nGenerate a title.\n### Output:\nJSON format: { "title": "..." }\n'
        "### Chat History:\n<chat_history>\nUSER: What is ZX-4821?\nASSISTANT: Low voltage."
        "\n</chat_history>"
    )
    task = detect(title)
    assert task is not None and task.task == "title"
    assert task.history == (("user", "What is ZX-4821?"), ("assistant", "Low voltage."))
    assert detect('What does the JSON format { "title": x } of the API mean?') is None
    assert (
        detect('### Task:\nJSON format: { "weather": [] }\n<chat_history></chat_history>') is None
    )


def test_the_shaper_cuts_at_a_stop_sequence_across_pieces_and_at_the_token_limit() -> None:
    shaper = Shaper(["STOP"], None)
    out = shaper.feed("one two ST") + shaper.feed("OP three") + shaper.close()
    assert out == "one two " and shaper.finish == "stop"
    limited = Shaper((), 3)
    out = limited.feed("one two three four five") + limited.close()
    assert out == "one two three" and limited.finish == "length"
    plain = Shaper((), None)
    assert plain.feed("a b") + plain.close() == "a b" and plain.finish is None
