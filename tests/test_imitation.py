"""Imitation of the exact 2-player solution (agents/training/imitation.py, issue 44
item 1): the labels are the solver's own action values (R12's oracle), the compact
record keeps exactly the legal actions' rows, the loss is the cross-entropy it says it
is, and a tiny run gives an ordinary checkpoint that plays legal moves. Issue 55 item 1:
the same trainer at 3+ players, the table's planner the teacher (its action values the
labels), seats rotated in whole turn orders."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch", reason="training needs the train extra")

from fivethousand_rl.agents import make_policy  # noqa: E402
from fivethousand_rl.agents.batched import BatchedOptimalBot, optimal_values  # noqa: E402
from fivethousand_rl.agents.optimal import OptimalBot  # noqa: E402
from fivethousand_rl.agents.training.imitation import (  # noqa: E402
    Decisions,
    ImitationConfig,
    Recorder,
    _soft_cross_entropy,
    make_teacher,
    rotations,
    train,
)
from fivethousand_rl.envs.batch import BatchGames, play_batch  # noqa: E402
from fivethousand_rl.envs.encoding import ACTION_FEATURES, ObsSpec  # noqa: E402
from fivethousand_rl.envs.game import Game  # noqa: E402
from fivethousand_rl.envs.rules import NUM_ACTIONS, Rules  # noqa: E402
from fivethousand_rl.envs.vector_env import observe_batch  # noqa: E402


def positions(n_games: int = 64, seed: int = 3) -> list[tuple[BatchGames, np.ndarray]]:
    """Snapshots (games, idx) of decisions reached by optimal against itself."""
    games = BatchGames(n_games, 2, Rules())
    bot = BatchedOptimalBot(show_progress=False)
    seen = []

    class Watcher:
        name = "watcher"

        def act_batch(self, g, idx, rng):
            values = optimal_values(bot.solution(g.rules), g, idx)
            seen.extend((g.game_at(int(i)), values[k : k + 1]) for k, i in enumerate(idx))
            return bot.act_batch(g, idx, rng)

    play_batch(
        games, np.arange(n_games), [Watcher()], np.zeros((n_games, 2), dtype=np.int64),
        np.random.default_rng(seed), max_turns=1000,
    )  # fmt: skip
    return seen


def test_the_labels_are_the_solvers_action_values():
    """Every legal action's value in a batch equals OptimalBot.action_values on the same
    position (the per-game reference); illegal actions are -inf."""
    optimal = OptimalBot(show_progress=False)
    checked = 0
    for game, values in positions()[:400]:
        exact = optimal.action_values(game)
        legal = np.isfinite(values[0])
        assert set(np.flatnonzero(legal)) == set(exact)
        for action, value in exact.items():
            assert values[0, action] == pytest.approx(value, abs=1e-12)
        checked += 1
    assert checked == 400


def test_the_record_keeps_the_legal_rows_in_order():
    rules = Rules()
    spec = ObsSpec("rich", 2, rules)
    games = BatchGames(32, 2, rules)
    rng = np.random.default_rng(0)
    idx = np.arange(32)
    games.roll_dice(idx, rng)
    mask = games.legal_mask(idx)
    obs = observe_batch(games, idx, games.current[idx], mask, spec)
    values = np.where(mask, rng.random(mask.shape), -np.inf)
    n_state = spec.slices["actions"].start
    data = Decisions(n_state)
    data.add(obs, mask, values)
    states, rows, kept, starts = data.arrays()
    assert np.array_equal(states, obs[:, :n_state]) and starts[-1] == mask.sum() == len(rows)
    full = obs[:, n_state:].reshape(32, NUM_ACTIONS, ACTION_FEATURES)
    for d in range(32):
        legal = np.flatnonzero(mask[d])
        assert np.array_equal(rows[starts[d] : starts[d + 1]], full[d, legal])
        assert np.array_equal(kept[starts[d] : starts[d + 1]], values[d, legal].astype(np.float32))


def test_the_loss_is_the_cross_entropy_against_the_tempered_values():
    import torch as th

    scores = th.tensor([1.0, 2.0, 0.5, -1.0, 3.0])
    q = th.tensor([0.5, 0.52, 0.3, 0.7, 0.7])
    owner = th.tensor([0, 0, 0, 1, 1])
    loss = _soft_cross_entropy(scores, q, owner, 2, temperature=0.01)
    expected = 0.0
    for rows in ([0, 1, 2], [3, 4]):
        target = th.softmax(q[rows] / 0.01, 0)
        expected += -(target * th.log_softmax(scores[rows], 0)).sum()
    assert float(loss) == pytest.approx(float(expected) / 2, rel=1e-6)


def check_a_tiny_run(config: ImitationConfig, folder) -> list[dict]:
    """Train `config`; its stages (first fit, round 1) see more and more decisions, and
    its saved checkpoint plays legal moves at its table size. The run's stages."""
    model, history = train(config, say=lambda _: None)
    assert [h["stage"] for h in history] == ["first fit", "round 1"]
    assert history[1]["decisions"] > history[0]["decisions"] > 0
    assert all(0 <= h[key] <= 1 for h in history for key in ("win_rate", "teacher_win_rate"))
    path = folder / "model.zip"
    model.save(path)
    bot = make_policy(str(path))
    game = Game(config.players, Rules(), seed=1)
    rng = np.random.default_rng(0)
    while not game.over and game.state.turns < 50:
        if game.state.roll is None:
            game.roll()
            continue
        action = bot.act(game, rng)
        assert action in game.legal()[0]
        game.act(action)
    return history


def test_a_tiny_run_gives_a_checkpoint_that_plays_legal_moves(tmp_path):
    config = ImitationConfig(
        first_games=40, rounds=1, round_games=20, first_epochs=1, round_epochs=1,
        eval_games=20, state_layers=(16,), scorer_layers=(16, 16), torch_threads=1,
    )  # fmt: skip
    check_a_tiny_run(config, tmp_path)


def test_the_program_writes_its_run_and_refuses_to_overwrite_one(tmp_path, capsys):
    from fivethousand_rl import train_policy

    argv = [
        "--first-games", "30", "--rounds", "1", "--round-games", "10", "--eval-games", "10",
        "--first-epochs", "1", "--round-epochs", "1", "--state-layers", "8",
        "--scorer-layers", "8", "8", "--torch-threads", "1",
        "--checkpoints", str(tmp_path), "--run-name", "tiny",
    ]  # fmt: skip
    assert train_policy.main(argv) == 0
    run = tmp_path / "tiny"
    evals = json.loads((run / "evals.json").read_text())
    assert [e["stage"] for e in evals] == ["first fit", "round 1"]
    config = json.loads((run / "config.json").read_text())
    assert config["method"] == "imitation" and config["first_games"] == 30
    assert (run / "best" / "model.zip").is_file() and (run / "latest" / "model.zip").is_file()
    assert "--run-name tiny" in (run / "command.txt").read_text()
    capsys.readouterr()
    assert train_policy.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "exists" in err and "\n" not in err


@pytest.fixture
def tiny_planner(tmp_path) -> str:
    """A planner of the 3-player table (smart, turn-ev) with a tiny random value net: a
    teacher as planner-3p is, quick to plan with from cold caches."""
    from fivethousand_rl.agents.value_net import FeatureSpec, ValueNet

    spec = FeatureSpec(Rules(), table=("smart", "turn-ev"))
    rng = np.random.default_rng(0)
    weights = [rng.normal(0, 0.1, (spec.size, 8)), rng.normal(0, 0.1, (8, spec.max_players))]
    net = ValueNet(spec, weights, [np.zeros(8), np.zeros(spec.max_players)])
    return str(net.save(tmp_path / "tiny_planner.npz"))


def test_rotations_keep_the_turn_order():
    """Whole rotations only: the players after each one are the same, in the same order
    (a table planner's values hold for its own opponents in that order)."""
    seats = rotations(np.array([0, 1, 2, 3, 5, 7]), 4)
    for row in seats:
        assert sorted(row) == [0, 1, 2, 3]
        seat_of = np.argsort(row)
        assert all((seat_of[(p + 1) % 4] - seat_of[p]) % 4 == 1 for p in range(4))
    assert np.array_equal(rotations(np.array([0, 1]), 2), [[0, 1], [1, 0]])


def test_a_planner_teaches_at_its_own_table():
    teacher = make_teacher(ImitationConfig(players=3, teacher="planner-3p"))
    assert teacher.table_names == ("smart", "turn-ev")  # what its value network learned
    assert [p.name for p in teacher.table] == ["smart", "turn-ev"]
    # The labels are the planner's own action values (R12: its win probabilities).
    rules = Rules()
    games = BatchGames(32, 3, rules)
    games.roll_dice(np.arange(32), np.random.default_rng(4))
    idx = np.flatnonzero(games.legal_mask(np.arange(32)).any(axis=1))  # not the busts
    assert len(idx) > 16
    spec = ObsSpec("rich", 3, rules)
    data = Decisions(spec.slices["actions"].start)
    Recorder(teacher.player, teacher.values, spec, data, 0.0).act_batch(
        games, idx, np.random.default_rng(0)
    )
    _, _, kept, starts = data.arrays()
    expected = teacher.player.action_values_batch(games, idx)
    legal = games.legal_mask(idx)
    assert np.array_equal(kept, expected[legal].astype(np.float32)) and starts[-1] == legal.sum()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (ImitationConfig(players=3), "optimal is the exact 2-player solution"),
        (ImitationConfig(players=3, teacher="smart"), "gives no action values"),
        (ImitationConfig(players=4, teacher="planner-3p"), "planner-3p values games of 3"),
        (
            ImitationConfig(players=3, teacher="planner-3p", table=("smart",)),
            "needs 2 bots after the learner",
        ),
    ],
)
def test_a_teacher_that_cannot_teach_the_table_is_refused(config, message):
    with pytest.raises(ValueError, match=message) as refused:
        make_teacher(config)
    assert "\n" not in str(refused.value)


def test_a_tiny_three_player_run_imitates_the_planner(tmp_path, tiny_planner):
    config = ImitationConfig(
        players=3, teacher=tiny_planner, first_games=6, rounds=1, round_games=3,
        first_epochs=1, round_epochs=1, eval_games=3, state_layers=(8,), scorer_layers=(8,),
        torch_threads=1,
    )  # fmt: skip
    check_a_tiny_run(config, tmp_path)


def test_the_program_takes_a_preset_then_the_flags(tmp_path, capsys, tiny_planner):
    from fivethousand_rl import train_policy

    argv = [
        "--preset", "policy_3p", "--teacher", tiny_planner, "--first-games", "9",
        "--rounds", "0", "--eval-games", "3",
        "--first-epochs", "1", "--state-layers", "8", "--scorer-layers", "8",
        "--torch-threads", "1", "--checkpoints", str(tmp_path),
    ]  # fmt: skip
    assert train_policy.main(argv) == 0
    config = json.loads((tmp_path / "policy_3p_free_seed0" / "config.json").read_text())
    assert config["players"] == 3 and config["round_games"] == 5000  # the preset's
    assert config["first_games"] == 9 and config["teacher"] == tiny_planner  # the flags win
    assert config["preset"] == "policy_3p"
    capsys.readouterr()
    assert train_policy.main(["--preset", "nope", "--checkpoints", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: unknown preset 'nope'") and "\n" not in err


def test_a_three_player_run_ships_beside_its_teacher(tmp_path, capsys, tiny_planner):
    """ship.py's card of a 3-player imitation run: evaluated at the planner's table,
    the planner played on the same seed and games beside it (issue 55 item 1's
    comparison); no exploitability (an exact best response of 2 players only)."""
    from fivethousand_rl import ship, train_policy

    argv = [
        "--preset", "policy_3p", "--teacher", tiny_planner, "--first-games", "6", "--rounds", "0",
        "--eval-games", "3",
        "--first-epochs", "1", "--state-layers", "8", "--scorer-layers", "8",
        "--torch-threads", "1", "--checkpoints", str(tmp_path), "--run-name", "tiny3",
    ]  # fmt: skip
    assert train_policy.main(argv) == 0
    out = tmp_path / "shipped"
    out.mkdir()
    shipping = [str(tmp_path / "tiny3"), "--name", "p3", "--games", "3", "--workers", "1"]
    assert ship.main([*shipping, "--out", str(out)]) == 0
    capsys.readouterr()
    card = (out / "p3" / "MODEL_CARD.md").read_text()
    assert "One network for 3-player 5000" in card and f"imitation of `{tiny_planner}`" in card
    evaluation = json.loads((out / "p3" / "evaluation.json").read_text())
    assert {a["agent"] for a in evaluation["agents"]} >= {"smart", "turn-ev"}
    line = next(x for x in card.splitlines() if "the teacher at the same table" in x)
    assert f"python evaluate.py {tiny_planner} smart turn-ev --games 3 --players 3 --seed 0" in line
    assert "exploitability" not in card
