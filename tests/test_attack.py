"""Issue 54 item 7, the standing check: benchmarks/attack.py replays every case of issues
42 and 54 against a running server and the command lines at its small size, and every
case holds. Run it alone with ``pytest tests/test_attack.py`` (or ``-m attack``; about
two minutes on 2 cores); ``python benchmarks/attack.py --size full`` is the issues' sizes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# One case of each kind the issues list, by the id attack.py prints (a case that is no
# longer run fails the test as a broken one does).
EXPECTED = [
    "42.1-stalled-game",
    "42.2-memory",
    "42.3-disk-cache",
    "42.4-nagle",
    "42.5-body-limit",
    "42.5-play-load-dev-zero",
    "42.6-ship-out-proc",
    "42.7-evaluate-data-kept-as-a-pickle",
    "42.7-state-pkl-resume",
    "42.8-host-check",
    "42.8-security-headers",
    "42.8-concurrent-moves",
    "42.8-kill-9",
    "42.8-slow-heads",
    "42.8-stale-tmp",
    "54.1-solve-limits",
    "54.2-stalled-bodies",
    "54.3-object-array-zip-evaluate",
    "54.3-object-array-state-resume",
    "54.3-nested-bomb-evaluate",
    "54.3-flat-bomb-export",
    "54.3-flat-bomb-resume",
    "54.3-yaml-alias-preset-train",
    "54.3-yaml-alias-params-train",
    "54.4-nan-zip-evaluate",
    "54.4-nan-onnx-evaluate",
    "54.4-server-nan-onnx",
    "54.5-ship-rewrites",
    "54.6-duplicate-host",
    "54.6-bad-content-length",
    "54.6-games-nan",
    "54.6-opponent-weight-empty",
    "54.6-full-disk",
    "54.6-pass-and-play-bound",
]


@pytest.mark.attack
def test_every_case_of_issues_42_and_54_holds():
    pytest.importorskip("fastapi", reason="the web server needs fastapi (dev extras)")
    pytest.importorskip("onnx", reason="the exported-bot cases need onnx (train extras)")
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "attack.py"), "--size", "small"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = done.stdout.splitlines()
    broke = [line for line in lines if not line.startswith("held ")]
    assert not broke and done.returncode == 0, "\n".join(broke) + done.stderr[-2000:]
    ids = {line.split()[1].rstrip(":") for line in lines}
    assert not set(EXPECTED) - ids, sorted(set(EXPECTED) - ids)
