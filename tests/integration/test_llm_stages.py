"""The model's stages in ``twokeys ask`` (``--llm-stage rewrite``, ``--llm-stage support``)
through the real model registry: ``--llm openai:...`` makes the OpenAI-compatible client
(:func:`twokeys.llm.from_spec`), which talks HTTP to a scripted chat-completions server
on 127.0.0.1. The server answers each kind of prompt (rewrite, split, support, answer)
with a scripted reply and records what it was asked."""

from __future__ import annotations

import functools
import json
import math
import shlex
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from twokeys.cli import main
from twokeys.evaluation.answers import holds, load_qa
from twokeys.rag.followup import REWRITE_SYSTEM
from twokeys.rag.judge import SUPPORT_SYSTEM, VERDICT_SYSTEM

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


# --- the verdict, measured per model (twokeys calibrate-verdict) ------------------------

QA = Path(__file__).resolve().parents[2] / "examples" / "support-kb" / "qa.jsonl"
CALIBRATION_SPLIT = "heldout18"  # 20 answerable and 20 unanswerable questions


def reader_of_facts(system: str, user: str) -> str:
    """A model that reads: "yes" when the passages it is shown hold a gold fact of the
    question (the support KB's own gold), else "no"."""
    if system != VERDICT_SYSTEM:
        return ANSWER
    question = user.split("Question: ", 1)[1].split("\n\nPassages:", 1)[0]
    passages = user.split("Passages:", 1)[1]
    facts = _gold_facts().get(question, [])
    return "Yes." if any(holds(passages, f) for f in facts) else "No."


@functools.cache
def _gold_facts() -> dict[str, list[str]]:
    """Each support KB question's gold facts (the file read once)."""
    facts: dict[str, list[str]] = {}
    for item in load_qa(QA):
        facts.setdefault(item.question, []).extend(g.fact for g in item.gold)
    return facts


def calibrate(kb: Path, url: str, *args: str, qa: Path = QA) -> Result:
    return CliRunner().invoke(
        main,
        [
            *("calibrate-verdict", str(qa), "--index", str(kb), "--mode", "bm25"),
            *("--split", CALIBRATION_SPLIT, "--llm", "openai:stub-model", "--base-url", url),
            *args,
        ],
    )


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def test_a_model_that_reads_is_measured_and_its_verdict_moves_the_confidence(
    support_kb_bm25: Path, tmp_path: Path
) -> None:
    stored = tmp_path / "stub.json"
    with ChatServer(reader_of_facts) as server:
        result = calibrate(support_kb_bm25, server.url, "--out", str(stored))
        assert result.exit_code == 0, result.output
        assert len(server.asked(VERDICT_SYSTEM)) == 40
        assert "calibrate-verdict: 40/40 questions" in result.stderr
        measured = json.loads(stored.read_text(encoding="utf-8"))
        assert measured["model"] == "openai:stub-model"
        assert measured["bad_no"] >= 20 > measured["bad_yes"]  # every unanswerable one
        assert measured["good_yes"] > measured["good_no"]
        assert measured["log_ratio_yes"] > 1.0 and measured["log_ratio_no"] < -1.0

        # asked about an answerable question and an unanswerable one (ids: qa.jsonl)
        for question, said in ((ZX, True), ("What does error code ZX-9999 mean?", False)):
            staged = ("--confidence", "learned", "--llm-stage", "verdict")
            _, plain = ask(support_kb_bm25, server.url, question, "--confidence", "learned")
            _, data = ask(
                support_kb_bm25, server.url, question, *staged, "--verdict-calibration", str(stored)
            )
            before, after = plain["confidence"][0], data["confidence"][0]
            assert after["model_verdict"] is said and before["model_verdict"] is None
            shift = measured["log_ratio_yes" if said else "log_ratio_no"]
            assert after["verdict_log_ratio"] == pytest.approx(shift, abs=1e-4)
            moved = _logit(after["probability"]) - _logit(before["probability"])
            assert moved == pytest.approx(shift, abs=0.01)
            assert ("the model said " + ("yes" if said else "no")) in after["reason"]


def test_a_model_that_says_yes_to_everything_moves_nothing(
    support_kb_bm25: Path, tmp_path: Path
) -> None:
    stored = tmp_path / "yes.json"
    with ChatServer(lambda system, user: "Yes." if system == VERDICT_SYSTEM else ANSWER) as server:
        assert calibrate(support_kb_bm25, server.url, "--out", str(stored)).exit_code == 0
    measured = json.loads(stored.read_text(encoding="utf-8"))
    assert measured["good_no"] == measured["bad_no"] == 0
    assert abs(measured["log_ratio_yes"]) < 0.05


def test_the_verdict_needs_a_measured_model_and_the_learned_confidence(
    support_kb_bm25: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TWOKEYS_CACHE", str(tmp_path / "cache"))
    with ChatServer(reader_of_facts) as server:
        result, _ = ask(
            support_kb_bm25, server.url, ZX, "--confidence", "learned", "--llm-stage", "verdict"
        )
        assert result.exit_code != 0 and "Traceback" not in result.output
        assert "openai:stub-model has no calibration" in result.output
        assert "twokeys calibrate-verdict" in result.output
        assert server.asked(VERDICT_SYSTEM) == []  # nothing asked before the check
        result, _ = ask(support_kb_bm25, server.url, ZX, "--llm-stage", "verdict")
        assert result.exit_code != 0 and "--confidence learned" in result.output
        # calibrated into the cache: ask finds it there
        assert calibrate(support_kb_bm25, server.url).exit_code == 0
        kept = tmp_path / "cache" / "verdicts" / "openai_stub-model.json"
        assert kept.is_file()
        result, data = ask(
            support_kb_bm25, server.url, ZX, "--confidence", "learned", "--llm-stage", "verdict"
        )
        assert result.exit_code == 0, result.output
        assert data["confidence"][0]["model_verdict"] is True


def test_calibration_refuses_too_few_questions_and_a_model_that_never_replies(
    support_kb_bm25: Path, tmp_path: Path
) -> None:
    few = tmp_path / "few.jsonl"  # 12 questions: fewer than 10 of one kind at least
    lines = [x for x in QA.read_text(encoding="utf-8").splitlines() if CALIBRATION_SPLIT in x]
    few.write_text("\n".join(lines[:12]) + "\n", encoding="utf-8")
    with ChatServer(reader_of_facts) as server:
        result = calibrate(support_kb_bm25, server.url, "--out", str(tmp_path / "x"), qa=few)
    assert result.exit_code != 0 and "need 10 of each" in result.output
    assert not (tmp_path / "x").exists()
    with ChatServer(lambda system, user: "Perhaps.") as server:
        result = calibrate(support_kb_bm25, server.url, "--out", str(tmp_path / "y"))
    assert result.exit_code != 0 and "answered none of the 40 questions" in result.output
    result = calibrate(
        support_kb_bm25, f"http://127.0.0.1:{_closed_port()}/v1", "--out", str(tmp_path / "z")
    )
    assert result.exit_code != 0 and "cannot connect" in result.output
    assert "Traceback" not in result.output


def test_the_readme_verdict_example_runs_against_a_model_server(
    support_kb_bm25: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the README's commands (a `text` block: they need a model), the model swapped for the
    # stub server and the index for this module's BM25 copy of the same documents
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    lines = [
        line
        for line in readme.splitlines()
        if line.startswith("twokeys ") and ("calibrate-verdict" in line or "stage verdict" in line)
    ]
    assert len(lines) == 2 and "calibrate-verdict" in lines[0]
    monkeypatch.setenv("TWOKEYS_CACHE", str(tmp_path))
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    with ChatServer(reader_of_facts) as server:
        for line in lines:
            argv = shlex.split(line)[1:]
            argv[argv.index("--llm") + 1] = "openai:stub-model"
            argv[argv.index("--index") + 1] = str(support_kb_bm25)
            argv += ["--base-url", server.url, "--mode", "bm25"]
            result = CliRunner().invoke(main, argv)
            assert result.exit_code == 0, (line, result.output)
        assert server.asked(VERDICT_SYSTEM)  # both asked the model's verdict
    assert (tmp_path / "verdicts" / "openai_stub-model.json").is_file()


def test_eval_answers_measures_the_verdict_stage_on_other_questions(
    support_kb_bm25: Path, tmp_path: Path
) -> None:
    # calibrated on one split, measured on another: the model that reads makes the
    # learned confidence abstain on more unanswerable questions
    stored = tmp_path / "stub.json"
    evaluate = [
        *("eval-answers", str(QA), "--index", str(support_kb_bm25), "--mode", "bm25"),
        *("--split", "heldout19", "--confidence", "learned", "--json"),
    ]
    scores = []
    with ChatServer(reader_of_facts) as server:
        assert calibrate(support_kb_bm25, server.url, "--out", str(stored)).exit_code == 0
        model = ("--llm", "openai:stub-model", "--base-url", server.url)
        staged = ("--llm-stage", "verdict", "--verdict-calibration", str(stored))
        for extra in ((), staged):
            result = CliRunner().invoke(main, [*evaluate, *model, *extra])
            assert result.exit_code == 0, result.output
            scores.append(json.loads(result.stdout)["systems"][0])
    plain, weighed = scores
    assert plain["system"] == weighed["system"] == "twokeys+openai:stub-model"
    assert weighed["abstention"] > plain["abstention"] + 0.2
    assert weighed["false_abstention"] <= 0.1


class BaseModelServer(ChatServer):
    """A llama.cpp-like server of a base model: ``/props`` says it has no chat template,
    ``/v1/completions`` continues a prompt (scripted by the prompt's text); the chat
    route answers 404 and records being asked."""

    def __init__(self, continue_: Callable[[str], str]) -> None:
        self.prompts: list[str] = []
        self.chat_asked = 0
        super().__init__(lambda system, user: "")
        server = self
        handler = self.httpd.RequestHandlerClass

        def do_get(h: BaseHTTPRequestHandler) -> None:
            if h.path != "/props":
                h.send_error(404)
                return
            _reply(h, "application/json", json.dumps({"chat_template": ""}).encode())

        def do_post(h: BaseHTTPRequestHandler) -> None:
            body = json.loads(h.rfile.read(int(h.headers["content-length"])))
            if h.path != "/v1/completions":  # the chat route; /tokenize (not offered)
                server.chat_asked += h.path == "/v1/chat/completions"
                h.send_error(404)
                return
            server.prompts.append(body["prompt"])
            choice = {"index": 0, "text": continue_(body["prompt"])}
            if body.get("stream"):
                data = f"data: {json.dumps({'choices': [choice]})}\n\ndata: [DONE]\n\n"
                _reply(h, "text/event-stream", data.encode())
            else:
                _reply(h, "application/json", json.dumps({"choices": [choice]}).encode())

        handler.do_GET = do_get  # type: ignore[attr-defined]
        handler.do_POST = do_post  # type: ignore[attr-defined]


def _reply(h: BaseHTTPRequestHandler, kind: str, data: bytes) -> None:
    h.send_response(200)
    h.send_header("content-type", kind)
    h.send_header("content-length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)


def test_a_base_model_behind_a_server_gets_completion_prompts_from_its_first_call(
    support_kb_bm25: Path,
) -> None:
    # the follow-up's rewrite and the split run before the answer's prompt style is
    # chosen: the server is asked whether the model has a chat template before them
    def continue_(prompt: str) -> str:
        if prompt.startswith(REWRITE_SYSTEM):
            return "how many days to ask for a refund after a change of mind\n"
        if prompt.startswith("Split the request"):
            return "how many days to ask for a refund after a change of mind\n"
        return " You have 14 days [1]."

    earlier = ("--earlier", "What is the refund policy for a change of mind?")
    with BaseModelServer(continue_) as server:
        result, data = ask(
            support_kb_bm25,
            server.url,
            "and how many days do I have?",
            *earlier,
            "--llm-stage",
            "rewrite",
        )
    assert result.exit_code == 0, result.output
    assert server.chat_asked == 0  # never sent chat messages
    assert data["followup"]["how"] == "llm"
    assert server.prompts[0].startswith(REWRITE_SYSTEM)
    assert server.prompts[1].startswith("Split the request")
    assert data["kind"] == "generated"
