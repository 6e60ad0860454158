"""sweep.py: the search space and its checks (no Ray needed), and a two-trial sweep of a
few thousand steps on a local Ray of 2 CPUs that writes its results table."""

from __future__ import annotations

import csv
import json

import pytest

pytest.importorskip("ray")

from fivethousand_rl import (
    sweep,  # noqa: E402
    train,  # noqa: E402
)

TINY = [
    "n_timesteps=2048",
    "n_envs=4",
    "n_steps=128",
    "batch_size=256",
    "eval_freq=1024",
    "checkpoint_freq=1024",
    "eval_episodes=10",
    "eval_opponents=[smart]",
]


@pytest.mark.parametrize(
    "item, expected",
    [
        ("learning_rate=1e-4,3e-4", ("learning_rate", [1e-4, 3e-4])),
        ("n_epochs=2, 4", ("n_epochs", [2, 4])),
        ("opponents=[[smart], [smart, turn-ev]]", ("opponents", [["smart"], ["smart", "turn-ev"]])),
    ],
)
def test_grid_values_are_read_as_yaml(item, expected):
    assert sweep.parse_grid(item) == expected


@pytest.mark.parametrize(
    "item, expected",
    [
        ("learning_rate=loguniform:1e-5:1e-3", ("learning_rate", "loguniform", [1e-5, 1e-3])),
        ("ent_coef=uniform:0:0.02", ("ent_coef", "uniform", [0, 0.02])),
        ("n_epochs=randint:2:6", ("n_epochs", "randint", [2, 6])),
        ("activation=choice:relu,tanh", ("activation", "choice", ["relu", "tanh"])),
    ],
)
def test_sample_distributions(item, expected):
    assert sweep.parse_sample(item) == expected


def test_randint_includes_both_ends_and_the_grid_covers_seeds():
    from ray import tune

    space = sweep.build_space(
        sweep.SweepArgs(grid=["n_epochs=2,4"], sample=["batch_size=randint:1:3"], seeds=[0, 1])
    )
    tuned = space.tune_space(tune)
    assert (tuned["batch_size"].lower, tuned["batch_size"].upper) == (1, 4)  # Tune: high excluded
    assert tuned["seed"] == tune.grid_search([0, 1])
    assert space.trials == 4 and space.varied == ["n_epochs", "batch_size", "seed"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--grid", "learning_rate"], "--grid takes KEY=V1,V2"),
        (["--grid", "no_such_key=1,2"], "unknown key 'no_such_key'"),
        (["--grid", "learning_rate=1e-4,-1"], "learning_rate must be"),
        (["--grid", "n_epochs=2,two"], "n_epochs must be an integer"),
        (["--sample", "learning_rate=normal:0:1", "--samples", "2"], "--sample takes KEY=DIST"),
        (["--sample", "learning_rate=uniform:1:0", "--samples", "2"], "LOW < HIGH"),
        (["--sample", "learning_rate=loguniform:0:1", "--samples", "2"], "loguniform needs LOW"),
        (["--sample", "ent_coef=uniform:-1:0.1", "--samples", "2"], "ent_coef must be"),
        (["--sample", "activation=choice:relu,sigmoid", "--samples", "2"], "activation must be"),
        (["--grid", "seed=1,2"], "seeds are given with --seeds"),
        (["--seeds", "0", "0"], "--seeds must be distinct"),
        ([], "nothing to sweep"),
        (["--grid", "n_epochs=2,4", "--samples", "3"], "give at least one --sample"),
        (["--grid", "n_epochs=2,4", "--preset", "nope"], "unknown preset 'nope'"),
        (["--grid", "n_epochs=2,4", "--name", "../out"], "plain folder name"),
        (["--grid", "n_epochs=2,4", "--reduction-factor", "1"], "--reduction-factor"),
        (["--grid", "n_epochs=2,4", "--ray", "127.0.0.1:1"], "cannot reach a Ray cluster"),
        (["--grid", "n_epochs=2,4", "--ray", "nonsense"], "give HOST:PORT"),
        (["--resume", "no_such_sweep"], "no sweep at no_such_sweep"),
    ],
)
def test_bad_sweeps_are_refused_in_one_line_and_write_nothing(tmp_path, capsys, argv, message):
    code = sweep.main([*argv, "--checkpoints", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("error: ") and message in err and "\n" not in err
    assert list(tmp_path.iterdir()) == []


def test_resume_takes_no_new_settings(tmp_path, capsys):
    folder = tmp_path / "sweeps" / "s"
    folder.mkdir(parents=True)
    (folder / "sweep.json").write_text("{}")
    code = sweep.main(["--resume", "s", "--checkpoints", str(tmp_path), "--grid", "n_epochs=1,2"])
    assert code == 2 and "takes only --ray" in capsys.readouterr().err


@pytest.fixture(scope="module")
def finished_sweep(tmp_path_factory):
    """A grid of two learning rates, 2,048 steps each, on a private Ray of 2 CPUs."""
    root = tmp_path_factory.mktemp("sweeps")
    argv = ["--preset", "quick", "--grid", "learning_rate=1e-4,3e-4", "--params", *TINY]
    argv += ["--checkpoints", str(root), "--cpus", "2", "--no-progress", "--name", "lr"]
    code = sweep.main(argv)
    return code, root / "sweeps" / "lr"


def test_a_two_trial_sweep_writes_its_table_and_ordinary_runs(finished_sweep):
    code, folder = finished_sweep
    assert code == 0
    rows = list(csv.DictReader((folder / "results.csv").read_text().splitlines()))
    assert sorted(r["learning_rate"] for r in rows) == ["0.0001", "0.0003"]
    rates = [float(r["best_win_rate"]) for r in rows]
    assert rates == sorted(rates, reverse=True) and all(0 <= r <= 1 for r in rates)
    assert (folder / "results.md").read_text().count("| t00") == 2
    assert (folder / "curves.png").stat().st_size > 0
    assert json.loads((folder / "sweep.json").read_text())["grid"] == ["learning_rate=1e-4,3e-4"]
    for row in rows:
        run = folder / "runs" / row["trial"]
        config = json.loads((run / "config.json").read_text())
        assert config["learning_rate"] == float(row["learning_rate"])
        assert config["n_timesteps"] == 2048
        assert list((run / "tb").rglob("events.out.tfevents*"))  # TensorBoard logs
        evals = json.loads((run / "evals.json").read_text())
        assert max(e["mean_win_rate"] for e in evals) == pytest.approx(float(row["best_win_rate"]))
        assert row["status"] in ("finished", "stopped early")
        if row["status"] == "finished":
            assert int(row["steps"]) >= 2048 and (run / "summary.json").exists()


def test_a_trial_run_continues_with_train_resume(finished_sweep, capsys):
    _, folder = finished_sweep
    run = next(p for p in (folder / "runs").iterdir() if (p / "summary.json").exists())
    assert train.main(["--resume", str(run), "--n-timesteps", "2560", "--no-progress"]) == 0
    assert json.loads((run / "summary.json").read_text())["steps"] >= 2560


@pytest.mark.parametrize("saved", ["{}", "not json", '{"preset": 3}'])
def test_a_damaged_sweep_json_is_refused_in_one_line(tmp_path, capsys, saved):
    folder = tmp_path / "sweeps" / "s"
    folder.mkdir(parents=True)
    (folder / "sweep.json").write_text(saved)
    assert sweep.main(["--resume", "s", "--checkpoints", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: cannot read") and "\n" not in err
    assert sorted(p.name for p in folder.iterdir()) == ["sweep.json"]
