"""Decision time of the exact turn planner (fivethousand_rl.agents.planner), on one core.

    python benchmarks/planner_speed.py [--games 200] [--net PATH.npz ...]

The planner plays itself through the driver; every decision is timed. "cached" is the
bot as it plays (a plan per turn start, reused by the turn's later decisions and by
later games); "planning" clears the cache before every decision, so each one plans
its turn from scratch (every reachable turn end valued, the turn solved). Target
(issue 11): median decision <= 2 ms. The value functions are the exact 2-player
solution and a hand-made one (each player's share of score + 100) for 4 players; a
network's forward pass comes on top of "planning": --net adds lines for a value net's
planner (a shipped agent's value_net.npz), seated at its own table if it learned one
(the bots after it), else playing itself at each table size it values.
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
from fivethousand_rl.agents.planner import PlannerBot  # noqa: E402
from fivethousand_rl.envs.driver import play  # noqa: E402
from fivethousand_rl.envs.game import Game  # noqa: E402
from fivethousand_rl.envs.policy import Policy  # noqa: E402
from fivethousand_rl.envs.rules import Rules  # noqa: E402


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


def decision_ms(bot: PlannerBot, n_players: int, rules: Rules, games: int, cold: bool, table=()):
    """Median, mean and 90th percentile of the bot's decision times (ms), and their
    count; the bot fills every seat, or the first with the `table`'s bots after it."""
    timed = Timed(bot, cold)
    seats = [timed, *table] if table else [timed] * n_players
    for g in range(games):
        game = Game(n_players, rules, seed=[7, g], first_player=g % n_players)
        play(game, seats, np.random.default_rng(g))
    ms = np.array(timed.seconds) * 1e3
    return np.median(ms), ms.mean(), np.percentile(ms, 90), len(ms)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200, help="games per line")
    parser.add_argument(
        "--net", nargs="+", default=[], metavar="PATH", help="value nets (.npz) to time too"
    )
    parser.add_argument(
        "--players", nargs="+", type=int, default=[4], help="table sizes of a --net without a table"
    )
    args = parser.parse_args(argv)
    free, all_ = Rules(), Rules(hold="all")
    setups = [
        ("2 players, exact values, free", 2, free, lambda: PlannerBot.exact(free), ()),
        ("2 players, exact values, all", 2, all_, lambda: PlannerBot.exact(all_), ()),
        ("4 players, share values, free", 4, free, lambda: PlannerBot(share), ()),
    ]
    try:
        setups += [setup for path in args.net for setup in net_setups(path, args.players)]
    except (OSError, ValueError) as err:
        parser.error(f"--net: {err}")
    print(f"{'setup':32} {'mode':9} {'median ms':>9} {'mean ms':>8} {'p90 ms':>7} {'decisions':>9}")
    for label, n, rules, make_bot, table in setups:
        for cold in (False, True):
            games = args.games if not cold else max(1, args.games // 4)
            median, mean, p90, count = decision_ms(make_bot(), n, rules, games, cold, table)
            mode = "planning" if cold else "cached"
            print(f"{label:32} {mode:9} {median:9.3f} {mean:8.3f} {p90:7.3f} {count:9d}")
    return 0


def net_setups(path: str, players: list[int]) -> list:
    """Lines for one value net: at its own table if it learned one, else playing itself
    at each of `players` table sizes."""
    from fivethousand_rl.agents import make_policy
    from fivethousand_rl.agents.value_net import ValueNet, agent_name

    net = ValueNet.load(path)
    name, rules = agent_name(path), net.spec.rules
    if net.spec.table:
        table = tuple(make_policy(bot) for bot in net.spec.table)
        return [(f"{name} at its table", len(table) + 1, rules, lambda: net.planner(name), table)]
    if unknown := sorted(set(players) - set(net.spec.players)):
        raise ValueError(f"{path} values tables of {list(net.spec.players)} players, not {unknown}")
    return [(f"{name}, {n} players", n, rules, lambda: net.planner(name), ()) for n in players]


if __name__ == "__main__":
    sys.exit(main())
