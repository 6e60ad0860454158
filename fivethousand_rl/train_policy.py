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

import functools
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import tyro

from fivethousand_rl.agents.base import duration
from fivethousand_rl.agents.training.config import fresh_run_folder, record_run, save_json
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
    """The run's folder, made, with its latest/ and best/; ValueError (one line) if it
    exists (no --force)."""
    name = args.run_name or f"policy_2p_{args.config.hold}_seed{args.config.seed}"
    folder = fresh_run_folder(args.checkpoints, name, args.force, ["command.txt"])
    for part in ("latest", "best"):
        (folder / part).mkdir(exist_ok=True)
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
    command = [*shlex.split(prog or SCRIPT), *(sys.argv[1:] if argv is None else argv)]
    record_run(folder, config, command, method="imitation", players=2)
    started = time.monotonic()

    say = functools.partial(print, flush=True)

    def on_stage(model, history: list[dict]) -> None:
        """After each stage: its model, and the evaluations so far."""
        model.save(folder / "latest" / "model.zip")
        save_json(folder / "evals.json", history)

    say(f"run {folder}: {config.first_games:,} games of optimal, then {config.rounds} rounds")
    model, history = train(config, say, on_stage=on_stage)
    model.save(folder / "best" / "model.zip")
    wall = time.monotonic() - started
    last = history[-1]
    summary = dict(decisions=last["decisions"], win_rate=last["win_rate"])
    summary["wall_seconds"] = round(wall, 1)
    save_json(folder / "summary.json", summary)
    say(
        f"done in {duration(wall)}: {last['win_rate']:.1%} against optimal over "
        f"{config.eval_games:,} games; the model is {folder / 'best' / 'model.zip'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
