"""Train a PPO agent end to end in JAX (``agents.training.jax_ppo``, issue 45): the game,
the rollouts and the updates jitted together, against the network itself and JAX bots.
The result is an exported bot (ONNX + metadata) that the toolkit plays as any other.

    python train_jax.py                                   # the defaults: 2 players, self-play
    python train_jax.py --total-steps 2000000 --run-name quick_jax
    python train_jax.py --opponents self@3 turn-ev@1 --time-limit 60
    python train_jax.py --resume checkpoints/jax_ppo_2p_free_seed0   # go on after a stop
    python evaluate.py checkpoints/jax_ppo_2p_free_seed0/model.onnx optimal

The run's folder (checkpoints/RUN, or under --checkpoints; RUN is
jax_ppo_<P>p_<hold>_seed<seed> unless --run-name says) gets config.json, command.txt,
checkpoint.npz (the whole training state after every chunk of updates: plain arrays,
no pickle), history.json (per chunk: steps, steps/s, the learner's win rate against
each training opponent, losses, entropy), model.onnx with model.json beside it (the
actor, exported when a session ends), and summary.json. ``--stop-after N`` ends the
session after N more updates; ``--resume RUN`` goes on from its checkpoint, exactly.
Installed, the same program is ``fivethousand train-jax``.
"""

# No ``from __future__ import annotations``: tyro reads the annotations of ``Args``, made
# inside a function around the config class imported there.

import dataclasses
import functools
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import tyro

SCRIPT = "python train_jax.py"  # how the command names itself when run as a script
CONFIG, CHECKPOINT, HISTORY = "config.json", "checkpoint.npz", "history.json"
MODEL, SUMMARY = "model.onnx", "summary.json"


def _config_type(prog: str):
    """The config dataclass, or None after saying (one line) which extra is missing."""
    try:
        import onnx  # noqa: F401 (the export at the end of the run needs it)

        from fivethousand_rl.agents.training.jax_ppo import JaxPPOConfig
    except ModuleNotFoundError as e:
        if (e.name or "").partition(".")[0] not in ("jax", "jaxlib", "optax", "onnx"):
            raise
        print(f"error: {prog} needs {e.name}: pip install 'fivethousand-rl[jax]'", file=sys.stderr)
        return None
    return JaxPPOConfig


def make_args_type(config_type: type) -> type:
    @dataclass
    class Args:
        """Train a PPO agent in JAX: game, rollouts and updates jitted together."""

        config: Annotated[config_type, tyro.conf.arg(name="")] = field(  # type: ignore[valid-type]
            default_factory=config_type
        )
        run_name: str | None = None
        """The run's folder name (default jax_ppo_<P>p_<hold>_seed<seed>)."""
        checkpoints: str = "checkpoints"
        """The runs folder."""
        force: bool = False
        """Replace an existing run folder of that name."""
        resume: str | None = None
        """Go on training the run in this folder from its checkpoint, with its
        config.json (no other setting may be given, except --time-limit)."""
        stop_after: int = 0
        """End this session after this many updates (0: train to the end); the run
        stays resumable."""

    return Args


def run_folder(args, config) -> Path:
    """The new run's folder, made; ValueError (one line) if it exists (no --force)."""
    from fivethousand_rl.agents.training.config import fresh_run_folder

    name = args.run_name or f"jax_ppo_{config.n_players}p_{config.hold}_seed{config.seed}"
    stale = (CHECKPOINT, HISTORY, MODEL, SUMMARY, "model.json", "command.txt")
    return fresh_run_folder(args.checkpoints, name, args.force, stale)


def resumed(args, config_type: type):
    """(folder, config) of the run `args.resume` names; ValueError (one line)."""
    folder = Path(args.resume)
    if not (folder / CHECKPOINT).is_file() or not (folder / CONFIG).is_file():
        raise ValueError(f"--resume: {folder} has no {CHECKPOINT} and {CONFIG} of a run")
    given = dataclasses.replace(args.config, time_limit=config_type().time_limit)
    if given != config_type() or args.run_name or args.force:
        raise ValueError("--resume takes the run's own config.json: give no other setting")
    from fivethousand_rl.agents.training.config import read_config_json

    values = read_config_json(folder / CONFIG)
    values.pop("method", None)
    config = config_type.from_dict(values)
    return folder, dataclasses.replace(config, time_limit=args.config.time_limit)


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    config_type = _config_type(prog or SCRIPT)
    if config_type is None:
        return 2
    args = tyro.cli(
        make_args_type(config_type),
        args=argv,
        prog=prog or SCRIPT,
        description=__doc__.split("\n\n")[0],
    )
    from fivethousand_rl.agents.base import duration
    from fivethousand_rl.agents.training import jax_ppo
    from fivethousand_rl.agents.training.config import record_run, save_json

    try:
        if args.stop_after < 0:
            raise ValueError(f"--stop-after must be at least 0, got {args.stop_after}")
        if args.resume:
            folder, config = resumed(args, config_type)
        else:
            config = args.config.check()
            folder = run_folder(args, config)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not args.resume:
        command = [*shlex.split(prog or SCRIPT), *(sys.argv[1:] if argv is None else argv)]
        record_run(folder, config, command, method="jax_ppo")

    say = functools.partial(print, flush=True)

    def on_chunk(runner, history: list[dict]) -> None:
        save_json(folder / HISTORY, history)

    say(
        f"run {folder}: {config.num_updates:,} updates of {config.batch_size:,} decisions "
        f"({config.num_envs} games x {config.num_steps} steps), opponents "
        f"{' '.join(config.opponents)}" + (" (resumed)" if args.resume else "")
    )
    started = time.monotonic()
    runner, history, complete = jax_ppo.train(
        config,
        folder / CHECKPOINT,
        resume=bool(args.resume),
        stop_after=args.stop_after,
        say=say,
        on_chunk=on_chunk,
    )
    params = jax_ppo.jax.device_get(runner.params)
    jax_ppo.export_actor(params, config, folder / MODEL, folder / CHECKPOINT)
    last = history[-1] if history else {}
    updates, speed = int(runner.update), jax_ppo.training_speed(history) if history else None
    summary = dict(complete=complete, updates=updates, steps=updates * config.batch_size)
    summary["seconds"] = last.get("seconds", 0.0)
    summary["steps_per_s"] = round(speed, 1) if speed is not None else None
    summary.update(win_rate=last.get("win_rate", {}), model=str(folder / MODEL))
    save_json(folder / SUMMARY, summary)
    state = "done" if complete else "stopped (resume with --resume)"
    say(
        f"{state} after {summary['steps']:,} steps in {duration(time.monotonic() - started)}; "
        f"the model is {folder / MODEL} (python evaluate.py {folder / MODEL} optimal)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
