"""Chats that last: long conversations, follow-ups, chat clients' background tasks and the
honest API of ``/v1/chat/completions``, through the official ``openai`` client (and raw
HTTP where a client sends what the SDK does not) against a real uvicorn.

The index is the example support KB with the hashing fake encoder; a scripted chat model
records the prompts it is given where generation is tested.
"""

from __future__ import annotations

import json
import math
import socket
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

pytest.importorskip("fastapi", reason="needs the serve extra")
pytest.importorskip("uvicorn", reason="needs the serve extra")
openai = pytest.importorskip("openai", reason="needs the test extra")

from conftest import SUPPORT_KB  # noqa: E402
from serverutil import running  # noqa: E402
from twokeys import IndexOptions, build_index  # noqa: E402
from twokeys.cli import main  # noqa: E402
from twokeys.llm.base import LLM, Prompt  # noqa: E402
from twokeys.llm.spec import from_spec  # noqa: E402
from twokeys.rag.ask import AskOptions  # noqa: E402
from twokeys.rag.followup import REWRITE_SYSTEM  # noqa: E402
from twokeys.rag.judge import SUPPORT_SYSTEM, VERDICT_SYSTEM  # noqa: E402
from twokeys.rag.verdicts import Reliability  # noqa: E402
from twokeys.server.app import create_app  # noqa: E402
from twokeys.server.config import ServerConfig  # noqa: E402
from twokeys.server.service import IndexService  # noqa: E402
from twokeys.text.tokens import approx_token_counter  # noqa: E402

pytestmark = pytest.mark.usefixtures("no_llm_from_environment")

ZX = "What does error code ZX-4821 mean?"
SYSTEM = (
    "You are the support assistant of Lumatek. Answer politely and precisely. " * 42
).strip()  # about 3,000 characters, as a chat UI's configured system prompt


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("chat") / "support.twokeys"
    build_index(SUPPORT_KB / "docs", path, IndexOptions(encoder="test-hash"))
    return path


@pytest.fixture(scope="module")
def base(built: Path) -> Iterator[str]:
    service = IndexService(built)
    with running(create_app(service)) as url:
        yield url
    service.close()


def serve(path: Path, llm: LLM | None = None, **config: Any) -> Any:
    return running(create_app(IndexService(path), llm=llm, config=ServerConfig(**config)))


class ChatModel(LLM):
    """A chat model that answers with fixed text (per call, in turn) and records prompts."""

    name = "scripted-chat"

    def __init__(self, *answers: str, rewrite: str = "", verdict: str = "") -> None:
        self.answers = list(answers)
        self.rewrite = rewrite  # its answer to a follow-up's rewrite ("": none, the rule's)
        self.verdict = verdict  # its verdict on the passages (the "verdict" stage)
        self.verdicts = 0
        self.prompts: list[Prompt] = []
        self.calls: list[dict[str, Any]] = []

    def stream(
        self,
        prompt: Prompt,
        *,
        stop: Sequence[str] = (),
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> Iterator[str]:
        if not isinstance(prompt, str) and prompt[0].content == REWRITE_SYSTEM:
            yield self.rewrite
            return
        if not isinstance(prompt, str) and prompt[0].content == VERDICT_SYSTEM:
            self.verdicts += 1
            yield self.verdict
            return
        self.prompts.append(prompt)
        self.calls.append({"max_tokens": max_tokens, "temperature": temperature})
        answer = self.answers[min(len(self.prompts), len(self.answers)) - 1]
        for word in answer.split(" "):
            yield word + " "


def long_chat(turns: int) -> list[dict[str, str]]:
    """A chat of ``turns`` user turns with long replies, ending on a user message."""
    questions = [
        ZX,
        "How do I fix it?",
        "What is the refund policy for a change of mind?",
        "How many days do I have?",
        "How do I set up port forwarding on the router?",
    ]
    reply = "Here is what the sources say about this. " + "The Hub checks its input rail. " * 80
    messages = [{"role": "system", "content": SYSTEM}]
    for i in range(turns - 1):
        messages.append({"role": "user", "content": f"{questions[i % len(questions)]} ({i})"})
        messages.append({"role": "assistant", "content": reply})
    messages.append({"role": "user", "content": "What does the hardware warranty cover?"})
    return messages


def prompt_text(prompt: Prompt) -> str:
    return prompt if isinstance(prompt, str) else "\n".join(m.content for m in prompt)


# -- 1. conversations ------------------------------------------------------------------


def test_a_20_turn_chat_with_a_long_system_prompt_is_fitted_not_refused(built: Path) -> None:
    messages = long_chat(20)
    assert len(SYSTEM) >= 3000 and len(messages[2]["content"]) > 2000  # over the 2,000 cap
    model = ChatModel("The warranty covers hardware faults for two years [1].")
    with serve(built, model, chat_context=4096) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
        reply = client.chat.completions.create(model="twokeys", messages=messages)
        stream = client.chat.completions.create(
            model="twokeys",
            messages=messages,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
    text = reply.choices[0].message.content or ""
    assert text.startswith("The warranty covers hardware faults")
    assert "policies/warranty.md" in text.split("Sources:")[-1]
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed.split("Sources:")[-1] == text.split("Sources:")[-1]
    assert streamed.startswith("The warranty covers hardware faults for two years [1].")
    prompt = model.prompts[-1]
    assert not isinstance(prompt, str)
    roles = [m.role for m in prompt]
    assert roles[0] == "system" and roles[-1] == "user"
    assert roles[1:-1] == ["user", "assistant"] * ((len(roles) - 2) // 2)  # alternating
    assert "support assistant of Lumatek" in prompt[0].content  # the client's system prompt
    assert prompt[-1].content.endswith("Question: What does the hardware warranty cover?")
    whole = prompt_text(prompt)
    assert "(18)" in whole  # the newest turns are kept ...
    assert "(0)" not in whole  # ... the oldest dropped
    assert sum(approx_token_counter([m.content for m in prompt])) <= 4096
    data = reply.model_extra["twokeys"]
    assert data["conversation"]["turns_dropped"] > 0 and data["conversation"]["turns_kept"] > 0
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens > 1000


def test_without_a_model_a_long_chat_answers_and_only_the_newest_message_is_capped(
    base: str,
) -> None:
    client = openai.OpenAI(base_url=f"{base}/v1", api_key="unused")
    reply = client.chat.completions.create(model="twokeys", messages=long_chat(20))
    assert "policies/warranty.md" in (reply.choices[0].message.content or "")
    messages = long_chat(3)
    messages[-1]["content"] = "why" * 800
    with pytest.raises(openai.BadRequestError, match=r"messages\[5\]\.content: 2400 characters"):
        client.chat.completions.create(model="twokeys", messages=messages)


# -- 2. background tasks ---------------------------------------------------------------

# Prompts laid out as Open WebUI's default task templates lay them out (task, guidelines,
# the JSON to answer with, the chat embedded as "USER: ..." / "ASSISTANT: ..." lines).
HISTORY = (
    "USER: What does error code ZX-4821 mean?\n"
    "ASSISTANT: ZX-4821 means the Hub measured a low input voltage [1].\n\n"
    "Sources:\n[1] errors/zx-4821.md"
)
TITLE_TASK = (
    "### Task:\nGenerate a concise, 3-5 word title with an emoji summarizing the chat "
    'history.\n### Output:\nJSON format: { "title": "your concise title here" }\n'
    f"### Chat History:\n<chat_history>\n{HISTORY}\n</chat_history>"
)
TAGS_TASK = (
    "### Task:\nGenerate 1-3 broad tags categorizing the main themes of the chat history."
    '\n\n### Output:\nJSON format: { "tags": ["tag1", "tag2", "tag3"] }\n\n'
    f"### Chat History:\n<chat_history>\n{HISTORY}\n</chat_history>"
)
FOLLOW_UP_TASK = (
    "### Task:\nSuggest 3-5 relevant follow-up questions or prompts that the user might "
    'ask next.\n### Output:\nJSON format: { "follow_ups": ["Question 1?", "Question 2?"] }'
    f"\n### Chat History:\n<chat_history>\n{HISTORY}\n</chat_history>"
)
AUTOCOMPLETE_TASK = (
    "### Task:\nYou are an autocompletion system. Continue the text in `<text>`.\n"
    '### **Output Rules**:\n- Respond only in JSON format: `{ "text": "<your_completion>" }`.'
    f"\n### Context:\n<chat_history>\n{HISTORY}\n</chat_history>\n"
    "<type>General</type>\n<text>How do I reset the</text>\n#### Output:\n"
)


def _task_reply(url: str, prompt: str, stream: bool = False) -> dict[str, Any]:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
    messages = [{"role": "user", "content": prompt}]
    if stream:
        chunks = list(
            client.chat.completions.create(model="twokeys", messages=messages, stream=True)
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    else:
        reply = client.chat.completions.create(model="twokeys", messages=messages)
        text = reply.choices[0].message.content or ""
    data = json.loads(text)  # what the client parses: the JSON alone, no sources list
    assert isinstance(data, dict)
    return data


def test_background_tasks_answer_the_json_the_client_expects_without_a_model(base: str) -> None:
    assert _task_reply(base, TITLE_TASK) == {"title": "What does error code ZX-4821 mean"}
    assert _task_reply(base, TAGS_TASK, stream=True) == {"tags": ["General"]}
    follow_ups = _task_reply(base, FOLLOW_UP_TASK)["follow_ups"]
    assert 1 <= len(follow_ups) <= 3 and all(q.endswith("?") for q in follow_ups)
    assert _task_reply(base, AUTOCOMPLETE_TASK) == {"text": ""}
    # a long chat embedded in the task's one message (Open WebUI sends the whole history
    # with each follow-up request): the cap is for typed questions, not for tasks
    long_history = HISTORY + ("\nUSER: and then?\nASSISTANT: " + "Check the adapter. " * 40) * 4
    long_task = FOLLOW_UP_TASK.replace(HISTORY, long_history)
    assert len(long_task) > 3000
    assert _task_reply(base, long_task)["follow_ups"]


def test_background_tasks_go_to_the_model_and_fall_back_when_it_answers_badly(
    built: Path,
) -> None:
    model = ChatModel('{ "title": "⚡ Hub Undervoltage Error" }', "Sure! Here is a title: Hub")
    with serve(built, model) as url:
        assert _task_reply(url, TITLE_TASK) == {"title": "⚡ Hub Undervoltage Error"}
        assert _task_reply(url, TITLE_TASK) == {"title": "What does error code ZX-4821 mean"}
    assert prompt_text(model.prompts[0]) == TITLE_TASK  # the client's own prompt, no search


# -- 5. follow-ups ---------------------------------------------------------------------


def test_a_follow_up_is_searched_with_its_conversation_and_says_so(base: str) -> None:
    client = openai.OpenAI(base_url=f"{base}/v1", api_key="unused")
    messages = [
        {"role": "user", "content": "What is the refund policy for a change of mind?"},
        {"role": "assistant", "content": "You may request a refund within 30 days [1]."},
        {"role": "user", "content": "and how many days do I have?"},
    ]
    reply = client.chat.completions.create(model="twokeys", messages=messages)
    text = reply.choices[0].message.content or ""
    search = reply.model_extra["twokeys"]["search"]
    assert search["how"] == "rule" and "refund" in search["query"].lower()
    assert f"Searched for: {search['query']}" in text
    assert "policies/refund-policy.md" in text.split("Sources:")[-1]


def test_a_change_of_topic_is_searched_as_asked_and_its_follow_up_with_it(base: str) -> None:
    # turns 4 to 6 of the Open WebUI run (benchmarks/openwebui_e2e.py): the old rule
    # searched the new question with the refund turns' words
    client = openai.OpenAI(base_url=f"{base}/v1", api_key="unused")
    messages = [
        {"role": "user", "content": "Can I get my money back if the item arrived broken?"},
        {"role": "assistant", "content": "Yes, within 30 days [1]."},
        {"role": "user", "content": "and how many days do I have?"},
        {"role": "assistant", "content": "30 days [1]."},
        {"role": "user", "content": "my hub keeps losing its internet connection"},
    ]
    reply = client.chat.completions.create(model="twokeys", messages=messages)
    search = reply.model_extra["twokeys"]["search"]  # type: ignore[index]
    assert search["how"] == "as asked" and search["query"] == messages[-1]["content"]
    assert "Searched for:" not in (reply.choices[0].message.content or "")
    messages += [
        {"role": "assistant", "content": "Check the router [1]."},
        {"role": "user", "content": "How do I fix it?"},
    ]
    reply = client.chat.completions.create(model="twokeys", messages=messages)
    search = reply.model_extra["twokeys"]["search"]  # type: ignore[index]
    assert search["how"] == "rule"
    assert search["query"] == "my hub keeps losing its internet connection How do I fix it?"
    sources = (reply.choices[0].message.content or "").split("Sources:")[-1]
    assert "troubleshooting/wifi-drops.md" in sources


def test_a_model_rewrites_the_follow_up_into_the_query_searched(built: Path) -> None:
    model = ChatModel(
        "Within 14 days [1].", rewrite="refund for Lumatek Studio Pro software licences"
    )
    messages = [
        {"role": "user", "content": "What is the refund policy for a change of mind?"},
        {"role": "assistant", "content": "You may request a refund within 30 days [1]."},
        {"role": "user", "content": "and what about software licences?"},
    ]
    with serve(built, model) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
        reply = client.chat.completions.create(model="twokeys", messages=messages)
    search = reply.model_extra["twokeys"]["search"]
    assert search == {
        "query": "refund for Lumatek Studio Pro software licences",
        "how": "llm",
        "model_error": None,
    }
    answer_prompt = model.prompts[0]
    assert not isinstance(answer_prompt, str)
    assert answer_prompt[-1].content.endswith("Question: and what about software licences?")


def test_a_rewrite_that_drops_the_question_is_not_searched(built: Path) -> None:
    # what Gemma 3 270M did with Open WebUI (benchmarks/openwebui_e2e.py --llm local):
    # each later question "rewritten" as the chat's first one
    model = ChatModel("Yes [1].", rewrite="What does error code ZX-4821 mean?")
    messages = [
        {"role": "user", "content": ZX},
        {"role": "assistant", "content": "The Hub measured a low input voltage [1]."},
        {"role": "user", "content": "Can I get my money back if the item arrived broken?"},
    ]
    with serve(built, model) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
        reply = client.chat.completions.create(model="twokeys", messages=messages)
    search = reply.model_extra["twokeys"]["search"]
    assert search["how"] != "llm"
    assert search["query"].startswith("Can I get my money back")


# -- 4. a model that cannot be reached -------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_model_is_named_and_the_sources_still_answer(built: Path) -> None:
    address = f"http://127.0.0.1:{_closed_port()}/v1"
    model = from_spec("openai:qwen2.5-7b", base_url=address, timeout=5)
    with serve(built, model) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
        started = time.monotonic()
        reply = client.chat.completions.create(
            model="twokeys", messages=[{"role": "user", "content": ZX}]
        )
        seconds = time.monotonic() - started
    text = reply.choices[0].message.content or ""
    assert text.startswith(
        f"Extractive answer (the language model was not reached: openai:qwen2.5-7b at {address}"
        ": cannot connect ("
    )
    assert f"is the server running at {address}?" in text
    assert "errors/zx-4821.md" in text.split("Sources:")[-1]
    assert reply.model_extra["twokeys"]["model_error"]
    assert seconds < 2.0, seconds


def test_a_model_that_takes_the_connection_and_never_answers_is_reported_within_2_s(
    built: Path,
) -> None:
    # a model server on this machine that accepts the connection and never answers (only
    # loopback: tests send nothing off this machine), with the default 120 s timeout: the
    # liveness check finds it in about a second, the sources answer, and the reply names
    # the model, its URL and why
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        address = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        model = from_spec("openai:qwen2.5-7b", base_url=address)
        with serve(built, model) as url:
            client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
            started = time.monotonic()
            stream = client.chat.completions.create(
                model="twokeys", messages=[{"role": "user", "content": ZX}], stream=True
            )
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            seconds = time.monotonic() - started
    assert text.startswith(
        f"Extractive answer (the language model was not reached: openai:qwen2.5-7b at {address}"
        f": took the connection but sent no answer to GET {address}/models within 1 s"
    )
    assert "errors/zx-4821.md" in text.split("Sources:")[-1]
    assert seconds < 2.5, seconds  # the requirement itself: within 2 s, with some slack


class ModelServer:
    """An OpenAI-compatible model server on loopback that answers ``/v1/models`` at once
    and, on ``/v1/chat/completions``, either never starts its answer (``hang``) or sends
    its headers at once and its first token after ``delay`` seconds."""

    def __init__(self, *, hang: bool = False, delay: float = 0.0) -> None:
        import http.server
        import threading

        self.release = threading.Event()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                body = b'{"object": "list", "data": [{"id": "slow-model"}]}'
                code = 200 if self.path == "/v1/models" else 404
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                if self.path != "/v1/chat/completions":
                    self.send_response(404)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                if hang:
                    owner.release.wait(30)
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.flush()
                time.sleep(delay)  # a slow model: headers now, its first token later
                for word in ("The", " Hub", " [1]."):
                    event = {"choices": [{"index": 0, "delta": {"content": word}}]}
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.address = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> ModelServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def test_a_model_that_never_starts_its_answer_is_reported_at_its_first_byte_deadline(
    built: Path,
) -> None:
    with ModelServer(hang=True) as hung:
        model = from_spec("openai:slow-model", base_url=hung.address, first_byte_timeout=1)
        with serve(built, model) as url:
            client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
            started = time.monotonic()
            reply = client.chat.completions.create(
                model="twokeys", messages=[{"role": "user", "content": ZX}]
            )
            seconds = time.monotonic() - started
    text = reply.choices[0].message.content or ""
    assert text.startswith("Extractive answer (the language model was not reached: ")
    assert f"openai:slow-model: openai-compatible server at {hung.address}/chat/completions" in text
    assert "timed out waiting for the first token" in text
    assert "errors/zx-4821.md" in text.split("Sources:")[-1]
    assert seconds < 2.5, seconds


def test_a_slow_model_that_streams_is_not_cut_short_by_the_first_byte_deadline(
    built: Path,
) -> None:
    # headers at once, the first token after 1.5 s: alive, only slow; a 1 s first-byte
    # deadline does not cut it, since the answer had begun
    with ModelServer(delay=1.5) as slow:
        model = from_spec("openai:slow-model", base_url=slow.address, first_byte_timeout=1)
        with serve(built, model) as url:
            client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
            reply = client.chat.completions.create(
                model="twokeys", messages=[{"role": "user", "content": ZX}]
            )
    text = reply.choices[0].message.content or ""
    assert text.startswith("The Hub [1]."), text
    assert reply.model_extra["twokeys"]["model_error"] is None


def test_ask_reports_a_hung_model_within_2_s(built: Path) -> None:
    from twokeys import open_index
    from twokeys.rag.ask import ask

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        address = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        with open_index(built) as index, from_spec("openai:m", base_url=address) as model:
            started = time.monotonic()
            answer = ask(index, ZX, llm=model)
            seconds = time.monotonic() - started
    assert answer.model_error is not None and address in answer.model_error
    assert "sent no answer" in answer.model_error
    assert answer.text.startswith("Extractive answer (the language model was not reached: ")
    assert any("zx-4821" in s.cite for s in answer.sources if s.cited), answer.sources
    assert seconds < 2.5, seconds


# -- 3. the honest API -----------------------------------------------------------------


def test_n_and_tools_are_refused_naming_the_field(base: str) -> None:
    client = openai.OpenAI(base_url=f"{base}/v1", api_key="unused")
    user = [{"role": "user", "content": ZX}]
    with pytest.raises(openai.BadRequestError, match=r"n: 2; this server gives one choice"):
        client.chat.completions.create(model="twokeys", messages=user, n=2)
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    with pytest.raises(openai.BadRequestError, match="tool_choice: this server calls no tools"):
        client.chat.completions.create(
            model="twokeys", messages=user, tools=[tool], tool_choice="required"
        )
    # offered, not forced (Open WebUI offers its built-in tools every turn): answered,
    # no tool called, as tool_choice "auto" allows
    reply = client.chat.completions.create(model="twokeys", messages=user, tools=[tool])
    assert "ZX-4821" in (reply.choices[0].message.content or "")
    assert not reply.choices[0].message.tool_calls


def test_max_tokens_stop_and_temperature_are_honoured(built: Path, base: str) -> None:
    client = openai.OpenAI(base_url=f"{base}/v1", api_key="unused")
    user = [{"role": "user", "content": ZX}]
    short = client.chat.completions.create(model="twokeys", messages=user, max_tokens=12)
    assert short.choices[0].finish_reason == "length"
    assert approx_token_counter([short.choices[0].message.content or ""])[0] <= 12
    assert short.usage is not None and short.usage.completion_tokens <= 12
    cut = client.chat.completions.create(model="twokeys", messages=user, stop=["Sources:"])
    assert "Sources:" not in (cut.choices[0].message.content or "")
    assert cut.choices[0].finish_reason == "stop"
    streamed = client.chat.completions.create(
        model="twokeys",
        messages=user,
        stop="Sources:",
        stream=True,
    )
    text = "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
    assert text == cut.choices[0].message.content
    model = ChatModel("ZX-4821 means the input voltage is too low [1].")
    with serve(built, model) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
        client.chat.completions.create(
            model="twokeys",
            messages=user,
            max_tokens=100,
            temperature=0.4,
        )
    assert model.calls[-1] == {"max_tokens": 100, "temperature": 0.4}


def test_raw_open_webui_task_request_with_metadata(base: str) -> None:
    body = {
        "model": "twokeys",
        "messages": [{"role": "user", "content": TITLE_TASK}],
        "stream": False,
        "metadata": {"task": "title_generation", "chat_id": "abc"},
    }
    r = httpx.post(f"{base}/v1/chat/completions", json=body, timeout=30)
    assert r.status_code == 200
    data = r.json()
    assert json.loads(data["choices"][0]["message"]["content"])["title"]
    assert data["twokeys"] == {"task": "title", "made_by": "rule"}


# -- 6. sources people can see ---------------------------------------------------------

CHEESE = "ZX-4821 means the input voltage is too low [1]. The moon is made of green cheese [1]."


def test_citations_sources_unsupported_marks_and_url_citations(built: Path) -> None:
    model = ChatModel(CHEESE)
    with serve(built, model) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
        reply = client.chat.completions.create(
            model="twokeys", messages=[{"role": "user", "content": ZX}]
        )
        body = {"model": "twokeys", "messages": [{"role": "user", "content": ZX}], "stream": True}
        with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=30) as r:
            lines = [x[6:] for x in r.iter_lines() if x.startswith("data: ")]
        chunks = [json.loads(x) for x in lines if x != "[DONE]"]
        message = reply.choices[0].message
        notes = [a.model_dump() for a in message.annotations or []]
        page = httpx.get(notes[0]["url_citation"]["url"])
    text = message.content or ""
    assert "green cheese [1]. [not supported by the cited source]" in text
    assert "too low [1]. [not supported" not in text
    assert "\n[1] errors/zx-4821.md — " in text
    first = notes[0]["url_citation"]
    assert notes[0]["type"] == "url_citation" and first["title"].startswith("[1] errors/zx-4821.md")
    assert first["url"].startswith(f"{url}/passages/errors%2Fzx-4821.md%23")
    assert text[first["start_index"] : first["end_index"]] == "[1]"
    assert len(notes) == len(reply.model_extra["twokeys"]["sources"])  # type: ignore[index]
    assert page.status_code == 200 and "ZX-4821" in page.text
    assert page.headers["content-security-policy"].startswith("default-src 'none'")
    streamed = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    annotated = [d["annotations"] for d in streamed if "annotations" in d]
    assert len(annotated) == 1 and [a["url_citation"]["url"] for a in annotated[0]] == [
        n["url_citation"]["url"] for n in notes
    ]
    streamed_text = "".join(d.get("content") or "" for d in streamed)
    assert "Not supported by the cited sources:\n- The moon is made of green cheese [1]." in (
        streamed_text
    )


UNCITED = (
    "ZX-4821 means the Hub found the voltage on its input rail below the safe operating "
    "threshold. The capital of Australia is Sydney."
)  # a weak model's answer: two sentences, neither cites a source


def test_sentences_that_cite_nothing_get_a_source_or_the_mark(built: Path) -> None:
    model = ChatModel(UNCITED)
    question = [{"role": "user", "content": ZX}]
    with serve(built, model) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
        reply = client.chat.completions.create(model="twokeys", messages=question)
        stream = client.chat.completions.create(model="twokeys", messages=question, stream=True)
        streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    text = reply.choices[0].message.content or ""
    sources = reply.model_extra["twokeys"]["sources"]  # type: ignore[index]
    zx = next(s["number"] for s in sources if s["path"] == "errors/zx-4821.md")
    assert text.startswith(
        f"ZX-4821 means the Hub found the voltage on its input rail below the safe operating "
        f"threshold [{zx}]. The capital of Australia is Sydney. [not supported by the cited "
        "source]"
    ), text
    assert f"\n[{zx}] errors/zx-4821.md" in text.split("Sources:")[-1]
    assert "Not supported by the cited sources:\n- The capital of Australia is Sydney." in streamed
    assert (
        "Cited by the check (the model cited no source):\n- ZX-4821 means the Hub found the "
        f"voltage on its input rail below the safe operating threshold [{zx}]."
    ) in streamed


def test_a_passage_page_shows_document_text_as_text(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    hostile = (
        "# Hostile\n\nBefore <script>alert(1)</script> and <img src=x onerror=alert(2)> after.\n"
    )
    (docs / "hostile.md").write_text(hostile, encoding="utf-8")
    path = tmp_path / "kb.twokeys"
    build_index(docs, path, IndexOptions(encoder="test-hash"))
    with serve(path) as url:
        page = httpx.get(f"{url}/passages/hostile.md%230")
        missing = httpx.get(f"{url}/passages/nope.md%230")
    assert page.status_code == 200
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text and "<script>" not in page.text
    assert "&lt;img src=x onerror=alert(2)&gt;" in page.text and "<img" not in page.text
    assert missing.status_code == 404 and missing.json() == {"detail": "no passage 'nope.md#0'"}


# -- 8. several collections, one server ------------------------------------------------


def test_several_collections_each_a_model_and_every_route_under_its_name(
    built: Path, tmp_path: Path
) -> None:
    docs = tmp_path / "notes"
    docs.mkdir()
    (docs / "qq-7781.md").write_text(
        "# Error QQ-7781\n\nThe flux capacitor overheated; let it cool for ten minutes.\n",
        encoding="utf-8",
    )
    notes = tmp_path / "notes.twokeys"
    build_index(docs, notes, IndexOptions(encoder="test-hash"))
    app = create_app(IndexService(built), collections={"notes": IndexService(notes)})
    with running(app) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
        assert [m.id for m in client.models.list()] == ["twokeys", "notes"]
        assert client.models.retrieve("notes").id == "notes"
        question = [{"role": "user", "content": "What does error QQ-7781 mean?"}]
        reply = client.chat.completions.create(model="notes", messages=question)
        kb_reply = client.chat.completions.create(
            model="twokeys", messages=[{"role": "user", "content": ZX}]
        )
        search = httpx.post(f"{url}/collections/notes/search", json={"query": "QQ-7781"}).json()
        listed = httpx.get(f"{url}/collections/notes/documents").json()
        kb_listed = httpx.get(f"{url}/documents").json()
        link = (reply.choices[0].message.annotations or [])[0].url_citation.url
        passage = httpx.get(link)
        with pytest.raises(openai.NotFoundError, match="this server serves 'twokeys', 'notes'"):
            client.chat.completions.create(model="other", messages=question)
    assert reply.model == "notes"
    assert "qq-7781.md" in (reply.choices[0].message.content or "").split("Sources:")[-1]
    assert "errors/zx-4821.md" in (kb_reply.choices[0].message.content or "")
    assert [h["doc_id"] for h in search["hits"]] == ["qq-7781.md"]
    assert [d["id"] for d in listed["documents"]] == ["qq-7781.md"] and kb_listed["total"] > 30
    assert link.startswith(f"{url}/collections/notes/passages/qq-7781.md%23")
    assert passage.status_code == 200 and "flux capacitor" in passage.text


def test_twokeys_serve_takes_collections_by_name() -> None:
    from twokeys.errors import ConfigError
    from twokeys.server.config import check_collection_name, parse_collection

    assert parse_collection("notes=/srv/notes.twokeys") == ("notes", "/srv/notes.twokeys")
    assert parse_collection("db=postgresql://u@h/x") == ("db", "postgresql://u@h/x")
    with pytest.raises(ConfigError, match="expected NAME=PATH"):
        parse_collection("notes")
    with pytest.raises(ConfigError, match="use letters, digits"):
        check_collection_name("a/b", "twokeys")
    with pytest.raises(ConfigError, match="the default index's model name"):
        check_collection_name("twokeys", "twokeys")


# -- the server's answer options (serve --confidence, --llm-stage, ...) ------------------


def test_the_servers_answer_options_reach_the_chat_route_and_ask(
    built: Path, tmp_path: Path
) -> None:
    measured = Reliability("scripted-chat", 30, 10, 10, 30).save(tmp_path / "measured.json")
    answers = AskOptions(
        confidence="learned", llm_stages=("verdict",), verdict_calibration=str(measured)
    )
    model = ChatModel("ZX-4821 means the supply voltage is too low [1].", verdict="Yes.")
    with serve(built, model, answers=answers) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
        client.chat.completions.create(model="twokeys", messages=[{"role": "user", "content": ZX}])
        assert model.verdicts == 1  # the chat turn asked the model's verdict
        (judged,) = httpx.post(f"{url}/ask", json={"question": ZX}).json()["confidence"]
        assert judged["model_verdict"] is True and judged["probability"] is not None
        assert judged["verdict_log_ratio"] == pytest.approx(math.log(31 / 11), abs=1e-4)
        # a request's own options win over the server's
        body = {"question": ZX, "confidence": "rules", "llm_stages": []}
        (ruled,) = httpx.post(f"{url}/ask", json=body).json()["confidence"]
        assert ruled["probability"] is None and ruled["model_verdict"] is None
        refused = httpx.post(f"{url}/ask", json={"question": ZX, "confidence": "rules"})
        assert refused.status_code == 400 and "--confidence learned" in refused.json()["detail"]
    assert model.verdicts == 2


def test_serve_refuses_stages_it_cannot_run_before_it_starts(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TWOKEYS_CACHE", str(tmp_path))
    common = ["serve", "--index", str(built), "--port", "0"]
    model = ["--llm", "openai:x", "--base-url", "http://127.0.0.1:9/v1"]
    for args, said in (
        ([*model, "--confidence", "learned", "--llm-stage", "verdict"], "has no calibration"),
        ([*model, "--llm-stage", "verdict"], "--confidence learned"),
        (["--llm-stage", "rerank"], "need a model (--llm)"),
    ):
        result = CliRunner().invoke(main, [*common, *args])
        assert result.exit_code != 0 and said in result.output, (args, result.output)
        assert "Traceback" not in result.output


def test_ask_takes_the_support_stages_budget_from_the_request(built: Path) -> None:
    model = ChatModel("ZX-4821 means the supply voltage is too low [1]. It plays music [1].")
    body = {
        "question": ZX,
        "llm_stages": ["support"],
        "support": {"sentences": 1, "tokens": 6000, "seconds": 60, "chars": 1200},
    }
    with serve(built, model) as url:
        r = httpx.post(f"{url}/ask", json=body)
    assert r.status_code == 200, r.text
    asked = [p for p in model.prompts if not isinstance(p, str)]
    assert sum(p[0].content == SUPPORT_SYSTEM for p in asked) == 1  # its budget: 1 sentence
