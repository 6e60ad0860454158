"""Train a MaskablePPO agent for 5000.

    python train.py --preset ppo_2p                   # a preset from hyperparams/
    python train.py --players 4 --n-timesteps 2e6 --opponents smart turn-ev threshold:350
    python train.py --resume checkpoints/ppo_2p_free_seed0   # continue an interrupted run
    python train.py --preset quick --params ent_coef=0.02 n_envs=4
    python train.py --preset ppo_2p --init-from RUN/latest/model.zip --run-name tuned \\
        --params ent_coef=0 learning_rate=5e-5     # a new run from trained weights

Top to bottom: the command line (TrainConfig and Args), the run's config and folder,
the environments and model, training with one callback, the end; the machinery is in
agents/training/. A run's folder (checkpoints/NAME) holds its config, the command, the
TensorBoard logs, the latest state (to resume bit for bit) and the best model.
"""

from __future__ import annotations

import dataclasses
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import tyro

from agents.base import check_output_folder
from agents.training import checkpoint, progress
from agents.training.config import NUMBERS, TrainConfig, load_preset, new_run_config, to_number
from agents.training.model import make_model, make_vec_env

if TYPE_CHECKING:
    from agents.training.callback import EvalHook

ROOT = Path(__file__).resolve().parent


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
    """The runs folder (default: checkpoints/ beside train.py)."""
    progress: bool = True
    """Show a progress bar."""
    given: tyro.conf.Suppress[frozenset[str]] = frozenset()  # the flags on the command line


def parse_args(argv: list[str]) -> Args:
    """The command line; a preset's values become the defaults under the flags."""
    given = frozenset(arg.split("=", 1)[0] for arg in argv if arg.startswith("--"))
    with NUMBERS:
        args = tyro.cli(Args, args=argv, config=(tyro.conf.OmitArgPrefixes,))
        if "--preset" in given:
            preset = Args(config=load_preset(args.config.preset))
            args = tyro.cli(Args, args=argv, config=(tyro.conf.OmitArgPrefixes,), default=preset)
    return dataclasses.replace(args, given=given)


def build_config(args: Args) -> TrainConfig:
    """A new run's config: the flags over the preset over the defaults, then --params."""
    return new_run_config(args.config, args.params, name_given="--run-name" in args.given)


RESUME_FLAGS = {"--resume", "--n-timesteps", "--stop-after", "--no-progress", "--checkpoints"}


def prepare(args: Args) -> tuple[TrainConfig, Path, dict | None]:
    """The run's config and folder, and for --resume its checkpoint; everything checked
    before any work or any write (ValueError: one line for the user)."""
    if args.stop_after is not None and to_number("--stop-after", args.stop_after) < 1:
        raise ValueError(f"--stop-after must be positive, got {args.stop_after:g}")
    checkpoints = Path(args.checkpoints) if args.checkpoints else ROOT / "checkpoints"
    if not args.resume:
        check_output_folder(checkpoints, "--checkpoints")  # the run folder is made in it
        config = build_config(args)
        run_dir = checkpoints / config.run_name
        if run_dir.exists():
            raise ValueError(
                f"{run_dir} exists: --resume {run_dir} to continue it, or pick another --run-name"
            )
        return config, run_dir, None
    if fixed := sorted(args.given - RESUME_FLAGS):
        raise ValueError(
            "--resume continues a run as configured; it takes only "
            f"--n-timesteps, --stop-after, --no-progress (not {fixed[0]})"
        )
    steps = args.config.n_timesteps if "--n-timesteps" in args.given else None
    run_dir = checkpoint.find_run(args.resume, checkpoints)
    check_output_folder(run_dir, "--resume")
    return checkpoint.open_run(run_dir, steps)


# ============================================================== training
def train(
    config: TrainConfig,
    run_dir: Path,
    extra: dict | None,
    args: Args,
    argv: list,
    on_eval: EvalHook | None = None,
) -> int:
    """Build everything, then write the run folder and train (the user has seen the plan)."""
    import torch

    from agents.optimal import two_player_solution
    from agents.training.callback import RunCallback, StopTraining  # imports SB3: only here

    torch.set_num_threads(config.torch_threads)
    if "optimal" in config.eval_pool:
        two_player_solution(config.rules)  # solve or load before timing starts
    # Build everything before writing anything: a run that cannot start leaves no folder.
    vec_env = make_vec_env(config)
    try:
        if extra is not None:
            model, state = checkpoint.load_checkpoint(run_dir, config, vec_env, extra)
        else:
            model, state = make_model(config, vec_env), checkpoint.RunState.new(config)
    except ValueError as e:
        vec_env.close()
        print(f"error: {e}", file=sys.stderr)
        return 2
    start = model.num_timesteps
    stop_after = None if args.stop_after is None else int(args.stop_after)
    with progress.Reporter(config.n_timesteps, start, show_bar=args.progress) as reporter:
        saved = start if extra is not None else None
        callback = RunCallback(config, run_dir, state, reporter, stop_after, saved, on_eval)
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
            checkpoint.save_json(run_dir / "config.json", dataclasses.asdict(config))
            with open(run_dir / "command.txt", "a") as f:
                f.write(shlex.join(["python", "train.py", *argv]) + "\n")
            model.tensorboard_log = str(run_dir / "tb")
            model.learn(
                total_timesteps=config.n_timesteps - start,
                callback=callback,
                reset_num_timesteps=False,
                tb_log_name="run",
            )
        except StopTraining:
            reporter.update(model.num_timesteps, "stopped", "")
            steps, again = model.num_timesteps, progress.resume_command(run_dir)
            reporter.say(f"stopped at step {steps:,} (checkpoint saved); continue with: {again}")
            return 0
        except KeyboardInterrupt:  # a new run with no checkpoint yet would block the command
            if callback.saved_steps is None:
                shutil.rmtree(run_dir, ignore_errors=True)
            reporter.say(progress.interrupted(model.num_timesteps, callback.saved_steps, run_dir))
            return 130  # the shell's code for Ctrl-C
        finally:
            vec_env.close()
    finish(config, run_dir, model.num_timesteps, state)
    return 0


def finish(config: TrainConfig, run_dir: Path, steps: int, state: checkpoint.RunState) -> None:
    """summary.json, and a short account for the user: where the model is, how to use it."""
    last = state.evals[-1] if state.evals else None
    summary = {"steps": steps, "wall_seconds": state.wall_seconds}
    summary.update(best_mean_win_rate=state.best_score, last_eval=last)
    checkpoint.save_json(run_dir / "summary.json", summary)
    for line in progress.finished(config, run_dir, steps, state.evals, state.wall_seconds):
        print(line)


def main(argv: list[str] | None = None, on_eval: EvalHook | None = None) -> int:
    """The command line's exit code; `on_eval(steps, mean win rate, results)` is told of
    each evaluation (sweep.py reports them to Ray Tune)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return start(argv, on_eval)
    except KeyboardInterrupt:  # before training (train() reports its own): nothing written
        print("interrupted before training started: nothing written", file=sys.stderr)
        return 130


def start(argv: list[str], on_eval: EvalHook | None = None) -> int:
    """Check everything, say what will happen, then train; or say why not, in one line."""
    try:
        args = parse_args(argv)
        config, run_dir, extra = prepare(args)
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
    return train(config, run_dir, extra, args, argv, on_eval)


if __name__ == "__main__":
    sys.exit(main())
