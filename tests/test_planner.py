"""The exact turn planner (envs.turn_planner, agents.planner): against the exact
2-player values it plays as the solver does; every turn end is the engine's (R8, R9);
it plays any table of 2 to 8 players under every rule variant."""

import numpy as np
import pytest

from fivethousand_rl.agents.optimal import OptimalBot, two_player_solution
from fivethousand_rl.agents.planner import PlannerBot
from fivethousand_rl.envs.driver import play
from fivethousand_rl.envs.game import DECIDE, Game, bank_outcome
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import Rules, action_for
from fivethousand_rl.envs.solver import _turn_recursion, option_tables
from fivethousand_rl.envs.turn_planner import exact_two_player_values, plan_turn, solve_turn
from tests.helpers import game_at

SOLVER_TOL = 1e-12  # how far the solver's own values are converged


def share(positions: np.ndarray) -> np.ndarray:
    """A hand-made value function: each player's chance is its share of (score + 100)."""
    x = np.asarray(positions, dtype=float) + 100
    return x / x.sum(axis=1, keepdims=True)


def share_of(*scores: int) -> np.ndarray:
    """`share` of one position, in the order given."""
    return share(np.array([scores]))[0]


@pytest.mark.parametrize("hold", ["free", "all"])
def test_single_turn_recursion_matches_the_solvers(hold):
    """solve_turn is the solver's batched recursion for one state (R4-R8)."""
    tab = option_tables(hold)
    rng = np.random.default_rng(3)
    for top in (20, 30, 100):
        size = top + 1 + int(tab.steps.max()) + 1
        bank = rng.random(size)
        bank[rng.random(size) < 0.4] = -np.inf
        pass_value = float(rng.random())
        expected = _turn_recursion(np.array([pass_value]), bank[None], tab, top, size)[0]
        w, _ = solve_turn(pass_value, bank, hold, top)
        np.testing.assert_allclose(w[:, 1:], expected[:, 1:], rtol=0, atol=1e-12)


class CheckedAgainstSolver(Policy):
    """Plays the solver's action after checking the planner's values and choice there."""

    name = "checked"

    def __init__(self, planner: PlannerBot, optimal: OptimalBot) -> None:
        self.planner, self.optimal = planner, optimal
        self.same = self.tied = 0

    def act(self, game: Game, rng: np.random.Generator) -> int:
        mine, exact = self.planner.action_values(game), self.optimal.action_values(game)
        assert mine.keys() == exact.keys()
        for action, value in exact.items():
            assert mine[action] == pytest.approx(value, abs=1e-9)
        chosen, best = self.planner.act(game, rng), self.optimal.act(game, rng)
        if chosen == best:
            self.same += 1
        else:
            # Equal values, to the solver's own precision: in practice a turn that can
            # only end as a bust does (an overshoot nobody may receive, R9), where
            # banking and rolling on are worth exactly the pass value.
            assert exact[chosen] >= exact[best] - SOLVER_TOL
            self.tied += 1
        return best


@pytest.mark.parametrize(
    "rules, games",
    [
        (Rules(target=1000, entry=300), 150),
        (Rules(target=1000, entry=200, hold="all"), 150),
        (Rules(target=1500), 150),
        (Rules(target=1500, hold="all"), 150),
        (Rules(), 25),
        (Rules(hold="all"), 25),
    ],
)
def test_planner_with_the_exact_values_plays_as_the_solver(rules, games):
    """Issue 11: with the exact 2-player values as its value function the planner values
    every action as the solver does (1e-9) and chooses the solver's action at every
    decision (or, rarely, another one of the same value to the solver's precision)."""
    planner = PlannerBot.exact(rules, show_progress=False)
    checked = CheckedAgainstSolver(planner, OptimalBot(show_progress=False))
    for g in range(games):
        game = Game(2, rules, seed=[5, g], first_player=g % 2)
        play(game, [checked, checked], np.random.default_rng(g))
        assert game.over
    decisions = checked.same + checked.tied
    assert decisions > 10 * games
    assert checked.tied <= 0.03 * decisions, (checked.same, checked.tied)
    print(f"{rules}: {checked.same} same actions, {checked.tied} ties of {decisions}")


# Banked scores in turn order from the mover; a turn total banked; what the engine makes
# of it, as the scores afterwards in the same order (None: forbidden by R8; an int:
# that seat, in the mover's order, wins).
BANKS = [
    # R8: not ending in 50; not under the entry before entering; 100 once entered.
    (Rules(), (1000, 0), 250, None),
    (Rules(), (0, 1000), 400, None),
    (Rules(), (0, 1000), 500, (500, 1000)),
    (Rules(), (700, 1000), 100, (800, 1000)),
    (Rules(target=1000, entry=300), (0, 800), 300, (300, 800)),
    # R9: a bump sends every other player on the new score to 0.
    (Rules(), (1000, 1500, 700), 500, (1500, 0, 700)),
    (Rules(), (1000, 1500, 1500, 0), 500, (1500, 0, 0, 0)),
    (Rules(), (1000, 1500, 700), 400, (1400, 1500, 700)),
    # R9: exactly the target wins.
    (Rules(), (4700, 1000, 700), 300, 0),
    (Rules(target=1000, entry=300), (700, 0), 300, 0),
    # R9: an overshoot is a gift to the lowest player with the entry score (ties: the
    # first after the banker); it never bumps; it wins if it lands on the target.
    (Rules(), (4800, 1000, 700), 300, (4800, 1000, 1000)),
    (Rules(), (4800, 700, 700), 300, (4800, 1000, 700)),
    (Rules(), (4800, 700, 1000), 300, (4800, 1000, 1000)),
    (Rules(), (4800, 4700, 0), 300, 1),
    (Rules(target=1000, entry=300), (900, 300), 200, (900, 500)),
    # R9: points lost when the gift would pass the target or nobody qualifies.
    (Rules(), (4800, 4900, 0), 300, (4800, 4900, 0)),
    (Rules(), (4800, 0, 0), 300, (4800, 0, 0)),
    (Rules(), (4800, 0, 0), 5100, (4800, 0, 0)),
]


@pytest.mark.parametrize("rules, scores, total, after", BANKS)
def test_every_bank_is_valued_at_the_position_the_engine_leaves(rules, scores, total, after):
    """R8, R9: the value of banking is the value of what the engine's banking leaves (the
    next player to move; the `share` values turned back to the mover's order)."""
    plan = plan_turn(scores, rules, share)
    if after is None:
        assert plan.bank_value(total) == -np.inf
        return
    expected = np.eye(len(scores))[after] if isinstance(after, int) else share_of(*after)
    np.testing.assert_allclose(plan.bank_probabilities(total), expected, atol=1e-15)
    assert plan.bank_value(total) == pytest.approx(expected[0], abs=1e-15)


@pytest.mark.parametrize(
    "rules, scores, roll, held, bank, why",
    [
        (Rules(), (4700, 1000, 700), (2, 3, 3, 3, 4), (3, 3, 3), True, "exact win, R9"),
        (Rules(target=1000, entry=300), (700, 0), (2, 3, 3, 3, 4), (3, 3, 3), True, "win"),
        (Rules(), (4800, 4700, 0), (2, 3, 3, 3, 4), (3, 3, 3), False, "gift wins for them"),
        (Rules(), (1000, 1500, 1500, 1500), (2, 3, 5, 5, 5), (5, 5, 5), True, "bumps three"),
        (Rules(hold="all"), (1000, 1500, 1500), (2, 3, 5, 5, 5), (5, 5, 5), True, "bumps two"),
        (Rules(), (0, 4000), (1, 1, 1, 2, 3), (1, 1, 1), True, "enters at 1100"),
    ],
)
def test_planner_chooses_the_known_best_move(rules, scores, roll, held, bank, why):
    """Positions where the best move is plain whatever the value of the rest (`share`)."""
    game = game_at(list(scores), hold=rules.hold, target=rules.target, entry=rules.entry)
    game.roll(roll)
    bot = PlannerBot(share)
    assert bot.act(game, np.random.default_rng(0)) == action_for(held, roll, bank), why


def test_past_the_target_every_allowed_bank_is_lost():
    """What solve_turn assumes (R9): a total past the target gives nothing to anyone, for
    every table size, since any gift recipient has at least the entry score; under every
    house rule (V1 the smallest entry with V4, V3)."""
    rng = np.random.default_rng(1)
    variants = (
        Rules(),
        Rules(target=1000, entry=300),
        Rules(target=1500, entry=100),
        Rules(target=1000, entry=50, fifty_rule=False),
        Rules(target=1000, bump=False, overshoot="lost"),
    )
    for rules in variants:
        for _ in range(200):
            scores = rng.choice(rules.banked_scores(), size=rng.integers(2, 9)).tolist()
            for total in range(rules.target + 50, rules.target + 4500, 50):
                outcome = bank_outcome(scores, 0, total, rules)
                assert not outcome.allowed or outcome.lost


def test_win_probabilities_of_the_exact_planner_are_the_solvers():
    rules = Rules(target=1500)
    sol = two_player_solution(rules, show_progress=False)
    bot = PlannerBot.exact(rules, show_progress=False)
    game = game_at([600, 1100], current=1, target=1500)  # seat 1 to move
    v = sol.V[sol.score_index(1100), sol.score_index(600)]
    np.testing.assert_allclose(bot.win_probabilities(game), [1 - v, v], atol=1e-12)


@pytest.mark.parametrize("n", [2, 3, 5, 8])
@pytest.mark.parametrize("rules", [Rules(), Rules(hold="all", target=1500, entry=300)])
def test_win_probabilities_follow_the_plan(n, rules):
    """Every player's probabilities add up to 1, the mover's is the planned value, and
    they are given by seat (the mover is seat 1 here)."""
    game = game_at([1500] + [1000] * (n - 1), current=1, hold=rules.hold, target=rules.target)
    game.state.scores[2 % n] = 0
    bot = PlannerBot(share)
    plan = bot.plan(game)
    start = bot.win_probabilities(game)
    assert start.sum() == pytest.approx(1.0, abs=1e-12)
    assert start[1] == pytest.approx(plan.roll_value(0, 5), abs=1e-12)
    game.roll((1, 2, 3, 4, 6))
    values = bot.action_values(game)
    now = bot.win_probabilities(game)
    assert now.sum() == pytest.approx(1.0, abs=1e-12)
    assert now[1] == pytest.approx(max(values.values()), abs=1e-12)
    mover = plan.probabilities[: plan.top + 1, 1:, 0]
    np.testing.assert_allclose(mover, plan.W[: plan.top + 1, 1:], rtol=0, atol=1e-12)


@pytest.mark.parametrize("n", [2, 3, 4, 6, 8])
@pytest.mark.parametrize(
    "rules", [Rules(), Rules(hold="all"), Rules(target=1000, entry=300, hold="all")]
)
def test_planner_plays_whole_games_with_2_to_8_players(n, rules):
    """R11: any table; a plan is made once per turn start and reused, and each position
    is valued once (where the value table fits; else one value call per plan)."""
    calls = []

    def counted(positions: np.ndarray) -> np.ndarray:
        calls.append(len(positions))
        return share(positions)

    bot = PlannerBot(counted)
    starts = set()

    def note(game: Game, event) -> None:
        s = game.state
        if s.phase == DECIDE:
            starts.add(tuple(s.scores[s.current :] + s.scores[: s.current]))

    game = play(Game(n, rules, seed=n), [bot] * n, np.random.default_rng(n), on_event=note)
    assert game.over
    info = bot.cache_info()
    assert info.plans_made == len(starts)
    if info.positions_valued:  # a table of positions: each asked for once
        assert len(calls) <= len(starts) and sum(calls) == info.positions_valued
    else:
        assert len(calls) == len(starts)
    bot.clear_cache()
    bot.plan(game)
    assert bot.cache_info().plans_made == 1


def test_bad_value_functions_and_games_are_refused_in_one_line():
    with pytest.raises(ValueError, match=r"returned shape \(3,\) for \d+ positions of 2") as e:
        plan_turn((0, 0), Rules(), lambda positions: np.zeros(3))
    assert "\n" not in str(e.value)
    values = exact_two_player_values(two_player_solution(Rules(target=1000), False))
    with pytest.raises(ValueError, match="positions of 2 players"):
        plan_turn((0, 0, 0), Rules(target=1000), values)
    with pytest.raises(ValueError, match="not turn-start scores"):
        values(np.array([[150, 0]]))
    bot = PlannerBot(values, players=(2,), rules=Rules(target=1000))
    with pytest.raises(ValueError, match="values games of 2 players, not 3"):
        bot.check_game(3, Rules(target=1000))
    with pytest.raises(ValueError, match="values games under"):
        bot.check_game(2, Rules())
    bot.check_game(2, Rules(target=1000))
