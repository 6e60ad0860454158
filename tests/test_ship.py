"""ship.py: arguments checked before anything is written, the new agent built aside and
swapped in whole, an existing agent replaced only with --force, the evaluation's
duration told before it starts (issue 9, items 1 and 14)."""

import dataclasses
import json
import os
import pickle
import shutil
import subprocess
import sys
import tomllib
import zipfile
from hashlib import sha256
from pathlib import Path

import numpy as np
import pytest
import torch

from fivethousand_rl import ship
from fivethousand_rl.agents import shipping, tournament_report
from fivethousand_rl.envs.rules import Rules

ROOT = Path(__file__).resolve().parent.parent
SHIPPED_2P = ROOT / "checkpoints" / "ppo-2p"


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A finished 2-player run holding the shipped model (one stage, no learning curve)."""
    folder = tmp_path_factory.mktemp("runs") / "tiny_run"
    (folder / "best").mkdir(parents=True)
    shutil.copy(SHIPPED_2P / "model.zip", folder / "best" / "model.zip")
    config = json.loads((SHIPPED_2P / "config.json").read_text())
    config.pop("init_from", None)  # one stage: the card need not read the real runs
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "summary.json").write_text(json.dumps({"steps": 4096, "wall_seconds": 60}))
    (folder / "command.txt").write_text("python train.py --preset ppo_2p\n")
    return folder


@pytest.fixture
def out(tmp_path) -> Path:
    """A checkpoints folder holding a copy of the shipped ppo-2p agent."""
    root = tmp_path / "checkpoints"
    shutil.copytree(SHIPPED_2P, root / "ppo-2p")
    return root


def tree(folder: Path) -> dict[str, str]:
    """Every file and folder under `folder` (hidden ones too), with its content's hash."""
    files = {}
    for p in sorted(folder.rglob("*")):
        content = p.read_bytes() if p.is_file() else b"(a folder)"
        files[str(p.relative_to(folder))] = sha256(content).hexdigest()
    return files


def no_work(*_args, **_kwargs):
    raise AssertionError("bad input must be refused before any work")


def failed(*_args, **_kwargs):
    """An evaluation whose games failed (a worker could not load an agent)."""
    raise RuntimeError("a worker failed")


def bad_run(tmp_path: Path, config: str = "", state: bytes = b"") -> Path:
    """A run folder with a model and the given config.json text (and latest/state.pkl)."""
    folder = tmp_path / "bad_run"
    (folder / "best").mkdir(parents=True)
    shutil.copy(SHIPPED_2P / "model.zip", folder / "best" / "model.zip")
    (folder / "config.json").write_text(config)
    if state:
        (folder / "latest").mkdir()
        (folder / "latest" / "state.pkl").write_bytes(state)
    return folder


# Each case: (a function of (run, out, tmp_path) giving ship's arguments, the error).
BAD = {
    # The command: it replaced the shipped model, config and curve, then failed.
    "games 0 with --force": (
        lambda r, o, t: [r, "--name", "ppo-2p", "--out", o, "--games", "0", "--force"],
        "--games must be positive, got 0",
    ),
    "workers 0": (
        lambda r, o, t: [r, "--name", "new", "--out", o, "--workers", "0"],
        "--workers must be positive",
    ),
    "negative seed": (
        lambda r, o, t: [r, "--name", "new", "--out", o, "--seed", "-1"],
        "--seed must be 0 or more",
    ),
    "missing notes": (  # it failed only after the whole evaluation
        lambda r, o, t: [r, "--name", "ppo-2p", "--out", o, "--notes", t / "x.md", "--force"],
        "cannot read --notes",
    ),
    "notes a folder": (
        lambda r, o, t: [r, "--name", "new", "--out", o, "--notes", t],
        "cannot read --notes",
    ),
    "existing agent without --force": (
        lambda r, o, t: [r, "--name", "ppo-2p", "--out", o],
        "is already a shipped agent: give --force to replace it",
    ),
    "name climbing out": (
        lambda r, o, t: [r, "--name", "../escape", "--out", o],
        "--name must be a plain folder name",
    ),
    "name with a folder": (
        lambda r, o, t: [r, "--name", "a/b", "--out", o],
        "--name must be a plain folder name",
    ),
    "hidden name": (
        lambda r, o, t: [r, "--name", ".x", "--out", o],
        "--name must be a plain folder name",
    ),
    "empty name": (lambda r, o, t: [r, "--name", "", "--out", o], "--name must be"),
    "missing out": (
        lambda r, o, t: [r, "--name", "new", "--out", o / "missing"],
        "is not an existing folder",
    ),
    "out a file": (
        lambda r, o, t: [r, "--name", "new", "--out", o / "ppo-2p" / "model.zip"],
        "is not an existing folder",
    ),
    "name is the run itself": (
        lambda r, o, t: [r, "--name", r.name, "--out", r.parent, "--force"],
        "holds the run",
    ),
    "no such model": (
        lambda r, o, t: [r, "--name", "new", "--out", o, "--model", "latest"],
        "is not a finished training run",
    ),
    "no such run": (
        lambda r, o, t: [t / "nothing", "--name", "new", "--out", o],
        "is not a finished training run",
    ),
    "truncated config": (
        lambda r, o, t: [bad_run(t, '{"players": 2, "ho'), "--name", "new", "--out", o],
        "bad_run/config.json",
    ),
    "config a list": (
        lambda r, o, t: [bad_run(t, "[2]"), "--name", "new", "--out", o],
        "bad_run/config.json is not a JSON object",
    ),
    "config of no game": (
        lambda r, o, t: [bad_run(t, '{"players": 9, "hold": "x"}'), "--name", "new", "--out", o],
        "names no valid players",
    ),
    "corrupt state of a run in progress": (
        lambda r, o, t: [
            bad_run(t, '{"players": 2, "hold": "free"}', b"junk"),
            "--name",
            "new",
            "--out",
            o,
        ],
        "latest/state.pkl",
    ),
    "model for another game": (
        lambda r, o, t: [bad_run(t, '{"players": 3, "hold": "free"}'), "--name", "new", "--out", o],
        "was trained for",
    ),
    "value-net averaging of a PPO run": (
        lambda r, o, t: [r, "--name", "new", "--out", o, "--average-with", "x.npz"],
        "--average-with averages value nets: a planner run's only",
    ),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_refused_in_one_line_before_anything_is_touched(
    case, run, out, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(tournament_report, "play_and_report", no_work)
    monkeypatch.setattr(shipping, "ppo_curve", no_work)
    monkeypatch.setattr(shipping, "games_per_second", no_work, raising=False)
    make_args, message = BAD[case]
    before = tree(out)
    args = [str(a) for a in make_args(run, out, tmp_path)]
    assert ship.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and err.count("\n") == 0, err
    assert tree(out) == before


def test_a_folder_that_is_no_shipped_agent_is_never_replaced(run, out, monkeypatch, capsys):
    monkeypatch.setattr(tournament_report, "play_and_report", no_work)
    (out / "notes").mkdir()
    (out / "notes" / "mine.txt").write_text("keep me")
    (out / "file").write_text("keep me too")
    before = tree(out)
    for name in ("notes", "file"):
        assert ship.main([str(run), "--name", name, "--out", str(out), "--force"]) == 2
        assert "choose another --name" in capsys.readouterr().err
    assert tree(out) == before


@pytest.mark.parametrize("failure", ["evaluation fails", "Ctrl-C during the evaluation"])
def test_a_failure_after_the_checks_leaves_the_shipped_agent_as_it_was(
    failure, run, out, monkeypatch
):
    def evaluation(specs, *args, **kwargs):
        # The evaluation plays the model being built, under the agent's own folder name.
        assert Path(specs[0]).parent.name == "ppo-2p" and ".shipping-" in specs[0]
        if failure == "evaluation fails":
            raise RuntimeError("a worker failed")
        raise KeyboardInterrupt

    monkeypatch.setattr(tournament_report, "play_and_report", evaluation)
    before = tree(out)
    args = [str(run), "--name", "ppo-2p", "--out", str(out), "--games", "10", "--force"]
    if failure == "evaluation fails":
        assert ship.main(args) == 1
    else:
        with pytest.raises(KeyboardInterrupt):
            ship.main(args)
    assert tree(out) == before  # the unfinished folder is gone too


def test_force_swaps_in_a_complete_new_agent(run, out, tmp_path, capsys):
    (out / "ppo-2p" / "stale.txt").write_text("from the agent replaced")
    notes = tmp_path / "notes.md"
    notes.write_text("## Notes\n\nTried things.\n")
    args = [str(run), "--name", "ppo-2p", "--out", str(out), "--games", "10", "--workers", "1"]
    assert ship.main([*args, "--notes", str(notes), "--force"]) == 0
    assert capsys.readouterr().out.strip().endswith(f"shipped {out / 'ppo-2p'}")
    assert sorted(p.name for p in out.iterdir()) == ["ppo-2p"]  # nothing left aside
    shipped = out / "ppo-2p"
    assert sorted(p.name for p in shipped.iterdir()) == [
        "MODEL_CARD.md",
        "config.json",
        "evaluation.json",
        "evaluation.md",
        "evaluation.png",
        "learning_curve.json",
        "learning_curve.png",
        "model.zip",
    ]
    card = (shipped / "MODEL_CARD.md").read_text()
    evaluation = json.loads((shipped / "evaluation.json").read_text())
    agent = str(shipped / "model.zip")
    assert evaluation["command"].startswith(f"python evaluate.py {agent} optimal smart")
    assert f"--json {shipped / 'evaluation.json'}" in evaluation["command"]
    assert evaluation["command"] in card and "Tried things." in card
    assert "10 games per pairing" in card and "4,096 learner decisions" in card
    assert shipping.LICENSE_SECTION in card
    for f in shipped.iterdir():  # the folder it was built in is named nowhere
        if f.suffix in (".md", ".json"):
            assert ".shipping-" not in f.read_text(), f.name
    assert evaluation["games_per_matchup"] == 10 and len(evaluation["agents"]) == 5


def test_help_shows_the_defaults(capsys):
    with pytest.raises(SystemExit):
        ship.parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for default in ("games per pairing (default 20000)", "(default 2)", "(default best)"):
        assert default in text
    assert "expected duration is shown" in text


def test_the_evaluation_duration_is_told_before_it_starts(run, out, monkeypatch, capsys):
    told = []

    def evaluation(*args, **kwargs):
        told.append(capsys.readouterr().out)  # what the user saw before it started
        raise RuntimeError("a worker failed")

    monkeypatch.setattr(tournament_report, "play_and_report", evaluation)
    monkeypatch.setattr(shipping, "games_per_second", lambda *a: 100.0)  # timed below
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    args = [str(run), "--name", "new", "--out", str(out), "--games", "1000", "--workers", "2"]
    assert ship.main(args) == 1
    assert told == [
        "evaluation: 10 pairing(s) x 1,000 games = 10,000 games; about 50 s with 2 workers, "
        "1 min 40 s in one process (100 games/s timed; --games sets the count)\n"
    ]
    # A few games are not worth timing: the count alone is told.
    monkeypatch.setattr(shipping, "games_per_second", no_work)
    assert ship.main([*args[:-4], "--games", "10"]) == 1
    assert told[-1] == "evaluation: 10 pairing(s) x 10 games = 100 games\n"


def test_games_per_second_is_timed_on_real_games():
    rate = shipping.games_per_second(["smart", "random", "threshold:350"], 2, Rules(), seed=0)
    assert 1 < rate < 1e6


# ------------------------------------------------------------- planner runs
def planner_run(
    folder: Path, players: list[int], finished: bool = True, config: dict | None = None
) -> Path:
    """A planner run folder as train_planner.py writes it (an untrained network: the
    files are what shipping reads), two evaluations in evals.json."""
    import pickle

    import numpy as np

    from fivethousand_rl.agents.training.value_iteration import PlannerConfig
    from fivethousand_rl.agents.value_net import FeatureSpec, ValueNet

    cfg = dataclasses.asdict(PlannerConfig(players=players, games_per_iteration=20))
    cfg.update(config or {})
    spec = FeatureSpec()
    rng = np.random.default_rng(0)
    net = ValueNet(
        spec,
        [rng.normal(0, 0.05, (spec.size, 8)), rng.normal(0, 1, (8, 8))],
        [np.zeros(8), np.zeros(8)],
    )
    for sub in ("best", "latest", "tb"):
        (folder / sub).mkdir(parents=True)
    net.save(folder / "best" / "value_net.npz")
    net.save(folder / "latest" / "value_net.npz")
    label = f"{players[0]}p:smart"
    evals = [
        {
            "iteration": it,
            "games": it * 20,
            "wall_seconds": 30.0 * it,
            "results": {
                label: {
                    "win_rate": rate,
                    "ci95": [rate - 0.05, rate + 0.05],
                    "games": 100,
                    "fair_share": 1 / players[0],
                    "mean_turns": 40.0,
                }
            },
            "mean_win_rate": rate,
            "exact_error": 0.01 / it if 2 in players else None,
        }
        for it, rate in ((10, 0.4), (20, 0.45))
    ]
    (folder / "config.json").write_text(json.dumps(cfg))
    (folder / "command.txt").write_text(f"python train_planner.py --players {players[0]}\n")
    (folder / "evals.json").write_text(json.dumps(evals))
    (folder / "best" / "eval.json").write_text(json.dumps(evals[-1]))
    state = {
        "trainer": {"iteration": 20},
        "evals": evals,
        "best_score": 0.45,
        "wall_seconds": 600.0,
        "eval_seconds": 60.0,
    }
    (folder / "latest" / "state.pkl").write_bytes(pickle.dumps(state))
    if finished:
        summary = {
            "iterations": 20,
            "games": 400,
            "wall_seconds": 600.0,
            "eval_seconds": 60.0,
            "best_mean_win_rate": 0.45,
            "last_eval": evals[-1],
        }
        (folder / "summary.json").write_text(json.dumps(summary))
    return folder


@pytest.mark.parametrize(
    "players, finished, evaluations",
    [
        ([3, 4], True, ["evaluation-3p", "evaluation-4p"]),
        ([2], False, ["evaluation"]),  # a run in progress: its state.pkl tells how far
    ],
)
def test_a_planner_run_ships_its_value_net_card_curve_and_evaluations(
    tmp_path, players, finished, evaluations
):
    from fivethousand_rl.agents.value_net import ValueNet

    run = planner_run(tmp_path / "planner_run", players, finished)
    # A member the loader never reads: an object array, run by np.load(allow_pickle=True).
    with zipfile.ZipFile(run / "best" / "value_net.npz", "a") as archive:
        archive.writestr("extra.npy", b"\x93NUMPY object array of pickled code")
    out = tmp_path / "checkpoints"
    out.mkdir()
    args = [str(run), "--name", "planner-x", "--out", str(out), "--games", "4", "--workers", "1"]
    assert ship.main(args) == 0
    shipped = out / "planner-x"
    outputs = [f"{stem}.{ext}" for stem in evaluations for ext in ("json", "md", "png")]
    assert sorted(p.name for p in shipped.iterdir()) == sorted(
        [
            "MODEL_CARD.md",
            "config.json",
            "learning_curve.json",
            "learning_curve.png",
            "value_net.npz",
            *outputs,
        ]
    )
    # Saved anew from the checked arrays (issue 54 item 5): the same network.
    net = ValueNet.load(shipped / "value_net.npz")
    assert_same_net(net, ValueNet.load(run / "best" / "value_net.npz"))
    assert "extra.npy" not in zipfile.ZipFile(shipped / "value_net.npz").namelist()
    card = (shipped / "MODEL_CARD.md").read_text()
    assert "iterations: 20" in card and "games: 400" in card and "from self-play" in card
    assert "0.17 h for the whole run" in card and "python train_planner.py --players" in card
    assert shipping.LICENSE_SECTION in card
    assert ("mean |V_net - V_exact| = 0.0005" in card) == (2 in players)
    for n, stem in zip(players, evaluations, strict=True):
        evaluation = json.loads((shipped / f"{stem}.json").read_text())
        assert evaluation["agents"][0]["agent"] == "planner-x"
        assert f"--players {n}" in evaluation["command"] and evaluation["command"] in card
    curve = json.loads((shipped / "learning_curve.json").read_text())
    assert [row["iteration"] for row in curve] == [10, 20]
    assert curve[-1][f"win_rate/{players[0]}p:smart"] == 0.45
    for f in shipped.iterdir():
        if f.suffix in (".md", ".json"):
            assert ".shipping-" not in f.read_text(), f.name


def test_a_run_resumed_past_its_summary_is_described_by_its_state(tmp_path):
    """summary.json is written when a run finishes; resumed with more --iterations and
    stopped, its latest/state.pkl is further along, and the card must say so."""
    run = planner_run(tmp_path / "planner_run", [3], finished=True)
    stale = {"iterations": 10, "games": 200, "wall_seconds": 300.0, "eval_seconds": 30.0}
    (run / "summary.json").write_text(json.dumps(stale))
    summary = shipping.planner_stages(run)[0]["summary"]
    assert summary == {"iterations": 20, "games": 400, "wall_seconds": 600.0, "eval_seconds": 60.0}


def test_an_exact_table_card_says_what_it_answers_and_where_it_started(tmp_path):
    """A run of the exact-table method is a best response to a named table: its card says
    so, names the network it started from and that network's own training time."""
    config = {"method": "exact-table", "players": [4], "eval_tables": []}
    text = shipping.method_text(config)
    assert "best response" in text and "(smart,turn-ev,threshold:350)" in text
    assert "a bot's turn valued by its exact ends" in text and "reads the agent's seat" in text
    assert "from self-play" in shipping.method_text({"method": "self-play"})
    start = tmp_path / "start_run" / "best"
    start.mkdir(parents=True)
    (start / "value_net.npz").write_bytes(b"")
    (start / "eval.json").write_text(json.dumps({"iteration": 72, "wall_seconds": 7200.0}))
    line = shipping.init_line({"init": str(start / "value_net.npz")})
    assert "iteration 72 of its own run, start_run, reached after 2.00 h" in line
    assert shipping.init_line({"init": ""}) == ""


def test_an_exact_table_card_says_the_net_plays_its_table_size_only():
    table = ["smart,turn-ev,threshold:350"]
    config = {"method": "exact-table", "players": [4], "eval_tables": table}
    text = shipping.tables_text(config, "a.npz")
    assert "plays 4-player games only" in text
    assert "`python evaluate.py a.npz smart turn-ev threshold:350 --players 4`" in text
    assert "`python play.py --opponents a.npz turn-ev threshold:350`" in text
    assert "2 to 8 players" in shipping.tables_text({"method": "self-play"}, "a.npz")


@pytest.mark.parametrize(
    "config, message",
    [
        ({"players": [9]}, "names no valid players"),
        ({"players": 2}, "names no valid players"),
        ({"target": 1000, "entry": 300}, "ship.py evaluates the standard game"),
        # issue 29 item 1: runs of the removed table method
        ({"method": "table", "lam": 0.8}, "uses --method table, removed (see the git history)"),
        ({"rollouts": 3}, "uses --rollouts 3, removed (see the git history)"),
    ],
)
def test_a_planner_run_that_cannot_be_shipped_is_refused_first(
    tmp_path, monkeypatch, capsys, config, message
):
    monkeypatch.setattr(tournament_report, "play_and_report", no_work)
    run = planner_run(tmp_path / "planner_run", [2], config=config)
    out = tmp_path / "checkpoints"
    out.mkdir()
    assert ship.main([str(run), "--name", "p", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and err.count("\n") == 0, err
    assert list(out.iterdir()) == []


def assert_same_net(a, b) -> None:
    for x, y in zip(a.weights + a.biases, b.weights + b.biases, strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize(
    "others, wording",
    [
        (1, "the average of the run's best network and `{0}`: one network of both"),
        (2, "the average of the run's best network, `{0}` and `{1}`: one network of all 3"),
    ],
)
def test_a_planner_run_ships_averaged_with_other_nets(tmp_path, others, wording):
    """--average-with (repeatable): the shipped network is the run's averaged with the
    named nets (fivethousand_rl.agents.value_net.average_nets), and the card names them all."""
    from fivethousand_rl.agents.value_net import ValueNet, average_nets

    run = planner_run(tmp_path / "planner_run", [3])
    paths = [
        planner_run(tmp_path / f"other_{i}", [3]) / "best" / "value_net.npz" for i in range(others)
    ]
    out = tmp_path / "checkpoints"
    out.mkdir()
    args = [str(run), "--name", "avg", "--out", str(out), "--games", "3", "--workers", "1"]
    for path in paths:
        args += ["--average-with", str(path)]
    assert ship.main(args) == 0
    shipped = ValueNet.load(out / "avg" / "value_net.npz")
    nets = [ValueNet.load(path) for path in [run / "best" / "value_net.npz", *paths]]
    expected = average_nets(nets)
    assert shipped.hidden == expected.hidden == (8 * (others + 1),)
    assert_same_net(shipped, expected)
    card = (out / "avg" / "MODEL_CARD.md").read_text()
    assert f"hidden layers [{8 * (others + 1)}]" in card
    assert wording.format(*paths) in card


@pytest.mark.parametrize(
    "other, message",
    [
        ("README.md", "--average-with: cannot load a value net"),
        ("checkpoints/planner-2p/missing.npz", "--average-with: cannot load a value net"),
    ],
)
def test_averaging_with_what_is_no_fitting_value_net_is_refused_first(
    tmp_path, monkeypatch, capsys, other, message
):
    monkeypatch.setattr(tournament_report, "play_and_report", no_work)
    run = planner_run(tmp_path / "planner_run", [3])
    out = tmp_path / "checkpoints"
    out.mkdir()
    assert (
        ship.main([str(run), "--name", "p", "--out", str(out), "--average-with", str(ROOT / other)])
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and err.count("\n") == 0, err
    assert list(out.iterdir()) == []


def test_an_averaged_network_is_timed_as_it_will_be_shipped(tmp_path, monkeypatch):
    """The duration told before the evaluation is timed with the averaged network (wider,
    so slower), not with the run's own."""
    from fivethousand_rl.agents.value_net import ValueNet

    timed = []

    def games_per_second(agents, *args):
        timed.append(ValueNet.load(agents[0]).hidden)
        return 100.0

    monkeypatch.setattr(shipping, "games_per_second", games_per_second)
    monkeypatch.setattr(tournament_report, "play_and_report", failed)
    run = planner_run(tmp_path / "planner_run", [3])
    out = tmp_path / "checkpoints"
    out.mkdir()
    args = [str(run), "--name", "avg", "--out", str(out), "--games", "100"]
    assert ship.main(args) == 1
    assert ship.main([*args, "--average-with", str(run / "latest" / "value_net.npz")]) == 1
    assert timed == [(8,), (16,)]


# The committed planner agents and the records of their runs (config.json kept).
PLANNER_RUNS = sorted(p.parent for p in (ROOT / "checkpoints").glob("planner*/config.json"))


@pytest.mark.parametrize("folder", PLANNER_RUNS, ids=lambda p: p.name)
def test_every_committed_planner_config_still_reads(folder):
    """Issue 29 item 1: the committed planner runs and agents saved the removed table
    method's settings unused (rollouts 0, lam 0.8); ship.py and train_planner.py --resume
    still read their config.json."""
    from fivethousand_rl.agents.training.config import METHODS, PlannerConfig, read_run_config

    config = shipping.read_json(folder / "config.json")
    assert shipping.planner_config(config).method in METHODS
    assert read_run_config(folder, PlannerConfig).players == config["players"]


# The shipped agents' training runs: since issue 29 item 7 only their record stays in
# the tree (config, command, evaluations); their state (models, state.pkl, snapshots,
# TensorBoard logs) is rebuilt by the commands in checkpoints/README.md.
RUN_RECORDS = [
    "ppo_2p_free_seed1",
    "ppo_2p_tune_free_seed1",
    "ppo_4p_free_seed0",
    "planner_2p_free_seed0",
    "planner_multi_free_seed0",
    "planner_table_3p_free_seed0",
    "planner_table_3p_br_free_seed0",
    "planner_table_4p_free_seed0",
    "planner_table_4p_free_seed1",
    "planner_table_4p_finetune",
    "planner_table_6p_free_seed0",
    "planner_table_6p_finetune",
    "policy_2p_free_seed0",
    "policy_4p_free_seed0",
    "policy_6p_free_seed0",
    "policy_3p_free_seed0",
]
RECORD_FILES = {"config.json", "command.txt", "evals.json", "summary.json", "best/eval.json"}
SHIPPED = ["ppo-2p", "ppo-4p", "planner-2p", "planner-multi", "planner-3p", "planner-4p"]
SHIPPED += ["planner-6p", "policy-2p", "policy-4p", "policy-3p", "policy-6p"]


def test_every_shipped_card_names_the_project_s_licence():
    """Issue 53 item 2: each card says the licence pyproject.toml gives the package, in
    the words the card writer uses."""
    licence = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    assert shipping.LICENSE_SECTION.split("\n")[2].startswith(f"{licence}, ")
    cards = sorted((ROOT / "checkpoints").glob("*/MODEL_CARD.md"))
    assert len(cards) >= 8
    for card in cards:
        assert shipping.LICENSE_SECTION + "\n## Training\n" in card.read_text(), card


def test_the_committed_checkpoints_are_agents_and_run_records_only():
    """Issue 29 item 7: the product ships agents, not training state. Tracked
    checkpoints/ is the README, the shipped agents and their runs' records, 20 MB at
    most."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "checkpoints"], cwd=ROOT, capture_output=True, text=True
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout: the committed checkpoints are unknown")
    files = [Path(name) for name in listed.stdout.split("\0") if name]
    assert sum((ROOT / f).stat().st_size for f in files) <= 20_000_000
    folders = {f.parts[1] for f in files if len(f.parts) > 2}
    assert folders == {*SHIPPED, *RUN_RECORDS}
    state = [
        f.as_posix()
        for f in files
        if len(f.parts) > 2
        and f.parts[1] in RUN_RECORDS
        and Path(*f.parts[2:]).as_posix() not in RECORD_FILES
    ]
    assert state == []
    for name in RUN_RECORDS:
        for kept in ("config.json", "command.txt", "evals.json"):
            assert Path("checkpoints", name, kept) in files


@pytest.mark.parametrize("name", RUN_RECORDS)
def test_a_run_record_is_refused_in_one_line(name, tmp_path, monkeypatch, capsys):
    """Issue 29 item 7: a run whose model left the tree cannot be shipped again; ship.py
    says so in one line, naming what is missing, and writes nothing."""
    monkeypatch.setattr(tournament_report, "play_and_report", no_work)
    monkeypatch.setattr(shipping, "ppo_curve", no_work)
    monkeypatch.setattr(shipping, "games_per_second", no_work, raising=False)
    run, out = ROOT / "checkpoints" / name, tmp_path / "out"
    out.mkdir()
    before = tree(run)
    assert ship.main([str(run), "--name", "rebuilt", "--out", str(out), "--games", "10"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "is not a finished training run (no " in err, err
    assert "model.zip" in err and "value_net.npz" in err
    assert tree(run) == before and not any(out.iterdir())


# ------------------------------------------------------------- issue 54 item 5
def actor_logits(model, obs: np.ndarray) -> np.ndarray:
    """The logits of a MaskablePPO model's actor for rows of observations (torch's)."""
    import torch

    policy = model.policy
    with torch.no_grad():
        features = policy.extract_features(torch.as_tensor(obs), policy.pi_features_extractor)
        return policy.action_net(policy.mlp_extractor.forward_actor(features)).numpy()


# Run in a child process: SB3's own loader, as anyone given the shipped file would run it.
STOCK_LOAD = """
import sys
import numpy as np
from sb3_contrib import MaskablePPO
from tests.test_ship import actor_logits
model = MaskablePPO.load(sys.argv[1], device="cpu")
np.save(sys.argv[3], actor_logits(model, np.load(sys.argv[2])))
print(model.lr_schedule(1.0), model.lr_schedule(0.0), model.clip_range(0.5))
"""


def positions(spec, count: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """Observations (as `spec` encodes them) and legal masks of `count` decisions of
    random 2-player games."""
    from fivethousand_rl.envs.game import Game

    rng = np.random.default_rng(0)
    game, obs, masks = Game(2, seed=0), [], []
    while len(obs) < count:
        if game.over:
            game = Game(2, seed=len(obs))
        game.roll()
        while not game.over and game.state.phase == "decide":
            legal, mask = game.legal()
            obs.append(spec.encode(game, game.state.current))
            masks.append(mask.copy())
            game.act(int(rng.choice(legal)))
            if game.state.phase == "roll":
                break
    return np.array(obs, dtype=np.float32), np.array(masks)


def test_ship_rewrites_a_hostile_model_so_stock_loading_runs_nothing(tmp_path, run, monkeypatch):
    """Issue 54 item 5: the run's model.zip holds a code-running pickle in every setting
    the toolkit's loader replaces (classes, schedules, spaces) and in a member it never
    reads. ship.py rebuilt nothing and copied it: loading the shipped file with stock
    ``MaskablePPO.load`` ran it. Now the shipped model is written from the loaded,
    checked objects: stock SB3 loads it in a child process without running any of it, no
    byte of the payload is in it, and it gives the same logits as the original, in SB3
    and in the toolkit."""
    from benchmarks.hostile import Payload, code_settings_file, serialized
    from fivethousand_rl.agents import make_policy

    marker = tmp_path / "ran_code_from_the_file"
    payload = serialized(marker)[":serialized:"]
    hostile = code_settings_file(tmp_path, marker)
    with zipfile.ZipFile(hostile, "a") as archive:  # a member nobody reads
        archive.writestr("notes.pkl", pickle.dumps(Payload(marker)))
    hostile_run = tmp_path / "hostile_run"
    shutil.copytree(run, hostile_run)
    shutil.copy(hostile, hostile_run / "best" / "model.zip")
    monkeypatch.setattr(shipping, "games_per_second", no_work)  # a few games: untimed
    monkeypatch.setattr(shipping, "opponents", lambda players: ["random"])  # one pairing
    out = tmp_path / "checkpoints"
    out.mkdir()
    args = [str(hostile_run), "--name", "clean", "--out", str(out), "--games", "2"]
    assert ship.main([*args, "--workers", "1"]) == 0
    shipped = out / "clean" / "model.zip"
    with zipfile.ZipFile(shipped) as archive:
        assert "notes.pkl" not in archive.namelist()
        contents = [shipped.read_bytes(), *(archive.read(name) for name in archive.namelist())]
    for raw in contents:
        assert payload.encode() not in raw and str(marker).encode() not in raw
    spec = make_policy(str(SHIPPED_2P / "model.zip")).spec
    obs, masks = positions(spec)
    np.save(tmp_path / "obs.npy", obs)
    child = subprocess.run(
        [sys.executable, "-c", STOCK_LOAD, shipped, tmp_path / "obs.npy", tmp_path / "out.npy"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert not marker.exists()  # no code of the file ran, in SB3's loader or ours
    assert child.returncode == 0, child.stderr[-2000:]
    # Its schedules are the run's (config.json), for whoever trains on from it.
    config = json.loads((hostile_run / "config.json").read_text())
    schedules = [config[key] for key in ("learning_rate", "final_learning_rate", "clip_range")]
    assert [float(x) for x in child.stdout.split()] == schedules
    original, rewritten = (make_policy(str(p)).model for p in (SHIPPED_2P / "model.zip", shipped))
    weights = rewritten.policy.state_dict()
    for name, tensor in original.policy.state_dict().items():
        assert torch.equal(weights[name], tensor), name  # the very same weights
    expected = actor_logits(original, obs)
    np.testing.assert_array_equal(actor_logits(rewritten, obs)[masks], expected[masks])
    # Another process may sum in another order (torch's threads): equal to float32 rounding.
    stock = np.load(tmp_path / "out.npy")
    np.testing.assert_allclose(stock[masks], expected[masks], rtol=1e-5, atol=1e-5)
    assert not marker.exists()


def test_a_model_trusted_by_its_user_is_still_not_shipped_with_its_code(
    tmp_path, run, monkeypatch, capsys
):
    """The opt-in that lets SB3's own loader run a file's code (FIVETHOUSAND_TRUSTED_MODELS)
    is for playing it here: ship would write that code again into the shipped file, so it
    refuses such a model in one line, before any of it runs."""
    from benchmarks.hostile import refused_file

    marker = tmp_path / "ran_code_from_the_file"
    trusted_run = tmp_path / "trusted_run"
    shutil.copytree(run, trusted_run)
    model, named = refused_file(trusted_run / "best", marker, "an unknown pickled setting")
    monkeypatch.setenv("FIVETHOUSAND_TRUSTED_MODELS", str(model))
    monkeypatch.setattr(tournament_report, "play_and_report", no_work)
    out = tmp_path / "checkpoints"
    out.mkdir()
    assert ship.main([str(trusted_run), "--name", "new", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: cannot ship {model}: ") and named in err, err
    assert err.count("\n") == 0 and not marker.exists() and list(out.iterdir()) == []


def test_float16_ships_a_network_whose_every_weight_is_a_float16(run, out, capsys):
    """ship --float16 (issue 55 item 2): the model evaluated and shipped has its weights
    rounded to float16 precision (each one a float16 exactly, so its export bundle stores
    them in half the bytes), and its card says so."""
    import torch

    from fivethousand_rl.agents import make_policy

    args = [str(run), "--name", "half", "--out", str(out), "--games", "4", "--workers", "1"]
    assert ship.main([*args, "--float16"]) == 0
    weights = make_policy(str(out / "half" / "model.zip")).model.policy.state_dict()
    original = make_policy(str(SHIPPED_2P / "model.zip")).model.policy.state_dict()
    for name, tensor in weights.items():
        assert torch.equal(tensor, original[name].half().float()), name
    assert "`ship.py --float16`" in (out / "half" / "MODEL_CARD.md").read_text()
    assert "float16" not in (out / "ppo-2p" / "MODEL_CARD.md").read_text()
