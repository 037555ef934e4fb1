"""The ``Encoder`` interface and the registry that names encoders.

A backend implements one method, :meth:`Encoder.embed_batch`; the base class adds
length-sorted batching, L2 normalisation and a progress callback. Encoders are looked
up by name (``"minilm"``, the default) so an index can record which one built it and
refuse to be searched with another; a *family* resolves ``PREFIX:MODEL`` names, such as
``ollama:nomic-embed-text`` or ``openai:text-embedding-3-small`` (served over HTTP).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal, cast

import numpy as np
import numpy.typing as npt

from twokeys.errors import ConfigError
from twokeys.registry import Target, resolve

Kind = Literal["query", "document"]
Progress = Callable[[int], None]


class Encoder(ABC):
    """Turns texts into L2-normalised float32 vectors."""

    #: stable identifier recorded in the index manifest, e.g. "onnx:all-MiniLM-L6-v2-int8"
    id: str
    #: vector dimension
    dim: int
    #: the longest input in model tokens; longer inputs are truncated
    max_tokens: int
    batch_size: int = 32

    @abstractmethod
    def embed_batch(self, texts: Sequence[str], kind: Kind) -> npt.NDArray[np.float32]:
        """Embed one batch; rows need not be normalised."""

    @abstractmethod
    def fingerprint(self) -> str:
        """A hash of the model weights, so an index can detect a changed model."""

    def tokenizer_fingerprint(self) -> str:
        """A hash of the tokenizer's files, so an index can detect a changed tokenizer
        (which changes every vector as surely as new weights); "" when the encoder has
        no tokenizer of its own (a remote model) or its fingerprint covers it."""
        return ""

    def vector_space(self) -> tuple[str, str, str]:
        """The (id, fingerprint, tokenizer fingerprint) of the encoder whose document
        vectors this one's query vectors are compared with: its own, unless it is a
        query-side stand-in fitted to another encoder's space (``minilm-static``), which
        may then search that encoder's index."""
        return self.id, self.fingerprint(), self.tokenizer_fingerprint()

    @abstractmethod
    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Model tokens of each text, without special tokens (used by the chunker)."""

    def encode(
        self, texts: Sequence[str], kind: Kind, *, progress: Progress | None = None
    ) -> npt.NDArray[np.float32]:
        """Embed ``texts`` in length-sorted batches and L2-normalise each row."""
        out = np.empty((len(texts), self.dim), np.float32)
        if not texts:
            return out
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            vectors = np.asarray(self.embed_batch([texts[i] for i in idx], kind), np.float32)
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            out[idx] = vectors / np.maximum(norms, 1e-12)
            if progress is not None:
                progress(len(idx))
        return out

    def encode_query(self, text: str) -> npt.NDArray[np.float32]:
        """The query's vector (read-only). The last :data:`QUERY_CACHE_SIZE` queries are
        kept: one question is read by search, by grounding's dense peak and by the
        extractive answer, each of which would otherwise run the model on it again."""
        cache = self._query_cache()
        with cache.lock:
            vector = cache.vectors.get(text)
            if vector is not None:
                cache.vectors.move_to_end(text)
                return vector
        vector = self.encode_one(text)
        vector.flags.writeable = False
        with cache.lock:
            cache.vectors[text] = vector
            if len(cache.vectors) > QUERY_CACHE_SIZE:
                cache.vectors.popitem(last=False)
        return vector

    def encode_one(self, text: str) -> npt.NDArray[np.float32]:
        """One query's L2-normalised vector, uncached: a backend may override it with a
        path for a single text (:meth:`encode` batches many)."""
        return self.encode([text], "query").reshape(-1)

    def _query_cache(self) -> _QueryCache:
        cache: _QueryCache | None = self.__dict__.get("_queries")
        if cache is None:  # setdefault: two threads get the same cache
            cache = cast(_QueryCache, self.__dict__.setdefault("_queries", _QueryCache()))
        return cache


QUERY_CACHE_SIZE = 256


@dataclass
class _QueryCache:
    """Recent query texts and their vectors, oldest first; shared by threads."""

    vectors: OrderedDict[str, npt.NDArray[np.float32]] = field(default_factory=OrderedDict)
    lock: threading.Lock = field(default_factory=threading.Lock)


EncoderFactory = Callable[[], Encoder]
EncoderFamily = Callable[[str], Encoder]
# name -> a factory, or the "module:attribute" path of one, imported on first use
_REGISTRY: dict[str, Target] = {}
_FAMILIES: dict[str, Target] = {}


def register_encoder(name: str, factory: EncoderFactory | str) -> None:
    """Make an encoder available by name (to the CLI, the index and ``get_encoder``);
    ``factory`` may be the ``"module:attribute"`` path of one, imported on first use."""
    _REGISTRY[name] = factory


@contextmanager
def encoder_variant(name: str, factory: EncoderFactory | str) -> Iterator[None]:
    """Within the block, ``name`` makes ``factory``'s encoder, which must be the same
    encoder (id and weights) set up for other work: the one-query setup of a single
    ``twokeys search``. The previous factory is back afterwards."""
    previous = _REGISTRY.get(name)
    _REGISTRY[name] = factory
    try:
        yield
    finally:
        if previous is None:
            del _REGISTRY[name]
        else:
            _REGISTRY[name] = previous


def register_encoder_family(prefix: str, factory: EncoderFamily | str) -> None:
    """Make every ``PREFIX:MODEL`` name resolve to ``factory(MODEL)`` (``ollama:...``)."""
    _FAMILIES[prefix] = factory


def encoder_names() -> list[str]:
    return sorted(_REGISTRY) + [f"{p}:MODEL" for p in sorted(_FAMILIES)]


def check_encoder_name(name: str) -> None:
    """A :class:`ConfigError` when ``name`` names no registered encoder nor a family's
    model; loads nothing (a bad name fails where it is given, not at first use)."""
    if name in _REGISTRY:
        return
    prefix, _, model = name.partition(":")
    if not model or prefix not in _FAMILIES:
        raise ConfigError(
            f"encoder: unknown encoder {name!r}; available: {', '.join(encoder_names())}"
        )


def get_encoder(name: str) -> Encoder:
    """Instantiate a registered encoder, or one of a family (``ollama:nomic-embed-text``);
    unknown names are a :class:`ConfigError`."""
    check_encoder_name(name)
    factory = _REGISTRY.get(name)
    if factory is not None:
        return cast(Encoder, resolve(factory)())
    prefix, _, model = name.partition(":")
    return cast(Encoder, resolve(_FAMILIES[prefix])(model))


# the built-in backends import this module (Encoder); named by path, they load on first use
register_encoder("minilm", "twokeys.dense.onnx_minilm:OnnxMiniLM")
register_encoder("minilm-static", "twokeys.dense.static_minilm:StaticMiniLM")
register_encoder_family("ollama", "twokeys.dense.http_encoders:ollama_encoder")
register_encoder_family("openai", "twokeys.dense.http_encoders:openai_encoder")
