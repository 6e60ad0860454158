"""Imitation of the exact 2-player solution (agents/training/imitation.py, issue 44
item 1): the labels are the solver's own action values (R12's oracle), the compact
record keeps exactly the legal actions' rows, the loss is the cross-entropy it says it
is, and a tiny run gives an ordinary checkpoint that plays legal moves."""

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
    _soft_cross_entropy,
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


def test_a_tiny_run_gives_a_checkpoint_that_plays_legal_moves(tmp_path):
    config = ImitationConfig(
        first_games=40, rounds=1, round_games=20, first_epochs=1, round_epochs=1,
        eval_games=20, state_layers=(16,), scorer_layers=(16, 16), torch_threads=1,
    )  # fmt: skip
    model, history = train(config, say=lambda _: None)
    assert [h["stage"] for h in history] == ["first fit", "round 1"]
    assert history[1]["decisions"] > history[0]["decisions"] > 0
    assert all(0 <= h["win_rate"] <= 1 for h in history)
    path = tmp_path / "model.zip"
    model.save(path)
    bot = make_policy(str(path))
    game = Game(2, Rules(), seed=1)
    rng = np.random.default_rng(0)
    while not game.over and game.state.turns < 50:
        if game.state.roll is None:
            game.roll()
            continue
        action = bot.act(game, rng)
        assert action in game.legal()[0]
        game.act(action)


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
