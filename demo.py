"""The main job of `make demo`: train a small agent, then measure it.

    python demo.py [--seed 0] [--games 400]      # train (a few minutes), then evaluate
    python demo.py --watch [--bots smart random] # watch bots play a match instead

Training uses the `quick` preset of train.py (run folder checkpoints/demo_quick, replaced
each time). The evaluation table shows the new agent and the shipped 2-player agent
(checkpoints/ppo-2p) against each bot, seats alternating.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from rich.console import Console
from rich.table import Table

from agents import make_policy
from envs.game import OVER, ROLL, Game
from envs.rules import BANK_BIT, Rules, describe_action


def score_table(game: Game, names: list[str]) -> Table:
    s = game.state
    table = Table(title=f"after {s.turns} turns", title_justify="left")
    table.add_column("seat")
    table.add_column("bot")
    table.add_column("score", justify="right")
    for seat, (name, score) in enumerate(zip(names, s.scores, strict=True)):
        style = "bold green" if seat == s.winner else None
        table.add_row(str(seat), name, f"{score}" if score else "0 (not entered)", style=style)
    return table


def train_and_evaluate(seed: int, games: int, workers: int) -> int:
    import shutil
    from pathlib import Path

    import train
    from agents.tournament import run, schedule, summarize

    console = Console()
    root = Path(__file__).resolve().parent
    run_dir = root / "checkpoints" / "demo_quick"
    if run_dir.exists():
        shutil.rmtree(run_dir)  # the demo's own scratch run
    console.rule("training a small agent: python train.py --preset quick")
    code = train.main(["--preset", "quick", "--run-name", "demo_quick", "--seed", str(seed)])
    if code != 0:
        return code
    agents = {"new agent (quick preset)": str(run_dir / "best" / "model.zip")}
    shipped = root / "checkpoints" / "ppo-2p" / "model.zip"
    if shipped.is_file():
        agents["shipped ppo-2p"] = str(shipped)
    bots = ["optimal", "smart", "turn-ev", "threshold:350", "random"]
    games += games % 2
    table = Table(title=f"win rate against each bot, {games} games each, seats alternating")
    table.add_column("agent")
    for bot in bots:
        table.add_column(bot, justify="right")
    console.rule("evaluating")
    for label, path in agents.items():
        cells = []
        for bot in bots:
            results = run([path, bot], schedule(2, 2, games), Rules(), seed, workers=workers)
            me = summarize([label, bot], results, 2)["agents"][0]
            half = (me["ci95_high"] - me["ci95_low"]) / 2
            cells.append(f"{me['win_rate']:.1%} ±{half:.1%}")
        table.add_row(label, *cells)
    console.print(table)
    return 0


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if "--watch" not in argv:
        parser = argparse.ArgumentParser(description="Train a small agent, then evaluate it.")
        parser.add_argument("--seed", type=int, default=0, help="seed of training and games")
        parser.add_argument("--games", type=int, default=400, help="games per bot")
        parser.add_argument("--workers", type=int, default=2, help="evaluation processes")
        parser.add_argument("--watch", action="store_true", help="watch bots play instead")
        args = parser.parse_args(argv)
        return train_and_evaluate(args.seed, args.games, args.workers)
    argv = [a for a in argv if a != "--watch"]
    parser = argparse.ArgumentParser(description="Watch scripted bots play 5000.")
    parser.add_argument(
        "--bots",
        nargs="+",
        default=["threshold:350", "threshold:500", "random"],
        help="one bot per seat, 2 to 8 of them (random, threshold:T)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the dice and the bots")
    parser.add_argument("--hold", choices=["free", "all"], default="free", help="hold rule (R5)")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to pause per move")
    parser.add_argument("--max-turns", type=int, default=1000, help="stop after this many turns")
    args = parser.parse_args(argv)
    console = Console()
    try:
        bots = [make_policy(spec) for spec in args.bots]
        dice_seed, bot_seed = np.random.SeedSequence(args.seed).spawn(2)
        game = Game(len(bots), Rules(hold=args.hold), seed=np.random.default_rng(dice_seed))
    except ValueError as e:
        console.print(f"[red]error:[/red] {e}")
        return 2
    names = [bot.name for bot in bots]
    rng = np.random.default_rng(bot_seed)
    s = game.state
    console.rule(f"5000: {' vs '.join(names)} (seed {args.seed}, hold={args.hold})")
    while s.phase != OVER and s.turns < args.max_turns:
        seat = s.current
        if s.phase == ROLL:
            turn_before = s.turns
            info = game.roll()
            if s.turns > turn_before:  # bust
                console.print(f"  [red]{names[seat]} rolls {list(info.dice)}: bust[/red]")
                if s.current == 0:
                    console.print(score_table(game, names))
            continue
        roll = list(s.roll)
        action = bots[seat].act(game, rng)
        turn_before = s.turns
        game.act(action)
        line = f"  {names[seat]} rolls {roll}, {describe_action(action, roll)}"
        if action & BANK_BIT:
            console.print(f"[bold]{line}[/bold]: {s.last_event}")
        else:
            console.print(f"{line}: turn total {s.turn_total}")
        if s.turns > turn_before and s.current == 0 and s.phase != OVER:
            console.print(score_table(game, names))
        time.sleep(args.delay)
    console.print(score_table(game, names))
    if s.phase == OVER:
        console.print(f"[bold green]{names[s.winner]} (seat {s.winner}) wins.[/bold green]")
    else:
        console.print(f"Stopped after {s.turns} turns without a winner.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
