"""End to end with the real Open WebUI: a 10-turn chat through ``twokeys serve``.

``python -m benchmarks.openwebui_e2e`` (in the project's venv, with the ``serve`` extra):

1. makes Open WebUI's own venv when it is missing (``python3 -m venv VENV``, then
   ``pip install torch==2.13.0`` and ``pip install open-webui``, as its README installs
   it; ``--venv``, default ``$TWOKEYS_OWUI_VENV`` or ``/work/cache/owui``);
2. indexes ``examples/support-kb/docs`` (``twokeys index``) and starts ``twokeys serve``
   on a free loopback port;
3. boots ``open-webui serve`` offline on another free loopback port, its data in a
   temporary folder, with twokeys as its only (OpenAI) connection, nothing downloaded
   (its own RAG, embedding and speech models are off or never loaded);
4. signs up an account (the first one is the admin), checks that ``/api/models`` lists
   the model twokeys' ``/v1/models`` names, and runs a 10-turn chat the way Open WebUI's
   page does: the chat is saved (``/api/v1/chats/new``, then each turn's messages), each
   turn goes to ``POST /api/chat/completions`` streamed, with the chat, message and
   session ids, a ~3,000-character system prompt, and the title, tags and follow-up
   background tasks on; the answer, its sources (from twokeys' ``url_citation``
   annotations), the chat's title and the follow-up suggestions are read back from the
   saved chat, as the page shows them;
5. also calls the task routes the page calls directly (``/api/v1/tasks/title/completions``,
   ``/api/v1/tasks/follow_up/completions``, ``/api/v1/tasks/tags/completions``), and
   asks a second collection (``examples/support-kb/docs/policies``, served by the same
   process with ``--collection policies=...``) by picking its model.

Each turn's status, latency and checks go to ``benchmarks/results/openwebui_e2e.json``;
the exit status is 1 when a check failed and 2 when Open WebUI could not be installed or
booted (the reason is recorded). Every wait is bounded; both servers are stopped at the
end, also on failure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
KB_DOCS = REPO / "examples" / "support-kb" / "docs"
RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_VENV = Path(os.environ.get("TWOKEYS_OWUI_VENV", "/work/cache/owui"))
TORCH = "torch==2.13.0"  # a CPU wheel first, so open-webui's dependencies pull no CUDA build
INSTALL_TIMEOUT = 3600.0
BOOT_TIMEOUT = 600.0  # Open WebUI's first boot migrates its database (minutes on 2 cores)
TURN_TIMEOUT = 180.0
TASK_TIMEOUT = 120.0
COLLECTION = "policies"  # examples/support-kb/docs/policies, served beside the whole KB

#: a long system prompt (~3,000 characters), as a support team would give its assistant
SYSTEM_PROMPT = " ".join(
    [
        "You are the support assistant of Lumatek, a maker of smart-home hubs and cameras.",
        "Answer only from the support knowledge base passages you are given, and cite them.",
        "When the passages do not answer the question, say so plainly and suggest contacting",
        "support; never guess error codes, prices, time limits or policy terms.",
    ]
    + [
        f"Rule {i}: keep answers short, name the page you used, quote exact figures "
        "(days, percentages, firmware versions) as written, prefer numbered steps for "
        "procedures, and say which product (Hub, Cam, Cam Go) a step applies to."
        for i in range(1, 13)
    ]
)

#: (question, the document its answer is in); turns 2, 4, 6 and 8 are follow-ups that
#: need the turn before them
TURNS: tuple[tuple[str, str], ...] = (
    ("What does error code ZX-4821 mean?", "errors/zx-4821.md"),
    ("How do I fix it?", "errors/zx-4821.md"),
    ("Can I get my money back if the item arrived broken?", "policies/refund-policy.md"),
    ("and how many days do I have?", "policies/refund-policy.md"),
    ("my hub keeps losing its internet connection", "troubleshooting/wifi-drops.md"),
    ("what should I check first?", "troubleshooting/wifi-drops.md"),
    (
        "the gadget quit on me a year and a half after I bought it; "
        "will you sort it out without charging me?",
        "policies/warranty.md",
    ),
    ("what does it not cover?", "policies/warranty.md"),
    ("how soon will my purchase turn up after I pay?", "policies/shipping.md"),
    ("Is support@lumatek.example the right address to write to?", "general/contact-support.md"),
)


@dataclass
class Report:
    """What the run found: written to the results file whatever happened."""

    started: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    machine: dict[str, Any] = field(default_factory=dict)
    open_webui: dict[str, Any] = field(default_factory=dict)
    checks: list[dict[str, Any]] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    failure: str | None = None

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        self.checks.append({"check": name, "ok": bool(ok), "detail": detail})
        print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)
        return bool(ok)

    def to_dict(self) -> dict[str, Any]:
        passed = sum(c["ok"] for c in self.checks)
        return {
            "started": self.started,
            "machine": self.machine,
            "open_webui": self.open_webui,
            "failure": self.failure,
            "checks_passed": passed,
            "checks_failed": len(self.checks) - passed,
            "checks": self.checks,
            "turns": self.turns,
            "tasks": self.tasks,
        }


class Unavailable(Exception):
    """Open WebUI could not be installed or booted here; the message says why."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-chars:]
    except OSError:
        return ""


def ensure_venv(venv: Path, log: Path) -> None:
    """Open WebUI in its own venv, installed as its README says (torch's CPU wheel first)."""
    if (venv / "bin" / "open-webui").exists():
        return
    print(f"installing open-webui into {venv} (log: {log}) ...", flush=True)
    steps = [
        ["python3", "-m", "venv", str(venv)],
        [str(venv / "bin" / "pip"), "install", TORCH],
        [str(venv / "bin" / "pip"), "install", "open-webui"],
    ]
    deadline = time.monotonic() + INSTALL_TIMEOUT
    with log.open("a", encoding="utf-8") as out:
        for step in steps:
            left = deadline - time.monotonic()
            try:
                done = subprocess.run(step, stdout=out, stderr=subprocess.STDOUT, timeout=left)
            except subprocess.TimeoutExpired as exc:
                raise Unavailable(
                    f"{' '.join(step)}: still running after {INSTALL_TIMEOUT:.0f} s"
                ) from exc
            if done.returncode != 0:
                raise Unavailable(f"{' '.join(step)} failed ({done.returncode}): {tail(log, 1500)}")
    if not (venv / "bin" / "open-webui").exists():
        raise Unavailable(f"pip installed no open-webui command into {venv}")


def owui_version(venv: Path) -> str:
    done = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import importlib.metadata as m; print(m.version('open-webui'))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout.strip() or f"unknown ({done.stderr.strip()[-300:]})"


@contextmanager
def process(
    argv: list[str], env: dict[str, str], log: Path, cwd: Path | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """A server in its own process group, stopped (TERM, then KILL) on the way out."""
    with log.open("ab") as out:
        proc = subprocess.Popen(
            argv, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)


def wait_until_up(
    url: str, proc: subprocess.Popen[bytes], timeout: float, log: Path, what: str
) -> float:
    """Seconds until ``url`` answers 200; Unavailable (with the log's end) otherwise."""
    t0 = time.monotonic()
    while True:
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return time.monotonic() - t0
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise Unavailable(
                f"{what} exited ({proc.returncode}) before answering {url}: {tail(log)}"
            )
        if time.monotonic() - t0 > timeout:
            raise Unavailable(f"{what} did not answer {url} within {timeout:.0f} s: {tail(log)}")
        time.sleep(1.0)


def twokeys_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}


def owui_env(data_dir: Path, twokeys_url: str) -> dict[str, str]:
    """Open WebUI offline, its only connection twokeys' /v1."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR", "TZ")}
    return {
        **keep,
        "DATA_DIR": str(data_dir),
        "WEBUI_SECRET_KEY": secrets.token_hex(32),
        "OFFLINE_MODE": "true",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "ENABLE_OLLAMA_API": "false",
        "ENABLE_OPENAI_API": "true",
        "OPENAI_API_BASE_URL": twokeys_url,
        "OPENAI_API_KEY": "unused-without-a-key-file",
        "ENABLE_SIGNUP": "true",
        "ENABLE_PERSISTENT_CONFIG": "false",
        # its own RAG is not used here; an API engine keeps it from loading a local model
        "RAG_EMBEDDING_ENGINE": "openai",
        "RAG_OPENAI_API_BASE_URL": twokeys_url,
        "RAG_OPENAI_API_KEY": "unused-without-a-key-file",
        "RAG_EMBEDDING_MODEL_AUTO_UPDATE": "false",
        "RAG_RERANKING_MODEL_AUTO_UPDATE": "false",
        "WHISPER_MODEL_AUTO_UPDATE": "false",
        "BYPASS_EMBEDDING_AND_RETRIEVAL": "true",
        "ENABLE_WEB_SEARCH": "false",
        "ENABLE_CODE_INTERPRETER": "false",
        "ENABLE_IMAGE_GENERATION": "false",
        "ENABLE_EVALUATION_ARENA_MODELS": "false",
        "ENABLE_VERSION_UPDATE_CHECK": "false",
        "ENABLE_COMMUNITY_SHARING": "false",
        "SCARF_NO_ANALYTICS": "true",
        "DO_NOT_TRACK": "true",
        "ANONYMIZED_TELEMETRY": "false",
        "ENABLE_TITLE_GENERATION": "true",
        "ENABLE_FOLLOW_UP_GENERATION": "true",
        "ENABLE_TAGS_GENERATION": "true",
        "TASK_MODEL_EXTERNAL": "",
        "GLOBAL_LOG_LEVEL": "INFO",
    }


def build_index(docs: Path, index: Path, log: Path) -> None:
    argv = [sys.executable, "-m", "twokeys.cli", "index", str(docs), "--index", str(index)]
    with log.open("ab") as out:
        done = subprocess.run(
            argv, env=twokeys_env(), stdout=out, stderr=subprocess.STDOUT, timeout=600
        )
    if done.returncode != 0:
        raise RuntimeError(f"twokeys index failed ({done.returncode}): {tail(log)}")


class Client:
    """Open WebUI's HTTP API as its page calls it, signed in."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.http = httpx.Client(base_url=base, timeout=TURN_TIMEOUT)

    def sign_up(self) -> dict[str, Any]:
        r = self.http.post(
            "/api/v1/auths/signup",
            json={
                "name": "E2E Admin",
                "email": "e2e@example.com",
                "password": secrets.token_urlsafe(16),
            },
        )
        r.raise_for_status()
        data: dict[str, Any] = r.json()
        self.http.headers["Authorization"] = f"Bearer {data['token']}"
        return data

    def close(self) -> None:
        self.http.close()


def user_message(mid: str, parent: str | None, text: str, model: str) -> dict[str, Any]:
    return {
        "id": mid,
        "parentId": parent,
        "childrenIds": [],
        "role": "user",
        "content": text,
        "timestamp": int(time.time()),
        "models": [model],
    }


def wait_for_reply(client: Client, chat_id: str, message_id: str, timeout: float) -> dict[str, Any]:
    """The saved assistant message once it is done (Open WebUI writes it at the stream's end)."""
    deadline = time.monotonic() + timeout
    while True:
        r = client.http.get(f"/api/v1/chats/{chat_id}")
        if r.status_code == 200:
            message = r.json()["chat"]["history"]["messages"].get(message_id) or {}
            if message.get("done"):
                return {"chat": r.json(), "message": message}
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"message {message_id} of chat {chat_id} not done after {timeout:.0f} s"
            )
        time.sleep(0.2)  # the latency is read to within this


def wait_for(client: Client, chat_id: str, message_id: str, what: str, timeout: float) -> Any:
    """A field the background tasks write after the reply: the chat's title, the message's
    follow-ups; None when it does not come within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = client.http.get(f"/api/v1/chats/{chat_id}")
        if r.status_code == 200:
            chat = r.json()
            if what == "title" and chat.get("title") not in (None, "", "New Chat"):
                return chat["title"]
            if what == "tags" and chat.get("meta", {}).get("tags"):
                return chat["meta"]["tags"]
            if what == "followUps":
                message = chat["chat"]["history"]["messages"].get(message_id) or {}
                if "followUps" in message:
                    return message["followUps"]
        time.sleep(0.5)
    return None


def chat(client: Client, model: str, report: Report) -> None:
    """The 10 turns, as Open WebUI's page sends them: one saved chat, streamed replies."""
    session_id = uuid.uuid4().hex[:20]
    chat_id: str | None = None
    history: list[dict[str, str]] = [{"role": "system", "content": SYSTEM_PROMPT}]
    parent: str | None = None
    for n, (question, expected) in enumerate(TURNS, start=1):
        user_id, reply_id = str(uuid.uuid4()), str(uuid.uuid4())
        history.append({"role": "user", "content": question})
        body: dict[str, Any] = {
            "model": model,
            "messages": history,
            "stream": True,
            "id": reply_id,
            "user_message": user_message(user_id, parent, question, model),
            "session_id": session_id,
            "params": {},
            "features": {},
            # as the page sends them: title and tags for a new chat, follow-ups every turn
            "background_tasks": (
                {"title_generation": True, "tags_generation": True, "follow_up_generation": True}
                if chat_id is None
                else {"follow_up_generation": True}
            ),
        }
        if chat_id is None:
            body["parent_id"] = None  # a new chat: Open WebUI saves it and names its id
        else:
            body["chat_id"] = chat_id
            body["parent_id"] = parent
        turn: dict[str, Any] = {"turn": n, "question": question, "expected_source": expected}
        t0 = time.perf_counter()
        r = client.http.post("/api/chat/completions", json=body)
        turn["status"] = r.status_code
        if r.status_code != 200:
            turn["error"] = r.text[:500]
            report.turns.append(turn)
            report.check(f"turn {n}: answered", False, f"HTTP {r.status_code}: {r.text[:300]}")
            return
        chat_id = chat_id or r.json().get("chat_id")
        try:
            saved = wait_for_reply(client, str(chat_id), reply_id, TURN_TIMEOUT)
        except TimeoutError as exc:
            turn["error"] = str(exc)
            report.turns.append(turn)
            report.check(f"turn {n}: answered", False, str(exc))
            return
        turn["latency_s"] = round(time.perf_counter() - t0, 3)
        message = saved["message"]
        content = str(message.get("content") or "")
        error = message.get("error")
        sources = [
            {"name": s.get("source", {}).get("name"), "url": s.get("source", {}).get("url")}
            for s in message.get("sources") or []
        ]
        turn.update(
            answer_chars=len(content),
            answer=content,
            searched_for=_searched(content),
            sources=sources,
            error=error,
        )
        report.check(
            f"turn {n}: answered",
            bool(content) and not error,
            f"{len(content)} chars, {turn['latency_s']} s",
        )
        report.check(
            f"turn {n}: source cards (url_citation)",
            bool(sources) and all(s["url"] and s["name"] for s in sources),
            f"{len(sources)} sources",
        )
        # the sources list ends the text ("Closest sources:" when the answer abstains)
        parts = re.split(r"\n(Sources|Closest sources):\n", content, maxsplit=1)
        body_text, listed = parts[0], parts[-1] if len(parts) == 3 else ""
        abstained = len(parts) == 3 and parts[1] == "Closest sources"
        listed_lines = [line for line in listed.splitlines() if line.startswith("[")]
        turn["abstained"] = abstained
        turn["sources_listed"] = len(listed_lines)
        turn["sources_cited"] = sum("(not cited)" not in line for line in listed_lines)
        report.check(
            f"turn {n}: a sources list in the text, one card per source"
            + ("" if abstained else ", numbered citations"),
            len(listed_lines) == len(sources) > 0
            and (abstained or bool(re.search(r"\[\d+\]", body_text))),
            f"{'abstained; ' if abstained else ''}"
            f"{turn['sources_cited']} of {len(listed_lines)} listed sources cited",
        )
        if sources:  # a card links to the service's own view of its passage
            page = httpx.get(str(sources[0]["url"]), timeout=30)
            report.check(
                f"turn {n}: the first card's link opens its passage",
                page.status_code == 200 and "text/html" in page.headers.get("content-type", ""),
                f"{sources[0]['url']} -> {page.status_code}",
            )
        # where the page the answer is in comes among the source cards: a figure of
        # retrieval (benchmarks/followups measures it), not a check of the integration
        ranks = [i for i, s in enumerate(sources, 1) if expected in f"{s['name']} {s['url']}"]
        turn["expected_source_rank"] = ranks[0] if ranks else None
        follow_ups = wait_for(client, str(chat_id), reply_id, "followUps", TASK_TIMEOUT)
        turn["follow_ups"] = follow_ups
        report.check(
            f"turn {n}: follow-up suggestions",
            isinstance(follow_ups, list) and len(follow_ups) > 0,
            json.dumps(follow_ups)[:200],
        )
        if n == 1:
            title = wait_for(client, str(chat_id), reply_id, "title", TASK_TIMEOUT)
            turn["title"] = title
            # Open WebUI falls back to the first message when the title task fails: the
            # saved title must be the one the task route answers for the same chat
            asked = client.http.post(
                "/api/v1/tasks/title/completions",
                json={
                    "model": model,
                    "messages": [*history[1:], {"role": "assistant", "content": content}],
                },
                timeout=TASK_TIMEOUT,
            )
            made = _task_value(asked, "title")
            report.check(
                "chat title from the title task",
                bool(title) and title == made,
                f"{title!r} (task route: {made!r})",
            )
            tags = wait_for(client, str(chat_id), reply_id, "tags", TASK_TIMEOUT)
            turn["tags"] = tags
            report.check("chat tags from the tags task", bool(tags), repr(tags))
        history.append({"role": "assistant", "content": content})
        parent = reply_id
        report.turns.append(turn)
    report.open_webui["chat_id"] = chat_id
    final = client.http.get(f"/api/v1/chats/{chat_id}").json()
    report.open_webui["final_title"] = final.get("title")
    report.open_webui["saved_messages"] = len(final["chat"]["history"]["messages"])
    report.check(
        "the title stays the first turn's",
        final.get("title") == report.turns[0].get("title"),
        repr(final.get("title")),
    )
    report.check(
        "all turns saved in the chat",
        len(final["chat"]["history"]["messages"]) == 2 * len(TURNS),
        f"{len(final['chat']['history']['messages'])} messages",
    )


def collection_turn(client: Client, name: str, report: Report) -> None:
    """A new chat with the second collection's model: answered from that index only,
    its cards linking into ``/collections/NAME/``."""
    question = TURNS[2][0]
    user_id, reply_id = str(uuid.uuid4()), str(uuid.uuid4())
    body = {
        "model": name,
        "messages": [{"role": "user", "content": question}],
        "stream": True,
        "id": reply_id,
        "user_message": user_message(user_id, None, question, name),
        "parent_id": None,
        "session_id": uuid.uuid4().hex[:20],
        "background_tasks": {"follow_up_generation": True},
    }
    t0 = time.perf_counter()
    r = client.http.post("/api/chat/completions", json=body)
    row: dict[str, Any] = {"collection": name, "question": question, "status": r.status_code}
    if r.status_code == 200:
        message = wait_for_reply(client, str(r.json().get("chat_id")), reply_id, TURN_TIMEOUT)[
            "message"
        ]
        row["latency_s"] = round(time.perf_counter() - t0, 3)
        cards = [s.get("source", {}) for s in message.get("sources") or []]
        row["sources"] = [{"name": c.get("name"), "url": c.get("url")} for c in cards]
        ok = bool(cards) and all(f"/collections/{name}/" in str(c.get("url")) for c in cards)
        first = str(cards[0].get("name")) if cards else ""
        report.check(
            f"collection {name!r} by model: its own sources, first refund-policy.md",
            ok and "refund-policy.md" in first,
            f"{len(cards)} cards, first {first[:80]!r}",
        )
    else:
        report.check(f"collection {name!r} by model: answered", False, r.text[:300])
    report.open_webui["collection_turn"] = row


def _searched(content: str) -> str | None:
    for line in content.splitlines():
        if line.strip().startswith("Searched for:"):
            return line.strip()[len("Searched for:") :].strip()
    return None


def _task_value(r: httpx.Response, key: str) -> Any:
    """The value under ``key`` in a task route's answer (its message is the JSON)."""
    if r.status_code != 200:
        return None
    text = str(r.json()["choices"][0]["message"]["content"] or "")
    try:
        data = json.loads(text[text.find("{") : text.rfind("}") + 1])
    except ValueError:
        return None
    return data.get(key) if isinstance(data, dict) else None


def task_routes(client: Client, model: str, report: Report) -> None:
    """The task routes Open WebUI's page calls directly, with a 3-turn chat."""
    messages = [
        {"role": "user", "content": TURNS[2][0]},
        {
            "role": "assistant",
            "content": "Yes: items that arrive damaged are refunded (policies/refund-policy.md).",
        },
        {"role": "user", "content": TURNS[3][0]},
    ]
    for route, key in (
        ("/api/v1/tasks/title/completions", "title"),
        ("/api/v1/tasks/follow_up/completions", "follow_ups"),
        ("/api/v1/tasks/tags/completions", "tags"),
    ):
        t0 = time.perf_counter()
        r = client.http.post(
            route, json={"model": model, "messages": messages}, timeout=TASK_TIMEOUT
        )
        row: dict[str, Any] = {
            "route": route,
            "status": r.status_code,
            "latency_s": round(time.perf_counter() - t0, 3),
        }
        value = _task_value(r, key)
        if r.status_code == 200:
            row["content"] = r.json()["choices"][0]["message"]["content"][:300]
        else:
            row["error"] = r.text[:300]
        row[key] = value
        report.tasks.append(row)
        report.check(f"{route}: JSON with {key!r}", bool(value), json.dumps(value)[:200])


def run(venv: Path, work: Path, report: Report, llm: str | None = None) -> None:
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    ensure_venv(venv, logs / "install.log")
    report.open_webui["version"] = owui_version(venv)
    index = work / "kb.twokeys"
    t0 = time.perf_counter()
    build_index(KB_DOCS, index, logs / "twokeys-index.log")
    # a second collection, served by the same process as its own model
    policies = work / "policies.twokeys"
    build_index(KB_DOCS / "policies", policies, logs / "twokeys-index.log")
    report.machine["index_s"] = round(time.perf_counter() - t0, 1)
    tk_port, ow_port = free_port(), free_port()
    tk_url = f"http://127.0.0.1:{tk_port}"
    serve = [
        sys.executable,
        "-m",
        "twokeys.cli",
        "serve",
        "--index",
        str(index),
        "--port",
        str(tk_port),
        "--collection",
        f"{COLLECTION}={policies}",
        *(["--llm", llm] if llm else []),
    ]
    report.machine["twokeys_llm"] = llm
    with process(serve, twokeys_env(), logs / "twokeys-serve.log") as tk:
        report.machine["twokeys_boot_s"] = round(
            wait_until_up(
                f"{tk_url}/healthz", tk, 180, logs / "twokeys-serve.log", "twokeys serve"
            ),
            1,
        )
        served = [m["id"] for m in httpx.get(f"{tk_url}/v1/models", timeout=30).json()["data"]]
        data_dir = work / "open-webui-data"
        data_dir.mkdir(exist_ok=True)
        argv = [
            str(venv / "bin" / "open-webui"),
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(ow_port),
        ]
        ow_log = logs / "open-webui.log"
        with process(argv, owui_env(data_dir, f"{tk_url}/v1"), ow_log, cwd=work) as ow:
            boot = wait_until_up(
                f"http://127.0.0.1:{ow_port}/health", ow, BOOT_TIMEOUT, ow_log, "open-webui serve"
            )
            report.open_webui["boot_s"] = round(boot, 1)
            print(f"open-webui up in {boot:.0f} s", flush=True)
            client = Client(f"http://127.0.0.1:{ow_port}")
            try:
                account = client.sign_up()
                report.check(
                    "sign up (first account is admin)",
                    account.get("role") == "admin",
                    account.get("role", ""),
                )
                r = client.http.get("/api/models")
                listed = [m["id"] for m in r.json().get("data", [])] if r.status_code == 200 else []
                report.open_webui["models"] = listed
                model = served[0]
                report.check(
                    f"/api/models lists twokeys' models {served}",
                    set(served) <= set(listed) and COLLECTION in served,
                    ", ".join(listed),
                )
                if model in listed:
                    chat(client, model, report)
                    task_routes(client, model, report)
                if COLLECTION in listed:
                    collection_turn(client, COLLECTION, report)
            finally:
                client.close()
            log_text = tail(ow_log, 200_000)
            downloads = [
                line.strip()[:200]
                for line in log_text.splitlines()
                if "huggingface.co" in line or "Downloading" in line
            ]
            report.open_webui["download_attempts_in_log"] = downloads[:10]
            report.check("Open WebUI tried no download", not downloads, "; ".join(downloads[:3]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="Open WebUI's own venv")
    parser.add_argument("--out", type=Path, default=RESULTS / "openwebui_e2e.json")
    parser.add_argument(
        "--llm", help="twokeys serve's --llm (e.g. local); without it, extractive answers"
    )
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, data)")
    args = parser.parse_args(argv)
    # a TERM (a CI timeout) unwinds like an error, so both servers are stopped
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    report = Report(machine={"python": platform.python_version(), "cpus": os.cpu_count()})
    code = 0
    work = Path(tempfile.mkdtemp(prefix="twokeys-owui-"))
    try:
        run(args.venv, work, report, args.llm)
        code = 0 if all(c["ok"] for c in report.checks) and report.checks else 1
    except Unavailable as exc:
        report.failure = str(exc)
        print(f"Open WebUI unavailable: {exc}", file=sys.stderr)
        code = 2
    except Exception as exc:  # recorded, then the exit status says it failed
        report.failure = f"{type(exc).__name__}: {exc}"
        print(f"failed: {report.failure}", file=sys.stderr)
        code = 1
    finally:
        signal.signal(signal.SIGTERM, previous)
        if args.keep:
            print(f"work folder kept: {work}", flush=True)
            report.machine["work"] = str(work)
        else:
            import shutil

            shutil.rmtree(work, ignore_errors=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    passed = sum(c["ok"] for c in report.checks)
    print(f"{passed}/{len(report.checks)} checks passed; results in {args.out}")
    return code


if __name__ == "__main__":
    sys.exit(main())
