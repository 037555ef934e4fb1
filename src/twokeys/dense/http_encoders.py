"""Encoders served over HTTP: Ollama's embeddings API and OpenAI-compatible ``/embeddings``.

Named like the LLMs: ``ollama:nomic-embed-text`` or ``openai:text-embedding-3-small``
(``twokeys index --encoder ollama:nomic-embed-text``). The server address comes from
``TWOKEYS_EMBED_BASE_URL``, else ``TWOKEYS_BASE_URL``, else the provider's default; the
OpenAI key from ``OPENAI_API_KEY``. Requests are batched, retried and timed out by
:class:`~twokeys.llm.http.JSONService`.

**Fingerprint.** The weights live on the server, so an index cannot hash them; the
fingerprint is ``sha256`` of ``provider``, ``model`` and ``base URL`` (one per line).
Searching an index with another model or another server is an
:class:`~twokeys.errors.EncoderMismatchError`; a model updated in place on the same server
is not detected.

The vector size is taken from a table of known models or learnt from the first answer.
Models trained with task prefixes get them (nomic-embed-text: ``search_query:`` /
``search_document:``; mxbai-embed-large: its retrieval instruction on queries). Token
counts for the chunker use :func:`~twokeys.text.tokens.approx_token_counter`, since the
server's tokenizer is not exposed.
"""

from __future__ import annotations

import hashlib
import os
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt

from twokeys.dense.encoder import Encoder, Kind
from twokeys.errors import ConfigError
from twokeys.llm.http import DEFAULT_TIMEOUT, JSONService, ServiceResponseError, json_field
from twokeys.llm.spec import DEFAULT_BASE_URLS, resolve_base_url
from twokeys.text.tokens import approx_token_counter

KNOWN_DIMS: Mapping[str, int] = {
    "nomic-embed-text": 768,
    "mxbai-embed-large": 1024,
    "all-minilm": 384,
    "snowflake-arctic-embed": 1024,
    "bge-m3": 1024,
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
KNOWN_MAX_TOKENS: Mapping[str, int] = {
    "nomic-embed-text": 2048,
    "mxbai-embed-large": 512,
    "all-minilm": 256,
    "bge-m3": 8192,
    "text-embedding-3-small": 8191,
    "text-embedding-3-large": 8191,
    "text-embedding-ada-002": 8191,
}
PREFIXES: Mapping[str, tuple[str, str]] = {  # model -> (query prefix, document prefix)
    "nomic-embed-text": ("search_query: ", "search_document: "),
    "mxbai-embed-large": ("Represent this sentence for searching relevant passages: ", ""),
}


def _base_name(model: str) -> str:
    """``"nomic-embed-text:v1.5"`` -> ``"nomic-embed-text"`` (for the lookup tables)."""
    return model.split(":", 1)[0].rsplit("/", 1)[-1]


class HTTPEncoder(Encoder):
    """Shared by the HTTP encoders: batching, fingerprint, lazy dimension."""

    provider: str

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        dim: int | None = None,
        max_tokens: int | None = None,
        batch_size: int = 32,
        timeout: float = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
        **service: Any,
    ) -> None:
        if not model:
            raise ConfigError(f"encoder: {self.provider}:MODEL names no model")
        if batch_size < 1:
            raise ConfigError(f"batch_size: must be >= 1, got {batch_size}")
        self.model = model
        self.id = f"{self.provider}:{model}"
        self.base_url = base_url.rstrip("/")
        self.batch_size = batch_size
        base = _base_name(model)
        self._dim = dim or KNOWN_DIMS.get(base)
        self.max_tokens = max_tokens or KNOWN_MAX_TOKENS.get(base, 512)
        self._prefixes = PREFIXES.get(base, ("", ""))
        self.service = JSONService(
            self.provider,
            self.base_url,
            headers=headers,
            timeout=timeout,
            transport=transport,
            **service,
        )

    @property
    def dim(self) -> int:
        """The vector size: known for common models, else asked of the server once."""
        if self._dim is None:
            self._dim = int(self._embed(["dimension probe"]).shape[1])
        return self._dim

    @dim.setter
    def dim(self, value: int) -> None:
        self._dim = value

    def fingerprint(self) -> str:
        digest = hashlib.sha256(f"{self.provider}\n{self.model}\n{self.base_url}".encode())
        return "sha256:" + digest.hexdigest()

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return approx_token_counter(texts)

    def embed_batch(self, texts: Sequence[str], kind: Kind) -> npt.NDArray[np.float32]:
        prefix = self._prefixes[0] if kind == "query" else self._prefixes[1]
        vectors = self._embed([prefix + t for t in texts])
        if vectors.shape[0] != len(texts):
            raise ServiceResponseError(
                f"{self.provider} at {self.base_url}: {vectors.shape[0]} embeddings for "
                f"{len(texts)} texts"
            )
        if self._dim is not None and vectors.shape[1] != self._dim:
            raise ServiceResponseError(
                f"{self.provider} at {self.base_url}: {self.model} returned {vectors.shape[1]}-"
                f"dimensional vectors, expected {self._dim}"
            )
        self._dim = int(vectors.shape[1])
        return vectors

    def close(self) -> None:
        self.service.close()

    @abstractmethod
    def _embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        """Raw embeddings of ``texts``, one row each, in order."""

    def _matrix(self, path: str, rows: Any) -> npt.NDArray[np.float32]:
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError):
            matrix = np.empty(0, np.float32)
        if matrix.ndim != 2 or matrix.shape[1] == 0:
            raise ServiceResponseError(
                f"{self.provider} at {self.service.url(path)}: embeddings are not a list of "
                "equal-length number lists"
            )
        return matrix


class OllamaEncoder(HTTPEncoder):
    """Ollama's ``/api/embed``, e.g. ``OllamaEncoder("nomic-embed-text")``."""

    provider = "ollama"

    def __init__(self, model: str, *, base_url: str = DEFAULT_BASE_URLS["ollama"], **kw: Any):
        super().__init__(model, base_url=base_url, **kw)

    def _embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        data = self.service.post("api/embed", {"model": self.model, "input": texts})
        rows = json_field(self.service, self.service.url("api/embed"), data, "embeddings")
        return self._matrix("api/embed", rows)


class OpenAIEncoder(HTTPEncoder):
    """An OpenAI-compatible ``/embeddings``, e.g. ``OpenAIEncoder("text-embedding-3-small")``."""

    provider = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URLS["openai"],
        api_key: str | None = None,
        **kw: Any,
    ):
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
        super().__init__(model, base_url=base_url, headers=headers, **kw)

    def _embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        data = self.service.post("embeddings", {"model": self.model, "input": texts})
        url = self.service.url("embeddings")
        items = json_field(self.service, url, data, "data")
        if not isinstance(items, list):
            raise ServiceResponseError(f"openai at {url}: 'data' is not a list")
        ordered = sorted(items, key=lambda d: d.get("index", 0) if isinstance(d, dict) else 0)
        rows = [json_field(self.service, url, item, "embedding") for item in ordered]
        return self._matrix("embeddings", rows)


def _embed_base_url(provider: str) -> str:
    return resolve_base_url(provider, os.environ.get("TWOKEYS_EMBED_BASE_URL"))


def ollama_encoder(model: str) -> Encoder:
    """The registry's factory for ``ollama:MODEL`` names (address from the environment)."""
    return OllamaEncoder(model, base_url=_embed_base_url("ollama"))


def openai_encoder(model: str) -> Encoder:
    """The registry's factory for ``openai:MODEL`` names (address and key from the environment)."""
    url = _embed_base_url("openai")
    key = os.environ.get("OPENAI_API_KEY")
    if not key and url == DEFAULT_BASE_URLS["openai"]:
        raise ConfigError(
            "encoder: openai:MODEL at api.openai.com needs OPENAI_API_KEY; for a local "
            "server set TWOKEYS_EMBED_BASE_URL (e.g. http://127.0.0.1:8080/v1)"
        )
    return OpenAIEncoder(model, base_url=url, api_key=key)
