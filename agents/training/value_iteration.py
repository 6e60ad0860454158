"""Training the planner's value network (fivethousand_rl.agents.value_net): three methods.

``method="self-play"`` (fitted value iteration): the ``PlannerBot`` plays with the
current network (a share ``epsilon`` of its decisions random, and optionally scripted
bots in some seats) and every turn start it meets joins a buffer of positions. Each
iteration re-targets a sample of the buffer: a position's target is the planner's own
exact expectation of its turn under the current network
(``plan_turns(...)``' probabilities at the turn start: a TD(0) target over the whole
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

``method="best-response"`` (a network of one table too, of 2 or 3 players): where the
exact best response at the table has been computed (``agents.best_response``, cached on
disk; computed first if not), its values are the targets themselves. No games are
played: each iteration fits the network toward them at every turn start after the
agent's turn (where bot 0 moves), the positions a planner reads its network at.
Starting from a network of the exact-table method, this fine-tunes its values where
they decide the planner's choices.

A run's settings are a ``PlannerConfig`` (``agents.training.config``); ``ValueIteration``
holds a run's trainer, with ``state_dict`` and ``load_state_dict`` for an exact resume;
``evaluate`` plays the evaluation tables.
"""

from __future__ import annotations

import functools
import io
import signal
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from fivethousand_rl.agents import MODEL_SUFFIXES, make_policy
from fivethousand_rl.agents.batched import batched
from fivethousand_rl.agents.neural import short_name
from fivethousand_rl.agents.planner import PlannerBot, ValueCache
from fivethousand_rl.agents.threads import one_thread_per_process
from fivethousand_rl.agents.tournament import seat_record
from fivethousand_rl.agents.training.config import PlannerConfig
from fivethousand_rl.agents.value_net import FeatureSpec, ValueNet
from fivethousand_rl.envs.batch import BatchGames, play_batch
from fivethousand_rl.envs.driver import DEFAULT_MAX_TURNS
from fivethousand_rl.envs.game import Game
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import NUM_DICE, Rules
from fivethousand_rl.envs.turn_outcomes import TurnOutcomes, turn_ends
from fivethousand_rl.envs.turn_planner import plan_turns

if TYPE_CHECKING:
    import torch  # imported by the trainer alone, when it runs


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

    def act_batch(self, games: BatchGames, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        actions = self.planner.act_batch(games, idx, rng)
        if self.epsilon:
            explore = rng.random(len(idx)) < self.epsilon
            table, key = games.decisions, games.decision_key(idx[explore])
            pick = (rng.random(len(key)) * table.n_legal[key]).astype(np.int64)
            actions[explore] = table.legal[key, pick]
        return actions


def play_games(
    cfg: PlannerConfig,
    planner: PlannerBot,
    n_players: int,
    games: int,
    rng: np.random.Generator,
    opponents: Sequence[Policy],
) -> list[tuple[int, ...]]:
    """The turn starts met in `games` self-play games (some with scripted opponents),
    all played at once (``envs.batch.play_batch``: the planner plans the turn starts of
    every game in one pass)."""
    batch = BatchGames(games, n_players, cfg.rules)
    batch.current[:] = rng.integers(n_players, size=games)  # the first player
    policies: list[Policy] = [_Explorer(planner, cfg.epsilon), *opponents]
    seat_policy = np.zeros((games, n_players), dtype=np.int64)
    for g in range(games):
        if opponents and rng.random() < cfg.opponent_share:
            for seat in rng.choice(n_players, size=int(rng.integers(1, n_players)), replace=False):
                seat_policy[g, seat] = 1 + int(rng.integers(len(opponents)))
    _, _, positions = batched_turn_starts(batch, policies, seat_policy, rng)
    return list(map(tuple, positions.tolist()))


def batched_turn_starts(
    batch: BatchGames, policies: Sequence[Policy], seat_policy: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Play every game of `batch` out (``fivethousand_rl.envs.batch.play_batch``, seat s of game g
    played by ``policies[seat_policy[g, s]]``); every turn start met, the first ones
    included, as (game, seat to move, scores in turn order from that seat) arrays."""
    n = batch.n_players
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def keep(idx: np.ndarray, movers: np.ndarray, before: np.ndarray, _rolls) -> None:
        start = before == 0  # a turn's first roll: every hold scores (R2)
        g, mover = idx[start], movers[start]
        order = (mover[:, None] + np.arange(n)) % n
        parts.append((g, mover, np.take_along_axis(batch.scores[g], order, axis=1)))

    every = np.arange(batch.n_games)
    play_batch(batch, every, policies, seat_policy, rng, max_turns=DEFAULT_MAX_TURNS, on_roll=keep)
    return tuple(np.concatenate(column) for column in zip(*parts, strict=True))


def turn_targets(
    positions: Sequence[tuple[int, ...]], rules: Rules, value_fn, chunk: int = 4096
) -> list[np.ndarray]:
    """Each position's target: every player's win probability at its turn start, the
    mover planning the turn exactly against `value_fn` (a TD(0) target over the turn).
    The turns are planned `chunk` at a time, in one pass each (``plan_turns``)."""
    out: list[np.ndarray] = []
    for lo in range(0, len(positions), chunk):
        part = positions[lo : lo + chunk]
        by_size: dict[int, list[int]] = {}
        for i, p in enumerate(part):
            by_size.setdefault(len(p), []).append(i)
        targets: list = [None] * len(part)
        for n, rows in by_size.items():
            values = ValueCache(value_fn, rules, n)  # each position through the net once
            plans = plan_turns(np.array([part[i] for i in rows]), rules, values)
            for b, i in enumerate(rows):
                if n == 2:  # one winner: the opponent's chance is the rest (half the work)
                    v = plans.W[b, 0, NUM_DICE]
                    targets[i] = np.array([v, 1.0 - v])
                else:
                    targets[i] = plans.plan(b).probabilities[0, NUM_DICE]
        out += targets
    return out


# ---------------------------------------------------------- the exact-table method
@functools.cache  # the bots of the tables, built once per process
def _bot(name: str) -> Policy:
    return make_policy(name)


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


def table_games(
    planner: PlannerBot,
    table: Sequence[str],
    rules: Rules,
    epsilon: float,
    games: int,
    rng: np.random.Generator,
) -> list[tuple[tuple[int, ...], int]]:
    """`games` games of the planner at `table` (the bots after its seat, in turn order),
    all played at once (``envs.batch.play_batch``), each game's planner seat and first
    player drawn from `rng`: every turn start met, as (scores in turn order from the
    player to move, the planner's index in that order)."""
    n = len(table) + 1
    seat = rng.integers(n, size=games)
    batch = BatchGames(games, n, rules)
    batch.current[:] = rng.integers(n, size=games)  # the first player
    policies: list[Policy] = [_Explorer(planner, epsilon), *(batched(_bot(b)) for b in table)]
    seat_policy = np.zeros((games, n), dtype=np.int64)
    for i in range(len(table)):
        seat_policy[np.arange(games), (seat + 1 + i) % n] = 1 + i
    g, mover, positions = batched_turn_starts(batch, policies, seat_policy, rng)
    agents = ((seat[g] - mover) % n).tolist()
    return list(zip(map(tuple, positions.tolist()), agents, strict=True))


def table_bot(table: Sequence[str], n_players: int, agent: int) -> Policy:
    """The bot to move where the agent is at index `agent` of the turn order (> 0)."""
    return batched(_bot(table[n_players - agent - 1]))


# Positions planned (or bot turns followed) together in one job: fixed, so that results
# never depend on the number of workers.
PLAN_CHUNK = 1024


def _worker_outcomes(job: tuple[tuple[str, ...], int, list]) -> list[TurnOutcomes]:
    """The exact ends of the turns of the bot at index `agent` of the table's turn
    order (the agent's index) from each position, all at once (``turn_ends``)."""
    table, agent, positions = job
    bot = table_bot(table, len(positions[0]), agent)
    ends = turn_ends(bot, positions, _WORKER["cfg"].rules)
    return [ends[b] for b in range(len(ends))]


def _worker_plans(positions: list[tuple[int, ...]]) -> list[np.ndarray]:
    return turn_targets(positions, _WORKER["cfg"].rules, _WORKER["net"])


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
            load_weights(self.model, cfg.init_net())
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
        if self.cfg.method == "best-response":
            return self._iterate_best_response()
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
        played = table_games(
            self.planner, table, cfg.rules, cfg.epsilon, cfg.games_per_iteration, self.rng
        )
        keys = self._remember(played, it)
        # a bot's turn ends are forgotten with its position, computed for a new one
        self.outcomes = {k: ends for k, ends in self.outcomes.items() if k in self.buffer}
        new = [k for k in self.buffer if k[1] and k not in self.outcomes]
        for agent in sorted({a for _, a in new}):  # one bot per agent's index
            mine = [k for k in new if k[1] == agent]
            starts = [p for p, _ in mine]
            jobs = [
                (table, agent, starts[i : i + PLAN_CHUNK])
                for i in range(0, len(starts), PLAN_CHUNK)
            ]
            ends = [o for part in _in_workers(cfg, self.net, _worker_outcomes, jobs) for o in part]
            self.outcomes.update(zip(mine, ends, strict=True))
        bots = [k for k in keys if k[1]]
        planners = [k for k in keys if not k[1]]
        turns = [self.outcomes[k] for k in bots]
        agents = np.array([k[1] for k in bots], dtype=np.int64)
        for sweep in range(cfg.sweeps):
            if sweep:
                self._next_net()
            targets = dict(zip(bots, bot_turn_targets(self.net, turns, agents), strict=True))
            starts = [p for p, _ in planners]
            jobs = [starts[i : i + PLAN_CHUNK] for i in range(0, len(starts), PLAN_CHUNK)]
            plans = [t for part in _in_workers(cfg, self.net, _worker_plans, jobs) for t in part]
            targets.update(zip(planners, plans, strict=True))
            if not sweep:  # how far the values are from their own targets (Bellman residual)
                gap = target_gap(self.net, keys, [targets[k] for k in keys])
            loss = self._fit(keys, [targets[k] for k in keys])
        stats = self._next(len(table) + 1, len(self.buffer), len(keys), loss, start)
        return {**stats, "target_gap": gap}

    def _iterate_best_response(self) -> dict:
        """One iteration of the best-response method: a fit toward the exact values."""
        start = time.perf_counter()
        keys, targets = self._best_response_targets
        gap = target_gap(self.net, keys, targets)  # before the fit, as the exact-table's
        loss = self._fit(keys, targets)
        stats = self._next(len(self.spec.table) + 1, len(keys), len(keys), loss, start)
        return {**stats, "target_gap": gap}

    @functools.cached_property
    def _best_response_targets(self) -> tuple[list[tuple[tuple[int, ...], int]], list]:
        """Every (position, agent's index) after the agent's turn, and its exact values
        (each player's win probability, mover's order) under the best response."""
        from fivethousand_rl.agents.best_response import best_response, cached_best_response

        cfg, table = self.cfg, self.spec.table
        fresh = cached_best_response(table, cfg.rules) is None  # then bars: minutes of work
        br = best_response(table, cfg.rules, make_policy, fresh, cfg.workers)
        positions = br.space.positions()  # bot 0 to move: the agent last in turn order
        keys = [(tuple(p), br.n_players - 1) for p in positions.tolist()]
        return keys, list(br.value_fn()(positions))

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
        took = time.perf_counter() - start
        return dict(players=n_players, positions=positions, fitted=fitted, loss=loss, seconds=took)

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
    game (agents.tournament), played batched; the same seed every time (the dice follow
    the play, so two networks do not meet the same rolls)."""
    seed = cfg.seed + (10_007 << 32)  # other games than training's
    out = {}
    for table in cfg.tables:
        learner = net.planner(name="learner")
        record = seat_record(learner, table, cfg.rules, seed, cfg.eval_games, batched=True)
        out[table_label(table)] = {**record, "fair_share": 1 / (len(table) + 1)}
    return out


def exact_error(net: ValueNet, solution) -> float:
    """Mean |V_net - V_exact| over every 2-player turn start (the solver a yardstick)."""
    a, b = np.meshgrid(solution.scores, solution.scores, indexing="ij")
    v = net(np.stack([a.ravel(), b.ravel()], axis=1))[:, 0]
    return float(np.abs(v - solution.V.ravel()).mean())
