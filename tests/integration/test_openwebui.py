"""twokeys serve with the real Open WebUI (``benchmarks/openwebui_e2e.py``): booted offline,
an account signed up, a 10-turn chat with a long system prompt and its title and
follow-up tasks. Open WebUI lives in its own venv (large: torch and its readers); the
test runs when that venv is there and skips, saying how to make it, when it is not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchmarks import openwebui_e2e

pytestmark = [pytest.mark.full, pytest.mark.slow]


def test_a_ten_turn_chat_through_open_webui(tmp_path: Path) -> None:
    venv = openwebui_e2e.DEFAULT_VENV
    if not (venv / "bin" / "open-webui").exists():
        pytest.skip(
            f"Open WebUI's venv is not at {venv} (set TWOKEYS_OWUI_VENV, or run "
            "`python -m benchmarks.openwebui_e2e`, which makes it: pip install open-webui)"
        )
    out = tmp_path / "openwebui_e2e.json"
    code = openwebui_e2e.main(["--venv", str(venv), "--out", str(out)])
    report = json.loads(out.read_text(encoding="utf-8"))
    failed = [c for c in report["checks"] if not c["ok"]]
    assert code == 0, (report["failure"], failed)
    assert len(report["turns"]) == len(openwebui_e2e.TURNS)
    assert all(t["status"] == 200 and t["sources"] for t in report["turns"])
    assert report["turns"][0]["title"]
    assert {row["route"]: row["status"] for row in report["tasks"]} == {
        "/api/v1/tasks/title/completions": 200,
        "/api/v1/tasks/follow_up/completions": 200,
        "/api/v1/tasks/tags/completions": 200,
    }
    assert report["open_webui"]["collection_turn"]["status"] == 200
