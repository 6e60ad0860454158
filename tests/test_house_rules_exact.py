"""Exact play under every house rule (RULES.md V1-V5 and the hold rule R5; issue 31
item 3): the rules' grid of banked scores, the 2-player solver's Bellman equations,
optimal self-play in the engine against the solver's numbers, the turn-EV table against
an independent recursion and the engine, the turn planner and the turn outcomes, the
scripted and optimal bots (per game and batched alike), ``python -m fivethousand_rl.agents.optimal``
with the rule flags, and one cache file per variant. Shrunken games (targets 1000 and
1500, V5) keep it fast."""

import json
import math

import numpy as np
import pytest

from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents import optimal as optimal_module
from fivethousand_rl.agents.optimal import OptimalBot, _cache_path, _load, two_player_solution
from fivethousand_rl.agents.planner import PlannerBot
from fivethousand_rl.agents.scripted import SmartBot, ThresholdBot, TurnEVBot
from fivethousand_rl.envs.batch import ROLL_ID, BatchGames, play_games
from fivethousand_rl.envs.driver import play
from fivethousand_rl.envs.game import Game, bank_outcome
from fivethousand_rl.envs.rules import NUM_DICE, ROLL_INFO, Rules, action_for, can_bank
from fivethousand_rl.envs.solver import solve_turn_ev, turn_ev_table
from fivethousand_rl.envs.turn_outcomes import turn_outcomes
from fivethousand_rl.envs.turn_planner import exact_two_player_values, plan_turn
from tests.test_planner import CheckedAgainstSolver
from tests.test_solver import bellman_residual, independent_turn_ev

# One switch per row, then some together (V5: every target here is a shrunken game).
VARIANTS = [
    pytest.param(Rules(target=1500, entry=350), id="V1 entry 350 (the 50 rule: 400)"),
    pytest.param(Rules(target=1500, entry=1000), id="V1 entry 1000"),
    pytest.param(Rules(target=1500, bump=False), id="V2 no bumps"),
    pytest.param(Rules(target=1500, overshoot="lost"), id="V3 overshoot lost"),
    pytest.param(Rules(target=1500, fifty_rule=False), id="V4 no 50 rule"),
    pytest.param(Rules(target=1500, entry=250, fifty_rule=False), id="V1+V4 entry 250"),
    pytest.param(Rules(target=1000, bump=False, overshoot="lost"), id="V2+V3"),
    pytest.param(
        Rules(target=1000, entry=150, bump=False, overshoot="lost", fifty_rule=False, hold="all"),
        id="V1-V4 and R5 all",
    ),
    pytest.param(Rules(target=1000, entry=1000), id="V1=V5 a first bank wins"),
]


# ------------------------------------------------------------------ the grid
@pytest.mark.parametrize(
    "rules, grid",
    [
        (Rules(target=1000), (0, 500, 600, 700, 800, 900)),  # R10
        (Rules(target=1000, entry=350), (0, 400, 500, 600, 700, 800, 900)),  # V1 with R8
        (Rules(target=1000, entry=350, fifty_rule=False), (0, *range(350, 1000, 50))),  # V4
        (Rules(target=600, entry=50, fifty_rule=False), (0, *range(50, 600, 50))),
        (Rules(target=1000, entry=1000), (0,)),  # V1: a first bank of the target wins
        (Rules(target=1000, entry=950), (0,)),  # ... and 950 can't be banked (R8)
    ],
    ids=repr,
)
def test_banked_scores_are_the_rules_grid(rules, grid):
    """R10, V1, V4, V5: 0 and each multiple of the score step from the first bankable
    entry total up to below the target."""
    assert rules.banked_scores() == grid


@pytest.mark.parametrize("rules", VARIANTS)
def test_the_grid_holds_every_score_a_2_player_game_reaches(rules):
    """R8, R9 and V1-V5 by the engine's own banking: every bank from a pair of scores
    on the grid lands on the grid (or wins), and every score of the grid is reached."""
    grid = rules.banked_scores()
    seen, todo = {(0, 0)}, [(0, 0)]
    while todo:
        pair = todo.pop()
        for total in range(50, rules.target + 1, 50):
            if not can_bank(pair[0], total, rules):
                continue
            outcome = bank_outcome(pair, 0, total, rules)
            assert set(outcome.scores) <= {*grid, rules.target}, (pair, total, outcome)
            after = (outcome.scores[1], outcome.scores[0])  # the opponent moves next
            if outcome.winner is None and after not in seen:
                seen.add(after)
                todo.append(after)
    assert {score for pair in seen for score in pair} == set(grid)


# ------------------------------------------------------------------ the solver
@pytest.mark.parametrize("rules", VARIANTS)
def test_bellman_equations_hold_under_house_rules(rules):
    """Every state's value is what the best move makes of the values it leads to, with
    each bank valued rule by rule by the engine's bank_outcome (R4-R9, V1-V5)."""
    sol = two_player_solution(rules, show_progress=False)
    assert sol.scores.tolist() == list(rules.banked_scores())
    assert bellman_residual(sol) < 1e-9
    assert ((sol.V >= 0) & (sol.V <= 1)).all()


@pytest.mark.parametrize("rules", VARIANTS)
def test_optimal_self_play_wins_as_the_solver_says(rules):
    """Optimal against optimal, seats rotated, in the batched engine (the engine's twin,
    tests/test_vector_env.py): the first mover wins as often as the solver says, each
    copy half the time (within 4 standard errors)."""
    sol = two_player_solution(rules, show_progress=False)
    bot = make_policy("optimal")
    n = 20_000
    first = np.arange(n) % 2  # which copy sits in seat 0, the first to move
    results = play_games(
        n, [bot, bot], rules, np.random.default_rng(31), seat_policy=np.stack([first, 1 - first], 1)
    )
    assert (results.winner >= 0).all()
    p = sol.first_player_win_probability
    assert abs(np.mean(results.winner == 0) - p) < 4 * math.sqrt(p * (1 - p) / n)
    copy_a_wins = np.mean(results.winner == first)  # copy 0 won from seat 0 or seat 1
    assert abs(copy_a_wins - 0.5) < 4 * math.sqrt(0.25 / n)


@pytest.mark.parametrize(
    "rules, scores",
    [
        (Rules(target=1000, bump=False), (700, 900)),  # V2: landing on 900 bumps nobody
        (Rules(target=1000, overshoot="lost"), (900, 800)),  # V3: overshoots are lost
        (Rules(target=1000, fifty_rule=False), (850, 950)),  # V4: scores ending in 50
    ],
    ids=repr,
)
def test_engine_games_from_a_position_win_as_the_solver_says(rules, scores):
    """The per-game engine plays optimal against optimal from an endgame position where
    the switch bites; the mover wins as often as the solver's value (4 standard errors)."""
    sol = two_player_solution(rules, show_progress=False)
    expected = float(sol.V[sol.score_index(scores[0]), sol.score_index(scores[1])])
    bot = OptimalBot(show_progress=False)
    n, wins = 1500, 0
    for g in range(n):
        game = Game(2, rules, seed=[31, g])
        game.state.scores = list(scores)
        play(game, [bot, bot], np.random.default_rng(g))
        wins += game.state.winner == 0
    assert abs(wins / n - expected) < 4 * math.sqrt(expected * (1 - expected) / n)


# ------------------------------------------------------------------ turn EV
# (rules, the independent recursion's cap: under the 50 rule a total ending in 50 must
# be rolled on, so its values settle only far up)
TURN_EV_RULES = [
    pytest.param(Rules(fifty_rule=False), 8000, id="V4"),
    pytest.param(Rules(fifty_rule=False, hold="all"), 8000, id="V4 R5 all"),
    pytest.param(Rules(entry=250, fifty_rule=False), 8000, id="V1+V4 entry 250"),
    pytest.param(Rules(entry=350), 20_000, id="V1 entry 350"),
]


@pytest.mark.parametrize("rules, cap", TURN_EV_RULES)
def test_turn_ev_table_is_an_independent_recursions(rules, cap):
    """The table's best expected points of a turn, entered or not (R8, V1, V4), are a
    plain recursion over the rolls themselves (no chance classes, another cap)."""
    ev = solve_turn_ev(rules)
    entered = independent_turn_ev(rules, True, cap)
    assert ev.entered_turn_value == pytest.approx(entered, abs=1e-9)
    assert ev.value[0, 0, NUM_DICE] == pytest.approx(
        independent_turn_ev(rules, False, cap), abs=1e-9
    )


@pytest.mark.parametrize("rules, cap", TURN_EV_RULES[:3])
def test_turn_ev_bot_banks_the_table_value_in_the_engine(rules, cap):
    """The turn-ev bot's turn, pushed exactly through the engine's moves (every end with
    its probability, fivethousand_rl.envs.turn_outcomes), banks on average what the table promises.
    A far target keeps overshoots and exact wins out of the way."""
    far = Rules(**{**rules.to_dict(), "target": 20_000})
    out = turn_outcomes(make_policy("turn-ev"), (1000, 0), far)
    gained = out.positions[:, 1] - 1000  # the mover's score, last in the next turn order
    assert out.wins.sum() == 0
    assert out.probs @ gained == pytest.approx(turn_ev_table(rules).entered_turn_value, abs=1e-9)


def test_no_fifty_rule_is_worth_points_per_turn():
    """V4: banking totals that end in 50 (and so stopping earlier) raises the turn's
    expected points; the entry (V1) changes only the turn of a player not yet in."""
    assert turn_ev_table(Rules(fifty_rule=False)).entered_turn_value > (
        turn_ev_table(Rules()).entered_turn_value + 10
    )
    low, high = turn_ev_table(Rules(entry=300)), turn_ev_table(Rules(entry=1000))
    assert low.entered_turn_value == high.entered_turn_value
    assert low.value[0, 0, NUM_DICE] > high.value[0, 0, NUM_DICE]


# ------------------------------------------------------------------ planner, outcomes
@pytest.mark.parametrize("rules", [VARIANTS[2], VARIANTS[5], VARIANTS[7]])
def test_planner_with_the_exact_values_plays_as_the_solver_under_house_rules(rules):
    """Against the exact 2-player values of the same rules the planner values every
    action as the solver does and plays its action (or one of the same value)."""
    planner = PlannerBot.exact(rules, show_progress=False)
    checked = CheckedAgainstSolver(planner, OptimalBot(show_progress=False))
    for g in range(30):
        game = Game(2, rules, seed=[31, g], first_player=g % 2)
        play(game, [checked, checked], np.random.default_rng(g))
    decisions = checked.same + checked.tied
    assert decisions > 200 and checked.tied <= 0.03 * decisions


@pytest.mark.parametrize(
    "rules, scores",
    [
        (Rules(target=1500, entry=250, fifty_rule=False), (1250, 1450)),  # V4
        (Rules(target=1500, entry=350), (0, 400)),  # V1: enter with 400
        (Rules(target=1500, bump=False), (900, 1200)),  # V2
        (Rules(target=1500, overshoot="lost"), (1400, 1300)),  # V3
    ],
    ids=repr,
)
def test_optimal_turn_ends_are_worth_the_solution_value(rules, scores):
    """The optimal bot's turn, pushed exactly through the engine (every end with its
    probability), valued by the solution, gives back the solution's value."""
    sol = two_player_solution(rules, show_progress=False)
    out = turn_outcomes(make_policy("optimal"), scores, rules)
    assert out.probs.sum() + out.wins.sum() == pytest.approx(1.0, abs=1e-12)
    v = sol.V[sol.score_index(scores[0]), sol.score_index(scores[1])]
    got = out.value(exact_two_player_values(sol)(out.positions))
    assert got == pytest.approx([v, 1 - v], abs=1e-9)


def test_exact_values_take_the_grid_of_their_rules():
    """V4: scores ending in 50 are positions; scores off the grid are refused."""
    rules = Rules(target=1000, entry=250, fifty_rule=False)
    values = exact_two_player_values(two_player_solution(rules, show_progress=False))
    assert values(np.array([[250, 950], [0, 0]])).shape == (2, 2)
    for bad in ([[200, 0]], [[275, 0]], [[1000, 0]]):  # under the entry, off the grid, won
        with pytest.raises(ValueError, match="not turn-start scores"):
            values(np.array(bad))
    plan = plan_turn((950, 900), rules, values)
    assert plan.bank_value(50) == 1.0  # V4: a total ending in 50 may be banked, and wins


# ------------------------------------------------------------------ the bots
def _random_positions(rules: Rules, n_players: int, n: int, seed: int) -> BatchGames:
    """`n` decisions under `rules`: scores on the grid (half of them near the target,
    where bumps, gifts and lost points happen), a turn total, a scoring roll."""
    rng = np.random.default_rng(seed)
    grid = np.array(rules.banked_scores())
    near = grid[grid >= rules.target - 600]
    games = BatchGames(n, n_players, rules)
    for g in range(n):
        pool = near if g % 2 and near.size else grid
        games.scores[g] = rng.choice(pool, n_players)
        games.current[g] = rng.integers(n_players)
        games.turn_total[g] = 50 * rng.integers(0, 14)
        while True:
            k = int(rng.integers(1, NUM_DICE + 1))
            roll = tuple(sorted(rng.integers(1, 7, k).tolist()))
            if not ROLL_INFO[roll].bust:
                break
        games.dice_left[g] = k
        games.roll[g] = ROLL_ID[roll]
    return games


@pytest.mark.parametrize("n_players", [2, 3])
@pytest.mark.parametrize("rules", VARIANTS[:8])
def test_batched_bots_choose_as_their_per_game_selves_under_house_rules(rules, n_players):
    """Each deterministic bot, batched and per game, picks the same action on the same
    positions (endgames included: bumps V2, gifts and lost points V3, totals ending in
    50 V4), optimal too (its 3-player play is the 2-player solution's, against the
    leader)."""
    games = _random_positions(rules, n_players, 300, seed=len(rules.banked_scores()))
    idx = np.arange(games.n_games)
    positions = [games.game_at(int(g)) for g in idx]
    per_game = [ThresholdBot(350), TurnEVBot(), SmartBot(), OptimalBot(show_progress=False)]
    rng = np.random.default_rng(0)
    for bot in per_game:
        fast = make_policy(bot.name)
        want = [bot.act(game, rng) for game in positions]
        assert fast.act_batch(games, idx, rng).tolist() == want, bot.name
        assert all(a in game.legal_actions() for a, game in zip(want, positions, strict=True))


# (rules, scores, turn total before the roll, roll, the move smart makes, why)
SMART = [
    (Rules(target=1000), (900, 500), 100, (1, 3, 4, 6), ((1,), False), "R9: a gift: roll on"),
    (Rules(target=1000, overshoot="lost"), (900, 500), 100, (1, 3, 4, 6), ((1,), True), "V3"),
    (Rules(target=1000), (900, 0), 100, (1, 3, 4, 6), ((1,), True), "R9: nobody qualifies"),
    (Rules(target=1500), (500, 600), 0, (1, 2, 3, 4, 6), ((1,), True), "R9: a bump"),
]


@pytest.mark.parametrize("rules, scores, total, roll, move, why", SMART, ids=repr)
def test_smart_reads_the_rules_at_the_end(rules, scores, total, roll, move, why):
    """smart never avoids feeding a gift that the rules don't give (V3): every move
    overshoots, and it banks when the points would only be lost; it takes a bump."""
    game = Game(2, rules)
    game.state.scores = list(scores)
    game.state.turn_total, game.state.dice_left = total, len(roll)
    game.roll(roll)
    action = action_for(move[0], roll, move[1])
    assert SmartBot().act(game, None) == action, why
    assert make_policy("smart").act(game, None) == action, why


def test_smart_takes_no_bump_the_rules_do_not_have():
    """V2: with bumps off, landing on the opponent's score is a move like any other:
    smart plays it as turn-ev does, here rolling four dice on (per game and batched)."""
    rules, roll = Rules(target=1500, bump=False), (1, 2, 3, 4, 6)
    game = Game(2, rules)
    game.state.scores = [500, 600]
    game.roll(roll)
    expected = action_for((1,), roll, False)
    assert TurnEVBot().act(game, None) == expected
    assert SmartBot().act(game, None) == expected
    games = BatchGames(1, 2, rules)
    games.scores[0] = [500, 600]
    games.roll[0] = ROLL_ID[roll]
    assert make_policy("smart").act_batch(games, np.arange(1), None).tolist() == [expected]


# ------------------------------------------------------------------ command and cache
def test_optimal_command_prints_a_variants_numbers(capsys):
    """``python -m agents.optimal --no-bump --target 1000 --json``: the first player's
    win probability and the turn value of those rules, with the rules (V2, V5)."""
    assert optimal_module.main(["--no-bump", "--target", "1000", "--json"]) == 0
    numbers = json.loads(capsys.readouterr().out)
    rules = Rules(target=1000, bump=False)
    assert numbers == {
        "hold": "free",
        "first_player_win_probability": two_player_solution(rules).first_player_win_probability,
        "best_expected_turn_points_entered": turn_ev_table(rules).entered_turn_value,
        "rules": rules.to_dict(),
    }
    assert optimal_module.main(["--no-bump", "--target", "1000", "--no-fifty-rule"]) == 0
    text = capsys.readouterr().out
    assert "hold=free target=1000 bump=False fifty_rule=False" in text.splitlines()
    assert "first player's win probability" in text


@pytest.mark.parametrize(
    "args, message",
    [(["--entry", "75"], "entry must be a multiple of 50"), (["--target", "950"], "target")],
)
def test_optimal_command_refuses_bad_rules_in_one_line(args, message, capsys, monkeypatch):
    def no_solve(*args, **kwargs):
        raise AssertionError("the solve began")

    monkeypatch.setattr(optimal_module, "two_player_solution", no_solve)
    assert optimal_module.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_every_variant_has_its_own_cache_file(tmp_path, monkeypatch, capsys):
    """The cache is keyed by every rule (V1-V5, R5): no two variants share a file, and a
    file saved under other rules is never read as this variant's."""
    monkeypatch.setenv("FIVETHOUSAND_CACHE", str(tmp_path))
    monkeypatch.setattr(optimal_module, "_MEMORY", {})
    variants = [Rules(target=1000), *(p.values[0] for p in VARIANTS)]
    variants += [Rules(target=1000, fifty_rule=False), Rules(target=1000, overshoot="lost")]
    paths = {_cache_path(rules) for rules in variants}
    assert len(paths) == len(variants)
    plain, other = Rules(target=1000), Rules(target=1000, bump=False)
    two_player_solution(plain, show_progress=False)
    _cache_path(other).write_bytes(_cache_path(plain).read_bytes())  # the wrong file
    assert _load(_cache_path(other), other) is None
    assert "stale" in capsys.readouterr().err


def test_only_the_most_recently_used_solutions_stay_in_memory(monkeypatch):
    """A server offering house rules is asked for many variants: at most
    MAX_IN_MEMORY solutions stay in memory, the least recently used dropped first (the
    disk cache keeps them all)."""
    monkeypatch.setattr(optimal_module, "_MEMORY", {})
    variants = [Rules(target=600, entry=entry) for entry in (100, 200, 300, 400, 500, 600)]
    for rules in variants[:4]:
        optimal_module.two_player_solution(rules, show_progress=False)
    optimal_module.two_player_solution(variants[0], show_progress=False)  # used again
    for rules in variants[4:]:
        optimal_module.two_player_solution(rules, show_progress=False)
    assert list(optimal_module._MEMORY) == [variants[3], variants[0], variants[4], variants[5]]
