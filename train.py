"""Train a MaskablePPO agent for 5000.

    python train.py --preset ppo_2p                   # a preset from hyperparams/
    python train.py --players 4 --n-timesteps 2e6 --opponents smart turn-ev threshold:350
    python train.py --resume checkpoints/ppo_2p_free_seed1   # continue an interrupted run
    python train.py --preset quick --params ent_coef=0.02 n_envs=4
    python train.py --preset ppo_2p --init-from RUN/latest/model.zip --run-name tuned \
        --params ent_coef=0 learning_rate=5e-5     # a new run from trained weights

Read top to bottom: the configuration (one dataclass, every field documented), the
environments, the model, the callbacks (evaluation against a bot pool, self-play
snapshots, checkpoints), then main(). Each run lives in its own folder under
checkpoints/ with its config, the exact command, TensorBoard logs, the latest state
(enough to resume bit for bit) and the best model by evaluation win rate.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pickle
import random
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent
PRESETS = ROOT / "hyperparams"


# ============================================================== configuration
@dataclass
class TrainConfig:
    """Everything that defines a training run (saved as config.json in the run)."""

    # --- the game
    players: int = 2
    """Players per game, 2 to 8; the learner takes one seat, drawn at random each game."""
    hold: str = "free"
    """Hold rule (RULES.md R5): "free" or "all"."""
    max_turns: int = 1000
    """Turn limit per game (truncation)."""
    opponents: list[str] = field(default_factory=lambda: ["smart", "turn-ev", "threshold:350"])
    """Scripted opponents, each optionally weighted as "name@weight" (default weight 1).
    Every opponent seat is drawn from this pool (plus self-play snapshots) each game."""

    # --- self-play
    self_play_weight: float = 0.0
    """Total weight of the learner's frozen snapshots in the opponent pool (0: off)."""
    snapshot_freq: int = 200_000
    """Steps between two snapshots of the learner joining the pool."""
    max_snapshots: int = 5
    """Most recent snapshots kept in the pool."""

    # --- PPO (sb3-contrib MaskablePPO)
    n_timesteps: int = 1_000_000
    """Total environment steps (learner decisions) to train for."""
    n_envs: int = 16
    """Parallel environments."""
    vec_env: str = "dummy"
    """"dummy" (one process; best on 2 cores) or "subproc" (one process per env)."""
    n_steps: int = 256
    """Steps per environment per rollout."""
    batch_size: int = 512
    """Minibatch size."""
    n_epochs: int = 4
    """Passes over each rollout."""
    learning_rate: float = 3e-4
    """Adam step size, decayed linearly to `final_learning_rate` over the run."""
    final_learning_rate: float = 3e-4
    """Learning rate at the end of the run (equal to learning_rate: constant)."""
    gamma: float = 0.999
    """Discount: close to 1, since only the game's end is rewarded."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    clip_range: float = 0.2
    """PPO clip range."""
    ent_coef: float = 0.01
    """Entropy bonus."""
    vf_coef: float = 0.5
    """Value loss weight."""
    max_grad_norm: float = 0.5
    """Gradient clipping."""
    state_layers: list[int] = field(default_factory=lambda: [128, 64])
    """State embedding layers of the action-scoring network (agents/networks.py)."""
    scorer_layers: list[int] = field(default_factory=lambda: [64, 64])
    """Layers of the network shared by every action's score."""
    critic_layers: list[int] = field(default_factory=lambda: [256, 256])
    """Value network layers."""
    activation: str = "relu"
    """"relu" or "tanh"."""
    torch_threads: int = 2
    """Torch CPU threads."""

    # --- evaluation and checkpoints
    eval_freq: int = 100_000
    """Steps between evaluations (0: none)."""
    eval_episodes: int = 1000
    """Games per evaluation opponent (seats alternate; the same seeds every time)."""
    eval_opponents: list[str] = field(default_factory=list)
    """Evaluation pool; empty: optimal (2 players), smart, turn-ev."""
    checkpoint_freq: int = 100_000
    """Steps between saves of the resumable latest state."""

    # --- the run
    seed: int = 0
    """Seed of everything: environments, network, sampling, evaluation."""
    run_name: str = ""
    """Folder name under checkpoints/; empty: {preset}_{hold}_seed{seed}."""
    preset: str = ""
    """The preset this config started from (for the record)."""
    init_from: str = ""
    """A MaskablePPO checkpoint (.zip) whose weights start this run, to go on training a
    model with other settings (a new run: fresh counters, snapshots and schedule);
    empty: a fresh network. The network settings must match the checkpoint's."""

    @property
    def eval_pool(self) -> list[str]:
        if self.eval_opponents:
            return list(self.eval_opponents)
        return (["optimal"] if self.players == 2 else []) + ["smart", "turn-ev"]

    def validate(self) -> None:
        if not 2 <= self.players <= 8:
            raise ValueError(f"players must be 2..8, got {self.players}")
        if self.hold not in ("free", "all"):
            raise ValueError(f"hold must be free or all, got {self.hold!r}")
        if self.vec_env not in ("dummy", "subproc"):
            raise ValueError(f"vec_env must be dummy or subproc, got {self.vec_env!r}")
        for name in ("n_timesteps", "n_envs", "n_steps", "batch_size", "n_epochs", "eval_episodes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if (self.n_envs * self.n_steps) % self.batch_size:
            raise ValueError("n_envs * n_steps must be a multiple of batch_size")
        for name in ("snapshot_freq", "max_snapshots", "checkpoint_freq", "torch_threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.eval_freq < 0 or self.self_play_weight < 0:
            raise ValueError("eval_freq and self_play_weight must be >= 0")
        if self.activation not in ("relu", "tanh"):
            raise ValueError(f"activation must be relu or tanh, got {self.activation!r}")
        for name in ("state_layers", "scorer_layers", "critic_layers"):
            layers = getattr(self, name)
            if not layers or any(not isinstance(n, int) or n < 1 for n in layers):
                raise ValueError(f"{name} must be a non-empty list of positive sizes, got {layers}")
        from agents import make_policy
        from envs.rules import Rules

        rules = Rules(hold=self.hold)
        opponents = [name for name, _ in parse_opponents(self.opponents)]
        for name in opponents + self.eval_pool:  # unknown names, or models for other games
            policy = make_policy(name)
            if hasattr(policy, "check_game"):
                policy.check_game(self.players, rules)


FIELDS = {f.name: f for f in dataclasses.fields(TrainConfig)}


def parse_opponents(specs: list[str]) -> list[tuple[str, float]]:
    """["smart@2", "turn-ev"] -> [("smart", 2.0), ("turn-ev", 1.0)], checking the names."""
    from agents import make_policy

    pool = []
    for spec in specs:
        name, _, weight = spec.partition("@")
        try:
            w = float(weight) if weight else 1.0
        except ValueError:
            raise ValueError(f"bad opponent weight in {spec!r}: expected name@number") from None
        if w <= 0:
            raise ValueError(f"opponent weight must be positive in {spec!r}")
        make_policy(name)  # a clear error for unknown names, now
        pool.append((name, w))
    if not pool:
        raise ValueError("at least one scripted opponent is needed")
    return pool


def coerce(name: str, value: Any) -> Any:
    """A config value of the right type for field `name` (from YAML or --params)."""
    if name not in FIELDS:
        raise ValueError(f"unknown config key {name!r}; known: {', '.join(sorted(FIELDS))}")
    default = getattr(TrainConfig(), name)
    if isinstance(default, list):
        return list(value) if isinstance(value, list | tuple) else [value]
    if isinstance(default, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            return int(float(value))
        return int(value)
    if isinstance(default, float):
        return float(value)
    return str(value)


def load_preset(name: str) -> dict:
    path = PRESETS / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in PRESETS.glob("*.yaml")))
        raise ValueError(f"unknown preset {name!r}; known: {known}")
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise ValueError(f"preset {path} must be a mapping of config keys")
    return data


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Train a MaskablePPO agent for 5000.",
        epilog="Config keys (for --params): " + ", ".join(FIELDS),
    )
    p.add_argument("--preset", help="a YAML preset from hyperparams/ (e.g. ppo_2p, quick)")
    p.add_argument("--n-timesteps", type=float, help="total environment steps")
    p.add_argument("--seed", type=int, help="seed of everything")
    p.add_argument("--n-envs", type=int, help="parallel environments")
    p.add_argument("--eval-freq", type=float, help="steps between evaluations")
    p.add_argument("--eval-episodes", type=int, help="games per evaluation opponent")
    p.add_argument("--players", type=int, help="players per game, 2..8")
    p.add_argument("--hold", choices=["free", "all"], help="hold rule (R5)")
    p.add_argument("--opponents", nargs="+", help="scripted opponents, name or name@weight")
    p.add_argument("--self-play", type=float, dest="self_play_weight", help="snapshot weight")
    p.add_argument("--run-name", help="run folder name under checkpoints/")
    p.add_argument("--init-from", metavar="MODEL.zip", help="start from a trained model's weights")
    p.add_argument("--params", nargs="+", default=[], metavar="KEY=VALUE", help="any config key")
    p.add_argument("--resume", metavar="RUN", help="continue the run in this folder")
    p.add_argument(
        "--stop-after",
        type=float,
        metavar="STEPS",
        help="stop once a checkpoint at or past STEPS is saved (train in pieces)",
    )
    p.add_argument("--checkpoints", default=str(ROOT / "checkpoints"), help="runs folder")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p.parse_args(argv)


# Flags that set config fields (besides --n-timesteps, which --resume may also change).
CONFIG_FLAGS = (
    "seed",
    "n_envs",
    "eval_freq",
    "eval_episodes",
    "players",
    "hold",
    "opponents",
    "self_play_weight",
    "run_name",
    "init_from",
)


def build_config(args: argparse.Namespace) -> TrainConfig:
    values: dict[str, Any] = {}
    if args.preset:
        values.update(load_preset(args.preset))
        values["preset"] = args.preset
    for name in ("n_timesteps", *CONFIG_FLAGS):
        if getattr(args, name) is not None:
            values[name] = getattr(args, name)
    for item in args.params:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ValueError(f"--params takes KEY=VALUE, got {item!r}")
        values[key.strip()] = yaml.safe_load(raw)  # typed, never evaluated as code
    config = TrainConfig(**{k: coerce(k, v) for k, v in values.items()})
    if not config.run_name:
        prefix = config.preset or f"custom_{config.players}p"
        config.run_name = f"{prefix}_{config.hold}_seed{config.seed}"
    config.validate()
    if config.init_from:  # checked at the start only: a resumed run no longer needs it
        from agents import make_policy
        from envs.rules import Rules

        if not config.init_from.endswith(".zip"):
            raise ValueError(
                f"init_from must be a MaskablePPO checkpoint (.zip), got {config.init_from!r}"
            )
        make_policy(str(init_path(config))).check_game(config.players, Rules(hold=config.hold))
    return config


def init_path(config: TrainConfig) -> Path:
    """config.init_from, read from the current folder, else from the repository's."""
    path = Path(config.init_from)
    return ROOT / path if not path.exists() and (ROOT / path).exists() else path


# ============================================================== environments
def make_env_fn(config: TrainConfig):
    """A function building one environment (picklable, for subprocess workers)."""

    def make():
        from stable_baselines3.common.monitor import Monitor

        import envs  # noqa: F401 - registers FiveThousand-v0
        from envs.gym_env import FiveThousandEnv

        env = FiveThousandEnv(
            n_players=config.players,
            hold=config.hold,
            max_turns=config.max_turns,
            learner_seat="random",
            obs_encoding="rich",
            opponent_pool=parse_opponents(config.opponents),
        )
        return Monitor(env)

    return make


def make_vec_env(config: TrainConfig):
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    fns = [make_env_fn(config) for _ in range(config.n_envs)]
    vec = SubprocVecEnv(fns) if config.vec_env == "subproc" else DummyVecEnv(fns)
    vec.seed(config.seed)
    return vec


# ============================================================== model
def make_model(config: TrainConfig, vec_env, tensorboard_log: str):
    from sb3_contrib import MaskablePPO

    from agents.networks import ActionScoringPolicy, policy_kwargs_for
    from envs.rules import Rules

    start, end = config.learning_rate, config.final_learning_rate

    def learning_rate(progress_remaining: float) -> float:
        return end + (start - end) * progress_remaining

    return MaskablePPO(
        ActionScoringPolicy,
        vec_env,
        learning_rate=learning_rate,
        n_steps=config.n_steps,
        batch_size=config.batch_size,
        n_epochs=config.n_epochs,
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        clip_range=config.clip_range,
        ent_coef=config.ent_coef,
        vf_coef=config.vf_coef,
        max_grad_norm=config.max_grad_norm,
        policy_kwargs=policy_kwargs_for(
            config.players,
            Rules(hold=config.hold),
            state_layers=tuple(config.state_layers),
            scorer_layers=tuple(config.scorer_layers),
            critic_layers=tuple(config.critic_layers),
            activation=config.activation,
        ),
        tensorboard_log=tensorboard_log,
        seed=config.seed,
        device="cpu",
        verbose=0,
    )


# ============================================================== run folder
def atomic_write(path: Path, write) -> None:
    """Write through a temporary file in the same folder, then rename: a crash never
    leaves a half-written file under `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)  # mkstemp makes files private; these are ordinary outputs
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def save_model(model, path: Path) -> None:
    atomic_write(path, model.save)  # the temporary name has a suffix: SB3 keeps it


def save_json(path: Path, data: Any) -> None:
    atomic_write(path, lambda tmp: Path(tmp).write_text(json.dumps(data, indent=2)))


# ============================================================== callbacks
def evaluate_against(policy, opponents: list[str], config: TrainConfig, games: int) -> dict:
    """Win rate of `policy` against each opponent, 2 seats alternating (or the agent in
    every seat in turn, with copies of the opponent elsewhere). Same seeds each time."""
    from agents import make_policy
    from agents.tournament import play_game, wilson_interval
    from envs.rules import Rules

    rules = Rules(hold=config.hold)
    out = {}
    for name in opponents:
        opponent = make_policy(name)
        wins = turns = 0
        for g in range(games):
            seat = g % config.players
            seats = [opponent] * config.players
            seats[seat] = policy
            winner, n_turns = play_game(seats, rules, [config.seed, 10_007, g], config.max_turns)
            wins += winner == seat
            turns += n_turns
        low, high = wilson_interval(wins, games)
        out[name] = {
            "win_rate": wins / games,
            "ci95": [low, high],
            "games": games,
            "mean_turns": turns / games,
        }
    return out


def make_callback(config: TrainConfig, run_dir: Path, state: dict, stop_after: int | None):
    """One callback for everything periodic; `state` holds what resume must restore."""
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.logger import HParam

    from agents.networks import NumpyScorer

    class RunCallback(BaseCallback):
        def _on_training_start(self) -> None:
            self.wall_start = time.time()
            hparams = {
                k: (v if isinstance(v, int | float | str | bool) else str(v))
                for k, v in dataclasses.asdict(config).items()
            }
            metrics = {f"eval/win_rate/{o}": 0.0 for o in config.eval_pool}
            self.logger.record(
                "hparams", HParam(hparams, metrics), exclude=("stdout", "log", "json", "csv")
            )
            self.episodes: list[dict] = []

        def _on_step(self) -> bool:
            for info, done in zip(self.locals["infos"], self.locals["dones"], strict=True):
                if done:
                    self.episodes.append(info)
            return True

        def _on_rollout_end(self) -> None:
            if self.episodes:
                infos = self.episodes
                self.logger.record(
                    "game/learner_win_rate",
                    np.mean([i["winner"] == i["learner_seat"] for i in infos]),
                )
                self.logger.record("game/length_turns", np.mean([i["turns"] for i in infos]))
                turns = sum(i["learner_turns"] for i in infos)
                self.logger.record(
                    "game/bust_rate", sum(i["learner_busts"] for i in infos) / max(turns, 1)
                )
                self.episodes = []

        def _on_rollout_start(self) -> None:
            # Here the previous rollout has been trained on: a clean point to save.
            entropy_loss = self.logger.name_to_value.get("train/entropy_loss")
            if entropy_loss is not None:
                self.logger.record("train/policy_entropy", -entropy_loss)
            steps = self.num_timesteps
            if steps == 0:
                return
            if config.self_play_weight > 0 and steps >= state["next_snapshot"]:
                state["next_snapshot"] += config.snapshot_freq
                self.add_snapshot(steps)
            if config.eval_freq and steps >= state["next_eval"]:
                state["next_eval"] += config.eval_freq
                self.evaluate(steps)
            if steps >= state["next_checkpoint"]:
                state["next_checkpoint"] += config.checkpoint_freq
                self.checkpoint()
                if stop_after is not None and steps >= stop_after:
                    state["stopped"] = True
                    raise StopTraining

        def _on_training_end(self) -> None:
            if not state.get("stopped"):
                steps = self.num_timesteps
                if config.eval_freq:
                    self.evaluate(steps)
                    # Extending the finished run (--resume --n-timesteps) must not
                    # evaluate this step again: move on as an uninterrupted run would.
                    while state["next_eval"] <= steps:
                        state["next_eval"] += config.eval_freq
                self.checkpoint()

        def add_snapshot(self, steps: int) -> None:
            path = run_dir / "snapshots" / f"step{steps}.npz"
            path.parent.mkdir(exist_ok=True)
            NumpyScorer.from_policy(self.model.policy, name=f"snapshot@{steps}").save(path)
            state["snapshots"] = (state["snapshots"] + [str(path)])[-config.max_snapshots :]  # >= 1
            self.training_env.env_method("set_opponent_pool", opponent_pool(config, state))

        def evaluate(self, steps: int) -> None:
            scorer = NumpyScorer.from_policy(self.model.policy, name="learner")
            results = evaluate_against(scorer, config.eval_pool, config, config.eval_episodes)
            for name, r in results.items():
                self.logger.record(f"eval/win_rate/{name}", r["win_rate"])
                self.logger.record(f"eval/ci95_low/{name}", r["ci95"][0])
                self.logger.record(f"eval/ci95_high/{name}", r["ci95"][1])
            score = float(np.mean([r["win_rate"] for r in results.values()]))
            self.logger.record("eval/mean_win_rate", score)
            state["evals"].append({"steps": steps, "results": results, "mean_win_rate": score})
            if score > state["best_score"]:
                state["best_score"] = score
                save_model(self.model, run_dir / "best" / "model.zip")
                save_json(run_dir / "best" / "eval.json", state["evals"][-1])
            self.logger.dump(steps)

        def checkpoint(self) -> None:
            state["wall_seconds"] += time.time() - self.wall_start
            self.wall_start = time.time()
            save_checkpoint(self.model, run_dir, state)

    return RunCallback()


class StopTraining(Exception):
    """Raised by the callback to stop a run early at a checkpoint (--stop-after)."""


def opponent_pool(config: TrainConfig, state: dict) -> list[tuple[str, float]]:
    pool = parse_opponents(config.opponents)
    snapshots = state["snapshots"]
    if snapshots and config.self_play_weight > 0:
        pool += [(path, config.self_play_weight / len(snapshots)) for path in snapshots]
    return pool


# ============================================================== exact resume
# SB3's Monitor wrapper keeps the current episode's rewards and a "needs reset" flag.
MONITOR_FIELDS = ("rewards", "needs_reset", "episode_returns", "episode_lengths", "total_steps")


def save_checkpoint(model, run_dir: Path, state: dict) -> None:
    """The latest model plus everything random or stateful, so that a resumed run
    continues exactly as an uninterrupted one would."""
    import torch

    latest = run_dir / "latest"
    save_model(model, latest / "model.zip")
    extra = {
        "state": state,
        "num_timesteps": model.num_timesteps,
        "torch_rng": torch.get_rng_state(),
        "numpy_rng": np.random.get_state(),
        "python_rng": random.getstate(),
        "env_states": model.get_env().env_method("get_state"),
        "monitor": {k: model.get_env().get_attr(k) for k in MONITOR_FIELDS},
    }
    atomic_write(latest / "state.pkl", lambda tmp: Path(tmp).write_bytes(pickle.dumps(extra)))
    save_json(run_dir / "evals.json", state["evals"])


def relocate(spec: Any, run_dir: Path) -> Any:
    """A self-play snapshot of this run (RUN/snapshots/stepN.npz, saved with the path the
    run had then) as a path in `run_dir`; any other opponent spec unchanged."""
    if isinstance(spec, str) and spec.endswith(".npz"):
        path = Path(spec)
        if path.parent.name == "snapshots" and path.parent.parent.name == run_dir.name:
            return str(run_dir / "snapshots" / path.name)
    return spec


def load_checkpoint(run_dir: Path, config: TrainConfig, vec_env):
    import torch
    from sb3_contrib import MaskablePPO

    latest = run_dir / "latest"
    try:
        extra = pickle.loads((latest / "state.pkl").read_bytes())
        # force_reset=False keeps the saved last observation: no env reset on resume.
        model = MaskablePPO.load(latest / "model.zip", env=vec_env, device="cpu", force_reset=False)
    except FileNotFoundError:
        raise ValueError(f"{run_dir} has no checkpoint to resume (latest/ is missing)") from None
    except Exception as e:
        raise ValueError(f"the checkpoint in {latest} is unreadable: {e}") from None
    try:
        state = extra["state"]
        saved_steps = extra["num_timesteps"]
    except (KeyError, TypeError):
        raise ValueError(
            f"the checkpoint in {latest} is unreadable: state.pkl is incomplete"
        ) from None
    if saved_steps != model.num_timesteps:  # a crash between the two files' writes
        raise ValueError(
            f"the checkpoint in {latest} is inconsistent: the model is at step "
            f"{model.num_timesteps:,}, the saved state at {saved_steps:,}"
        )
    # The run folder may have moved since (a clone elsewhere): find its snapshots in it.
    state["snapshots"] = [relocate(spec, run_dir) for spec in state["snapshots"]]
    vec_env.env_method("set_opponent_pool", opponent_pool(config, state))
    for i, env_state in enumerate(extra["env_states"]):
        env_state["seat_specs"] = [relocate(spec, run_dir) for spec in env_state["seat_specs"]]
        vec_env.env_method("set_state", env_state, indices=[i])
    for key, values in extra["monitor"].items():
        for i, value in enumerate(values):
            vec_env.set_attr(key, value, indices=[i])
    torch.set_rng_state(extra["torch_rng"])
    np.random.set_state(extra["numpy_rng"])
    random.setstate(extra["python_rng"])
    return model, state


# ============================================================== main
def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    checkpoints = Path(args.checkpoints)
    try:
        if args.resume:
            fixed = [f for f in ("preset", *CONFIG_FLAGS) if getattr(args, f) is not None]
            fixed += ["params"] if args.params else []
            if fixed:
                raise ValueError(
                    f"--resume continues a run as configured; it takes only "
                    f"--n-timesteps, --stop-after, --no-progress (not {fixed[0]})"
                )
            run_dir = Path(args.resume)
            if not (run_dir / "config.json").is_file():
                run_dir = checkpoints / args.resume
            if not (run_dir / "config.json").is_file():
                raise ValueError(f"no run to resume at {args.resume} (no config.json)")
            saved = json.loads((run_dir / "config.json").read_text())
            config = TrainConfig(**{k: coerce(k, v) for k, v in saved.items()})
            if args.n_timesteps is not None:  # extend (or shorten) the run
                config.n_timesteps = int(args.n_timesteps)
            config.validate()
        else:
            config = build_config(args)
            run_dir = checkpoints / config.run_name
            if run_dir.exists():
                raise ValueError(
                    f"{run_dir} exists: --resume {run_dir} to continue it, "
                    "or pick another --run-name"
                )
    except (ValueError, json.JSONDecodeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    import torch

    torch.set_num_threads(config.torch_threads)
    from agents.optimal import two_player_solution
    from envs.rules import Rules

    if "optimal" in config.eval_pool:
        two_player_solution(Rules(hold=config.hold))  # solve or load before timing starts

    # Build everything before writing anything: a run that cannot start leaves no folder.
    vec_env = make_vec_env(config)
    if args.resume:
        try:
            model, state = load_checkpoint(run_dir, config, vec_env)
        except ValueError as e:
            vec_env.close()
            print(f"error: {e}", file=sys.stderr)
            return 2
        state.pop("stopped", None)
        print(f"resuming {run_dir} at step {model.num_timesteps:,}")
    else:
        model = make_model(config, vec_env, str(run_dir / "tb"))
        if config.init_from:
            from agents.neural import first_line

            try:  # weights (and the optimizer's moments) of the trained model
                model.set_parameters(str(init_path(config)), exact_match=True, device="cpu")
            except Exception as e:
                vec_env.close()
                print(
                    f"error: cannot start from {config.init_from}: {first_line(e)} "
                    "(the network settings must match the checkpoint's)",
                    file=sys.stderr,
                )
                return 2
        state = {
            "next_eval": config.eval_freq,
            "next_snapshot": config.snapshot_freq,
            "next_checkpoint": config.checkpoint_freq,
            "snapshots": [],
            "evals": [],
            "best_score": -1.0,
            "wall_seconds": 0.0,
        }
    run_dir.mkdir(parents=True, exist_ok=True)
    save_json(run_dir / "config.json", dataclasses.asdict(config))
    with open(run_dir / "command.txt", "a") as f:
        f.write(shlex.join(["python", "train.py", *argv]) + "\n")
    model.tensorboard_log = str(run_dir / "tb")
    stop_after = int(args.stop_after) if args.stop_after is not None else None
    callback = make_callback(config, run_dir, state, stop_after)
    remaining = config.n_timesteps - model.num_timesteps
    if remaining > 0:
        try:
            model.learn(
                total_timesteps=remaining,
                callback=callback,
                reset_num_timesteps=False,
                tb_log_name="run",
                progress_bar=not args.no_progress,
            )
        except StopTraining:
            print(
                f"stopped at step {model.num_timesteps:,} (checkpoint saved); "
                f"continue with: python train.py --resume {run_dir}"
            )
            vec_env.close()
            return 0
    vec_env.close()
    summary = {
        "steps": model.num_timesteps,
        "wall_seconds": state["wall_seconds"],
        "best_mean_win_rate": state["best_score"],
        "last_eval": state["evals"][-1] if state["evals"] else None,
    }
    save_json(run_dir / "summary.json", summary)
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
