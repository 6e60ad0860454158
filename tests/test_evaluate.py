"""evaluate.py and the tournament machinery."""

import csv
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import evaluate
from agents import tournament as tour
from envs.rules import Rules

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args):
    return subprocess.run(
        [sys.executable, str(ROOT / "evaluate.py"), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def test_tournament_outputs(tmp_path, capsys):
    out = tmp_path / "t"
    code = evaluate.main(
        [
            "smart",
            "threshold:350",
            "random",
            "--games",
            "60",
            "--seed",
            "3",
            "--json",
            f"{out}.json",
            "--csv",
            f"{out}.csv",
            "--plot",
            f"{out}.png",
            "--markdown",
            f"{out}.md",
        ]
    )
    assert code == 0
    summary = json.loads(Path(f"{out}.json").read_text())
    assert summary["games"] == 3 * 60  # three pairings
    by_name = {a["agent"]: a for a in summary["agents"]}
    assert set(by_name) == {"smart", "threshold:350", "random"}
    assert sum(a["wins"] for a in summary["agents"]) + summary["truncated"] == summary["games"]
    for a in summary["agents"]:
        assert a["games"] == 120
        assert a["ci95_low"] <= a["win_rate"] <= a["ci95_high"]
    assert summary["pairwise"]["smart"]["random"]["games"] == 60
    pair = (
        summary["pairwise"]["smart"]["random"]["wins"]
        + summary["pairwise"]["random"]["smart"]["wins"]
    )
    assert pair <= 60
    rows = list(csv.DictReader(Path(f"{out}.csv").read_text().splitlines()))
    assert [r["agent"] for r in rows] == ["smart", "threshold:350", "random"]
    assert Path(f"{out}.png").stat().st_size > 5000
    md = Path(f"{out}.md").read_text()
    assert md.count("\n| **") == 3 and f"{by_name['smart']['win_rate']:.1%}" in md
    printed = capsys.readouterr().out
    assert "win rate" in printed and "smart" in printed


def test_same_seed_same_results_whatever_the_workers(tmp_path):
    summaries = []
    for workers in ("1", "2"):
        path = tmp_path / f"w{workers}.json"
        assert (
            evaluate.main(
                [
                    "turn-ev",
                    "random",
                    "--games",
                    "300",
                    "--seed",
                    "5",
                    "--workers",
                    workers,
                    "--json",
                    str(path),
                ]
            )
            == 0
        )
        summaries.append(json.loads(path.read_text()))
    assert summaries[0]["agents"] == summaries[1]["agents"]


def test_seats_rotate_evenly():
    seatings = tour.schedule(3, 3, 9)
    seats = Counter((a, seat) for s in seatings for seat, a in enumerate(s.agents))
    assert set(seats.values()) == {3}  # each agent 3 times in each seat
    results = tour.run(["random", "threshold:300", "smart"], seatings, Rules(), seed=0)
    assert [r.game for r in results] == list(range(9))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["grandmaster", "random"], "unknown bot 'grandmaster'; accepted: random, threshold:T"),
        (["missing.zip", "random"], "checkpoint not found: missing.zip"),
        (["random", "--players", "3"], "3 players need at least 3 agents"),
        (["random", "smart", "--games", "0"], "--games must be positive"),
    ],
)
def test_bad_input_is_one_clear_line(args, message):
    result = run_cli(*args)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0
    assert message in result.stderr


def test_corrupt_checkpoint_is_one_clear_line(tmp_path):
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"not a zip")
    result = run_cli(str(bad), "random")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"not an SB3 checkpoint (not a zip file): {bad}" in result.stderr


def test_sb3_checkpoint_plays_in_a_tournament(tmp_path):
    import gymnasium as gym
    from sb3_contrib import MaskablePPO

    import envs  # noqa: F401

    model = MaskablePPO(
        "MlpPolicy",
        gym.make("FiveThousand-v0"),
        n_steps=128,
        batch_size=64,
        seed=0,
        device="cpu",
        policy_kwargs={"net_arch": [16]},
    )
    model.learn(256)
    path = tmp_path / "agent.zip"
    model.save(path)
    summary_path = tmp_path / "s.json"
    # Two worker processes: a parent that loaded torch must not hang its workers.
    args = [str(path), "random", "--games", "20", "--workers", "2", "--json", str(summary_path)]
    assert evaluate.main(args) == 0
    summary = json.loads(summary_path.read_text())
    assert summary["agents"][0]["games"] == 20
    # The wrong number of players for the checkpoint: one clear line before any game.
    result = run_cli(str(path), "random", "smart", "--players", "3", "--games", "3")
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0
    assert "was trained for 47 observation values; 3-player games give 50" in result.stderr


@pytest.mark.parametrize(
    ("wins", "n", "low", "high"),
    [
        (50, 100, 0.4038, 0.5962),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (1, 20, 0.0089, 0.2361),
    ],
)
def test_wilson_interval(wins, n, low, high):
    lo, hi = tour.wilson_interval(wins, n)
    assert (round(lo, 4), round(hi, 4)) == (low, high)


def test_ratings_order_strong_above_weak():
    seatings = tour.schedule(2, 2, 200)
    results = tour.run(["optimal", "random"], seatings, Rules(), seed=1)
    summary = tour.summarize(["optimal", "random"], results, 2)
    strong, weak = summary["agents"]
    assert strong["rating_mu"] > weak["rating_mu"]
    assert strong["win_rate"] > 0.9
