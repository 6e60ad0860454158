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

from benchmarks.light_install import PIP, build_wheel, copy_source, project_files
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


def clone_files() -> list[str]:
    """What a clean clone holds (or a skip where this is no git checkout)."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the wheel is built from the files git lists")
    return project_files(ROOT)


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A copy of the checkout's files, as a clean clone has them (built elsewhere, so
    that the build leaves nothing in the checkout)."""
    clone_files()
    return copy_source(tmp_path_factory.mktemp("package") / "source", ROOT)


@pytest.fixture(scope="module")
def wheel(source: Path) -> Path:
    """The wheel `pip wheel` builds from the source."""
    return build_wheel(source, source.parent / "dist")


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
        folder = f"fivethousand_rl/agents/checkpoints/{name}"
        if name.startswith("policy-"):  # plays from its ONNX export (pyproject: excluded)
            assert f"{folder}/{model}" not in names and f"{folder}/model.onnx" in names
        else:
            assert f"{folder}/{model}" in names
        assert f"{folder}/MODEL_CARD.md" in names
    presets = {"planner_2p.yaml", "quick.yaml"}
    assert {f"fivethousand_rl/agents/hyperparams/{p}" for p in presets} <= set(names)
    assert "fivethousand_rl/webplay/static/index.html" in names
    typed = {f"fivethousand_rl/{package}py.typed" for package in ("", "envs/", "agents/")}
    assert typed <= set(names)
    runs = [n for n in names if re.match(r"fivethousand_rl/agents/checkpoints/[^/]*_", n)]
    assert runs == []  # training runs' records (planner_2p_free_seed0/...) stay out
    assert not any(n.startswith(("tests/", "docs/", "benchmarks/")) for n in names)
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert f"Version: {PYPROJECT['project']['version']}" in text
    assert "Classifier: Typing :: Typed" in text


def test_the_wheel_installs_one_namespace_and_its_licence(wheel):
    """Issue 53 items 1-2: every module under fivethousand_rl (no top-level envs, agents
    or webplay to clash with a user's own), the MIT licence in the metadata and the
    LICENSE file beside it."""
    archive = zipfile.ZipFile(wheel)
    tops = {name.split("/")[0] for name in archive.namelist()}
    assert tops == {"fivethousand_rl", next(t for t in tops if t.endswith(".dist-info"))}
    metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
    text = archive.read(metadata).decode()
    assert "License-Expression: MIT" in text and "License-File: LICENSE" in text
    licence = next(n for n in archive.namelist() if n.endswith("licenses/LICENSE"))
    assert archive.read(licence).decode() == (ROOT / "LICENSE").read_text()
    assert archive.read(licence).decode().startswith("MIT License")


def test_the_installed_package_carries_the_javascript_runtime_and_the_page(venv, user_folder):
    """Issue 55 item 3: a pip user has ports/js (the npm package) and ports/web (the page)
    without a clone, under fivethousand_rl/ports, and the module runs under Node there."""
    python = venv / "bin" / "python"
    where = "from importlib.resources import files; print(files('fivethousand_rl') / 'ports')"
    ports = Path(run(python, "-c", where, cwd=user_folder, env=clean_env()).strip())
    assert ports.is_relative_to(venv)
    shipped = [
        f
        for f in clone_files()
        if f.startswith(("ports/js/", "ports/web/")) and not Path(f).name.startswith(".")
    ]
    assert {"ports/js/fivethousand.mjs", "ports/js/package.json", "ports/web/index.html"} <= set(
        shipped
    )
    for name in shipped:
        assert (ports.parent / name).read_bytes() == (ROOT / name).read_bytes(), name
    node = shutil.which("node")
    if node is not None:  # the installed copy is the runnable module: its usage line
        done = subprocess.run([node, ports / "js" / "fivethousand.mjs"], capture_output=True)
        assert done.returncode == 2 and done.stderr.startswith(b"usage: node fivethousand.mjs")


def test_the_installed_package_plays_the_shipped_agents_by_name_from_any_folder(venv, user_folder):
    """planner-2p against smart, by name, from an empty folder; the modules come from
    the fresh environment, not the checkout."""
    code = """
import json, sys, numpy as np
import fivethousand_rl.agents, fivethousand_rl.envs, gymnasium as gym
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
files = [fivethousand_rl.agents.__file__, fivethousand_rl.envs.__file__]
print(json.dumps({"wins": wins, "names": names, "files": files}))
"""
    python = venv / "bin" / "python"
    out = json.loads(run(python, "-c", code, *SHIPPED, cwd=user_folder, env=clean_env()))
    assert sum(out["wins"]) == 6
    assert out["names"] == list(SHIPPED)  # each shipped agent loads by name
    for file in out["files"]:
        assert Path(file).is_relative_to(venv) and not Path(file).is_relative_to(ROOT)


# A research project of its own, with the package names most have (issue 53 item 1):
# its `agents` and `envs` must stay its own, and the toolkit must work beside them.
USER_PROJECT = {
    "agents/__init__.py": "OWN = 'the user agents'\n",
    "agents/ppo.py": "def make_policy():\n    return 'not the toolkit'\n",
    "envs/__init__.py": "OWN = 'the user envs'\n",
    "run.py": """
import json, os, subprocess, sys
import numpy as np
import gymnasium as gym
import agents, envs  # the project's own
import fivethousand_rl.envs  # registers FiveThousand-v0
from fivethousand_rl.agents import make_policy
from fivethousand_rl.envs.driver import play
from fivethousand_rl.envs.game import Game

env = gym.make("FiveThousand-v0", opponents="smart")
obs, info = env.reset(seed=0)
steps, done = 0, False
while not done:
    legal = np.flatnonzero(env.unwrapped.action_masks())
    obs, reward, terminated, truncated, info = env.step(int(legal[0]))
    done, steps = terminated or truncated, steps + 1
game = Game(2, seed=1)
play(game, [make_policy("smart"), make_policy("turn-ev")], np.random.default_rng(1))
command = os.path.join(os.path.dirname(sys.executable), "fivethousand")
evaluate = subprocess.run(
    [command, "evaluate", "smart", "random", "--games", "4", "--workers", "1"],
    capture_output=True, text=True)
play_cli = subprocess.run(
    [command, "play", "--opponents", "smart", "--seed", "3"],
    input="b\\nr\\n" * 400, capture_output=True, text=True)
print(json.dumps({
    "own": [agents.OWN, envs.OWN, agents.__file__, envs.__file__],
    "steps": steps, "winner": game.state.winner,
    "evaluate": [evaluate.returncode, evaluate.stdout[-500:] + evaluate.stderr[-500:]],
    "play": [play_cli.returncode, play_cli.stdout[-300:] + play_cli.stderr[-300:]],
}))
""",
}


def test_a_user_project_with_its_own_agents_and_envs_packages(venv, tmp_path):
    """From the installed wheel, in a project whose own `agents/` and `envs/` come first
    on its path: the environment by id with a bot by name, make_policy, a game,
    `fivethousand evaluate` (a tournament) and `fivethousand play` all work, and the
    project's packages stay its own."""
    project = tmp_path / "research"
    for name, text in USER_PROJECT.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    python = venv / "bin" / "python"
    out = json.loads(run(python, "run.py", cwd=project, env=clean_env()).splitlines()[-1])
    assert out["own"][:2] == ["the user agents", "the user envs"]
    assert all(Path(f).is_relative_to(project) for f in out["own"][2:])
    assert out["steps"] > 0 and out["winner"] in (0, 1)
    assert out["evaluate"][0] == 0 and "smart" in out["evaluate"][1], out["evaluate"]
    assert out["play"][0] == 0, out["play"]


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
    folders = {"fivethousand_rl"} | {
        ".".join(("fivethousand_rl", *p.parent.relative_to(ROOT).parts))
        for top in ("envs", "agents", "webplay")
        for p in (ROOT / top).rglob("__init__.py")
    }
    for top in ("envs", "agents", "webplay"):  # the package's folders are the clone's
        assert (ROOT / "fivethousand_rl" / top).readlink() == Path("..", top)
    mapped = setuptools["package-dir"]
    assert set(setuptools["packages"]) == folders | set(mapped)
    assert mapped == {
        "fivethousand_rl.agents.checkpoints": "checkpoints",
        "fivethousand_rl.agents.hyperparams": "hyperparams",
    }
    assert setuptools["package-data"]["fivethousand_rl.agents.checkpoints"] == [
        f"{name}/*" for name in SHIPPED
    ]
    tracked = set(clone_files())
    for name, model in SHIPPED.items():
        assert f"checkpoints/{name}/{model}" in tracked
        assert f"checkpoints/{name}/MODEL_CARD.md" in tracked
