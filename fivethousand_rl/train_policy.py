"""Train a single network to play 5000 as a strong teacher does: imitation with data
aggregation (``agents.training.imitation``): of `optimal` at 2 players (issue 44 item 1),
of the table's planner at 3 to 6 (issue 55 item 1). The result is an ordinary
MaskablePPO checkpoint: one feed-forward graph from observation and mask to action, no
search at play time, exportable as ppo-2p is.

    python train_policy.py                          # policy-2p's recipe (the defaults)
    python train_policy.py --preset policy_3p       # policy-3p's (hyperparams/policy_3p.yaml)
    python train_policy.py --seed 1 --rounds 5      # more aggregation rounds
    python train_policy.py --first-games 500 --rounds 1 --round-games 200 \\
        --eval-games 400 --run-name quick_policy    # a quick try (a minute)

A run starts from the defaults, then the preset, then the flags. The run's folder
(checkpoints/RUN in the current folder, or under --checkpoints; RUN is
policy_<players>p_<hold>_seed<seed> unless --run-name says) gets config.json,
command.txt, evals.json (each stage: decisions seen, win rate at the table, the
teacher's on the same games' seed, seconds), summary.json and the model after each
stage (latest/model.zip; the last stage's is best/model.zip).
The whole preset runs in well under an hour on 2 cores, so a run is not resumed: an
interrupted one is started again. Installed, the same program is ``fivethousand
train-policy``.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import tyro

from fivethousand_rl.agents.base import duration
from fivethousand_rl.agents.training.config import (
    fresh_run_folder,
    load_yaml,
    preset_path,
    read_text_capped,
    record_run,
    save_json,
)
from fivethousand_rl.agents.training.imitation import ImitationConfig, make_teacher, train

SCRIPT = "python train_policy.py"  # how the command names itself when run as a script


@dataclass
class Args:
    """Train one network imitating a teacher (optimal, or a table's planner), with data
    aggregation."""

    config: Annotated[ImitationConfig, tyro.conf.arg(name="")] = field(
        default_factory=ImitationConfig
    )
    preset: str | None = None
    """A recipe from hyperparams/ (policy_3p, policy_4p, policy_6p), before the flags."""
    run_name: str | None = None
    """The run's folder name (default policy_<players>p_<hold>_seed<seed>)."""
    checkpoints: str = "checkpoints"
    """The runs folder."""
    force: bool = False
    """Replace an existing run folder of that name."""


def run_folder(args: Args) -> Path:
    """The run's folder, made, with its latest/ and best/; ValueError (one line) if it
    exists (no --force)."""
    config = args.config
    name = args.run_name or f"policy_{config.players}p_{config.hold}_seed{config.seed}"
    folder = fresh_run_folder(args.checkpoints, name, args.force, ["command.txt"])
    for part in ("latest", "best"):
        (folder / part).mkdir(exist_ok=True)
    return folder


def preset_flags(preset: str) -> list[str]:
    """A preset's settings as the flags that give them (the flags after them win); a
    one-line ValueError for an unknown preset or key."""
    data = load_yaml(read_text_capped(preset_path(preset))) or {}
    known = {f.name for f in dataclasses.fields(ImitationConfig)}
    if not isinstance(data, dict) or not set(data) <= known:
        raise ValueError(f"preset {preset} must map settings of train_policy: {sorted(known)}")
    flags = []
    for key, value in data.items():
        values = value if isinstance(value, list) else [value]
        flags += [f"--{key.replace('_', '-')}", *map(str, values)]
    return flags


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    given = argparse.ArgumentParser(add_help=False)
    given.add_argument("--preset")
    try:
        preset = given.parse_known_args(argv)[0].preset
        flags = preset_flags(preset) if preset else []
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    args = tyro.cli(
        Args, args=[*flags, *argv], prog=prog or SCRIPT, description=__doc__.split("\n\n")[0]
    )
    config = args.config
    try:
        config.rules  # noqa: B018 (the hold rule's check: Rules refuses an unknown one)
        make_teacher(config)  # the teacher and its table, checked before any write
        folder = run_folder(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    command = [*shlex.split(prog or SCRIPT), *argv]
    record_run(folder, config, command, method="imitation", preset=preset)
    started = time.monotonic()

    say = functools.partial(print, flush=True)

    def on_stage(model, history: list[dict]) -> None:
        """After each stage: its model, and the evaluations so far."""
        model.save(folder / "latest" / "model.zip")
        save_json(folder / "evals.json", history)

    say(f"run {folder}: {config.first_games:,} games of {config.teacher}, {config.rounds} rounds")
    model, history = train(config, say, on_stage=on_stage)
    model.save(folder / "best" / "model.zip")
    wall = time.monotonic() - started
    last = history[-1]
    summary = dict(
        decisions=last["decisions"],
        win_rate=last["win_rate"],
        teacher_win_rate=last["teacher_win_rate"],
    )
    summary["wall_seconds"] = round(wall, 1)
    save_json(folder / "summary.json", summary)
    say(
        f"done in {duration(wall)}: {last['win_rate']:.1%} at the table over "
        f"{config.eval_games:,} games ({config.teacher}: {last['teacher_win_rate']:.1%}); "
        f"the model is {folder / 'best' / 'model.zip'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
