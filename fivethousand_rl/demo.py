"""The main job of `make demo`: train a small agent, then measure it.

    python demo.py [--seed 0] [--games 400]      # train (a few minutes), then evaluate
    python demo.py --watch [--bots smart random] # watch bots play a match instead
    python demo.py --watch --no-bump --overshoot lost   # ... under house rules

Training uses the `quick` preset of train.py (run folder checkpoints/demo_quick in the
current folder, replaced each time). The evaluation table shows the new agent and the
shipped 2-player PPO agent (ppo-2p) against each bot, seats alternating. Installed, the
same program is ``fivethousand demo``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.rule_flags import (
    OneLineParser,
    add_rule_flags,
    house_rules,
    rules_from_args,
)
from fivethousand_rl.agents.shipped import needs_extra, training_installed
from fivethousand_rl.envs.driver import play
from fivethousand_rl.envs.game import OVER, Event, Game, Moved, Rolled
from fivethousand_rl.envs.render import event_text
from fivethousand_rl.envs.rules import Rules, format_dice

RUN_DIR = Path("checkpoints") / "demo_quick"  # the demo's own run, in the current folder
SHIPPED_PPO = "ppo-2p"  # the shipped agent the new one is measured beside: trained alike


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


INTRO = (  # paragraphs without line breaks: rich wraps them to the terminal
    "[bold]5000[/bold] is a push-your-luck dice game. Roll five dice, set aside scoring "
    "dice (a 1 is 100, a 5 is 50, three of a kind is the face x 100, three 1s are 1100), "
    "then bank the turn's points or roll the rest again; a roll with nothing to score is "
    "a bust and the turn's points are lost. First to bank exactly 5000 wins. "
    "(Full rules: docs/rules.md.)\n\n"
    "This demo trains a small neural agent by reinforcement learning (MaskablePPO, "
    "150,000 decisions, a few minutes on 2 cores), then has it play every bot of the "
    "project."
)

BOTS = {
    "optimal": "perfect play (exact solution)",
    "smart": "hand-written endgame-aware heuristic",
    "turn-ev": "maximizes the points of each turn",
    "threshold:350": "banks as soon as the turn reaches 350",
    "random": "random legal moves",
}


def measure(
    agents: dict[str, str], games: int, seed: int, workers: int, console: Console
) -> dict[tuple[str, str], str]:
    """Each agent (label -> spec) against each bot of BOTS, `games` games per pair with
    seats alternating, in one pool of workers; "win rate ±half-interval" per pair."""
    from fivethousand_rl.agents.tournament import schedule, summarize
    from fivethousand_rl.agents.tournament_report import run_with_bar

    names = [*agents, *BOTS]
    seatings = [  # agents against bots, not against each other
        seating
        for seating in schedule(len(names), 2, games + games % 2)
        if sum(a < len(agents) for a in seating.agents) == 1
    ]
    specs = [*agents.values(), *BOTS]
    results = run_with_bar(console, specs, seatings, Rules(), seed, workers, transient=False)
    pairwise = summarize(names, results, 2)["pairwise"]
    rates = {}
    for label in agents:
        for bot in BOTS:
            low, high = pairwise[label][bot]["ci95"]
            rates[label, bot] = f"{pairwise[label][bot]['win_rate']:.0%} ±{(high - low) / 2:.0%}"
    return rates


def report(console: Console, rates: dict[tuple[str, str], str], model: str, run_dir: str) -> None:
    """The win-rate table, what it means, where the new agent is and what to try next."""
    labels = list(dict.fromkeys(label for label, _ in rates))
    table = Table(title="share of games won against each bot")
    table.add_column("agent", no_wrap=True)
    for bot in BOTS:
        table.add_column(bot, justify="right", no_wrap=True)
    for label in labels:
        table.add_row(label, *(rates[label, bot] for bot in BOTS))
    console.print(table)
    lines = [
        "How to read it: 50% means as strong as that bot; 50% against optimal would be",
        "perfect play. ± is the 95% confidence interval of the share. The bots:",
        *(f"  {bot:<14} {what}" for bot, what in BOTS.items()),
        "",
        f"The new agent: {model}",
        f"Its learning curves: tensorboard --logdir {run_dir}/tb",
        "Try next:",
        "  play against it:",
        f"    python play.py --opponents {model}",
        "  play the strongest shipped agent, with hints:",
        "    python play.py --opponents planner-2p --hint",
        "  play in the browser:",
        "    make serve   (or: fivethousand serve)",
        "  a longer match:",
        f"    python evaluate.py {model} smart --games 4000",
        "  the training behind ppo-2p (about an hour):",
        "    python train.py --preset ppo_2p",
    ]
    console.print("\n".join(lines), highlight=False)


def train_and_evaluate(seed: int, games: int, workers: int) -> int:
    import dataclasses
    import shutil

    from rich.panel import Panel

    from fivethousand_rl.agents.training import ppo, progress
    from fivethousand_rl.agents.training.config import load_preset, new_run_config

    console = Console()
    console.print(Panel(INTRO, title="5000-RL demo", expand=False))
    run_dir = RUN_DIR
    if run_dir.exists():
        shutil.rmtree(run_dir)  # the demo's own scratch run
    argv = ["--preset", "quick", "--run-name", "demo_quick", "--seed", str(seed)]
    console.rule(f"1/2  training: python train.py {' '.join(argv[:4])}")
    try:  # what train.py does with these flags
        config = dataclasses.replace(load_preset("quick"), run_name="demo_quick", seed=seed)
        config = new_run_config(config, [], name_given=True)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print("\n".join(progress.plan(config, run_dir, 0, no_flags=False)), flush=True)
    code = ppo.train(config, run_dir, None, ["python", "train.py", *argv])
    if code != 0:
        return code
    model = str(run_dir / "best" / "model.zip")
    agents = {"demo_quick (new)": model, f"{SHIPPED_PPO} (shipped)": SHIPPED_PPO}
    console.rule(f"2/2  measuring: {games} games against each bot, seats alternating")
    rates = measure(agents, games, seed, workers, console)
    report(console, rates, model, str(run_dir))
    return 0


def watch_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The command line of ``--watch``: the bots, the game and its rules."""
    parser = OneLineParser(prog=prog, description="Watch scripted bots play 5000.")
    parser.add_argument(
        "--bots",
        nargs="+",
        default=["threshold:350", "threshold:500", "random"],
        help="one bot per seat, 2 to 8 of them (random, threshold:T)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the dice and the bots")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to pause per move")
    parser.add_argument("--max-turns", type=int, default=1000, help="stop after this many turns")
    add_rule_flags(parser)
    return parser


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The command line's exit code; `prog`: the command as typed, for its usage
    (default: this script's)."""
    argv = sys.argv[1:] if argv is None else argv
    if "--watch" not in argv:
        parser = OneLineParser(
            prog=prog,
            description="Train a small agent (its run: checkpoints/demo_quick in the current "
            "folder), then evaluate it.",
            formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        )
        parser.add_argument("--seed", type=int, default=0, help="seed of training and games")
        parser.add_argument("--games", type=int, default=400, help="games per bot")
        parser.add_argument("--workers", type=int, default=2, help="evaluation processes")
        parser.add_argument("--watch", action="store_true", help="watch bots play instead")
        args = parser.parse_args(argv)
        # Checked before the training (a minute and more), not after it.
        least = {"seed": 0, "games": 1, "workers": 1}
        for flag, bound in least.items():
            if (value := getattr(args, flag)) < bound:
                print(f"error: --{flag} must be at least {bound}, got {value}", file=sys.stderr)
                return 2
        if not training_installed():  # the light install: --watch plays, training cannot
            print(f"error: {needs_extra(prog or 'demo.py', 'torch')}", file=sys.stderr)
            return 2
        return train_and_evaluate(args.seed, args.games, args.workers)
    argv = [a for a in argv if a != "--watch"]
    args = watch_parser(prog).parse_args(argv)
    console = Console()
    try:
        if args.seed < 0:
            raise ValueError(f"--seed must be at least 0, got {args.seed}")
        if not 0 <= args.delay <= 60:  # also refuses nan
            raise ValueError(f"--delay must be 0 to 60 seconds, got {args.delay}")
        if args.max_turns < 1:
            raise ValueError(f"--max-turns must be at least 1, got {args.max_turns}")
        rules = rules_from_args(args)
        bots = [make_policy(spec) for spec in args.bots]
        for bot in bots:
            bot.check_game(len(bots), rules)
            bot.prepare(rules)
        dice_seed, bot_seed = np.random.SeedSequence(args.seed).spawn(2)
        game = Game(len(bots), rules, seed=np.random.default_rng(dice_seed))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    names = [bot.name for bot in bots]
    house = "".join(f", {words}" for words in house_rules(rules))
    console.rule(f"5000: {' vs '.join(names)} (seed {args.seed}{house})")

    def show(game: Game, event: Event) -> None:
        if isinstance(event, Rolled) and not event.bust:
            return  # shown with the move made on it
        if isinstance(event, Moved):
            move, roll = event.move, format_dice(event.roll)
            if move.banks:  # envs.render's words for the bank, the held dice included
                text = f"{event_text(event, names)}, from the roll {roll}"
            else:
                held = format_dice(move.held)
                text = (
                    f"{names[event.seat]} rolled {roll}, held {held}, turn total {move.turn_total}"
                )
        else:
            text = event_text(event, names)
        ends_turn = isinstance(event, Rolled) or event.move.banks
        console.print(f"  [bold]{text}[/bold]" if ends_turn else f"  {text}", highlight=False)
        if ends_turn and game.state.current == 0 and game.state.phase != OVER:
            console.print(score_table(game, names))
        time.sleep(args.delay)

    play(game, bots, np.random.default_rng(bot_seed), max_turns=args.max_turns, on_event=show)
    s = game.state
    console.print(score_table(game, names))
    if s.phase == OVER:
        console.print(f"[bold green]{names[s.winner]} (seat {s.winner}) won.[/bold green]")
    else:
        console.print(f"Stopped after {s.turns} turns without a winner.")
    return 0
