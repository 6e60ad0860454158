"""Play 5000 in the terminal against 1 to 7 bots, alone or as several people at one
keyboard (pass and play), each at their own seat.

    python play.py --opponents smart                 # you against smart
    python play.py --opponents optimal --hint        # with the optimal player's advice
    python play.py --opponents planner-2p --hint     # the strongest shipped agent
    python play.py --opponents smart turn-ev --hint  # 3 players: a planner's estimate if shipped
    python play.py --opponents ppo-2p turn-ev --seat 1
    python play.py --humans Ann Bob --opponents smart --hint
                                 # pass and play: Ann (seat 0), Bob (seat 1) and a bot;
                                 # each decision names whose it is, each hint is theirs
    python play.py --load mygame.json                # resume a saved game
    python play.py --load mygame.json --opponents checkpoints/RUN/best/model.zip turn-ev
                                 # a save never opens a model file: name its bots again
    python play.py --replay game-log.json            # watch a finished game again
    python play.py --rules                           # the rules in short
    python play.py --opponents optimal --hint --no-bump --overshoot lost --target 1000
                                 # house rules (RULES.md V1-V5): any bot plays them,
                                 # a trained agent only the rules it was trained for

Installed, the same program is ``fivethousand play``. The game itself, its commands,
saves and logs: ``fivethousand_rl.agents.terminal``.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from fivethousand_rl.agents.rule_flags import (
    OneLineParser,
    add_rule_flags,
    given_rule_flags,
    rules_from_args,
    unset_rule_flags,
)
from fivethousand_rl.agents.terminal import (
    MAX_NAME,
    SCRIPT,
    TABLE_PACE,
    Session,
    commands_text,
    load,
    new_game,
    opening,
    play_table,
    replay,
    seat_table,
    write_log,
)
from fivethousand_rl.envs.i18n import LANGUAGES, _, language_from_environment, using
from fivethousand_rl.envs.rules import Rules
from fivethousand_rl.envs.rules_text import rules_text


def seconds(text: str) -> float:
    """A pause given on the command line: a non-negative finite number of seconds."""
    with contextlib.suppress(ValueError):
        if math.isfinite(value := float(text)) and value >= 0:
            return value
    raise argparse.ArgumentTypeError(f"must be a non-negative number of seconds, not {text!r}")


def main(
    argv: list[str] | None = None,
    ask: Callable[[str], str] = input,
    say: Callable[[str], None] = print,
    prog: str | None = None,
) -> int:
    """Play (or resume, or replay) a game as the command line says; the exit status.
    `prog`: the command as typed, for its usage and the commands it suggests (default:
    this script's)."""
    try:
        args, rules = parse_args(argv, prog)
        with using(args.lang or language_from_environment()):
            code = play_in_language(args, rules, ask, say, prog)
        sys.stdout.flush()  # a reader that left (| head) shows here, inside the try
    except BrokenPipeError:
        # Nobody reads any more: point stdout at devnull so that Python's own flush at
        # exit does not fail again, and leave quietly (the standard recipe, exit 1).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    return code


def parse_args(argv: list[str] | None, prog: str | None = None) -> tuple[argparse.Namespace, Rules]:
    """The command line's options, and the rules its rule flags name (a bad value: one
    line, exit status 2). Rule flags not given are None among the options
    (``given_rule_flags``: a saved game refuses them)."""
    p = OneLineParser(
        prog=prog,
        description="Play 5000 in the terminal against bots, alone or as several people "
        "at one keyboard (pass and play, e.g. --humans Ann Bob --opponents smart: Ann, "
        "Bob and a bot, each person asked in turn by name).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Commands during the game:\n" + commands_text(),
    )
    p.add_argument(
        "--opponents",
        nargs="+",
        help="1 to 7 bots (default: smart; with --humans, the bots beside the people, "
        "default none): names (bots, or shipped agents such as planner-2p "
        "and ppo-2p), checkpoints (.zip, loaded without running its pickles), "
        "value nets (.npz, played by their planner), exported bots (.onnx) or your own "
        "MODULE:FUNCTION or FILE.py:FUNCTION; with --load, the save's bot seats named again "
        "in seat order, which a save with a model file or code needs (a save never opens a "
        "model file or imports code by itself)",
    )
    p.add_argument(
        "--humans",
        nargs="+",
        metavar="NAME",
        help="pass and play: the names of the 2 or more people at this keyboard (at most "
        f"{MAX_NAME} characters each), who take turns at it; each decision names whose "
        "it is, and each hint is for that person's seat (without it you play alone)",
    )
    p.add_argument(
        "--seat",
        type=int,
        nargs="+",
        metavar="S",
        help="your seat (default 0: first to play); with --humans one seat per person, in "
        "their order (default 0, 1, ...); seats play in order",
    )
    p.add_argument("--seed", type=int, help="seed of the dice and bots")
    p.add_argument(
        "--hint",
        action="store_true",
        help="show advice at each decision: optimal (2 players), a trained planner's "
        "estimate (3+ players)",
    )
    p.add_argument(
        "--delay",
        type=seconds,
        help=f"pause between bot moves (s; default {TABLE_PACE:g} at 3+ players when the "
        "game is shown on a terminal, so that bot turns can be read, else 0)",
    )
    p.add_argument("--load", metavar="FILE", help="resume a saved game")
    p.add_argument("--log", metavar="FILE", help="write the game log here at the end")
    p.add_argument("--replay", metavar="FILE", help="replay a game log and exit")
    p.add_argument("--rules", action="store_true", help="print the rules in short and exit")
    p.add_argument(
        "--lang",
        choices=LANGUAGES,
        help="the language of the game: "
        + ", ".join(f"{code} ({name})" for code, name in LANGUAGES.items())
        + " (default: the one LANGUAGE, LC_ALL or LANG names, else en; translated so far: "
        "the rules)",
    )
    add_rule_flags(p)
    args = p.parse_args(argv, namespace=unset_rule_flags())
    try:
        return args, rules_from_args(args)
    except ValueError as e:
        p.error(str(e))


def play_in_language(
    args: argparse.Namespace,
    rules: Rules,
    ask: Callable[[str], str],
    say: Callable[[str], None],
    prog: str | None,
) -> int:
    """The program once the language is chosen (``main``)."""
    if args.rules:
        say(rules_text(rules))
        return 0
    try:
        if args.log:
            log_dir = Path(args.log).expanduser().resolve().parent
            if Path(args.log).is_dir() or not log_dir.is_dir():
                raise ValueError(f"cannot write the game log to {args.log}")
        if args.replay:
            replay(args.replay, say, args.delay or 0.0)
            return 0
        if args.load:
            # A saved game has its own seats, seed and rules: never silently ignore these.
            given = [f"--{k}" for k in ("humans", "seat", "seed") if getattr(args, k) is not None]
            given += given_rule_flags(args)
            if given:
                raise ValueError(f"{given[0]} is for a new game: a saved game has its own")
            session = load(args.load, args.hint, args.delay or 0.0, ask, say, args.opponents)
        else:
            players, seats = seat_table(args.humans, args.seat, args.opponents)
            seed = int(np.random.SeedSequence().entropy % 2**32) if args.seed is None else args.seed
            if seed < 0:
                raise ValueError(f"--seed must be >= 0, not {seed}")
            game = new_game(len(players), rules, seed)
            session = Session(game, players, seats, seed, args.hint, args.delay or 0.0, ask, say)
            say(opening(session))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    session.program = prog or SCRIPT
    if args.delay is None and session.game.n_players >= 3 and say is print and sys.stdout.isatty():
        session.delay = TABLE_PACE
    session = play_table(session)
    if args.log:
        try:
            write_log(session, str(Path(args.log).expanduser()))
        except OSError as e:
            print(
                f"error: could not write the game log to {args.log}: {e.strerror}", file=sys.stderr
            )
            return 1
        command = f"{session.program} --replay {args.log}"
        say(_("game log written to {path} (replay: {command})", path=args.log, command=command))
    return 0
