"""Train a single network to play 2-player 5000 as the exact solution does: imitation of
`optimal` with data aggregation (``agents.training.imitation``, issue 44 item 1). The
result is an ordinary MaskablePPO checkpoint: one feed-forward graph from observation
and mask to action, no search at play time, exportable as ppo-2p is.

    python train_policy.py                          # the policy-2p preset (the defaults)
    python train_policy.py --seed 1 --rounds 5      # more aggregation rounds
    python train_policy.py --first-games 500 --rounds 1 --round-games 200 \\
        --eval-games 400 --run-name quick_policy    # a quick try (a minute)

The run's folder (checkpoints/RUN in the current folder, or under --checkpoints; RUN is
policy_2p_<hold>_seed<seed> unless --run-name says) gets config.json, command.txt,
evals.json (each stage: decisions seen, win rate against optimal, seconds), summary.json
and the model after each stage (latest/model.zip; the last stage's is best/model.zip).
The whole preset runs in well under an hour on 2 cores, so a run is not resumed: an
interrupted one is started again. Installed, the same program is ``fivethousand
train-policy``.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import tyro

from fivethousand_rl.agents.base import atomic_write, duration
from fivethousand_rl.agents.training.imitation import ImitationConfig, train

SCRIPT = "python train_policy.py"  # how the command names itself when run as a script


@dataclass
class Args:
    """Train policy-2p: one network imitating the optimal player, with data aggregation."""

    config: Annotated[ImitationConfig, tyro.conf.arg(name="")] = field(
        default_factory=ImitationConfig
    )
    run_name: str | None = None
    """The run's folder name (default policy_2p_<hold>_seed<seed>)."""
    checkpoints: str = "checkpoints"
    """The runs folder."""
    force: bool = False
    """Replace an existing run folder of that name."""


def run_folder(args: Args) -> Path:
    """The run's folder, made empty; ValueError (one line) if it exists (no --force)."""
    name = args.run_name or f"policy_2p_{args.config.hold}_seed{args.config.seed}"
    folder = Path(args.checkpoints) / name
    if folder.exists() and not args.force:
        raise ValueError(f"{folder} exists: another --run-name, or --force to replace it")
    (folder / "latest").mkdir(parents=True, exist_ok=True)
    (folder / "best").mkdir(exist_ok=True)
    return folder


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    args = tyro.cli(Args, args=argv, prog=prog or SCRIPT, description=__doc__.split("\n\n")[0])
    config = args.config
    try:
        config.rules  # noqa: B018 (the hold rule's check: Rules refuses an unknown one)
        folder = run_folder(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    command = shlex.join([*shlex.split(prog or SCRIPT), *(sys.argv[1:] if argv is None else argv)])
    record = {**dataclasses.asdict(config), "method": "imitation", "players": 2}
    atomic_write(folder / "config.json", json.dumps(record, indent=2))
    atomic_write(folder / "command.txt", command + "\n")
    started = time.monotonic()

    def say(line: str) -> None:
        print(line, flush=True)

    def on_stage(model, history: list[dict]) -> None:
        """After each stage: its model, and the evaluations so far."""
        model.save(folder / "latest" / "model.zip")
        atomic_write(folder / "evals.json", json.dumps(history, indent=2))

    say(f"run {folder}: {config.first_games:,} games of optimal, then {config.rounds} rounds")
    model, history = train(config, say, on_stage=on_stage)
    model.save(folder / "best" / "model.zip")
    wall = time.monotonic() - started
    summary = {
        "decisions": history[-1]["decisions"],
        "win_rate": history[-1]["win_rate"],
        "wall_seconds": round(wall, 1),
    }
    atomic_write(folder / "summary.json", json.dumps(summary, indent=2))
    say(
        f"done in {duration(wall)}: {history[-1]['win_rate']:.1%} against optimal over "
        f"{config.eval_games:,} games; the model is {folder / 'best' / 'model.zip'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
