"""Training the planner's value network (agents.value_net): two methods.

``method="self-play"`` (fitted value iteration): the ``PlannerBot`` plays with the
current network (a share ``epsilon`` of its decisions random, and optionally scripted
bots in some seats) and every turn start it meets joins a buffer of positions. Each
iteration re-targets a sample of the buffer: a position's target is the planner's own
exact expectation of its turn under the current network
(``plan_turn(...).probabilities`` at the turn start: a TD(0) target over the whole
turn with no dice noise, a winning bank an exact 1), and the network is fitted to
those targets (cross-entropy against the soft targets). The exact 2-player
solver is never a target: it is a yardstick only (``exact_error``).

A self-play network serves several tables of different sizes (the number of players
is one of its features).

``method="exact-table"`` (a best response to one table's bots, with no dice noise at
all): fitted value iteration over *every* turn start of games at that table, the bots'
included. A bot's turn is a known dice process with known choices, so its ends and
their probabilities are computed exactly (``envs.turn_outcomes``), once per position;
a bot-to-move position's target is the expectation, over those ends, of the current
network's values there; a planner-to-move position's target is the planner's exact plan,
as in self-play. Since the bots differ, the network also reads the agent's seat in the
turn order (``FeatureSpec.table``): it is a network of that one table.

``PlannerConfig`` is the one definition of a run's settings (train_planner.py's flags,
presets, config.json); ``ValueIteration`` holds a run's trainer, with ``state_dict``
and ``load_state_dict`` for an exact resume; ``evaluate`` plays the evaluation tables.
"""

from __future__ import annotations

import functools
import io
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from agents import MODEL_SUFFIXES, make_policy
from agents.batched import batched
from agents.neural import short_name
from agents.planner import PlannerBot
from agents.threads import one_thread_per_process
from agents.tournament import seat_record, standard_table
from agents.training.config import FRACTION, POSITIVE, ROOT, check_bounds
from agents.value_net import MAX_PLAYERS, FeatureSpec, ValueNet
from envs.driver import play
from envs.game import ROLL, Game
from envs.policy import Policy
from envs.rules import HOLD_VARIANTS, NUM_DICE, Rules
from envs.turn_outcomes import TurnOutcomes, turn_outcomes
from envs.turn_planner import plan_turn

if TYPE_CHECKING:
    import torch  # imported by the trainer alone, when it runs

SHIPPED_PPO_2P = ROOT / "checkpoints" / "ppo-2p" / "model.zip"


@dataclass
class PlannerConfig:
    """Everything that defines a planner training run (saved as config.json in the run).
    Each field is a flag of train_planner.py and a key of presets; its docstring is its
    --help text."""

    # --- the game
    players: list[int] = field(default_factory=lambda: [2])
    """Table sizes played, one per iteration in turn (one network serves them all)."""
    hold: str = "free"
    """Hold rule (RULES.md R5): "free" or "all"."""
    target: int = 5000
    """The winning score (smaller: a shrunken game, for tests)."""
    entry: int = 500
    """The turn total a player at 0 needs to bank (R8)."""

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
    expectation of its turn) or "exact-table" (a best response to one table's bots,
    their turns expanded exactly); see the module doc."""
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
    """Folder name under checkpoints/, one plain name; empty: {preset}_{hold}_seed{seed}."""
    preset: str = ""
    """The preset this config started from (a name from hyperparams/ or a .yaml path)."""

    @property
    def rules(self) -> Rules:
        return Rules(hold=self.hold, target=self.target, entry=self.entry)

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
            if self.rules == Rules() and SHIPPED_PPO_2P.is_file():
                out.append([str(SHIPPED_PPO_2P)])
        return out

    def validate(self, check_init: bool = True) -> None:
        """Refuse, in one line, any value the run could not use (before any work);
        `check_init`: load the --init network too (a resumed run no longer needs it)."""
        check_bounds(self, BOUNDS)
        if self.hold not in HOLD_VARIANTS:
            raise ValueError(f"hold must be {' or '.join(HOLD_VARIANTS)}, got {self.hold!r}")
        self.rules  # noqa: B018 (target and entry checked by Rules, in one line)
        if not self.players or any(not 2 <= n <= MAX_PLAYERS for n in self.players):
            raise ValueError(f"players must be table sizes in 2..{MAX_PLAYERS}, got {self.players}")
        if not self.hidden or any(n < 1 for n in self.hidden):
            raise ValueError(f"hidden must be a non-empty list of positive sizes: {self.hidden}")
        if self.opponent_share > 0 and not self.opponents:
            raise ValueError("opponent_share > 0 needs opponents")
        if self.method not in METHODS:
            raise ValueError(f"method must be {' or '.join(METHODS)}, got {self.method!r}")
        if self.method == "exact-table":
            self._check_exact_table()
        if self.sweeps > 1 and self.method != "exact-table":
            raise ValueError("sweeps are passes of the exact-table method (--method exact-table)")
        if self.init and check_init:
            init_net(self)
        for name in self.opponents:
            make_policy(name).check_game(max(self.players), self.rules)
        for table in self.tables:
            if not 1 <= len(table) <= MAX_PLAYERS - 1:
                raise ValueError(f"an evaluation table seats 1 to 7 others, got {table}")
            for name in table:
                make_policy(name).check_game(len(table) + 1, self.rules)

    def _check_exact_table(self) -> None:
        if len(self.tables) != 1:
            raise ValueError(
                f"the exact-table method learns one table, got {len(self.tables)} "
                "(give it with --eval-tables)"
            )
        size = len(self.tables[0]) + 1
        if set(self.players) != {size}:
            raise ValueError(
                f"the exact-table method trains at its table's size {size}: --players must "
                f"name them, got {self.players}"
            )
        if self.opponent_share > 0:
            raise ValueError("the exact-table method plays its table's bots: no opponents")
        for name in self.tables[0]:
            if name.split(":")[0] not in DETERMINISTIC_BOTS:
                raise ValueError(
                    f"the exact-table method expands the bots' turns exactly: the bots must be "
                    f"deterministic scripted ones ({', '.join(DETERMINISTIC_BOTS)}), not {name}"
                )

    def exact_table(self) -> tuple[str, ...]:
        """The table of an exact-table run (the bots after the agent); () otherwise."""
        return tuple(self.tables[0]) if self.method == "exact-table" else ()


METHODS = ("self-play", "exact-table")
# Bots whose every choice is a function of the position (no dice drawn from the rng).
DETERMINISTIC_BOTS = ("smart", "turn-ev", "threshold", "optimal")
BOUNDS = {
    **dict.fromkeys(("iterations", "games_per_iteration", "buffer_size"), POSITIVE),
    **dict.fromkeys(("targets_per_iteration", "fit_steps", "batch_size"), POSITIVE),
    **dict.fromkeys(("learning_rate", "eval_games", "checkpoint_freq"), POSITIVE),
    **dict.fromkeys(("epsilon", "opponent_share"), FRACTION),
    "workers": ("between 1 and 64", lambda v: 1 <= v <= 64),
    "sweeps": ("between 1 and 100", lambda v: 1 <= v <= 100),
    "eval_freq": (">= 0 (0: only at the end)", lambda v: v >= 0),
    "seed": ("0..4294967295", lambda v: 0 <= v < 2**32),
}

REMOVED = "removed (see the git history)"


def without_removed(values: dict, where: str) -> dict:
    """`values` (a run's config.json, a preset, --params) less the keys of the table
    method's settings, removed in issue 29 (older runs' config.json carry them): dropped
    when the run did not use them, else a one-line ValueError naming what it used."""
    if values.get("method") == "table":
        raise ValueError(f"{where} uses --method table, {REMOVED}")
    if values.get("rollouts", 0) != 0:
        raise ValueError(f"{where} uses --rollouts {values['rollouts']}, {REMOVED}")
    return {key: value for key, value in values.items() if key not in ("lam", "rollouts")}


# ---------------------------------------------------------------- self-play
class _Explorer(Policy):
    """The planner, except that a share `epsilon` of its decisions are random legal ones."""

    def __init__(self, planner: PlannerBot, epsilon: float) -> None:
        self.planner, self.epsilon, self.name = planner, epsilon, "explorer"

    def act(self, game: Game, rng: np.random.Generator) -> int:
        if self.epsilon and rng.random() < self.epsilon:
            moves = game.moves()
            return moves[int(rng.integers(len(moves)))].action
        return self.planner.act(game, rng)


def turn_start(game: Game) -> tuple[int, ...] | None:
    """The banked scores in turn order from the player to move, at a turn's start."""
    s = game.state
    if s.phase == ROLL and s.turn_total == 0 and not s.held:
        return tuple(s.scores[s.current :] + s.scores[: s.current])
    return None


def turn_starts(game: Game, policies: Sequence[Policy], rng: np.random.Generator) -> list:
    """Play `game` out; every turn start met, the first included, as (``turn_start``,
    the seat of the player to move)."""
    seen = []

    def record(game: Game, _event: object = None) -> None:
        if (position := turn_start(game)) is not None:
            seen.append((position, game.state.current))

    record(game)
    play(game, policies, rng, on_event=record)
    return seen


def play_games(
    cfg: PlannerConfig,
    planner: PlannerBot,
    n_players: int,
    games: int,
    rng: np.random.Generator,
    opponents: Sequence[Policy],
) -> list[tuple[int, ...]]:
    """The turn starts met in `games` self-play games (some with scripted opponents)."""
    explorer = _Explorer(planner, cfg.epsilon)
    seen: list[tuple[int, ...]] = []
    for _ in range(games):
        game = Game(n_players, cfg.rules, seed=rng, first_player=int(rng.integers(n_players)))
        policies: list[Policy] = [explorer] * n_players
        if opponents and rng.random() < cfg.opponent_share:
            for seat in rng.choice(n_players, size=int(rng.integers(1, n_players)), replace=False):
                policies[int(seat)] = opponents[int(rng.integers(len(opponents)))]
        seen += [position for position, _ in turn_starts(game, policies, rng)]
    return seen


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


# ---------------------------------------------------------- the exact-table method
@functools.cache  # the bots of the tables, built once per process
def _bot(name: str) -> Policy:
    return make_policy(name)


def _table_game(
    me: Policy, table: Sequence[str], rules: Rules, rng: np.random.Generator
) -> tuple[int, list[Policy], Game]:
    """A game at `table` (the bots after `me`, in turn order): `me`'s seat and the first
    player drawn from `rng`, in that order. Returns (seat, policies by seat, game)."""
    n = len(table) + 1
    seat = int(rng.integers(n))
    policies = [me] * n
    for i, name in enumerate(table):
        policies[(seat + 1 + i) % n] = _bot(name)
    return seat, policies, Game(n, rules, seed=rng, first_player=int(rng.integers(n)))


_WORKER: dict = {}


def _init_worker(cfg: PlannerConfig, net: ValueNet, forked: bool = True) -> None:
    if forked:  # the parent handles Ctrl-C and stops the pool (SIGTERM) itself
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        one_thread_per_process()  # the pool is the parallelism
    # one planner per process and network: its plans are cached across jobs
    _WORKER.update(cfg=cfg, net=net, planner=PlannerBot(net, rules=cfg.rules))


def _in_workers(cfg: PlannerConfig, net: ValueNet, work: Callable, jobs: list) -> list:
    """``map(work, jobs)`` in `cfg.workers` processes (the same results, in the same
    order, whatever their number)."""
    if not jobs:
        return []
    for name in {name for table in cfg.tables for name in table}:
        _bot(name)  # built once, here, and inherited by the forked workers
    if cfg.workers == 1:
        _init_worker(cfg, net, forked=False)
        return list(map(work, jobs))
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # fork: the workers need no imports of their own. Safe because they run numpy
    # only (scripted bots: validate refuses model files here); a worker that dies
    # raises BrokenProcessPool instead of hanging the run.
    with ProcessPoolExecutor(
        cfg.workers,
        mp_context=multiprocessing.get_context("fork"),
        initializer=_init_worker,
        initargs=(cfg, net),
    ) as pool:
        chunk = max(1, len(jobs) // (4 * cfg.workers))
        return list(pool.map(work, jobs, chunksize=chunk))


def exact_table_positions(
    planner: PlannerBot, table: Sequence[str], rules: Rules, epsilon: float, seed: int
) -> list[tuple[tuple[int, ...], int]]:
    """One game of the planner at `table` (the bots after its seat, in turn order), its
    seat and the first player drawn from `seed`: every turn start, as (scores in turn
    order from the player to move, the planner's index in that order)."""
    rng = np.random.default_rng(seed)
    seat, policies, game = _table_game(_Explorer(planner, epsilon), table, rules, rng)
    starts = turn_starts(game, policies, rng)
    return [(position, (seat - mover) % game.n_players) for position, mover in starts]


def table_bot(table: Sequence[str], n_players: int, agent: int) -> Policy:
    """The bot to move where the agent is at index `agent` of the turn order (> 0)."""
    return batched(_bot(table[n_players - agent - 1]))


def _worker_exact_game(job: tuple[tuple[str, ...], int]) -> list:
    table, seed = job
    cfg = _WORKER["cfg"]
    return exact_table_positions(_WORKER["planner"], table, cfg.rules, cfg.epsilon, seed)


def _worker_outcomes(job: tuple[tuple[str, ...], tuple[int, ...], int]) -> TurnOutcomes:
    table, position, agent = job
    return turn_outcomes(table_bot(table, len(position), agent), position, _WORKER["cfg"].rules)


def _worker_plan(position: tuple[int, ...]) -> np.ndarray:
    return turn_targets([position], _WORKER["cfg"].rules, _WORKER["net"])[0]


def bot_turn_targets(net: ValueNet, outcomes: Sequence[TurnOutcomes], agents: np.ndarray):
    """Each bot turn's value under `net` (every player's win probability, mover's order):
    the expectation of the net over its exact ends, where the agent's index is one less
    than at the turn start. All the ends go through the network in a few big batches."""
    sizes = [len(o.positions) for o in outcomes]
    ends = np.concatenate([o.positions for o in outcomes])
    after = np.repeat(np.asarray(agents) - 1, sizes)
    chunk = 50_000
    values = np.concatenate(
        [net(ends[i : i + chunk], after[i : i + chunk]) for i in range(0, len(ends), chunk)]
    )
    parts = np.split(values, np.cumsum(sizes)[:-1])
    return [o.value(v) for o, v in zip(outcomes, parts, strict=True)]


def target_gap(net: ValueNet, keys: Sequence[tuple[tuple[int, ...], int]], targets) -> float:
    """Mean |value - target| over the (position, agent's index) keys and every player:
    how far a table net is from the fixed point of its targets."""
    positions = np.array([p for p, _ in keys])
    agents = np.array([agent for _, agent in keys], dtype=np.int64)
    return float(np.abs(net(positions, agents) - np.stack(targets)).mean())


def init_net(cfg: PlannerConfig) -> ValueNet:
    """The network `cfg.init` names (a relative path from the repository's root, as in
    presets), checked to fit the run (one-line ValueError). An exact-table run may start
    from a network of no table: it then reads the agent's seat with zero weights."""
    net = ValueNet.load(ROOT / cfg.init)
    if net.spec not in (FeatureSpec(cfg.rules), FeatureSpec(cfg.rules, table=cfg.exact_table())):
        raise ValueError(f"init {cfg.init} reads other features or rules than this run's")
    if list(net.hidden) != list(cfg.hidden):
        raise ValueError(f"init {cfg.init} has hidden layers {list(net.hidden)}, not {cfg.hidden}")
    return net


# ---------------------------------------------------------------- the trainer
def torch_net(spec: FeatureSpec, hidden: Sequence[int], seed: int):
    import torch

    torch.manual_seed(seed)
    layers: list = []
    width = spec.size
    for h in hidden:
        layers += [torch.nn.Linear(width, h), torch.nn.Tanh()]
        width = h
    layers.append(torch.nn.Linear(width, spec.max_players))
    return torch.nn.Sequential(*layers)


def load_weights(model: torch.nn.Sequential, net: ValueNet) -> None:
    """Copy a ValueNet's weights into the torch model of the same shape; a model with
    more inputs (a table net's agent seat, the last ones) gets zero weights there."""
    import torch

    linears = [m for m in model if isinstance(m, torch.nn.Linear)]
    with torch.no_grad():
        for m, w, b in zip(linears, net.weights, net.biases, strict=True):
            m.weight.zero_()
            m.weight[:, : w.shape[0]] = torch.as_tensor(w.T)
            m.bias.copy_(torch.as_tensor(b))


def to_value_net(model, spec: FeatureSpec) -> ValueNet:
    import torch

    linears = [m for m in model if isinstance(m, torch.nn.Linear)]
    return ValueNet(
        spec,
        [m.weight.detach().numpy().T.copy() for m in linears],
        [m.bias.detach().numpy().copy() for m in linears],
    )


class ValueIteration:
    """A run's trainer: `iterate()` does one iteration (play, re-target, fit); `net` is
    the current network. Deterministic per seed; `state_dict`/`load_state_dict` resume
    a run exactly (same weights as an uninterrupted run, to the last bit)."""

    def __init__(self, cfg: PlannerConfig, fresh: bool = True) -> None:
        """`fresh`: a new run (starting from `cfg.init` if set); False: weights come
        from ``load_state_dict`` next."""
        import torch

        torch.set_num_threads(1)
        self.cfg = cfg
        self.spec = FeatureSpec(cfg.rules, table=cfg.exact_table())
        self.model = torch_net(self.spec, cfg.hidden, cfg.seed)
        if cfg.init and fresh:
            load_weights(self.model, init_net(cfg))
        self.opt = torch.optim.Adam(self.model.parameters(), lr=cfg.learning_rate)
        self.rng = np.random.default_rng(cfg.seed)
        self.opponents = [make_policy(name) for name in cfg.opponents]
        self.buffer: dict[tuple[int, ...], int] = {}  # position -> iteration last seen
        # exact-table: the buffer's keys are (position, agent's index); a bot's turn ends
        self.outcomes: dict[tuple[tuple[int, ...], int], TurnOutcomes] = {}
        self.iteration = 0
        self.net = to_value_net(self.model, self.spec)
        self.planner = PlannerBot(self.net, rules=cfg.rules)

    def iterate(self) -> dict:
        """One iteration; returns its statistics."""
        if self.cfg.method == "exact-table":
            return self._iterate_exact_table()
        cfg, it, start = self.cfg, self.iteration, time.perf_counter()
        n_players = cfg.players[it % len(cfg.players)]
        seen = play_games(
            cfg, self.planner, n_players, cfg.games_per_iteration, self.rng, self.opponents
        )
        keys = self._remember(seen, it)
        targets = turn_targets(keys, cfg.rules, self.net)
        loss = self._fit(keys, targets)
        return self._next(n_players, len(self.buffer), len(keys), loss, start)

    def _iterate_exact_table(self) -> dict:
        """One iteration of the exact-table method: games at the table; the exact ends of
        the bots' turns met for the first time; every sampled position re-targeted (a
        bot's turn by its ends under the current network, the planner's by its plan);
        a fit."""
        cfg, it, start = self.cfg, self.iteration, time.perf_counter()
        table = tuple(cfg.tables[0])
        seeds = self.rng.integers(2**63, size=cfg.games_per_iteration)
        jobs = [(table, int(seed)) for seed in seeds]
        played = [k for game in _in_workers(cfg, self.net, _worker_exact_game, jobs) for k in game]
        keys = self._remember(played, it)
        # a bot's turn ends are forgotten with its position, computed for a new one
        self.outcomes = {k: ends for k, ends in self.outcomes.items() if k in self.buffer}
        new = [k for k in self.buffer if k[1] and k not in self.outcomes]
        jobs = [(table, p, agent) for p, agent in new]
        ends = _in_workers(cfg, self.net, _worker_outcomes, jobs)
        self.outcomes.update(zip(new, ends, strict=True))
        bots = [k for k in keys if k[1]]
        planners = [k for k in keys if not k[1]]
        turns = [self.outcomes[k] for k in bots]
        agents = np.array([k[1] for k in bots], dtype=np.int64)
        for sweep in range(cfg.sweeps):
            if sweep:
                self._next_net()
            targets = dict(zip(bots, bot_turn_targets(self.net, turns, agents), strict=True))
            plans = _in_workers(cfg, self.net, _worker_plan, [p for p, _ in planners])
            targets.update(zip(planners, plans, strict=True))
            if not sweep:  # how far the values are from their own targets (Bellman residual)
                gap = target_gap(self.net, keys, [targets[k] for k in keys])
            loss = self._fit(keys, [targets[k] for k in keys])
        stats = self._next(len(table) + 1, len(self.buffer), len(keys), loss, start)
        return {**stats, "target_gap": gap}

    def _remember(self, seen: Sequence[tuple[int, ...]], it: int) -> list[tuple[int, ...]]:
        """Add positions to the buffer (the most recently seen kept); the positions to
        re-target this iteration, `targets_per_iteration` of it at random, in its order
        (all if no more)."""
        cfg = self.cfg
        for p in seen:
            self.buffer.pop(p, None)
            self.buffer[p] = it
        while len(self.buffer) > cfg.buffer_size:
            self.buffer.pop(next(iter(self.buffer)))
        items = list(self.buffer)
        if len(items) <= cfg.targets_per_iteration:
            return items
        chosen = self.rng.choice(len(items), cfg.targets_per_iteration, replace=False)
        return [items[i] for i in np.sort(chosen)]

    def _next(self, n_players: int, positions: int, fitted: int, loss: float, start: float) -> dict:
        """The fitted network becomes the current one; the iteration's statistics."""
        self._next_net()
        self.iteration += 1
        return {
            "players": n_players,
            "positions": positions,
            "fitted": fitted,
            "loss": loss,
            "seconds": time.perf_counter() - start,
        }

    def _next_net(self) -> None:
        """The fitted network becomes the current one (the planner's too)."""
        self.net = to_value_net(self.model, self.spec)
        self.planner.value_fn = self.net
        self.planner.clear_cache()

    def _fit(self, keys: Sequence[tuple[int, ...]], targets: list[np.ndarray]) -> float:
        """`fit_steps` Adam steps of cross-entropy against the soft targets, positions of
        each table size batched together."""
        import torch

        cfg, spec = self.cfg, self.spec
        groups = []  # (features, mask, targets) of each table size, the smallest first
        if spec.table:  # (position, agent's index) keys, of one table size
            agents = np.array([agent for _, agent in keys], dtype=np.int64)
            keys = [position for position, _ in keys]
        for n in sorted({len(k) for k in keys}):
            idx = [i for i, k in enumerate(keys) if len(k) == n]
            x, mask = spec.encode(
                np.array([keys[i] for i in idx]), agents[idx] if spec.table else None
            )
            t = np.zeros((len(idx), spec.max_players), dtype=np.float32)
            t[:, :n] = np.stack([targets[i] for i in idx])
            groups.append((torch.as_tensor(x), torch.as_tensor(mask), torch.as_tensor(t)))
        total = 0.0
        for step in range(cfg.fit_steps):
            x, mask, t = groups[step % len(groups)]
            idx = torch.as_tensor(self.rng.integers(len(x), size=min(cfg.batch_size, len(x))))
            logits = self.model(x[idx]).masked_fill(~mask[idx], float("-inf"))
            logp = torch.log_softmax(logits, dim=1).masked_fill(~mask[idx], 0.0)
            loss = -(t[idx] * logp).sum(dim=1).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            total += float(loss.detach())
        return total / cfg.fit_steps

    def state_dict(self) -> dict:
        """Everything an exact resume needs, as plain data (torch tensors as bytes)."""
        import torch

        weights = io.BytesIO()
        torch.save({"model": self.model.state_dict(), "opt": self.opt.state_dict()}, weights)
        return {
            "iteration": self.iteration,
            "torch": weights.getvalue(),
            "rng": self.rng.bit_generator.state,
            "buffer": [[_plain(key), it] for key, it in self.buffer.items()],
            "outcomes": [
                [list(p), agent, o.positions.tolist(), o.probs.tolist(), o.wins.tolist()]
                for (p, agent), o in self.outcomes.items()
            ],
        }

    def load_state_dict(self, state: dict) -> None:
        import torch

        saved = torch.load(io.BytesIO(state["torch"]), weights_only=True)
        self.model.load_state_dict(saved["model"])
        self.opt.load_state_dict(saved["opt"])
        self.rng.bit_generator.state = state["rng"]
        self.adopt_buffer(state)
        self.iteration = int(state["iteration"])
        self._next_net()

    def adopt_buffer(self, state: dict) -> None:
        """Take the buffered positions (and the bots' turn ends) of a ``state_dict``: a
        resume's, or another run's for ``buffer_from``."""
        self.buffer = {_key(key): int(it) for key, it in state["buffer"]}
        self.outcomes = {
            (tuple(p), agent): TurnOutcomes(
                tuple(p), np.array(ends, dtype=np.int64), np.array(probs), np.array(wins)
            )
            for p, agent, ends, probs, wins in state.get("outcomes", [])
        }


def _plain(key: tuple) -> list:
    """A buffer key as plain data: [scores...] or, for the exact-table method,
    [[scores...], agent's index]."""
    if key and isinstance(key[0], tuple):
        return [list(key[0]), key[1]]
    return list(key)


def _key(plain: list) -> tuple:
    if plain and isinstance(plain[0], list):
        return (tuple(plain[0]), int(plain[1]))
    return tuple(plain)


def train(cfg: PlannerConfig, on_iteration: Callable[[int, ValueNet, dict], None] | None = None):
    """`cfg.iterations` iterations from scratch (no run folder); `on_iteration(i, net,
    stats)` is told of each. Returns the final network."""
    trainer = ValueIteration(cfg)
    while trainer.iteration < cfg.iterations:
        stats = trainer.iterate()
        if on_iteration:
            on_iteration(trainer.iteration - 1, trainer.net, stats)
    return trainer.net


# ---------------------------------------------------------------- evaluation
def table_label(table: Sequence[str]) -> str:
    """(smart, turn-ev) -> "3p:smart,turn-ev"; model files by their short names."""
    names = [short_name(name) if name.endswith(MODEL_SUFFIXES) else name for name in table]
    return f"{len(table) + 1}p:{','.join(names)}"


def evaluate(net: ValueNet, cfg: PlannerConfig) -> dict[str, dict]:
    """Win rate of the net's planner at each evaluation table, its seat rotating game by
    game (agents.tournament); the same seeds every time."""
    seed = cfg.seed + (10_007 << 32)  # other games than training's
    out = {}
    for table in cfg.tables:
        record = seat_record(net.planner(name="learner"), table, cfg.rules, seed, cfg.eval_games)
        out[table_label(table)] = {**record, "fair_share": 1 / (len(table) + 1)}
    return out


def exact_error(net: ValueNet, solution) -> float:
    """Mean |V_net - V_exact| over every 2-player turn start (the solver a yardstick)."""
    a, b = np.meshgrid(solution.scores, solution.scores, indexing="ij")
    v = net(np.stack([a.ravel(), b.ravel()], axis=1))[:, 0]
    return float(np.abs(v - solution.V.ravel()).mean())
