"""A MaskablePPO run trained from its checked config: the environments and model, the
run folder written, training with one callback, the end. train.py, sweep.py (each
evaluation reported to Ray Tune through `on_eval`) and demo.py train with it."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from fivethousand_rl.agents.training import checkpoint, progress
from fivethousand_rl.agents.training.config import TrainConfig, record_run, save_json
from fivethousand_rl.agents.training.model import make_model, make_vec_env

if TYPE_CHECKING:
    from fivethousand_rl.agents.training.callback import EvalHook


def train(
    config: TrainConfig,
    run_dir: Path,
    extra: dict | None,
    command: list[str],
    stop_after: float | None = None,
    show_bar: bool = True,
    on_eval: EvalHook | None = None,
) -> int:
    """Train the run (`extra`: its checkpoint, to resume; None: a new run) and return the
    exit code. Everything is built before anything is written: a run that cannot start
    leaves no folder. `command` (the script and its flags) is added to command.txt;
    `on_eval(steps, mean win rate, results)` is told of each evaluation."""
    import torch

    from fivethousand_rl.agents import make_policy
    from fivethousand_rl.agents.training.callback import (  # imports SB3: only here
        RunCallback,
        StopTraining,
    )

    torch.set_num_threads(config.torch_threads)
    vec_env = None
    try:  # optimal: solved or loaded for the run's rules before timing starts (or refused)
        for name in config.eval_pool:
            make_policy(name).prepare(config.rules)
        vec_env = make_vec_env(config)
        if extra is not None:
            model, state = checkpoint.load_checkpoint(run_dir, config, vec_env, extra)
        else:
            model, state = make_model(config, vec_env), checkpoint.RunState.new(config)
    except ValueError as e:
        if vec_env is not None:
            vec_env.close()
        print(f"error: {e}", file=sys.stderr)
        return 2
    start = model.num_timesteps
    stop_after = None if stop_after is None else int(stop_after)
    with progress.Reporter(config.n_timesteps, start, show_bar=show_bar) as reporter:
        saved = start if extra is not None else None
        callback = RunCallback(config, run_dir, state, reporter, stop_after, saved, on_eval)
        try:
            record_run(run_dir, config, command)
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
    save_json(run_dir / "summary.json", summary)
    for line in progress.finished(config, run_dir, steps, state.evals, state.wall_seconds):
        print(line)
