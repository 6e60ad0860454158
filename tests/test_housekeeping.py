"""What a run of the documented commands or of the tests leaves behind, and whether the
architecture page's map of the code is complete."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text()


def test_a_test_session_removes_its_solver_cache(tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    env.pop("FIVETHOUSAND_CACHE", None)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_rules.py",
        ],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    assert not list(tmp_path.glob("fivethousand-test-cache-*"))


def test_the_export_examples_leave_nothing_untracked():
    # The docs export to bots/; git must ignore what lands there.
    out = subprocess.run(
        ["git", "check-ignore", "-q", "bots/ppo-2p.onnx"], cwd=ROOT, capture_output=True
    )
    assert out.returncode == 0


def test_the_architecture_page_names_every_module():
    layout = re.search(r"## Where the files are\n\n```\n(.*?)```", ARCHITECTURE, re.S).group(1)
    modules = [
        p.relative_to(ROOT).as_posix()
        for folder in ("envs", "agents", "benchmarks", "fivethousand_rl", "webplay")
        for p in sorted((ROOT / folder).glob("*.py"))
        if p.name != "__init__.py"
    ] + sorted(p.name for p in ROOT.glob("*.py"))
    missing = [m for m in modules if m not in layout]
    assert not missing, f"docs/architecture.md's map omits {missing}"
