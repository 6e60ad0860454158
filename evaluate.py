"""Tournaments between any agents: bot names, SB3 checkpoints (.zip), exported bots.

    python evaluate.py A B [C ...] --games N --players K --seed S --workers W
                       [--hold free|all] [--per-game] [--ray [ADDRESS]]
                       [--json PATH] [--csv PATH] [--plot PATH.png]

Every K-subset of the agents plays N games, seats rotating so that each agent sits in
each seat equally often. Prints a table of win rates (Wilson 95% intervals), mean game
length and ratings (Elo scale, fitted to all the games at once: see
``agents.tournament.ratings``), plus the pairwise matrix for 2 players. Agents are
shown by short names (a shipped agent's folder, a run's name, an exported bot's file
name); the JSON and CSV also give each agent's spec as typed.

When every agent is a table-driven bot (random, threshold:T, smart, turn-ev, optimal),
the games are played thousands at a time (``agents.tournament``, batched): about ten
times faster, reproducible per seed, but not the same games as the per-game path, so
the numbers differ from older results within their intervals. ``--per-game`` plays
one game at a time, each seeded by its number, game for game as before.

``--ray`` plays the same games as Ray actors (``pip install -e '.[ray]'``): on a private
local Ray without an address, else on the cluster at ADDRESS (``auto``: the one started
on this machine by ``ray start --head``; HOST:PORT: its head). The results are those of
a local run with the same seed, game for game.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import sys
import time
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn
from rich.table import Table

from agents import MODEL_SUFFIXES, make_policy, ray_tools
from agents import tournament as tour
from agents.base import Policy, check_output_path, check_plot_path
from agents.neural import first_line
from envs.rules import HOLD_VARIANTS, Rules

# Luce's model: 400 points more make an agent 10 times as likely to win as another.
RATING_NOTE = "rating: Elo scale, mean 1500, +400 = 10x as likely to win; ± standard error"


def _identity(spec: str) -> str:
    """What makes two specs the same agent: the resolved file for a model, else the name."""
    spec = spec.strip()
    return str(Path(spec).resolve()) if spec.endswith(MODEL_SUFFIXES) else spec


def label_agents(specs: list[str], policies: list[Policy] | None = None) -> list[str]:
    """Display names: each policy's short name (checkpoints/ppo-2p/model.zip -> "ppo-2p",
    RUN/best/model.zip -> "RUN", bots/x.onnx -> "x", a bot's name), or the spec itself
    without policies. Different agents that would share a name are shown by the spec
    as typed instead; the same agent seated again gets #2, #3..."""
    short = [p.name for p in policies] if policies is not None else [s.strip() for s in specs]
    ids = [_identity(s) for s in specs]
    owners = Counter(name for name, _ in set(zip(short, ids, strict=True)))  # agents per name
    labels = [
        spec.strip() if owners[name] > 1 else name for spec, name in zip(specs, short, strict=True)
    ]
    # A typed spec may still meet another agent's short name: then the full path.
    taken = Counter(label for label, _ in set(zip(labels, ids, strict=True)))
    labels = [
        ident if taken[label] > 1 else label for label, ident in zip(labels, ids, strict=True)
    ]
    return [  # the n-th seat of the same agent
        label if (n := ids[: i + 1].count(ident)) == 1 else f"{label}#{n}"
        for i, (label, ident) in enumerate(zip(labels, ids, strict=True))
    ]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Play a tournament between 5000 agents.",
        epilog="Agents: random, threshold:T, smart, turn-ev, optimal, or a path to an SB3 "
        "checkpoint (.zip) or an exported bot (.onnx). Name an agent twice to seat two copies.",
    )
    p.add_argument("agents", nargs="+", help="agents to play")
    p.add_argument("--games", type=int, default=1000, help="games per matchup (default 1000)")
    p.add_argument("--players", type=int, default=2, help="players per game, 2..8 (default 2)")
    p.add_argument("--seed", type=int, default=0, help="tournament seed, >= 0 (default 0)")
    p.add_argument(
        "--workers",
        type=int,
        help="worker processes (default 1), or Ray actors with --ray (default: one per CPU "
        "of the Ray cluster)",
    )
    p.add_argument("--hold", choices=HOLD_VARIANTS, default="free", help="hold rule (R5)")
    p.add_argument("--max-turns", type=int, default=1000, help="turn limit per game")
    p.add_argument(
        "--per-game",
        action="store_true",
        help="play one game at a time even when every agent is batched (the same games as "
        "before batching, for exact comparison with older results; slower)",
    )
    p.add_argument(
        "--ray",
        nargs="?",
        const=ray_tools.LOCAL,
        metavar="ADDRESS",
        help="play on Ray: a local Ray without ADDRESS (--workers CPUs, else all), else the "
        "cluster at ADDRESS: 'auto' (started on this machine) or the head's HOST:PORT",
    )
    p.add_argument("--json", metavar="PATH", help="write the summary as JSON")
    p.add_argument("--csv", metavar="PATH", help="write per-agent results as CSV")
    p.add_argument("--plot", metavar="PATH.png", help="draw win rates (and the pairwise matrix)")
    p.add_argument("--markdown", metavar="PATH.md", help="write the tables as Markdown")
    return p.parse_args(argv)


def check_args(args: argparse.Namespace) -> None:
    """Raise ValueError (one line) for bad numbers or output paths, before any work (too
    few agents for --players: ``agents.tournament.schedule`` says so)."""
    if args.games < 1:
        raise ValueError(f"--games must be positive, got {args.games}")
    if not 2 <= args.players <= 8:
        raise ValueError(f"--players must be 2..8, got {args.players}")
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be positive, got {args.workers}")
    if args.seed < 0:
        raise ValueError(f"--seed must be 0 or more, got {args.seed}")
    if args.max_turns < args.players:
        raise ValueError(f"--max-turns must be at least --players, got {args.max_turns}")
    for option in ("json", "csv", "markdown"):
        if getattr(args, option):
            check_output_path(getattr(args, option), f"--{option}")
    if args.plot:
        check_plot_path(args.plot)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rules = Rules(hold=args.hold)
    with contextlib.ExitStack() as ray_session:  # a Ray started here stops at the end
        try:
            check_args(args)
            games = -(-args.games // args.players) * args.players  # seats rotate evenly
            seatings = tour.schedule(len(args.agents), args.players, games)
            # Fail fast, in this process; a trained model: does it fit this game?
            policies = [make_policy(spec) for spec in args.agents]
            for policy in policies:
                policy.check_game(args.players, rules)
            if args.ray:
                ray_session.enter_context(ray_tools.session(args.ray, num_cpus=args.workers))
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        return play_and_report(args, argv, rules, games, seatings, policies)


def play_and_report(args, argv, rules: Rules, games: int, seatings, policies) -> int:
    """Play the checked tournament (on Ray already joined with --ray), print its tables and
    write the outputs asked for; the exit code."""
    console = Console()
    err = Console(stderr=True)
    if games != args.games:
        err.print(f"note: {args.games} games per matchup rounded up to {games} to rotate seats")
    # Solve/load what needs it once, here, before workers start (they then read the cache).
    for policy in policies:
        policy.prepare(rules)
    names = label_agents(args.agents, policies)
    if args.ray:
        cpus = ray_tools.cluster_cpus()
        workers = min(args.workers or cpus, cpus)
        where = f"ray, {workers} CPU{'s' * (workers > 1)}"
    else:
        workers, note = tour.worker_count(args.workers or 1)
        if note:
            err.print(f"note: {note}")
        where = f"{workers} worker(s)"
    start = time.perf_counter()
    batched = not args.per_game and tour.is_batched(policies)
    try:
        results = run_with_bar(
            err,
            args.agents,
            seatings,
            rules,
            args.seed,
            workers=workers,
            max_turns=args.max_turns,
            batched=batched,
            ray=args.ray,
        )
    except RuntimeError as e:  # on Ray: a worker could not load an agent, or failed
        print(f"error: {e}", file=sys.stderr)
        return 1
    elapsed = time.perf_counter() - start
    summary = tour.summarize(names, results, args.players)
    for agent, spec in zip(summary["agents"], args.agents, strict=True):
        agent["spec"] = spec.strip()  # the short name's full form, for reports
    summary.update(
        {
            "command": " ".join(
                ["python", "evaluate.py", *(argv if argv is not None else sys.argv[1:])]
            ),
            "seed": args.seed,
            "hold": args.hold,
            "games_per_matchup": games,
            "batched": batched,
            "ray": args.ray,
            "seconds": elapsed,
        }
    )
    print_summary(console, summary)
    console.print(
        f"{len(results)} games in {elapsed:.1f} s ({len(results) / elapsed:,.0f} games/s, "
        f"{where}, {'batched' if batched else 'per game'}); "
        f"{summary['truncated']} cut off at {args.max_turns} turns"
    )
    return write_outputs(args, summary)


def run_with_bar(console: Console, specs, seatings, *args, transient=True, **kwargs) -> list:
    """``agents.tournament.run(specs, seatings, *args, **kwargs)`` with a progress bar of
    the games on `console`."""
    columns = (BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(
        "[progress.description]{task.description}", *columns, console=console, transient=transient
    ) as bar:
        task = bar.add_task("games", total=len(seatings))
        advance = lambda n: bar.advance(task, n)  # noqa: E731
        return tour.run(specs, seatings, *args, on_progress=advance, **kwargs)


def write_outputs(args: argparse.Namespace, summary: dict) -> int:
    """Write every output asked for; one that fails is reported in one line and the
    others are still written (the picture last: it is the likeliest to fail)."""
    writers = [
        (args.json, lambda path: Path(path).write_text(json.dumps(summary, indent=2))),
        (args.csv, lambda path: write_csv(path, summary)),
        (args.markdown, lambda path: Path(path).write_text(markdown(summary))),
        (args.plot, lambda path: plot(summary, path)),
    ]
    code = 0
    for path, write in writers:
        if not path:
            continue
        try:
            write(path)
        except Exception as e:  # disk full, permissions, matplotlib: say it, go on
            print(f"error: could not write {path}: {first_line(e)}", file=sys.stderr)
            code = 1
    return code


def print_whole(console: Console, table: Table) -> None:
    """Print `table` without cutting or folding any cell: a table wider than the
    console is printed at its own width (a terminal then wraps the long lines)."""
    natural = console.measure(table, options=console.options.update(max_width=10_000)).maximum
    width = console.width
    console.width = max(width, natural)
    try:
        console.print(table)
    finally:
        console.width = width


def print_summary(console: Console, summary: dict) -> None:
    table = Table(title=f"{summary['players']}-player tournament, {summary['games']} games")
    for col in ("agent", "games", "win rate", "95% interval", "mean turns", "rating ± s.e."):
        table.add_column(col, justify="left" if col == "agent" else "right", no_wrap=True)
    for a in sorted(summary["agents"], key=lambda a: -a["win_rate"]):
        table.add_row(*agent_cells(a))
    print_whole(console, table)
    console.print(RATING_NOTE, style="dim")
    if "pairwise" in summary:
        names = [a["agent"] for a in summary["agents"]]
        matrix = Table(title="row's win rate against column (± half the 95% interval)")
        matrix.add_column("", no_wrap=True)
        for name in names:
            matrix.add_column(name, justify="right", no_wrap=True)
        for row, cells in pairwise_rows(summary, names, _plus_minus):
            matrix.add_row(row, *cells)
        print_whole(console, matrix)


def agent_cells(a: dict) -> list[str]:
    """One agent's row of the tables: name, games, win rate, interval, turns, rating."""
    interval = f"{a['ci95_low']:.1%} - {a['ci95_high']:.1%}"
    rating = f"{a['rating']:.0f} ± {a['rating_se']:.0f}"
    cells = [a["agent"], str(a["games"]), f"{a['win_rate']:.1%}", interval]
    return cells + [f"{a['mean_game_turns']:.1f}", rating]


def pairwise_rows(summary: dict, names: list[str], cell_text) -> list[tuple[str, list[str]]]:
    """The 2-player matrix as (row agent, one text per column agent; "" on the diagonal)."""
    pairwise = summary["pairwise"]
    return [
        (row, [cell_text(pairwise[row][col]) if col in pairwise[row] else "" for col in names])
        for row in names
    ]


def _plus_minus(cell: dict) -> str:
    low, high = cell["ci95"]
    return f"{cell['win_rate']:.1%} ±{(high - low) / 2:.1%}"


def _with_interval(cell: dict) -> str:
    low, high = cell["ci95"]
    return f"{cell['win_rate']:.1%} ({low:.1%} - {high:.1%})"


def markdown(summary: dict) -> str:
    """The agent table and, for 2 players, the pairwise matrix, as Markdown."""
    lines = [
        "| agent | games | win rate | 95% interval | mean turns | rating (Elo scale) ± s.e. |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    agents = sorted(summary["agents"], key=lambda a: -a["win_rate"])
    lines += ["| " + " | ".join(agent_cells(a)) + " |" for a in agents]
    if "pairwise" in summary:
        names = [a["agent"] for a in agents]
        lines += ["", "| row wins against column | " + " | ".join(names) + " |"]
        lines.append("|---|" + "---:|" * len(names))
        for row, cells in pairwise_rows(summary, names, _with_interval):
            lines.append(f"| **{row}** | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_csv(path: str, summary: dict) -> None:
    fields = ["agent", "spec", "games", "wins", "win_rate", "ci95_low", "ci95_high"]
    fields += ["mean_game_turns", "rating", "rating_se"]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(summary["agents"])


def plot(summary: dict, path: str) -> None:
    import numpy as np

    agents = sorted(summary["agents"], key=lambda a: a["win_rate"])
    pairwise = summary.get("pairwise")
    size = (13 if pairwise else 7, 0.5 * len(agents) + 2.5)
    with figure(path, ncols=2 if pairwise else 1, figsize=size, squeeze=False) as (fig, axes):
        ax = axes[0][0]
        rates = np.array([a["win_rate"] for a in agents])
        low, high = (np.array([a[k] for a in agents]) for k in ("ci95_low", "ci95_high"))
        # Clipped: matplotlib refuses negative error bars, and interval bounds rounded
        # elsewhere (an older JSON) can cross the rate at 0% and 100%.
        err = np.clip([rates - low, high - rates], 0.0, None)
        ax.barh([a["agent"] for a in agents], rates, xerr=err, color="tab:blue", capsize=3)
        ax.axvline(1 / summary["players"], color="grey", ls="--", lw=1, label="fair share")
        ax.set_xlabel("win rate (95% Wilson interval)")
        ax.set_title(f"{summary['players']}-player games, seats rotated")
        ax.legend(loc="lower right")
        if pairwise:
            names = [a["agent"] for a in reversed(agents)]
            diagonal = {"win_rate": np.nan}  # no cell: an agent does not play itself
            grid = np.array(
                [[pairwise[r].get(c, diagonal)["win_rate"] for c in names] for r in names]
            )
            ax2 = axes[0][1]
            image = ax2.imshow(grid, cmap="RdBu", vmin=0, vmax=1)
            for (i, j), rate in np.ndenumerate(grid):
                if not np.isnan(rate):
                    ax2.text(j, i, f"{rate:.0%}", ha="center", va="center", fontsize=8)
            ax2.set_xticks(range(len(names)), names, rotation=45, ha="right")
            ax2.set_yticks(range(len(names)), names)
            ax2.set_title("row's win rate against column")
            fig.colorbar(image, ax=ax2, shrink=0.8)


@contextlib.contextmanager
def figure(path, **subplots):
    """``plt.subplots(**subplots)`` in a constrained layout, drawn without a display,
    saved to `path` (110 dpi) and closed at the end of the block."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(constrained_layout=True, **subplots)
    yield fig, axes
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
