"""The planner's table method (agents.training.value_iteration, method="table"): a best
response to the bots of fixed tables, learned from TD(lambda) returns of games there.
The returns are checked against their definition, game by game; the samples do not
depend on the number of worker processes; a run can start from a saved network. Rollout
targets (rollouts=K) are checked against the exact 2-player values (an oracle), and for
where a rollout stops and how its plan is turned into the position's order."""

import numpy as np
import pytest

from agents import make_policy
from agents.planner import PlannerBot
from agents.training.value_iteration import (
    PlannerConfig,
    ValueIteration,
    play_table_games,
    rollout_target,
    rollout_targets,
    table_returns,
    to_value_net,
    torch_net,
)
from agents.value_net import FeatureSpec
from envs.driver import play
from envs.game import ROLL, Game
from envs.rules import NUM_DICE, Rules
from envs.turn_planner import plan_turn

SMALL = Rules(target=1000, entry=300)
TABLE = ("threshold:300", "threshold:400")  # two bots after the planner's seat


def net(seed: int = 0, hidden=(16,)):
    spec = FeatureSpec(SMALL)
    return to_value_net(torch_net(spec, hidden, seed), spec)


def scores_ok(position) -> bool:
    """A turn start's scores: 0, or entered and under the target (R8, R10)."""
    return all(s == 0 or (SMALL.entry <= s < SMALL.target and s % 100 == 0) for s in position)


@pytest.mark.parametrize("seed", range(6))
def test_returns_follow_their_definition(seed):
    """lambda = 1: every target is the winner's one-hot (order from the seat after the
    planner); lambda = 0: the planner's own expectation at its next turn start; in
    between, the recursion G_t = (1 - lambda) planned_t + lambda G_{t+1}. The game does
    not depend on lambda (same seed, same positions)."""
    value = net(seed)
    outcome = table_returns(value, TABLE, SMALL, 1.0, seed)
    planned = table_returns(value, TABLE, SMALL, 0.0, seed)
    mixed = table_returns(value, TABLE, SMALL, 0.6, seed)
    assert outcome and [p for p, _ in outcome] == [p for p, _ in planned] == [p for p, _ in mixed]
    winner = outcome[-1][1]
    assert sorted(winner) == [0.0, 0.0, 1.0]
    for (position, o), (_, z), (_, m) in zip(outcome, planned, mixed, strict=True):
        assert len(position) == 3 and scores_ok(position)
        np.testing.assert_array_equal(o, winner)
        assert z.sum() == pytest.approx(1.0) and (z >= 0).all()
        assert m.sum() == pytest.approx(1.0)
    ret = winner
    for t in range(len(mixed) - 1, -1, -1):
        if t < len(mixed) - 1 or not np.array_equal(planned[t][1], winner):
            ret = 0.4 * planned[t][1] + 0.6 * ret
        np.testing.assert_allclose(mixed[t][1], ret, atol=1e-12)


def replayed(value, seed: int) -> tuple[int, list, list]:
    """The game of ``table_returns(value, TABLE, SMALL, lam, seed)`` played again here
    (same draws in the same order): the planner's seat, every turn start as (mover,
    scores by seat), and the winner's seat."""
    rng = np.random.default_rng(seed)
    seat = int(rng.integers(3))
    policies = [value.planner()] * 3
    for i, name in enumerate(TABLE):
        policies[(seat + 1 + i) % 3] = make_policy(name)
    game = Game(3, SMALL, seed=rng, first_player=int(rng.integers(3)))
    starts = []

    def record(g, _event):
        s = g.state
        if s.phase == ROLL and s.turn_total == 0 and not s.held:
            starts.append((s.current, list(s.scores)))

    play(game, policies, rng, on_event=record)
    return seat, starts, game.state.winner


@pytest.mark.parametrize("seed", range(8))
def test_positions_and_targets_are_seen_from_the_seat_after_the_planner(seed):
    """Oracle: the game replayed. Each position is the scores in turn order from the
    seat after the planner's (where its value function reads them, the planner last);
    lambda = 1 puts the win on the winner's index in that order; lambda = 0 is the
    planner's exact expectation at its next turn start, rotated to that order."""
    value = net(seed)
    seat, starts, winner = replayed(value, seed)
    nxt = (seat + 1) % 3
    after = [tuple(sc[nxt:] + sc[:nxt]) for mover, sc in starts if mover == nxt]
    outcome = table_returns(value, TABLE, SMALL, 1.0, seed)
    assert [p for p, _ in outcome] == after
    assert all(int(np.argmax(t)) == (winner - nxt) % 3 for _, t in outcome)
    planned = table_returns(value, TABLE, SMALL, 0.0, seed)
    following, seen_after = [], False  # the planner's turn starts that follow its turns
    for mover, scores in starts:
        seen_after |= mover == nxt
        if mover == seat and seen_after:
            following.append(tuple(scores[seat:] + scores[:seat]))
    assert len(following) in (len(after) - 1, len(after))
    for (_, target), start in zip(planned, following, strict=False):
        expected = plan_turn(start, SMALL, value).probabilities[0, NUM_DICE]
        np.testing.assert_allclose(target, np.roll(expected, -1), atol=1e-12)
    if len(following) < len(after):  # a bot won before the planner's next turn
        np.testing.assert_array_equal(planned[-1][1], outcome[-1][1])


def test_samples_do_not_depend_on_the_number_of_workers():
    value = net(1)
    one = PlannerConfig(target=SMALL.target, entry=SMALL.entry, lam=0.7, workers=1)
    two = PlannerConfig(target=SMALL.target, entry=SMALL.entry, lam=0.7, workers=2)
    seeds = [11, 12, 13, 14, 15]
    a, b = play_table_games(one, value, TABLE, seeds), play_table_games(two, value, TABLE, seeds)
    assert len(a) == len(b) > 5
    for (pa, ta), (pb, tb) in zip(a, b, strict=True):
        assert pa == pb
        np.testing.assert_array_equal(ta, tb)


def table_config(**changes) -> PlannerConfig:
    base = dict(
        target=SMALL.target, entry=SMALL.entry, method="table", players=[3], hidden=[16],
        eval_tables=[",".join(TABLE)], games_per_iteration=3, fit_steps=5, iterations=2,
    )  # fmt: skip
    return PlannerConfig(**{**base, **changes})


def test_a_run_starts_from_a_saved_network(tmp_path):
    saved = net(5).save(tmp_path / "start.npz")
    trainer = ValueIteration(table_config(init=str(saved)))
    for a, b in zip(trainer.net.weights, net(5).weights, strict=True):
        np.testing.assert_array_equal(a, b)
    stats = trainer.iterate()
    assert stats["players"] == 3 and stats["positions"] > 0


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"method": "td"}, "method must be"),
        ({"eval_tables": ["threshold:300", "threshold:400"]}, "one table per size"),
        ({"lam": 1.5}, "lam must be"),
        ({"workers": 0}, "workers must be"),
        ({"init": "missing.npz"}, "cannot load a value net"),
        ({"players": [4]}, "--players must name them"),
        ({"opponents": ["smart"], "opponent_share": 0.5}, "no opponents"),
        ({"eval_tables": ["threshold:300,x.zip"], "workers": 2}, "scripted bots only"),
    ],
)
def test_bad_table_settings_are_refused_in_one_line(changes, message):
    with pytest.raises(ValueError, match=message) as e:
        table_config(**changes).validate()
    assert "\n" not in str(e.value)


def test_a_network_of_other_sizes_is_refused(tmp_path):
    saved = net(0, hidden=(8,)).save(tmp_path / "other.npz")
    with pytest.raises(ValueError, match="hidden layers") as e:
        table_config(init=str(saved)).validate()
    assert "\n" not in str(e.value)


def test_a_resumed_run_no_longer_needs_its_init_network(tmp_path):
    import train_planner

    start = net(7).save(tmp_path / "start.npz")
    argv = [
        "--target", "1000", "--entry", "300", "--hidden", "16", "--iterations", "4",
        "--games-per-iteration", "2", "--fit-steps", "5", "--eval-freq", "0",
        "--checkpoint-freq", "2", "--method", "table", "--players", "3",
        "--eval-tables", ",".join(TABLE), "--eval-games", "6", "--no-progress",
        "--init", str(start), "--checkpoints", str(tmp_path), "--run-name", "r",
    ]  # fmt: skip
    assert train_planner.main([*argv, "--stop-after", "2"]) == 0
    start.unlink()
    resume = ["--resume", str(tmp_path / "r"), "--workers", "2", "--no-progress"]
    assert train_planner.main(resume) == 0


# ---------------------------------------------------------------- rollout targets
def test_rollout_targets_are_unbiased_against_the_exact_values():
    """An oracle for rollout targets (2 players, a shrunken game): with the exact values
    as the planner's value function and the optimal bot at the table, the expected
    target of a turn start is the exact value of that position for the bot to move
    (the planner plays optimally from its next turn start on)."""
    from agents.optimal import two_player_solution
    from agents.planner import PlannerBot

    solution = two_player_solution(SMALL, show_progress=False)
    planner = PlannerBot.exact(SMALL, show_progress=False)
    index = {int(s): i for i, s in enumerate(solution.scores)}
    for k, position in enumerate([(0, 0), (0, 700), (600, 0), (900, 300), (500, 900)]):
        target = rollout_target(planner, ["optimal"], SMALL, position, 3000, seed=k)
        exact = solution.V[index[position[0]], index[position[1]]]
        assert target.sum() == pytest.approx(1.0)
        # the target's spread is at most 0.5 per rollout: 3000 rollouts, sd <= 0.009
        assert target[0] == pytest.approx(exact, abs=0.03), (position, target, exact)


class SpyPlanner:
    """The planner, noting the games it plans (where the rollouts stopped)."""

    def __init__(self, planner: PlannerBot) -> None:
        self.planner, self.games = planner, []

    def plan(self, game):
        self.games.append((list(game.state.scores), game.state.current, game.state.phase))
        return self.planner.plan(game)


@pytest.mark.parametrize("seed", range(8))
def test_a_rollout_target_is_seen_from_the_first_bot_with_the_planner_last(seed):
    """A rollout stops at the planner's turn start (the last seat, before its first
    roll) and its target is the planner's plan there, made from its own seat and rolled
    into the position's order (the planner last); or a one-hot for a winner."""
    value = net(seed)
    spy = SpyPlanner(PlannerBot(value, rules=SMALL))
    position = [(0, 0, 900), (500, 700, 0), (800, 0, 600), (0, 300, 300)][seed % 4]
    target = rollout_target(spy, TABLE, SMALL, position, 1, seed=seed)
    assert target.sum() == pytest.approx(1.0)
    if not spy.games:  # someone won during the bots' turns
        assert sorted(target) == [0.0, 0.0, 1.0]
        return
    [(scores, current, phase)] = spy.games
    assert (current, phase) == (2, ROLL) and all(s == 0 or s >= SMALL.entry for s in scores)
    mine = plan_turn((scores[2], scores[0], scores[1]), SMALL, value).probabilities[0, NUM_DICE]
    np.testing.assert_allclose(target, [mine[1], mine[2], mine[0]], atol=1e-12)


def test_a_planner_far_ahead_gets_the_large_share_last():
    target = rollout_target(PlannerBot(net(0), rules=SMALL), TABLE, SMALL, (0, 0, 900), 20, 3)
    assert target.argmax() == 2


def test_a_win_during_the_bots_turns_is_a_one_hot_for_the_winner():
    """R8-R10: the bot at 900 wins by banking exactly 100 more; an overshoot of it
    gives the points to the planner at 600 (R9), who may reach 1000 and win so; a
    rollout that reaches the planner's turn gives no one a certain win."""
    planner = PlannerBot(net(0), rules=SMALL)
    bot = ["threshold:300"]
    one = [rollout_target(planner, bot, SMALL, (900, 600), 1, seed=s) for s in range(200)]
    bot_won = [t for t in one if t[0] == 1.0]
    planner_won = [t for t in one if t[1] == 1.0]
    assert bot_won and planner_won and len(bot_won) + len(planner_won) < len(one)
    assert all(0 < t[0] < 1 for t in one if 0 < t[1] < 1)
    again = [rollout_target(planner, bot, SMALL, (900, 600), 1, seed=s) for s in range(200)]
    np.testing.assert_array_equal(one, again)  # same seed, same target


def test_rollout_targets_do_not_depend_on_the_number_of_workers():
    value = net(2)
    positions = [(0, 0, 0), (500, 0, 700), (900, 600, 0), (0, 800, 800)]
    seeds = [1, 2, 3, 4]
    cfgs = [table_config(rollouts=3, workers=w) for w in (1, 2)]
    one, two = (rollout_targets(cfg, value, positions, seeds) for cfg in cfgs)
    planner = PlannerBot(value, rules=SMALL)
    for a, b, p, seed in zip(one, two, positions, seeds, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, rollout_target(planner, TABLE, SMALL, p, 3, seed))


def test_a_rollout_run_re_targets_a_sample_of_its_buffer(monkeypatch):
    """Every iteration re-targets, by rollouts, a sample of the buffered positions (no
    frozen returns are kept)."""
    import agents.training.value_iteration as vi

    asked = []

    def spy(cfg, net, positions, seeds):
        asked.append(list(positions))
        return rollout_targets(cfg, net, positions, seeds)

    monkeypatch.setattr(vi, "rollout_targets", spy)
    trainer = ValueIteration(table_config(rollouts=2, targets_per_iteration=3))
    first = trainer.iterate()
    second = trainer.iterate()
    assert 3 < first["positions"] < second["positions"] and second["fitted"] == 3
    assert [len(a) for a in asked] == [3, 3] and not trainer.samples
    assert all(p in trainer.buffer for a in asked for p in a)
    assert all(len(p) == 3 and scores_ok(p) for p in trainer.buffer)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"rollouts": -1}, "rollouts must be"),
        ({"rollouts": 65}, "rollouts must be"),
        ({"rollouts": 2, "method": "self-play"}, "targets of the table method"),
    ],
)
def test_bad_rollout_settings_are_refused_in_one_line(changes, message):
    with pytest.raises(ValueError, match=message) as e:
        table_config(**changes).validate()
    assert "\n" not in str(e.value)
