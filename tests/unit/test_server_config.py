"""The server's small pure pieces: API key files, loopback addresses, limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from twokeys.errors import ConfigError
from twokeys.server.cli import is_loopback, read_api_key
from twokeys.server.config import Limits, RequestError


def test_api_key_file(tmp_path: Path) -> None:
    assert read_api_key(None) is None
    good = tmp_path / "key"
    good.write_text("  0123456789abcdef0123  \nignored second line\n")
    assert read_api_key(good) == "0123456789abcdef0123"
    short = tmp_path / "short"
    short.write_text("abc")
    with pytest.raises(ConfigError, match="at least 16 characters"):
        read_api_key(short)
    with pytest.raises(ConfigError, match="unreadable"):
        read_api_key(tmp_path / "missing")


def test_loopback_addresses() -> None:
    for host in ("127.0.0.1", "127.0.0.2", "::1", "localhost"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "192.168.1.10", "example.com"):
        assert not is_loopback(host), host


def test_limits_say_which_limit() -> None:
    limits = Limits(max_query_chars=5, max_k=3)
    limits.check_text("query", "abcde")
    limits.check_count("k", 3, limits.max_k)
    with pytest.raises(RequestError, match="query: 6 characters; the limit is 5") as exc:
        limits.check_text("query", "abcdef")
    assert exc.value.status == 400
    with pytest.raises(RequestError, match="k: 4; the limit is 3"):
        limits.check_count("k", 4, limits.max_k)
