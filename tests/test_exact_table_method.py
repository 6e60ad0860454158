"""The exact-table method (fivethousand_rl.agents.training.value_iteration, method="exact-table"): a
best response to one table's bots by fitted value iteration over every turn start, the
bots' turns expanded exactly (envs.turn_outcomes). Checked: the agent's index in each
recorded position names the player who moves there; the exact 2-player values are a
fixed point of its targets, and a run against `optimal` learns them (an oracle); its
network reads the agent's seat (a table net: FeatureSpec version 2) and starts from a
network of no table with the same values; bad settings are refused in one line."""

import numpy as np
import pytest

from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.optimal import two_player_solution
from fivethousand_rl.agents.training.config import PlannerConfig
from fivethousand_rl.agents.training.value_iteration import (
    ValueIteration,
    bot_turn_targets,
    table_bot,
    table_games,
    to_value_net,
    torch_net,
    turn_targets,
)
from fivethousand_rl.agents.value_net import FeatureSpec, ValueNet
from fivethousand_rl.envs.batch import BatchGames, play_batch
from fivethousand_rl.envs.rules import Rules
from fivethousand_rl.envs.turn_outcomes import turn_outcomes
from fivethousand_rl.envs.turn_planner import exact_two_player_values

SMALL = Rules(target=1000, entry=300)
TABLE = ("threshold:300", "threshold:400")


def exact_config(**changes) -> PlannerConfig:
    base = dict(
        target=SMALL.target, entry=SMALL.entry, method="exact-table", players=[3],
        hidden=[16], eval_tables=[",".join(TABLE)], games_per_iteration=3, fit_steps=5,
        iterations=2,
    )  # fmt: skip
    return PlannerConfig(**{**base, **changes})


@pytest.mark.parametrize("seed", range(4))
def test_the_agents_index_names_who_moves(seed):
    """Oracle: the games replayed with the same draws, one decision at a time through
    ``Game`` (each game's seat and first player drawn as table_games draws them). At
    each recorded turn start the position is the scores in turn order from the mover,
    and the agent's index in it says who the mover is: the planner at 0, else the bot
    `table_bot` names."""
    spec = FeatureSpec(SMALL, table=TABLE)
    planner = to_value_net(torch_net(spec, (8,), seed), spec).planner()
    n_games = 4
    seen = table_games(planner, TABLE, SMALL, 0.0, n_games, np.random.default_rng(seed))
    rng = np.random.default_rng(seed)
    seats, first = rng.integers(3, size=n_games), rng.integers(3, size=n_games)
    games = BatchGames(n_games, 3, SMALL)
    games.current[:] = first
    starts: list[tuple[int, int, tuple[int, ...]]] = []  # (game, mover, scores)

    def record(idx, movers, before, _rolls):
        for g, mover, total in zip(idx, movers, before, strict=True):
            if total == 0:
                starts.append((int(g), int(mover), tuple(int(x) for x in games.scores[g])))

    names = [{(s + 1 + i) % 3: name for i, name in enumerate(TABLE)} for s in seats]
    seat_policy = np.array([[0 if s == seat else 1 + TABLE.index(n[s]) for s in range(3)]
                            for seat, n in zip(seats, names, strict=True)])  # fmt: skip
    policies = [planner, *(make_policy(name) for name in TABLE)]
    play_batch(
        games, np.arange(n_games), policies, seat_policy, rng, max_turns=1000, on_roll=record
    )
    assert len(seen) == len(starts) > 3 * n_games
    for (position, agent), (g, mover, scores) in zip(seen, starts, strict=True):
        assert position == scores[mover:] + scores[:mover]
        assert (mover - seats[g]) % 3 == (3 - agent) % 3
        if agent:
            assert table_bot(TABLE, 3, agent).name == names[g][mover]


def test_the_exact_values_are_a_fixed_point_of_the_targets():
    """2 players against `optimal` (a shrunken game): valued by the exact solution,
    every bot turn's target and every planner turn's target is the solution's value."""
    sol = two_player_solution(SMALL, show_progress=False)
    exact = exact_two_player_values(sol)

    def values(positions, agent=None):  # the same for both seats: both play optimally
        return exact(positions)

    keys = [(int(a), int(b)) for a in sol.scores for b in sol.scores[::2]]
    outcomes = [turn_outcomes(table_bot(("optimal",), 2, 1), k, SMALL) for k in keys]
    bots = bot_turn_targets(values, outcomes, np.ones(len(keys), dtype=np.int64))
    plans = turn_targets(keys, SMALL, exact)
    for key, bot, plan in zip(keys, bots, plans, strict=True):
        v = exact(np.array([key]))[0]
        np.testing.assert_allclose(bot, v, atol=1e-9)
        np.testing.assert_allclose(plan, v, atol=1e-9)


def test_a_run_against_optimal_learns_the_exact_values():
    """Oracle: against `optimal` the best response is optimal play, so the values the
    run fits approach the exact 2-player solution, for either player to move."""
    sol = two_player_solution(SMALL, show_progress=False)
    a, b = np.meshgrid(sol.scores, sol.scores, indexing="ij")
    positions = np.stack([a.ravel(), b.ravel()], axis=1)
    cfg = exact_config(
        players=[2], eval_tables=["optimal"], hidden=[32], games_per_iteration=10,
        epsilon=0.2, fit_steps=300, learning_rate=3e-3, targets_per_iteration=10_000,
    )  # fmt: skip
    cfg.validate()
    trainer = ValueIteration(cfg)

    def error(agent: int) -> float:
        v = trainer.net(positions, np.full(len(positions), agent))[:, 0]
        return float(np.abs(v - sol.V.ravel()).mean())

    gaps = [trainer.iterate()["target_gap"] for _ in range(12)]
    assert max(error(0), error(1)) < 0.04  # a random network is off by about 0.1 to 0.3
    assert gaps[-1] < gaps[0] / 2  # the values near the fixed point of their targets


def test_a_table_net_reads_the_agents_seat_and_keeps_its_table(tmp_path):
    spec = FeatureSpec(SMALL, table=TABLE)
    plain = FeatureSpec(SMALL)
    assert spec.size == plain.size + spec.max_players and spec.version == 2
    assert spec.players == (3,) and FeatureSpec.from_dict(spec.to_dict()) == spec
    positions = np.array([[300, 0, 900], [500, 700, 0]])
    x, _ = spec.encode(positions, np.array([0, 2]))
    np.testing.assert_array_equal(x[:, plain.size :][:, :3], [[1, 0, 0], [0, 0, 1]])
    # by default the agent is the last in turn order (the ends of its own turn)
    np.testing.assert_array_equal(spec.encode(positions)[0], spec.encode(positions, [2, 2])[0])
    net = to_value_net(torch_net(spec, (8,), 0), spec)
    loaded = ValueNet.load(net.save(tmp_path / "table.npz"))
    assert loaded.spec == spec
    with pytest.raises(ValueError, match="values games of 3 players, not 4"):
        loaded.planner().check_game(4, SMALL)
    with pytest.raises(ValueError, match="only a net of one table"):
        plain.encode(positions, np.array([0, 0]))
    bad = {**spec.to_dict(), "version": 1}
    with pytest.raises(ValueError, match="this code reads 2"):
        FeatureSpec.from_dict(bad)


def test_a_run_starts_from_a_network_of_no_table_with_its_values(tmp_path):
    plain = FeatureSpec(SMALL)
    start = to_value_net(torch_net(plain, (16,), 3), plain)
    path = start.save(tmp_path / "start.npz")
    trainer = ValueIteration(exact_config(init=str(path)))
    positions = np.array([[300, 0, 900], [500, 700, 0], [0, 0, 0]])
    for agent in range(3):
        np.testing.assert_allclose(
            trainer.net(positions, np.full(3, agent)), start(positions), atol=1e-6
        )
    stats = trainer.iterate()
    assert stats["players"] == 3 and stats["positions"] > 0 and trainer.outcomes


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"eval_tables": ["random,smart"]}, "deterministic scripted ones"),
        (
            {"players": [3, 4], "eval_tables": ["smart,turn-ev", "smart,turn-ev,smart"]},
            "learns one table",
        ),
        ({"players": [4]}, "--players must name them"),
        ({"sweeps": 0}, "sweeps must be"),
        ({"sweeps": 2, "method": "self-play"}, "passes of the exact-table method"),
        ({"method": "table"}, "method must be self-play or exact-table"),  # issue 29 item 1
        # checks the removed table method's tests made, kept for this method
        ({"workers": 0}, "workers must be"),
        ({"init": "missing.npz"}, "cannot load a value net"),
        ({"opponents": ["smart"], "opponent_share": 0.5}, "no opponents"),
    ],
)
def test_bad_exact_table_settings_are_refused_in_one_line(changes, message):
    with pytest.raises(ValueError, match=message) as e:
        exact_config(**changes).validate()
    assert "\n" not in str(e.value)


def test_a_resumed_run_no_longer_needs_its_init_network(tmp_path):
    from fivethousand_rl import train_planner

    start = to_value_net(torch_net(FeatureSpec(SMALL), (16,), 7), FeatureSpec(SMALL))
    start = start.save(tmp_path / "start.npz")
    argv = [
        "--target", "1000", "--entry", "300", "--hidden", "16", "--iterations", "4",
        "--games-per-iteration", "2", "--fit-steps", "5", "--eval-freq", "0",
        "--checkpoint-freq", "2", "--method", "exact-table", "--players", "3",
        "--eval-tables", ",".join(TABLE), "--eval-games", "6", "--no-progress",
        "--init", str(start), "--checkpoints", str(tmp_path), "--run-name", "r",
    ]  # fmt: skip
    assert train_planner.main([*argv, "--stop-after", "2"]) == 0
    start.unlink()
    resume = ["--resume", str(tmp_path / "r"), "--workers", "2", "--no-progress"]
    assert train_planner.main(resume) == 0
