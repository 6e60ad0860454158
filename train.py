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
import math
import os
import pickle
import random
import re
import shlex
import shutil
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints

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
    torch_threads: int = 1
    """Torch CPU threads. One: on a 2-core machine a second one trained about 20% faster
    when the machine was idle, but 2 to 20 times slower when its cores were busy
    (measured, issue 9)."""

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
    """Folder name under checkpoints/, one plain name (no path); empty:
    {preset}_{hold}_seed{seed}."""
    preset: str = ""
    """The preset this config started from (for the record): a name from hyperparams/ or
    the path of a .yaml file."""
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
        """Refuse, in one line, any value the run could not use (before any work)."""
        for name, (rule, ok) in BOUNDS.items():
            value = getattr(self, name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value}")
            if not ok(value):
                raise ValueError(f"{name} must be {rule}, got {value}")
        if self.hold not in ("free", "all"):
            raise ValueError(f"hold must be free or all, got {self.hold!r}")
        if self.vec_env not in ("dummy", "subproc"):
            raise ValueError(f"vec_env must be dummy or subproc, got {self.vec_env!r}")
        if (self.n_envs * self.n_steps) % self.batch_size:
            raise ValueError("n_envs * n_steps must be a multiple of batch_size")
        if self.activation not in ("relu", "tanh"):
            raise ValueError(f"activation must be relu or tanh, got {self.activation!r}")
        for name in ("state_layers", "scorer_layers", "critic_layers"):
            layers = getattr(self, name)
            if not layers or any(not isinstance(n, int) or n < 1 for n in layers):
                raise ValueError(f"{name} must be a non-empty list of positive sizes, got {layers}")
        if self.run_name:
            check_plain_name(self.run_name)
        from agents import make_policy
        from envs.rules import Rules

        rules = Rules(hold=self.hold)
        opponents = [name for name, _ in parse_opponents(self.opponents)]
        for name in opponents + self.eval_pool:  # unknown names, or models for other games
            policy = make_policy(name)
            if hasattr(policy, "check_game"):
                policy.check_game(self.players, rules)


def _positive(value: float) -> bool:
    return value > 0


def _not_negative(value: float) -> bool:
    return value >= 0


# Numeric fields: (the rule, as the error message says it; the check). Seeds feed
# numpy's legacy seeding (SB3), which takes 0..2**32-1 only.
BOUNDS = {
    "players": ("2..8", lambda v: 2 <= v <= 8),
    "max_turns": ("positive", _positive),
    "self_play_weight": (">= 0", _not_negative),
    "snapshot_freq": ("positive", _positive),
    "max_snapshots": ("positive", _positive),
    "n_timesteps": ("positive", _positive),
    "n_envs": ("positive", _positive),
    "n_steps": ("positive", _positive),
    "batch_size": ("positive", _positive),
    "n_epochs": ("positive", _positive),
    "learning_rate": (">= 0", _not_negative),
    "final_learning_rate": (">= 0", _not_negative),
    "gamma": ("between 0 and 1", lambda v: 0 <= v <= 1),
    "gae_lambda": ("between 0 and 1", lambda v: 0 <= v <= 1),
    "clip_range": ("positive", _positive),
    "ent_coef": (">= 0", _not_negative),
    "vf_coef": (">= 0", _not_negative),
    "max_grad_norm": ("positive", _positive),
    "torch_threads": ("positive", _positive),
    "eval_freq": (">= 0 (0: no evaluation)", _not_negative),
    "eval_episodes": ("positive", _positive),
    "checkpoint_freq": ("positive", _positive),
    "seed": ("0..4294967295", lambda v: 0 <= v < 2**32),
}

# A run folder's name, or a preset's: one plain folder name, so that a run stays
# inside its runs folder (no separator, no "..", nothing hidden, no leading "-").
PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+=@-]{0,99}")


def check_plain_name(name: str) -> None:
    if not PLAIN_NAME.fullmatch(name):
        raise ValueError(
            f"run name must be a plain folder name (letters, digits, _ . + = @ -, "
            f"not starting with . or -, at most 100 characters), got {name!r}"
        )


FIELDS = {f.name: f for f in dataclasses.fields(TrainConfig)}
TYPES = get_type_hints(TrainConfig)  # the annotations, as types (not strings)
DEFAULTS = TrainConfig()


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
    """A config value of the right type for field `name` (from YAML, JSON or --params),
    or a one-line ValueError naming the field."""
    if name not in FIELDS:
        raise ValueError(f"unknown config key {name!r}; known: {', '.join(sorted(FIELDS))}")
    kind = TYPES[name]
    if kind in (list[str], list[int]):
        items = list(value) if isinstance(value, list | tuple) else [value]
        if kind == list[int]:
            return [to_int(name, item) for item in items]
        if not all(isinstance(item, str) for item in items):
            raise ValueError(f"{name} must be a list of names, got {value!r}")
        return items
    if kind is int:
        return to_int(name, value)
    if kind is float:
        return to_float(name, value)
    if value is None:  # "--params init_from=" (YAML reads nothing as null)
        return ""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise ValueError(f"{name} must be a string, got {value!r}")
    return str(value)


def to_int(name: str, value: Any) -> int:
    """An integer from an int, an integral float or a numeric string ("1e6": YAML 1.1
    reads exponents without a dot as strings); bools and fractions are refused."""
    number = value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
    if isinstance(number, int) and not isinstance(number, bool):
        return number
    if isinstance(number, float) and number.is_integer():
        return int(number)
    raise ValueError(f"{name} must be an integer, got {value!r}")


def to_float(name: str, value: Any) -> float:
    """A float from a number or a numeric string; bools are refused."""
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        try:
            return float(value)
        except ValueError:
            pass
    raise ValueError(f"{name} must be a number, got {value!r}")


PRESET_SUFFIXES = (".yaml", ".yml")


def is_preset_name(preset: str) -> bool:
    """A name of hyperparams/ ("quick"), rather than the path of a YAML file."""
    return bool(PLAIN_NAME.fullmatch(preset)) and not preset.endswith(PRESET_SUFFIXES)


def preset_path(preset: str) -> Path:
    """The YAML file of a preset: a name from hyperparams/, or an explicit path of a
    .yaml file (a name like "../hyperparams/quick" is neither: refused)."""
    path = PRESETS / f"{preset}.yaml" if is_preset_name(preset) else Path(preset)
    if path.suffix in PRESET_SUFFIXES and path.is_file():
        return path
    known = ", ".join(sorted(p.stem for p in PRESETS.glob("*.yaml")))
    if is_preset_name(preset):
        raise ValueError(f"unknown preset {preset!r}; known: {known}")
    raise ValueError(
        f"unknown preset {preset!r}: a preset is a name from hyperparams/ ({known}) "
        "or the path of a .yaml file"
    )


def preset_label(preset: str) -> str:
    """The preset's name, which starts its runs' default names: "quick" for both
    "quick" and "path/to/quick.yaml"."""
    return preset if is_preset_name(preset) else Path(preset).stem


def load_preset(preset: str) -> dict:
    from agents.neural import first_line

    path = preset_path(preset)
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ValueError(f"cannot read preset {path}: {first_line(e)}") from None
    if not isinstance(data, dict):
        raise ValueError(f"preset {path} must be a mapping of config keys")
    return data


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Flags with their defaults (not the None of flags left to the config, whose help
    says the config's default), and the epilog's list of keys as written."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False, [], argparse.SUPPRESS):
            return action.help
        return super()._get_help_string(action)


def shown_default(name: str) -> str:
    """A config field's default as a user would type it."""
    value = getattr(DEFAULTS, name)
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    if isinstance(value, int):
        return f"{value:_}" if value >= 10_000 else str(value)
    return str(value) if value != "" else "(none)"


def field_docs() -> dict[str, str]:
    """The docstring under each TrainConfig field, for --help (empty without sources)."""
    import ast
    import inspect

    try:
        body = ast.parse(inspect.getsource(TrainConfig)).body[0].body
    except (OSError, TypeError):
        return {}
    docs = {}
    for node, after in zip(body, body[1:], strict=False):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def config_help() -> str:
    """Every config key with its default and meaning (the epilog of --help)."""
    docs = field_docs()
    lines = ["config keys (--params KEY=VALUE), with their defaults:"]
    for name in FIELDS:
        text = f"{name}={shown_default(name)}  {docs.get(name, '')}"
        lines += textwrap.wrap(text, 88, initial_indent="  ", subsequent_indent="      ")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    def d(name: str) -> str:
        return f" (default: {shown_default(name)}, or the preset's)"

    p = argparse.ArgumentParser(
        description=textwrap.fill(
            "Train a MaskablePPO agent for 5000. A run starts from the defaults below, "
            "then a preset (--preset), then the flags, then --params. With no flags: "
            f"{DEFAULTS.n_timesteps:,} steps with the defaults (the time left is shown once "
            "the first rollout is done); --preset quick trains a small agent in a few "
            "minutes.",
            88,
        ),
        epilog=config_help(),
        formatter_class=HelpFormatter,
    )
    p.add_argument(
        "--preset",
        help="a preset name from hyperparams/ (ppo_2p, quick, ...) or the path of a .yaml file",
    )
    p.add_argument("--n-timesteps", type=float, help="total environment steps" + d("n_timesteps"))
    p.add_argument("--seed", type=int, help="seed of everything" + d("seed"))
    p.add_argument("--n-envs", type=int, help="parallel environments" + d("n_envs"))
    p.add_argument("--eval-freq", type=float, help="steps between evaluations" + d("eval_freq"))
    p.add_argument(
        "--eval-episodes", type=int, help="games per evaluation opponent" + d("eval_episodes")
    )
    p.add_argument("--players", type=int, help="players per game, 2..8" + d("players"))
    p.add_argument("--hold", choices=["free", "all"], help="hold rule (R5)" + d("hold"))
    p.add_argument(
        "--opponents", nargs="+", help="scripted opponents, name or name@weight" + d("opponents")
    )
    p.add_argument(
        "--self-play",
        type=float,
        dest="self_play_weight",
        help="weight of the learner's snapshots in the opponent pool" + d("self_play_weight"),
    )
    p.add_argument(
        "--run-name",
        help="run folder name under --checkpoints, a plain name "
        "(default: PRESET_HOLD_seedSEED, or custom_Np_HOLD_seedSEED without a preset)",
    )
    p.add_argument(
        "--init-from",
        metavar="MODEL.zip",
        help="start from a trained model's weights (default: a fresh network)",
    )
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
    if args.run_name is not None:  # given: a name (an empty one would fall back silently)
        check_plain_name(args.run_name)
    if args.preset is not None:
        values.update(load_preset(args.preset))
        values["preset"] = args.preset
    for name in ("n_timesteps", *CONFIG_FLAGS):
        if getattr(args, name) is not None:
            values[name] = getattr(args, name)
    for item in args.params:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ValueError(f"--params takes KEY=VALUE, got {item!r}")
        try:
            values[key.strip()] = yaml.safe_load(raw)  # typed, never evaluated as code
        except yaml.YAMLError:
            raise ValueError(f"--params {item!r}: the value is not a YAML scalar or list") from None
    config = TrainConfig(**{k: coerce(k, v) for k, v in values.items()})
    if not config.run_name:
        prefix = preset_label(config.preset) if config.preset else f"custom_{config.players}p"
        config.run_name = f"{prefix}_{config.hold}_seed{config.seed}"
        if not PLAIN_NAME.fullmatch(config.run_name):  # a preset file with an odd name
            raise ValueError(
                f"the run name {config.run_name!r} made from the preset's file name is not a "
                "plain folder name: give one with --run-name"
            )
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
    from agents.neural import attach_obs_spec
    from envs.rules import Rules

    start, end = config.learning_rate, config.final_learning_rate

    def learning_rate(progress_remaining: float) -> float:
        return end + (start - end) * progress_remaining

    model = MaskablePPO(
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
    attach_obs_spec(model, obs_spec(config))  # saved with every checkpoint of the run
    return model


def obs_spec(config: TrainConfig):
    """The observations the run's environments write (envs.encoding.ObsSpec)."""
    from envs.encoding import ObsSpec
    from envs.rules import Rules

    return ObsSpec("rich", config.players, Rules(hold=config.hold))


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


def duration(seconds: float) -> str:
    """3725 -> "1 h 2 min", 125 -> "2 min 5 s", 7.4 -> "7 s", 0.3 -> "<1 s"."""
    if seconds < 0.5:
        return "<1 s"
    seconds = round(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600} h {seconds % 3600 // 60} min"
    if seconds >= 60:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds} s"


class Clock:
    """The time a run has left, honestly: the training speed measured in this session
    with evaluations left out, plus the evaluations still due, each as long as the last
    one took (before the first one, only their number is known, and said)."""

    def __init__(self, config: TrainConfig, start_steps: int, now: float) -> None:
        self.total = config.n_timesteps
        self.eval_freq = config.eval_freq
        self.rollout = config.n_envs * config.n_steps
        self.start_steps = start_steps
        self.start = now
        self.eval_total = 0.0  # seconds spent evaluating in this session
        self.eval_last: float | None = None

    def evaluated(self, seconds: float) -> None:
        self.eval_total += seconds
        self.eval_last = seconds

    def evals_left(self, steps: int, next_eval: int) -> int:
        """Evaluations still to come, as the callback does them: at each rollout start
        (every `rollout` steps, while training goes on) once the due step is reached,
        then the final one."""
        if not self.eval_freq:
            return 0
        count, due, at = 1, next_eval, steps
        while True:
            if at < due:  # jump to the first rollout start at or past the due step
                at += -(-(due - at) // self.rollout) * self.rollout
            if at >= self.total:
                return count
            count, due, at = count + 1, due + self.eval_freq, at + self.rollout

    def speed(self, steps: int, now: float) -> float | None:
        """Training steps per second in this session (None before any)."""
        seconds = now - self.start - self.eval_total
        trained = steps - self.start_steps
        return trained / seconds if trained > 0 and seconds > 0 else None

    def left(self, steps: int, next_eval: int, now: float) -> str:
        """ "about 2 min 5 s left", "+ 3 evaluations" while their length is unknown."""
        speed = self.speed(steps, now)
        if speed is None:
            return "time left: after the first rollout"
        seconds = max(self.total - steps, 0) / speed
        evals = self.evals_left(steps, next_eval)
        if self.eval_last is not None:
            seconds += evals * self.eval_last
        elif evals:
            return f"about {duration(seconds)} left + {evals} evaluation{'s' * (evals > 1)}"
        return f"about {duration(seconds)} left"


class Reporter:
    """What the user sees while a run trains: a progress bar over the run's steps (or
    none, with --no-progress) whose label says what is going on and how long is left,
    and a line for each evaluation."""

    def __init__(self, total: int, steps: int, show_bar: bool) -> None:
        self.total = total
        self.bar = None
        if show_bar:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.completed:,.0f}/{task.total:,.0f} steps"),
                TimeElapsedColumn(),
                TextColumn("{task.fields[left]}"),
            )
            self.task = self.bar.add_task("training", total=total, completed=steps, left="")

    def __enter__(self) -> Reporter:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def say(self, line: str) -> None:
        if self.bar is not None:
            self.bar.console.print(line, markup=False, highlight=False, soft_wrap=True)
        else:
            print(line, flush=True)

    def update(self, steps: int, doing: str | None = None, left: str | None = None) -> None:
        if self.bar is None:
            return
        fields: dict[str, Any] = {"completed": min(steps, self.total)}  # never "2,048/1,000"
        if doing is not None:
            fields["description"] = doing
        if left is not None:
            fields["left"] = left
        self.bar.update(self.task, **fields)


def make_callback(
    config: TrainConfig, run_dir: Path, state: dict, stop_after: int | None, reporter: Reporter
):
    """One callback for everything periodic; `state` holds what resume must restore."""
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.logger import HParam

    from agents.networks import NumpyScorer

    class RunCallback(BaseCallback):
        saved_steps: int | None = None  # the step of the latest checkpoint on disk

        def _on_training_start(self) -> None:
            self.wall_start = time.time()
            self.clock = Clock(config, self.num_timesteps, time.monotonic())
            self.estimated = False
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
            reporter.update(self.num_timesteps)
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
            if steps == self.clock.start_steps:
                return
            if not self.estimated:  # one rollout and its update done: a measured speed
                self.estimated = True
                speed = self.clock.speed(steps, time.monotonic())
                trained = steps - self.clock.start_steps
                reporter.say(
                    f"speed: {speed:,.0f} steps/s over the first {trained:,} steps; "
                    + self.left(steps)
                )
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
            reporter.update(steps, "training", self.left(steps))

        def _on_training_end(self) -> None:
            if not state.get("stopped"):
                steps = self.num_timesteps
                if config.eval_freq:
                    self.evaluate(steps, final=True)
                    # Extending the finished run (--resume --n-timesteps) must not
                    # evaluate this step again: move on as an uninterrupted run would.
                    while state["next_eval"] <= steps:
                        state["next_eval"] += config.eval_freq
                self.checkpoint()
                reporter.update(steps, "done", "")

        def left(self, steps: int) -> str:
            return self.clock.left(steps, state["next_eval"], time.monotonic())

        def add_snapshot(self, steps: int) -> None:
            path = run_dir / "snapshots" / f"step{steps}.npz"
            path.parent.mkdir(exist_ok=True)
            NumpyScorer.from_policy(self.model.policy, name=f"snapshot@{steps}").save(path)
            state["snapshots"] = (state["snapshots"] + [str(path)])[-config.max_snapshots :]  # >= 1
            self.training_env.env_method("set_opponent_pool", opponent_pool(config, state))

        def evaluate(self, steps: int, final: bool = False) -> None:
            games = config.eval_episodes * len(config.eval_pool)
            what = "final evaluation" if final else "evaluating"
            reporter.update(steps, f"{what}: {games:,} games")
            started = time.monotonic()
            scorer = NumpyScorer.from_policy(self.model.policy, name="learner")
            results = evaluate_against(scorer, config.eval_pool, config, config.eval_episodes)
            for name, r in results.items():
                self.logger.record(f"eval/win_rate/{name}", r["win_rate"])
                self.logger.record(f"eval/ci95_low/{name}", r["ci95"][0])
                self.logger.record(f"eval/ci95_high/{name}", r["ci95"][1])
            score = float(np.mean([r["win_rate"] for r in results.values()]))
            self.logger.record("eval/mean_win_rate", score)
            state["evals"].append({"steps": steps, "results": results, "mean_win_rate": score})
            best = score > state["best_score"]
            if best:
                state["best_score"] = score
                save_model(self.model, run_dir / "best" / "model.zip")
                save_json(run_dir / "best" / "eval.json", state["evals"][-1])
            self.logger.dump(steps)
            seconds = time.monotonic() - started
            self.clock.evaluated(seconds)
            rates = ", ".join(f"{name} {r['win_rate']:.1%}" for name, r in results.items())
            line = f"step {steps:,}: mean win rate {score:.1%} ({rates}){', best' * best}; "
            line += f"{games:,} games in {duration(seconds)}"
            reporter.say(line + ("" if final else f"; {self.left(steps)}"))

        def checkpoint(self) -> None:
            state["wall_seconds"] += time.time() - self.wall_start
            self.wall_start = time.time()
            save_checkpoint(self.model, run_dir, state)
            self.saved_steps = self.num_timesteps

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


def read_run_config(run_dir: Path) -> TrainConfig:
    """The config.json of a run, every problem reported in one line naming the file."""
    path = run_dir / "config.json"
    try:
        saved = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path} is unreadable: {e}") from None
    if not isinstance(saved, dict):
        raise ValueError(f"{path} must hold a JSON object of config keys, not {json_kind(saved)}")
    try:
        config = TrainConfig(**{k: coerce(k, v) for k, v in saved.items()})
        config.validate()
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    return config


def json_kind(value: Any) -> str:
    kinds = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return kinds.get(type(value), "a number")


# What a checkpoint's state.pkl holds (save_checkpoint), and the run state inside it.
CHECKPOINT_KEYS = (
    "state",
    "num_timesteps",
    "torch_rng",
    "numpy_rng",
    "python_rng",
    "env_states",
    "monitor",
)
STATE_KEYS = (
    "next_eval",
    "next_snapshot",
    "next_checkpoint",
    "snapshots",
    "evals",
    "best_score",
    "wall_seconds",
)


def read_checkpoint(run_dir: Path, config: TrainConfig) -> dict:
    """The saved state of a run's latest checkpoint (latest/state.pkl), checked to have
    everything resume restores, so that a damaged one is refused in one line."""
    from agents.neural import first_line

    latest = run_dir / "latest"
    unreadable = f"the checkpoint in {latest} is unreadable"
    try:
        extra = pickle.loads((latest / "state.pkl").read_bytes())
    except FileNotFoundError:
        raise ValueError(f"{run_dir} has no checkpoint to resume (latest/ is missing)") from None
    except Exception as e:  # unpickling garbage raises about anything
        raise ValueError(f"{unreadable}: {first_line(e)}") from None
    if not isinstance(extra, dict):
        raise ValueError(f"{unreadable}: state.pkl holds no checkpoint")
    missing = [key for key in CHECKPOINT_KEYS if key not in extra]
    if not missing and not isinstance(extra["state"], dict):
        raise ValueError(f"{unreadable}: state.pkl's run state is not a mapping")
    if not missing:
        missing = [f"state.{key}" for key in STATE_KEYS if key not in extra["state"]]
    if missing:
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
    """The model and run state of `extra` (read_checkpoint), with the environments and
    every random generator put back as they were."""
    import torch
    from sb3_contrib import MaskablePPO

    from agents.neural import attach_obs_spec, first_line

    latest = run_dir / "latest"
    try:
        # force_reset=False keeps the saved last observation: no env reset on resume.
        model = MaskablePPO.load(latest / "model.zip", env=vec_env, device="cpu", force_reset=False)
    except FileNotFoundError:
        raise ValueError(f"{run_dir} has no checkpoint to resume (no latest/model.zip)") from None
    except Exception as e:
        raise ValueError(f"the checkpoint in {latest} is unreadable: {first_line(e)}") from None
    attach_obs_spec(model, obs_spec(config))  # the loaded model's policy is a new one
    if extra["num_timesteps"] != model.num_timesteps:  # a crash between the two files' writes
        raise ValueError(
            f"the checkpoint in {latest} is inconsistent: the model is at step "
            f"{model.num_timesteps:,}, the saved state at {extra['num_timesteps']:,}"
        )
    state = extra["state"]
    try:
        # The run folder may have moved since (a clone elsewhere): find its snapshots in it.
        state["snapshots"] = [relocate(spec, run_dir) for spec in state["snapshots"]]
        vec_env.env_method("set_opponent_pool", opponent_pool(config, state))
        for i, env_state in enumerate(extra["env_states"]):
            env_state["seat_specs"] = [relocate(s, run_dir) for s in env_state["seat_specs"]]
            vec_env.env_method("set_state", env_state, indices=[i])
        for key, values in extra["monitor"].items():
            for i, value in enumerate(values):
                vec_env.set_attr(key, value, indices=[i])
        torch.set_rng_state(extra["torch_rng"])
        np.random.set_state(extra["numpy_rng"])
        random.setstate(extra["python_rng"])
    except Exception as e:  # a hand-edited or damaged state.pkl: say so, in one line
        raise ValueError(
            f"the checkpoint in {latest} is unreadable: state.pkl does not fit this run "
            f"({type(e).__name__}: {first_line(e)})"
        ) from None
    return model, state


# ============================================================== main
def shown(path: Path) -> str:
    """A path as the user would type it: relative to the current folder when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def prepare(args: argparse.Namespace) -> tuple[TrainConfig, Path, dict | None]:
    """The run's config and folder, and for --resume its checkpoint; everything checked
    before any work or any write (ValueError: one line for the user)."""
    if args.stop_after is not None and to_int("--stop-after", args.stop_after) < 1:
        raise ValueError(f"--stop-after must be positive, got {args.stop_after:g}")
    checkpoints = Path(args.checkpoints)
    if not args.resume:
        config = build_config(args)
        if checkpoints.exists() and not checkpoints.is_dir():
            raise ValueError(f"--checkpoints {checkpoints} is not a folder")
        run_dir = checkpoints / config.run_name
        if run_dir.exists():
            raise ValueError(
                f"{run_dir} exists: --resume {run_dir} to continue it, or pick another --run-name"
            )
        return config, run_dir, None
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
    config = read_run_config(run_dir)
    if args.n_timesteps is not None:  # extend (or shorten) the run
        config.n_timesteps = to_int("n_timesteps", args.n_timesteps)
        config.validate()
    return config, run_dir, read_checkpoint(run_dir, config)


def plan(config: TrainConfig, run_dir: Path, steps: int, no_flags: bool) -> list[str]:
    """What the run is about to do, said before it starts."""
    what = f"resuming {shown(run_dir)} at step {steps:,}" if steps else f"run {shown(run_dir)}"
    opponents = ", ".join(config.opponents)
    if config.self_play_weight:
        opponents += f" and self-play snapshots (weight {config.self_play_weight:g})"
    lines = [
        f"{what}: {config.n_timesteps - steps:,} steps to train ({config.n_timesteps:,} in all)"
        f" of {config.players}-player 5000, hold {config.hold}, {config.n_envs} environments,"
        f" against {opponents}"
    ]
    if config.eval_freq:
        lines.append(
            f"evaluation every {config.eval_freq:,} steps and at the end: "
            f"{config.eval_episodes:,} games against each of {', '.join(config.eval_pool)}; "
            f"resumable checkpoint every {config.checkpoint_freq:,} steps"
        )
    if no_flags:
        lines.append(
            "no flags: the default settings (python train.py --help lists them); "
            "--preset quick trains a small agent in a few minutes; Ctrl-C stops"
        )
    return lines


def train(config: TrainConfig, run_dir: Path, extra: dict | None, args, argv: list[str]) -> int:
    """Build everything, then write the run folder and train (the user has seen the plan)."""
    import torch

    torch.set_num_threads(config.torch_threads)
    from agents.optimal import two_player_solution
    from envs.rules import Rules

    if "optimal" in config.eval_pool:
        two_player_solution(Rules(hold=config.hold))  # solve or load before timing starts

    # Build everything before writing anything: a run that cannot start leaves no folder.
    vec_env = make_vec_env(config)
    if extra is not None:
        try:
            model, state = load_checkpoint(run_dir, config, vec_env, extra)
        except ValueError as e:
            vec_env.close()
            print(f"error: {e}", file=sys.stderr)
            return 2
        state.pop("stopped", None)
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
    stop_after = int(args.stop_after) if args.stop_after is not None else None
    start = model.num_timesteps
    with Reporter(config.n_timesteps, start, show_bar=not args.no_progress) as reporter:
        callback = make_callback(config, run_dir, state, stop_after, reporter)
        callback.saved_steps = start if extra is not None else None
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
            save_json(run_dir / "config.json", dataclasses.asdict(config))
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
            reporter.say(
                f"stopped at step {model.num_timesteps:,} (checkpoint saved); "
                f"continue with: python train.py --resume {shlex.quote(shown(run_dir))}"
            )
            return 0
        except KeyboardInterrupt:
            return interrupted(model.num_timesteps, callback.saved_steps, run_dir, reporter)
        finally:
            vec_env.close()
    finish(config, run_dir, model.num_timesteps, state)
    return 0


def interrupted(steps: int, saved: int | None, run_dir: Path, reporter: Reporter) -> int:
    """Ctrl-C: say what is kept. A new run with no checkpoint yet cannot be resumed, and
    its folder would block the same command: it is removed."""
    if saved is None:
        shutil.rmtree(run_dir, ignore_errors=True)
        reporter.say(
            f"interrupted at step {steps:,}, before the first checkpoint: nothing kept "
            f"({shown(run_dir)} removed)"
        )
    else:
        reporter.say(
            f"interrupted at step {steps:,}; the checkpoint at step {saved:,} continues with: "
            f"python train.py --resume {shlex.quote(shown(run_dir))}"
        )
    return 130  # the shell's code for Ctrl-C


def finish(config: TrainConfig, run_dir: Path, steps: int, state: dict) -> None:
    """summary.json, and a short account for the user: where the model is, how to use it."""
    summary = {
        "steps": steps,
        "wall_seconds": state["wall_seconds"],
        "best_mean_win_rate": state["best_score"],
        "last_eval": state["evals"][-1] if state["evals"] else None,
    }
    save_json(run_dir / "summary.json", summary)
    print(f"done: {shown(run_dir)} trained to step {steps:,} ({duration(state['wall_seconds'])})")
    model = run_dir / "latest" / "model.zip"
    if state["evals"]:
        best = max(state["evals"], key=lambda e: e["mean_win_rate"])  # the first best
        model = run_dir / "best" / "model.zip"
        print(
            f"best model: {shown(model)} (mean win rate {best['mean_win_rate']:.1%} "
            f"at step {best['steps']:,})"
        )
    else:
        print(f"model: {shown(model)}")
    opponents = " ".join([shlex.quote(shown(model))] * (config.players - 1))
    hold = " --hold all" if config.hold == "all" else ""
    print(f"play against it: python play.py --opponents {opponents}{hold}")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    try:
        return start(args, argv)
    except KeyboardInterrupt:  # before training (train() reports its own): nothing written
        print("interrupted before training started: nothing written", file=sys.stderr)
        return 130


def start(args: argparse.Namespace, argv: list[str]) -> int:
    """Check everything, say what will happen, then train; or say why not, in one line."""
    try:
        config, run_dir, extra = prepare(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    steps = extra["num_timesteps"] if extra is not None else 0
    if steps >= config.n_timesteps:  # nothing to train: leave the run exactly as it is
        print(
            f"{shown(run_dir)} is already complete at step {steps:,} (n_timesteps "
            f"{config.n_timesteps:,}): nothing done, nothing changed; to train it further: "
            f"python train.py --resume {shlex.quote(shown(run_dir))} --n-timesteps N "
            f"with N above {steps:,}"
        )
        return 0
    for line in plan(config, run_dir, steps, no_flags=not argv):
        print(line, flush=True)
    return train(config, run_dir, extra, args, argv)


if __name__ == "__main__":
    sys.exit(main())
