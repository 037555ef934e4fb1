"""Prompt templates: chat messages for chat models, a completion prompt for base models.

Both tell the model to answer only from the numbered context and to cite it as ``[n]``.
A base model (``--llm local``: Gemma 3 270M) does not follow instructions, so its
prompt is laid out as a document to be continued: one worked example (sources, question,
cited answer), then the real sources and question and ``Answer:``; the answer is one
paragraph, ended by one of :data:`COMPLETION_STOP` (at most four, OpenAI's limit).

:attr:`Template.instructions` is everything the model sees besides the context and the
question, with ``<|role|>`` markers standing in for the chat template's role tokens; it
is what the packer counts against the ``instructions`` budget.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from twokeys.errors import ConfigError
from twokeys.llm.base import Message, Prompt

Style = Literal["chat", "completion"]
STYLES: tuple[str, ...] = ("chat", "completion")

DECLINE = "The sources do not answer this."  # what a model is asked to say when they don't
SYSTEM = (
    "You answer questions using only the numbered context passages the user gives you. "
    "After each statement, cite the passage it comes from by its number in square "
    f'brackets, like [1] or [2][3]. If the passages lack the answer, reply "{DECLINE}" '
    "Do not use any other knowledge."
)
CLIENT_SYSTEM = "The chat application adds these instructions:"
COMPLETION_HEADER = (
    "Below are numbered sources, a question, and an answer written only from the sources. "
    "The answer cites the sources it uses by number in square brackets, like [1].\n\n"
    "Sources:\n\n"
    "[1] manual/kettle.md | Kettle > Descaling\n"
    "Descale the kettle every month. Fill it with equal parts water and vinegar, boil, and "
    "rinse twice.\n\n"
    "[2] manual/kettle.md | Kettle > Warranty\n"
    "The kettle has a two-year warranty.\n\n"
    "Question: How often should I descale the kettle?\n"
    "Answer: Descale it every month [1]. Fill it with equal parts water and vinegar, boil, "
    "and rinse twice [1]."
)
COMPLETION_STOP: tuple[str, ...] = ("\nQuestion:", "\nSources:", "\n\n", "<end_of_turn>")


@dataclass(frozen=True)
class Template:
    """How the context and the question become a prompt."""

    style: Style = "chat"

    def __post_init__(self) -> None:
        if self.style not in STYLES:
            raise ConfigError(f"prompt_style: {self.style!r} is not one of {', '.join(STYLES)}")

    def render(
        self,
        context: str,
        question: str,
        history: Sequence[Message] = (),
        system: str = "",
    ) -> Prompt:
        """The prompt for ``context`` (the packed blocks) and ``question``. A chat prompt
        takes the conversation so far: ``history`` (earlier turns, alternating user and
        assistant) between the system message and the question, and the chat client's
        ``system`` text after the template's own rules; a completion prompt (a base
        model, which does not follow a conversation) takes neither."""
        if self.style == "chat":
            rules = f"{SYSTEM}\n\n{CLIENT_SYSTEM}\n{system}" if system else SYSTEM
            return [
                Message("system", rules),
                *history,
                Message("user", f"Context:\n\n{context}\n\nQuestion: {question}"),
            ]
        return f"{COMPLETION_HEADER}\n\nSources:\n\n{context}\n\nQuestion: {question}\nAnswer:"

    @property
    def stop(self) -> tuple[str, ...]:
        return COMPLETION_STOP if self.style == "completion" else ()

    @property
    def instructions(self) -> str:
        """The template's own text: the prompt with empty context and question."""
        return render_prompt(self.render("", ""))


UNANSWERED_PART = "the sources do not answer this part; say so"


def question_text(question: str, parts: Sequence[str], unanswered: Collection[int] = ()) -> str:
    """The question as the model sees it; a decomposed one lists its parts, and those
    the sources were judged not to answer (indices in ``unanswered``) say so: their
    closest sources are in the context, but they do not answer them."""
    question = question.strip()
    if len(parts) < 2:
        return question
    listed = "\n".join(
        f"{i}. {p} ({UNANSWERED_PART})" if i - 1 in unanswered else f"{i}. {p}"
        for i, p in enumerate(parts, 1)
    )
    return f"{question}\nAnswer each part:\n{listed}"


def render_prompt(prompt: Prompt) -> str:
    """A prompt as text: a completion prompt as is, messages with ``<|role|>`` markers."""
    if isinstance(prompt, str):
        return prompt
    return "\n".join(f"<|{m.role}|>\n{m.content}" for m in prompt)
