"""What each house rule does to the game of 5000 (RULES.md V1-V5, R5): the seeds' rules
and every single change from them, measured under optimal 2-player play.

    python -m fivethousand_rl.agents.analysis [--games 20000] [--seed 0] [--out docs/analysis.md]

For each variant, from the exact 2-player solution (``envs.solver``, solved afresh and
timed):

- the first player's win probability when both play optimally;
- the fair start: the score the second player would have to begin with for the game
  to be even (where the first player's chance at scores (0, s) crosses one half,
  interpolated between the scores a player can have);

and from games of ``optimal`` against itself (``--games`` of them, played batched):

- the game's length in turns (mean and standard deviation);
- how often a game sees a bust, a bump, an overshoot gift and an overshoot lost.

The report (Markdown with PNG plots) ends with which rule moves the first player's
edge most and which moves the length most.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

from fivethousand_rl.agents.base import atomic_write, check_output_path, duration, figure
from fivethousand_rl.agents.batched import BatchedOptimalBot
from fivethousand_rl.envs.batch import ROLL_BUST, BatchGames, play_batch
from fivethousand_rl.envs.driver import DEFAULT_MAX_TURNS
from fivethousand_rl.envs.rules import BANK_BIT, Rules
from fivethousand_rl.envs.solver import solve_two_player

SEEDS = Rules()
# Each variant: a label, its rules, the rule it changes. The seeds' rules first.
VARIANTS: list[tuple[str, Rules, str]] = [
    ("seeds' rules", SEEDS, ""),
    ("entry 300", Rules(entry=300), "V1"),
    ("entry 350", Rules(entry=350), "V1"),
    ("entry 1000", Rules(entry=1000), "V1"),
    ("no bumps", Rules(bump=False), "V2"),
    ("overshoot lost", Rules(overshoot="lost"), "V3"),
    ("no 50 rule", Rules(fifty_rule=False), "V4"),
    ("target 3000", Rules(target=3000), "V5"),
    ("hold all", Rules(hold="all"), "R5"),
]
MAX_TURNS = DEFAULT_MAX_TURNS  # as the environments' turn limit (R11)


@dataclasses.dataclass
class Measured:
    """One variant's figures (per game: averages over the games played)."""

    label: str
    rules: Rules
    switch: str
    first_win: float  # exact
    fair_start: float | None  # exact (interpolated); None: even a start at the top is short
    fair_between: tuple[int, int]  # the two scores a player can have around it
    solve_seconds: float
    games: int
    turns_mean: float
    turns_sd: float
    busts: float
    bumps: float
    gifts: float
    lost: float
    cut_off: int  # games stopped by the turn limit


def fair_start(rules: Rules) -> tuple[float, float | None, tuple[int, int], float]:
    """(the first player's win probability, the fair start, the two scores a player can
    have around it, seconds to solve)."""
    start = time.perf_counter()
    sol = solve_two_player(rules)  # solved afresh (not from the cache), to time the solve
    seconds = time.perf_counter() - start
    first = sol.V[0, :]  # the first player at 0 against the second at each score
    scores = [int(s) for s in sol.scores]
    below = np.flatnonzero(first <= 0.5)
    if not below.size:
        return float(first[0]), None, (scores[-1], scores[-1]), seconds
    j = int(below[0])
    if j == 0:
        return float(first[0]), 0.0, (0, 0), seconds
    # first[j - 1] > 0.5 >= first[j]: the fair start lies between those scores.
    share = (first[j - 1] - 0.5) / (first[j - 1] - first[j])
    fair = scores[j - 1] + share * (scores[j] - scores[j - 1])
    return float(first[0]), float(fair), (scores[j - 1], scores[j]), seconds


def self_play(rules: Rules, n_games: int, seed: int) -> dict:
    """Games of optimal against itself, with what happened in them."""
    games = BatchGames(n_games, 2, rules)
    busts, bumps, gifts, lost = np.zeros((4, n_games), dtype=np.int64)
    before = games.scores.copy()  # scores change only when somebody banks

    def on_roll(idx, seats, totals, ids) -> None:
        np.add.at(busts, idx, ROLL_BUST[ids])

    def on_act(idx, actions) -> None:
        banked = idx[actions >= BANK_BIT]
        if not banked.size:
            return
        old, new = before[banked], games.scores[banked]
        banker = (games.current[banked] - 1) % 2  # the turn has passed on
        other = 1 - banker
        rows = np.arange(banked.size)
        old_other, new_other = old[rows, other], new[rows, other]
        np.add.at(bumps, banked, (old_other > 0) & (new_other == 0))
        np.add.at(gifts, banked, new_other > old_other)
        np.add.at(lost, banked, (old == new).all(axis=1))
        before[banked] = new

    bot = BatchedOptimalBot(show_progress=False)
    bot.prepare(rules)
    seats = np.zeros((n_games, 2), dtype=np.int64)
    rng = np.random.default_rng(seed)
    play_batch(
        games,
        np.arange(n_games),
        [bot],
        seats,
        rng,
        max_turns=MAX_TURNS,
        on_roll=on_roll,
        on_act=on_act,
    )
    done = games.winner >= 0
    turns = games.turns[done]
    return {
        "games": n_games,
        "turns_mean": float(turns.mean()),
        "turns_sd": float(turns.std()),
        "busts": float(busts.mean()),
        "bumps": float(bumps.mean()),
        "gifts": float(gifts.mean()),
        "lost": float(lost.mean()),
        "cut_off": int((~done).sum()),
    }


def measure(
    variants: list[tuple[str, Rules, str]], n_games: int, seed: int, show: bool = True
) -> list[Measured]:
    """Every variant measured, the first being the reference (a progress bar on the
    terminal)."""
    from rich.progress import Progress

    out = []
    with Progress(transient=True, disable=not show) as bar:
        task = bar.add_task("house rules", total=len(variants))
        for label, rules, switch in variants:
            bar.update(task, description=f"{label}: solving, then {n_games:,} games")
            first, fair, between, seconds = fair_start(rules)
            played = self_play(rules, n_games, seed)
            out.append(Measured(label, rules, switch, first, fair, between, seconds, **played))
            bar.advance(task)
    return out


def _plots(results: list[Measured], folder: Path) -> list[str]:
    """The report's pictures, written in `folder` (``figure``: atomically); their file
    names."""
    labels = [r.label for r in results]
    y = np.arange(len(results))

    def rows(ax, xlabel: str) -> None:
        """One row per variant, top down."""
        ax.set_yticks(y, labels)
        ax.invert_yaxis()
        ax.set_xlabel(xlabel)

    with figure(folder / "first_player.png", figsize=(7, 4)) as (fig, ax):
        ax.barh(y, [100 * r.first_win for r in results], color="tab:blue")
        ax.axvline(50, color="gray", linewidth=1)
        ax.axvline(100 * results[0].first_win, color="tab:blue", linestyle=":", linewidth=1)
        ax.set_xlim(49.5, 100 * max(r.first_win for r in results) + 0.5)
        rows(ax, "first player's win probability under optimal play (%)")
    with figure(folder / "length.png", figsize=(7, 4)) as (fig, ax):
        ax.barh(
            y,
            [r.turns_mean for r in results],
            xerr=[r.turns_sd for r in results],
            color="tab:green",
            capsize=3,
        )
        rows(ax, "turns per game, mean and standard deviation (optimal self-play)")
    with figure(folder / "events.png", figsize=(7, 4)) as (fig, ax):
        left = np.zeros(len(results))
        for field, color in (("bumps", "tab:red"), ("gifts", "tab:purple"), ("lost", "tab:gray")):
            values = np.array([getattr(r, field) for r in results])
            ax.barh(y, values, left=left, color=color, label=field)
            left += values
        ax.legend(loc="lower right")
        rows(ax, "per game (optimal self-play)")
    return ["first_player.png", "length.png", "events.png"]


def _fair(r: Measured) -> str:
    if r.fair_start is None:
        return "none suffices"
    low, high = r.fair_between
    if low == 0 and r.fair_start > 0:  # no score lies there: a start is 0 or entered
        return f"{r.fair_start:,.0f} (0 to {high:,})"
    return f"{r.fair_start:,.0f}"


def report(
    results: list[Measured], command: str, seconds: float, plots: list[str], folder: str
) -> str:
    """The Markdown report."""
    seeds = results[0]
    lines = [
        "# What each house rule does",
        "",
        "Generated by `" + command + f"` in {duration(seconds)}. Each row changes one rule "
        "of the seeds' rules (the rule numbers are those of the rules page); the first "
        "player's win probability and the fair start are exact (the 2-player solution), "
        f"the rest come from {seeds.games:,} games of `optimal` against itself per row.",
        "",
        "| rules | changes | first player wins | fair start for the second player "
        "| turns per game | busts | bumps | gifts | overshoots lost | solved in |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.label} | {r.switch or '-'} | {r.first_win:.2%} | {_fair(r)} "
            f"| {r.turns_mean:.1f} ± {r.turns_sd:.1f} | {r.busts:.2f} | {r.bumps:.3f} "
            f"| {r.gifts:.3f} | {r.lost:.3f} | {r.solve_seconds:.1f} s |"
        )
    cut = sum(r.cut_off for r in results)
    lines += [
        "",
        "The fair start is the score the second player would begin with for the first "
        "player's chance to be exactly one half, interpolated between the scores a player "
        "can have (in brackets). Where it lies between 0 and the first score a bank can "
        "give, no real start is fair: beginning with 0 leaves the first player's edge, "
        "beginning entered gives the second player a larger one; the number then measures "
        "the edge in points. Turns count both players' turns; ± is the standard "
        "deviation over games, not an interval. Events are counted per game. "
        + (f"{cut} games hit the turn limit and are left out of the lengths." if cut else ""),
        "",
    ]
    others = results[1:]
    edge = max(others, key=lambda r: abs(r.first_win - seeds.first_win))
    length = max(others, key=lambda r: abs(r.turns_mean - seeds.turns_mean))
    lines += [
        "## Which rule matters most",
        "",
        f"- For the first player's edge: **{edge.label}** ({edge.switch}), "
        f"{seeds.first_win:.2%} -> {edge.first_win:.2%}.",
        f"- For the game's length: **{length.label}** ({length.switch}), "
        f"{seeds.turns_mean:.1f} -> {length.turns_mean:.1f} turns per game.",
        "",
    ]
    for name in plots:
        lines += [f"![{name.removesuffix('.png')}]({folder}/{name})", ""]
    return "\n".join(lines)


def main(
    argv: list[str] | None = None, prog: str = "python -m fivethousand_rl.agents.analysis"
) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=20_000, help="self-play games per rule set")
    parser.add_argument("--seed", type=int, default=0, help="seed of the games")
    parser.add_argument("--out", default="docs/analysis.md", help="the report (.md); plots beside")
    args = parser.parse_args(argv)
    try:
        if args.games < 1 or args.seed < 0:
            raise ValueError("--games must be >= 1 and --seed >= 0")
        out = Path(args.out)
        if out.suffix != ".md":
            raise ValueError(f"--out must name a .md file, got {args.out}")
        check_output_path(out, "--out")
    except ValueError as e:
        parser.error(str(e))
    start = time.perf_counter()
    results = measure(VARIANTS, args.games, args.seed)
    folder = out.with_suffix("")  # docs/analysis/ beside docs/analysis.md
    folder.mkdir(parents=True, exist_ok=True)
    plots = _plots(results, folder)
    command = " ".join([prog, *(argv if argv is not None else sys.argv[1:])])
    text = report(results, command, time.perf_counter() - start, plots, folder.name)
    atomic_write(out, text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
