"""The package as a user installs it (issue 30): the wheel built from the checkout's
files, installed (not editable) into a fresh virtual environment outside the checkout,
used from an empty folder: the shipped agents by name, the web page's list, the
installed command.

The fresh environment sees the test environment's dependencies through a path file
(they are not reinstalled), but not the checkout: its site-packages come first, and
the project's editable install is not on its path (a .pth file names a folder; path
files inside that folder are not read)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

from fivethousand_rl.agents.shipped import SHIPPED

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def run(*args, cwd: Path, env: dict | None = None, timeout: int = 300) -> str:
    """Run a command; its stdout, or a failure showing its output."""
    result = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, f"{args}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout


def project_files() -> list[str]:
    """What a clean clone holds: the files git tracks, and new ones it does not ignore."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout: the wheel is built from the files git lists")
    return [name for name in listed.stdout.split("\0") if name and (ROOT / name).is_file()]


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A copy of the checkout's files, as a clean clone has them (built elsewhere, so
    that the build leaves nothing in the checkout)."""
    folder = tmp_path_factory.mktemp("package") / "source"
    for name in project_files():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, folder / name)
    return folder


PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]


@pytest.fixture(scope="module")
def wheel(source: Path) -> Path:
    """The wheel `pip wheel` builds from the source."""
    dist = source.parent / "dist"
    run(*PIP, "wheel", "--no-deps", "--no-build-isolation", "-w", dist, source, cwd=source.parent)
    (built,) = dist.glob("fivethousand_rl-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(source: Path, tmp_path_factory) -> Path:
    """A fresh virtual environment where `python -m pip install .` (not editable) put
    the package: the README's command, run by this environment's pip for the new one."""
    folder = tmp_path_factory.mktemp("venv") / "env"
    run(sys.executable, "-m", "venv", "--without-pip", folder, cwd=folder.parent)
    python = folder / "bin" / "python"
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(run(python, "-c", where, cwd=folder).strip())
    (site / "test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = ["--python", python, "install", "--no-deps", "--no-build-isolation", "."]
    run(*PIP, *install, cwd=source)
    return folder


@pytest.fixture
def user_folder(tmp_path) -> Path:
    """An empty working folder, with nothing of the checkout around it."""
    folder = tmp_path / "somewhere"
    folder.mkdir()
    return folder


def clean_env() -> dict:
    """The environment without anything pointing at the checkout."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def test_the_wheel_carries_the_shipped_agents_and_presets_not_the_training_runs(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    for name, model in SHIPPED.items():
        assert f"agents/checkpoints/{name}/{model}" in names
        assert f"agents/checkpoints/{name}/MODEL_CARD.md" in names
    assert {"agents/hyperparams/planner_2p.yaml", "agents/hyperparams/quick.yaml"} <= set(names)
    assert "webplay/static/index.html" in names
    assert {"envs/py.typed", "agents/py.typed", "webplay/py.typed"} <= set(names)
    runs = [n for n in names if re.match(r"agents/checkpoints/[^/]*_", n)]
    assert runs == []  # training runs' records (planner_2p_free_seed0/...) stay out
    assert not any(n.startswith(("tests/", "docs/", "benchmarks/")) for n in names)
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert f"Version: {PYPROJECT['project']['version']}" in text
    assert "Classifier: Typing :: Typed" in text


def test_the_installed_package_plays_the_shipped_agents_by_name_from_any_folder(venv, user_folder):
    """planner-2p against smart, by name, from an empty folder; the modules come from
    the fresh environment, not the checkout."""
    code = """
import json, sys, numpy as np
import fivethousand_rl.agents, envs, gymnasium as gym
from fivethousand_rl.agents import make_policy
from fivethousand_rl.envs.driver import play
from fivethousand_rl.envs.game import Game
bots = [make_policy("planner-2p"), make_policy("smart")]
wins = [0, 0]
for seed in range(6):
    game = Game(2, seed=seed)
    play(game, bots, np.random.default_rng(seed))
    wins[game.state.winner] += 1
env = gym.make("FiveThousand-v0", opponents="planner-2p")
env.reset(seed=0)
names = [make_policy(name).name for name in sys.argv[1:]]
print(json.dumps({"wins": wins, "names": names, "files": [agents.__file__, envs.__file__]}))
"""
    python = venv / "bin" / "python"
    out = json.loads(run(python, "-c", code, *SHIPPED, cwd=user_folder, env=clean_env()))
    assert sum(out["wins"]) == 6
    assert out["names"] == list(SHIPPED)  # each shipped agent loads by name
    for file in out["files"]:
        assert Path(file).is_relative_to(venv) and not Path(file).is_relative_to(ROOT)


def test_the_installed_web_app_lists_the_shipped_agents(venv, user_folder):
    code = """
import json
from fastapi.testclient import TestClient
from fivethousand_rl.webplay.app import create_app
client = TestClient(create_app("saves"), base_url="http://localhost")
print(json.dumps(client.get("/api/bots").json()["bots"]))
"""
    bots = json.loads(run(venv / "bin" / "python", "-c", code, cwd=user_folder, env=clean_env()))
    keys = {bot["key"]: bot["kind"] for bot in bots}
    assert {name: keys.get(name) for name in SHIPPED} == dict.fromkeys(SHIPPED, "shipped")


def test_the_installed_command_runs_a_tournament_by_name(venv, user_folder):
    command = venv / "bin" / "fivethousand"
    assert PYPROJECT["project"]["version"] in run(command, "--version", cwd=user_folder)
    tournament = ["evaluate", "planner-2p", "smart", "--games", "8", "--workers", "1"]
    out = run(command, *tournament, cwd=user_folder, env=clean_env())
    assert "planner-2p" in out and "smart" in out


def test_pyproject_lists_every_package_and_every_shipped_agent():
    """The package list is explicit (two data folders are mapped into `agents`), so a
    new package folder must be added to it; the wheel's agent folders are those of
    ``fivethousand_rl.agents.shipped.SHIPPED``, each tracked in git."""
    setuptools = PYPROJECT["tool"]["setuptools"]
    folders = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for top in ("envs", "agents", "webplay", "fivethousand_rl")
        for p in (ROOT / top).rglob("__init__.py")
    }
    mapped = setuptools["package-dir"]
    assert set(setuptools["packages"]) == folders | set(mapped)
    assert mapped == {
        "fivethousand_rl.agents.checkpoints": "checkpoints",
        "fivethousand_rl.agents.hyperparams": "hyperparams",
    }
    assert setuptools["package-data"]["fivethousand_rl.agents.checkpoints"] == [
        f"{name}/*" for name in SHIPPED
    ]
    tracked = set(project_files())
    for name, model in SHIPPED.items():
        assert f"checkpoints/{name}/{model}" in tracked
        assert f"checkpoints/{name}/MODEL_CARD.md" in tracked
