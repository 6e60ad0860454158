"""2-player agents side by side against `optimal`: win rate and exact regret by kind.

    python benchmarks/side_by_side.py --games 20000 --regret-games 2000 --workers 2 \\
        --markdown docs/side_by_side.md

For each agent (default: optimal, the shipped planner-2p, ppo-2p, smart, turn-ev):
its win rate against `optimal` over `--games` games, seats rotated (agents.tournament,
as evaluate.py plays them), and the win probability its decisions give away per game
against the exact solution (fivethousand_rl.agents.regret), split by kind of mistake: banking when
rolling on was better, rolling on when banking was, holding the wrong dice.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fivethousand_rl.agents import make_policy  # noqa: E402
from fivethousand_rl.agents.regret import measure  # noqa: E402
from fivethousand_rl.agents.tournament import run, schedule, wilson_interval  # noqa: E402
from fivethousand_rl.envs.rules import Rules  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_AGENTS = [
    "optimal", "checkpoints/planner-2p/value_net.npz", "checkpoints/ppo-2p/model.zip", "smart",
    "turn-ev",
]  # fmt: skip
KINDS = ("banked, should roll on", "rolled on, should bank", "held the wrong dice")


def row(agent: str, args: argparse.Namespace, rules: Rules) -> dict:
    """One agent's win rate against optimal and its regrets per game by kind."""
    results = run([agent, "optimal"], schedule(2, 2, args.games), rules, args.seed, args.workers)
    wins = sum(r.winner_seat is not None and r.agents[r.winner_seat] == 0 for r in results)
    report = measure(agent, "optimal", args.regret_games, args.seed, rules).to_dict(top=10)
    by_kind = {r["situation"]: r["regret_per_game"] for r in report["player_regret_by_kind"]}
    return {
        "agent": make_policy(agent).name,  # as evaluate.py names it
        "games": args.games,
        "win_rate": wins / args.games,
        "ci95": list(wilson_interval(wins, args.games)),
        "regret_games": args.regret_games,
        "regret_per_game": report["regret_per_game"]["player"],
        "regret_by_kind": {kind: by_kind.get(kind, 0.0) for kind in KINDS},
        "decisions_per_game": report["decisions_per_game"]["player"],
    }


def markdown(rows: list[dict], args: argparse.Namespace) -> str:
    lines = [
        f"| agent | win rate vs optimal ({args.games:,} games) | 95% interval | regret per "
        f"game ({args.regret_games:,} games) | {' | '.join(KINDS)} |",
        "|---|---:|---:|---:|" + "---:|" * len(KINDS),
    ]
    for r in rows:
        low, high = r["ci95"]
        kinds = " | ".join(f"{r['regret_by_kind'][k]:.4f}" for k in KINDS)
        lines.append(
            f"| {r['agent']} | {r['win_rate']:.1%} | {low:.1%} - {high:.1%} "
            f"| {r['regret_per_game']:.4f} | {kinds} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("agents", nargs="*", default=DEFAULT_AGENTS, help="agent names")
    parser.add_argument("--games", type=int, default=20_000, help="games against optimal")
    parser.add_argument("--regret-games", type=int, default=2_000, help="games audited")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--markdown", metavar="PATH", help="also write the table here")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    rules = Rules()
    try:
        if args.games < 2 or args.games % 2 or args.regret_games < 1 or args.seed < 0:
            raise ValueError("--games must be even and >= 2, --regret-games >= 1, --seed >= 0")
        agents = [str(ROOT / a) if (ROOT / a).is_file() else a for a in args.agents]
        for agent in agents:
            make_policy(agent).check_game(2, rules)  # every name checked before any game
        make_policy("optimal").prepare(rules)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    rows = []
    for agent in agents:
        rows.append(row(agent, args, rules))
        print(f"{rows[-1]['agent']}: {rows[-1]['win_rate']:.1%} against optimal", flush=True)
    table = markdown(rows, args)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
