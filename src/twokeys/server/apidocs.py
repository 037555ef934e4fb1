"""The API docs page and what the OpenAPI schema says each route answers.

``GET /docs`` is Swagger UI served from this server's own files (the ``fastapi-offline``
package's copy of its script and stylesheet, part of the ``serve`` extra): no CDN, so it
works offline. With an API key the page is still served (it holds no data); it asks for
the key and sends it with every request it makes, the schema's (``/openapi.json``, which
needs the key) included.

:func:`declare_errors` adds to the schema the error statuses the server really answers
(FastAPI declares only 200 and 422), each with its body: ``{"detail": ...}``, or
OpenAI's ``{"error": {...}}`` under ``/v1``. A test sends each route the requests that
fail and compares.
"""

from __future__ import annotations

from importlib import resources
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from fastapi import APIRouter
from fastapi.responses import FileResponse, HTMLResponse, Response

from twokeys.server.config import RequestError

ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "favicon.png": "image/png",
}

#: statuses every route may answer, and why
COMMON = {
    "400": "a malformed request (invalid JSON, a value out of range, a limit exceeded)",
    "413": "a request body over the size limit",
    "500": "an internal error",
}
KEYED = {"401": "a missing or wrong API key"}
#: statuses only some routes answer
BY_ROUTE: dict[tuple[str, str], dict[str, str]] = {
    ("post", "/v1/chat/completions"): {
        "404": "an unknown model",
        "502": "the language model failed",
    },
    ("post", "/v1/embeddings"): {"404": "an unknown model"},
    ("get", "/v1/models/{model_id}"): {"404": "an unknown model"},
    ("get", "/documents/{doc_id}"): {"404": "no such document"},
    ("delete", "/documents/{doc_id}"): {
        "404": "no such document",
        "409": "another process is writing the index",
    },
    ("post", "/documents"): {
        "409": "another process is writing the index",
        "415": "a body that is neither JSON nor a multipart upload",
    },
    ("post", "/ask"): {"502": "the language model failed"},
    ("get", "/passages/{chunk_id}"): {"404": "no such passage"},
}
_OPEN = ("/healthz", "/readyz")  # probes: no key (see security.OPEN_PATHS)


def _static_dir() -> Path | None:
    spec = find_spec("fastapi_offline")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "static"
    return folder if folder.is_dir() else None


def docs_router(keyed: bool) -> APIRouter:
    """``GET /docs`` and its assets (module docstring)."""
    router = APIRouter(include_in_schema=False)
    page = resources.files("twokeys.server").joinpath("static/docs.html").read_text("utf-8")
    page = page.replace("__KEYED__", "true" if keyed else "false")
    script = resources.files("twokeys.server").joinpath("static/docs.js").read_text("utf-8")
    static = _static_dir()

    @router.get("/docs", response_class=HTMLResponse)
    def docs() -> HTMLResponse:
        if static is None:
            raise RequestError(404, "the API docs need the serve extra: pip install twokeys[serve]")
        return HTMLResponse(page)

    @router.get("/docs/assets/{name}")
    def asset(name: str) -> Response:
        if name == "docs.js":
            return Response(script, media_type="text/javascript")
        if static is None or name not in ASSETS:
            raise RequestError(404, f"no asset {name!r}")
        return FileResponse(static / name, media_type=ASSETS[name])

    return router


def declare_errors(schema: dict[str, Any], *, keyed: bool) -> dict[str, Any]:
    """``schema`` with the error responses each route answers (module docstring)."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components["ErrorDetail"] = {
        "type": "object",
        "properties": {"detail": {"type": "string"}},
        "required": ["detail"],
    }
    components["OpenAIError"] = {
        "type": "object",
        "properties": {
            "error": {
                "type": "object",
                "properties": {
                    "message": {"type": "string"},
                    "type": {"type": "string"},
                    "code": {"type": ["string", "null"]},
                },
                "required": ["message", "type"],
            }
        },
        "required": ["error"],
    }
    for path, operations in schema.get("paths", {}).items():
        body = "OpenAIError" if path.startswith("/v1/") else "ErrorDetail"
        for method, operation in operations.items():
            if path in _OPEN:
                continue
            statuses = {**COMMON, **(KEYED if keyed else {})}
            statuses.update(BY_ROUTE.get((method, path), {}))
            responses = operation.setdefault("responses", {})
            for status, why in statuses.items():
                responses.setdefault(
                    status,
                    {
                        "description": why,
                        "content": {
                            "application/json": {"schema": {"$ref": f"#/components/schemas/{body}"}}
                        },
                    },
                )
    return schema
