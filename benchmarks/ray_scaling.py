"""Tournament games/s against CPUs: local worker processes and local Ray, 1 and 2 CPUs.

    python benchmarks/ray_scaling.py [--blocks 4] [--per-game-games 6000] \\
        [--markdown docs/ray_scaling.md]

Plays two 2-player tournaments of scripted bots (smart, turn-ev, threshold:350), as
``evaluate.py`` does (``fivethousand_rl.agents.tournament.run``): a batched one of about `--blocks`
blocks of 65,536 games (a block is the batched path's unit of work) and a per-game one
(chunks of 250 games), each with 1 and 2 local worker processes (``--workers``) and
on a private local Ray of 1 and 2 CPUs (``--ray``, one actor per CPU). Times are wall
clock for the whole ``run`` call, starting the workers or actors included; starting
Ray itself is shown apart. Every Ray run is checked to give the local games, game for
game. Needs Ray (``pip install -e '.[ray]'``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from fivethousand_rl.agents import ray_tools  # noqa: E402
from fivethousand_rl.agents import tournament as tour  # noqa: E402
from fivethousand_rl.envs.rules import Rules  # noqa: E402

BOTS = ["smart", "turn-ev", "threshold:350"]
SETUPS = [("local", 1), ("local", 2), ("ray", 1), ("ray", 2)]  # (where, CPUs)


def tournaments(blocks: int, per_game_games: int) -> dict[str, tuple[list, bool]]:
    """The two tournaments: name -> (seatings, batched)."""
    pairings = len(BOTS) * (len(BOTS) - 1) // 2
    batched = blocks * tour.BLOCK // pairings // 2 * 2  # games per pairing, seats rotated
    per_game = -(-per_game_games // pairings // 2) * 2
    return {
        "batched": (tour.schedule(len(BOTS), 2, batched), True),
        "per game": (tour.schedule(len(BOTS), 2, per_game), False),
    }


def measure(blocks: int, per_game_games: int, seed: int) -> tuple[dict, dict]:
    """games/s by (tournament, where, CPUs), and the seconds Ray took to start by CPUs."""
    rates, starts, reference = {}, {}, {}  # by (tournament, where, CPUs), CPUs, tournament
    games = tournaments(blocks, per_game_games)
    for where, cpus in SETUPS:
        ray = ray_tools.LOCAL if where == "ray" else None
        start = time.perf_counter()
        with ray_tools.session(ray, cpus) if ray else contextlib.nullcontext():
            if ray:
                starts[cpus] = time.perf_counter() - start
            for name, (seatings, batched) in games.items():
                start = time.perf_counter()
                results = tour.run(BOTS, seatings, Rules(), seed, cpus, batched=batched, ray=ray)
                rates[name, where, cpus] = len(seatings) / (time.perf_counter() - start)
                if reference.setdefault(name, results) != results:
                    raise AssertionError(f"{name} on {where} with {cpus} CPUs: other games")
    return rates, starts


def rows(rates: dict) -> list[list[str]]:
    """Per tournament: games/s in each setup, and 2 CPUs' speed-up over 1."""
    out = []
    for name in ("batched", "per game"):
        cells = [f"{rates[name, where, cpus]:,.0f}" for where, cpus in SETUPS]
        ups = [rates[name, where, 2] / rates[name, where, 1] for where in ("local", "ray")]
        out.append([name, *cells, *(f"{up:.2f}x" for up in ups)])
    return out


HEADER = [
    "tournament", "local, 1 worker", "local, 2 workers", "Ray, 1 CPU", "Ray, 2 CPUs",
    "local 2/1", "Ray 2/1",
]  # fmt: skip


def markdown(rates: dict, starts: dict, args: argparse.Namespace, load: tuple) -> str:
    games = {n: len(s) for n, (s, _) in tournaments(args.blocks, args.per_game_games).items()}
    lines = [
        "# Tournaments on Ray: games/s against CPUs",
        "",
        f"`python benchmarks/ray_scaling.py --blocks {args.blocks} --per-game-games "
        f"{args.per_game_games} --markdown docs/ray_scaling.md`: 2-player tournaments of "
        f"{', '.join(BOTS)} (seed {args.seed}), batched ({games['batched']:,} games, blocks "
        f"of {tour.BLOCK:,}) and per game ({games['per game']:,} games, chunks of 250), "
        "with local worker processes (`evaluate.py --workers N`) and on a private local Ray "
        "(`evaluate.py --ray --workers N`: one actor per CPU). Games/s over the whole run, "
        "starting the workers or actors included; every Ray run played the local games, "
        "game for game.",
        "",
        "| " + " | ".join(HEADER) + " |",
        "|---|" + "---:|" * (len(HEADER) - 1),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows(rates)]
    lines += [
        "",
        f"Starting Ray itself (once per command, not counted above): "
        f"{starts[1]:.1f} s with 1 CPU, {starts[2]:.1f} s with 2.",
        "",
        f"Machine: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}; load average {load[0]:.1f} when the benchmark "
        f"started, {load[1]:.1f} when it ended. A load near the number of CPUs or above "
        "means a second worker found no free core: the 2/1 columns then measure the "
        "contention as much as what a second CPU gives.",
        "",
        "Reading it:",
        "",
        "- The work splits into independent tasks: blocks of 65,536 games (batched) or "
        "chunks of 250 games (per game), one at a time per worker or actor. On free CPUs "
        "games/s grows with the CPUs up to the number of tasks: a batched tournament of "
        "fewer than 65,536 games is one task and uses one CPU, wherever it runs.",
        "- Ray costs a fixed start per command: Ray itself (above), then the actors (a "
        "process each, which builds the agents once: a second or two), and sending each "
        "task's seatings and results (about half a second per batched block, pickled; "
        "local worker processes pay that too, the single local worker does not). Worth "
        "it for tournaments of minutes, and for more CPUs than one machine has.",
        "- Ray's own default runs its workers at nice 15 (`RAY_worker_niceness`), behind "
        "any other work on the machine; the private local Ray of `--ray` starts them at "
        "nice 0. On a cluster it is `ray start`'s environment that decides.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=4, help="batched blocks (of 65,536 games)")
    parser.add_argument("--per-game-games", type=int, default=6000, help="per-game games")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", metavar="PATH", help="also write the table here")
    args = parser.parse_args(argv)
    try:
        ray_tools.require_ray()
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    first_load = os.getloadavg()[0]
    rates, starts = measure(args.blocks, args.per_game_games, args.seed)
    load = (first_load, os.getloadavg()[0])
    table = Table(title="tournament games/s (2 players, scripted bots)")
    for i, col in enumerate(HEADER):
        table.add_column(col, justify="left" if i == 0 else "right")
    for row in rows(rates):
        table.add_row(*row)
    console = Console()
    console.print(table)
    console.print(f"Ray start: {starts[1]:.1f} s (1 CPU), {starts[2]:.1f} s (2 CPUs)")
    console.print(f"load average {load[0]:.1f} at the start, {load[1]:.1f} at the end")
    if args.markdown:
        Path(args.markdown).write_text(markdown(rates, starts, args, load))
    return 0


if __name__ == "__main__":
    sys.exit(main())
