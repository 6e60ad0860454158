"""Tournaments between any agents: bot names, shipped agents by name (planner-2p,
ppo-2p, ...), SB3 checkpoints (.zip), value nets (.npz), exported bots (.onnx), an
installed plugin's bots, your own agent as MODULE:FUNCTION or FILE.py:FUNCTION.

    python evaluate.py A B [C ...] --games N --players K --seed S --workers W
                       [rule flags] [--per-game] [--ray [ADDRESS]]
                       [--json PATH] [--csv PATH] [--plot PATH.png]
    python evaluate.py planner-2p ppo-2p smart optimal --games 2000
    python evaluate.py smart turn-ev optimal --no-bump --overshoot lost --entry 300

The rule flags (``fivethousand_rl.agents.rule_flags``: --hold, --target, --entry, --bump/--no-bump,
--overshoot, --fifty-rule/--no-fifty-rule; RULES.md R5, V1-V5) choose the game: any
bot plays any rules, a trained agent only the rules it was trained for (refused in one
line otherwise). The JSON records them (``rules``), the Markdown says them first.

Installed, the same program is ``fivethousand evaluate``.

Every K-subset of the agents plays N games, seats rotating so that each agent sits in
each seat equally often. Prints a table of win rates (Wilson 95% intervals), mean game
length and ratings (Elo scale, fitted to all the games at once: see
``fivethousand_rl.agents.tournament.ratings``), plus the pairwise matrix for 2 players
(``fivethousand_rl.agents.tournament_report``). Agents are shown by short names (a shipped agent's
folder, a run's name, an exported bot's file name); the JSON and CSV also give each
agent's spec as typed.

When every agent is a table-driven bot (random, threshold:T, smart, turn-ev, optimal),
the games are played thousands at a time (``fivethousand_rl.agents.tournament``, batched): about ten
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
from pathlib import Path

from fivethousand_rl.agents import ray_tools
from fivethousand_rl.agents import tournament_report as report
from fivethousand_rl.agents.base import atomic_write, check_output_path, check_plot_path
from fivethousand_rl.agents.neural import first_line
from fivethousand_rl.agents.rule_flags import (
    OneLineParser,
    add_rule_flags,
    describe_rules,
    house_rules,
    rule_flags,
    rules_from_args,
)
from fivethousand_rl.agents.shipped import SHIPPED
from fivethousand_rl.envs.game import check_players
from fivethousand_rl.envs.rules import Rules


def parse_args(argv: list[str] | None, prog: str | None = None) -> argparse.Namespace:
    p = OneLineParser(
        prog=prog,
        description="Play a tournament between 5000 agents.",
        epilog="Agents: random, threshold:T, smart, turn-ev, optimal, a shipped agent "
        f"({', '.join(SHIPPED)}), or a path to an SB3 checkpoint (.zip), a value net (.npz) "
        "or an exported bot (.onnx), a plugin's bot, or your own agent as MODULE:FUNCTION or "
        "FILE.py:FUNCTION (a function returning a Policy). Name an agent twice to seat two "
        "copies.",
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
    add_rule_flags(p)
    return p.parse_args(argv)


def check_args(args: argparse.Namespace) -> None:
    """Raise ValueError (one line) for bad numbers or output paths, before any work (too
    few agents for --players: ``fivethousand_rl.agents.tournament.schedule`` says so)."""
    if args.games < 1:
        raise ValueError(f"--games must be positive, got {args.games}")
    check_players(args.players, "--players")
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


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The command line's exit code; `prog`: the command as typed, for its usage and the
    command the results record (default: this script's)."""
    args = parse_args(argv, prog)
    with contextlib.ExitStack() as ray_session:  # a Ray started here stops at the end
        try:
            rules = rules_from_args(args)
            check_args(args)
            # Fail fast, in this process: the schedule, and each agent fits this game.
            tournament = report.tournament_games(args.agents, args.players, args.games, rules)
            if args.ray:
                ray_session.enter_context(ray_tools.session(args.ray, num_cpus=args.workers))
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        typed = [prog or "python evaluate.py", *(argv if argv is not None else sys.argv[1:])]
        command = " ".join(typed)
        options = {"asked": args.games, "workers": args.workers, "max_turns": args.max_turns}
        options |= {"per_game": args.per_game, "ray": args.ray}
        try:
            summary = report.play_and_report(
                args.agents, *tournament, rules, args.seed, command, **options
            )
        except RuntimeError as e:  # on Ray: a worker could not load an agent, or failed
            print(f"error: {e}", file=sys.stderr)
            return 1
        return write_outputs(args, summary)


def write_outputs(args: argparse.Namespace, summary: dict) -> int:
    """Write every output asked for, each whole or not at all (atomic_write: a full disk
    leaves no empty or cut file, and an older file as it was); one that fails is reported
    in one line and the others are still written (the picture last: the likeliest to
    fail)."""
    writers = [  # each writes the file at the (temporary) name it is given
        (args.json, lambda path: Path(path).write_text(json.dumps(summary, indent=2))),
        (args.csv, lambda path: write_csv(path, summary)),
        (args.markdown, lambda path: Path(path).write_text(markdown(summary))),
        (args.plot, lambda path: report.plot(summary, path)),
    ]
    code = 0
    for path, write in writers:
        if not path:
            continue
        try:
            atomic_write(path, write)
        except Exception as e:  # disk full, permissions, matplotlib: say it, go on
            print(f"error: could not write {path}: {first_line(e)}", file=sys.stderr)
            code = 1
    return code


def markdown(summary: dict) -> str:
    """The tables as Markdown, after the rules they were played under (RULES.md V1-V5)."""
    rules = Rules(**summary["rules"])
    house = house_rules(rules)
    kind = f"house rules: {', '.join(house)}" if house else "the standard rules"
    flags = f"`{' '.join(rule_flags(rules))}`" if house else "no rule flags"
    return f"Rules: {describe_rules(rules)} ({kind}; {flags}).\n\n" + report.markdown(summary)


def write_csv(path: str, summary: dict) -> None:
    fields = ["agent", "spec", "games", "wins", "win_rate", "ci95_low", "ci95_high"]
    fields += ["mean_game_turns", "rating", "rating_se"]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(summary["agents"])
