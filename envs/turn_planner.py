"""Exact planning of one turn against a value of the positions where turns start.

Inside a turn 5000 is a small, known dice process (``envs.solver.option_tables``). What
the player to move cannot compute is what each *end* of the turn is worth: banking a
turn total (a win, bumps, a gift, lost points: R9, exactly as ``envs.game.bank_outcome``
decides) or a bust (R4), each leading to the next turn-start position. Given a *value
function* for those positions, ``plan_turn`` builds every reachable end, evaluates them
all in one batched call, and solves the turn by the exact solver's backward recursion
over turn total and dice left (expectimax over rolls and holds, R4-R8, either hold
rule). The result, a ``TurnPlan``, values every decision of that turn.

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

from envs.game import Move, bank_outcome, in_turn_order
from envs.rules import NUM_DICE, Rules, can_bank
from envs.solver import STEP, TwoPlayerSolution, option_tables

ValueFn = Callable[[np.ndarray], np.ndarray]
PASS_END = 0  # index of the bust end in TurnPlan.ends


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
    rank = np.repeat(np.arange(len(tab.rank_count)), tab.rank_count)
    klass = np.arange(len(tab.points)) - tab.rank_offset[rank]
    order = np.argsort(klass, kind="stable")
    starts = np.searchsorted(klass[order], np.arange(len(tab.class_prob)))
    return _Chance(
        steps=tab.steps[order],
        dice_left=tab.dice_left[order],
        starts=starts,
        option_class=klass[order],
        class_matrix_t=np.ascontiguousarray(tab.class_matrix().T),
        bust=tab.bust,
        max_step=int(tab.steps.max()),
    )


def solve_turn(
    pass_value: float, bank: np.ndarray, hold: str, top: int
) -> tuple[np.ndarray, np.ndarray]:
    """The turn of one player from terminal values, as ``envs.solver._turn_recursion``
    computes it for a batch (same numbers, faster for a single state).

    `pass_value`: the value of a bust; `bank[i]`: of banking 50*i (-inf where R8 forbids
    it), for i up to ``top + max step + 1``; `top`: the target's level. Past the target
    a turn can only end as a bust does (banked points are lost: any gift recipient has
    the entry score, R9), so ``W`` is the pass value there. Returns (W, option values):
    ``W[i, k]`` is the value before rolling k dice with turn total 50*i (i up to
    ``len(bank) - 1``); ``option_values[i, o]`` the better of banking or rolling on
    after option o (``_Chance`` order) at level i <= `top`."""
    ch = _chance(hold)
    width = NUM_DICE + 1
    w = np.full((len(bank), width), float(pass_value))
    flat = w.reshape(-1)
    rows = ch.steps * width + ch.dice_left  # option o's row of w, from level 0
    levels = np.arange(top + 1)[:, None]
    banked = bank[ch.steps + levels]  # (levels, options): banking after option o
    option_values = np.empty_like(banked)
    bust_part = ch.bust * pass_value
    for i in range(top, -1, -1):
        v = option_values[i]
        np.maximum(flat[rows + i * width], banked[i], out=v)
        w[i] = ch.class_matrix_t @ np.maximum.reduceat(v, ch.starts) + bust_part
    return w, option_values


@dataclass(frozen=True, eq=False)
class TurnPlan:
    """The current turn of the player to move, solved against a value function.

    Everything is seen from the player to move ("the mover"): `scores` are the banked
    scores in turn order from the mover; values are the mover's win probability.
    ``ends[e]`` is every player's win probability (mover's order) at turn end e:
    ``ends[PASS_END]`` after a bust, ``ends[bank_end[i]]`` after banking 50*i
    (``bank_end[i] == -1`` where R8 forbids banking it).
    """

    rules: Rules
    scores: tuple[int, ...]
    ends: np.ndarray  # (ends, N)
    bank_end: np.ndarray  # (levels,)
    bank: np.ndarray  # (levels,): the mover's value of banking 50*i, -inf if not allowed
    W: np.ndarray  # (levels, 6): the mover's value before rolling k dice with total 50*i
    option_values: np.ndarray  # (top + 1, options), see ``solve_turn``

    @property
    def top(self) -> int:
        return self.rules.target // STEP

    def bank_value(self, total: int) -> float:
        """The mover's win probability after banking `total` (-inf if R8 forbids it)."""
        end = self._bank_end(total)
        return float(self.ends[end, 0]) if end >= 0 else -np.inf

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
        if end < 0:
            raise ValueError(f"banking {total} is not allowed here (R8)")
        return self.ends[end]

    def roll_probabilities(self, total: int, dice: int) -> np.ndarray:
        """Every player's win probability (mover's order) of rolling `dice` dice on with
        turn total `total`, the mover playing this plan (see ``probabilities``)."""
        return self.probabilities[min(total // STEP, len(self.W) - 1), dice]

    def _bank_end(self, total: int) -> int:
        if total // STEP < len(self.bank_end):
            return int(self.bank_end[total // STEP])
        # A total this far past the target (a turn that rolled on there) is lost if banked.
        outcome = bank_outcome(self.scores, 0, total, self.rules)
        if outcome.allowed and not outcome.lost:
            raise RuntimeError(f"banking {total} past the target should be lost: {outcome}")
        return PASS_END if outcome.allowed else -1

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
        p[:] = self.ends[PASS_END]
        bust_part = ch.bust[:, None] * self.ends[PASS_END]
        bank_vectors = self.ends[np.maximum(self.bank_end, 0)]
        for i in range(top, -1, -1):
            o = chosen[i]
            vec = np.where(banks[i, o][:, None], bank_vectors[j[i, o]], p[j[i, o], ch.dice_left[o]])
            p[i] = ch.class_matrix_t @ vec + bust_part
        return p


def plan_turn(scores: Sequence[int], rules: Rules, value_fn: ValueFn) -> TurnPlan:
    """Solve the turn of the player to move, from the turn start where the banked
    scores are `scores` (in turn order from the mover), against `value_fn`.

    Each turn end is the engine's: banking 50*i is ``bank_outcome(scores, 0, 50*i)``
    (R8, R9) and leads to a win (the mover's or a gift recipient's: a certain outcome)
    or to the position it leaves with the next player to move; a bust, or banked points
    that nobody receives, leaves the scores as they are (R4, R9). All the positions go
    to `value_fn` in one call."""
    scores = tuple(int(s) for s in scores)
    n = len(scores)
    top = rules.target // STEP
    size = top + 1 + _chance(rules.hold).max_step + 1
    positions = [in_turn_order(scores, 1)]  # after a bust the next player moves
    wins: list[int] = []  # the winner of each winning end
    bank_end = np.full(size, -1)
    kind = np.zeros(size, dtype=int)  # 0: a position (or the bust end), 1: a win
    for i in range(1, size):
        if not can_bank(scores[0], i * STEP, rules):  # R8, as the engine checks it
            continue
        outcome = bank_outcome(scores, 0, i * STEP, rules)
        if outcome.winner is not None:
            kind[i], bank_end[i] = 1, len(wins)
            wins.append(outcome.winner)
        elif outcome.lost:
            bank_end[i] = PASS_END
        else:
            bank_end[i] = len(positions)
            positions.append(in_turn_order(outcome.scores, 1))
    values = np.asarray(value_fn(np.array(positions, dtype=np.int64)), dtype=float)
    if values.shape != (len(positions), n):
        raise ValueError(
            f"the value function returned shape {values.shape} for {len(positions)} "
            f"positions of {n} players; expected ({len(positions)}, {n})"
        )
    # A position's values are in the next player's order: the mover is the last of them.
    ends = np.concatenate([np.roll(values, 1, axis=1), np.eye(n)[wins]])
    bank_end = np.where(kind == 1, bank_end + len(positions), bank_end)
    bank = np.where(bank_end >= 0, ends[bank_end, 0], -np.inf)
    w, option_values = solve_turn(float(ends[PASS_END, 0]), bank, rules.hold, top)
    return TurnPlan(rules, scores, ends, bank_end, bank, w, option_values)


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
