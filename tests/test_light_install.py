"""The light install (issue 44 item 4): ``pip install fivethousand-rl`` without the
``train`` extra plays, serves and evaluates every shipped agent, a PPO agent through its
ONNX export; what needs torch says so in one line with the command that installs it.

Two kinds of checks: fast ones in this environment, with the training extra's modules
refused by an import hook (or ``training_installed`` patched to say they are missing);
and the real thing: the wheel installed with its dependencies into an empty virtual
environment (``benchmarks/light_install.py``, pip's cache reused), its commands run
from an empty folder."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from filelock import FileLock

import fivethousand_rl.agents
import fivethousand_rl.agents.shipped
from benchmarks.light_install import measure
from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.exported import ExportedBot, metadata_path
from fivethousand_rl.agents.neural import CheckpointError
from fivethousand_rl.agents.shipped import (
    EXPORTED,
    EXTRA_MODULES,
    SHIPPED,
    TRAIN_EXTRA,
    shipped_folder,
)
from fivethousand_rl.envs.driver import play
from fivethousand_rl.envs.game import Game

ROOT = Path(__file__).resolve().parent.parent
TARGET_MB = 250  # the bound on the light install's site-packages
PPO = [name for name, model in SHIPPED.items() if model.endswith(".zip")]
PLAYERS = {"planner-multi": 3, "planner-3p": 3, "planner-4p": 4, "planner-6p": 6, "ppo-4p": 4}
PLAYERS |= {"policy-3p": 3, "policy-4p": 4, "policy-6p": 6}
BANK_ELSE_ROLL = "b\nr\n" * 1500  # bank when allowed, else roll on with the best hold

# Run first in a fresh interpreter: the training extra's modules cannot be imported.
REFUSE = f"""
import importlib.abc, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {EXTRA_MODULES!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (refused)", name=name)
sys.meta_path.insert(0, Refuse())
"""


def one_line_naming_the_extra(text: str) -> bool:
    return text.strip().count("\n") == 0 and TRAIN_EXTRA in text


# ------------------------------------------------------------- this environment, fast


def test_playing_serving_and_evaluating_import_nothing_of_the_training_extra():
    """The programs a player runs, and every shipped agent by name, with torch,
    Stable-Baselines3, sb3-contrib, tensorboard, matplotlib and onnx refused; a command
    that trains says so in one line."""
    code = """
import contextlib, importlib, io, json, sys
for module in ("fivethousand_rl.cli", "fivethousand_rl.play", "fivethousand_rl.evaluate",
               "fivethousand_rl.webplay.app", "fivethousand_rl.webplay.__main__",
               "fivethousand_rl.webplay.bots", "fivethousand_rl.agents.exported"):
    importlib.import_module(module)
from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.shipped import SHIPPED
from fivethousand_rl.cli import main
made = {name: [type(p).__name__, p.name] for name in SHIPPED for p in [make_policy(name)]}
err = io.StringIO()
with contextlib.redirect_stderr(err):
    code = main(["train"])
loaded = sorted(m for m in sys.modules if m.partition(".")[0] in sys.argv[1:])
print(json.dumps({"made": made, "train": [code, err.getvalue()], "loaded": loaded}))
"""
    result = subprocess.run(
        [sys.executable, "-c", REFUSE + code, *EXTRA_MODULES],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout)
    assert out["loaded"] == []
    for name in SHIPPED:
        assert out["made"][name][1] == name
        assert (out["made"][name][0] == "ExportedBot") == (name in PPO)
    code, err = out["train"]
    assert code == 2 and one_line_naming_the_extra(err), err
    assert err.startswith("error: fivethousand train needs torch")


def test_export_asks_for_what_that_export_needs_only(tmp_path):
    """Issue 53 item 8: without the extra, exporting a value net (or bundling a shipped
    PPO agent's export) asks for onnx alone; a checkpoint asks for the extra, which it
    needs. One line each, nothing written."""
    code = """
import contextlib, io, json, sys
from fivethousand_rl.cli import main
said = []
for args in sys.argv[1:]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        said.append([main(json.loads(args)), err.getvalue()])
print(json.dumps(said))
"""
    out = tmp_path / "out"
    commands = [
        ["export", "planner-2p", "-o", str(out / "p.onnx")],
        ["export", "ppo-2p", "--out", str(out / "bundle")],
        ["export", str(ROOT / "checkpoints" / "ppo-2p" / "model.zip"), "-o", str(out / "x.onnx")],
    ]
    result = subprocess.run(
        [sys.executable, "-c", REFUSE + code, *map(json.dumps, commands)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    onnx_only, bundle, checkpoint = json.loads(result.stdout)
    for code, err in (onnx_only, bundle):
        assert [code, err] == [2, "error: fivethousand export needs onnx: pip install onnx\n"]
    assert checkpoint[0] == 2 and one_line_naming_the_extra(checkpoint[1]), checkpoint
    assert checkpoint[1].startswith("error: fivethousand export needs torch, from the training")
    assert not out.exists()


@pytest.fixture
def no_training(monkeypatch):
    """As if the training extra were not installed."""
    monkeypatch.setattr(fivethousand_rl.agents.shipped, "training_installed", lambda: False)
    monkeypatch.setattr(fivethousand_rl.agents, "training_installed", lambda: False)


def test_with_the_training_extra_a_ppo_agent_plays_its_checkpoint():
    """Today's behaviour where torch is installed: the SB3 model, not the export."""
    for name in PPO:
        assert fivethousand_rl.agents.shipped.shipped_model(name).name == SHIPPED[name]
        assert type(make_policy(name)).__name__ == "SB3Policy"


@pytest.mark.parametrize("name", PPO)
def test_a_shipped_ppo_agent_carries_the_export_of_its_own_checkpoint(name):
    """The ONNX graph beside each PPO agent's model, with its metadata, exported from that
    very checkpoint (re-export after shipping a new one: python export.py
    checkpoints/NAME/model.zip -o checkpoints/NAME/model.onnx)."""
    folder = shipped_folder(name)
    meta = json.loads(metadata_path(folder / EXPORTED).read_text())
    checkpoint = hashlib.sha256((folder / SHIPPED[name]).read_bytes()).hexdigest()
    assert meta["provenance"]["checkpoint_sha256"] == checkpoint
    assert not Path(meta["provenance"]["checkpoint"]).is_absolute()  # no local path


@pytest.mark.parametrize("name", PPO)
def test_without_the_extra_a_ppo_agent_plays_its_export_move_for_move(name, monkeypatch):
    """The export decides as the checkpoint does (every decision of 20 games against
    smart); named as the agent."""
    checkpoint = make_policy(name)
    monkeypatch.setattr(fivethousand_rl.agents.shipped, "training_installed", lambda: False)
    exported = make_policy(name)
    assert isinstance(exported, ExportedBot) and exported.name == name
    assert fivethousand_rl.agents.shipped.shipped_model(name).name == EXPORTED

    class Both:
        decisions = differences = 0

        def act(self, game, rng):
            action = checkpoint.act(game, rng)
            Both.decisions += 1
            Both.differences += exported.act(game, rng) != action
            return action

    players = PLAYERS.get(name, 2)
    for seed in range(20):
        bots = [Both(), *[make_policy("smart")] * (players - 1)]
        play(Game(players, seed=seed), bots, np.random.default_rng(seed))
    assert Both.decisions > 300 and Both.differences == 0


def test_without_the_training_extra_a_checkpoint_is_refused_in_one_line(no_training, tmp_path):
    path = tmp_path / "model.zip"
    path.write_bytes(b"PK")
    with pytest.raises(CheckpointError) as err:
        make_policy(str(path))
    assert one_line_naming_the_extra(str(err.value)), err.value


# ------------------------------------------------ the light install, in an empty folder


@pytest.fixture(scope="session")
def light(tmp_path_factory) -> dict:
    """The light install's figures and python: made once per test run (the workers of
    pytest-xdist share it through a lock in their common folder)."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # this run's folder, above each worker's own
    figures = shared / "light_install.json"
    with FileLock(str(shared / "light_install.lock")):
        if not figures.is_file():
            work = shared / "light_install"
            work.mkdir()
            figures.write_text(json.dumps(measure(work)))
    return json.loads(figures.read_text())


@pytest.fixture
def empty(tmp_path) -> Path:
    folder = tmp_path / "empty"
    folder.mkdir()
    return folder


def run(light: dict, *args: str, cwd: Path, stdin: str = "", code: int = 0) -> str:
    """A command of the light environment (``fivethousand ...``, ``python ...``) run in
    `cwd` without anything pointing at the checkout; its stdout and stderr."""
    bin_folder = Path(light["python"]).parent
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    command = [str(bin_folder / args[0]), *args[1:]]
    result = subprocess.run(
        command, cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=300
    )
    out = result.stdout + result.stderr
    assert result.returncode == code, f"{args}: {result.returncode}\n{out[-3000:]}"
    assert "Traceback" not in out, out[-3000:]
    return out


def test_the_light_install_is_small_and_has_no_training_extra(light, empty):
    print(f"light install: {json.dumps({k: v for k, v in light.items() if k != 'python'})}")
    assert light["site_packages_mb"] <= TARGET_MB
    code = f"import importlib.util as u; print([m for m in {EXTRA_MODULES!r} if u.find_spec(m)])"
    assert run(light, "python", "-c", code, cwd=empty).strip() == "[]"


def test_the_light_install_makes_every_shipped_agent(light, empty):
    code = """
import json, sys
from fivethousand_rl.agents import make_policy
from fivethousand_rl.envs.rules import Rules
players = json.loads(sys.argv[1])
made = {}
for name in sys.argv[2:]:
    policy = make_policy(name)
    policy.check_game(players.get(name, 2), Rules())
    made[name] = [type(policy).__name__, policy.name, sys.modules[type(policy).__module__].__file__]
print(json.dumps(made))
"""
    out = run(light, "python", "-c", code, json.dumps(PLAYERS), *SHIPPED, cwd=empty)
    made = json.loads(out)
    for name in SHIPPED:
        kind, named, file = made[name]
        assert named == name and (kind == "ExportedBot") == (name in PPO)
        assert Path(file).is_relative_to(Path(light["python"]).parent.parent)  # not the clone


def test_the_light_install_evaluates_the_2_player_agents(light, empty):
    names = [name for name in ("planner-2p", "policy-2p", "ppo-2p") if name in SHIPPED]
    command = ["fivethousand", "evaluate", *names, "smart", "--games", "4", "--workers", "1"]
    out = run(light, *command, cwd=empty)
    assert all(name in out for name in [*names, "smart"]) and "games in" in out


def test_the_light_install_plays_in_the_terminal(light, empty):
    command = ["fivethousand", "play", "--opponents", "ppo-2p", "--seed", "3"]
    out = run(light, *command, cwd=empty, stdin=BANK_ELSE_ROLL)
    assert "ppo-2p (seat 1) rolled [" in out and "Game over after" in out


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_light_install_serves_the_game(light, empty):
    port = free_port()
    command = [Path(light["python"]).parent / "fivethousand", "serve", "--port", str(port)]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    server = subprocess.Popen(
        command, cwd=empty, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        deadline, bots = time.monotonic() + 60, None
        while bots is None and time.monotonic() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/bots", timeout=5) as r:
                    bots = json.loads(r.read())["bots"]
            except OSError:
                time.sleep(0.2)
    finally:
        server.terminate()
        output = server.communicate(timeout=30)[0].decode(errors="replace")
    assert bots is not None, output[-3000:]
    keys = {bot["key"]: bot["kind"] for bot in bots}
    assert {name: keys.get(name) for name in SHIPPED} == dict.fromkeys(SHIPPED, "shipped")


@pytest.mark.parametrize(
    ("command", "says"),
    [
        (["train"], "needs torch, from the training extra: " + TRAIN_EXTRA),
        (["export", "ppo-2p", "--out", "bundle"], "needs onnx: pip install onnx"),
        (
            ["evaluate", "smart", "random", "--games", "2", "--plot", "p.png"],
            "needs matplotlib, from the training extra: " + TRAIN_EXTRA,
        ),
    ],
)
def test_the_light_install_says_in_one_line_what_needs_the_extra(light, empty, command, says):
    out = run(light, "fivethousand", *command, cwd=empty, code=2)
    assert out == f"error: fivethousand {command[0]} {says}\n", out  # one line
    assert list(empty.iterdir()) == []  # nothing written
