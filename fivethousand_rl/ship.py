"""Package a training run as a shipped agent: model, config, learning curve, evaluation
and a model card, in checkpoints/NAME/ (in the current folder, or under --out).

    python ship.py checkpoints/ppo_2p_free_seed0 --name my-ppo --games 20000 --workers 2
    python ship.py runs/planner_2p_free_seed0 --name planner-2p --force   # a rebuild

(The shipped agents' runs keep only their record in checkpoints/, no model: each card and
checkpoints/README.md give the commands that rebuild the agent.)

A run of train.py ships its model.zip, a planner run of train_planner.py its
value_net.npz (played by the exact turn planner, evaluated at each table size it was
trained at). Every argument is checked before anything is written; the new folder is
built aside (checkpoints/.NAME.shipping-*/NAME/) and moved into place only once
complete, so a failure or Ctrl-C leaves checkpoints/NAME as it was; an existing agent
is replaced only with --force. A few timed games first give the evaluation's duration.

The work is ``agents.shipping``'s; the evaluation is the tournament evaluate.py plays
(its command is on the card; ``shipping.opponents``). The card names files as they were
given, relative to the current folder (run it from a clone's root, as the examples do).
Installed, the same program is ``fivethousand ship``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import signal
import sys
import tempfile
from pathlib import Path

from fivethousand_rl.agents import make_policy, shipping
from fivethousand_rl.agents.exporting import swap_in
from fivethousand_rl.agents.rule_flags import OneLineParser, house_rules
from fivethousand_rl.agents.shipping import VALUE_NET, ShipError, stages
from fivethousand_rl.agents.training.config import saved_rules
from fivethousand_rl.envs.game import MAX_PLAYERS, MIN_PLAYERS
from fivethousand_rl.envs.rules import DEFAULT_RULES, HOLD_VARIANTS

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # one plain folder name, not hidden
SHIPPED_FILES = ("MODEL_CARD.md", "model.zip", "value_net.npz")  # a shipped agent's files


def parse_args(argv: list[str] | None, prog: str | None = None) -> argparse.Namespace:
    p = OneLineParser(
        prog=prog,
        description="Package a training run as a shipped agent (model, card, evaluation).",
        epilog="The default 20,000 games per pairing measure win rates to about ±0.7% "
        "(95%) and take tens of minutes on 2 cores; --games 2000 is ten times quicker "
        "(±2.2%). The expected duration is shown before the evaluation starts.",
    )
    p.add_argument("run", help="run folder (checkpoints/...)")
    p.add_argument("--name", required=True, help="agent name: the folder OUT/NAME")
    p.add_argument(
        "--model",
        default="best",
        choices=["best", "latest"],
        help="which model of the run (default %(default)s)",
    )
    for flag, default, what in (
        ("--games", 20000, "games per pairing"),
        ("--workers", 2, "evaluation processes"),
        ("--seed", 0, "evaluation seed"),
    ):
        p.add_argument(flag, type=int, default=default, help=f"{what} (default %(default)s)")
    p.add_argument("--notes", help="a Markdown file of notes (what was tried) for the card")
    p.add_argument(
        "--average-with",
        action="append",
        default=[],
        metavar="NET",
        help="planner runs: ship the average of the run's network and this value net "
        "(.npz; repeatable) as one network (fivethousand_rl.agents.value_net.average_nets)",
    )
    p.add_argument(
        "--float16",
        action="store_true",
        help="round the network's weights to float16 precision before evaluating it (each "
        "weight then a float16 exactly: its export bundle holds them in half the bytes)",
    )
    p.add_argument(
        "--out",
        default="checkpoints",
        help="an existing folder where NAME/ is made (default: checkpoints/ in the current folder)",
    )
    p.add_argument(
        "--force", action="store_true", help="replace an existing shipped agent OUT/NAME"
    )
    return p.parse_args(argv)


def check_args(args: argparse.Namespace) -> dict:
    """Everything shipping needs, read and checked before anything is written: the run,
    its config and stages, the notes, the target folder; ShipError if anything is off."""
    for flag, value in (("games", args.games), ("workers", args.workers)):
        if value < 1:
            raise ShipError(f"--{flag} must be positive, got {value}")
    if args.seed < 0:
        raise ShipError(f"--seed must be 0 or more, got {args.seed}")
    if not NAME.fullmatch(args.name):
        raise ShipError(
            f"--name must be a plain folder name (letters, digits, . _ -), got {args.name!r}"
        )
    root = Path(args.out).resolve()
    if not root.is_dir():
        raise ShipError(f"--out {args.out} is not an existing folder")
    try:  # os.access says yes to root in /proc, where nothing can be made: try it
        os.rmdir(tempfile.mkdtemp(prefix=f".{args.name}.probe-", dir=root))
    except OSError as e:
        raise ShipError(f"--out {args.out} is not writable ({e.strerror})") from None
    run = Path(args.run).resolve()
    planner = (run / "latest" / VALUE_NET).is_file()  # a run of train_planner.py
    model = run / args.model / (VALUE_NET if planner else "model.zip")
    if not model.is_file() or not (run / "config.json").is_file():
        # A folder with neither model (a run record whose state left the tree, issue 29
        # item 7) may have been a planner run: name both.
        wanted = model if planner else f"{model} nor {run / 'latest' / VALUE_NET}"
        raise ShipError(f"{run} is not a finished training run (no {wanted})")
    history = shipping.planner_stages(run) if planner else stages(run)
    config = history[-1]["config"]
    sizes = config.get("players") if planner else [config.get("players")]
    valid = isinstance(sizes, list) and sizes and config.get("hold") in HOLD_VARIANTS
    if not valid or any(n not in range(MIN_PLAYERS, MAX_PLAYERS + 1) for n in sizes):
        raise ShipError(f"{run / 'config.json'} names no valid players (2..8) and hold rule")
    try:
        rules = saved_rules(config)
    except ValueError as e:
        raise ShipError(f"{run / 'config.json'} names no valid rules: {e}") from None
    if house := house_rules(dataclasses.replace(rules, hold=DEFAULT_RULES.hold)):
        raise ShipError(
            f"{run} was trained under house rules ({', '.join(house)}): ship.py evaluates "
            "the standard game (either hold rule, no house rule) only"
        )
    if args.average_with and not planner:
        raise ShipError("--average-with averages value nets: a planner run's only")
    best_file = run / "best" / "eval.json"  # read by the card, and for a planner's iteration
    best = shipping.read_json(best_file) if args.model == "best" and best_file.is_file() else None
    iteration = 0
    if planner:  # the iteration of its model: of best/eval.json, else the run's last
        last = history[-1]["summary"].get("iterations", 0)
        iteration = int(best.get("iteration", 0) if best is not None else last)
    network = shipping.averaged_network(args.average_with, model)
    notes = shipping.read_notes(args.notes) if args.notes else ""
    target = root / args.name
    for h in history:  # shipping must never replace the runs it reads
        if target == h["run"].resolve() or target in h["run"].resolve().parents:
            raise ShipError(f"{target} holds the run {h['run']}; choose another --name or --out")
    if target.is_symlink() or target.exists() and not target.is_dir():
        raise ShipError(f"{target} exists and is not a folder; choose another --name")
    if target.is_dir() and any(target.iterdir()):
        if not any((target / f).is_file() for f in SHIPPED_FILES) or (target / "latest").exists():
            raise ShipError(f"{target} exists and is not a shipped agent; choose another --name")
        if not args.force:
            raise ShipError(f"{target} is already a shipped agent: give --force to replace it")
    return {
        "run": run,
        "model": model,
        "network": network,  # the averaged value net to ship, or None: the model as it is
        "iteration": iteration,  # the iteration of the run's model
        "best": best,  # the run's best/eval.json when its best model is shipped
        "config": config,
        "history": history,
        "notes": notes,
        "root": root,
        "target": target,
        "planner": planner,
        "sizes": list(dict.fromkeys(sizes)),
        "rules": rules,
    }


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The command line's exit code; `prog`: the command as typed, for its usage
    (default: this script's). While it runs, SIGTERM exits through the clean-ups, so that
    a terminated ship (kill, a closed session) still removes its unfinished folder."""
    on_sigterm = signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        return ship(parse_args(argv, prog))
    finally:
        signal.signal(signal.SIGTERM, on_sigterm)


def ship(args: argparse.Namespace) -> int:
    """Check, evaluate and ship as `args` say; the exit code."""
    with tempfile.TemporaryDirectory() as aside:  # the model rebuilt, timed, then shipped
        try:
            inputs = check_args(args)
            rules = inputs["rules"]
            inputs["clean"] = Path(aside) / inputs["model"].name
            shipping.write_clean_model(
                inputs["model"], inputs["network"], inputs["clean"], inputs["config"], args.float16
            )
            for players in inputs["sizes"]:  # the model loads and plays this game
                make_policy(str(inputs["model"])).check_game(players, rules)
        except ValueError as e:  # a ShipError, or the model's own words
            print(f"error: {e}", file=sys.stderr)
            return 2
        for players in inputs["sizes"]:  # timed with the network to be shipped
            agents = [str(inputs["clean"]), *shipping.opponents(players)]
            shipping.announce(args, agents, players, rules)
        return build_aside(args, inputs)


def build_aside(args: argparse.Namespace, inputs: dict) -> int:
    """Build the agent aside in the same folder as its target (renames are then atomic),
    under the final name so that the agent is called the same in the evaluation as once
    shipped, and swap it in whole; the exit code."""
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{args.name}.shipping-", dir=inputs["root"]))
    except OSError as e:  # the disk filled, or the folder went, since check_args
        print(f"error: could not ship into {inputs['root']}: {e.strerror}", file=sys.stderr)
        return 1
    try:
        built = staging / args.name
        built.mkdir()
        try:
            if not shipping.build(args, inputs, built):
                print(f"error: evaluation failed; {inputs['target']} unchanged", file=sys.stderr)
                return 1
        except (OSError, ValueError) as e:  # the disk, or an unreadable run file
            print(f"error: could not ship: {e}; {inputs['target']} is unchanged", file=sys.stderr)
            return 1
        swap_in(built, inputs["target"], staging / "replaced")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    print(f"shipped {inputs['target']}")
    return 0
