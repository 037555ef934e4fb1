"""The routes for the people who run a server: ``/readyz`` and ``/metrics``.

``GET /readyz`` (no key): 200 when every index opens and answers and, with a language
model configured, the model's server answers within a second (any HTTP status: it is
up); 503 with the reason otherwise. ``GET /metrics`` (the key of any role, when keys
are configured): the Prometheus text format (:mod:`twokeys.server.metrics`).
``/healthz`` (alive) is the app's own.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from twokeys.llm.base import LLM
from twokeys.server.metrics import CONTENT_TYPE, Metrics
from twokeys.server.service import IndexService


def model_unreachable(llm: LLM | None) -> str | None:
    """Why the model's server does not answer (:meth:`~twokeys.llm.base.LLM.unreachable`:
    the same one-second check a chat turn makes), or None (no model, an in-process one,
    or a server that answered)."""
    return None if llm is None else llm.unreachable()


def probes_router(service: IndexService, llm: LLM | None, metrics: Metrics, key: Any) -> APIRouter:
    """``/readyz`` and ``/metrics`` (``key``: the dependency that checks the key)."""
    router = APIRouter(tags=["status"])

    def ready() -> str | None:
        try:
            with service.reader() as index:
                index.manifest.counts  # noqa: B018
        except Exception as exc:  # any failure to open means not ready
            return f"the index does not open ({type(exc).__name__})"
        return model_unreachable(llm)

    @router.get("/readyz")
    async def readyz() -> Response:
        """Readiness: the index opens and the model (if any) answers; else 503."""
        why = await run_in_threadpool(ready)
        if why is not None:
            return JSONResponse({"status": "unready", "detail": why}, 503)
        return JSONResponse({"status": "ready"})

    @router.get("/metrics", dependencies=[key], include_in_schema=False)
    async def metrics_route() -> Response:
        """Prometheus metrics."""
        data = await run_in_threadpool(metrics.exposition)
        return Response(data, media_type=CONTENT_TYPE)

    return router
