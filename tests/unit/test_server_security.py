"""The security and operations pieces of the server, alone: keys files, Host and origin
checks, write routes, the page's Content-Security-Policy, access-log lines, and the
start-up refusal to serve beyond loopback without a key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from twokeys.errors import ConfigError
from twokeys.server.accesslog import RequestRecord, format_record, query_of
from twokeys.server.cli import check_exposure, load_keys
from twokeys.server.keys import KeyRing, parse_keys, read_keys_file
from twokeys.server.security import cross_site, host_allowed, is_write_route, page_policy

A = "a" * 20
B = "b" * 20


def test_keys_file_lines_name_role_key(tmp_path: Path) -> None:
    file = tmp_path / "keys"
    file.write_text(f"# comment\n\nui:read:{A}\nindexer : rw : {B}\n")
    keys = read_keys_file(file)
    assert [(k.name, k.role) for k in keys] == [("ui", "read"), ("indexer", "write")]
    assert A not in repr(keys) and B not in repr(keys)  # never shown
    ring = KeyRing(keys)
    assert ring.match(A) == keys[0] and ring.match(B) == keys[1]
    assert ring.match(A[:-1]) is None and ring.match("") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ui:read", "line 1: expected name:role:key"),
        (f"ui:admin:{A}", "line 1: role 'admin': use read or write"),
        ("ui:read:short", "line 1: the key must be at least 16 characters"),
        (f"# x\nu i:read:{A}", "line 2: name 'u i'"),
        (f"ui:read:{A}\nui:write:{B}", "key 'ui': named twice"),
        (f"ui:read:{A}\nix:write:{A}", "its key is also another key's"),
    ],
)
def test_bad_keys_lines_say_which_line_and_never_the_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as exc:
        parse_keys(text, "keys.txt")
    assert A not in str(exc.value) and "short" not in str(exc.value).replace("line 1:", "")


def test_keys_come_from_the_file_the_environment_and_the_single_key_file(tmp_path: Path) -> None:
    file = tmp_path / "keys"
    file.write_text(f"ui:read:{A}\n")
    keys = load_keys("c" * 20, file, {"TWOKEYS_API_KEYS": f"bot:write:{B}"})
    assert [(k.name, k.role) for k in keys] == [
        ("default", "write"),
        ("ui", "read"),
        ("bot", "write"),
    ]
    assert load_keys(None, None, {}) == ()
    with pytest.raises(ConfigError, match="TWOKEYS_API_KEYS line 1"):
        load_keys(None, None, {"TWOKEYS_API_KEYS": "nope"})


def test_beyond_loopback_a_key_is_needed_unless_overridden(
    capsys: pytest.CaptureFixture[str],
) -> None:
    check_exposure("127.0.0.1", keyed=False, insecure=False)
    check_exposure("0.0.0.0", keyed=True, insecure=False)
    with pytest.raises(ConfigError, match="--host 0.0.0.0: refusing .* --insecure-no-key"):
        check_exposure("0.0.0.0", keyed=False, insecure=False)
    check_exposure("0.0.0.0", keyed=False, insecure=True)
    assert "warning: serving on 0.0.0.0 without a key" in capsys.readouterr().err


def test_host_names_served() -> None:
    for host in ("localhost:8000", "127.0.0.1:8000", "[::1]:8000", "10.0.0.5", "LOCALHOST."):
        assert host_allowed(host, ()), host
    for host in ("evil.example:8000", "localhost.evil.example", "", "127.0.0.1.nip.io:80"):
        assert not host_allowed(host, ()), host
    assert host_allowed("kb.internal:443", ("kb.internal",))
    assert host_allowed("anything.example", ("*",))


def test_cross_site_requests() -> None:
    host = "127.0.0.1:8000"
    assert cross_site({}, host, ()) is None  # a program
    assert cross_site({"origin": "http://127.0.0.1:8000"}, host, ()) is None  # the page
    assert cross_site({"sec-fetch-site": "same-origin"}, host, ()) is None
    assert cross_site({"sec-fetch-site": "none"}, host, ()) is None  # typed in the address bar
    assert cross_site({"origin": "http://evil.example"}, host, ()) is not None
    assert cross_site({"origin": "http://127.0.0.1:3000"}, host, ()) is not None
    assert cross_site({"origin": "null"}, host, ()) is not None
    assert cross_site({"sec-fetch-site": "cross-site"}, host, ()) is not None
    assert cross_site({"sec-fetch-site": "same-site"}, host, ()) is not None
    assert cross_site({"origin": "http://ui.example"}, host, ("http://ui.example",)) is None


def test_write_routes() -> None:
    assert is_write_route("POST", "/documents")
    assert is_write_route("POST", "/collections/kb/documents")
    assert is_write_route("DELETE", "/documents/a.md")
    assert is_write_route("POST", "/reindex")
    for method, path in (("POST", "/search"), ("POST", "/ask"), ("GET", "/documents/a.md")):
        assert not is_write_route(method, path), path
    assert not is_write_route("POST", "/v1/chat/completions")


def test_the_page_policy_allows_its_own_scripts_only() -> None:
    policy = page_policy("<p>x</p><script>run()</script>")
    scripts = policy.split("; ")[1]
    assert scripts.startswith("script-src 'self' 'sha256-") and "'unsafe-inline'" not in scripts
    assert "frame-ancestors 'none'" in policy and "connect-src 'self'" in policy
    assert page_policy("<script>a()</script>") != page_policy("<script>b()</script>")


def test_access_log_lines_carry_no_query_unless_asked() -> None:
    record = RequestRecord("r1", "POST", "/search", 200, 0.012345, "kb", "ui")
    assert format_record(record, as_json=False) == (
        "request_id=r1 method=POST route=/search status=200 seconds=0.0123 collection=kb key=ui"
    )
    data = json.loads(format_record(record, as_json=True))
    assert data == {
        "request_id": "r1",
        "method": "POST",
        "route": "/search",
        "status": 200,
        "seconds": 0.0123,
        "collection": "kb",
        "key": "ui",
    }
    asked = RequestRecord("r1", "POST", "/search", 200, 0.1, "kb", "ui", query="a b")
    assert format_record(asked, as_json=False).endswith(' query="a b"')
    assert query_of(b'{"query": "q1"}') == "q1"
    assert query_of(b'{"question": "q2"}') == "q2"
    assert query_of(b'{"messages": [{"role": "user", "content": "q3"}]}') == "q3"
    assert query_of(b"not json") is None


def test_serve_refuses_an_open_address_without_a_key_in_one_line(tmp_path: Path) -> None:
    pytest.importorskip("fastapi", reason="needs the serve extra")
    from click.testing import CliRunner

    from twokeys.cli import main

    argv = ["serve", "--index", str(tmp_path / "kb"), "--host", "0.0.0.0"]
    result = CliRunner().invoke(main, argv, env={"TWOKEYS_API_KEYS": ""})
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "refusing to serve beyond this machine without a key" in lines[0]
    bad = tmp_path / "keys"
    bad.write_text("ui:admin:" + A)
    result = CliRunner().invoke(main, [*argv, "--keys-file", str(bad)])
    assert result.exit_code == 1 and f"--keys-file {bad} line 1: role 'admin'" in result.output
    assert A not in result.output
