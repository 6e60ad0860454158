"""Where one turn of a fixed policy leads, exactly: every turn end with its probability.

A scripted bot's turn is a known dice process with known choices: from a turn start,
its decision at every (turn total, dice left, roll) is fixed, so the chance of each way
the turn can end (a bust, banking 50*i: a win, bumps, a gift, lost points, R4-R9) can be
computed exactly instead of sampled. ``turn_outcomes`` asks the policy once for all of
those decisions (one batched call, ``envs.batch``), then pushes the probability of the
turn start forward through them, level by level of the turn total (every hold scores,
R2, so the total only grows). Banking is the engine's own ``bank_outcome``.

The result, ``TurnOutcomes``, lists the next turn-start positions (scores in turn order
from the next player, as ``envs.turn_planner`` takes them) with their probabilities,
and the chance that the turn ends the game (a win by the mover, or by the receiver of a
gift), player by player.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from envs.batch import ROLL_ID, BatchGames, decide, move_tables
from envs.game import bank_outcome, in_turn_order
from envs.policy import Policy
from envs.rules import BANK_BIT, NUM_DICE, ROLL_INFO, Rules, roll_probabilities
from envs.solver import STEP, option_tables


@dataclass(frozen=True)
class TurnOutcomes:
    """The ends of one turn, seen from its mover (seat 0 of `scores`)."""

    scores: tuple[int, ...]  # the turn start, in turn order from the mover
    positions: np.ndarray  # (m, N) int: next turn starts, in turn order from the next player
    probs: np.ndarray  # (m,): the chance of each
    wins: np.ndarray  # (N,): the chance that player (mover's order) wins during the turn

    def value(self, values: np.ndarray) -> np.ndarray:
        """Every player's win probability (mover's order) at the turn start, given
        `values` (m, N): theirs at each next position (that position's order)."""
        after = self.probs @ np.asarray(values)  # next player's order: the mover is last
        return np.roll(after, 1) + self.wins


@dataclass(frozen=True)
class _Rolls:
    """Every scoring roll of 1 to 5 dice: its roll id, dice count and probability (the
    chance that k dice score nothing is ``option_tables(hold).bust[k]``, R4)."""

    ids: np.ndarray
    dice: np.ndarray
    probs: np.ndarray


@cache
def _rolls() -> _Rolls:
    ids, dice, probs = [], [], []
    for k in range(1, NUM_DICE + 1):
        for roll, p in roll_probabilities(k):
            if not ROLL_INFO[roll].bust:
                ids.append(ROLL_ID[roll])
                dice.append(k)
                probs.append(p)
    return _Rolls(np.array(ids), np.array(dice), np.array(probs))


def turn_outcomes(policy: Policy, scores: Sequence[int], rules: Rules) -> TurnOutcomes:
    """The exact ends of the turn that `policy` plays from the turn start `scores` (in
    turn order from the mover). The policy must be deterministic (its choices may not
    depend on the random generator)."""
    scores = tuple(int(s) for s in scores)
    n = len(scores)
    rolls = _rolls()
    # Past this level banking is lost (see ``envs.turn_planner.solve_turn``): such a
    # turn can only end as a bust does, whatever is chosen there.
    options = option_tables(rules.hold)
    size = rules.target // STEP + 1 + int(options.steps.max()) + 1
    levels = np.repeat(np.arange(size), len(rolls.ids))
    games = BatchGames(len(levels), n, rules)
    games.scores[:] = scores
    games.turn_total[:] = levels * STEP
    games.dice_left[:] = np.tile(rolls.dice, size)
    games.roll[:] = np.tile(rolls.ids, size)
    actions = decide(policy, games, np.arange(len(levels)), np.random.default_rng(0))
    actions = actions.reshape(size, len(rolls.ids))
    tables = move_tables(rules.hold)
    holds = actions & (BANK_BIT - 1)
    to_level = np.arange(size)[:, None] + tables.points[rolls.ids, holds] // STEP
    to_dice = tables.dice_left[rolls.ids, holds]
    banks = actions >= BANK_BIT

    mass = np.zeros((size, NUM_DICE + 1))  # before rolling k dice at level i
    mass[0, NUM_DICE] = 1.0
    banked = np.zeros(to_level.max() + 1)  # banking 50*i
    passed = 0.0  # a bust, or past the last level
    for i in range(size):
        for k in range(1, NUM_DICE + 1):
            m = mass[i, k]
            if m == 0.0:
                continue
            passed += m * options.bust[k]
            sel = rolls.dice == k
            p = m * rolls.probs[sel]
            j, b = to_level[i, sel], banks[i, sel]
            np.add.at(banked, j[b], p[b])
            on = ~b & (j < size)
            np.add.at(mass, (j[on], to_dice[i, sel][on]), p[on])
            passed += p[~b & (j >= size)].sum()

    ends: dict[tuple[int, ...], float] = {}
    wins = np.zeros(n)
    for i in np.flatnonzero(banked):
        outcome = bank_outcome(scores, 0, int(i) * STEP, rules)
        if outcome.winner is not None:
            wins[outcome.winner] += banked[i]
        else:  # a bump, a gift or a lost total: the scores after it, next player first
            after = in_turn_order(outcome.scores, 1)
            ends[after] = ends.get(after, 0.0) + banked[i]
    bust = in_turn_order(scores, 1)
    ends[bust] = ends.get(bust, 0.0) + passed
    positions = np.array(list(ends), dtype=np.int64)
    return TurnOutcomes(scores, positions, np.array(list(ends.values())), wins)
