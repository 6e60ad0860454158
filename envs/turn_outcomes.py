"""Where the turns of a fixed policy lead, exactly: every turn end with its probability.

A scripted bot's turn is a known dice process with known choices: from a turn start,
its decision at every (turn total, dice left, roll) is fixed, so the chance of each way
the turn can end (a bust, banking 50*i: a win, bumps, a gift, lost points, R4-R9) can be
computed exactly instead of sampled. ``turn_ends`` does it for many turn starts at
once: level by level of the turn total (every hold scores, R2, so the total only grows)
it asks the policy, in one batched call (``fivethousand_rl.envs.batch.decide``), for its decision at
every (turn start, dice left, roll) that the turn can reach with some chance, and pushes
those chances forward. Banking is the engine's own ``bank_batch``.

The policy must be deterministic (its choices may not depend on the random generator),
or say how it chooses: a policy with ``action_probabilities(games, idx)`` (a (k, 64)
array: each legal action's chance) is followed along every branch (``random`` is).

The result lists the next turn-start positions (scores in turn order from the next
player, as ``envs.turn_planner`` takes them) with their probabilities, and the chance
that the turn ends the game (a win by the mover, or by the receiver of a gift), player
by player: ``TurnEnds`` for many turn starts, ``TurnOutcomes`` for one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from fivethousand_rl.envs.batch import (
    ROLL_ID,
    BatchGames,
    bank_batch,
    bank_table,
    decide,
    is_batched,
    move_tables,
)
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import BANK_BIT, NUM_DICE, ROLL_INFO, Rules, roll_probabilities
from fivethousand_rl.envs.solver import STEP, option_tables, turn_levels


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
class TurnEnds:
    """The ends of the turns from many turn starts, laid out row by row: start b's
    ends are rows ``offsets[b]:offsets[b + 1]`` of `positions` and `probs`."""

    starts: np.ndarray  # (B, N): the turn starts, each in turn order from its mover
    offsets: np.ndarray  # (B + 1,)
    positions: np.ndarray  # (M, N): next turn starts, in turn order from the next player
    probs: np.ndarray  # (M,): the chance of each
    wins: np.ndarray  # (B, N): the chance that player (mover's order) wins in the turn

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, b: int) -> TurnOutcomes:
        rows = slice(self.offsets[b], self.offsets[b + 1])
        scores = tuple(int(s) for s in self.starts[b])
        return TurnOutcomes(scores, self.positions[rows], self.probs[rows], self.wins[b])

    @classmethod
    def concat(cls, parts: Sequence[TurnEnds]) -> TurnEnds:
        """The ends of every part's turn starts, one part after the other."""
        shift = np.cumsum([0] + [len(part.probs) for part in parts[:-1]])
        offsets = [part.offsets[:-1] + s for part, s in zip(parts, shift, strict=True)]
        return cls(
            np.concatenate([part.starts for part in parts]),
            np.concatenate([*offsets, [sum(len(part.probs) for part in parts)]]),
            np.concatenate([part.positions for part in parts]),
            np.concatenate([part.probs for part in parts]),
            np.concatenate([part.wins for part in parts]),
        )

    @property
    def start_of_row(self) -> np.ndarray:
        """(M,): the turn start each row of `positions` is an end of."""
        return np.repeat(np.arange(len(self.starts)), np.diff(self.offsets))


@dataclass(frozen=True)
class _Rolls:
    """Every scoring roll of 1 to 5 dice, by number of dice: its roll id, dice count and
    probability (the chance that k dice score nothing is ``option_tables(hold).bust[k]``,
    R4); rolls of k dice are rows ``first[k]:first[k] + count[k]``."""

    ids: np.ndarray
    dice: np.ndarray
    probs: np.ndarray
    first: np.ndarray  # (6,)
    count: np.ndarray  # (6,)


@cache
def _rolls() -> _Rolls:
    ids, dice, probs = [], [], []
    for k in range(1, NUM_DICE + 1):
        for roll, p in roll_probabilities(k):
            if not ROLL_INFO[roll].bust:
                ids.append(ROLL_ID[roll])
                dice.append(k)
                probs.append(p)
    dice_arr = np.array(dice)
    count = np.bincount(dice_arr, minlength=NUM_DICE + 1)
    first = np.concatenate([[0], np.cumsum(count)[:-1]])
    return _Rolls(np.array(ids), dice_arr, np.array(probs), first, count)


Choices = tuple[np.ndarray, np.ndarray, np.ndarray]  # (row, action, chance) of each choice

# Turn starts followed together for a policy that decides one game at a time (``act``
# only): its decisions cost far more than the arrays around them, so smaller chunks cost
# nothing and let a progress bar move every second or so.
PER_DECISION_CHUNK = 32


def turn_chunk(policy: Policy, chunk: int) -> int:
    """How many turn starts to follow at once for `policy`: `chunk`, or fewer for a
    policy that decides one game at a time (``PER_DECISION_CHUNK``)."""
    batched = is_batched(policy) or callable(getattr(policy, "action_probabilities", None))
    return chunk if batched else min(chunk, PER_DECISION_CHUNK)


def _choices(policy: Policy, games: BatchGames) -> Choices:
    """What `policy` does in every game of `games`: (row, action, its chance). A
    deterministic policy is not asked where only one action is legal (about a fifth of
    the decisions of a turn): its answer there is known."""
    idx = np.arange(games.n_games)
    chances = getattr(policy, "action_probabilities", None)
    if callable(chances):
        p = np.asarray(chances(games, idx))
        rows, actions = np.nonzero(p)
        if not games.are_legal(rows, actions).all():
            raise ValueError(f"{policy.name} gave a chance to an illegal action")
        return rows, actions, p[rows, actions]
    key = games.decision_key(idx)
    actions = games.decisions.legal[key, 0]  # the only legal action, where it is forced
    asked = idx[games.decisions.n_legal[key] > 1]
    if asked.size:
        actions[asked] = decide(policy, games, asked, np.random.default_rng(0))
    return idx, actions, np.ones(len(idx))


def turn_ends(
    policy: Policy,
    starts: np.ndarray | Sequence[Sequence[int]],
    rules: Rules,
    chunk: int = 2048,
    progress: Callable[[int], None] | None = None,
) -> TurnEnds:
    """The exact ends of the turns that `policy` plays from each turn start of `starts`
    ((B, N) banked scores, each in turn order from its mover).

    The policy's choices are followed for `chunk` turn starts at a time (fewer for a
    policy without ``act_batch``: ``turn_chunk``; ``progress`` is told how many starts
    each chunk covers). A policy whose choices depend on the
    scores through less than all of them says so with ``turn_view`` (see
    ``view_keys``): its turn is then followed once per distinct view, and only where
    it ends is worked out per start."""
    starts = np.asarray(starts, dtype=np.int64).reshape(len(starts), -1)
    chunk = turn_chunk(policy, chunk)
    size = turn_levels(rules)
    live = live_levels(starts, rules)
    keys = view_keys(policy, starts, rules, live)
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    banked = np.zeros((len(first), size + _max_step(rules)))
    passed = np.zeros(len(first))
    starts_of_view = np.bincount(inverse, minlength=len(first))  # for the progress
    for lo in range(0, len(first), chunk):
        part = first[lo : lo + chunk]
        banked[lo : lo + chunk], passed[lo : lo + chunk] = _masses(
            policy, starts[part], live[part], rules
        )
        if progress is not None:
            progress(int(starts_of_view[lo : lo + len(part)].sum()))
    parts = [
        _ends(
            starts[lo : lo + chunk],
            banked[inverse[lo : lo + chunk]],
            passed[inverse[lo : lo + chunk]],
            rules,
        )
        for lo in range(0, len(starts), chunk)
    ]
    return _join(starts, parts)


def view_keys(policy: Policy, starts: np.ndarray, rules: Rules, live: np.ndarray) -> np.ndarray:
    """(B, k) integers: turn starts with equal rows are played alike by `policy`, move
    for move. A policy may define ``turn_view(starts, rules)``, the part of the scores
    (in the mover's order) that its choices depend on (e.g. its own score alone); by
    default the whole start. The live level (``live_levels``) is part of the key, since
    where the turn stops mattering differs between starts of the same view."""
    view = getattr(policy, "turn_view", None)
    keys = np.asarray(view(starts, rules)) if callable(view) else starts
    return np.column_stack([keys.reshape(len(starts), -1), live])


def turn_outcomes(policy: Policy, scores: Sequence[int], rules: Rules) -> TurnOutcomes:
    """The exact ends of the turn that `policy` plays from the turn start `scores` (in
    turn order from the mover)."""
    return turn_ends(policy, [tuple(int(s) for s in scores)], rules)[0]


def _max_step(rules: Rules) -> int:
    return int(option_tables(rules.hold).steps.max())


def _masses(policy: Policy, starts: np.ndarray, live: np.ndarray, rules: Rules):
    """How the turns of `policy` from `starts` end: (banked[b, i], passed[b]), the chance
    of banking 50*i and of ending without banking (a bust, or past the live level)."""
    n_starts, n = starts.shape
    rolls = _rolls()
    options = option_tables(rules.hold)
    size = turn_levels(rules)
    tables = move_tables(rules.hold)
    mass = np.zeros((n_starts, size, NUM_DICE + 1))  # before rolling k dice at level i
    mass[:, 0, NUM_DICE] = 1.0
    banked = np.zeros((n_starts, size + _max_step(rules)))  # banking 50*i
    passed = np.zeros(n_starts)  # a bust, or past the live level
    for i in range(size):
        start, k = np.nonzero(mass[:, i, 1:])
        if not start.size:
            continue
        k += 1
        m = mass[start, i, k]
        passed += np.bincount(start, m * options.bust[k], minlength=n_starts)
        # One row per (start, dice, scoring roll of that many dice) reached at this level.
        counts = rolls.count[k]
        pair = np.repeat(np.arange(start.size), counts)
        roll = (
            rolls.first[k][pair]
            + np.arange(pair.size)
            - np.repeat(np.cumsum(counts) - counts, counts)
        )
        games = BatchGames(pair.size, n, rules)
        games.scores[:] = starts[start[pair]]
        games.turn_total[:] = i * STEP
        games.dice_left[:] = k[pair]
        games.roll[:] = rolls.ids[roll]
        row, action, chance = _choices(policy, games)
        p = m[pair[row]] * rolls.probs[roll[row]] * chance
        roll_id, hold = games.roll[row], action & (BANK_BIT - 1)
        to_level = i + tables.points[roll_id, hold] // STEP
        to_dice = tables.dice_left[roll_id, hold]
        who = start[pair[row]]
        banks = action >= BANK_BIT
        np.add.at(banked, (who[banks], to_level[banks]), p[banks])
        on = ~banks & (to_level <= live[who])
        np.add.at(mass, (who[on], to_level[on], to_dice[on]), p[on])
        off = ~banks & ~on
        passed += np.bincount(who[off], p[off], minlength=n_starts)
    return banked, passed


def _ends(starts: np.ndarray, banked: np.ndarray, passed: np.ndarray, rules: Rules):
    """Where the turns from `starts` lead, given how they end (``_masses``): (start of
    each end, end positions, probs, wins)."""
    n_starts, n = starts.shape
    wins = np.zeros((n_starts, n))
    who, level = np.nonzero(banked)
    p = banked[who, level]
    out = bank_batch(starts[who], np.zeros(who.size, dtype=np.int64), level * STEP, rules)
    won = out.winner >= 0
    np.add.at(wins, (who[won], out.winner[won]), p[won])
    # A bump, a gift or a lost total: the scores after it, the next player first.
    ends_of = np.concatenate([who[~won], np.arange(n_starts)])
    ends = np.concatenate([out.scores[~won], starts])  # a bust leaves the scores as they were
    probs = np.concatenate([p[~won], passed])
    return ends_of, np.roll(ends, -1, axis=1), probs, wins


def live_levels(starts: np.ndarray, rules: Rules) -> np.ndarray:
    """Per turn start ((B, N), mover's order), the last turn-total level at which
    banking can do anything but end the turn as a bust does: past it every bank is
    forbidden (R8) or its points are lost (R9), and the total only grows, so every end
    of the turn from there is the bust's, whatever is chosen; the policy is not asked."""
    table = bank_table(rules)
    size = turn_levels(rules)
    levels = np.arange(size)
    totals = levels * STEP
    entered = (starts[:, 0] > 0).astype(np.int64)
    allowed = table.allowed[entered[:, None], table.index(totals)[None, :]]
    allowed &= totals <= rules.target  # more than the target overshoots anyone (R9)
    who, level = np.nonzero(allowed)
    out = bank_batch(starts[who], np.zeros(who.size, dtype=np.int64), totals[level], rules)
    useful = np.zeros(allowed.shape, dtype=bool)
    useful[who, level] = ~out.lost
    return np.where(useful.any(axis=1), size - 1 - np.argmax(useful[:, ::-1], axis=1), 0)


def _join(starts: np.ndarray, parts: list) -> TurnEnds:
    """One ``TurnEnds`` from the chunks' parts: equal ends of a start merged, in order."""
    shift = np.cumsum([0] + [len(w) for *_, w in parts])
    of = np.concatenate([e + s for (e, *_), s in zip(parts, shift, strict=False)])
    ends = np.concatenate([part[1] for part in parts])
    probs = np.concatenate([part[2] for part in parts])
    wins = np.concatenate([part[3] for part in parts])
    keys, inverse = np.unique(np.column_stack([of, ends]), axis=0, return_inverse=True)
    merged = np.bincount(inverse.ravel(), probs, minlength=len(keys))
    keep = merged > 0
    keys, merged = keys[keep], merged[keep]
    offsets = np.searchsorted(keys[:, 0], np.arange(len(starts) + 1))
    return TurnEnds(starts, offsets, keys[:, 1:], merged, wins)
