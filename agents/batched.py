"""The scripted bots and the optimal player, deciding for many games at once.

Each class here is its per-game bot (``agents.scripted``, ``agents.optimal``) plus the
batched side of the policy interface, ``act_batch(games, idx, rng)`` (see
``fivethousand_rl.envs.batch``): the same decisions, made for a whole batch by table lookups. The
per-game ``act`` is inherited unchanged, so a batched bot plays anywhere its per-game
bot does. ``tests/test_vector_env.py`` checks every deterministic bot's batched choice
against its per-game choice on the same positions.

``batched(policy)`` gives the batched twin of a bot (or the policy itself when it has
none); ``fivethousand_rl.agents.make_policy(name)`` builds one by name.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

import numpy as np

from fivethousand_rl.agents.optimal import OptimalBot, remember
from fivethousand_rl.agents.scripted import RandomBot, SmartBot, ThresholdBot, TurnEVBot
from fivethousand_rl.envs.batch import (
    HOLD_ACTIONS,
    BatchGames,
    BatchPolicy,
    bank_batch,
    bank_table,
    decision_tables,
    move_tables,
)
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import BANK_BIT, NUM_ACTIONS, NUM_DICE, Rules
from fivethousand_rl.envs.solver import STEP, TwoPlayerSolution, turn_ev_table


def _first(a: np.ndarray) -> np.ndarray:
    """Per row, the index of the first True (0 if none), or the first action of the
    highest value (a strict ``>`` scan in action order, as the per-game bots do)."""
    return a.argmax(axis=1)


def _max_key(mask: np.ndarray, key: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """Per row, the column with the largest (key, action) among `mask`'s, `actions`
    being each column's action: Python's ``max([(key, action), ...])[1]``."""
    return np.where(mask, key * NUM_ACTIONS + actions, -1).argmax(axis=1)


class BatchedRandomBot(RandomBot):
    """``random``, batched: uniform among each game's legal actions."""

    def act_batch(self, games: BatchGames, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        key = games.decision_key(idx)
        table = games.decisions
        pick = (rng.random(len(idx)) * table.n_legal[key]).astype(np.int64)
        return table.legal[key, pick]

    def action_probabilities(self, games: BatchGames, idx: np.ndarray) -> np.ndarray:
        """(len(idx), 64): the chance of each action, uniform among the legal ones (what
        ``fivethousand_rl.envs.turn_outcomes`` follows along every branch)."""
        mask = games.legal_mask(idx)
        return mask / np.maximum(mask.sum(axis=1, keepdims=True), 1)


class BatchedThresholdBot(ThresholdBot):
    """``threshold:T``, batched: hold the best reading, bank from T or on the target."""

    def act_batch(self, games: BatchGames, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        roll = games.roll[idx]
        total = games.turn_total[idx] + games.tables.best_points[roll]
        banked = games.scores[idx, games.current[idx]]
        bank = games.may_bank(banked > 0, total) & (
            (total >= self.threshold) | (banked + total == games.rules.target)
        )
        return games.tables.best_bits[roll] | np.where(bank, BANK_BIT, 0)


class _TurnTables(NamedTuple):
    """Lookups that make ``turn-ev`` and most of ``smart`` a few gathers per decision.

    A banking hold that lands the banker exactly on the target, or exactly on another
    seat's score (a bump), is found by its points: ``first_with`` / ``last_with`` [roll,
    points // 50] give the smallest / largest banking action holding exactly those
    points (-1: none); whether that total may be banked (R8) is ``BatchGames.may_bank``'s.
    ``best`` is turn-ev's choice (most expected turn points, first of equals) for every
    roll, entered flag and turn total below ``levels * 50``; ``max_points`` the most a
    legal hold of the roll scores."""

    first_with: np.ndarray
    last_with: np.ndarray
    max_points: np.ndarray
    best: np.ndarray  # flat (roll, entered, turn total // 50)
    levels: int

    def bank_with(
        self, table: np.ndarray, roll: np.ndarray, points: np.ndarray, allowed: np.ndarray
    ) -> np.ndarray:
        """`table`'s banking action holding exactly `points` from `roll`, or -1 (also
        where `allowed`, whether R8 lets the total it makes be banked, is False)."""
        level = points // STEP
        inside = (points > 0) & (level < table.shape[1]) & allowed
        return np.where(inside, table[roll, np.where(inside, level, 0)], -1)

    def turn_ev_choice(self, roll: np.ndarray, entered: np.ndarray, total: np.ndarray):
        """turn-ev's choice without the exact win, for totals inside the table."""
        return self.best[(roll * 2 + entered) * self.levels + total // STEP]


@cache
def _turn_tables(rules: Rules, levels: int = 100) -> _TurnTables:
    moves = move_tables(rules.hold)
    decisions = decision_tables(rules)
    ev = turn_ev_table(rules)
    ids = len(moves.points)
    width = int(moves.points.max()) // STEP + 1
    first_with, last_with = (np.full((ids, width), -1, dtype=np.int64) for _ in range(2))
    for bits in range(HOLD_ACTIONS - 1, -1, -1):  # descending: the smallest action last
        rows = np.flatnonzero(moves.legal[:, bits])
        first_with[rows, moves.points[rows, bits] // STEP] = bits | BANK_BIT
    for bits in range(HOLD_ACTIONS):  # ascending: the largest action last
        rows = np.flatnonzero(moves.legal[:, bits])
        last_with[rows, moves.points[rows, bits] // STEP] = bits | BANK_BIT
    best = np.zeros((ids, 2, levels), dtype=np.int64)
    roll = np.arange(ids)
    for entered in (0, 1):
        for level in range(levels):
            totals = level * STEP + moves.points
            rolled = ev.value[entered, np.minimum(totals, ev.cap) // STEP, moves.dice_left]
            key = decisions.key(roll, np.full(ids, entered), np.full(ids, level * STEP))
            values = np.where(
                decisions.mask[key], np.concatenate([rolled, totals], axis=1), -np.inf
            )
            best[:, entered, level] = values.argmax(axis=1)
    max_points = np.where(moves.legal, moves.points, 0).max(axis=1)
    return _TurnTables(first_with, last_with, max_points, best.ravel(), levels)


class BatchedTurnEVBot(TurnEVBot):
    """``turn-ev``, batched: an exact win, else the most expected points this turn."""

    def act_batch(self, games: BatchGames, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        tab = _turn_tables(games.rules)
        roll, total = games.roll[idx], games.turn_total[idx]
        own = games.scores[idx, games.current[idx]]
        inside = total < tab.levels * STEP
        out = np.empty(len(idx), dtype=np.int64)
        r, t, o = roll[inside], total[inside], own[inside]
        target = games.rules.target
        win = tab.bank_with(tab.first_with, r, target - o - t, games.may_bank(o > 0, target - o))
        out[inside] = np.where(win >= 0, win, tab.turn_ev_choice(r, (o > 0).astype(np.int64), t))
        if not inside.all():  # a turn total past the table: the full computation
            out[~inside] = self._act_full(games, idx[~inside])
        return out

    @staticmethod
    def _act_full(games: BatchGames, idx: np.ndarray) -> np.ndarray:
        """An exact win, else the most expected turn points: a bank is worth its total,
        a roll the exact turn EV (``solve_turn_ev``)."""
        mask = games.legal_mask(idx)
        totals, left = games.hold_results(idx)  # (k, 32) each, by hold
        ev = turn_ev_table(games.rules)
        entered = games.entered(idx).astype(np.int64)
        rolled = ev.value[entered[:, None], np.minimum(totals, ev.cap) // STEP, left]
        values = np.where(mask, np.concatenate([rolled, totals.astype(float)], axis=1), -np.inf)
        own = games.scores[idx, games.current[idx]]
        wins = mask[:, BANK_BIT:] & (own[:, None] + totals == games.rules.target)
        return np.where(wins.any(axis=1), _first(wins) | BANK_BIT, _first(values))


class BatchedSmartBot(SmartBot):
    """``smart``, batched: the same order of rules as ``SmartBot.act``."""

    def act_batch(self, games: BatchGames, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        # Far from the target (every hold stays ENDGAME short of it), smart is turn-ev
        # unless a bank bumps somebody: two lookups. Elsewhere, the full rules.
        tab = _turn_tables(games.rules)
        k = len(idx)
        roll, total = games.roll[idx], games.turn_total[idx]
        current = games.current[idx]
        scores = games.scores[idx]
        own = scores[np.arange(k), current]
        need = games.rules.target - own - total
        simple = (need > tab.max_points[roll] + self.ENDGAME) & (total < tab.levels * STEP)
        out = np.empty(k, dtype=np.int64)
        s = np.flatnonzero(simple)
        gaps = scores[s] - (own[s] + total[s])[:, None]  # a bank of exactly this bumps
        gaps[np.arange(s.size), current[s]] = 0
        if not games.rules.bump:  # V2: landing on a score bumps nobody
            gaps[:] = 0
        landing = np.maximum(scores[s] - own[s, None], 0)  # the turn total a bump banks
        allowed = games.may_bank((own[s] > 0)[:, None], landing)
        bumps = tab.bank_with(tab.last_with, roll[s, None], gaps, allowed)
        biggest = np.where(bumps >= 0, gaps, -1).argmax(axis=1)  # the biggest bump first
        bump = bumps[np.arange(s.size), biggest]
        entered = (own[s] > 0).astype(np.int64)
        out[s] = np.where(bump >= 0, bump, tab.turn_ev_choice(roll[s], entered, total[s]))
        if s.size < k:
            out[~simple] = self._act_full(games, idx[~simple])
        return out

    def _act_full(self, games: BatchGames, idx: np.ndarray) -> np.ndarray:
        # Over each decision's legal actions only (at most 19 of the 64, ascending, so
        # "the first in action order" is the first column): the same rules as ``act``.
        k = len(idx)
        target = games.rules.target
        key = games.decision_key(idx)
        n_legal = games.decisions.n_legal[key]
        width = int(n_legal.max())
        actions = games.decisions.legal[key, :width]
        valid = np.arange(width) < n_legal[:, None]
        roll = games.roll[idx, None]
        hold = actions & (BANK_BIT - 1)
        banks = valid & (actions >= BANK_BIT)
        totals = games.turn_total[idx, None] + games.tables.points[roll, hold]
        left = games.tables.dice_left[roll, hold]
        own = games.scores[idx, games.current[idx]]
        ev = turn_ev_table(games.rules)
        entered = (own > 0).astype(np.int64)[:, None]
        rolled = ev.value[entered, np.minimum(totals, ev.cap) // STEP, left]
        values = np.where(banks, totals, rolled)
        rows, cols = np.nonzero(banks)  # bank_batch of every legal banking action
        g = idx[rows]
        out = bank_batch(games.scores[g], games.current[g], totals[rows, cols], games.rules)
        wins, bumps, lost = (np.zeros((k, width), dtype=bool) for _ in range(3))
        wins[rows, cols] = out.winner == games.current[g]
        bumps[rows, cols] = out.bumped
        lost[rows, cols] = out.lost
        in_range = valid & (own[:, None] + totals < target)
        safe_banks = in_range & banks
        best_safe = np.where(safe_banks, totals, -1).max(axis=1)
        near = safe_banks.any(axis=1) & (target - own - best_safe <= self.ENDGAME)
        # The dead turn (every move overshoots): a lost bank, else the fewest dice.
        rolls = valid & ~banks
        rolls_short = rolls & (left < NUM_DICE)
        fewest = np.where(rolls_short, left * NUM_ACTIONS + actions, 10**9).argmin(axis=1)
        dead = np.select(
            [lost.any(axis=1), rolls_short.any(axis=1)], [_first(lost), fewest], _first(rolls)
        )
        column = np.select(
            [wins.any(axis=1), bumps.any(axis=1), ~in_range.any(axis=1), near],
            [
                _first(wins),
                _max_key(bumps, totals, actions),
                dead,
                _max_key(safe_banks, totals, actions),
            ],
            _first(np.where(in_range, values, -np.inf)),
        )
        return actions[np.arange(k), column]


class BatchedOptimalBot(OptimalBot):
    """``optimal``, batched: the most probable win by the 2-player solution (against
    the leading opponent with 3 or more players, as ``OptimalBot``)."""

    def act_batch(self, games: BatchGames, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return _first(optimal_values(self.solution(games.rules), games, idx))


def optimal_values(sol: TwoPlayerSolution, games: BatchGames, idx: np.ndarray) -> np.ndarray:
    """The win probability of each action (k, 64) in the games `idx` (a decision due in
    each) for the player to move, by the 2-player solution `sol` (against the leading
    opponent with 3 or more players); -inf for illegal actions. ``BatchedOptimalBot``
    takes the best; imitation learning (``agents.training.imitation``) learns them."""
    table = _optimal_table(sol)
    k = len(idx)
    current = games.current[idx]
    scores = games.scores[idx]
    own = scores[np.arange(k), current]
    others = scores.copy()
    others[np.arange(k), current] = -1
    pair = table.score_index(own) * table.pairs + table.score_index(others.max(axis=1))
    totals, left = games.hold_results(idx)
    level = np.minimum(totals // STEP, table.levels - 1)
    cell = pair[:, None] * table.levels + level
    values = np.concatenate(
        [table.roll.take(cell * (NUM_DICE + 1) + left), table.bank.take(cell)], axis=1
    )
    return np.where(games.legal_mask(idx), values, -np.inf)


class _OptimalTable(NamedTuple):
    """The 2-player solution as flat lookups by (own, opponent) pair and turn-total
    level; the last level stands for every total past the target."""

    scores: np.ndarray  # the solution's scores (the rules' grid, ascending)
    pairs: int  # number of scores
    levels: int  # target // 50 + 2
    roll: np.ndarray  # flat (pair, level, dice): win probability of rolling on
    bank: np.ndarray  # flat (pair, level): of banking (-inf where R8 forbids it)

    def score_index(self, scores: np.ndarray) -> np.ndarray:
        """Each banked score's index into ``scores`` (a score on the grid, or the
        target, which stands for the last: a win, valued apart)."""
        return np.minimum(np.searchsorted(self.scores, scores), self.pairs - 1)


_OPTIMAL_TABLES: dict[int, tuple[TwoPlayerSolution, _OptimalTable]] = {}


def _optimal_table(sol: TwoPlayerSolution) -> _OptimalTable:
    """The lookups of `sol` (made once per solution)."""
    known = _OPTIMAL_TABLES.get(id(sol))
    if known is None or known[0] is not sol:
        known = (sol, _make_optimal_table(sol))
    remember(_OPTIMAL_TABLES, id(sol), known)  # as few kept as solutions (agents.optimal)
    return known[1]


def _make_optimal_table(sol: TwoPlayerSolution) -> _OptimalTable:
    """``TwoPlayerSolution.roll_value`` / ``bank_value`` for every pair and turn total,
    banking's outcomes from ``bank_batch`` (R9) valued as the solution does."""
    rules, n = sol.rules, len(sol.scores)
    top = rules.target // STEP
    levels = top + 2
    table = _OptimalTable(np.asarray(sol.scores), n, levels, np.empty(0), np.empty(0))
    ia, ib, level = np.meshgrid(np.arange(n), np.arange(n), np.arange(levels), indexing="ij")
    ia, ib, level = ia.ravel(), ib.ravel(), level.ravel()
    passing = 1.0 - sol.V[ib, ia]  # the turn ends without profit: the opponent's move
    roll = np.empty((len(ia), NUM_DICE + 1))
    inside = level <= top
    roll[inside] = sol.W[ia[inside], ib[inside], level[inside]]
    roll[~inside] = passing[~inside, None]
    own, opp = sol.scores[ia], sol.scores[ib]
    totals = np.minimum(level, top) * STEP
    out = bank_batch(np.stack([own, opp], axis=1), np.zeros(len(ia), dtype=np.int64), totals, rules)
    after = 1.0 - sol.V[table.score_index(out.scores[:, 1]), table.score_index(out.scores[:, 0])]
    bank = np.where(out.winner == 0, 1.0, np.where(out.winner == 1, 0.0, after))
    bank = np.where(out.lost, passing, bank)
    r8 = bank_table(rules)
    allowed = r8.allowed[(own > 0).astype(np.int64), r8.index(totals)]
    bank = np.where(allowed & inside, bank, np.where(inside, -np.inf, passing))
    return table._replace(roll=roll.ravel(), bank=bank)


def batched(policy: Policy) -> Policy:
    """The batched twin of a scripted bot or the optimal player; any other policy (or
    one already batched) is returned as it is."""
    if isinstance(policy, BatchPolicy):
        return policy
    kind = type(policy)
    if kind is ThresholdBot:
        return BatchedThresholdBot(policy.threshold)
    if kind is OptimalBot:
        return BatchedOptimalBot(policy.show_progress)
    twin = {RandomBot: BatchedRandomBot, TurnEVBot: BatchedTurnEVBot, SmartBot: BatchedSmartBot}
    return twin[kind]() if kind in twin else policy
