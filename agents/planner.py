"""The planner: plays each turn exactly against a value of turn-start positions.

``PlannerBot`` solves the turn of the player to move (``envs.turn_planner.plan_turn``:
every reachable end of the turn valued in one call of its value function, then the
exact recursion over rolls and holds) and takes the action that maximizes its own win
probability. A plan is cached per turn start, so only a turn's first decision plans.
``act_batch`` makes the same decisions for many games at once (``envs.batch``): one
plan per distinct turn start among them, every action valued by array lookups.

The value function is pluggable (``envs.turn_planner.ValueFn``): a learned network for
any number of players, or, with ``PlannerBot.exact``, the exact 2-player solution,
against which the planner plays exactly as the solver does.
"""

from __future__ import annotations

from collections.abc import Collection
from functools import lru_cache

import numpy as np

from envs.batch import BatchGames
from envs.game import OVER, ROLL, Game, in_turn_order
from envs.policy import Policy
from envs.rules import BANK_BIT, Rules
from envs.solver import STEP
from envs.turn_planner import TurnPlan, ValueFn, exact_two_player_values, plan_turn

DEFAULT_CACHE_SIZE = 4096  # turn plans kept (a few kB each)
# Actions whose values differ by less are equal: values computed along different paths
# of the plan differ by rounding (about 1e-16) where they are the same in exact
# arithmetic, and the value function's own rounding (float32 in numpy or onnxruntime)
# would otherwise decide which of two equal actions is played.
TIE = 1e-12


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
        self.value_fn = value_fn
        self.players = None if players is None else tuple(sorted(players))
        self.rules = rules
        self.name = name
        self._plan = lru_cache(maxsize=cache_size)(self._solve)

    @classmethod
    def exact(cls, rules: Rules | None = None, show_progress: bool = True) -> PlannerBot:
        """The planner with the exact 2-player values of `rules` (solved or loaded now)."""
        from agents.optimal import two_player_solution  # the solver only when asked for

        rules = rules or Rules()
        values = exact_two_player_values(two_player_solution(rules, show_progress))
        return cls(values, players=(2,), rules=rules, name="planner-exact")

    def check_game(self, n_players: int, rules: Rules) -> None:
        if self.players is not None and n_players not in self.players:
            p = self.players  # in words: "2", "2 or 4", "2 to 8"
            consecutive = len(p) > 2 and p == tuple(range(p[0], p[-1] + 1))
            tables = f"{p[0]} to {p[-1]}" if consecutive else " or ".join(map(str, p))
            raise ValueError(f"{self.name} values games of {tables} players, not {n_players}")
        if self.rules is not None and rules != self.rules:
            raise ValueError(f"{self.name} values games under {self.rules}, not {rules}")

    def clear_cache(self) -> None:
        self._plan.cache_clear()

    def plan(self, game: Game) -> TurnPlan:
        """The plan of the current turn (cached per turn start)."""
        s = game.state
        return self._plan(in_turn_order(s.scores, s.current), game.rules)

    def _solve(self, scores: tuple[int, ...], rules: Rules) -> TurnPlan:
        return plan_turn(scores, rules, self.value_fn)

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
        not drawn from): one plan per turn start among them, from ``act``'s cache."""
        self.check_game(games.n_players, games.rules)  # cheap: once per call, not per game
        if not len(idx):
            return np.zeros(0, dtype=np.int64)
        n = games.n_players
        seats = (games.current[idx, None] + np.arange(n)) % n
        starts = np.take_along_axis(games.scores[idx], seats, axis=1)  # ``in_turn_order``
        order = np.lexsort(starts.T)  # number the distinct starts: start_of[i] is game i's
        first = np.r_[True, (np.diff(starts[order], axis=0) != 0).any(axis=1)]
        start_of = np.empty(len(idx), dtype=np.int64)
        start_of[order] = np.cumsum(first) - 1
        plans = [self._plan(tuple(s), games.rules) for s in starts[order[first]].tolist()]
        values = _action_values(plans, start_of, games, idx)
        best = values.max(axis=1, keepdims=True)
        # The first action within TIE of the best, in ascending order, as ``act``.
        return (values >= best - TIE).argmax(axis=1)

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


def _action_values(
    plans: list[TurnPlan], plan_of: np.ndarray, games: BatchGames, idx: np.ndarray
) -> np.ndarray:
    """(len(idx), 64): ``move_value`` of every action of each game of `idx` by its plan,
    ``plans[plan_of[i]]``, -inf where illegal. Actions 0-31 hold and roll on, 32-63 bank."""
    w = np.stack([plan.W for plan in plans])  # one shape under one game's rules
    bank = np.stack([plan.bank for plan in plans])
    totals, left = games.hold_results(idx)  # after each hold
    level = totals // STEP
    which = plan_of[:, None]
    rolled = w[which, np.minimum(level, w.shape[1] - 1), left]  # as ``TurnPlan.roll_value``
    banked = bank[which, np.minimum(level, bank.shape[1] - 1)]  # as ``TurnPlan.bank_value``
    values = np.concatenate([rolled, banked], axis=1)
    legal = games.legal_mask(idx)
    far = legal[:, BANK_BIT:] & (level >= bank.shape[1])  # past the plans' bank tables
    if far.any():  # a turn rolled on far past the target: rare, so one by one
        for r, c in zip(*np.nonzero(far), strict=True):
            values[r, BANK_BIT + c] = plans[plan_of[r]].bank_value(int(totals[r, c]))
    np.copyto(values, -np.inf, where=~legal)
    return values
