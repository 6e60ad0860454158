"""Tournament games/s with 1 and 2 worker processes: do 2 workers play faster than 1?

    python benchmarks/workers_speed.py [--planner-games 3000] [--ppo-games 1000] \\
        [--seed 4711] [--min-ratio 1.6]

Two evaluations, played as ``evaluate.py`` plays them (``agents.tournament.run``, one
game at a time, chunks of CHUNK games): the planner-3p agent at its table
(checkpoints/planner-3p/value_net.npz, smart, turn-ev; 3 players) and the ppo-2p agent
against smart (2 players), each with ``--workers 1`` (played in this process) and
``--workers 2`` (worker processes). Games/s are counted from the first finished chunk to
the last, so that starting the workers and loading the agents (seconds for torch) do
not count; the wall time of the whole run is shown beside them. Both worker counts must
play the same games (checked).

Target (issue 28 item 7): on 2 cores, 2 workers >= 1.6x the games/s of 1 worker, for
both evaluations (each worker limits itself to one thread of numeric work: without it,
each worker's BLAS pool took every core and 2 workers played the planner's games 27
times slower than 1). Prints PASS or FAIL per evaluation and exits 1 on a FAIL. Run it
on an otherwise idle machine: other work on the cores makes the ratio meaningless.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.progress import BarColumn, MofNCompleteColumn, Progress  # noqa: E402
from rich.table import Table  # noqa: E402

from fivethousand_rl.agents import make_policy  # noqa: E402
from fivethousand_rl.agents import tournament as tour  # noqa: E402
from fivethousand_rl.agents.threads import THREAD_VARIABLES, usable_cpus  # noqa: E402
from fivethousand_rl.envs.rules import Rules  # noqa: E402

CHUNK = 50  # games per task: small enough for a steady rate from a few thousand games
EVALUATIONS = {  # name: (agents, players)
    "planner-3p": (["checkpoints/planner-3p/value_net.npz", "smart", "turn-ev"], 3),
    "ppo-2p": (["checkpoints/ppo-2p/model.zip", "smart"], 2),
}


def measure(agents: list[str], players: int, games: int, seed: int, workers: int, bar) -> dict:
    """One evaluation with `workers`: steady games/s, wall seconds, its results."""
    seatings = tour.schedule(len(agents), players, -(-games // players) * players)
    task = bar.add_task(f"{len(seatings)} games, {workers} worker(s)", total=len(seatings))
    stamps: list[tuple[float, int]] = []  # (time, games finished so far)

    def told(n: int) -> None:
        stamps.append((time.perf_counter(), (stamps[-1][1] if stamps else 0) + n))
        bar.advance(task, n)

    start = time.perf_counter()
    results = tour.run(
        agents, seatings, Rules(), seed, workers=workers, chunk_size=CHUNK, on_progress=told
    )
    wall = time.perf_counter() - start
    (first, first_games), (last, last_games) = stamps[0], stamps[-1]
    steady = (last_games - first_games) / max(last - first, 1e-9)
    return {"games/s": steady, "wall": wall, "results": results}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--planner-games", type=int, default=3000, help="planner-3p games")
    p.add_argument("--ppo-games", type=int, default=1000, help="ppo-2p games")
    p.add_argument("--seed", type=int, default=4711)
    p.add_argument("--min-ratio", type=float, default=1.6, help="2 workers / 1 worker, at least")
    args = p.parse_args(argv)
    os.chdir(ROOT)  # the agents are named relative to the repository
    console = Console()
    console.print(f"{platform.processor() or platform.machine()}, {usable_cpus()} CPUs usable")
    for name in THREAD_VARIABLES:
        if name in os.environ:  # it limits the one-worker run too: not the default setup
            console.print(f"note: {name}={os.environ[name]} is set", style="yellow")
    games = {"planner-3p": args.planner_games, "ppo-2p": args.ppo_games}
    table = Table(title="games/s (from the first finished chunk; wall s: whole run)")
    for col in ("evaluation", "1 worker", "wall s", "2 workers", "wall s", "2/1", "target"):
        table.add_column(col, justify="left" if col == "evaluation" else "right")
    failed = False
    with Progress(
        "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
        console=console, transient=True,
    ) as bar:  # fmt: skip
        for name, (agents, players) in EVALUATIONS.items():
            for spec in agents:  # solved or loaded once, untimed, as evaluate.py does
                make_policy(spec).prepare(Rules())
            one, two = (
                measure(agents, players, games[name], args.seed, workers, bar) for workers in (1, 2)
            )
            if one["results"] != two["results"]:
                raise AssertionError(f"{name}: 1 and 2 workers played other games")
            ratio = two["games/s"] / one["games/s"]
            verdict = "PASS" if ratio >= args.min_ratio else "FAIL"
            failed |= verdict == "FAIL"
            runs = [c for r in (one, two) for c in (f"{r['games/s']:,.0f}", f"{r['wall']:.1f}")]
            table.add_row(name, *runs, f"{ratio:.2f}x", f">= {args.min_ratio:g}x {verdict}")
    console.print(table)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
