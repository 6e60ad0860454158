"""A value network of turn-start positions for 2 to 8 players, and its trainer.

``ValueNet`` is an ``envs.turn_planner.ValueFn``: given banked scores in turn order from
the player to move (shape (B, N), 2 <= N <= 8), it returns each player's probability of
winning (B, N), rows summing to 1. Its forward pass is numpy only (no torch at play
time); torch is imported by the trainer alone.

Features (``FeatureSpec``), per seat, seat 0 the mover, padded to 8 seats:

- present (1/0): which seats exist, so one network serves every table size; the
  number of players also comes one-hot (7 values), since a table of 3 and a table of
  8 value the same scores differently;
- entered (score > 0, R8): a player at 0 needs the entry total to bank at all, a jump
  no smooth function of the score makes easily;
- score / target: the smooth part;
- a thermometer of the score by score steps (``score >= step * k`` for k = 1 ..
  target/step - 1, the step ``Rules.score_step``: 100 under the 50 rule, 50 without
  it): every banked score is a multiple of the step (R10, V4), so any function of one
  seat's score, jumps included (the last few hundred points, where a single roll
  wins), is linear in it; unlike a one-hot code, neighbouring scores share all but one
  unit, so what is learned at one score carries to the next.

A network trained for one table of known bots (``FeatureSpec.table``: the bots seated
after the agent, in turn order) also reads where the agent sits: one more one-hot of 8,
the agent's index in the position's turn order. That table's bots play differently from
one another, so a position is worth something else according to who is to move; as a
``ValueFn`` (``ValueNet.__call__``) such a network values the ends of the agent's own
turn, where the agent is the last in turn order.

Output: 8 logits, a softmax over the present seats (absent seats masked out), so the
probabilities of a table always add up to 1 (R9: a game ends with one winner).

The network is trained by fitted value iteration from self-play
(``fivethousand_rl.agents.training.value_iteration``, run by train_planner.py).
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fivethousand_rl.agents.base import MODEL_SUFFIXES, check_finite, read_text_capped
from fivethousand_rl.agents.neural import first_line, short_name
from fivethousand_rl.agents.planner import PlannerBot
from fivethousand_rl.agents.shipped import data_folder
from fivethousand_rl.envs.rules import Rules

MAX_PLAYERS = 8
FEATURE_VERSION = 1
TABLE_FEATURE_VERSION = 2  # version 1 plus the agent's seat, for a net of one table
KIND = "fivethousand-value-net"  # the "meta" kind of a saved value net
FILE_STEM = "value_net"  # RUN/best/value_net.npz, checkpoints/NAME/value_net.npz
MAX_NET_BYTES = 64 << 20  # unpacked; the shipped nets are under 1 MB
CHECKPOINTS = data_folder("checkpoints")  # the shipped agents' folders


@dataclass(frozen=True)
class FeatureSpec:
    """How a turn-start position becomes the network's input (see the module doc)."""

    rules: Rules = field(default_factory=Rules)
    max_players: int = MAX_PLAYERS
    table: tuple[str, ...] = ()  # the bots after the agent, for a net of one table

    @property
    def version(self) -> int:
        return TABLE_FEATURE_VERSION if self.table else FEATURE_VERSION

    @property
    def players(self) -> tuple[int, ...]:
        """The table sizes the network values."""
        return (len(self.table) + 1,) if self.table else tuple(range(2, self.max_players + 1))

    @property
    def bins(self) -> int:
        # Thermometer units: score >= step .. target - step (R10, V4).
        return self.rules.target // self.rules.score_step - 1

    @property
    def per_seat(self) -> int:
        return 3 + self.bins  # present, entered, score/target, thermometer

    @property
    def size(self) -> int:
        agent_seat = self.max_players if self.table else 0
        return self.max_players * self.per_seat + self.max_players - 1 + agent_seat

    def to_dict(self) -> dict:
        d = {"rules": self.rules.to_dict(), "max_players": self.max_players}
        if self.table:
            d["table"] = list(self.table)
        return {**d, "version": self.version}

    @classmethod
    def from_dict(cls, d: dict) -> FeatureSpec:
        table = tuple(d.get("table", ()))
        expected = TABLE_FEATURE_VERSION if table else FEATURE_VERSION
        if d.get("version") != expected:
            raise ValueError(
                f"value-net features version {d.get('version')!r}, "
                f"this code reads {expected}{' (a table net)' * bool(table)}"
            )
        if table and (
            not all(isinstance(name, str) for name in table)
            or not 2 <= len(table) + 1 <= int(d["max_players"])
        ):
            raise ValueError(f"value-net features: not a table of bots: {d['table']!r}")
        # A shared net must not make anyone open a model file (a .zip is a pickle): its
        # table names scripted bots only, as the exact-table method requires.
        if any(name.strip().endswith(MODEL_SUFFIXES) for name in table):
            raise ValueError("value-net features: a table names bots, not model files")
        return cls(Rules(**d["rules"]), int(d["max_players"]), table)

    def check(self, positions: np.ndarray) -> np.ndarray:
        """`positions` as an int array (B, N), or a one-line ValueError."""
        p = np.asarray(positions)
        if p.ndim != 2 or not 2 <= p.shape[1] <= self.max_players or p.shape[0] == 0:
            raise ValueError(
                f"positions must have shape (B, N) with B >= 1 and N in 2..{self.max_players}, "
                f"got {p.shape}"
            )
        if not np.issubdtype(p.dtype, np.integer):
            raise ValueError(f"positions must be integer scores, got dtype {p.dtype}")
        r = self.rules
        ok = (p % r.score_step == 0) & (((p >= r.entry) & (p < r.target)) | (p == 0))
        if not ok.all():
            bad = p[~ok][0]
            raise ValueError(f"not a turn-start score under {r}: {int(bad)} (R8, R10, V1, V4)")
        return p.astype(np.int64)

    def encode(
        self, positions: np.ndarray, agent: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(features (B, size) float32, mask (B, max_players) bool) of valid positions.
        `agent`: for a table net, the agent's index in each position's turn order (B,);
        None: the last (the ends of the agent's own turn)."""
        p = self.check(positions)
        b, n = p.shape
        if self.table and n != len(self.table) + 1:
            raise ValueError(
                f"a net of the table {self.table} values {len(self.table) + 1} players, not {n}"
            )
        x = np.zeros((b, self.max_players, self.per_seat), dtype=np.float32)
        x[:, :n, 0] = 1.0
        x[:, :n, 1] = p > 0
        x[:, :n, 2] = p / self.rules.target
        step = self.rules.score_step
        x[:, :n, 3:] = (p[:, :, None] // step) > np.arange(self.bins)  # score >= step (k+1)
        players = np.zeros((b, self.max_players - 1), dtype=np.float32)
        players[:, n - 2] = 1.0
        mask = np.zeros((b, self.max_players), dtype=bool)
        mask[:, :n] = True
        parts = [x.reshape(b, -1), players]
        if self.table:
            seat = np.zeros((b, self.max_players), dtype=np.float32)
            seat[np.arange(b), n - 1 if agent is None else np.asarray(agent)] = 1.0
            parts.append(seat)
        elif agent is not None:
            raise ValueError("only a net of one table reads the agent's seat")
        return np.concatenate(parts, axis=1), mask


def masked_softmax(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    z = np.where(mask, logits, -np.inf)
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


class ValueNet:
    """The network for play: numpy weights, tanh hidden layers, masked softmax out.
    Called on positions (B, N) it returns win probabilities (B, N) (a ``ValueFn``)."""

    def __init__(
        self, spec: FeatureSpec, weights: Sequence[np.ndarray], biases: Sequence[np.ndarray]
    ) -> None:
        if len(weights) != len(biases) or not weights:
            raise ValueError("a value net needs as many weight matrices as bias vectors (>= 1)")
        shapes_in = [w.shape[0] for w in weights]
        shapes_out = [w.shape[1] for w in weights]
        if (
            shapes_in[0] != spec.size
            or shapes_out[-1] != spec.max_players
            or shapes_in[1:] != shapes_out[:-1]
        ):
            raise ValueError(
                f"weight shapes {[w.shape for w in weights]} do not fit {spec.size} features"
            )
        self.spec = spec
        self.weights = [np.asarray(w, dtype=np.float32) for w in weights]
        self.biases = [np.asarray(b, dtype=np.float32) for b in biases]

    @property
    def hidden(self) -> tuple[int, ...]:
        return tuple(w.shape[1] for w in self.weights[:-1])

    def logits(self, x: np.ndarray) -> np.ndarray:
        # In place after each product: the same operations in the same order as
        # tanh(x @ w + b), bit for bit, without two temporaries per layer (a quarter of
        # the time of big batches, which is most of a planner's).
        for w, b in zip(self.weights[:-1], self.biases[:-1], strict=True):
            x = x @ w
            x += b
            np.tanh(x, out=x)
        out = x @ self.weights[-1]
        out += self.biases[-1]
        return out

    def __call__(self, positions: np.ndarray, agent: np.ndarray | None = None) -> np.ndarray:
        x, mask = self.spec.encode(positions, agent)
        n = int(mask[0].sum())
        return masked_softmax(self.logits(x).astype(np.float64), mask)[:, :n]

    def planner(self, name: str = "planner-net") -> PlannerBot:
        """The planner playing with this network, for the rules it was trained under."""
        return planner_for(self, self.spec, name)

    def save(self, path: str | Path) -> Path:
        """One .npz: the weights and, as JSON text, the feature spec (rules included)."""
        path = Path(path)
        meta = json.dumps({"kind": KIND, "spec": self.spec.to_dict(), "layers": len(self.weights)})
        arrays = {f"w{i}": w for i, w in enumerate(self.weights)}
        arrays.update({f"b{i}": b for i, b in enumerate(self.biases)})
        np.savez(path, meta=np.array(meta), **arrays)
        return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")

    @classmethod
    def load(cls, path: str | Path) -> ValueNet:
        try:
            if Path(path).is_file() and not zipfile.is_zipfile(path):  # numpy would say "pickled"
                raise ValueError("not an .npz archive")
            if Path(path).is_file():  # sizes as the archive states them, before unpacking
                with zipfile.ZipFile(path) as archive:
                    unpacked = sum(info.file_size for info in archive.infolist())
                if unpacked > MAX_NET_BYTES:
                    raise ValueError(f"it unpacks to {unpacked} bytes, over {MAX_NET_BYTES}")
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"]))
                if meta.get("kind") != KIND:
                    raise ValueError("not a value net")
                n = int(meta["layers"])
                weights = [z[f"w{i}"] for i in range(n)]
                biases = [z[f"b{i}"] for i in range(n)]
            for array in (*weights, *biases):
                check_finite("weights", array)
            return cls(FeatureSpec.from_dict(meta["spec"]), weights, biases)
        except (OSError, KeyError, TypeError, ValueError) as e:  # JSONDecodeError is one
            raise ValueError(f"cannot load a value net from {path}: {e}") from None


def average_nets(nets: Sequence[ValueNet]) -> ValueNet:
    """One network whose logits are the mean of the `nets`' logits (so its probabilities
    are their normalized geometric mean): the networks side by side, each hidden layer
    block-diagonal, the output layer their mean. Averaging cancels part of each net's
    own fitting errors, the per-position noise that costs the planner most.

    The nets must have the same rules, seat count and depth; a net of one table and
    nets of none combine into a net of that table (the others read the seat inputs with
    zero weights)."""
    if not nets:
        raise ValueError("average_nets needs at least one value net")
    specs = {net.spec for net in nets}
    tables = {spec.table for spec in specs if spec.table}
    plain = {FeatureSpec(spec.rules, spec.max_players) for spec in specs}
    if len(plain) > 1 or len(tables) > 1:
        raise ValueError(f"only nets of the same rules, seats and table average, got {specs}")
    if len({len(net.weights) for net in nets}) > 1:
        raise ValueError("only nets of the same number of layers average")
    (base,) = plain
    spec = FeatureSpec(base.rules, base.max_players, next(iter(tables), ()))

    def first_layer(net: ValueNet) -> np.ndarray:  # zero rows for the seat inputs, the last
        return np.pad(net.weights[0], ((0, spec.size - len(net.weights[0])), (0, 0)))

    if len(nets[0].weights) == 1:  # no hidden layer: the logits are linear, average them
        return ValueNet(
            spec,
            [np.mean([first_layer(net) for net in nets], axis=0)],
            [np.mean([net.biases[0] for net in nets], axis=0)],
        )
    weights = [np.concatenate([first_layer(net) for net in nets], axis=1)]
    for layer in range(1, len(nets[0].weights) - 1):
        weights.append(_block_diagonal([net.weights[layer] for net in nets]))
    weights.append(np.concatenate([net.weights[-1] for net in nets]) / len(nets))
    biases = [np.concatenate([net.biases[i] for net in nets]) for i in range(len(weights) - 1)]
    biases.append(np.mean([net.biases[-1] for net in nets], axis=0))
    return ValueNet(spec, weights, biases)


def _block_diagonal(blocks: Sequence[np.ndarray]) -> np.ndarray:
    out = np.zeros(tuple(sum(b.shape[i] for b in blocks) for i in (0, 1)), dtype=np.float32)
    row = col = 0
    for b in blocks:
        out[row : row + b.shape[0], col : col + b.shape[1]] = b
        row, col = row + b.shape[0], col + b.shape[1]
    return out


def planner_for(value_fn, spec: FeatureSpec, name: str) -> PlannerBot:
    """The planner playing `value_fn` (a network reading `spec`): the tables and rules
    that `spec` encodes are the only ones it accepts (``check_game``)."""
    return PlannerBot(value_fn, players=spec.players, rules=spec.rules, name=name)


def agent_name(path: str | Path) -> str:
    """How tables name a value net's planner: checkpoints/planner-2p/value_net.npz ->
    "planner-2p" (the shipped agent's folder), RUN/best/value_net.npz -> "RUN", other
    files as ``fivethousand_rl.agents.neural.short_name`` names them."""
    path = Path(path)
    if path.stem == FILE_STEM and path.parent.name and path.parent.name not in ("best", "latest"):
        return path.parent.name
    return short_name(path)


def npz_kind(path: str | Path) -> str | None:
    """The "meta" kind saved in an .npz archive (a value net's is ``KIND``), read
    without loading any weights; None when it has no meta (a self-play snapshot, or a
    file that is no archive: the snapshot loader says what is wrong with it)."""
    path = Path(path)
    if not path.is_file() or not zipfile.is_zipfile(path):
        return None
    try:
        with zipfile.ZipFile(path) as archive:
            if "meta.npy" not in archive.namelist():
                return None
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
    except Exception as e:  # a broken member or bad JSON: all one answer
        raise ValueError(f"cannot read {path}: {first_line(e)}") from None
    kind = meta.get("kind") if isinstance(meta, dict) else None
    return kind if isinstance(kind, str) else "(none)"


def load_planner(path: str | Path) -> PlannerBot:
    """The planner of a saved value net (.npz), named after its folder
    (``agent_name``); a one-line ValueError for a file that is no value net."""
    return ValueNet.load(path).planner(agent_name(path))


def trained_players(path: Path) -> list[int]:
    """The table sizes a shipped net was trained at, from the config.json beside it
    (its run's ``PlannerConfig``); [] when it does not say."""
    try:
        players = json.loads(read_text_capped(path.parent / "config.json")).get("players")
    except (OSError, ValueError, AttributeError):  # missing, not JSON, not an object
        return []
    return [n for n in players if isinstance(n, int)] if isinstance(players, list) else []


def shipped_planner(
    n_players: int, rules: Rules, folder: str | Path = CHECKPOINTS
) -> PlannerBot | None:
    """A shipped planner for this table: the first ``folder/*/value_net.npz`` (by name)
    whose network serves `n_players` under `rules`, preferring one trained at that table
    size (its config.json); None if none fits. A file that does not load is skipped, and
    so, for 3+ players, is a net trained only at 2 (its values of bigger tables were
    never fitted: no estimate at all is better than a meaningless one), and so is a net
    of one table of bots (its values hold against those bots only)."""
    fitting = []
    for path in sorted(Path(folder).glob(f"*/{FILE_STEM}.npz")):
        try:
            net = ValueNet.load(path)
        except ValueError:
            continue
        trained = trained_players(path)
        if net.spec.table or (n_players > 2 and trained and max(trained) == 2):
            continue
        if net.spec.rules == rules and 2 <= n_players <= net.spec.max_players:
            fitting.append((n_players not in trained, path, net))
    if not fitting:
        return None
    _, path, net = min(fitting, key=lambda f: f[:2])
    return net.planner(agent_name(path))
