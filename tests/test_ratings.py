"""Ratings fitted to a tournament's games (agents.tournament.ratings, issue 9 item 3):
every game weighs alike, their order does not matter, and the ratings agree with the
results."""

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from fivethousand_rl.agents import tournament as tour
from fivethousand_rl.agents.tournament import ELO_PER_UNIT, GameResult, luce_fit, ratings
from fivethousand_rl.envs.rules import Rules

ROOT = Path(__file__).resolve().parent.parent

# The shipped ppo-2p card's round robin (checkpoints/ppo-2p/evaluation.json, 20,000
# games per pairing): row agent's wins against each column agent. Game-by-game
# openskill rated smart (25.10) above optimal (24.93) although optimal won more games
# against every agent, smart included (55.2%).
CARD = ["ppo-2p", "optimal", "smart", "turn-ev", "threshold:350"]
CARD_WINS = {
    ("ppo-2p", "optimal"): 9195,
    ("ppo-2p", "smart"): 10158,
    ("ppo-2p", "turn-ev"): 13157,
    ("ppo-2p", "threshold:350"): 17478,
    ("optimal", "smart"): 11038,
    ("optimal", "turn-ev"): 13285,
    ("optimal", "threshold:350"): 17496,
    ("smart", "turn-ev"): 12833,
    ("smart", "threshold:350"): 17368,
    ("turn-ev", "threshold:350"): 15371,
}


def card_results(games: int = 20_000) -> list[GameResult]:
    """The card's games, pairing after pairing, seats alternating; in each pairing the
    first agent's wins come last (the order a game-by-game update is most swayed by)."""
    out = []
    for (a, b), wins in CARD_WINS.items():
        i, j = CARD.index(a), CARD.index(b)
        for g in range(games):
            seats = (i, j) if g % 2 == 0 else (j, i)
            winner = i if g >= games - wins else j
            out.append(GameResult(len(out), seats, seats.index(winner), 40))
    return out


def random_results(seed: int, n_agents: int, n_games: int, strengths=None) -> list[GameResult]:
    """Games of 2 to 4 players among n_agents, winners drawn by Luce's model."""
    rng = np.random.default_rng(seed)
    theta = np.zeros(n_agents) if strengths is None else np.asarray(strengths, dtype=float)
    out = []
    for g in range(n_games):
        size = int(rng.integers(2, min(4, n_agents) + 1))
        seats = tuple(int(a) for a in rng.permutation(n_agents)[:size])
        p = np.exp(theta[list(seats)])
        out.append(GameResult(g, seats, int(rng.choice(size, p=p / p.sum())), 30))
    return out


def by_win_rate_and_rating(summary: dict) -> tuple[list[str], list[str]]:
    agents = summary["agents"]
    by_rate = [a["agent"] for a in sorted(agents, key=lambda a: -a["win_rate"])]
    by_rating = [a["agent"] for a in sorted(agents, key=lambda a: -a["rating"])]
    return by_rate, by_rating


@pytest.mark.parametrize(
    ("name", "results", "n"),
    [
        ("the card's round robin", card_results(2_000), len(CARD)),
        ("2- to 4-player games", random_results(0, 6, 3_000, [0, 0.3, -0.5, 1, 0.2, -1]), 6),
    ],
)
def test_permuting_the_games_leaves_the_ratings_unchanged(name, results, n):
    fitted = ratings(n, results)
    for seed in range(3):
        shuffled = list(results)
        np.random.default_rng(seed).shuffle(shuffled)
        assert ratings(n, shuffled) == fitted, name
    assert ratings(n, results[::-1]) == fitted, name


def test_the_cards_ratings_follow_its_results():
    summary = tour.summarize(CARD, card_results(), 2)
    by_rate, by_rating = by_win_rate_and_rating(summary)
    assert by_rating == by_rate == ["optimal", "ppo-2p", "smart", "turn-ev", "threshold:350"]


def test_a_ladder_round_robin_rates_in_win_rate_order():
    bots = ["random", "threshold:350", "threshold:1000", "turn-ev", "smart"]
    results = tour.run(bots, tour.schedule(len(bots), 2, 200), Rules(), seed=2)
    summary = tour.summarize(bots, results, 2)
    for a, b in itertools.combinations(summary["agents"], 2):
        if a["wins"] == b["wins"]:  # every agent played as many games
            assert a["rating"] == pytest.approx(b["rating"], abs=1e-6)
        else:
            assert (a["wins"] > b["wins"]) == (a["rating"] > b["rating"]), (a, b)
    by_rate, by_rating = by_win_rate_and_rating(summary)
    assert by_rating == by_rate


def test_two_players_give_the_elo_gap_of_their_win_rate():
    # 750 wins in 1000 games: odds 3:1, 400 * log10(3) = 190.8 points apart (Bradley-
    # Terry, which Luce's model is for 2 players), the weak prior shrinking it a hair.
    seats = [(0, 1) if g % 2 else (1, 0) for g in range(1000)]
    winners = [0] * 750 + [1] * 250
    results = [GameResult(g, seats[g], seats[g].index(winners[g]), 40) for g in range(1000)]
    strong, weak = ratings(2, results)
    assert strong["rating"] - weak["rating"] == pytest.approx(400 * math.log10(3), abs=0.5)
    assert (strong["rating"] + weak["rating"]) / 2 == pytest.approx(1500)
    # Standard error of the gap: 1 / sqrt(n p (1 - p)) log-units, half of it each.
    gap_se = ELO_PER_UNIT / math.sqrt(1000 * 0.75 * 0.25)
    assert strong["rating_se"] == pytest.approx(gap_se / 2, rel=0.01)


def test_multiplayer_strengths_are_recovered():
    truth = np.array([0.0, 0.5, -0.5, 1.0, -1.0])
    theta, se = luce_fit(5, random_results(7, 5, 20_000, truth))
    error = theta - (truth - truth.mean())
    assert np.all(np.abs(error) < 4 * se), (theta, se)
    assert np.all(se < 0.05)


def test_perfect_records_have_finite_ratings_and_cut_off_games_count_for_nothing():
    won = [GameResult(g, (g % 2, 1 - g % 2), g % 2, 30) for g in range(10)]  # agent 0 always
    best, worst = ratings(2, won)
    assert math.isfinite(best["rating"]) and best["rating"] > worst["rating"] + 400
    cut_off = [GameResult(10 + g, (0, 1), None, 1000) for g in range(50)]
    assert ratings(2, won + cut_off) == ratings(2, won)
    # Nothing decided: everybody at the mean.
    assert [r["rating"] for r in ratings(3, cut_off)] == [1500.0] * 3
