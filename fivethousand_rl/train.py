"""Train a MaskablePPO agent for 5000.

    python train.py --preset ppo_2p                   # a preset from hyperparams/
    python train.py --players 4 --n-timesteps 2e6 --opponents smart turn-ev threshold:350
    python train.py --resume checkpoints/ppo_2p_free_seed0   # continue an interrupted run
    python train.py --preset quick --params ent_coef=0.02 n_envs=4
    python train.py --preset ppo_2p --init-from RUN/latest/model.zip --run-name tuned \\
        --params ent_coef=0 learning_rate=5e-5     # a new run from trained weights

Top to bottom: the command line (TrainConfig and Args), the run's config and folder
(checked before any work), what will happen, then the training: the environments and
model, training with one callback, the end (agents.training.ppo.train, which sweep.py
and demo.py use too; the rest of the machinery is in agents/training/). A run's folder
(checkpoints/NAME in the current folder, or under --checkpoints) holds its config, the
command, the TensorBoard logs, the latest state (to resume bit for bit) and the best
model. Installed, the same program is ``fivethousand train``.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from typing import Annotated

import tyro

from fivethousand_rl.agents.training import checkpoint, ppo, progress
from fivethousand_rl.agents.training.config import (
    RUNS,
    TrainConfig,
    open_run,
    parse_run_args,
    stopped_by_write_error,
)

SCRIPT = "python train.py"  # how the command names itself when run as a script


# ============================================================== command line
@dataclass
class Args:
    """Train a MaskablePPO agent for 5000. A run starts from the defaults below, then a
    preset (--preset), then the flags, then --params. With no flags: 1,000,000 steps with
    the defaults (the time left is shown once the first rollout is done); --preset quick
    trains a small agent in a few minutes. Ctrl-C stops, keeping the last checkpoint."""

    config: Annotated[TrainConfig, tyro.conf.arg(name="")] = field(default_factory=TrainConfig)
    params: list[str] = field(default_factory=list)
    """Any config key as KEY=VALUE (YAML values, lists as [a, b]), applied last."""
    resume: str | None = None
    """Continue the run in this folder (or of this name under --checkpoints), as it was
    configured: only --n-timesteps, --stop-after and --no-progress may be given too."""
    stop_after: float | None = None
    """Stop once a checkpoint at or past this step is saved (to train in pieces)."""
    checkpoints: str | None = None
    """The runs folder (default: checkpoints/ in the current folder)."""
    progress: bool = True
    """Show a progress bar."""


# ============================================================== the run
def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The command line's exit code; `prog`: the command as typed, for its usage and
    its record (default: this script's)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return start(argv, prog)
    except KeyboardInterrupt:  # before training (ppo.train reports its own): nothing written
        print("interrupted before training started: nothing written", file=sys.stderr)
        return 130


def start(argv: list[str], prog: str | None) -> int:
    """Check everything, say what will happen, then train; or say why not, in one line."""
    try:
        args, given = parse_run_args(Args, argv, prog)
        config, run_dir = open_run(args, given, RUNS)
        extra = checkpoint.read_checkpoint(run_dir, config) if args.resume else None
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    steps = extra["num_timesteps"] if extra is not None else 0
    if steps >= config.n_timesteps:  # nothing to train: leave the run exactly as it is
        print(
            f"{progress.shown(run_dir)} is already complete at step {steps:,} (n_timesteps "
            f"{config.n_timesteps:,}): nothing done, nothing changed; to train it further: "
            f"{progress.resume_command(run_dir)} --n-timesteps N with N above {steps:,}"
        )
        return 0
    for line in progress.plan(config, run_dir, steps, no_flags=not argv):
        print(line, flush=True)
    command = [*shlex.split(prog or SCRIPT), *argv]
    try:
        return ppo.train(config, run_dir, extra, command, args.stop_after, args.progress)
    except OSError as e:  # a full disk (ENOSPC), mid-run
        resume = progress.resume_command(run_dir)
        print(f"error: {stopped_by_write_error(e, run_dir, resume)}", file=sys.stderr)
        return 1
