"""Exact solvers (turn EV and 2-player optimal) checked against independent
recomputations and against simulations on the real engine."""

import math
from pathlib import Path

import numpy as np
import pytest

from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.optimal import OptimalBot, _cache_path, cache_dir, two_player_solution
from fivethousand_rl.agents.tournament import play_game
from fivethousand_rl.envs.game import ROLL, Game, GameState
from fivethousand_rl.envs.rules import NUM_DICE, ROLL_INFO, Rules, can_bank, roll_probabilities
from fivethousand_rl.envs.solver import (
    STEP,
    TwoPlayerSolution,
    _turn_recursion,
    option_tables,
    solve_turn_ev,
    solve_two_player,
)


def bellman_residual(sol: TwoPlayerSolution) -> float:
    """Largest violation of the Bellman equations by `sol`, recomputed from scratch for
    every state at once with the plain rule-by-rule bank values (``bank_outcome``)."""
    rules, scores = sol.rules, sol.scores
    n = len(scores)
    tab = option_tables(rules.hold)
    top = rules.target // STEP
    size = top + 1 + int(tab.steps.max()) + 1
    pass_value = np.empty(n * n)
    bank = np.empty((n * n, size))
    for ia, a in enumerate(scores):
        for ib, b in enumerate(scores):
            s = ia * n + ib
            pass_value[s] = 1.0 - sol.V[ib, ia]
            for i in range(size):
                t = i * STEP
                bank[s, i] = (
                    sol.bank_value(int(a), int(b), t) if t <= rules.target else pass_value[s]
                )
    w = _turn_recursion(pass_value, bank, tab, top, size)[:, : top + 1, :]
    w = w.reshape(n, n, top + 1, NUM_DICE + 1)
    return float(
        max(
            np.max(np.abs(w[:, :, :, 1:] - sol.W[:, :, :, 1:])),
            np.max(np.abs(sol.V - w[:, :, 0, NUM_DICE])),
        )
    )


def independent_turn_ev(rules: Rules, entered: bool, cap: int) -> float:
    """Expected points of one turn, by a plain backward recursion over the rolls
    themselves (no merged chance classes), with a different cap than the solver."""
    levels = cap // 50
    value = {}  # (i, k) -> expected points before rolling k dice with total 50*i
    for i in range(levels + 90, -1, -1):
        t = i * 50
        for k in range(1, NUM_DICE + 1):
            if i > levels:
                value[i, k] = t
                continue
            total = 0.0
            for roll, p in roll_probabilities(k):
                best = 0.0 if ROLL_INFO[roll].bust else -math.inf
                for hold in ROLL_INFO[roll].holds(rules.hold):
                    new = t + hold.points
                    left = (k - len(hold.dice)) or NUM_DICE
                    if can_bank(1 if entered else 0, new, rules):
                        best = max(best, new)
                    best = max(best, value[min(new // 50, levels + 90), left])
                total += p * best
            value[i, k] = total
    return value[0, NUM_DICE]


@pytest.mark.parametrize("hold", ["free", "all"])
def test_turn_ev_matches_an_independent_recursion(hold):
    rules = Rules(hold=hold)
    ev = solve_turn_ev(rules)
    assert ev.entered_turn_value == pytest.approx(
        independent_turn_ev(rules, True, 30_000), abs=1e-9
    )
    assert ev.value[0, 0, NUM_DICE] == pytest.approx(
        independent_turn_ev(rules, False, 30_000), abs=1e-9
    )


def test_turn_ev_bot_scores_the_solved_value_per_turn():
    """Simulated turns of the turn-ev bot, entered, average the exact expected points.
    (A huge target keeps overshoots and exact wins out of the way.)"""
    rules = Rules(target=1_000_000)
    ev = solve_turn_ev(rules)
    bot = make_policy("turn-ev")
    rng = np.random.default_rng(0)
    game = Game(2, rules, seed=1)
    points = []
    for _ in range(60_000):
        game.state = GameState(scores=[1000, 1000])
        while game.state.current == 0:
            if game.state.phase == ROLL:
                game.roll()
            else:
                game.act(bot.act(game, rng))
        points.append(game.state.scores[0] - 1000)
    points = np.array(points)
    standard_error = points.std() / math.sqrt(len(points))
    assert abs(points.mean() - ev.entered_turn_value) < 4 * standard_error


@pytest.mark.parametrize(
    "rules", [Rules(target=1000), Rules(target=1500, hold="all"), Rules(target=2000)]
)
def test_bellman_equations_hold_on_shrunken_games(rules):
    assert bellman_residual(solve_two_player(rules)) < 1e-9


def test_bellman_equations_hold_on_the_full_game():
    sol = two_player_solution(Rules(), show_progress=False)
    assert bellman_residual(sol) < 1e-9
    assert 0.5 < sol.first_player_win_probability < 0.6  # moving first is an advantage


@pytest.mark.parametrize(
    ("rules", "scores"),
    [
        (Rules(target=1000), [0, 0]),
        (Rules(target=1000), [500, 0]),
        (Rules(target=1000), [0, 800]),
        (Rules(target=1000), [900, 700]),
        (Rules(target=1500, hold="all"), [0, 0]),
        (Rules(target=1500, hold="all"), [1200, 1400]),
    ],
)
def test_solver_win_probability_matches_simulated_optimal_play(rules, scores):
    """The engine plays optimal against optimal from a position; the first player's
    win rate agrees with the solver's value within 4 standard errors."""
    sol = solve_two_player(rules)
    expected = float(sol.V[sol.score_index(scores[0]), sol.score_index(scores[1])])
    bot = OptimalBot(show_progress=False)
    n_games = 6000
    wins = 0
    for g in range(n_games):
        game = Game(2, rules, seed=np.random.default_rng([7, g]))
        game.state.scores = list(scores)
        while not game.over:
            if game.state.phase == ROLL:
                game.roll()
            else:
                game.act(bot.act(game, None))
        wins += game.state.winner == 0
    standard_error = math.sqrt(expected * (1 - expected) / n_games)
    assert abs(wins / n_games - expected) < 4 * standard_error


def test_optimal_against_itself_wins_half_with_seats_rotated():
    bot = make_policy("optimal")
    n_games = 4000
    first_copy_wins = 0
    for g in range(n_games):
        seats = [bot, bot]
        winner, _ = play_game(seats, Rules(), [11, g])
        # Copy A sits in seat g % 2.
        first_copy_wins += winner == g % 2
    p = first_copy_wins / n_games
    assert abs(p - 0.5) < 4 * math.sqrt(0.25 / n_games)


@pytest.mark.parametrize("scores", [[0, 0], [2500, 4700], [4900, 0]])
def test_optimal_action_values_average_to_the_state_value(scores):
    """Over every first roll (with its probability), the best action's value averages
    to the solver's value of the state: the bot and the tables agree."""
    bot = OptimalBot(show_progress=False)
    sol = bot.solution(Rules())
    pass_value = 1.0 - float(sol.V[sol.score_index(scores[1]), sol.score_index(scores[0])])
    total = 0.0
    for roll, p in roll_probabilities(NUM_DICE):
        game = Game(2)
        game.state.scores = list(scores)
        game.roll(roll)
        if game.state.phase == ROLL:  # bust: the turn passes
            total += p * pass_value
            continue
        values = bot.action_values(game)
        assert set(values) == set(game.legal_actions())
        total += p * max(values.values())
    expected = float(sol.V[sol.score_index(scores[0]), sol.score_index(scores[1])])
    assert total == pytest.approx(expected, abs=1e-12)


def test_optimal_plays_legally_with_more_players():
    bot = make_policy("optimal")
    rng = np.random.default_rng(0)
    for n in (3, 5):
        for seed in range(3):
            winner, turns = play_game([bot] * n, Rules(), [seed, n])
            assert winner is not None and turns < 1000
    game = Game(4, seed=0)
    game.roll([1, 5, 5, 2, 3])
    assert bot.act(game, rng) in game.legal_actions()


def test_cache_is_keyed_by_rules_and_rebuilt_when_corrupt(tmp_path, monkeypatch, capsys):
    from fivethousand_rl.agents import optimal

    monkeypatch.setenv("FIVETHOUSAND_CACHE", str(tmp_path))
    monkeypatch.setattr(optimal, "_MEMORY", {})
    rules = Rules(target=1000)
    first = two_player_solution(rules, show_progress=False)
    path = _cache_path(rules)
    assert path.parent == cache_dir() == tmp_path and path.exists()
    assert _cache_path(Rules(target=1000, hold="all")) != path  # another variant, another file
    # A corrupt file is detected and replaced by a fresh solve.
    path.write_bytes(b"not a solution")
    monkeypatch.setattr(optimal, "_MEMORY", {})
    again = two_player_solution(rules, show_progress=False)
    assert "corrupt" in capsys.readouterr().err
    assert np.array_equal(again.V, first.V)
    # A tampered array fails the checksum.
    with np.load(path) as data:
        arrays = dict(data)
    arrays["V"] = arrays["V"] + 0.01
    np.savez(path, **arrays)
    monkeypatch.setattr(optimal, "_MEMORY", {})
    two_player_solution(rules, show_progress=False)
    assert "corrupt" in capsys.readouterr().err


def test_cli_prints_the_exact_numbers(tmp_path, capsys):
    from fivethousand_rl.agents.optimal import main

    assert main(["--json", "--plot", str(tmp_path / "strategy.png")]) == 0
    import json

    numbers = json.loads(capsys.readouterr().out)
    sol = two_player_solution(Rules(), show_progress=False)
    assert numbers["first_player_win_probability"] == sol.first_player_win_probability
    assert numbers["best_expected_turn_points_entered"] == solve_turn_ev().entered_turn_value
    assert (tmp_path / "strategy.png").stat().st_size > 10_000


# ------------------------------------------------------------------ regret analysis
def test_optimal_gives_nothing_away_and_regrets_predict_the_result():
    from fivethousand_rl.agents.regret import measure

    report = measure("optimal", "smart", games=300, seed=0)
    assert report.regret["player"] == 0.0 and report.mistakes["player"] == 0
    assert report.regret["opponent"] > 0  # smart is not optimal
    # P(win) = V(start) - own regrets + opponent's regrets, in expectation: the estimate
    # and the count of wins agree within the count's noise (4 standard deviations).
    sd = math.sqrt(0.25 / report.games)
    assert abs(report.estimated_win_rate - report.win_rate) < 4 * sd
    # Seats alternate: the start values average the first player's edge away.
    assert report.start_value / report.games == pytest.approx(0.5)


def test_regret_report_names_the_mistakes():
    from fivethousand_rl.agents.regret import measure

    report = measure("threshold:350", "turn-ev", games=40, seed=1).to_dict(top=3)
    assert report["regret_per_game"]["player"] > 0
    assert 0 < len(report["player_costliest_moves"]) <= 3
    assert all("(best: " in row["situation"] for row in report["player_costliest_moves"])


SHIPPED_2P = str(Path(__file__).resolve().parent.parent / "checkpoints/ppo-2p/model.zip")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["smart", "--games", "0"], "--games must be at least 1"),
        (["grandmaster"], "unknown bot"),
        (["smart", "--seed", "-1"], "--seed must be 0 or more, got -1"),
        (["smart", "--top", "-2"], "--top must be 0 or more, got -2"),
        (["smart", "--json", "/missing/x.json"], "--json /missing/x.json: folder /missing does"),
        ([SHIPPED_2P, "--hold", "all"], "it was trained under these rules: exactly 5000 wins"),
    ],
)
def test_regret_cli_refuses_bad_input_in_one_line(args, message, capsys, monkeypatch):
    """Issue 9 items 2, 5 and 6: refused in one line, before any game is played."""
    from fivethousand_rl.agents import optimal, regret

    def no_solve(*args, **kwargs):
        raise AssertionError("the work began")

    monkeypatch.setattr(optimal, "two_player_solution", no_solve)
    assert regret.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("plot", "message"),
    [
        ("/missing/x.png", "--plot /missing/x.png: folder /missing does not exist"),
        ("strategy.txt", "--plot strategy.txt: unknown picture format 'txt'"),
    ],
)
def test_optimal_cli_checks_the_plot_path_before_solving(plot, message, capsys, monkeypatch):
    """Issue 9 item 5."""
    from fivethousand_rl.agents import optimal

    def no_solve(*args, **kwargs):
        raise AssertionError("solved before checking the output path")

    monkeypatch.setattr(optimal, "two_player_solution", no_solve)
    assert optimal.main(["--plot", plot]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
