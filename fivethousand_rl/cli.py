"""``fivethousand SUBCOMMAND [ARGS...]``: the project's programs under one installed
command. Each subcommand is one program's ``main``, given the arguments that follow it
and its name for usage lines and errors (``prog="fivethousand evaluate"``); a clone's
scripts (``python evaluate.py``) run the same ``main`` functions.

Only the chosen program's module is imported, so that ``fivethousand --help`` answers
at once (no torch). The programs that train, export or package agents need the training
extra (torch, sb3-contrib, matplotlib, onnx: ``pip install 'fivethousand-rl[train]'``);
without it they, and any other program that reaches for one of those modules (a plot),
say so in one line with the command that installs it, instead of a traceback.
"""

from __future__ import annotations

import importlib
import sys
from importlib import metadata

COMMAND = "fivethousand"
DISTRIBUTION = "fivethousand-rl"  # the name pip installs, whose version --version prints

# Subcommand -> (its module in fivethousand_rl, whose main it runs; its line in the list).
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "play": ("play", "play 5000 in the terminal against bots or agents"),
    "serve": ("webplay.__main__", "serve the game in a browser (http://127.0.0.1:8000/)"),
    "evaluate": ("evaluate", "play a tournament between agents"),
    "train": ("train", "train a MaskablePPO agent"),
    "train-planner": ("train_planner", "train a planner agent's value network"),
    "train-policy": ("train_policy", "train one network to play like the exact solver (2 players)"),
    "train-jax": ("train_jax", "train a PPO agent end to end in JAX"),
    "export": ("export", "export an agent as a portable ONNX bot"),
    "ship": ("ship", "package a training run as a shipped agent"),
    "sweep": ("sweep", "sweep training settings on Ray Tune"),
    "demo": ("demo", "train a small agent and measure it, or watch bots play"),
    "regret": ("agents.regret", "exact regret of a 2-player agent's decisions"),
    "optimal": ("agents.optimal", "the exact numbers of optimal 2-player play"),
    "best-response": (
        "agents.best_response.cli",
        "exploitability, or the most any agent can win at a table of bots",
    ),
}

# The programs that cannot start without the training extra; the others reach for it
# only for some options, a plot, and are caught when they do. Export says itself what
# the export asked for needs (onnx for any graph, the training extra for a checkpoint:
# fivethousand_rl/export.py).
NEEDS_EXTRA = ("train", "train-planner", "train-policy", "ship", "sweep")


def missing_extra(name: str) -> str | None:
    """The first module of the training extra that the subcommand `name` needs and this
    environment lacks, or None."""
    if name not in NEEDS_EXTRA:
        return None
    from fivethousand_rl.agents.shipped import EXTRA_MODULES, importable

    return next((module for module in EXTRA_MODULES if not importable(module)), None)


def version() -> str:
    """The installed package's version, or a word saying there is none."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # run from a clone that was never installed
        return "unknown (not installed)"


def usage() -> str:
    """What ``fivethousand --help`` prints: the subcommands, one line each."""
    width = max(map(len, SUBCOMMANDS)) + 2
    lines = [
        f"usage: {COMMAND} SUBCOMMAND [ARGS...]",
        "",
        "The programs of fivethousand-rl, for the dice game 5000. Each subcommand takes the",
        f"arguments its program lists with {COMMAND} SUBCOMMAND --help.",
        "",
        "subcommands:",
        *(f"  {name:<{width}}{text}" for name, (_, text) in SUBCOMMANDS.items()),
        "",
        "options:",
        f"  {'-h, --help':<{width}}show this list and exit",
        f"  {'--version':<{width}}print the version and exit",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the subcommand `argv` names with the arguments after it; the exit code (2 for
    a missing or unknown subcommand, said in one line)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["-h"], ["--help"]):
        print(usage())
        return 0
    if argv[:1] == ["--version"]:
        print(f"{COMMAND} {version()}")
        return 0
    if not argv:
        print(usage(), file=sys.stderr)
        return 2
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        known = ", ".join(SUBCOMMANDS)
        print(f"{COMMAND}: unknown subcommand {name!r}; the subcommands: {known}", file=sys.stderr)
        return 2
    from fivethousand_rl.agents.shipped import EXTRA_MODULES, needs_extra  # after --help: at once

    prog = f"{COMMAND} {name}"
    missing = missing_extra(name)
    if missing is not None:
        print(f"error: {needs_extra(prog, missing)}", file=sys.stderr)
        return 2
    try:
        module = importlib.import_module(f"fivethousand_rl.{SUBCOMMANDS[name][0]}")
        return module.main(rest, prog=prog)
    except ModuleNotFoundError as e:  # the light install, reaching for the training extra
        missing = (e.name or "").partition(".")[0]
        if missing not in EXTRA_MODULES:
            raise
        print(f"error: {needs_extra(prog, missing)}", file=sys.stderr)
        return 2
