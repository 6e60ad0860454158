"""The environments' public API is typed (issue 53, item 8): mypy, with tests/mypy.ini,
finds nothing in the Gymnasium, vector and PettingZoo environments. Every function
there must be annotated (disallow_untyped_defs); the project's own modules, numpy and
Gymnasium are followed with their errors silenced (follow_imports = silent), the heavy
packages (JAX, torch, PettingZoo, ...) read as Any, so that a cold run takes a few
seconds of CPU. mypy is in the dev extra, which make test installs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TYPED = ["gym_env.py", "vector_env.py", "pettingzoo_env.py"]


def test_the_environments_type_check(tmp_path):
    files = [f"fivethousand_rl/envs/{name}" for name in TYPED]
    config = ["--config-file", "tests/mypy.ini", "--cache-dir", str(tmp_path)]
    result = subprocess.run(
        [sys.executable, "-m", "mypy", *config, *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"no issues found in {len(files)} source files" in result.stdout
