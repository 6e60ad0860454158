"""A PPO run's checkpoint (latest/model.zip and latest/state.pkl), from which a run
resumes exactly as if it had not stopped, and its JSON files."""

from __future__ import annotations

import dataclasses
import os
import pickle
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fivethousand_rl.agents.base import atomic_write
from fivethousand_rl.agents.neural import first_line
from fivethousand_rl.agents.training.config import (
    LinearLearningRate,
    TrainConfig,
    parse_opponents,
    read_saved_state,
    save_json,
)


@dataclass
class RunState:
    """What a run has done so far; saved in every checkpoint (as a dict, state.pkl's
    "state"), so that a resumed run goes on where it stopped."""

    next_eval: int
    next_snapshot: int
    next_checkpoint: int
    snapshots: list[str] = field(default_factory=list)  # self-play snapshots in the pool
    evals: list[dict] = field(default_factory=list)  # as in evals.json
    best_score: float = -1.0  # best mean win rate so far (best/model.zip)
    wall_seconds: float = 0.0  # training time over every session, to the last checkpoint

    @classmethod
    def new(cls, config: TrainConfig) -> RunState:
        return cls(config.eval_freq, config.snapshot_freq, config.checkpoint_freq)

    def opponent_pool(self, config: TrainConfig) -> list[tuple[str, float]]:
        """The scripted opponents plus the snapshots, which share self_play_weight."""
        pool = parse_opponents(config.opponents)
        if self.snapshots and config.self_play_weight > 0:
            weight = config.self_play_weight / len(self.snapshots)
            pool += [(path, weight) for path in self.snapshots]
        return pool


# What state.pkl holds (save_checkpoint), and the run state inside it.
CHECKPOINT_KEYS = ("state", "num_timesteps", "torch_rng", "numpy_rng", "python_rng")
CHECKPOINT_KEYS += ("env_states", "monitor")
STATE_KEYS = tuple(f.name for f in dataclasses.fields(RunState))

# SB3's Monitor wrapper keeps the current episode's rewards and a "needs reset" flag
# in these attributes, which it has no API to save: monitor_state alone touches them.
MONITOR_FIELDS = ("rewards", "needs_reset", "episode_returns", "episode_lengths", "total_steps")


def monitor_state(vec_env, saved: dict[str, list] | None = None) -> dict[str, list]:
    """Every environment's Monitor state, after putting `saved` back first if given."""
    for key, values in (saved or {}).items():
        for i, value in enumerate(values):
            vec_env.set_attr(key, value, indices=[i])
    return {key: vec_env.get_attr(key) for key in MONITOR_FIELDS}


def save_checkpoint(model, run_dir: Path, state: RunState) -> None:
    """The latest model plus everything random or stateful, so that a resumed run
    continues exactly as an uninterrupted one would."""
    import torch

    latest = run_dir / "latest"
    # The model is written aside and renamed into place only once state.pkl is written
    # too: a disk that fills between the two leaves the last checkpoint whole (its model
    # with its own state), which --resume continues.
    pending = atomic_write(latest / ".model.pending.zip", model.save)
    extra = {
        "state": dataclasses.asdict(state),
        "num_timesteps": model.num_timesteps,
        "torch_rng": torch.get_rng_state(),
        "numpy_rng": np.random.get_state(),
        "python_rng": random.getstate(),
        "env_states": model.get_env().env_method("get_state"),
        "monitor": monitor_state(model.get_env()),
    }
    try:
        atomic_write(latest / "state.pkl", pickle.dumps(extra))
    except BaseException:
        pending.unlink(missing_ok=True)
        raise
    os.replace(pending, latest / "model.zip")
    save_json(run_dir / "evals.json", state.evals)


def read_checkpoint(run_dir: Path, config: TrainConfig) -> dict:
    """The saved state of a run's latest checkpoint (latest/state.pkl), checked to have
    everything resume restores, so that a damaged one is refused in one line; it is read
    as data only (``read_saved_state``), so no code from the folder runs."""
    extra = read_saved_state(run_dir, CHECKPOINT_KEYS)
    unreadable = f"the checkpoint in {run_dir / 'latest'} is unreadable"
    if not isinstance(extra["state"], dict):
        raise ValueError(f"{unreadable}: state.pkl's run state is not a mapping")
    if missing := [f"state.{key}" for key in STATE_KEYS if key not in extra["state"]]:
        raise ValueError(f"{unreadable}: state.pkl is incomplete (no {', '.join(missing)})")
    steps = extra["num_timesteps"]
    if not isinstance(steps, int) or steps < 0:
        raise ValueError(f"{unreadable}: state.pkl's step count is {steps!r}")
    monitor = extra["monitor"]
    if not isinstance(monitor, dict) or set(monitor) != set(MONITOR_FIELDS):
        raise ValueError(f"{unreadable}: state.pkl's monitor is not {', '.join(MONITOR_FIELDS)}")
    for key, values in [("env_states", extra["env_states"]), *monitor.items()]:
        if not isinstance(values, list) or len(values) != config.n_envs:
            raise ValueError(f"{unreadable}: {key} is not one entry per environment")
    return extra


def load_checkpoint(run_dir: Path, config: TrainConfig, vec_env, extra: dict):
    """The model and RunState of `extra` (read_checkpoint), with the environments and
    every random generator put back as they were."""
    import torch

    from fivethousand_rl.agents.neural import attach_obs_spec, load_sb3

    latest = run_dir / "latest"
    # The schedules training gave the model (SB3 saved them as pickles, never loaded).
    known = {
        "learning_rate": LinearLearningRate(config.learning_rate, config.final_learning_rate),
        "clip_range": config.clip_range,
    }
    try:
        # force_reset=False keeps the saved last observation: no env reset on resume.
        model = load_sb3(
            latest / "model.zip", config.obs_spec, vec_env, known, device="cpu", force_reset=False
        )
    except FileNotFoundError:
        raise ValueError(f"{run_dir} has no checkpoint to resume (no latest/model.zip)") from None
    except Exception as e:
        raise ValueError(f"the checkpoint in {latest} is unreadable: {first_line(e)}") from None
    attach_obs_spec(model, config.obs_spec)  # the loaded model's policy is a new one
    if extra["num_timesteps"] != model.num_timesteps:  # a crash between the two files' writes
        raise ValueError(
            f"the checkpoint in {latest} is inconsistent: the model is at step "
            f"{model.num_timesteps:,}, the saved state at {extra['num_timesteps']:,}"
        )
    try:
        state = RunState(**{key: extra["state"][key] for key in STATE_KEYS})
        # The run folder may have moved since (a clone elsewhere): find its snapshots in it.
        state.snapshots = [relocate(spec, run_dir) for spec in state.snapshots]
        vec_env.env_method("set_opponent_pool", state.opponent_pool(config))
        for i, env_state in enumerate(extra["env_states"]):
            env_state["seat_specs"] = [relocate(s, run_dir) for s in env_state["seat_specs"]]
            vec_env.env_method("set_state", env_state, indices=[i])
        monitor_state(vec_env, extra["monitor"])
        torch.set_rng_state(extra["torch_rng"])
        np.random.set_state(extra["numpy_rng"])
        random.setstate(extra["python_rng"])
    except Exception as e:  # a hand-edited or damaged state.pkl: say so, in one line
        raise ValueError(
            f"the checkpoint in {latest} is unreadable: state.pkl does not fit this run "
            f"({type(e).__name__}: {first_line(e)})"
        ) from None
    return model, state


def relocate(spec: Any, run_dir: Path) -> Any:
    """A self-play snapshot of this run (RUN/snapshots/stepN.npz, saved with the path the
    run had then) as a path in `run_dir`; any other opponent spec unchanged."""
    if isinstance(spec, str) and spec.endswith(".npz"):
        path = Path(spec)
        if path.parent.name == "snapshots" and path.parent.parent.name == run_dir.name:
            return str(run_dir / "snapshots" / path.name)
    return spec
