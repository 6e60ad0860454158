"""Exact planning of one turn against a value of the positions where turns start.

Inside a turn 5000 is a small, known dice process (``envs.solver.option_tables``). What
the player to move cannot compute is what each *end* of the turn is worth: banking a
turn total (a win, bumps, a gift, lost points: R9, exactly as ``envs.game.bank_outcome``
decides: R8-R9 by the engine's ``bank_batch``) or a bust (R4), each leading to the next
turn-start position. Given a *value function* for those positions, ``plan_turns`` builds
every reachable end of many turn starts, evaluates them all in one batched call, and
solves the turns together by the exact solver's backward recursion over turn total and
dice left (``envs.solver.turn_values``: expectimax over rolls and holds, R4-R8, either
hold rule). The result, ``TurnPlans``, values every decision of those turns;
``plan_turn`` is one start's ``TurnPlan``.

A value function (``ValueFn``) takes a batch of turn-start positions, each given as the
banked scores in turn order *from the player to move* (shape (B, N), ints; 0 means not
entered, R8), and returns each of those players' probability of winning, shape (B, N).
One function can serve any number of players. ``exact_two_player_values`` makes one
from the exact 2-player solution: planned against it, a turn is played as the solver
plays it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, cached_property

import numpy as np

from fivethousand_rl.envs.batch import bank_batch, bank_table
from fivethousand_rl.envs.game import Move, bank_outcome
from fivethousand_rl.envs.rules import NUM_DICE, Rules
from fivethousand_rl.envs.solver import STEP, TwoPlayerSolution, option_tables, turn_values

ValueFn = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class _Chance:
    """``OptionTables`` laid out class by class (``option_tables`` is rank-major), so
    that the best option of every chance class is one ``np.maximum.reduceat``."""

    steps: np.ndarray  # option o adds steps[o] * 50 points ...
    dice_left: np.ndarray  # ... and leaves dice_left[o] dice
    starts: np.ndarray  # class c's options start at starts[c]
    option_class: np.ndarray  # option o belongs to class option_class[o]
    class_matrix_t: np.ndarray  # (6, classes): probability of class c rolling k dice
    bust: np.ndarray  # (6,): probability that k dice score nothing
    max_step: int


@cache
def _chance(hold: str) -> _Chance:
    tab = option_tables(hold)
    order, starts = tab.class_major
    return _Chance(
        steps=tab.steps[order],
        dice_left=tab.dice_left[order],
        starts=starts,
        option_class=np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(order)))),
        class_matrix_t=np.ascontiguousarray(tab.class_matrix().T),
        bust=tab.bust,
        max_step=int(tab.steps.max()),
    )


def solve_turn(
    pass_value: float, bank: np.ndarray, hold: str, top: int
) -> tuple[np.ndarray, np.ndarray]:
    """The turn of one player from terminal values (``envs.solver.turn_values`` for a
    single state).

    `pass_value`: the value of a bust; `bank[i]`: of banking 50*i (-inf where R8 forbids
    it), for i up to ``top + max step + 1``; `top`: the target's level. Past the target
    a turn can only end as a bust does (banked points are lost: any gift recipient has
    the entry score, R9), so ``W`` is the pass value there. Returns (W, option values):
    ``W[i, k]`` is the value before rolling k dice (k >= 1) with turn total 50*i (i up
    to ``len(bank) - 1``); ``option_values[i, o]`` the better of banking or rolling on
    after option o (``_Chance`` order) at level i <= `top`."""
    bank = np.asarray(bank, dtype=float)
    w, _ = turn_values(np.array([float(pass_value)]), bank[None, :], option_tables(hold), top)
    w = w[:, :, 0]
    ch = _chance(hold)
    j = np.arange(top + 1)[:, None] + ch.steps  # level after option o
    return w, np.maximum(w[j, ch.dice_left], bank[j])


@dataclass(frozen=True, eq=False)
class TurnPlan:
    """The current turn of the player to move, solved against a value function.

    Everything is seen from the player to move ("the mover"): `scores` are the banked
    scores in turn order from the mover; values are the mover's win probability.
    ``pass_end`` is every player's win probability (mover's order) after a turn that
    banks nothing (a bust); ``bank_ends[i]`` after banking 50*i (where R8 allows it:
    ``bank[i] > -inf``).
    """

    rules: Rules
    scores: tuple[int, ...]
    pass_end: np.ndarray  # (N,)
    bank_ends: np.ndarray  # (levels, N)
    bank: np.ndarray  # (levels,): the mover's value of banking 50*i, -inf if not allowed
    W: np.ndarray  # (levels, 6): the mover's value before rolling k dice with total 50*i

    @property
    def top(self) -> int:
        return self.rules.target // STEP

    def bank_value(self, total: int) -> float:
        """The mover's win probability after banking `total` (-inf if R8 forbids it)."""
        end = self._bank_end(total)
        return -np.inf if end is None else float(end[0])

    def roll_value(self, total: int, dice: int) -> float:
        """The mover's win probability of rolling `dice` dice on with turn total `total`."""
        return float(self.W[min(total // STEP, len(self.W) - 1), dice])

    def move_value(self, move: Move) -> float:
        """The mover's win probability after `move` (a legal move of this turn)."""
        if move.banks:
            return self.bank_value(move.turn_total)
        return self.roll_value(move.turn_total, move.dice_left)

    def bank_probabilities(self, total: int) -> np.ndarray:
        """Every player's win probability (mover's order) after banking `total`."""
        end = self._bank_end(total)
        if end is None:
            raise ValueError(f"banking {total} is not allowed here (R8)")
        return end

    def roll_probabilities(self, total: int, dice: int) -> np.ndarray:
        """Every player's win probability (mover's order) of rolling `dice` dice on with
        turn total `total`, the mover playing this plan (see ``probabilities``)."""
        return self.probabilities[min(total // STEP, len(self.W) - 1), dice]

    def _bank_end(self, total: int) -> np.ndarray | None:
        level = total // STEP
        if level < len(self.bank):
            return None if self.bank[level] == -np.inf else self.bank_ends[level]
        # A total this far past the target (a turn that rolled on there) is lost if banked.
        outcome = bank_outcome(self.scores, 0, total, self.rules)
        if outcome.allowed and not outcome.lost:
            raise RuntimeError(f"banking {total} past the target should be lost: {outcome}")
        return self.pass_end if outcome.allowed else None

    @cached_property
    def option_values(self) -> np.ndarray:
        """(top + 1, options): the better of banking or rolling on after option o
        (``_Chance`` order) from level i: what each option is worth."""
        ch = _chance(self.rules.hold)
        j = np.arange(self.top + 1)[:, None] + ch.steps  # level after option o
        return np.maximum(self.W[j, ch.dice_left], self.bank[j])

    @cached_property
    def probabilities(self) -> np.ndarray:
        """(levels, 6, N): like ``W`` but every player's win probability, the mover
        playing the plan: the same recursion with the mover's choices fixed (the first
        best option of each chance class, and roll on rather than bank on a tie, as
        ``act`` does with one hold; the mover's own values do not depend on ties)."""
        ch = _chance(self.rules.hold)
        top = self.top
        j = np.arange(top + 1)[:, None] + ch.steps  # level after option o
        banks = self.bank[j] > self.W[j, ch.dice_left]
        # The first best option of each class: the smallest index among its best ones.
        best = (
            self.option_values
            == np.maximum.reduceat(self.option_values, ch.starts, axis=1)[:, ch.option_class]
        )
        index = np.where(best, np.arange(len(ch.steps)), len(ch.steps))
        chosen = np.minimum.reduceat(index, ch.starts, axis=1)  # (top + 1, classes)
        n = len(self.scores)
        p = np.empty((len(self.W), NUM_DICE + 1, n))
        p[:] = self.pass_end
        bust_part = ch.bust[:, None] * self.pass_end
        for i in range(top, -1, -1):
            o = chosen[i]
            vec = np.where(
                banks[i, o][:, None], self.bank_ends[j[i, o]], p[j[i, o], ch.dice_left[o]]
            )
            p[i] = ch.class_matrix_t @ vec + bust_part
        return p


@dataclass(frozen=True, eq=False)
class TurnPlans:
    """The turns of many turn starts, each solved against one value function: row b of
    each array is start b's (``TurnPlan``'s fields, batched); ``plan(b)`` is its plan."""

    rules: Rules
    starts: np.ndarray  # (B, N): each in turn order from its mover
    pass_ends: np.ndarray  # (B, N)
    bank_ends: np.ndarray  # (B, levels, N)
    bank: np.ndarray  # (B, levels)
    W: np.ndarray  # (B, levels, 6)

    def __len__(self) -> int:
        return len(self.starts)

    def plan(self, b: int) -> TurnPlan:
        scores = tuple(int(s) for s in self.starts[b])
        return TurnPlan(
            self.rules, scores, self.pass_ends[b], self.bank_ends[b], self.bank[b], self.W[b]
        )


def plan_turns(
    starts: np.ndarray | Sequence[Sequence[int]], rules: Rules, value_fn: ValueFn
) -> TurnPlans:
    """Solve the turns of the players to move from many turn starts at once (`starts`,
    (B, N) banked scores, each in turn order from its mover), against `value_fn`.

    Each turn end is the engine's: banking 50*i is ``bank_batch`` of that total (R8,
    R9) and leads to a win (the mover's or a gift recipient's: a certain outcome) or to
    the position it leaves with the next player to move; a bust, or banked points that
    nobody receives, leaves the scores as they are (R4, R9). The positions of every
    start go to `value_fn` in one call; the turns are solved together by the solver's
    recursion (``envs.solver.turn_values``), each only up to the last turn total where
    banking can change anything (above it every end is the bust's)."""
    starts = np.asarray(starts, dtype=np.int64).reshape(len(starts), -1)
    b_count, n = starts.shape
    top = rules.target // STEP
    size = top + 1 + _chance(rules.hold).max_step + 1
    totals = np.arange(size) * STEP
    r8 = bank_table(rules)
    allowed = r8.allowed[(starts[:, :1] > 0).astype(np.int64), r8.index(totals)[None, :]]
    allowed[:, 0] = False  # every hold scores (R2): a turn never banks nothing
    who, level = np.nonzero(allowed)
    out = bank_batch(starts[who], np.zeros(who.size, dtype=np.int64), totals[level], rules)
    won, lost = out.winner >= 0, out.lost
    moved = ~won & ~lost
    # After a bust, or a bank that leaves a position, the next player moves.
    positions = np.concatenate([starts, out.scores[moved]])
    values = np.asarray(value_fn(np.roll(positions, -1, axis=1)), dtype=float)
    if values.shape != positions.shape:
        raise ValueError(
            f"the value function returned shape {values.shape} for {len(positions)} "
            f"positions of {n} players; expected {positions.shape}"
        )
    values = np.roll(values, 1, axis=1)  # the next player's order: the mover is last
    pass_ends = values[:b_count]
    bank_ends = np.zeros((b_count, size, n))
    bank_ends[who[moved], level[moved]] = values[b_count:]
    bank_ends[who[won], level[won]] = np.eye(n)[out.winner[won]]
    bank_ends[who[lost], level[lost]] = pass_ends[who[lost]]
    bank = np.where(allowed, bank_ends[:, :, 0], -np.inf)
    useful = np.zeros_like(allowed)
    useful[who, level] = ~lost
    live = np.where(useful.any(axis=1), size - 1 - np.argmax(useful[:, ::-1], axis=1), 0)
    order = np.argsort(-live, kind="stable")  # turn_values takes them by live level, descending
    w, _ = turn_values(
        pass_ends[order, 0], bank[order], option_tables(rules.hold), top, live[order]
    )
    W = np.empty((b_count, size, NUM_DICE + 1))
    W[order] = w.transpose(2, 0, 1)
    return TurnPlans(rules, starts, pass_ends, bank_ends, bank, W)


def plan_turn(scores: Sequence[int], rules: Rules, value_fn: ValueFn) -> TurnPlan:
    """Solve the turn of the player to move, from the turn start where the banked
    scores are `scores` (in turn order from the mover), against `value_fn`: one start
    of ``plan_turns``."""
    return plan_turns([tuple(int(s) for s in scores)], rules, value_fn).plan(0)


def exact_two_player_values(solution: TwoPlayerSolution) -> ValueFn:
    """The value function of the exact 2-player solution: (V[a, b], 1 - V[a, b]) for the
    mover at a against b (the game ends with a winner, so the two add up to 1)."""
    scores = np.asarray(solution.scores)  # the rules' grid, ascending

    def values(positions: np.ndarray) -> np.ndarray:
        positions = np.asarray(positions)
        if positions.ndim != 2 or positions.shape[1] != 2:
            raise ValueError(
                f"the exact 2-player values take positions of 2 players, got shape "
                f"{positions.shape}"
            )
        where = np.minimum(np.searchsorted(scores, positions), len(scores) - 1)
        if not np.array_equal(scores[where], positions):
            raise ValueError(f"not turn-start scores under {solution.rules}: {positions.tolist()}")
        v = solution.V[where[:, 0], where[:, 1]]
        return np.stack([v, 1.0 - v], axis=1)

    return values
