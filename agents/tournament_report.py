"""A tournament played and reported for people: checked before any game, played with a
progress bar, its summary (``fivethousand_rl.agents.tournament.summarize`` with how it was played)
printed as tables, written as Markdown or drawn; used by evaluate.py, ship.py (the model
cards' evaluations), sweep.py and demo.py. Agents are shown by short names (a shipped
agent's folder, a run's name, an exported bot's file name)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn
from rich.table import Table

from fivethousand_rl.agents import MODEL_SUFFIXES, make_policy, ray_tools
from fivethousand_rl.agents import tournament as tour
from fivethousand_rl.agents.base import Policy, figure
from fivethousand_rl.envs.rules import Rules

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


def tournament_games(
    specs: Sequence[str], players: int, games: int, rules: Rules
) -> tuple[int, list[tour.Seating], list[Policy]]:
    """A tournament checked before any game: the games per matchup (`games` rounded up
    to a multiple of `players`, so that seats rotate evenly), the seatings, and each
    agent's policy, checked to play this game and prepared for its rules (the optimal
    bot solved or loaded once, here, before any worker starts: they then read the
    cache); ValueError (one line) if anything is off."""
    games = -(-games // players) * players
    seatings = tour.schedule(len(specs), players, games)
    policies = [make_policy(spec) for spec in specs]
    for policy in policies:  # a trained model: does it fit this game (its rules)?
        policy.check_game(players, rules)
    for policy in policies:
        policy.prepare(rules)
    return games, seatings, policies


def play_and_report(
    specs: Sequence[str],
    games: int,
    seatings: list[tour.Seating],
    policies: list[Policy],
    rules: Rules,
    seed: int,
    command: str,
    *,
    asked: int,
    workers: int | None,
    max_turns: int = 1000,
    per_game: bool = False,
    ray: str | None = None,
    shown: Sequence[str] | None = None,
) -> dict:
    """Play the tournament of ``tournament_games`` (its games per matchup, seatings and
    policies; `asked`: the games asked) with a progress bar (on Ray, joined already,
    with `ray`), and print its tables; its summary with how it was played (the command,
    seed, rules...), each agent's spec given as in `shown` (default: `specs`).
    RuntimeError if the games failed (on Ray: a worker could not load an agent, or
    failed)."""
    console, err = Console(), Console(stderr=True)
    if games != asked:
        err.print(f"note: {asked} games per matchup rounded up to {games} to rotate seats")
    shown = [spec.strip() for spec in (shown or specs)]
    names = label_agents(shown, policies)
    if ray:
        cpus = ray_tools.cluster_cpus()
        workers = min(workers or cpus, cpus)
        where = f"ray, {workers} CPU{'s' * (workers > 1)}"
    else:
        workers, note = tour.worker_count(workers or 1)
        if note:
            err.print(f"note: {note}")
        where = f"{workers} worker(s)"
    start = time.perf_counter()
    batched = not per_game and tour.is_batched(policies)
    options = {"workers": workers, "max_turns": max_turns, "batched": batched, "ray": ray}
    results = run_with_bar(err, list(specs), seatings, rules, seed, **options)
    elapsed = time.perf_counter() - start
    summary = tour.summarize(names, results, len(seatings[0].agents))
    for agent, spec in zip(summary["agents"], shown, strict=True):
        agent["spec"] = spec  # the short name's full form, for reports
    summary.update(command=command, seed=seed, rules=rules.to_dict(), hold=rules.hold)
    summary.update(games_per_matchup=games, batched=batched, ray=ray, seconds=elapsed)
    print_summary(console, summary)
    console.print(
        f"{len(results)} games in {elapsed:.1f} s ({len(results) / elapsed:,.0f} games/s, "
        f"{where}, {'batched' if batched else 'per game'}); "
        f"{summary['truncated']} cut off at {max_turns} turns"
    )
    return summary


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
    """The summary's agent table and, for 2 players, its pairwise matrix, on `console`."""
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
        for row, cells in pairwise_rows(summary, names, "{rate:.1%} ±{half:.1%}"):
            matrix.add_row(row, *cells)
        print_whole(console, matrix)


def agent_cells(a: dict) -> list[str]:
    """One agent's row of the tables: name, games, win rate, interval, turns, rating."""
    interval = f"{a['ci95_low']:.1%} - {a['ci95_high']:.1%}"
    rating = f"{a['rating']:.0f} ± {a['rating_se']:.0f}"
    cells = [a["agent"], str(a["games"]), f"{a['win_rate']:.1%}", interval]
    return cells + [f"{a['mean_game_turns']:.1f}", rating]


def pairwise_rows(summary: dict, names: list[str], cell: str) -> list[tuple[str, list[str]]]:
    """The 2-player matrix as (row agent, one text per column agent; "" on the diagonal),
    each `cell` formatted with the row's win rate (rate) against the column and its
    interval (low, high; half its width)."""

    def text(row: str, col: str) -> str:
        if col not in summary["pairwise"][row]:
            return ""
        played = summary["pairwise"][row][col]
        low, high = played["ci95"]
        return cell.format(rate=played["win_rate"], low=low, high=high, half=(high - low) / 2)

    return [(row, [text(row, col) for col in names]) for row in names]


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
        for row, cells in pairwise_rows(summary, names, "{rate:.1%} ({low:.1%} - {high:.1%})"):
            lines.append(f"| **{row}** | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(summary: dict, path: str | Path) -> None:
    """The win rates (95% intervals) and, for 2 players, the pairwise matrix, drawn."""
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
