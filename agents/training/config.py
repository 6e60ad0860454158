"""The run machinery both training scripts share: TrainConfig (train.py) and
PlannerConfig (train_planner.py), every setting of a run in one dataclass from which the
script's command line is made (tyro); loosely typed values (presets, config.json,
--params) typed by the dataclass's own field types; presets (hyperparams/*.yaml); run
names and folders; --resume. Every refusal is one line naming the setting."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import os
import re
import shlex
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, get_type_hints

import tyro
import yaml

from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.base import (
    MAX_MODEL_BYTES,
    atomic_write,
    brief_repr,
    check_output_folder,
    program,
    read_capped,
    read_text_capped,
)
from fivethousand_rl.agents.rule_flags import rule_flags
from fivethousand_rl.agents.shipped import SHIPPED, data_folder, shipped_model
from fivethousand_rl.agents.tournament import standard_table
from fivethousand_rl.agents.value_net import FeatureSpec, ValueNet
from fivethousand_rl.envs.encoding import ObsSpec
from fivethousand_rl.envs.game import MAX_PLAYERS, MIN_PLAYERS, check_players
from fivethousand_rl.envs.rules import DEFAULT_RULES, HOLD_VARIANTS, Rules, check_target_bound

PRESETS = data_folder("hyperparams")
RUNS = Path("checkpoints")  # the default runs folder, in the current folder
# The 2-player planner's default evaluation includes it (as in every shipped planner run).
SHIPPED_PPO_2P = "ppo-2p"


# From this many environments on, the batched vector env trains faster than one game at
# a time (2-player preset, 4,096-step rollouts: 0.95x at 64 envs, 1.95x at 256).
BATCHED_FROM = 128


@dataclass
class GameRules:
    """The rules a run trains under, the fields of ``envs.rules.Rules`` (RULES.md R5,
    V1-V5): every other command line's rule flags (agents.rule_flags), made by tyro from
    these fields of the same names. A config.json written before a switch existed lacks
    it: it reads as the seeds' rule, the only one such runs knew."""

    hold: str = DEFAULT_RULES.hold
    """Hold rule (RULES.md R5): "free" or "all"."""
    target: int = DEFAULT_RULES.target
    """The exact score that wins (V5), a multiple of 100; smaller: a shrunken game."""
    entry: int = DEFAULT_RULES.entry
    """The turn total a player at 0 needs to bank (V1), a multiple of 50 up to the target."""
    bump: bool = DEFAULT_RULES.bump
    """Banking onto another player's score sends it to 0 (V2)."""
    overshoot: str = DEFAULT_RULES.overshoot
    """A total past the target: "gift" (to the lowest entered player) or "lost" (V3)."""
    fifty_rule: bool = DEFAULT_RULES.fifty_rule
    """No banking a turn total that ends in 50 (V4)."""

    @property
    def rules(self) -> Rules:
        """The game's rules (a bad value or a target past MAX_TARGET: a one-line
        ValueError)."""
        return check_target_bound(Rules(**{name: getattr(self, name) for name in RULE_FIELDS}))


RULE_FIELDS = tuple(f.name for f in dataclasses.fields(GameRules))


def saved_rules(values: dict) -> Rules:
    """The rules a run's config.json (read as a dict) names; a key it lacks (a run from
    before that switch) is the seeds' rule. A bad value, or a target past MAX_TARGET:
    a one-line ValueError."""
    return GameRules(**{name: values[name] for name in RULE_FIELDS if name in values}).rules


def rules_tag(rules: Rules) -> str:
    """The house rules in a run's default name: "" for the seeds' rules (the hold rule is
    named on its own), else their flags, e.g. "_target-1000_no-bump_overshoot-lost"."""
    words = rule_flags(dataclasses.replace(rules, hold=DEFAULT_RULES.hold))
    return "".join(f"_{w[2:]}" if w.startswith("--") else f"-{w}" for w in words)


@dataclass
class PPOSettings:
    """The PPO settings every trainer here names alike: TrainConfig's (MaskablePPO),
    JaxPPOConfig's and examples/cleanrl_ppo.py's."""

    gamma: float = 0.999
    """Discount: close to 1, since only the game's end is rewarded."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    ent_coef: float = 0.01
    """Entropy bonus."""
    vf_coef: float = 0.5
    """Value loss weight."""
    max_grad_norm: float = 0.5
    """Gradient clipping (global norm)."""


@dataclass
class TrainConfig(PPOSettings, GameRules):
    """Everything that defines a training run (saved as config.json in the run). Each
    field is a flag of train.py (--n-timesteps for n_timesteps) and a key of presets and
    --params; its docstring is its --help text. GameRules first, then PPOSettings."""

    PROGRAM: ClassVar[str] = "train"  # the program that trains it (agents.base.program)
    RESUMABLE: ClassVar[tuple[str, ...]] = ("n_timesteps",)  # what --resume may change

    # --- the game
    players: int = 2
    """Players per game, 2 to 8; the learner takes one seat, drawn at random each game."""
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
    fivethousand_rl.envs.vector_env; self-play snapshots still decide one game at a time) or "auto":
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
    clip_range: float = 0.2
    """PPO clip range."""
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
    {preset}_{hold}_seed{seed}, the house rules after the hold rule."""
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
    def obs_spec(self) -> ObsSpec:
        """The observations the run's environments write, saved with every model."""
        return ObsSpec("rich", self.players, self.rules)

    def validate(self, new_run: bool = True) -> None:
        """Refuse, in one line, any value the run could not use (before any work);
        `new_run`: check the --init-from model too (a resumed run holds its weights)."""
        check_players(self.players, "players")
        check_fields(self, BOUNDS, CHOICES, NETWORK_KEYS)
        self.obs_spec  # noqa: B018 (the rules, and that the encoding takes them: one line)
        if (self.n_envs * self.n_steps) % self.batch_size:
            raise ValueError("n_envs * n_steps must be a multiple of batch_size")
        opponents = [name for name, _ in parse_opponents(self.opponents)]
        for name in opponents + self.eval_pool:  # unknown names, or models for other games
            make_policy(name).check_game(self.players, self.rules)
        if self.init_from and new_run:  # the model to start from plays this game
            if not self.init_from.endswith(".zip"):
                raise ValueError(
                    "init_from must be a MaskablePPO checkpoint (.zip), "
                    f"got {brief_repr(self.init_from)}"
                )
            make_policy(str(init_path(self))).check_game(self.players, self.rules)


# Numeric fields: (the rule, as the error message says it; the check). Seeds feed
# numpy's legacy seeding (SB3), which takes 0..2**32-1 only.
POSITIVE = ("positive", lambda v: v > 0)
NOT_NEGATIVE = (">= 0", lambda v: v >= 0)
FRACTION = ("between 0 and 1", lambda v: 0 <= v <= 1)
SEED = ("0..4294967295", lambda v: 0 <= v < 2**32)
BOUNDS = {
    **dict.fromkeys(("max_turns", "snapshot_freq", "max_snapshots", "n_timesteps"), POSITIVE),
    **dict.fromkeys(("n_envs", "n_steps", "batch_size", "n_epochs", "clip_range"), POSITIVE),
    **dict.fromkeys(("max_grad_norm", "torch_threads", "eval_episodes"), POSITIVE),
    **dict.fromkeys(("checkpoint_freq",), POSITIVE),
    **dict.fromkeys(("self_play_weight", "learning_rate", "final_learning_rate"), NOT_NEGATIVE),
    **dict.fromkeys(("ent_coef", "vf_coef"), NOT_NEGATIVE),
    **dict.fromkeys(("gamma", "gae_lambda"), FRACTION),
    "eval_freq": (">= 0 (0: no evaluation)", lambda v: v >= 0),
    "seed": SEED,
}
CHOICES = {
    "hold": HOLD_VARIANTS,
    "vec_env": ("auto", "dummy", "subproc", "batched"),
    "activation": ("relu", "tanh"),
}
NETWORK_KEYS = ("state_layers", "scorer_layers", "critic_layers")  # layer sizes (networks.py)


def check_fields(config: Any, bounds: dict, choices: dict, layers: tuple[str, ...]) -> None:
    """What every run's config is checked for: each numeric field of `bounds` finite and
    within its rule, each of `choices` one of its values, each of `layers` a non-empty
    list of positive sizes, the run name a plain one; else a one-line ValueError."""
    for name, (rule, ok) in bounds.items():
        value = getattr(config, name)
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value}")
        if not ok(value):
            raise ValueError(f"{name} must be {rule}, got {value}")
    for name, allowed in choices.items():
        if (value := getattr(config, name)) not in allowed:
            raise ValueError(f"{name} must be {' or '.join(allowed)}, got {brief_repr(value)}")
    for name in layers:
        sizes = getattr(config, name)
        if not sizes or any(not isinstance(n, int) or n < 1 for n in sizes):
            raise ValueError(
                f"{name} must be a non-empty list of positive sizes, got {brief_repr(sizes)}"
            )
    if getattr(config, "run_name", ""):  # a JAX run's config has none: train_jax names it
        check_plain_name(config.run_name)


# A run folder's name, or a preset's: one plain folder name, so that a run stays
# inside its runs folder (no separator, no "..", nothing hidden, no leading "-").
PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+=@-]{0,99}")


def check_plain_name(name: str) -> None:
    if not PLAIN_NAME.fullmatch(name):
        raise ValueError(
            f"run name must be a plain folder name (letters, digits, _ . + = @ -, "
            f"not starting with . or -, at most 100 characters), got {brief_repr(name)}"
        )


def parse_opponents(
    specs: list[str], known: Callable[[str], object] = make_policy
) -> list[tuple[str, float]]:
    """["smart@2", "turn-ev"] -> [("smart", 2.0), ("turn-ev", 1.0)], each name checked by
    `known` (default: an agent's name)."""
    pool = []
    for spec in specs:
        name, at, weight = spec.partition("@")
        try:  # "smart@" (an empty weight) is refused, not read as 1
            w = float(weight) if at else 1.0
        except ValueError:
            raise ValueError(
                f"bad opponent weight in {brief_repr(spec)}: expected name@number"
            ) from None
        if not math.isfinite(w) or w <= 0:  # nan <= 0 is False: checked by name
            raise ValueError(f"opponent weight must be a positive number in {brief_repr(spec)}")
        known(name)  # a clear error for unknown names, now
        pool.append((name, w))
    if not pool:
        raise ValueError("at least one opponent is needed")
    return pool


@dataclass
class PlannerConfig(GameRules):
    """Everything that defines a planner training run (saved as config.json in the run).
    Each field is a flag of train_planner.py and a key of presets; its docstring is its
    --help text. The rules first (GameRules)."""

    PROGRAM: ClassVar[str] = "train-planner"
    RESUMABLE: ClassVar[tuple[str, ...]] = ("iterations", "workers")  # same samples

    # --- the game
    players: list[int] = field(default_factory=lambda: [2])
    """Table sizes played, one per iteration in turn (one network serves them all)."""

    # --- self-play and fitting
    iterations: int = 40
    """Iterations to train for: each plays games, re-targets positions and fits."""
    games_per_iteration: int = 20
    """Self-play games per iteration."""
    epsilon: float = 0.1
    """Share of self-play decisions taken at random among the legal ones (exploration)."""
    opponents: list[str] = field(default_factory=list)
    """Scripted bots (any agent name) met in `opponent_share` of the games, random seats."""
    opponent_share: float = 0.0
    """Share of the games with scripted opponents (0: pure self-play)."""
    buffer_size: int = 50_000
    """Turn-start positions kept, the most recently seen."""
    targets_per_iteration: int = 20_000
    """Positions re-targeted and fitted each iteration (a random sample of the buffer)."""
    fit_steps: int = 300
    """Adam steps per iteration (the network is warm-started)."""
    batch_size: int = 512
    """Minibatch size of the fit."""
    learning_rate: float = 1e-3
    """Adam step size."""
    hidden: list[int] = field(default_factory=lambda: [128, 128])
    """Hidden layers of the value network (tanh)."""
    method: str = "self-play"
    """How targets are made: "self-play" (each position's target the planner's exact
    expectation of its turn), "exact-table" (a best response to one table's bots,
    their turns expanded exactly) or "best-response" (the exact best response at one
    table of 2 or 3 players, computed once: its values are the targets); see the
    module doc."""
    sweeps: int = 1
    """The exact-table method's passes per iteration over the sampled positions, each a
    re-target and a fit (every pass carries the values one turn further back)."""
    init: str = ""
    """Start from this value network (.npz, same rules and hidden sizes; a relative path
    is read from the repository's root) instead of random weights; empty: random."""
    buffer_from: str = ""
    """Start the buffer from this run's latest state (a run folder, or a run's name under
    the runs folder): the positions it met and, for the exact-table method, the bots'
    turn ends it computed. A new run with other settings (a bigger --init network, a
    smaller learning rate) then fine-tunes on every position the earlier run saw instead
    of the few its first games meet. Same method, rules and tables; empty: none."""
    workers: int = 1
    """Processes playing the exact-table method's games, bots' turn ends and plans (the
    results do not depend on it)."""

    # --- evaluation and checkpoints
    eval_freq: int = 10
    """Iterations between evaluations (0: none; there is always one at the end)."""
    eval_games: int = 1000
    """Games per evaluation table (seats rotated; the same seeds every time)."""
    eval_tables: list[str] = field(default_factory=list)
    """Evaluation tables, each the other seats as comma-separated agent names
    ("smart,turn-ev"), played at the table size they give; empty: per trained size,
    2: optimal, smart (and the shipped ppo-2p); more: agents.tournament.standard_table."""
    checkpoint_freq: int = 5
    """Iterations between saves of the resumable latest state."""

    # --- the run
    seed: int = 0
    """Seed of everything: games, network, sampling, evaluation."""
    run_name: str = ""
    """Folder name under checkpoints/, one plain name; empty: {preset}_{hold}_seed{seed},
    the house rules after the hold rule."""
    preset: str = ""
    """The preset this config started from (a name from hyperparams/ or a .yaml path)."""

    @property
    def tables(self) -> list[list[str]]:
        """The evaluation tables: each the agents in the seats beside the learner."""
        if self.eval_tables:
            return [table.split(",") for table in self.eval_tables]
        out = []
        for n in dict.fromkeys(self.players):
            if n > 2:
                out.append(standard_table(n))
                continue
            out += [["optimal"], ["smart"]]
            if self.rules == Rules():
                out.append([SHIPPED_PPO_2P])
        return out

    def init_net(self) -> ValueNet:
        """The network `init` names (a shipped agent's name, as in presets, or a path),
        checked to fit the run (one-line ValueError). An exact-table run may start from
        a network of no table: it then reads the agent's seat with zero weights."""
        net = ValueNet.load(model_path(self.init))
        fitting = (FeatureSpec(self.rules), FeatureSpec(self.rules, table=self.exact_table()))
        if net.spec not in fitting:
            raise ValueError(f"init {self.init} reads other features or rules than this run's")
        if list(net.hidden) != list(self.hidden):
            hidden = list(net.hidden)
            raise ValueError(f"init {self.init} has hidden layers {hidden}, not {self.hidden}")
        return net

    def validate(self, new_run: bool = True) -> None:
        """Refuse, in one line, any value the run could not use (before any work);
        `new_run`: load the --init network too (a resumed run holds its weights)."""
        check_fields(self, PLANNER_BOUNDS, {"hold": HOLD_VARIANTS, "method": METHODS}, ("hidden",))
        self.rules  # noqa: B018 (target and entry checked by Rules, in one line)
        if not self.players or any(not MIN_PLAYERS <= n <= MAX_PLAYERS for n in self.players):
            bounds = f"{MIN_PLAYERS}..{MAX_PLAYERS}"
            raise ValueError(f"players must be table sizes in {bounds}, got {self.players}")
        if self.opponent_share > 0 and not self.opponents:
            raise ValueError("opponent_share > 0 needs opponents")
        if self.method in TABLE_METHODS:
            self._check_exact_table()
        if self.sweeps > 1 and self.method != "exact-table":
            raise ValueError("sweeps are passes of the exact-table method (--method exact-table)")
        if self.init and new_run:
            self.init_net()
        for name in self.opponents:
            make_policy(name).check_game(max(self.players), self.rules)
        if [SHIPPED_PPO_2P] in self.tables:
            try:
                shipped_model(SHIPPED_PPO_2P)
            except ValueError as e:
                raise ValueError(
                    f"the default 2-player evaluation: {e}; or name the tables with --eval-tables"
                ) from None
        for table in self.tables:
            if not 1 <= len(table) <= MAX_PLAYERS - 1:
                raise ValueError(
                    f"an evaluation table seats 1 to {MAX_PLAYERS - 1} others, got {table}"
                )
            for name in table:
                make_policy(name).check_game(len(table) + 1, self.rules)

    def _check_exact_table(self) -> None:
        method = f"the {self.method} method"
        if len(self.tables) != 1:
            raise ValueError(
                f"{method} learns one table, got {len(self.tables)} (give it with --eval-tables)"
            )
        size = len(self.tables[0]) + 1
        if set(self.players) != {size}:
            raise ValueError(
                f"{method} trains at its table's size {size}: --players must "
                f"name them, got {self.players}"
            )
        if self.opponent_share > 0:
            raise ValueError(f"{method} plays its table's bots: no opponents")
        if self.method == "best-response" and size > MAX_BEST_RESPONSE_PLAYERS:
            raise ValueError(
                f"the best-response method needs the exact best response at its table, "
                f"computed for {MAX_BEST_RESPONSE_PLAYERS} players at most, not {size} "
                "(use --method exact-table)"
            )
        for name in self.tables[0]:
            if name.split(":")[0] not in DETERMINISTIC_BOTS:
                raise ValueError(
                    f"{method} expands the bots' turns exactly: the bots must be "
                    f"deterministic scripted ones ({', '.join(DETERMINISTIC_BOTS)}), not {name}"
                )

    def games_played(self, iterations: int) -> int:
        """Games a run plays in `iterations` iterations (the best-response method none)."""
        return 0 if self.method == "best-response" else iterations * self.games_per_iteration

    def exact_table(self) -> tuple[str, ...]:
        """The table of a run of one table (the bots after the agent); () otherwise."""
        return tuple(self.tables[0]) if self.method in TABLE_METHODS else ()


METHODS = ("self-play", "exact-table", "best-response")
TABLE_METHODS = ("exact-table", "best-response")  # a network of one table (its seat read)
# The best-response method's reach: 97,336 positions at 3 players (half an hour on 2
# cores to solve), 4.5 million at 4.
MAX_BEST_RESPONSE_PLAYERS = 3
# Bots whose every choice is a function of the position (no dice drawn from the rng).
DETERMINISTIC_BOTS = ("smart", "turn-ev", "threshold", "optimal")
PLANNER_BOUNDS = {
    **dict.fromkeys(("iterations", "games_per_iteration", "buffer_size"), POSITIVE),
    **dict.fromkeys(("targets_per_iteration", "fit_steps", "batch_size"), POSITIVE),
    **dict.fromkeys(("learning_rate", "eval_games", "checkpoint_freq"), POSITIVE),
    **dict.fromkeys(("epsilon", "opponent_share"), FRACTION),
    "workers": ("between 1 and 64", lambda v: 1 <= v <= 64),
    "sweeps": ("between 1 and 100", lambda v: 1 <= v <= 100),
    "eval_freq": (">= 0 (0: only at the end)", lambda v: v >= 0),
    "seed": SEED,
}

REMOVED = "removed (see the git history)"


def without_removed(values: dict, where: str, cls: type = PlannerConfig) -> dict:
    """`values` (a planner run's config.json, a preset) less the keys of the table
    method's settings, removed in issue 29 (older runs' config.json carry them): dropped
    when the run did not use them, else a one-line ValueError naming what it used."""
    if cls is not PlannerConfig:
        return values
    if values.get("method") == "table":
        raise ValueError(f"{where} uses --method table, {REMOVED}")
    if values.get("rollouts", 0) != 0:
        raise ValueError(f"{where} uses --rollouts {values['rollouts']}, {REMOVED}")
    return {key: value for key, value in values.items() if key not in ("lam", "rollouts")}


Config = TrainConfig | PlannerConfig  # a run's settings, of either script

# ------------------------------------------------------------------ typing the values
KINDS = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}
KINDS.update({list[int]: "a list of integers", list[str]: "a list of names"})


@functools.cache
def field_types(cls: type) -> dict[str, Any]:
    """The config class's fields and their types (not strings; ClassVars left out)."""
    hints = get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def make_config(values: dict[str, Any], cls: type = TrainConfig, where: str = "") -> Any:
    """A `cls` from loosely typed values (YAML, JSON, flags as typed), each made its
    field's type or refused in one line naming the field (after `where`, where the
    values came from: a file, --params)."""
    types, typed = field_types(cls), {}
    for name, value in values.items():
        try:
            if name not in types:
                raise ValueError(
                    f"unknown key {brief_repr(name)}; known: {', '.join(sorted(types))}"
                )
            typed[name] = coerce(name, value, types[name])
        except ValueError as e:
            raise ValueError(f"{where}: {e}" if where else str(e)) from None
    return cls(**typed)


def coerce(name: str, value: Any, kind: Any) -> Any:
    """`value` as a `kind` (a field type of KINDS), or a one-line ValueError. Numbers may
    come as text ("1e6": YAML 1.1 reads exponents without a dot as strings); a string
    setting takes a number as its text and nothing (YAML's null) as ""."""
    with contextlib.suppress(ValueError):
        if kind is bool and isinstance(value, bool):  # a switch (YAML and JSON booleans)
            return value
        if kind in (int, float):
            return to_number(name, value, kind)
        if kind is str and (value is None or is_number(value) or isinstance(value, str)):
            return "" if value is None else str(value)
        if kind is not str and isinstance(value, list | tuple):  # of integers, or of names
            if kind == list[int]:
                return [to_number(name, v) for v in value]
            if all(isinstance(v, str) for v in value):
                return list(value)
    raise ValueError(f"{name} must be {KINDS[kind]}, got {brief_repr(value)}")


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def to_number(name: str, value: Any, kind: type = int) -> Any:
    """A `kind` (int or float) from a number or a numeric string; bools, and fractions
    for an int, are refused in one line."""
    number = None
    if is_number(value) or isinstance(value, str):
        with contextlib.suppress(ValueError):
            number = value if isinstance(value, int) and kind is int else float(value)
    if isinstance(number, int) or (kind is float and number is not None):
        return number
    if isinstance(number, float) and number.is_integer():
        return int(number)
    raise ValueError(f"{name} must be {KINDS[kind]}, got {brief_repr(value)}")


# The largest YAML document read (a preset, one --params or sweep value): theirs are under
# 1 kB, and PyYAML takes about 12 s and 340 MB to read 1 MB of YAML.
MAX_YAML_BYTES = 64 << 10


class _PlainYamlLoader(yaml.SafeLoader):
    """PyYAML's safe loader (no tag builds an object) refusing anchors and aliases
    (&a, *a): a few hundred bytes of aliases of aliases stand for gigabytes once
    anything (a repr, a copy, a JSON dump) walks the value."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise ValueError("YAML anchors and aliases (&, *) are not accepted")
        return super().compose_node(parent, index)


def load_yaml(text: str) -> Any:
    """The one way YAML a user gives is read (a preset, --params and sweep values): safe,
    with no anchors or aliases, at most MAX_YAML_BYTES; anything else a ValueError in one
    line (bad YAML, nesting too deep included) for the caller to say where it was."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_YAML_BYTES:
        raise ValueError(f"YAML larger than {MAX_YAML_BYTES} bytes")
    try:
        return yaml.load(text, Loader=_PlainYamlLoader)  # a SafeLoader: no code runs
    except yaml.MarkedYAMLError as e:  # its text is several lines: the problem and where
        line = f" (line {e.problem_mark.line + 1})" if e.problem_mark else ""
        raise ValueError(f"{e.problem or e.context}{line}") from None
    except yaml.YAMLError as e:
        raise ValueError(f"{(str(e) or 'bad YAML').splitlines()[0]}") from None
    except RecursionError:
        raise ValueError("YAML nested too deeply") from None


def parse_params(params: list[str]) -> dict[str, Any]:
    """--params KEY=VALUE ... as {KEY: value}, the values read as YAML (``load_yaml``:
    typed, never evaluated as code)."""
    values = {}
    for item in params:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ValueError(f"--params takes KEY=VALUE, got {brief_repr(item)}")
        try:
            values[key.strip()] = load_yaml(raw)
        except ValueError as e:
            raise ValueError(
                f"--params {brief_repr(item)}: the value is not a YAML scalar or list: {e}"
            ) from None
    return values


def with_params(config: Config, params: list[str]) -> Any:
    """`config` (its values typed first: the flags') with --params KEY=VALUE ... applied."""
    cls = type(config)
    typed = dataclasses.asdict(make_config(dataclasses.asdict(config), cls))
    return make_config({**typed, **parse_params(params)}, cls, "--params" * bool(params))


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
        instance_from_str=lambda args: as_number(args[0]),
        is_instance=lambda value: isinstance(value, int | float),
        str_from_instance=lambda value: [str(value)],
    )


def as_number(text: str) -> float | str:
    """`text` as a float where it reads as one ("1e-4", "inf"), else as it is."""
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
        raise ValueError(f"unknown preset {brief_repr(preset)}; known: {known}")
    raise ValueError(
        f"unknown preset {brief_repr(preset)}: a preset is a name from hyperparams/ ({known}) "
        "or the path of a .yaml file"
    )


def load_preset(preset: str, cls: type = TrainConfig) -> Any:
    """The defaults of `cls` with a preset's values (and its name, for the record); a
    preset of the other script is refused in one line saying whose it is."""
    from fivethousand_rl.agents.neural import first_line

    path = preset_path(preset)
    try:
        data = load_yaml(read_text_capped(path)) or {}
    except (OSError, ValueError) as e:  # ValueError: UTF-8, size, YAML
        raise ValueError(f"cannot read preset {path}: {first_line(e)}") from None
    if not isinstance(data, dict):
        raise ValueError(f"preset {path} must be a mapping of config keys")
    other = PlannerConfig if cls is TrainConfig else TrainConfig
    if not set(data) <= set(field_types(cls)) and set(data) <= set(field_types(other)):
        raise ValueError(
            f"preset {brief_repr(preset)} is a preset of {program(other.PROGRAM)}, not "
            f"{program(cls.PROGRAM)}: {program(other.PROGRAM)} --preset {preset}"
        )
    where = f"preset {path}"
    return make_config(without_removed({**data, "preset": preset}, where, cls), cls, where)


# ------------------------------------------------------------------ run names and folders
def default_run_name(config: Config) -> str:
    """{preset}_{hold}{house rules}_seed{seed} ("quick" for both "quick" and
    "path/to/quick.yaml"; the house rules: ``rules_tag``, nothing for the seeds' rules);
    without a preset custom_{players}p (train.py), custom_planner_{2-3}p (the planner)."""
    if isinstance(config, PlannerConfig) and not config.preset:
        prefix = f"custom_planner_{'-'.join(map(str, config.players))}p"
    elif not config.preset:
        prefix = f"custom_{config.players}p"
    else:
        prefix = config.preset if is_preset_name(config.preset) else Path(config.preset).stem
    name = f"{prefix}_{config.hold}{rules_tag(config.rules)}_seed{config.seed}"
    if not PLAIN_NAME.fullmatch(name):  # a preset file with an odd name
        raise ValueError(
            f"the run name {brief_repr(name)} made from the preset's file name is not a "
            "plain folder name: give one with --run-name"
        )
    return name


def new_run_config(base: Config, params: list[str], name_given: bool) -> Any:
    """A new run's config: `base` (defaults, preset, flags) with --params applied, its
    run name made if none was given, everything checked."""
    if name_given:  # an empty name given would fall back silently
        check_plain_name(base.run_name)
    config = with_params(base, params)
    config.run_name = config.run_name or default_run_name(config)
    config.validate()
    return config


def model_path(spec: str) -> Path:
    """A model a config starts from (init, init_from): a shipped agent's name, else a
    path read from the current folder."""
    return shipped_model(spec) if spec in SHIPPED else Path(spec)


def init_path(config: TrainConfig) -> Path:
    """The model file of config.init_from (``model_path``)."""
    return model_path(config.init_from)


def find_run(name: str, runs: Path) -> Path:
    """The run folder `name` (a path, else a name in the runs folder)."""
    for run_dir in (Path(name), runs / name):
        if (run_dir / "config.json").is_file():
            return run_dir
    raise ValueError(f"no run to resume at {name} (no config.json)")


def read_config_json(path: Path) -> dict:
    """A run's config.json as a dict, every problem reported in one line naming it."""
    try:
        saved = json.loads(read_text_capped(path))
    except (OSError, ValueError, RecursionError) as e:  # ValueError: bad JSON, UTF-8, size
        # RecursionError: json.loads on a file nested thousands of levels deep
        raise ValueError(f"{path} is unreadable: {e}") from None
    if not isinstance(saved, dict):
        kinds = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
        kind = kinds.get(type(saved), "a number")
        raise ValueError(f"{path} must hold a JSON object of config keys, not {kind}")
    return saved


def save_json(path: Path, data: Any) -> None:
    atomic_write(path, json.dumps(data, indent=2))


def record_run(run_dir: Path, config: Any, command: list[str], **extra: Any) -> None:
    """Make the run folder, with the run's config.json (the config's fields and `extra`),
    and add the command (the script and its flags) to its command.txt: a line per
    session."""
    run_dir.mkdir(parents=True, exist_ok=True)
    save_json(run_dir / "config.json", {**dataclasses.asdict(config), **extra})
    with open(run_dir / "command.txt", "a") as f:
        f.write(shlex.join(command) + "\n")


def fresh_run_folder(runs: str | Path, name: str, force: bool, stale: Sequence[str]) -> Path:
    """The folder of a new run that is not resumed (train_jax, train_policy): `runs`/`name`,
    made; one that exists is a one-line ValueError, or with `force` is reused, its
    `stale` files (what the old run wrote that this one may not) removed."""
    check_plain_name(name)
    folder = Path(runs) / name
    if folder.exists() and not force:
        raise ValueError(f"{folder} exists: another --run-name, or --force to replace it")
    check_output_folder(folder, "the run folder")
    folder.mkdir(parents=True, exist_ok=True)
    for file in stale:
        (folder / file).unlink(missing_ok=True)
    return folder


def stopped_by_write_error(error: OSError, run_dir: Path, resume: str) -> str:
    """What a training script says, in one line, when a write fails mid-run (a full disk:
    ENOSPC). Checkpoints are written whole or not at all, so the last one is kept and
    `resume` (the command) continues from it; a run with none yet is removed, as Ctrl-C
    removes it, so that the same command starts it again."""
    where = f" {error.filename}" if error.filename else ""
    why = f"could not write{where}: {error.strerror or error}; training stopped"
    if (run_dir / "latest" / "state.pkl").is_file():
        return f"{why}, its last checkpoint kept whole: free some space, then {resume}"
    shutil.rmtree(run_dir, ignore_errors=True)
    return f"{why} before its first checkpoint, {run_dir} removed: free some space, start again"


class LinearLearningRate:
    """The learning rate at SB3's ``progress_remaining`` (1 at the start, 0 at the end):
    `start` decayed linearly to `end`. A module-level class rather than a closure, so a
    model (and an environment seating it) pickles with the standard ``pickle``; the same
    arithmetic as the lambda it replaced, so runs train to the same bits (SB3's
    ``LinearSchedule`` computes the line in another order: its floats can differ in the
    last bit)."""

    def __init__(self, start: float, end: float) -> None:
        self.start, self.end = start, end

    def __call__(self, progress_remaining: float) -> float:
        return self.end + (self.start - self.end) * progress_remaining

    def __repr__(self) -> str:
        return f"LinearLearningRate(start={self.start}, end={self.end})"


def read_saved_state(run_dir: Path, keys: Sequence[str]) -> dict:
    """A run's latest/state.pkl (what a resume restores), read as data only
    (``agents.neural.read_data_pickle``: no code from the folder runs; a pickle naming
    more is refused) and checked to be a mapping that holds `keys`; every problem one
    line."""
    from fivethousand_rl.agents.neural import ForbiddenPickle, first_line, read_data_pickle

    latest = run_dir / "latest"
    unreadable = f"the checkpoint in {latest} is unreadable"
    try:
        state = read_data_pickle(read_capped(latest / "state.pkl", MAX_MODEL_BYTES))
    except FileNotFoundError:
        raise ValueError(f"{run_dir} has no checkpoint to resume (latest/ is missing)") from None
    except ForbiddenPickle as e:
        raise ValueError(
            f"the checkpoint in {latest} is refused: state.pkl is a pickle of more than data ({e})"
        ) from None
    except Exception as e:  # unpickling garbage raises about anything
        raise ValueError(f"{unreadable}: {first_line(e)}") from None
    if not isinstance(state, dict):
        raise ValueError(f"{unreadable}: state.pkl holds no checkpoint")
    if missing := [key for key in keys if key not in state]:
        raise ValueError(f"{unreadable}: state.pkl is incomplete (no {', '.join(missing)})")
    return state


def read_run_config(run_dir: Path, cls: type = TrainConfig) -> Any:
    """The config.json of a run, checked; every problem reported in one line naming it."""
    path = run_dir / "config.json"
    config = make_config(without_removed(read_config_json(path), str(path), cls), cls, str(path))
    try:
        config.validate(new_run=False)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    return config


# ------------------------------------------------------------------ --resume
RESUME_FLAGS = ("--stop-after", "--no-progress")  # besides the RESUMABLE settings' flags


def check_resume_flags(given: set[str], shown: list[str], what: str = "a run as configured"):
    """--resume given with only the flags that change nothing of what is resumed (`shown`,
    and --resume, --checkpoints, --progress), else a one-line ValueError."""
    if extra := sorted(set(given) - {"--resume", "--checkpoints", "--progress", *shown}):
        raise ValueError(
            f"--resume continues {what}; it takes only {', '.join(shown)} (not {extra[0]})"
        )


def check_runs_folder(runs: Path, option: str) -> None:
    """check_output_folder for a runs folder, which may be made but not its parents: a
    mistyped ``/nonexistent/x`` is refused (one line) instead of made from the root."""
    if not os.path.lexists(runs) and not os.path.lexists(runs.parent):
        raise ValueError(f"{option} {runs}: folder {runs.parent} does not exist")
    check_output_folder(runs, option)


def open_run(args: Any, given: set[str], runs: Path) -> tuple[Any, Path]:
    """The config and folder of the run a training script's command line asks for
    (`args`: its Args, whose .config is a TrainConfig or a PlannerConfig): a new run's,
    whose folder must not exist yet, or with --resume the saved one's with what the
    flags may change (cls.RESUMABLE); everything checked before any work or any write."""
    if args.stop_after is not None and to_number("--stop-after", args.stop_after) < 1:
        raise ValueError(f"--stop-after must be positive, got {args.stop_after:g}")
    runs = Path(args.checkpoints) if args.checkpoints else runs
    if not args.resume:
        check_runs_folder(runs, "--checkpoints")  # the run folder is made in it
        config = new_run_config(args.config, args.params, name_given="--run-name" in given)
        run_dir = runs / config.run_name
        if run_dir.exists():
            raise ValueError(
                f"{run_dir} exists: --resume {run_dir} to continue it, or pick another --run-name"
            )
        return config, run_dir
    cls = type(args.config)
    flags = {f"--{key.replace('_', '-')}": key for key in cls.RESUMABLE}
    check_resume_flags(given, [*flags, *RESUME_FLAGS])
    run_dir = find_run(args.resume, runs)
    check_output_folder(run_dir, "--resume")
    config = read_run_config(run_dir, cls)
    if changed := {key: getattr(args.config, key) for flag, key in flags.items() if flag in given}:
        config = make_config({**dataclasses.asdict(config), **changed}, cls)
        config.validate(new_run=False)
    return config, run_dir


def parse_run_args(
    args_class: type, argv: list[str], prog: str | None = None
) -> tuple[Any, frozenset[str]]:
    """A training script's command line (`args_class`: its Args, with a .config) and the
    flags given; a preset's values become the defaults under the flags. `prog`: the
    command as typed, for its usage (default: the script's file name)."""
    given = frozenset(arg.split("=", 1)[0] for arg in argv if arg.startswith("--"))
    cli = {"args": argv, "prog": prog, "config": (tyro.conf.OmitArgPrefixes,)}
    with NUMBERS:
        args = tyro.cli(args_class, **cli)
        if "--preset" in given:
            preset = load_preset(args.config.preset, type(args.config))
            args = tyro.cli(args_class, **cli, default=args_class(config=preset))
    return args, given
