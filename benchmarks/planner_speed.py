"""Decision time of the exact turn planner (agents.planner), on one core.

    python benchmarks/planner_speed.py [--games 200]

The planner plays itself through the driver; every decision is timed. "cached" is the
bot as it plays (a plan per turn start, reused by the turn's later decisions and by
later games); "planning" clears the cache before every decision, so each one plans
its turn from scratch (every reachable turn end valued, the turn solved). Target
(issue 11): median decision <= 2 ms. The value functions are the exact 2-player
solution and a hand-made one (each player's share of score + 100) for 4 players; a
network's forward pass comes on top of "planning".
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, before numpy loads BLAS
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from agents.planner import PlannerBot  # noqa: E402
from envs.driver import play  # noqa: E402
from envs.game import Game  # noqa: E402
from envs.policy import Policy  # noqa: E402
from envs.rules import Rules  # noqa: E402


def share(positions: np.ndarray) -> np.ndarray:
    x = np.asarray(positions, dtype=float) + 100
    return x / x.sum(axis=1, keepdims=True)


class Timed(Policy):
    """The bot's decisions, timed (optionally each with an empty cache)."""

    def __init__(self, bot: PlannerBot, cold: bool) -> None:
        self.bot, self.cold, self.name = bot, cold, bot.name
        self.seconds: list[float] = []

    def act(self, game: Game, rng: np.random.Generator) -> int:
        if self.cold:
            self.bot.clear_cache()
        start = time.perf_counter()
        action = self.bot.act(game, rng)
        self.seconds.append(time.perf_counter() - start)
        return action


def decision_ms(bot: PlannerBot, n_players: int, rules: Rules, games: int, cold: bool):
    timed = Timed(bot, cold)
    for g in range(games):
        game = Game(n_players, rules, seed=[7, g], first_player=g % n_players)
        play(game, [timed] * n_players, np.random.default_rng(g))
    ms = np.array(timed.seconds) * 1e3
    return np.median(ms), ms.mean(), np.percentile(ms, 90), len(ms)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200, help="games per line")
    args = parser.parse_args(argv)
    setups = [
        ("2 players, exact values, free", 2, Rules(), None),
        ("2 players, exact values, all", 2, Rules(hold="all"), None),
        ("4 players, share values, free", 4, Rules(), share),
    ]
    print(f"{'setup':32} {'mode':9} {'median ms':>9} {'mean ms':>8} {'p90 ms':>7} {'decisions':>9}")
    for label, n, rules, values in setups:
        for cold in (False, True):
            bot = PlannerBot.exact(rules) if values is None else PlannerBot(values)
            games = args.games if not cold else max(1, args.games // 4)
            median, mean, p90, count = decision_ms(bot, n, rules, games, cold)
            mode = "planning" if cold else "cached"
            print(f"{label:32} {mode:9} {median:9.3f} {mean:8.3f} {p90:7.3f} {count:9d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
