"""train_planner.py: the planner agent's run machinery (issue 11 item 3): a run folder,
exact resume, evaluations, and bad input refused in one line with nothing written."""

import hashlib
import json

import numpy as np
import pytest

import fivethousand_rl.agents.shipped
from fivethousand_rl import train_planner
from fivethousand_rl.agents.training.config import (
    PlannerConfig,
    load_preset,
    make_config,
    read_run_config,
    read_saved_state,
)
from fivethousand_rl.agents.training.value_iteration import table_label
from fivethousand_rl.agents.value_net import ValueNet

# A shrunken game (R10 scores to 1000, entry 300) and a tiny network: seconds per run.
TINY = [
    "--target", "1000", "--entry", "300", "--hidden", "8", "--iterations", "4",
    "--games-per-iteration", "2", "--fit-steps", "5", "--eval-freq", "2",
    "--eval-games", "20", "--checkpoint-freq", "2", "--eval-tables", "threshold:300",
    "--no-progress",
]  # fmt: skip


def train(tmp_path, *argv: str) -> int:
    return train_planner.main([*TINY, "--checkpoints", str(tmp_path), *argv])


def folder_hash(path) -> str:
    digest = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(str(f.relative_to(path)).encode() + f.read_bytes())
    return digest.hexdigest()


def weights(path) -> list[np.ndarray]:
    net = ValueNet.load(path)
    return net.weights + net.biases


def without_clock(evals: list[dict]) -> list[dict]:
    return [{k: v for k, v in e.items() if k != "wall_seconds"} for e in evals]


EXACT_TABLE = ["--method", "exact-table", "--sweeps", "2", "--workers", "2"]
BEST_RESPONSE = ["--method", "best-response", "--batch-size", "16"]


@pytest.mark.parametrize(
    "method",
    [[], EXACT_TABLE, BEST_RESPONSE],
    ids=["self-play", "exact-table", "best-response"],
)
def test_a_run_stopped_and_resumed_equals_an_uninterrupted_one(tmp_path, method):
    assert train(tmp_path, "--run-name", "straight", *method) == 0
    assert train(tmp_path, "--run-name", "pieces", "--stop-after", "2", *method) == 0
    pieces = tmp_path / "pieces"
    assert json.loads((pieces / "evals.json").read_text())[-1]["iteration"] == 2
    assert train_planner.main(["--resume", str(pieces), "--no-progress"]) == 0
    straight = tmp_path / "straight"
    for name in ("latest/value_net.npz", "best/value_net.npz"):
        for a, b in zip(weights(straight / name), weights(pieces / name), strict=True):
            np.testing.assert_array_equal(a, b)
    evals = [json.loads((run / "evals.json").read_text()) for run in (straight, pieces)]
    assert without_clock(evals[0]) == without_clock(evals[1])
    assert [e["iteration"] for e in evals[0]] == [2, 4]


def buffered(run) -> tuple[dict, list]:
    """The buffer of a run's latest state (key -> iteration last seen) and the bots'
    turn ends it holds."""
    trainer = read_saved_state(run, train_planner.STATE_KEYS)["trainer"]
    return {json.dumps(key): it for key, it in trainer["buffer"]}, trainer["outcomes"]


def test_a_new_run_can_start_from_another_runs_buffer(tmp_path):
    assert train(tmp_path, "--run-name", "first", "--stop-after", "2", *EXACT_TABLE) == 0
    first, first_ends = buffered(tmp_path / "first")
    assert first and first_ends
    argv = ["--run-name", "again", "--iterations", "1", "--checkpoint-freq", "1", "--seed", "5"]
    argv += ["--buffer-from", "first", "--learning-rate", "0.01"]
    assert train(tmp_path, *argv, *EXACT_TABLE) == 0
    again, again_ends = buffered(tmp_path / "again")
    assert set(first) <= set(again)  # every position the first run met, and its own games'
    assert len(again) > len(first)
    assert [e[:2] for e in first_ends] == [e[:2] for e in again_ends][: len(first_ends)]
    assert read_run_config(tmp_path / "again", PlannerConfig).buffer_from == "first"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--buffer-from", "nowhere"], "--buffer-from nowhere: no run there"),
        (["--buffer-from", "first", "--eval-tables", "threshold:350"], "that run's eval_tables"),
        (["--buffer-from", "first", "--method", "self-play", "--sweeps", "1"], "that run's method"),
    ],
)
def test_a_buffer_from_another_game_is_refused_with_nothing_written(
    tmp_path, capsys, argv, message
):
    assert train(tmp_path, "--run-name", "first", "--stop-after", "2", *EXACT_TABLE) == 0
    assert train(tmp_path, "--run-name", "second", *EXACT_TABLE, *argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
    assert not (tmp_path / "second").exists()


def test_the_run_folder_records_what_was_done(tmp_path):
    assert train(tmp_path, "--run-name", "r", "--seed", "3") == 0
    run = tmp_path / "r"
    config = read_run_config(run, PlannerConfig)
    assert config.seed == 3 and config.target == 1000 and config.hidden == [8]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["iterations"] == 4 and summary["games"] == 8
    evaluation = summary["last_eval"]["results"]["2p:threshold:300"]
    assert evaluation["games"] == 20 and 0 <= evaluation["win_rate"] <= 1
    assert summary["last_eval"]["exact_error"] is not None  # 2 players: the yardstick
    assert "train_planner.py" in (run / "command.txt").read_text()
    assert any((run / "tb").iterdir())
    # issue 29 item 1: no per-iteration networks (ship.py's weight averaging is gone)
    assert sorted(p.name for p in run.iterdir()) == [
        "best", "command.txt", "config.json", "evals.json", "latest", "summary.json", "tb"
    ]  # fmt: skip


def test_the_best_response_method_learns_the_exact_values_where_the_planner_reads(tmp_path, capsys):
    """The best-response method's targets are the exact best response's values after the
    agent's turn (R1-R12 on a shrunken game, 3 players): a net fitted to them values
    the ends of the agent's turn as the best response does, and plays no game to learn."""
    from fivethousand_rl.agents import make_policy
    from fivethousand_rl.agents.best_response import best_response

    argv = ["--target", "800", "--players", "3", "--eval-tables", "smart,turn-ev"]
    argv += ["--iterations", "3", "--fit-steps", "400", "--batch-size", "64", "--hidden", "32"]
    argv += ["--learning-rate", "0.01", "--method", "best-response", "--run-name", "br"]
    assert train(tmp_path, *argv) == 0
    run = tmp_path / "br"
    config = read_run_config(run, PlannerConfig)
    br = best_response(["smart", "turn-ev"], config.rules, make_policy, False)
    net = ValueNet.load(run / "latest" / "value_net.npz")
    positions = br.space.positions()
    exact = br.value_fn()(positions)  # bot 0 to move, the agent last in turn order
    error = np.abs(net(positions) - exact).mean()
    uniform = np.abs(1 / 3 - exact).mean()  # what knowing nothing would miss by
    assert error < min(0.02, uniform / 5), (error, uniform)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["games"] == 0
    # a net of one table is played at its table: the human takes the first bot's place
    hint = capsys.readouterr().out.split("play against it: ")[1].split()
    seats = hint[hint.index("--opponents") + 1 :][:2]
    assert seats[0].endswith("value_net.npz") and seats[1] == "turn-ev"


def test_resuming_a_finished_run_changes_nothing(tmp_path, capsys):
    assert train(tmp_path, "--run-name", "done") == 0
    before = folder_hash(tmp_path / "done")
    assert train_planner.main(["--resume", str(tmp_path / "done"), "--no-progress"]) == 0
    assert folder_hash(tmp_path / "done") == before
    assert "already complete" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["--players", "1"],
        ["--players", "9"],
        ["--epsilon", "2"],
        ["--opponent-share", "0.5"],  # and no opponents
        ["--opponents", "nobot"],
        ["--eval-tables", "smart,nobot"],
        ["--hold", "some"],
        ["--target", "150"],
        ["--entry", "0"],
        ["--preset", "nope"],
        ["--preset", "../hyperparams/quick"],
        ["--run-name", "../outside"],
        ["--run-name", ""],
        ["--stop-after", "0"],
        ["--iterations", "0"],
        ["--seed", "-1"],
        ["--learning-rate", "nan"],
        # the best-response method: one table of 2 or 3 players, deterministic bots
        ["--method", "best-response", "--players", "4", "--eval-tables", "smart,smart,smart"],
        ["--method", "best-response", "--eval-tables", "random"],
        ["--method", "best-response", "--eval-tables", "smart", "turn-ev"],
    ],
)
def test_bad_settings_are_refused_in_one_line_with_nothing_written(tmp_path, capsys, argv):
    assert train(tmp_path, *argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err
    assert not any(tmp_path.iterdir())


def test_resume_refuses_other_flags_and_damaged_checkpoints(tmp_path, capsys):
    assert train(tmp_path, "--run-name", "r", "--stop-after", "2") == 0
    run = tmp_path / "r"
    assert train_planner.main(["--resume", str(run), "--players", "3"]) == 2
    assert "takes only" in capsys.readouterr().err
    (run / "latest" / "state.pkl").write_bytes(b"garbage")
    before = folder_hash(run)
    assert train_planner.main(["--resume", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert "unreadable" in err and "\n" not in err
    assert folder_hash(run) == before
    (run / "config.json").write_text("[1, 2]")
    assert train_planner.main(["--resume", str(run)]) == 2
    assert "JSON object" in capsys.readouterr().err


@pytest.mark.parametrize(
    "values, message",
    [
        ({"players": 2}, "players must be a list of integers"),
        ({"iterations": 1.5}, "iterations must be an integer"),
        ({"epsilon": "high"}, "epsilon must be a number"),
        ({"hidden": [8, True]}, "hidden must be a list of integers"),
        ({"colour": "red"}, "unknown key 'colour'"),
    ],
)
def test_presets_and_saved_configs_are_typed(values, message):
    with pytest.raises(ValueError, match=message):
        make_config(values, PlannerConfig, "preset x.yaml")


@pytest.mark.parametrize(
    "text, message",
    [
        ("players: [2]\nlam: 0.8\nrollouts: 0\n", None),
        (
            "method: table\nplayers: [3, 4, 6]\n",
            "uses --method table, removed (see the git history)",
        ),
        ("rollouts: 3\n", "uses --rollouts 3, removed (see the git history)"),
    ],
)
def test_a_preset_naming_removed_settings_loads_if_unused_else_is_refused(tmp_path, text, message):
    """Issue 29 item 1: a preset written for the removed table method."""
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    if message is None:
        assert load_preset(str(path), PlannerConfig).players == [2]
    else:
        with pytest.raises(ValueError) as e:
            load_preset(str(path), PlannerConfig)
        assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    "removed, message",
    [
        ({"lam": 0.8, "rollouts": 0}, None),  # as every exact-table run before issue 29 saved
        ({"method": "table", "lam": 0.7}, "uses --method table, removed (see the git history)"),
        ({"rollouts": 3}, "uses --rollouts 3, removed (see the git history)"),
    ],
)
def test_an_old_runs_removed_settings_are_dropped_if_unused_else_refused(
    tmp_path, capsys, removed, message
):
    """Issue 29 item 1: the table method (TD(lambda) returns, rollouts) is gone; a run
    whose config.json still names its settings resumes if it did not use them, else is
    refused in one line naming what it used, with nothing written."""
    assert train(tmp_path, "--run-name", "old", "--stop-after", "2") == 0
    run = tmp_path / "old"
    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**config, **removed}))
    before = folder_hash(run)
    code = train_planner.main(["--resume", str(run), "--no-progress"])
    err = capsys.readouterr().err.strip()
    if message is None:
        state = read_saved_state(run, train_planner.STATE_KEYS)
        assert code == 0 and state["trainer"]["iteration"] == 4
    else:
        assert code == 2 and message in err and "\n" not in err
        assert folder_hash(run) == before


@pytest.mark.parametrize(
    "preset, players, method",
    [
        ("planner_2p", [2], "self-play"),
        ("planner_multi", [3, 4, 6], "self-play"),
        ("planner_table_4p", [4], "exact-table"),
        ("planner_table_3p", [3], "exact-table"),
        ("planner_table_6p", [6], "exact-table"),
        ("planner_table_3p_br", [3], "best-response"),
    ],
)
def test_the_shipped_presets_load_and_validate(preset, players, method):
    config = load_preset(preset, PlannerConfig)
    config.validate()
    assert (config.preset, config.players, config.method) == (preset, players, method)


@pytest.mark.parametrize(
    "players, labels",
    [
        ([3], ["3p:smart,turn-ev"]),
        ([4], ["4p:smart,turn-ev,threshold:350"]),
        ([6], ["6p:smart,turn-ev,smart,turn-ev,threshold:350"]),
        ([5], ["5p:smart,turn-ev,smart,threshold:350"]),
    ],
)
def test_default_evaluation_tables_are_the_issues_tables(players, labels):
    assert [table_label(t) for t in PlannerConfig(players=players).tables] == labels


def test_the_2_player_tables_never_depend_on_the_files_there(tmp_path, monkeypatch, capsys):
    """Issue 29 item 2: the shipped ppo-2p is always one of the default 2-player tables
    (as in every shipped run); when it is missing, the run is refused before any work."""
    assert [table_label(t) for t in PlannerConfig().tables] == [
        "2p:optimal",
        "2p:smart",
        "2p:ppo-2p",
    ]
    monkeypatch.setattr(
        fivethousand_rl.agents.shipped, "data_folder", lambda name: tmp_path / "gone"
    )
    argv = ["--players", "2", "--iterations", "1", "--checkpoints", str(tmp_path / "runs")]
    assert train_planner.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "'ppo-2p' is missing its model" in err and "gone/ppo-2p/model.zip" in err
    assert "--eval-tables" in err and "\n" not in err
    assert not (tmp_path / "runs").exists()
