"""Tournaments between any agents: bot names, SB3 checkpoints (.zip), exported bots.

    python evaluate.py A B [C ...] --games N --players K --seed S --workers W
                       [--hold free|all] [--json PATH] [--csv PATH] [--plot PATH.png]

Every K-subset of the agents plays N games, seats rotating so that each agent sits in
each seat equally often. Prints a table of win rates (Wilson 95% intervals), mean game
length and openskill ratings, plus the pairwise matrix for 2 players.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections import Counter

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn
from rich.table import Table

from agents import make_policy
from agents import tournament as tour
from envs.rules import Rules


def label_agents(specs: list[str]) -> list[str]:
    """Display names: the spec, with #2, #3... for repeats."""
    seen: Counter = Counter()
    names = []
    for spec in specs:
        seen[spec] += 1
        names.append(spec if seen[spec] == 1 else f"{spec}#{seen[spec]}")
    return names


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Play a tournament between 5000 agents.",
        epilog="Agents: random, threshold:T, smart, turn-ev, optimal, or a path to an SB3 "
        "checkpoint (.zip) or an exported bot (.onnx). Name an agent twice to seat two copies.",
    )
    p.add_argument("agents", nargs="+", help="agents to play")
    p.add_argument("--games", type=int, default=1000, help="games per matchup (default 1000)")
    p.add_argument("--players", type=int, default=2, help="players per game, 2..8 (default 2)")
    p.add_argument("--seed", type=int, default=0, help="tournament seed (default 0)")
    p.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--hold", choices=["free", "all"], default="free", help="hold rule (R5)")
    p.add_argument("--max-turns", type=int, default=1000, help="turn limit per game")
    p.add_argument("--json", metavar="PATH", help="write the summary as JSON")
    p.add_argument("--csv", metavar="PATH", help="write per-agent results as CSV")
    p.add_argument("--plot", metavar="PATH.png", help="draw win rates (and the pairwise matrix)")
    p.add_argument("--markdown", metavar="PATH.md", help="write the tables as Markdown")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    console = Console()
    err = Console(stderr=True)
    rules = Rules(hold=args.hold)
    try:
        if args.games < 1:
            raise ValueError(f"--games must be positive, got {args.games}")
        if args.workers < 1:
            raise ValueError(f"--workers must be positive, got {args.workers}")
        if args.max_turns < args.players:
            raise ValueError(f"--max-turns must be at least --players, got {args.max_turns}")
        games = -(-args.games // args.players) * args.players  # seats rotate evenly
        policies = [make_policy(spec) for spec in args.agents]  # fail fast, in this process
        for policy in policies:
            if hasattr(policy, "check_game"):  # a trained model: does it fit this game?
                policy.check_game(args.players, rules)
        seatings = tour.schedule(len(args.agents), args.players, games)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if games != args.games:
        err.print(f"note: {args.games} games per matchup rounded up to {games} to rotate seats")
    # Solve/load what needs it once, here, before workers start (they then read the cache).
    for policy in policies:
        if hasattr(policy, "solution"):
            policy.solution(rules)
    names = label_agents(args.agents)
    start = time.perf_counter()
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task("games", total=len(seatings))
        results = tour.run(
            args.agents,
            seatings,
            rules,
            args.seed,
            workers=args.workers,
            max_turns=args.max_turns,
            on_progress=lambda n: bar.advance(task, n),
        )
    elapsed = time.perf_counter() - start
    summary = tour.summarize(names, results, args.players)
    summary.update(
        {
            "command": " ".join(
                ["python", "evaluate.py", *(argv if argv is not None else sys.argv[1:])]
            ),
            "seed": args.seed,
            "hold": args.hold,
            "games_per_matchup": games,
            "seconds": elapsed,
        }
    )
    print_summary(console, summary)
    console.print(
        f"{len(results)} games in {elapsed:.1f} s ({len(results) / elapsed:,.0f} games/s, "
        f"{args.workers} worker(s)); {summary['truncated']} cut off at {args.max_turns} turns"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)
    if args.csv:
        write_csv(args.csv, summary)
    if args.plot:
        plot(summary, args.plot)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(summary))
    return 0


def print_summary(console: Console, summary: dict) -> None:
    table = Table(title=f"{summary['players']}-player tournament, {summary['games']} games")
    for col in ("agent", "games", "win rate", "95% CI", "mean turns", "rating (mu ± sigma)"):
        table.add_column(col, justify="left" if col == "agent" else "right")
    for a in sorted(summary["agents"], key=lambda a: -a["win_rate"]):
        table.add_row(
            a["agent"],
            str(a["games"]),
            f"{a['win_rate']:.1%}",
            f"{a['ci95_low']:.1%} - {a['ci95_high']:.1%}",
            f"{a['mean_game_turns']:.1f}",
            f"{a['rating_mu']:.2f} ± {a['rating_sigma']:.2f}",
        )
    console.print(table)
    if "pairwise" in summary:
        names = [a["agent"] for a in summary["agents"]]
        matrix = Table(title="row's win rate against column (± half the 95% interval)")
        matrix.add_column("")
        for name in names:
            matrix.add_column(name, justify="right")
        for row in names:
            cells = []
            for col in names:
                cell = summary["pairwise"][row].get(col)
                if cell is None:
                    cells.append("")
                else:
                    half = (cell["ci95"][1] - cell["ci95"][0]) / 2
                    cells.append(f"{cell['win_rate']:.1%} ±{half:.1%}")
            matrix.add_row(row, *cells)
        console.print(matrix)


def markdown(summary: dict) -> str:
    """The agent table and, for 2 players, the pairwise matrix, as Markdown."""
    lines = [
        "| agent | games | win rate | 95% interval | mean turns | openskill mu ± sigma |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    agents = sorted(summary["agents"], key=lambda a: -a["win_rate"])
    for a in agents:
        lines.append(
            f"| {a['agent']} | {a['games']} | {a['win_rate']:.1%} | "
            f"{a['ci95_low']:.1%} - {a['ci95_high']:.1%} | {a['mean_game_turns']:.1f} | "
            f"{a['rating_mu']:.2f} ± {a['rating_sigma']:.2f} |"
        )
    if "pairwise" in summary:
        names = [a["agent"] for a in agents]
        lines += ["", "| row wins against column | " + " | ".join(names) + " |"]
        lines.append("|---|" + "---:|" * len(names))
        for row in names:
            cells = []
            for col in names:
                cell = summary["pairwise"][row].get(col)
                if cell is None:
                    cells.append("")
                else:
                    low, high = cell["ci95"]
                    cells.append(f"{cell['win_rate']:.1%} ({low:.1%} - {high:.1%})")
            lines.append(f"| **{row}** | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_csv(path: str, summary: dict) -> None:
    fields = ["agent", "games", "wins", "win_rate", "ci95_low", "ci95_high", "mean_game_turns"]
    fields += ["rating_mu", "rating_sigma", "rating_ordinal"]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(summary["agents"])


def plot(summary: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    agents = sorted(summary["agents"], key=lambda a: a["win_rate"])
    pairwise = summary.get("pairwise")
    fig, axes = plt.subplots(
        1,
        2 if pairwise else 1,
        figsize=(13 if pairwise else 7, 0.5 * len(agents) + 2.5),
        squeeze=False,
        constrained_layout=True,
    )
    ax = axes[0][0]
    rates = [a["win_rate"] for a in agents]
    err = [
        [a["win_rate"] - a["ci95_low"] for a in agents],
        [a["ci95_high"] - a["win_rate"] for a in agents],
    ]
    ax.barh([a["agent"] for a in agents], rates, xerr=err, color="tab:blue", capsize=3)
    ax.axvline(1 / summary["players"], color="grey", ls="--", lw=1, label="fair share")
    ax.set_xlabel("win rate (95% Wilson interval)")
    ax.set_title(f"{summary['players']}-player games, seats rotated")
    ax.legend(loc="lower right")
    if pairwise:
        names = [a["agent"] for a in reversed(agents)]
        grid = np.full((len(names), len(names)), np.nan)
        for i, row in enumerate(names):
            for j, col in enumerate(names):
                if col in pairwise[row]:
                    grid[i, j] = pairwise[row][col]["win_rate"]
        ax2 = axes[0][1]
        image = ax2.imshow(grid, cmap="RdBu", vmin=0, vmax=1)
        for i in range(len(names)):
            for j in range(len(names)):
                if not np.isnan(grid[i, j]):
                    ax2.text(j, i, f"{grid[i, j]:.0%}", ha="center", va="center", fontsize=8)
        ax2.set_xticks(range(len(names)), names, rotation=45, ha="right")
        ax2.set_yticks(range(len(names)), names)
        ax2.set_title("row's win rate against column")
        fig.colorbar(image, ax=ax2, shrink=0.8)
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
