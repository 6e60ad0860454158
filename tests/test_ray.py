"""Tournaments on Ray (issue 14): the same games as local workers, game for game, on a
local Ray limited to 2 CPUs, started once for the module; clear errors for bad
addresses. Skipped where Ray is not installed (it is an optional extra)."""

import contextlib
import json
import shutil
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from fivethousand_rl import evaluate  # noqa: E402
from fivethousand_rl.agents import ray_tools  # noqa: E402
from fivethousand_rl.agents import tournament as tour  # noqa: E402
from fivethousand_rl.envs.rules import Rules  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BOTS = ["smart", "turn-ev", "random"]


@pytest.fixture(scope="module")
def local_ray():
    """A private 2-CPU Ray, its workers started in the repository (relative checkpoint
    paths), shut down after the module (unless this process had joined one already)."""
    with contextlib.chdir(ROOT), ray_tools.session(ray_tools.LOCAL, num_cpus=2):
        yield


# Each Ray run starts its actors (a second or two): both paths, both table sizes, in two.
@pytest.mark.parametrize(("players", "batched"), [(2, True), (3, False)])
def test_ray_plays_the_local_games_game_for_game(local_ray, monkeypatch, players, batched):
    # Small blocks and chunks: several tasks, finishing out of order on the 2 actors.
    monkeypatch.setattr(tour, "BLOCK", 64)
    seatings = tour.schedule(len(BOTS), players, 60 * players)
    kwargs = {"rules": Rules(), "seed": 11, "batched": batched, "chunk_size": 40}
    local = tour.run(BOTS, seatings, **kwargs)
    seen = []
    on_ray = tour.run(BOTS, seatings, workers=2, ray="local", on_progress=seen.append, **kwargs)
    assert len(local) == len(seatings) and on_ray == local
    assert sum(seen) == len(seatings) and len(seen) > 1  # progress as tasks finish


def test_a_checkpoint_agent_loads_on_ray_by_its_relative_path(local_ray):
    seatings = tour.schedule(2, 2, 6)
    specs = ["checkpoints/planner-2p/value_net.npz", "smart"]
    with contextlib.chdir(ROOT):
        local = tour.run(specs, seatings, Rules(), seed=3, chunk_size=2, batched=False)
        on_ray = tour.run(
            specs, seatings, Rules(), seed=3, chunk_size=2, batched=False, ray="local"
        )
    assert on_ray == local


def test_evaluate_on_ray_gives_the_local_summary(local_ray, tmp_path, capsys):
    args = ["smart", "turn-ev", "random", "--players", "2", "--games", "30", "--seed", "4"]
    paths = {name: tmp_path / f"{name}.json" for name in ("local", "ray")}
    assert evaluate.main([*args, "--json", str(paths["local"])]) == 0
    # More workers than the cluster's CPUs: capped (one actor per CPU), not left waiting.
    on_ray = [*args, "--ray", "--workers", "3", "--json", str(paths["ray"])]
    assert evaluate.main(on_ray) == 0
    assert "games/s, ray, 2 CPUs," in capsys.readouterr().out
    local, remote = (json.loads(path.read_text()) for path in paths.values())
    assert (local["ray"], remote["ray"]) == (None, "local")
    for key in ("command", "seconds", "ray"):
        del local[key], remote[key]
    assert remote == local


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("127.0.0.1:1", "error: cannot reach a Ray cluster at 127.0.0.1:1: "),
        ("head-node", "error: --ray 'head-node': give HOST:PORT"),
        ("10.0.0.5:port", "error: --ray '10.0.0.5:port': give HOST:PORT"),
    ],
)
def test_a_bad_ray_address_is_one_line_and_quick(local_ray, tmp_path, capsys, address, message):
    """Even with a Ray already joined in this process: the address is still checked."""
    out = tmp_path / "s.json"
    start = time.perf_counter()
    assert evaluate.main(["smart", "random", "--ray", address, "--json", str(out)]) == 2
    assert time.perf_counter() - start < 10
    captured = capsys.readouterr()
    assert captured.err.startswith(message) and captured.err.count("\n") == 1
    assert captured.out == "" and not out.exists()


def test_an_agent_the_workers_cannot_load_is_one_line(local_ray, tmp_path, capsys, monkeypatch):
    """The cluster pitfall: a checkpoint this machine reads but the workers do not (here
    the workers run in the repository, the command in another folder)."""
    shutil.copy(ROOT / "checkpoints" / "planner-2p" / "value_net.npz", tmp_path / "mine.npz")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "s.json"
    args = ["mine.npz", "smart", "--games", "4", "--ray", "--json", str(out)]
    assert evaluate.main(args) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: a Ray worker failed: ") and err.endswith("not found: mine.npz")
    assert len(err.splitlines()) == 1 and not out.exists()
