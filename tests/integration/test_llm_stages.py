"""The model's stages in ``twokeys ask`` (``--llm-stage rewrite``, ``--llm-stage support``)
through the real model registry: ``--llm openai:...`` makes the OpenAI-compatible client
(:func:`twokeys.llm.from_spec`), which talks HTTP to a scripted chat-completions server
on 127.0.0.1. The server answers each kind of prompt (rewrite, split, support, answer)
with a scripted reply and records what it was asked."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from twokeys.cli import main
from twokeys.rag.followup import REWRITE_SYSTEM
from twokeys.rag.judge import SUPPORT_SYSTEM

pytestmark = pytest.mark.usefixtures("no_llm_from_environment")

ZX = "What does error code ZX-4821 mean?"
ANSWER = "ZX-4821 means the supply voltage is too low [1]. It also makes the Hub play music [1]."

Script = Callable[[str, str], str]  # (system text, user text) -> reply


class ChatServer:
    """A chat-completions endpoint with scripted replies; 404 on everything else (no
    /props, no /tokenize: the client then sends chat messages and counts approximately)."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.send_error(404)

            def do_POST(self) -> None:
                if self.path != "/v1/chat/completions":
                    self.send_error(404)
                    return
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                server.requests.append(body)
                messages = body["messages"]
                system = next((m["content"] for m in messages if m["role"] == "system"), "")
                reply = server.script(system, messages[-1]["content"])
                if body.get("stream"):
                    event = {"choices": [{"index": 0, "delta": {"content": reply}}]}
                    data = f"data: {json.dumps(event)}\n\ndata: [DONE]\n\n".encode()
                    kind = "text/event-stream"
                else:
                    message = {"role": "assistant", "content": reply}
                    data = json.dumps({"choices": [{"index": 0, "message": message}]}).encode()
                    kind = "application/json"
                self.send_response(200)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def asked(self, system: str) -> list[str]:
        """The user messages of the requests sent with ``system``."""
        return [
            r["messages"][-1]["content"]
            for r in self.requests
            if r["messages"][0]["content"] == system
        ]

    def __enter__(self) -> ChatServer:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def script(*, rewrite: str = "", parts: str = "", answer: str = ANSWER) -> Script:
    def reply(system: str, user: str) -> str:
        if system == REWRITE_SYSTEM:
            return rewrite
        if system.startswith("Split the request"):
            return parts or user
        if system == SUPPORT_SYSTEM:  # only the voltage sentence is in its passage
            return "Yes." if "voltage" in user.split("Sentence:")[1] else "No, it is not."
        return answer

    return reply


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer(
        script(rewrite="how many days to ask for a refund after a change of mind")
    ) as s:
        yield s


def ask(kb: Path, url: str, question: str, *args: str) -> tuple[Result, dict[str, Any]]:
    result = CliRunner().invoke(
        main,
        [
            *("ask", question, "--index", str(kb), "--mode", "bm25", "--json"),
            *("--llm", "openai:stub-model", "--base-url", url, *args),
        ],
    )
    data = json.loads(result.stdout) if result.stdout.strip().startswith("{") else {}
    return result, data


def test_support_stage_judges_each_cited_sentence_and_strict_drops_the_unsupported(
    support_kb_bm25: Path, server: ChatServer
) -> None:
    result, data = ask(support_kb_bm25, server.url, ZX, "--llm-stage", "support")
    assert result.exit_code == 0, result.output
    verdicts = [(s["text"].split()[1], s["model_verdict"], s["status"]) for s in data["sentences"]]
    assert verdicts == [("means", True, "supported"), ("also", False, "unsupported")]
    asked = server.asked(SUPPORT_SYSTEM)
    assert len(asked) == 2 and "Sentence: It also makes the Hub play music [1]." in asked[1]
    assert "below the safe operating threshold" in asked[0]  # the cited block's text

    result, data = ask(support_kb_bm25, server.url, ZX, "--llm-stage", "support", "--strict")
    assert data["answer"] == "ZX-4821 means the supply voltage is too low [1]."


def test_without_the_stage_the_model_is_not_asked_and_words_decide(
    support_kb_bm25: Path, server: ChatServer
) -> None:
    _, data = ask(support_kb_bm25, server.url, ZX)
    assert [s["model_verdict"] for s in data["sentences"]] == [None, None]
    assert server.asked(SUPPORT_SYSTEM) == []


def test_support_stage_stays_within_its_sentence_and_token_budgets(
    support_kb_bm25: Path, server: ChatServer
) -> None:
    _, data = ask(
        support_kb_bm25, server.url, ZX, "--llm-stage", "support", "--support-sentences", "1"
    )
    assert [s["model_verdict"] for s in data["sentences"]] == [True, None]
    assert len(server.asked(SUPPORT_SYSTEM)) == 1
    _, data = ask(
        support_kb_bm25, server.url, ZX, "--llm-stage", "support", "--support-tokens", "20"
    )
    assert [s["model_verdict"] for s in data["sentences"]] == [None, None]
    assert len(server.asked(SUPPORT_SYSTEM)) == 1  # no further question was sent


def test_rewrite_stage_makes_a_follow_up_standalone_with_the_model(
    support_kb_bm25: Path, server: ChatServer
) -> None:
    earlier = ("--earlier", "What is the refund policy for a change of mind?")
    follow_up = "and how many days do I have?"
    result, data = ask(support_kb_bm25, server.url, follow_up, *earlier, "--llm-stage", "rewrite")
    assert result.exit_code == 0, result.output
    assert data["followup"] == {
        "query": "how many days to ask for a refund after a change of mind",
        "how": "llm",
        "model_error": None,
    }
    assert data["sub_queries"] == ["how many days to ask for a refund after a change of mind"]
    assert "policies/refund-policy.md" in {s["path"] for s in data["sources"]}
    (shown,) = server.asked(REWRITE_SYSTEM)
    assert "user: What is the refund policy for a change of mind?" in shown
    # without the stage the rule adds the earlier question's weightiest words, no model
    _, data = ask(support_kb_bm25, server.url, follow_up, *earlier)
    assert data["followup"]["how"] == "rule" and "refund" in data["followup"]["query"]
    assert len(server.asked(REWRITE_SYSTEM)) == 1


def test_rewrite_stage_splits_a_multi_part_question_with_the_model(
    support_kb_bm25: Path,
) -> None:
    parts = "What does error code ZX-4821 mean\nHow long is the refund window"
    question = "What does ZX-4821 mean and how long do I have to return things?"
    with ChatServer(script(parts=parts)) as server:
        _, data = ask(support_kb_bm25, server.url, question, "--llm-stage", "rewrite")
    assert data["sub_queries"] == parts.splitlines()
    assert data["followup"] is None  # no earlier question: nothing to make standalone


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_model_down_leaves_the_rule_rewrite_and_the_extractive_answer(
    support_kb_bm25: Path,
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    result, data = ask(
        support_kb_bm25,
        url,
        "and how many days do I have?",
        "--earlier",
        "What is the refund policy for a change of mind?",
        "--llm-stage",
        "rewrite",
        "--llm-stage",
        "support",
        "--timeout",
        "2",
    )
    assert result.exit_code == 3, result.output  # the model was not reached
    assert data["followup"]["how"] == "rule" and data["followup"]["model_error"]
    assert data["kind"] == "extractive" and data["model_error"]
    assert "policies/refund-policy.md" in {s["path"] for s in data["sources"] if s["cited"]}
