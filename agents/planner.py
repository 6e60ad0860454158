"""The planner: plays each turn exactly against a value of turn-start positions.

``PlannerBot`` solves the turn of the player to move (``envs.turn_planner.plan_turns``:
every reachable end of the turn valued by its value function, then the exact recursion
over rolls and holds) and takes the action that maximizes its own win probability.
``act_batch`` decides for many games at once: the turn starts it has no plan for are
planned together in one pass (their ends in one call of the value function, their
recursions side by side), and every action is valued by array lookups into the plans.
``act`` reads the same plans, so a game plays alike one at a time or in a batch.

Two caches make planning cheap where positions repeat, one of each per kind of game
(rules and table size): the plans of recent turn starts, kept as rows of arrays so that
a batch reads them without building objects (``PlanPool``), and the value function's
values per position (``ValueCache``: a table over every position of the score grid,
where it fits: up to 4 players under the standard rules).

The value function is pluggable (``envs.turn_planner.ValueFn``): a learned network for
any number of players, or, with ``PlannerBot.exact``, the exact 2-player solution,
against which the planner plays exactly as the solver does.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable
from typing import NamedTuple

import numpy as np

from fivethousand_rl.envs.batch import BatchGames
from fivethousand_rl.envs.game import OVER, ROLL, Game, in_turn_order
from fivethousand_rl.envs.i18n import _
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import BANK_BIT, Rules
from fivethousand_rl.envs.rules_text import describe_rules
from fivethousand_rl.envs.solver import STEP
from fivethousand_rl.envs.turn_planner import (
    TurnPlan,
    TurnPlans,
    ValueFn,
    exact_two_player_values,
    plan_turns,
)

DEFAULT_CACHE_SIZE = 16384  # turn plans kept per kind of game (about 12 kB each)
MAX_CACHED_POSITIONS = 1 << 23  # the largest table of positions a ValueCache keeps
DENSE_KEYS = 1 << 22  # a PlanPool finds starts by array up to this many keys
# Actions whose values differ by less are equal: values computed along different paths
# of the plan differ by rounding (about 1e-16) where they are the same in exact
# arithmetic, and the value function's own rounding (float32 in numpy or onnxruntime)
# would otherwise decide which of two equal actions is played.
TIE = 1e-12


class ValueCache:
    """`value_fn` for positions of `n_players` under `rules`, each position's values
    computed once: a table over every position of the score grid (``banked_scores``),
    filled as positions are asked for. Where that table would hold more than
    `max_positions` positions (or for a position off the grid), it just calls
    `value_fn`."""

    def __init__(
        self,
        value_fn: ValueFn,
        rules: Rules,
        n_players: int,
        max_positions: int = MAX_CACHED_POSITIONS,
    ) -> None:
        self.value_fn = value_fn
        self.grid = np.array(rules.banked_scores())
        self.shape = (len(self.grid),) * n_players
        size = len(self.grid) ** n_players
        self.known = np.zeros(size, dtype=bool) if size <= max_positions else None
        self.values = np.empty((size, n_players)) if self.known is not None else None

    @property
    def positions_valued(self) -> int:
        return 0 if self.known is None else int(self.known.sum())

    def __call__(self, positions: np.ndarray) -> np.ndarray:
        positions = np.asarray(positions, dtype=np.int64)
        if self.known is None or positions.ndim != 2 or positions.shape[1] != len(self.shape):
            return self.value_fn(positions)
        digits = np.minimum(np.searchsorted(self.grid, positions), len(self.grid) - 1)
        if not np.array_equal(self.grid[digits], positions):
            return self.value_fn(positions)
        index = np.ravel_multi_index(tuple(digits.T), self.shape)
        missing = np.unique(index[~self.known[index]])
        if missing.size:
            asked = self.grid[np.stack(np.unravel_index(missing, self.shape), axis=1)]
            fresh = np.asarray(self.value_fn(asked), dtype=float)
            if fresh.shape != asked.shape:
                raise ValueError(
                    f"the value function returned shape {fresh.shape} for {len(asked)} "
                    f"positions of {asked.shape[1]} players; expected {asked.shape}"
                )
            self.values[missing] = fresh
            self.known[missing] = True
        return self.values[index]


class PlanPool:
    """The plans of recent turn starts of one kind of game, as rows of arrays (the
    fields of ``TurnPlans``): ``rows`` finds or makes each start's row. When it is full,
    the rows used longest ago are reused (it grows only when one call needs more).
    Starts are found by their ``start_keys``: in an array indexed by key where there
    are at most ``DENSE_KEYS`` keys (2 and 3 players under the standard rules), else in
    a dict."""

    def __init__(self, capacity: int, keys: int | None = None) -> None:
        self.capacity = capacity
        dense = keys is not None and keys <= DENSE_KEYS
        self.dense = np.full(keys, -1, dtype=np.int32) if dense else None  # key -> row
        self.row: dict[Hashable, int] = {}  # key -> row, without `dense`
        self.key_of: list[Hashable | None] = []  # row -> key
        self.arrays: dict[str, np.ndarray] = {}
        self.used = np.zeros(0, dtype=np.int64)  # when each row was last asked for
        self.tick = 0
        self.filled = 0  # rows from here on have never held a plan
        self.plans_made = 0

    def rows(
        self, starts: np.ndarray, keys: np.ndarray, make: Callable[[np.ndarray], TurnPlans]
    ) -> np.ndarray:
        """The rows of `starts` ((k, N) distinct turn starts, mover's order, and their
        ``start_keys``); the missing ones planned by `make` in one call."""
        self.tick += 1
        if self.dense is not None:
            rows = self.dense[keys].astype(np.int64)
        else:
            keys = keys.tolist()
            rows = np.array([self.row.get(key, -1) for key in keys], dtype=np.int64)
        self.used[rows[rows >= 0]] = self.tick
        new = np.flatnonzero(rows < 0)
        if new.size:
            plans = make(starts[new])
            free = self._free_rows(new.size, plans)
            for name, array in self.arrays.items():
                array[free] = getattr(plans, name)
            for r, i in zip(free.tolist(), new.tolist(), strict=True):
                old = self.key_of[r]
                if old is not None and self.dense is not None:
                    self.dense[old] = -1
                elif old is not None:
                    del self.row[old]
                self.key_of[r] = keys[i]
                if self.dense is None:
                    self.row[keys[i]] = r
            if self.dense is not None:
                self.dense[keys[new]] = free
            rows[new] = free
            self.used[free] = self.tick
            self.plans_made += new.size
        return rows

    def plan(self, row: int, rules: Rules) -> TurnPlan:
        """Row `row` as a ``TurnPlan`` (a copy: the row may be reused)."""
        a = self.arrays
        scores = tuple(a["starts"][row].tolist())
        return TurnPlan(
            rules, scores, *(a[k][row].copy() for k in ("pass_ends", "bank_ends", "bank", "W"))
        )

    def _free_rows(self, count: int, plans: TurnPlans) -> np.ndarray:
        """`count` rows not asked for in this call, the least recently used first."""
        idle = int((self.used < self.tick).sum())
        if idle < count:  # grow: every row but the idle ones is needed now
            grow = max(self.capacity - len(self.used), count - idle)
            for name in ("starts", "pass_ends", "bank_ends", "bank", "W"):
                part = getattr(plans, name)
                shape, dtype = part.shape[1:], part.dtype
                old = self.arrays.get(name, np.empty((0, *shape), dtype=dtype))
                bigger = np.empty((len(old) + grow, *shape), dtype=dtype)  # pages taken as written
                bigger[: len(old)] = old
                self.arrays[name] = bigger
            self.used = np.concatenate([self.used, np.full(grow, -1, dtype=np.int64)])
            self.key_of += [None] * grow
        if self.filled + count <= len(self.used):  # rows that never held a plan: in order
            self.filled += count
            return np.arange(self.filled - count, self.filled)
        everyone = count == len(self.used)
        rows = np.arange(count) if everyone else np.argpartition(self.used, count - 1)[:count]
        self.filled = max(self.filled, int(rows.max()) + 1)
        return rows


def start_keys(starts: np.ndarray, rules: Rules) -> np.ndarray:
    """One key per turn start ((k, N) scores, multiples of 50 below the target): the
    scores' digits base ``target // 50 + 1`` as one integer; where N such digits do not
    fit in 63 bits, each start's bytes (equal starts, equal keys either way)."""
    base = rules.target // STEP + 1
    if base ** starts.shape[1] < 2**63:
        return (starts // STEP) @ (base ** np.arange(starts.shape[1], dtype=np.int64))
    rows = np.ascontiguousarray(starts, dtype=np.int64)
    return rows.view(np.dtype((np.void, rows.itemsize * rows.shape[1]))).ravel()


class CacheInfo(NamedTuple):
    """What a planner's caches hold, over every kind of game it has played."""

    plans_made: int  # turn starts planned since the last ``clear_cache``
    plans_kept: int
    positions_valued: int  # positions in the value tables


def table_sizes(players: tuple[int, ...]) -> str:
    """Player counts in words, in the language in use: "2", "2 or 4", "2 to 8"."""
    p = players
    if len(p) > 2 and p == tuple(range(p[0], p[-1] + 1)):
        return _("{first} to {last}", first=p[0], last=p[-1])
    if len(p) == 1:
        return str(p[0])
    return _("{some} or {last}", some=", ".join(map(str, p[:-1])), last=p[-1])


def rules_refusal(bot: str, own: Rules, given: Rules) -> str:
    """Why `bot`, which values games under `own` rules only, refuses a game under
    `given` ones: both said in words (a player may read it)."""
    return _(
        "{bot} values games under these rules only: {own}; not under: {given}",
        bot=bot,
        own=describe_rules(own),
        given=describe_rules(given),
    )


class PlannerBot(Policy):
    """Maximizes its win probability within each turn, exactly, against `value_fn`.

    `players` and `rules`, when given, are the only games `value_fn` can value
    (``check_game`` refuses others). A value function that changes (a network in
    training) needs ``clear_cache`` after each change.
    """

    def __init__(
        self,
        value_fn: ValueFn,
        *,
        players: Collection[int] | None = None,
        rules: Rules | None = None,
        name: str = "planner",
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        self.value_fn, self.rules, self.name, self.cache_size = value_fn, rules, name, cache_size
        self.players = None if players is None else tuple(sorted(players))
        self._caches: dict[tuple[Rules, int], tuple[ValueCache, PlanPool]] = {}

    @classmethod
    def exact(cls, rules: Rules | None = None, show_progress: bool = True) -> PlannerBot:
        """The planner with the exact 2-player values of `rules` (solved or loaded now)."""
        from fivethousand_rl.agents.optimal import two_player_solution  # only when asked for

        rules = rules or Rules()
        values = exact_two_player_values(two_player_solution(rules, show_progress))
        return cls(values, players=(2,), rules=rules, name="planner-exact")

    def check_game(self, n_players: int, rules: Rules) -> None:
        if self.players is not None and n_players not in self.players:
            raise ValueError(
                _(
                    "{bot} values games of {tables} players, not {n}",
                    bot=self.name,
                    tables=table_sizes(self.players),
                    n=n_players,
                )
            )
        if self.rules is not None and rules != self.rules:
            raise ValueError(rules_refusal(self.name, self.rules, rules))

    def clear_cache(self) -> None:
        self._caches.clear()

    def __getstate__(self) -> dict:
        """Pickled without its caches (what it has planned and valued so far, hundreds
        of MB after a few hundred decisions): they only remember `value_fn`'s answers,
        so the copy makes the same decisions, planning afresh."""
        return {**self.__dict__, "_caches": {}}

    def cache_info(self) -> CacheInfo:
        pools = [pool for _, pool in self._caches.values()]
        return CacheInfo(
            sum(p.plans_made for p in pools),
            sum(key is not None for p in pools for key in p.key_of),
            sum(values.positions_valued for values, _ in self._caches.values()),
        )

    def _plan_rows(self, starts: np.ndarray, rules: Rules) -> tuple[PlanPool, np.ndarray]:
        """The pool of this kind of game and the row of each of `starts` ((k, N), turn
        starts in the mover's order) in it: each distinct start planned once."""
        kind = (rules, starts.shape[1])
        if kind not in self._caches:
            values = ValueCache(self.value_fn, rules, kind[1])
            keys = (rules.target // STEP + 1) ** kind[1]  # of start_keys
            self._caches[kind] = (values, PlanPool(self.cache_size, keys))
        values, pool = self._caches[kind]
        keys = start_keys(starts, rules)
        distinct, first, start_of = np.unique(keys, return_index=True, return_inverse=True)
        rows = pool.rows(starts[first], distinct, lambda s: plan_turns(s, rules, values))
        return pool, rows[start_of.ravel()]

    def plan(self, game: Game) -> TurnPlan:
        """The plan of the current turn (made once per turn start, then cached)."""
        s = game.state
        start = np.array([in_turn_order(s.scores, s.current)], dtype=np.int64)
        pool, rows = self._plan_rows(start, game.rules)
        return pool.plan(int(rows[0]), game.rules)

    def action_values(self, game: Game) -> dict[int, float]:
        """Win probability of every legal action, by the plan."""
        plan = self.plan(game)
        return {move.action: plan.move_value(move) for move in game.moves()}

    def act(self, game: Game, rng: np.random.Generator) -> int:
        values = self.action_values(game)
        best = max(values.values())
        # The first of equal values (to TIE), in the engine's order of moves: deterministic.
        return next(action for action, v in values.items() if v >= best - TIE)

    def act_batch(self, games: BatchGames, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``act`` for the games `idx` of `games` at once (the same actions; `rng` is
        not drawn from)."""
        if not len(idx):
            return np.zeros(0, dtype=np.int64)
        actions, values = self._legal_values(games, idx)
        best = values.max(axis=1, keepdims=True)
        # The first action within TIE of the best, in ascending order, as ``act``.
        return actions[np.arange(len(idx)), (values >= best - TIE).argmax(axis=1)]

    def action_values_batch(self, games: BatchGames, idx: np.ndarray) -> np.ndarray:
        """(len(idx), 64): ``action_values`` of the games `idx` of `games`, -inf where
        an action is illegal (actions 0-31 hold and roll on, 32-63 bank)."""
        actions, values = self._legal_values(games, idx)
        out = np.full((len(idx), 2 * BANK_BIT), -np.inf)
        legal = values > -np.inf
        out[np.nonzero(legal)[0], actions[legal]] = values[legal]
        return out

    def _legal_values(self, games: BatchGames, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(actions, values), each (len(idx), w): every game's legal actions, ascending,
        and their values by the plan (padded with -inf): one plan per distinct turn start
        among the games, the missing ones made in one pass."""
        self.check_game(games.n_players, games.rules)  # cheap: once per call, not per game
        n = games.n_players
        seats = (games.current[idx, None] + np.arange(n)) % n
        starts = np.take_along_axis(games.scores[idx], seats, axis=1)  # ``in_turn_order``
        if not len(idx):
            return np.zeros((0, 0), dtype=np.int64), np.zeros((0, 0))
        pool, rows = self._plan_rows(starts, games.rules)
        return _legal_values(pool, rows, games, idx)

    def win_probabilities(self, game: Game) -> np.ndarray:
        """Every seat's estimated win probability, by seat, with the player to move
        playing this plan: before a roll, or after the action ``act`` would take."""
        s = game.state
        if s.phase == OVER:
            return np.eye(game.n_players)[s.winner]
        plan = self.plan(game)
        if s.phase == ROLL:
            mine = plan.roll_probabilities(s.turn_total, s.dice_left)
        else:
            move = game.move(self.act(game, np.random.default_rng(0)))  # act draws nothing
            mine = (
                plan.bank_probabilities(move.turn_total)
                if move.banks
                else plan.roll_probabilities(move.turn_total, move.dice_left)
            )
        return np.roll(mine, s.current)  # from the mover's order to seat order


def _legal_values(pool: PlanPool, rows: np.ndarray, games: BatchGames, idx: np.ndarray):
    """(actions, values): the legal actions of each game of `idx` (ascending, padded
    with action 0) and their ``move_value`` by the game's plan, row ``rows[i]`` of
    `pool` (-inf in the padding)."""
    key = games.decision_key(idx)
    table = games.decisions
    n_legal = table.n_legal[key]
    actions = table.legal[key, : int(n_legal.max())]
    legal = np.arange(actions.shape[1]) < n_legal[:, None]
    hold, banks = actions & (BANK_BIT - 1), actions >= BANK_BIT
    roll = games.roll[idx, None]
    totals = games.turn_total[idx, None] + games.tables.points[roll, hold]  # after the hold
    left = games.tables.dice_left[roll, hold]
    w, bank = pool.arrays["W"], pool.arrays["bank"]
    _, levels, width = w.shape
    cell = rows[:, None] * levels + np.minimum(totals // STEP, levels - 1)  # flat: 1-d takes
    values = np.where(banks, bank.reshape(-1).take(cell), w.reshape(-1).take(cell * width + left))
    far = legal & banks & (totals // STEP >= levels)  # past the plans' bank tables
    if far.any():  # a turn rolled on far past the target: rare, so one by one
        for r, c in zip(*np.nonzero(far), strict=True):
            plan = pool.plan(int(rows[r]), games.rules)
            values[r, c] = plan.bank_value(int(totals[r, c]))
    return actions, np.where(legal, values, -np.inf)
