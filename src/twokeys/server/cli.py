"""``twokeys serve`` and ``twokeys mcp``: the index over HTTP, and as an MCP server."""

from __future__ import annotations

import ipaddress
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import click

from twokeys.cliutil import index_option, make_llm, model_options
from twokeys.errors import ConfigError, MissingExtraError
from twokeys.server.config import (
    HTTP_PORT,
    LOOPBACK,
    MCP_PORT,
    Limits,
    ServerConfig,
    check_collection_name,
    parse_collection,
)

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
    "--model-name", default=ServerConfig.model_name, show_default=True, help="Model id for /v1."
)
@click.option(
    "--collection",
    "collection_specs",
    multiple=True,
    metavar="NAME=PATH",
    help="Serve another index too (repeatable): every route under /collections/NAME/, "
    "and the model NAME under /v1.",
)
def serve(
    index_path: Path,
    host: str,
    port: int,
    api_key_file: Path | None,
    llm_spec: str | None,
    base_url: str | None,
    timeout: float,
    cors_origins: tuple[str, ...],
    max_k: int,
    max_query_chars: int,
    max_body_bytes: int,
    max_upload_bytes: int,
    model_name: str,
    collection_specs: tuple[str, ...],
) -> None:
    """Serve the index over HTTP: /search, /ask, /documents, /v1 (OpenAI), / (a page)."""
    _require("fastapi", "serve")
    _require("uvicorn", "serve")
    import uvicorn

    from twokeys.server.app import create_app
    from twokeys.server.service import IndexService

    api_key = read_api_key(api_key_file)
    if not is_loopback(host) and api_key is None:
        click.echo(
            f"warning: serving on {host} without --api-key-file: anyone who can reach it "
            "can read and change the index",
            err=True,
        )
    limits = Limits(
        max_query_chars=max_query_chars,
        max_k=max_k,
        max_body_bytes=max_body_bytes,
        max_upload_bytes=max_upload_bytes,
    )
    config = ServerConfig(
        api_key=api_key, limits=limits, cors_origins=cors_origins, model_name=model_name
    )
    named = [parse_collection(spec) for spec in collection_specs]
    names = [check_collection_name(name, model_name) for name, _ in named]
    if len(set(names)) != len(names):
        raise ConfigError("--collection: each name once")
    service = IndexService(index_path)
    collections = {name: IndexService(location) for name, location in named}
    llm = make_llm(llm_spec, base_url, timeout)
    app = create_app(service, llm=llm, config=config, collections=collections)
    click.echo(f"twokeys: serving {_label(index_path)} on http://{host}:{port}", err=True)
    for name, location in named:
        click.echo(f"twokeys: and {_label(location)} as {name} (/collections/{name}/)", err=True)
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning", server_header=False)
    finally:
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
@model_options
def mcp(
    index_path: Path,
    transport: str,
    host: str,
    port: int,
    api_key_file: Path | None,
    llm_spec: str | None,
    base_url: str | None,
    timeout: float,
) -> None:
    """Serve the index to MCP clients: tools search, ask, get_document; documents as
    resources."""
    _require("mcp", "mcp")
    from twokeys.server.mcp_server import create_mcp
    from twokeys.server.service import IndexService

    api_key = read_api_key(api_key_file)
    if transport == "http" and not is_loopback(host) and api_key is None:
        raise ConfigError(
            f"--host {host}: without --api-key-file the MCP HTTP transport binds loopback "
            "addresses only"
        )
    if transport == "stdio" and api_key is not None:
        raise ConfigError("--api-key-file: stdio has no key (the client launches the server)")
    service = IndexService(index_path)
    llm = make_llm(llm_spec, base_url, timeout)
    server = create_mcp(service, llm=llm)
    try:
        if transport == "stdio":
            server.run("stdio")
        else:
            import uvicorn

            from twokeys.server.mcp_server import require_bearer

            app = server.streamable_http_app(host=host)
            click.echo(f"twokeys: MCP on http://{host}:{port}/mcp", err=True)
            uvicorn.run(
                require_bearer(app, api_key) if api_key else app,
                host=host,
                port=port,
                log_level="warning",
                server_header=False,
            )
    finally:
        if llm is not None:
            llm.close()
        service.close()


def _label(location: Path | str) -> str:
    """A folder's name, or a URL without its password."""
    if isinstance(location, Path):
        return location.name
    parts = urlsplit(location)
    if parts.password is not None:
        host = parts.netloc.rpartition("@")[2]
        parts = parts._replace(netloc=f"{parts.username or ''}:***@{host}")
    return urlunsplit(parts)
