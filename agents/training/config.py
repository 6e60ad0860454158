"""TrainConfig: every setting of a training run, in one dataclass from which train.py's
command line is made (tyro); presets (hyperparams/*.yaml); the values checked, each
refusal one line naming the setting."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, get_type_hints

import tyro
import yaml

from agents import make_policy
from envs.encoding import ObsSpec
from envs.rules import HOLD_VARIANTS, Rules

ROOT = Path(__file__).resolve().parents[2]
PRESETS = ROOT / "hyperparams"


# From this many environments on, the batched vector env trains faster than one game at
# a time (2-player preset, 4,096-step rollouts: 0.95x at 64 envs, 1.95x at 256).
BATCHED_FROM = 128


@dataclass
class TrainConfig:
    """Everything that defines a training run (saved as config.json in the run). Each
    field is a flag of train.py (--n-timesteps for n_timesteps) and a key of presets and
    --params; its docstring is its --help text."""

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
    self_play_weight: Annotated[float, tyro.conf.arg(aliases=("--self-play",))] = 0.0
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
    vec_env: str = "auto"
    """"dummy" (one process, one game at a time), "subproc" (one process per env),
    "batched" (one process, every game at once with array operations:
    envs.vector_env; self-play snapshots still decide one game at a time) or "auto":
    batched from BATCHED_FROM environments on, where it was measured faster
    (benchmarks/train_speed.py), else dummy."""
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

    @property
    def vec_env_kind(self) -> str:
        """The vec_env the run uses: "auto" decided by the number of environments."""
        if self.vec_env != "auto":
            return self.vec_env
        return "batched" if self.n_envs >= BATCHED_FROM else "dummy"

    @property
    def rules(self) -> Rules:
        return Rules(hold=self.hold)

    @property
    def obs_spec(self) -> ObsSpec:
        """The observations the run's environments write, saved with every model."""
        return ObsSpec("rich", self.players, self.rules)

    def validate(self) -> None:
        """Refuse, in one line, any value the run could not use (before any work)."""
        check_bounds(self, BOUNDS)
        for name, allowed in CHOICES.items():
            if (value := getattr(self, name)) not in allowed:
                raise ValueError(f"{name} must be {' or '.join(allowed)}, got {value!r}")
        if (self.n_envs * self.n_steps) % self.batch_size:
            raise ValueError("n_envs * n_steps must be a multiple of batch_size")
        for name in NETWORK_KEYS:
            layers = getattr(self, name)
            if not layers or any(not isinstance(n, int) or n < 1 for n in layers):
                raise ValueError(f"{name} must be a non-empty list of positive sizes, got {layers}")
        if self.run_name:
            check_plain_name(self.run_name)
        opponents = [name for name, _ in parse_opponents(self.opponents)]
        for name in opponents + self.eval_pool:  # unknown names, or models for other games
            make_policy(name).check_game(self.players, self.rules)


# Numeric fields: (the rule, as the error message says it; the check). Seeds feed
# numpy's legacy seeding (SB3), which takes 0..2**32-1 only.
POSITIVE = ("positive", lambda v: v > 0)
NOT_NEGATIVE = (">= 0", lambda v: v >= 0)
FRACTION = ("between 0 and 1", lambda v: 0 <= v <= 1)
BOUNDS = {
    "players": ("2..8", lambda v: 2 <= v <= 8),
    **dict.fromkeys(("max_turns", "snapshot_freq", "max_snapshots", "n_timesteps"), POSITIVE),
    **dict.fromkeys(("n_envs", "n_steps", "batch_size", "n_epochs", "clip_range"), POSITIVE),
    **dict.fromkeys(("max_grad_norm", "torch_threads", "eval_episodes"), POSITIVE),
    **dict.fromkeys(("checkpoint_freq",), POSITIVE),
    **dict.fromkeys(("self_play_weight", "learning_rate", "final_learning_rate"), NOT_NEGATIVE),
    **dict.fromkeys(("ent_coef", "vf_coef"), NOT_NEGATIVE),
    **dict.fromkeys(("gamma", "gae_lambda"), FRACTION),
    "eval_freq": (">= 0 (0: no evaluation)", lambda v: v >= 0),
    "seed": ("0..4294967295", lambda v: 0 <= v < 2**32),
}
CHOICES = {
    "hold": HOLD_VARIANTS,
    "vec_env": ("auto", "dummy", "subproc", "batched"),
    "activation": ("relu", "tanh"),
}
NETWORK_KEYS = ("state_layers", "scorer_layers", "critic_layers")  # layer sizes (networks.py)


def check_bounds(config: Any, bounds: dict) -> None:
    """Each numeric field of `config` named in `bounds` finite and within its rule, or a
    one-line ValueError naming it."""
    for name, (rule, ok) in bounds.items():
        value = getattr(config, name)
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value}")
        if not ok(value):
            raise ValueError(f"{name} must be {rule}, got {value}")


# A run folder's name, or a preset's: one plain folder name, so that a run stays
# inside its runs folder (no separator, no "..", nothing hidden, no leading "-").
PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+=@-]{0,99}")


def check_plain_name(name: str) -> None:
    if not PLAIN_NAME.fullmatch(name):
        raise ValueError(
            f"run name must be a plain folder name (letters, digits, _ . + = @ -, "
            f"not starting with . or -, at most 100 characters), got {name!r}"
        )


TYPES = get_type_hints(TrainConfig)  # every field's annotation, as a type (not a string)


def parse_opponents(specs: list[str]) -> list[tuple[str, float]]:
    """["smart@2", "turn-ev"] -> [("smart", 2.0), ("turn-ev", 1.0)], checking the names."""
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


def parse_params(params: list[str]) -> dict[str, Any]:
    """--params KEY=VALUE ... as {KEY: value}, the values read as YAML (typed, never
    evaluated as code); train.py's and train_planner.py's."""
    values = {}
    for item in params:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ValueError(f"--params takes KEY=VALUE, got {item!r}")
        try:
            values[key.strip()] = yaml.safe_load(raw)
        except (yaml.YAMLError, RecursionError):
            raise ValueError(f"--params {item!r}: the value is not a YAML scalar or list") from None
    return values


def with_params(config: TrainConfig, params: list[str]) -> TrainConfig:
    """`config` with --params KEY=VALUE ... applied."""
    return make_config({**dataclasses.asdict(config), **parse_params(params)})


def make_config(values: dict[str, Any]) -> TrainConfig:
    """A TrainConfig from loosely typed values (YAML, JSON, flags), each coerced to its
    field's type or refused in one line naming the field."""
    return TrainConfig(**{name: coerce(name, value) for name, value in values.items()})


def coerce(name: str, value: Any) -> Any:
    """A config value of the right type for field `name`, or a one-line ValueError."""
    if name not in TYPES:
        raise ValueError(f"unknown config key {name!r}; known: {', '.join(sorted(TYPES))}")
    kind = TYPES[name]
    if kind in (list[str], list[int]):
        items = list(value) if isinstance(value, list | tuple) else [value]
        if kind == list[int]:
            return [to_number(name, item) for item in items]
        if not all(isinstance(item, str) for item in items):
            raise ValueError(f"{name} must be a list of names, got {value!r}")
        return items
    if kind in (int, float):
        return to_number(name, value, kind)
    if value is None:  # "--params init_from=" (YAML reads nothing as null)
        return ""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise ValueError(f"{name} must be a string, got {value!r}")
    return str(value)


def to_number(name: str, value: Any, kind: type = int) -> Any:
    """A `kind` (int or float) from a number or a numeric string ("1e6": YAML 1.1 reads
    exponents without a dot as strings); bools, and fractions for an int, are refused."""
    number = None
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        with contextlib.suppress(ValueError):
            number = value if isinstance(value, int) and kind is int else float(value)
    if isinstance(number, int) or (kind is float and number is not None):
        return number
    if isinstance(number, float) and number.is_integer():
        return int(number)
    raise ValueError(f"{name} must be {'an integer' if kind is int else 'a number'}, got {value!r}")


# Numbers on the command line as typed ("2e6", "inf"): tyro leaves them to make_config,
# which types them and refuses a bad one in one line naming the setting.
NUMBERS = tyro.constructors.ConstructorRegistry()


@NUMBERS.primitive_rule
def _numbers(info: tyro.constructors.PrimitiveTypeInfo):
    if info.type not in (int, float):
        return None
    return tyro.constructors.PrimitiveConstructorSpec(
        nargs=1,
        metavar=info.type.__name__.upper(),
        instance_from_str=lambda args: _number(args[0]),
        is_instance=lambda value: isinstance(value, int | float),
        str_from_instance=lambda value: [str(value)],
    )


def _number(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text


# ------------------------------------------------------------------ presets
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


def read_preset(preset: str, script: str = "train.py") -> tuple[Path, dict]:
    """A preset's file and its values (a mapping of config keys), checked to be a preset
    of `script` ("train.py" or "train_planner.py"): one of the other script's is
    refused in one line saying whose it is."""
    from agents.neural import first_line

    path = preset_path(preset)
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError) as e:
        raise ValueError(f"cannot read preset {path}: {first_line(e)}") from None
    if not isinstance(data, dict):
        raise ValueError(f"preset {path} must be a mapping of config keys")
    keys = preset_keys()
    (other,) = set(keys) - {script}
    if not set(data) <= keys[script] and set(data) <= keys[other]:
        raise ValueError(
            f"preset {preset!r} is a preset of {other}, not {script}: "
            f"python {other} --preset {preset}"
        )
    return path, data


def preset_keys() -> dict[str, set[str]]:
    """Each training script's config keys: TrainConfig's, PlannerConfig's."""
    from agents.training.value_iteration import PlannerConfig  # which imports this module

    planner = {f.name for f in dataclasses.fields(PlannerConfig)}
    return {"train.py": set(TYPES), "train_planner.py": planner}


def load_preset(preset: str) -> TrainConfig:
    """The defaults with a preset's values (and its name, for the record)."""
    return make_config({**read_preset(preset)[1], "preset": preset})


def default_run_name(config: TrainConfig) -> str:
    """{preset}_{hold}_seed{seed} ("quick" for both "quick" and "path/to/quick.yaml"),
    custom_{players}p_{hold}_seed{seed} without a preset."""
    if not config.preset:
        prefix = f"custom_{config.players}p"
    else:
        prefix = config.preset if is_preset_name(config.preset) else Path(config.preset).stem
    name = f"{prefix}_{config.hold}_seed{config.seed}"
    if not PLAIN_NAME.fullmatch(name):  # a preset file with an odd name
        raise ValueError(
            f"the run name {name!r} made from the preset's file name is not a "
            "plain folder name: give one with --run-name"
        )
    return name


def new_run_config(base: TrainConfig, params: list[str], name_given: bool) -> TrainConfig:
    """A new run's config: `base` (defaults, preset, flags) with --params applied, its
    run name made if none was given, everything checked."""
    if name_given:  # an empty name given would fall back silently
        check_plain_name(base.run_name)
    config = with_params(base, params)
    config.run_name = config.run_name or default_run_name(config)
    config.validate()
    if config.init_from:  # the model to start from plays this game (a resumed run skips it)
        if not config.init_from.endswith(".zip"):
            raise ValueError(
                f"init_from must be a MaskablePPO checkpoint (.zip), got {config.init_from!r}"
            )
        make_policy(str(init_path(config))).check_game(config.players, config.rules)
    return config


def init_path(config: TrainConfig) -> Path:
    """config.init_from, read from the current folder, else from the repository's."""
    path = Path(config.init_from)
    return ROOT / path if not path.exists() and (ROOT / path).exists() else path
