"""Trial of the value network's fitted value iteration (agents.value_net) on a 2-player game.

    python benchmarks/value_net_trial.py [--target 5000] [--minutes 12] [--games 2000]

Trains for about `--minutes`, printing after each iteration the mean and max absolute
error of the network's V against the exact 2-player solution (a yardstick only: the
training never sees it), then plays `--games` games against `optimal` (seats
alternated) and optionally a 4-player table (planner, smart, turn-ev, threshold:350).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from agents.optimal import two_player_solution  # noqa: E402
from agents.planner import PlannerBot  # noqa: E402
from agents.tournament import run, schedule, summarize  # noqa: E402
from agents.value_net import TrainConfig, ValueNet, train  # noqa: E402
from envs.rules import Rules  # noqa: E402


def exact_error(net: ValueNet, sol) -> tuple[float, float, float]:
    """Mean and max |V_net - V_exact| over every 2-player turn start, and the mean over
    those with different scores: equal scores (both entered) only arise from a gift
    (a bank that equals the other's score bumps it, R9), so self-play rarely sees them."""
    a, b = np.meshgrid(sol.scores, sol.scores, indexing="ij")
    v = net(np.stack([a.ravel(), b.ravel()], axis=1))[:, 0]
    err = np.abs(v - sol.V.ravel())
    apart = (a.ravel() != b.ravel()) | (a.ravel() == 0)
    return float(err.mean()), float(err.max()), float(err[apart].mean())


class Stop(Exception):
    """Raised by the progress callback when the time budget is spent."""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", type=int, default=5000)
    ap.add_argument("--entry", type=int, default=500)
    ap.add_argument("--minutes", type=float, default=12)
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--games-per-iteration", type=int, default=20)
    ap.add_argument("--fit-steps", type=int, default=300)
    ap.add_argument("--hidden", type=int, nargs="+", default=[128, 128])
    ap.add_argument("--games", type=int, default=2000)
    ap.add_argument("--four", type=int, default=0, help="4-player games to play after")
    ap.add_argument("--save", default="")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--players", type=int, default=2, help="table size trained on")
    ap.add_argument("--opponent-share", type=float, default=0.0)
    ap.add_argument("--targets-per-iteration", type=int, default=20_000)
    args = ap.parse_args()
    rules = Rules(target=args.target, entry=args.entry)
    sol = two_player_solution(rules, show_progress=False) if args.players == 2 else None
    cfg = TrainConfig(
        rules=rules,
        hidden=tuple(args.hidden),
        iterations=args.iterations,
        games_per_iteration=args.games_per_iteration,
        fit_steps=args.fit_steps,
        seed=args.seed,
        targets_per_iteration=args.targets_per_iteration,
        players=(args.players,),
        opponents=("smart", "turn-ev", "threshold:350") if args.opponent_share else (),
        opponent_share=args.opponent_share,
    )
    start = time.perf_counter()
    last: list[ValueNet] = []

    def report(i: int, net: ValueNet, stats: dict) -> None:
        last[:] = [net]
        mean, worst, apart = exact_error(net, sol) if args.players == 2 else (np.nan,) * 3
        print(
            f"it {i:3d} {time.perf_counter() - start:6.0f}s positions {stats['positions']:5d} "
            f"loss {stats['loss']:.4f} |V-V*| mean {mean:.4f} max {worst:.4f} "
            f"(unequal scores: mean {apart:.4f})",
            flush=True,
        )
        if time.perf_counter() - start > args.minutes * 60:
            raise Stop

    try:
        net = train(cfg, report)
    except Stop:
        net = last[0]
    print(f"trained {time.perf_counter() - start:.0f}s", flush=True)
    if args.save:
        net.save(args.save)
    bot = PlannerBot(net, rules=rules, name="planner")
    if args.games:
        res = run([bot, "optimal"], schedule(2, 2, args.games), rules, seed=123)
        s = summarize(["planner", "optimal"], res, 2)
        print("vs optimal:", s, flush=True)
    if args.four:
        names = ["planner", "smart", "turn-ev", "threshold:350"]
        res = run([bot, *names[1:]], schedule(4, 4, args.four), rules, seed=321)
        print("4-player:", summarize(names, res, 4), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
