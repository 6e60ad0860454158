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
- a thermometer of the score by 100s (``score >= 100 * k`` for k = 1 .. target/100 - 1):
  every score is a multiple of 100 (R10), so any function of one seat's score, jumps
  included (the last few hundred points, where a single roll wins), is linear in it;
  unlike a one-hot code, neighbouring scores share all but one unit, so what is
  learned at one score carries to the next.

Output: 8 logits, a softmax over the present seats (absent seats masked out), so the
probabilities of a table always add up to 1 (R9: a game ends with one winner).

The trainer (``train``) is fitted value iteration on positions visited in self-play:
the ``PlannerBot`` plays with the current network (with epsilon-random actions, and
optionally against scripted bots) and every turn start it meets joins a buffer; each
position's target is the planner's own exact expectation of its turn under the current
network (``plan_turn(...).probabilities`` at the turn start: a TD(0) target over the
whole turn, with no dice noise; a winning bank is an exact 1); the network is fitted to
those targets (cross-entropy against the soft targets) and the loop repeats. The exact
2-player solver is never a target: it is a yardstick only.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from agents.planner import PlannerBot
from envs.driver import play
from envs.game import ROLL, Game
from envs.policy import Policy
from envs.rules import NUM_DICE, Rules
from envs.turn_planner import plan_turn

MAX_PLAYERS = 8
FEATURE_VERSION = 1


@dataclass(frozen=True)
class FeatureSpec:
    """How a turn-start position becomes the network's input (see the module doc)."""

    rules: Rules = field(default_factory=Rules)
    max_players: int = MAX_PLAYERS
    version: int = FEATURE_VERSION

    @property
    def bins(self) -> int:
        return self.rules.target // 100 - 1  # thermometer units: score >= 100 .. target-100

    @property
    def per_seat(self) -> int:
        return 3 + self.bins  # present, entered, score/target, thermometer

    @property
    def size(self) -> int:
        return self.max_players * self.per_seat + self.max_players - 1

    def to_dict(self) -> dict:
        return {
            "rules": self.rules.to_dict(),
            "max_players": self.max_players,
            "version": self.version,
        }

    @classmethod
    def from_dict(cls, d: dict) -> FeatureSpec:
        if d.get("version") != FEATURE_VERSION:
            raise ValueError(
                f"value-net features version {d.get('version')!r}, "
                f"this code reads {FEATURE_VERSION}"
            )
        return cls(Rules(**d["rules"]), int(d["max_players"]), FEATURE_VERSION)

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
        ok = (p % 100 == 0) & (((p >= r.entry) & (p < r.target)) | (p == 0))
        if not ok.all():
            bad = p[~ok][0]
            raise ValueError(f"not a turn-start score under {r}: {int(bad)} (R8, R10)")
        return p.astype(np.int64)

    def encode(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(features (B, size) float32, mask (B, max_players) bool) of valid positions."""
        p = self.check(positions)
        b, n = p.shape
        x = np.zeros((b, self.max_players, self.per_seat), dtype=np.float32)
        x[:, :n, 0] = 1.0
        x[:, :n, 1] = p > 0
        x[:, :n, 2] = p / self.rules.target
        x[:, :n, 3:] = (p[:, :, None] // 100) > np.arange(self.bins)  # score >= 100 (k+1)
        players = np.zeros((b, self.max_players - 1), dtype=np.float32)
        players[:, n - 2] = 1.0
        mask = np.zeros((b, self.max_players), dtype=bool)
        mask[:, :n] = True
        return np.concatenate([x.reshape(b, -1), players], axis=1), mask


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
        for w, b in zip(self.weights[:-1], self.biases[:-1], strict=True):
            x = np.tanh(x @ w + b)
        return x @ self.weights[-1] + self.biases[-1]

    def __call__(self, positions: np.ndarray) -> np.ndarray:
        x, mask = self.spec.encode(positions)
        n = int(mask[0].sum())
        return masked_softmax(self.logits(x).astype(np.float64), mask)[:, :n]

    def planner(self, name: str = "planner-net") -> PlannerBot:
        """The planner playing with this network, for the rules it was trained under."""
        return PlannerBot(
            self, players=range(2, self.spec.max_players + 1), rules=self.spec.rules, name=name
        )

    def save(self, path: str | Path) -> Path:
        """One .npz: the weights and, as JSON text, the feature spec (rules included)."""
        path = Path(path)
        meta = json.dumps(
            {
                "kind": "fivethousand-value-net",
                "spec": self.spec.to_dict(),
                "layers": len(self.weights),
            }
        )
        arrays = {f"w{i}": w for i, w in enumerate(self.weights)}
        arrays.update({f"b{i}": b for i, b in enumerate(self.biases)})
        np.savez(path, meta=np.array(meta), **arrays)
        return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")

    @classmethod
    def load(cls, path: str | Path) -> ValueNet:
        try:
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"]))
                if meta.get("kind") != "fivethousand-value-net":
                    raise ValueError("not a value net")
                n = int(meta["layers"])
                weights = [z[f"w{i}"] for i in range(n)]
                biases = [z[f"b{i}"] for i in range(n)]
            return cls(FeatureSpec.from_dict(meta["spec"]), weights, biases)
        except (OSError, KeyError, TypeError, ValueError) as e:  # JSONDecodeError is one
            raise ValueError(f"cannot load a value net from {path}: {e}") from None


# ---------------------------------------------------------------- training (torch)
def _torch_net(spec: FeatureSpec, hidden: Sequence[int], seed: int):
    import torch

    torch.manual_seed(seed)
    layers: list = []
    width = spec.size
    for h in hidden:
        layers += [torch.nn.Linear(width, h), torch.nn.Tanh()]
        width = h
    layers.append(torch.nn.Linear(width, spec.max_players))
    return torch.nn.Sequential(*layers)


def torch_logits(model, x: np.ndarray, mask: np.ndarray):
    """The torch forward pass: masked logits (absent seats at -inf)."""
    import torch

    out = model(torch.as_tensor(x))
    return out.masked_fill(~torch.as_tensor(mask), float("-inf"))


def to_value_net(model, spec: FeatureSpec) -> ValueNet:
    import torch

    linears = [m for m in model if isinstance(m, torch.nn.Linear)]
    return ValueNet(
        spec,
        [m.weight.detach().numpy().T.copy() for m in linears],
        [m.bias.detach().numpy().copy() for m in linears],
    )


@dataclass(frozen=True)
class TrainConfig:
    """Fitted value iteration (see the module doc)."""

    rules: Rules = field(default_factory=Rules)
    players: tuple[int, ...] = (2,)  # table sizes played, in turn
    hidden: tuple[int, ...] = (128, 128)
    iterations: int = 20
    games_per_iteration: int = 50
    epsilon: float = 0.1  # share of self-play decisions taken at random among legal ones
    opponents: tuple[str, ...] = ()  # scripted bots (agents.make_policy names) met ...
    opponent_share: float = 0.0  # ... in this share of the games, in random seats
    buffer_size: int = 50_000  # positions kept, the most recently seen
    targets_per_iteration: int = 20_000  # positions re-targeted and fitted each iteration
    fit_steps: int = 300  # Adam steps per iteration, warm-started
    batch_size: int = 512
    lr: float = 1e-3
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.players or any(not 2 <= n <= MAX_PLAYERS for n in self.players):
            raise ValueError(f"players must be table sizes in 2..{MAX_PLAYERS}, got {self.players}")
        if not 0.0 <= self.epsilon <= 1.0 or not 0.0 <= self.opponent_share <= 1.0:
            raise ValueError("epsilon and opponent_share must be in [0, 1]")
        if self.opponent_share > 0 and not self.opponents:
            raise ValueError("opponent_share > 0 needs opponents")
        for name in (
            "iterations",
            "games_per_iteration",
            "buffer_size",
            "targets_per_iteration",
            "fit_steps",
            "batch_size",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")


class _Explorer(Policy):
    """The planner, except that a share `epsilon` of its decisions are random legal ones."""

    def __init__(self, planner, epsilon: float) -> None:
        self.planner, self.epsilon, self.name = planner, epsilon, "explorer"

    def act(self, game: Game, rng: np.random.Generator) -> int:
        if self.epsilon and rng.random() < self.epsilon:
            moves = game.moves()
            return moves[int(rng.integers(len(moves)))].action
        return self.planner.act(game, rng)


class _Recorder:
    """Collects the turn-start positions of a game (mover's order) from its events."""

    def __init__(self) -> None:
        self.positions: list[tuple[int, ...]] = []

    def see(self, game: Game) -> None:
        s = game.state
        if s.phase == ROLL and s.turn_total == 0 and not s.held:
            self.positions.append(tuple(s.scores[s.current :] + s.scores[: s.current]))


def turn_targets(positions: Sequence[tuple[int, ...]], rules: Rules, value_fn) -> list[np.ndarray]:
    """Each position's target: every player's win probability at its turn start, the
    mover planning the turn exactly against `value_fn` (a TD(0) target over the turn)."""
    out = []
    for p in positions:
        plan = plan_turn(p, rules, value_fn)
        if len(p) == 2:  # one winner: the opponent's chance is the rest (half the work)
            v = plan.W[0, NUM_DICE]
            out.append(np.array([v, 1.0 - v]))
        else:
            out.append(plan.probabilities[0, NUM_DICE])
    return out


def _play_games(
    cfg: TrainConfig,
    planner,
    n_players: int,
    games: int,
    rng: np.random.Generator,
    opponents: list[Policy],
) -> list[tuple[int, ...]]:
    explorer = _Explorer(planner, cfg.epsilon)
    seen: list[tuple[int, ...]] = []
    for _ in range(games):
        game = Game(n_players, cfg.rules, seed=rng, first_player=int(rng.integers(n_players)))
        policies: list[Policy] = [explorer] * n_players
        if opponents and rng.random() < cfg.opponent_share:
            for seat in rng.choice(n_players, size=int(rng.integers(1, n_players)), replace=False):
                policies[int(seat)] = opponents[int(rng.integers(len(opponents)))]
        rec = _Recorder()
        rec.see(game)
        play(game, policies, rng, on_event=lambda g, _event, r=rec: r.see(g))
        seen.extend(rec.positions)
    return seen


def train(
    cfg: TrainConfig, on_iteration: Callable[[int, ValueNet, dict], None] | None = None
) -> ValueNet:
    """Fitted value iteration from self-play (see the module doc); deterministic per seed.
    `on_iteration(i, net, stats)` is told of each iteration's network."""
    import torch

    from agents import make_policy

    torch.set_num_threads(1)
    spec = FeatureSpec(cfg.rules)
    model = _torch_net(spec, cfg.hidden, cfg.seed)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    rng = np.random.default_rng(cfg.seed)
    opponents = [make_policy(name) for name in cfg.opponents]
    net = to_value_net(model, spec)
    planner = PlannerBot(net, rules=cfg.rules)
    buffer: dict[tuple[int, ...], int] = {}  # position -> when last seen
    for it in range(cfg.iterations):
        start = time.perf_counter()
        n_players = cfg.players[it % len(cfg.players)]
        for p in _play_games(cfg, planner, n_players, cfg.games_per_iteration, rng, opponents):
            buffer.pop(p, None)
            buffer[p] = it
        while len(buffer) > cfg.buffer_size:
            buffer.pop(next(iter(buffer)))
        keys = list(buffer)
        if len(keys) > cfg.targets_per_iteration:
            keys = [
                keys[i]
                for i in np.sort(rng.choice(len(keys), cfg.targets_per_iteration, replace=False))
            ]
        loss = _fit(cfg, model, opt, spec, keys, turn_targets(keys, cfg.rules, net), rng)
        net = to_value_net(model, spec)
        planner.value_fn = net
        planner.clear_cache()
        if on_iteration:
            on_iteration(
                it,
                net,
                {
                    "positions": len(buffer),
                    "fitted": len(keys),
                    "loss": loss,
                    "seconds": time.perf_counter() - start,
                },
            )
    return net


def _fit(
    cfg: TrainConfig,
    model,
    opt,
    spec: FeatureSpec,
    keys,
    targets: list[np.ndarray],
    rng: np.random.Generator,
) -> float:
    """`fit_steps` Adam steps of cross-entropy against the soft targets, positions of
    each table size batched together."""
    import torch

    groups = {}
    for n in sorted({len(k) for k in keys}):
        idx = [i for i, k in enumerate(keys) if len(k) == n]
        x, mask = spec.encode(np.array([keys[i] for i in idx]))
        t = np.zeros((len(idx), spec.max_players), dtype=np.float32)
        t[:, :n] = np.stack([targets[i] for i in idx])
        groups[n] = (torch.as_tensor(x), torch.as_tensor(mask), torch.as_tensor(t))
    sizes = list(groups)
    total = 0.0
    for step in range(cfg.fit_steps):
        x, mask, t = groups[sizes[step % len(sizes)]]
        idx = torch.as_tensor(rng.integers(len(x), size=min(cfg.batch_size, len(x))))
        logits = model(x[idx]).masked_fill(~mask[idx], float("-inf"))
        logp = torch.log_softmax(logits, dim=1).masked_fill(~mask[idx], 0.0)
        loss = -(t[idx] * logp).sum(dim=1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += float(loss.detach())
    return total / cfg.fit_steps


def config_dict(cfg: TrainConfig) -> dict:
    d = asdict(cfg)
    d["rules"] = cfg.rules.to_dict()
    return d
