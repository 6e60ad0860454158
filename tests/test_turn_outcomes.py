"""Exact turn ends of a fixed policy (envs.turn_outcomes): the optimal bot's turn, valued
by the exact 2-player solution, is worth exactly the solution's value (R4-R9 all
inside); a planner's turn agrees with its own plan at any table size; the scripted
bots' turns agree with sampled turns."""

import itertools

import numpy as np
import pytest

from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.batched import batched
from fivethousand_rl.agents.optimal import two_player_solution
from fivethousand_rl.agents.planner import PlannerBot
from fivethousand_rl.envs.driver import play
from fivethousand_rl.envs.game import Game
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import Rules
from fivethousand_rl.envs.turn_outcomes import turn_ends, turn_outcomes
from fivethousand_rl.envs.turn_planner import exact_two_player_values
from tests.test_planner import share

SMALL_GAMES = [Rules(target=1000, entry=300), Rules(target=1500, hold="all")]


@pytest.mark.parametrize("rules", SMALL_GAMES, ids=str)
def test_optimal_turn_is_worth_the_solution_value(rules):
    """The optimal bot maximizes the exact value turn by turn, so its turn's ends,
    valued by the solution, give back the solution's value at every turn start."""
    sol = two_player_solution(rules, show_progress=False)
    values = exact_two_player_values(sol)
    bot = batched(make_policy("optimal"))
    for i, a in enumerate(sol.scores):
        for j, b in enumerate(sol.scores):
            out = turn_outcomes(bot, (int(a), int(b)), rules)
            assert out.probs.sum() + out.wins.sum() == pytest.approx(1.0, abs=1e-12)
            v = out.value(values(out.positions))
            assert v == pytest.approx([sol.V[i, j], 1 - sol.V[i, j]], abs=1e-9)


@pytest.mark.parametrize(
    "rules, scores",
    [
        (Rules(target=1000, entry=300), (0, 700, 300)),  # entry; bumps at 300 and 700
        (Rules(target=1000, entry=300), (800, 300, 0, 600)),  # gifts of an overshoot
        (Rules(target=1500, hold="all"), (1200, 1400, 900)),
    ],
    ids=str,
)
def test_planner_turn_matches_its_plan(rules, scores):
    """A planner's turn ends, valued by its own value function, are its plan's
    expectation at the turn start (R8, R9 decided once, by the engine)."""
    planner = PlannerBot(share, rules=rules)
    out = turn_outcomes(planner, scores, rules)
    game = Game(len(scores), rules)
    game.state.scores = list(scores)
    expected = planner.plan(game).roll_probabilities(0, 5)
    assert out.value(share(out.positions)) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    "bot, scores",
    [
        ("smart", (0, 0, 0, 0)),  # R8: entry
        ("smart", (3500, 4800, 0, 2000)),  # near the target: gifts (R9)
        ("turn-ev", (1000, 1500, 2500, 4000)),  # bumps on the way (R9)
        ("threshold:350", (4600, 4700, 4800)),
    ],
)
def test_scripted_turns_agree_with_sampled_turns(bot, scores):
    """Every end of probability >= 1% is met as often as it should be in 4,000
    sampled turns (within 4.5 standard errors), and nothing else is met."""
    rules, policy = Rules(), batched(make_policy(bot))
    out = turn_outcomes(policy, scores, rules)
    n, rng = 4000, np.random.default_rng(7)
    seen: dict = {}
    for _ in range(n):
        game = Game(len(scores), rules, seed=rng)
        game.state.scores = list(scores)
        play(game, [policy] + [None] * (len(scores) - 1), rng, until=lambda g: g.state.current != 0)
        s = game.state
        key = ("win", s.winner) if s.winner is not None else tuple(s.scores[1:] + s.scores[:1])
        seen[key] = seen.get(key, 0) + 1
    expected = {tuple(map(int, p)): q for p, q in zip(out.positions, out.probs, strict=True)}
    expected.update({("win", w): q for w, q in enumerate(out.wins) if q > 0})
    assert set(seen) <= set(expected)
    for key, p in expected.items():
        if p >= 0.01:
            assert abs(seen.get(key, 0) / n - p) <= 4.5 * np.sqrt(p * (1 - p) / n), key


class _Unviewed(Policy):
    """A bot without its ``turn_view``: followed from every turn start on its own."""

    def __init__(self, bot: Policy) -> None:
        self.bot, self.name = bot, bot.name

    def act_batch(self, games, idx, rng):
        return self.bot.act_batch(games, idx, rng)

    def act(self, game, rng):
        return self.bot.act(game, rng)


@pytest.mark.parametrize("players", [2, 3])
@pytest.mark.parametrize("name", ["smart", "turn-ev", "optimal", "threshold:300"])
def test_a_bots_view_of_the_scores_changes_no_turn_end(name, players):
    """A bot that declares which part of the scores it reads (its own; smart: the others
    as a set; optimal: the leader's) is followed once per view, and gets exactly the
    turn ends it gets when followed from every start (R4-R9 at each)."""
    rules = Rules(target=800, entry=300)
    grid = rules.banked_scores()
    starts = np.array(list(itertools.product(grid, repeat=players)))
    bot = make_policy(name)
    assert callable(getattr(bot, "turn_view", None))
    viewed, every = turn_ends(bot, starts, rules), turn_ends(_Unviewed(bot), starts, rules)
    assert np.array_equal(viewed.offsets, every.offsets)
    assert np.array_equal(viewed.positions, every.positions)
    assert viewed.probs == pytest.approx(every.probs, abs=1e-15)
    assert viewed.wins == pytest.approx(every.wins, abs=1e-15)
