"""Search through the game's state API (issue 41): the expectimax bot (agents.search),
written only against Game.clone, moves, act, chance_outcomes and roll, decides as the
exact turn planner does, given the same values at the ends of the turn (R4 busts, R6
hot dice and R9 banks are all the engine's)."""

import pickle

import numpy as np
import pytest

from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.optimal import OptimalBot
from fivethousand_rl.agents.planner import PlannerBot
from fivethousand_rl.agents.search import ExpectimaxBot
from fivethousand_rl.envs.driver import play
from fivethousand_rl.envs.game import DECIDE, Game
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import Rules
from tests.helpers import game_at
from tests.helpers import play as play_turn

SMALL = Rules(target=1000, entry=300)  # a shrunken game (V5): the whole test takes seconds


class Recorder(Policy):
    """Plays as `bot` and keeps a copy of every position it decides at."""

    def __init__(self, bot: Policy, positions: list[Game]) -> None:
        self.bot, self.positions, self.name = bot, positions, bot.name

    def act(self, game: Game, rng: np.random.Generator) -> int:
        self.positions.append(game.clone())
        return self.bot.act(game, rng)


def recorded_positions(rules, want, bots=("smart", "optimal"), start=None, seed=41):
    """At least `want` decisions of seeded games between `bots` (seats alternating),
    each game from `start` (banked scores) if given."""
    positions: list[Game] = []
    players = [Recorder(make_policy(name), positions) for name in bots]
    g = 0
    while len(positions) < want:
        game = Game(len(bots), rules, seed=[seed, g], first_player=g % len(bots))
        if start is not None:
            game.state.scores = list(start)
        play(game, players[g % 2 :] + players[: g % 2], np.random.default_rng(g))
        g += 1
    return positions


def assert_same_decisions(search, reference, positions, exact=None):
    """`search` values every action as `reference` does (and as `exact`, if given), to
    1e-9, and takes the same action (both take the first within 1e-12 of the best, in
    ascending order); neither changes the position."""
    for game in positions:
        before, dice = game.state.to_dict(), game.dice_state()
        mine, theirs = search.action_values(game), reference.action_values(game)
        assert mine.keys() == theirs.keys()
        for action, value in theirs.items():
            assert mine[action] == pytest.approx(value, abs=1e-9), (game.to_json(), action)
        if exact is not None:
            for action, value in exact.action_values(game).items():
                assert mine[action] == pytest.approx(value, abs=1e-9)
        rng = np.random.default_rng(0)
        assert search.act(game, rng) == reference.act(game, rng), game.to_json()
        assert game.state.to_dict() == before and game.dice_state() == dice


@pytest.mark.parametrize(
    ("rules", "want"), [(SMALL, 1000), (Rules(target=1000, entry=300, hold="all"), 100)]
)
def test_expectimax_decides_as_the_exact_planner(rules, want):
    """Issue 41: with the exact 2-player values at the turn's ends, the search makes the
    planner's decision at every recorded position (1,000 under the free hold rule, R5),
    and values each action as the planner and the optimal bot do."""
    positions = recorded_positions(rules, want)
    assert len(positions) >= want
    planner = PlannerBot.exact(rules, show_progress=False)
    search = ExpectimaxBot(show_progress=False)
    assert_same_decisions(search, planner, positions, OptimalBot(show_progress=False))


def test_expectimax_decides_as_the_planner_under_the_full_rules():
    """The seeds' rules, late in the game (where a turn's search is short: every bank
    past a few hundred points is lost, R9)."""
    positions = recorded_positions(Rules(), 8, start=(4000, 4400))
    planner = PlannerBot.exact(Rules(), show_progress=False)
    assert_same_decisions(ExpectimaxBot(show_progress=False), planner, positions)


def share(positions: np.ndarray) -> np.ndarray:
    """A hand-made value function for any table: each player's share of (score + 100)."""
    x = np.asarray(positions, dtype=float) + 100
    return x / x.sum(axis=1, keepdims=True)


def test_any_value_function_at_any_table():
    """With the same value function the search and the planner agree at 3 players too:
    both are exact within the turn."""
    rules = Rules(target=1000, entry=300, bump=True)
    positions = recorded_positions(rules, 30, bots=("smart", "turn-ev", "random"), seed=7)
    search = ExpectimaxBot(share, players=(3,), rules=rules)
    assert_same_decisions(search, PlannerBot(share, players=(3,), rules=rules), positions)
    with pytest.raises(ValueError, match="its value function: games of 3 players, not 2"):
        search.check_game(2, rules)


def test_the_exact_values_are_for_two_players_only():
    bot = make_policy("expectimax")
    with pytest.raises(ValueError) as err:
        bot.check_game(3, Rules())
    assert str(err.value) == (
        "expectimax searches against the exact 2-player values: games of 2 players, not 3"
    )


def limited_values(game, plan, rolls):
    """Reference values of each action at `game` when at most `rolls` more rolls may
    come: a plain depth-limited expectimax (no cut-off, chance nodes memoized), its turn
    ends valued by `plan` (the exact planner's)."""
    chance = {}

    def chance_value(node, r):
        s = node.state
        if (s.turn_total, s.dice_left, r) not in chance:
            value = plan.pass_end[0]  # past the horizon: as a bust
            if r > 0:
                value = 0.0
                for dice, p in node.chance_outcomes():
                    child = node.clone()
                    child.roll(dice)
                    bust = child.state.phase != DECIDE
                    value += p * (
                        plan.pass_end[0] if bust else max(decision(child, r - 1).values())
                    )
            chance[s.turn_total, s.dice_left, r] = value
        return chance[s.turn_total, s.dice_left, r]

    def decision(node, r):
        values = {}
        for move in node.moves():
            child = node.clone()
            child.act(move.action)
            values[move.action] = (
                plan.bank_value(move.turn_total) if move.banks else chance_value(child, r)
            )
        return values

    return decision(game, rolls)


# (banked scores, the turn's (roll, held) so far, the roll awaiting a decision)
LATE_IN_TURNS = [
    ((700, 500), [], (1, 2, 3, 4, 6)),  # the last bank worth anything: 500 (a gift, R9)
    ((700, 500), [((4, 4, 4, 2, 3), (4, 4, 4))], (3, 5)),
    ((700, 500), [((2, 2, 2, 3, 4), (2, 2, 2)), ((1, 3), (1,))], (1,)),  # hot dice (R6)
    ((800, 900), [], (1, 2, 2, 3, 6)),
    ((0, 600), [((1, 1, 2, 3, 4), (1, 1))], (5, 2, 6)),
]


# Where those limits change a value: the rest of the turn may need more rolls.
BINDING = [
    ((700, 500), [], 1),
    ((700, 500), [], 2),
    ((800, 900), [], 1),
    ((0, 600), [((1, 1, 2, 3, 4), (1, 1))], 1),
    ((0, 600), [((1, 1, 2, 3, 4), (1, 1))], 2),
]


@pytest.mark.parametrize("rolls", [1, 2])
@pytest.mark.parametrize(("scores", "turn", "roll"), LATE_IN_TURNS)
def test_a_roll_limit_searches_that_many_rolls(scores, turn, roll, rolls):
    """expectimax:R values the turn as if it had to end within R more rolls (a roll
    beyond counts as a bust, R4), and is exact wherever R rolls reach every useful
    bank; its shortcut (a limit that cannot bind is none) is checked against a plain
    depth-limited search."""
    game = game_at(list(scores), target=1000, entry=300)
    for dice, held in turn:
        play_turn(game, dice, held, bank=False)
    game.roll(roll)
    plan = PlannerBot.exact(SMALL, show_progress=False).plan(game)
    expected = limited_values(game, plan, rolls)
    values = ExpectimaxBot(max_rolls=rolls, show_progress=False).action_values(game)
    assert values.keys() == expected.keys()
    for action, value in expected.items():
        assert values[action] == pytest.approx(value, abs=1e-12), action
    exact = ExpectimaxBot(show_progress=False).action_values(game)
    binds = max(abs(values[a] - exact[a]) for a in values) > 1e-3
    assert binds == ((scores, turn, rolls) in BINDING)  # the limit binds where it should


def test_a_roll_limit_that_cannot_bind_is_the_whole_turn():
    """Every hold scores at least 50 (R2), so 20 rolls reach past the small game's
    target: expectimax:20 is the exhaustive search there."""
    positions = recorded_positions(SMALL, 30, seed=3)
    limited = ExpectimaxBot(max_rolls=20, show_progress=False)
    assert limited.name == "expectimax:20"
    assert_same_decisions(limited, ExpectimaxBot(show_progress=False), positions)


def test_the_bot_plays_whole_games_and_pickles():
    bot = make_policy("expectimax:2")
    game = play(Game(2, SMALL, seed=5), [bot, make_policy("smart")], np.random.default_rng(5))
    assert game.over
    copy = pickle.loads(pickle.dumps(bot))
    assert copy.name == "expectimax:2" and copy.max_rolls == 2
    game = game_at([0, 0], target=1000, entry=300)
    game.roll([1, 1, 5, 5, 2])
    assert copy.act(game, np.random.default_rng(0)) == bot.act(game, np.random.default_rng(0))


def test_no_decision_no_values():
    bot = ExpectimaxBot(share)
    with pytest.raises(RuntimeError, match="no decision is due"):
        bot.action_values(Game(2))
    with pytest.raises(ValueError, match="max_rolls must be a whole number"):
        ExpectimaxBot(share, max_rolls=0)
    assert Game(2).state.phase != DECIDE
