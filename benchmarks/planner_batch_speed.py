"""Games/s of the planners played batched, against yardsticks measured in the same run.

    python benchmarks/planner_batch_speed.py [--games 20000] [--json out.json]

Targets (issue 33), each line measured here, one core unless it says otherwise:

- the 3-player table (planner-3p, smart, turn-ev), played batched (``PlannerBot.act_batch``
  through the tournament runner), at least as many games/s as ``optimal`` one game at a
  time at the same table (optimal, smart, turn-ev): a ratio >= 1;
- planner-2p against optimal, batched: >= 5,000 games/s;
- a `--games` evaluation of planner-4p at its table (smart, turn-ev, threshold:350) on
  2 worker processes: <= 30 s of wall clock, planning and value caches starting empty.
  The issue set that bound on a machine where ``optimal`` played ISSUE_OPTIMAL_3P games/s
  at the 3-player table one game at a time; the line after it scales the seconds measured
  here by this machine's own figure for that (measured in the same run), so that the
  bound reads the same on a slower or faster machine.

Every batched figure includes the planner's first plans and network calls (its caches
start empty in each process); the seats rotate as evaluations rotate them. The web
page's hint time has its own benchmark (benchmarks/webplay_speed.py).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, before numpy loads BLAS
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.speed import per_second, print_targets  # noqa: E402
from fivethousand_rl.agents import make_policy  # noqa: E402
from fivethousand_rl.agents.optimal import two_player_solution  # noqa: E402
from fivethousand_rl.agents.tournament import run, schedule  # noqa: E402
from fivethousand_rl.envs.driver import play  # noqa: E402
from fivethousand_rl.envs.game import Game  # noqa: E402
from fivethousand_rl.envs.rules import Rules  # noqa: E402

# optimal at (optimal, smart, turn-ev), one game at a time, on the machine of issue 33's
# bounds (its "993 games/s"): the yardstick that turns this machine's seconds into its.
ISSUE_OPTIMAL_3P = 993.0


def batched_games_per_second(table: list[str], games: int, workers: int = 1) -> tuple[float, float]:
    """(games/s, seconds) of `games` games of `table` (seats rotating), batched."""
    n = len(table)
    seatings = schedule(n, n, -(-games // n) * n)[:games]  # whole rotations, cut to `games`
    start = time.perf_counter()
    results = run(table, seatings, Rules(), 0, workers, batched=True)
    seconds = time.perf_counter() - start
    return len(results) / seconds, seconds


def one_at_a_time_games_per_second(table: list[str], seconds: float) -> float:
    """Games/s of `table` played one game at a time (``envs.driver.play``), seats rotating."""
    policies = [make_policy(name) for name in table]
    rng, n = np.random.default_rng(0), len(table)

    def one_game(i: int) -> None:
        play(Game(n, Rules(), seed=i), policies[i % n :] + policies[: i % n], rng)

    return per_second(seconds, one_game)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20_000, help="games per batched line")
    parser.add_argument("--seconds", type=float, default=20.0, help="one-at-a-time line's seconds")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    console = Console()
    two_player_solution(Rules())  # solved or loaded before any timing
    with console.status("optimal at (optimal, smart, turn-ev), one game at a time..."):
        optimal_3p = one_at_a_time_games_per_second(["optimal", "smart", "turn-ev"], args.seconds)
    with console.status(f"planner-3p at (smart, turn-ev), {args.games:,} games batched..."):
        planner_3p, _ = batched_games_per_second(["planner-3p", "smart", "turn-ev"], args.games)
    with console.status(f"planner-2p against optimal, {args.games:,} games batched..."):
        planner_2p, _ = batched_games_per_second(["planner-2p", "optimal"], args.games)
    with console.status(f"planner-4p at its table, {args.games:,} games on 2 workers..."):
        table_4p = ["planner-4p", "smart", "turn-ev", "threshold:350"]
        _, seconds_4p = batched_games_per_second(table_4p, args.games, workers=2)
    rows = [
        ("optimal, 3 players, one game at a time, games/s", optimal_3p, None),
        ("planner-3p, 3 players, batched, games/s", planner_3p, None),
        ("planner-3p batched / optimal one at a time", planner_3p / optimal_3p, (">=", 1.0)),
        ("planner-2p vs optimal, batched, games/s", planner_2p, (">=", 5000)),
        (f"planner-4p, {args.games:,} games on 2 workers, seconds", seconds_4p, ("<=", 30)),
        (
            "  the same, in seconds of the issue's machine (x optimal's games/s here / 993)",
            seconds_4p * optimal_3p / ISSUE_OPTIMAL_3P,
            ("<=", 30),
        ),
    ]
    print_targets(console, "Batched planners (one core unless stated)", rows)
    if args.json:
        Path(args.json).write_text(json.dumps({name: value for name, value, _ in rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
