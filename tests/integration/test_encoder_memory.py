"""The default encoder's memory stays bounded however varied its inputs (own process)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow

_SCRIPT = """
import json, random
from twokeys.dense.onnx_minilm import OnnxMiniLM

def rss_mb():
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) for l in fh if l.startswith("VmRSS")) / 1024

rng = random.Random(0)
words = "refund broken item delivered defective error code ZX-4821 configuration".split()
def text():
    return " ".join(rng.choice(words) for _ in range(rng.randint(1, 400)))

encoder = OnnxMiniLM(threads=1)
encoder.encode_query("warm up")
start = rss_mb()
after = []
for round_ in range(3):
    for _ in range(6):  # batches of every size and width, like an indexer's files
        encoder.encode([text() for _ in range(rng.randint(1, 40))], "document")
    after.append(rss_mb())
print(json.dumps({"start": start, "after": after}))
"""


def test_rss_settles_after_the_first_varied_round() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    rss = json.loads(proc.stdout.strip().splitlines()[-1])
    first, *later = rss["after"]
    # the token budget bounds every run, so the memory arena stops growing
    assert first - rss["start"] < 150, rss
    assert max(later) - first < 25, rss
