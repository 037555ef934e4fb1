"""Prometheus metrics of a server (``GET /metrics``), with the ``prometheus-client`` library.

Each app has its own registry: request counts and latency histograms per route,
method and status (from the access log's records), search latency per mode, language
model errors, and, read at each scrape, every collection's index generation, document
and chunk count and the writes the server made.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from twokeys.llm.base import LLM
from twokeys.server.accesslog import RequestRecord
from twokeys.server.service import IndexService

CONTENT_TYPE = CONTENT_TYPE_LATEST
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class _Indexes(Collector):
    """Each collection's generation, counts and writes, read when scraped."""

    def __init__(self, collections: Callable[[], Iterable[tuple[str, IndexService]]]) -> None:
        self.collections = collections

    def collect(self) -> Iterator[Metric]:
        labels = ["collection"]
        generation = GaugeMetricFamily(
            "twokeys_index_generation",
            "The generation being served (its id in the label; the value is 1)",
            labels=["collection", "generation"],
        )
        documents = GaugeMetricFamily("twokeys_index_documents", "Documents", labels=labels)
        chunks = GaugeMetricFamily("twokeys_index_chunks", "Chunks", labels=labels)
        writes = CounterMetricFamily(
            "twokeys_index_writes", "Writes committed by this server", labels=labels
        )
        for name, service in self.collections():
            with service.reader() as index:
                manifest = index.manifest
            generation.add_metric([name, str(manifest.generation)], 1)
            documents.add_metric([name], manifest.counts.get("documents", 0))
            chunks.add_metric([name], manifest.counts.get("chunks", 0))
            writes.add_metric([name], service.writes)
        yield from (generation, documents, chunks, writes)


class Metrics:
    """The metrics of one app (see the module docstring)."""

    def __init__(self, collections: Callable[[], Iterable[tuple[str, IndexService]]]) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "twokeys_http_requests",
            "HTTP requests by route pattern, method and status",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "twokeys_http_request_duration_seconds",
            "Time to answer an HTTP request (until its last byte), by route pattern",
            ["route", "method"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.search = Histogram(
            "twokeys_search_duration_seconds",
            "Time of one search, by mode (retriever and fusion)",
            ["mode"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.model_errors = Counter(
            "twokeys_model_errors",
            "Calls to the language model that failed",
            ["model"],
            registry=self.registry,
        )
        self.registry.register(_Indexes(collections))

    def observe(self, record: RequestRecord) -> None:
        """The access log's sink."""
        self.requests.labels(record.route, record.method, str(record.status)).inc()
        self.latency.labels(record.route, record.method).observe(record.seconds)

    def observe_search(self, mode: str, seconds: float) -> None:
        self.search.labels(mode).observe(seconds)

    def exposition(self) -> bytes:
        """The metrics in Prometheus' text format."""
        return generate_latest(self.registry)

    def counted(self, llm: LLM | None) -> LLM | None:
        """``llm``, counting its failures in ``twokeys_model_errors``."""
        return None if llm is None else _CountedLLM(llm, self.model_errors.labels(llm.name))


class _CountedLLM(LLM):
    def __init__(self, inner: LLM, errors: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.chat = inner.chat
        self._errors = errors

    def stream(self, prompt: Any, **kwargs: Any) -> Iterator[str]:
        try:
            yield from self.inner.stream(prompt, **kwargs)
        except Exception:
            self._errors.inc()
            raise

    def detect_chat(self) -> bool:
        return self.inner.detect_chat()

    def token_counter(self) -> Any:
        return self.inner.token_counter()

    def unreachable(self) -> str | None:
        return self.inner.unreachable()

    def close(self) -> None:
        self.inner.close()
