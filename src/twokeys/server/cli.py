"""``twokeys serve`` and ``twokeys mcp``: the index over HTTP, and as an MCP server."""

from __future__ import annotations

import ipaddress
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import click

from twokeys.cli_ask import evidence_options, stage_options
from twokeys.cliutil import index_option, make_llm, model_options
from twokeys.errors import ConfigError, MissingExtraError
from twokeys.llm.base import LLM
from twokeys.rag.ask import AskOptions
from twokeys.rag.verdicts import for_model
from twokeys.server.config import (
    HTTP_PORT,
    LOOPBACK,
    MCP_PORT,
    Limits,
    ServerConfig,
    check_collection_name,
    parse_collection,
)
from twokeys.server.keys import ENV_KEYS, ApiKey, check_unique, parse_keys, read_keys_file

_LIMITS = Limits()


def _require(module: str, extra: str) -> None:
    try:
        __import__(module)
    except ImportError:
        raise MissingExtraError(
            f"{module} is not installed: pip install 'twokeys[{extra}]'"
        ) from None


def read_api_key(path: Path | None) -> str | None:
    """The key in ``path`` (its first line, stripped), or None without a file."""
    if path is None:
        return None
    try:
        key = path.read_text(encoding="utf-8").strip().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--api-key-file {path}: unreadable ({exc})") from exc
    if not key or len(key[0].strip()) < 16:
        raise ConfigError(f"--api-key-file {path}: the key must be at least 16 characters")
    return key[0].strip()


def load_keys(
    api_key: str | None, keys_file: Path | None, env: dict[str, str] | None = None
) -> tuple[ApiKey, ...]:
    """The keys of ``--keys-file``, of the ``TWOKEYS_API_KEYS`` variable and the single
    key of ``--api-key-file`` (read-write, named "default") together."""
    env = dict(os.environ) if env is None else env
    keys = [ApiKey("default", "write", api_key)] if api_key else []
    if keys_file is not None:
        keys.extend(read_keys_file(keys_file))
    if env.get(ENV_KEYS, "").strip():
        keys.extend(parse_keys(env[ENV_KEYS], ENV_KEYS))
    return check_unique(keys)


def check_exposure(host: str, keyed: bool, insecure: bool) -> None:
    """Refuse (one line) to serve beyond loopback without a key, unless ``insecure``."""
    if is_loopback(host) or keyed:
        return
    if not insecure:
        raise ConfigError(
            f"--host {host}: refusing to serve beyond this machine without a key; give "
            "--keys-file or --api-key-file (or --insecure-no-key to accept the risk)"
        )
    click.echo(
        f"warning: serving on {host} without a key: anyone who can reach it can read and "
        "change the index",
        err=True,
    )


def access_logging(kind: str) -> None:
    """Send the ``twokeys.access`` lines to standard error (``kind`` off: nowhere)."""
    logger = logging.getLogger("twokeys.access")
    logger.propagate = False
    if kind == "off":
        logger.setLevel(logging.WARNING)
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_Command = TypeVar("_Command", bound=Callable[..., Any])


def listen_options(port: int, host_help: str) -> Callable[[_Command], _Command]:
    """``--host`` (loopback unless told otherwise) and ``--port`` (default ``port``)."""

    def apply(command: _Command) -> _Command:
        command = click.option(
            "--port", type=click.IntRange(0, 65535), default=port, show_default=True
        )(command)
        return click.option("--host", default=LOOPBACK, show_default=True, help=host_help)(command)

    return apply


def api_key_file_option(help_text: str) -> Callable[[_Command], _Command]:
    """``--api-key-file`` (env ``TWOKEYS_API_KEY_FILE``), read by :func:`read_api_key`."""
    return click.option(
        "--api-key-file",
        type=click.Path(path_type=Path, dir_okay=False),
        envvar="TWOKEYS_API_KEY_FILE",
        default=None,
        help=help_text,
    )


@click.command()
@index_option
@listen_options(HTTP_PORT, "Address to bind.")
@api_key_file_option(
    "File holding the API key; then every route but /healthz needs "
    "'Authorization: Bearer KEY' (env TWOKEYS_API_KEY_FILE)."
)
@click.option(
    "--keys-file",
    type=click.Path(path_type=Path, dir_okay=False),
    envvar="TWOKEYS_KEYS_FILE",
    default=None,
    help="File of keys with roles, one 'name:role:key' a line (role read or write); "
    "env TWOKEYS_KEYS_FILE, or the lines themselves in TWOKEYS_API_KEYS.",
)
@click.option(
    "--insecure-no-key",
    is_flag=True,
    help="Serve a non-loopback --host without any key (refused otherwise).",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    help="A Host name this server answers to besides loopback names and IP addresses "
    "(repeatable); other names get 421 (DNS rebinding).",
)
@model_options
@click.option(
    "--cors-origin",
    "cors_origins",
    multiple=True,
    help="Allow browser requests from this origin (repeatable). CORS is off without it.",
)
@click.option("--max-k", type=click.IntRange(min=1), default=_LIMITS.max_k, show_default=True)
@click.option(
    "--max-query-chars",
    type=click.IntRange(min=1),
    default=_LIMITS.max_query_chars,
    show_default=True,
)
@click.option(
    "--max-body-bytes",
    type=click.IntRange(min=1024),
    default=_LIMITS.max_body_bytes,
    show_default=True,
)
@click.option(
    "--max-upload-bytes",
    type=click.IntRange(min=1024),
    default=_LIMITS.max_upload_bytes,
    show_default=True,
)
@click.option(
    "--request-timeout",
    type=click.FloatRange(min=0.1),
    default=_LIMITS.request_timeout_s,
    show_default=True,
    help="Seconds until a response starts (a slow body included); then 408 or 504.",
)
@click.option(
    "--max-concurrent-per-key",
    type=click.IntRange(min=1),
    default=_LIMITS.max_concurrent_per_key,
    show_default=True,
    help="Requests of one key (of all, without keys) at once; more get 429.",
)
@click.option(
    "--access-log",
    type=click.Choice(["text", "json", "off"]),
    default="text",
    show_default=True,
    help="A line per request on standard error (method, route, status, duration, "
    "collection, key name); json: JSON lines.",
)
@click.option(
    "--log-queries", is_flag=True, help="Put the query text in the access log (off by default)."
)
@click.option(
    "--model-name", default=ServerConfig.model_name, show_default=True, help="Model id for /v1."
)
@click.option(
    "--watch",
    "watch_dir",
    type=click.Path(path_type=Path, exists=True, file_okay=False),
    default=None,
    help="Keep the index current as this folder changes (needs twokeys[watch]).",
)
@click.option(
    "--collection",
    "collection_specs",
    multiple=True,
    metavar="NAME=PATH",
    help="Serve another index too (repeatable): every route under /collections/NAME/, "
    "and the model NAME under /v1.",
)
@evidence_options
@stage_options
def serve(
    index_path: Path,
    host: str,
    port: int,
    api_key_file: Path | None,
    keys_file: Path | None,
    insecure_no_key: bool,
    allowed_hosts: tuple[str, ...],
    llm_spec: str | None,
    base_url: str | None,
    timeout: float,
    cors_origins: tuple[str, ...],
    max_k: int,
    max_query_chars: int,
    max_body_bytes: int,
    max_upload_bytes: int,
    request_timeout: float,
    max_concurrent_per_key: int,
    access_log: str,
    log_queries: bool,
    model_name: str,
    watch_dir: Path | None,
    collection_specs: tuple[str, ...],
    order_kind: str,
    confidence_kind: str,
    llm_stages: tuple[str, ...],
    verdict_calibration: str | None,
) -> None:
    """Serve the index over HTTP: /search, /ask, /documents, /v1 (OpenAI), / (a page).

    The answer options (--order, --confidence, --llm-stage) are how /ask answers what a
    request leaves unset, and how the chat route answers."""
    _require("fastapi", "serve")
    _require("uvicorn", "serve")
    _require("prometheus_client", "serve")
    import uvicorn

    from twokeys.server.app import create_app
    from twokeys.server.service import IndexService

    keys = load_keys(read_api_key(api_key_file), keys_file)
    check_exposure(host, bool(keys), insecure_no_key)
    limits = Limits(
        max_query_chars=max_query_chars,
        max_k=max_k,
        max_body_bytes=max_body_bytes,
        max_upload_bytes=max_upload_bytes,
        request_timeout_s=request_timeout,
        max_concurrent_per_key=max_concurrent_per_key,
    )
    answers = answer_options(
        order_kind, confidence_kind, llm_stages, verdict_calibration, bool(llm_spec)
    )
    config = ServerConfig(
        answers=answers,
        keys=keys,
        limits=limits,
        cors_origins=cors_origins,
        model_name=model_name,
        allowed_hosts=(*allowed_hosts, host),
        access_log=access_log,  # type: ignore[arg-type]
        log_queries=log_queries,
    )
    named = [parse_collection(spec) for spec in collection_specs]
    names = [check_collection_name(name, model_name) for name, _ in named]
    if len(set(names)) != len(names):
        raise ConfigError("--collection: each name once")
    access_logging(access_log)
    if watch_dir is not None:
        _require("watchfiles", "watch")
        from twokeys.server.service import watched_service

        service, stop_watching = watched_service(
            index_path, watch_dir, echo=lambda line: click.echo(line, err=True)
        )
    else:
        service = IndexService(index_path)
    collections = {name: IndexService(location) for name, location in named}
    llm = make_llm(llm_spec, base_url, timeout)
    check_measured(llm, answers)
    app = create_app(service, llm=llm, config=config, collections=collections)
    click.echo(f"twokeys: serving {_label(index_path)} on http://{host}:{port}", err=True)
    for name, location in named:
        click.echo(f"twokeys: and {_label(location)} as {name} (/collections/{name}/)", err=True)
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning", server_header=False)
    finally:
        if watch_dir is not None:
            stop_watching.set()
        if llm is not None:
            llm.close()
        service.close()
        for other in collections.values():
            other.close()
    sys.exit(0)


@click.command()
@index_option
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio (launched by the client) or streamable HTTP (at /mcp).",
)
@listen_options(MCP_PORT, "HTTP: address to bind.")
@api_key_file_option("HTTP: file holding the key clients send as 'Authorization: Bearer KEY'.")
@click.option(
    "--keys-file",
    type=click.Path(path_type=Path, dir_okay=False),
    envvar="TWOKEYS_KEYS_FILE",
    default=None,
    help="HTTP: keys with roles, one 'name:role:key' a line (as for serve).",
)
@click.option(
    "--allow-write",
    is_flag=True,
    help="Add the put_document tool (add or replace a document). Over HTTP only write "
    "keys may call it. A write key in --keys-file adds it too.",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    help="HTTP: a Host name answered besides loopback names and IP addresses.",
)
@model_options
@evidence_options
@stage_options
def mcp(
    index_path: Path,
    transport: str,
    host: str,
    port: int,
    api_key_file: Path | None,
    keys_file: Path | None,
    allow_write: bool,
    allowed_hosts: tuple[str, ...],
    llm_spec: str | None,
    base_url: str | None,
    timeout: float,
    order_kind: str,
    confidence_kind: str,
    llm_stages: tuple[str, ...],
    verdict_calibration: str | None,
) -> None:
    """Serve the index to MCP clients: tools search, ask, get_document (and put_document
    with --allow-write); documents as resources.

    The answer options (--order, --confidence, --llm-stage) are how the ask tool answers."""
    _require("mcp", "mcp")
    from twokeys.server.mcp_server import create_mcp
    from twokeys.server.service import IndexService

    api_key = read_api_key(api_key_file)
    single = ApiKey("default", "write" if allow_write else "read", api_key) if api_key else None
    keys = check_unique([*([single] if single else []), *load_keys(None, keys_file)])
    if transport == "http" and not is_loopback(host) and not keys:
        raise ConfigError(
            f"--host {host}: without --api-key-file the MCP HTTP transport binds loopback "
            "addresses only"
        )
    if transport == "stdio" and keys:
        raise ConfigError("--api-key-file: stdio has no key (the client launches the server)")
    writable = allow_write or any(k.can_write for k in keys)
    answers = answer_options(
        order_kind, confidence_kind, llm_stages, verdict_calibration, bool(llm_spec)
    )
    service = IndexService(index_path)
    llm = make_llm(llm_spec, base_url, timeout)
    check_measured(llm, answers)
    server = create_mcp(service, llm=llm, allow_write=writable, answers=answers)
    try:
        if transport == "stdio":
            server.run("stdio")
        else:
            import uvicorn

            from twokeys.server.mcp_server import guarded_http_app

            app = server.streamable_http_app(host=host)
            click.echo(f"twokeys: MCP on http://{host}:{port}/mcp", err=True)
            uvicorn.run(
                guarded_http_app(app, keys, allowed_hosts=(*allowed_hosts, host)),
                host=host,
                port=port,
                log_level="warning",
                server_header=False,
            )
    finally:
        if llm is not None:
            llm.close()
        service.close()


def answer_options(
    order: str,
    confidence: str,
    llm_stages: tuple[str, ...],
    verdict_calibration: str | None,
    has_model: bool,
) -> AskOptions:
    """The server's answer options from ``ask``'s flags (``serve``, ``mcp``); stages
    without a model are refused, as is the verdict without the learned confidence."""
    if llm_stages and not has_model:
        raise ConfigError("--llm-stage: the model's stages need a model (--llm)")
    return AskOptions(
        order=order,
        confidence=confidence,
        llm_stages=llm_stages,
        verdict_calibration=verdict_calibration,
    )


def check_measured(llm: LLM | None, answers: AskOptions) -> None:
    """With the verdict stage, the model's calibration is read now: a model never
    measured stops the server before it listens (:func:`twokeys.rag.verdicts.for_model`)."""
    if llm is not None and "verdict" in answers.llm_stages:
        for_model(llm.name, answers.verdict_calibration)


def _label(location: Path | str) -> str:
    """A folder's name, or a URL without its password."""
    if isinstance(location, Path):
        return location.name
    parts = urlsplit(location)
    if parts.password is not None:
        host = parts.netloc.rpartition("@")[2]
        parts = parts._replace(netloc=f"{parts.username or ''}:***@{host}")
    return urlunsplit(parts)
