"""The server's settings: the API keys, request limits, allowed hosts and CORS origins,
the access log, the model name, and the default address and ports."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from twokeys.errors import ConfigError
from twokeys.rag.ask import AskOptions
from twokeys.server.keys import WRITE, ApiKey, check_unique

LOOPBACK = "127.0.0.1"  # the default address to bind: nothing beyond this machine reaches it
HTTP_PORT = 8000  # twokeys serve
MCP_PORT = 8001  # twokeys mcp --transport http


@dataclass(frozen=True)
class Limits:
    """What one request may ask for; beyond it the answer is a 4xx naming the limit."""

    max_query_chars: int = 2_000  # a query, a question, a chat message, an embedding input
    max_k: int = 100
    max_candidates: int = 1_000  # candidates and rerank_top
    max_body_bytes: int = 1 << 20  # JSON bodies
    max_upload_bytes: int = 10 << 20  # multipart uploads, all files together
    max_documents: int = 100  # per write
    max_embedding_inputs: int = 256
    request_timeout_s: float = 120.0  # until the response starts (a slow body included)
    max_concurrent_per_key: int = 64  # requests of one key (or of all, without keys) at once

    def check_text(self, name: str, text: str) -> None:
        if len(text) > self.max_query_chars:
            raise RequestError(
                400, f"{name}: {len(text)} characters; the limit is {self.max_query_chars}"
            )

    def check_count(self, name: str, value: int, limit: int) -> None:
        if value > limit:
            raise RequestError(400, f"{name}: {value}; the limit is {limit}")


@dataclass(frozen=True)
class ServerConfig:
    api_key: str | None = None  # one read-write key, named "default"
    limits: Limits = field(default_factory=Limits)
    cors_origins: tuple[str, ...] = ()
    model_name: str = "twokeys"  # the model id the OpenAI-compatible routes answer to
    keys: tuple[ApiKey, ...] = ()  # keys with roles (twokeys.server.keys)
    allowed_hosts: tuple[str, ...] = ()  # Host names served besides loopback and IP literals
    access_log: Literal["text", "json", "off"] = "text"
    log_queries: bool = False  # put the query text in the access log
    #: tokens a chat turn's whole prompt may take with a model: the conversation (system
    #: text and earlier turns, fitted) plus the sources, the question and the answer
    chat_context: int = 4096
    #: how /ask (for what a request leaves unset) and the chat route answer:
    #: the confidence, the packing order and the model's stages (``serve --confidence``,
    #: ``--order``, ``--llm-stage``, ``--verdict-calibration``)
    answers: AskOptions = field(default_factory=AskOptions)

    def all_keys(self) -> tuple[ApiKey, ...]:
        """``keys``, and ``api_key`` as the read-write key "default"."""
        single = (ApiKey("default", WRITE, self.api_key),) if self.api_key else ()
        return check_unique((*single, *self.keys))

    @property
    def keyed(self) -> bool:
        return bool(self.api_key or self.keys)


class RequestError(Exception):
    """A request the server refuses, with its HTTP status and a message saying why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


_COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def check_collection_name(name: str, default: str) -> str:
    """A collection's name: a URL path segment and a model id."""
    if not _COLLECTION_NAME.match(name):
        raise ConfigError(
            f"collection name {name!r}: use letters, digits, '.', '_' or '-' (at most 64)"
        )
    if name == default:
        raise ConfigError(f"collection name {name!r} is the default index's model name")
    return name


def parse_collection(text: str) -> tuple[str, str]:
    """``NAME=LOCATION`` (``--collection``) as ``(name, location)``."""
    name, sep, location = text.partition("=")
    if not sep or not location.strip():
        raise ConfigError(f"--collection {text!r}: expected NAME=PATH (or NAME=postgresql://...)")
    return name.strip(), location.strip()
