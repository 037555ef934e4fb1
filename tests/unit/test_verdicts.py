"""A model's verdict weighed by its measured reliability (twokeys.rag.verdicts): what a
reply adds to the log-odds, and calibrations that cannot be read."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from twokeys.errors import ConfigError
from twokeys.rag.judge import NOT_ASKED
from twokeys.rag.verdicts import Reliability, default_path, for_model


def test_a_reply_adds_its_smoothed_log_likelihood_ratio() -> None:
    reader = Reliability("m", good_yes=45, good_no=5, bad_yes=5, bad_no=45)
    assert reader.log_ratio(1.0) == pytest.approx(math.log((46 / 52) / (6 / 52)))
    assert reader.log_ratio(0.0) == pytest.approx(-reader.log_ratio(1.0))
    assert reader.log_ratio(NOT_ASKED) == 0.0


def test_a_model_that_says_yes_alike_to_both_kinds_adds_almost_nothing() -> None:
    yes_man = Reliability("m", good_yes=60, good_no=0, bad_yes=40, bad_no=0)
    assert abs(yes_man.log_ratio(1.0)) < 0.01
    backwards = Reliability("m", good_yes=5, good_no=45, bad_yes=45, bad_no=5)
    assert backwards.log_ratio(1.0) < -2  # measured, not assumed: its yes counts against


def test_a_calibration_round_trips_and_names_its_file_when_it_is_wrong(tmp_path: Path) -> None:
    kept = Reliability("ollama:qwen2.5:7b", 30, 10, 8, 32, unread=2, trained_on="qa").save(
        tmp_path / "c.json"
    )
    assert Reliability.load(kept) == Reliability("ollama:qwen2.5:7b", 30, 10, 8, 32, 2, "qa")
    data = json.loads(kept.read_text(encoding="utf-8"))
    assert data["log_ratio_yes"] == pytest.approx(Reliability.load(kept).log_ratio(1.0), abs=1e-6)
    for broken, said in (
        ("{", "not valid JSON"),
        ("[]", "expected a JSON object"),
        ('{"model": "m", "good_yes": 1}', "no good_no, bad_yes, bad_no"),
        ('{"model": "m", "good_yes": -1, "good_no": 0, "bad_yes": 0, "bad_no": 0}', "good_yes"),
    ):
        kept.write_text(broken, encoding="utf-8")
        with pytest.raises(ConfigError, match=rf"{kept}: .*{said}"):
            Reliability.load(kept)
    with pytest.raises(ConfigError, match="cannot read"):
        Reliability.load(tmp_path / "none.json")


def test_ask_finds_a_model_calibration_in_the_cache_or_says_how_to_make_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TWOKEYS_CACHE", str(tmp_path))
    where = default_path("ollama:qwen2.5:7b")
    assert where == tmp_path / "verdicts" / "ollama_qwen2.5_7b.json"
    with pytest.raises(ConfigError, match="twokeys calibrate-verdict .* --llm ollama:qwen2.5:7b"):
        for_model("ollama:qwen2.5:7b")
    Reliability("ollama:qwen2.5:7b", 1, 2, 3, 4).save(where)
    assert for_model("ollama:qwen2.5:7b").bad_no == 4
    with pytest.raises(ConfigError, match="calibrates ollama:qwen2.5:7b, not local"):
        for_model("local", where)


def test_replies_are_counted_by_kind_and_anything_else_is_unread() -> None:
    replies = [(True, 1.0), (True, 1.0), (True, 0.0), (False, 0.0), (False, NOT_ASKED)]
    assert Reliability.of("m", replies, "five") == Reliability("m", 2, 1, 0, 1, 1, "five")
