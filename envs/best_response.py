"""The best response to fixed players: the most that any player can win against them.

With the policies of every other seat fixed, 5000 is a game of one player against dice
that obey known rules: each fixed player's turn is a known dice process with known
choices (``fivethousand_rl.envs.turn_outcomes.turn_ends``: every end with its probability), and the
remaining player (the *responder*) plans each of its turns exactly against the values
of the positions where its turn can end (the solver's recursion, ``envs.solver``). The
best response is the value of that Markov decision process, found exactly here, and
with 2 players it measures how exploitable the fixed policy is.

Terms. The responder sits at index 0 of the table and the fixed players ("bots") follow
it in turn order: ``bots[0]`` right after it. A *state* is a turn start: the banked
scores in turn order from the player to move (each on the rules' grid,
``Rules.banked_scores``) and who moves, by table index (0: the responder). Values are
every player's win probability, in the mover's turn order.

Solve. The highest banked score never drops (banking raises the banker, a bump only
hits a player on the banker's new score, a gift raises its receiver, R9), so states
are solved in blocks of equal highest score, from the top down, as the 2-player solver
does. Inside a block, policy iteration: the responder's best turn for the current
values (``turn_values``), where that turn ends (``end_masses``), the exact value of that
play and of the bots' fixed play (a linear system, solved by iterating it: the game
leaves the block or ends with a chance that bounds the error), until the responder's
values change by less than `tol`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from fivethousand_rl.envs.batch import bank_batch
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import NUM_DICE, Rules, can_bank
from fivethousand_rl.envs.solver import (
    LOSE,
    NOT_ALLOWED,
    OTHER,
    PASS,
    STEP,
    WIN,
    end_masses,
    live_levels,
    option_tables,
    turn_levels,
    turn_values,
)
from fivethousand_rl.envs.turn_outcomes import TurnEnds, turn_ends

# What banking a turn total does for the responder (see ``bank_ends``): the solver's
# kinds, a gift landing another player on the target (the solver's LOSE) included.
GIFT_WIN = LOSE


@dataclass(frozen=True)
class ScoreSpace:
    """Every turn start of an N-player game under `rules`, numbered: position p (N
    scores on the grid) is ``index(p)``, its digits base ``len(scores)``."""

    rules: Rules
    n_players: int

    @property
    def scores(self) -> np.ndarray:
        return np.array(self.rules.banked_scores())

    @property
    def size(self) -> int:
        return len(self.scores) ** self.n_players

    def positions(self) -> np.ndarray:
        """(size, N): every position, in index order."""
        grid = self.scores
        return np.array(list(itertools.product(grid, repeat=self.n_players)), dtype=np.int64)

    def index(self, positions: np.ndarray) -> np.ndarray:
        """Each position's index; ValueError for a score off the grid."""
        positions = np.asarray(positions, dtype=np.int64)
        grid = self.scores
        digits = np.minimum(np.searchsorted(grid, positions), len(grid) - 1)
        if not np.array_equal(grid[digits], positions):
            raise ValueError(f"not turn-start scores under {self.rules}: {positions.tolist()}")
        return np.ravel_multi_index(tuple(digits.T), (len(grid),) * self.n_players)

    def blocks(self, positions: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """`positions` (``positions()``) by their highest score, from the top: (that
        score, their indices). A turn never lowers the highest score (R9), so the turns
        of a block lead only to it and to the blocks before it."""
        high = np.max(np.searchsorted(self.scores, positions), axis=1)
        return [
            (int(s), np.flatnonzero(high == m)) for m, s in reversed(list(enumerate(self.scores)))
        ]


@dataclass
class BestResponse:
    """The exact best response at a table of fixed players.

    ``values[j, i]``: every player's win probability (mover's order) at the turn start
    ``space.positions()[i]`` (mover's order) when table index j moves (0: the
    responder, playing its best response; j > 0: ``bots[j - 1]``)."""

    rules: Rules
    bots: tuple[str, ...]
    values: np.ndarray  # (N, positions, N)

    @property
    def n_players(self) -> int:
        return len(self.bots) + 1

    @property
    def space(self) -> ScoreSpace:
        return ScoreSpace(self.rules, self.n_players)

    def seat_values(self) -> np.ndarray:
        """The responder's win probability from the start of a game, by its seat s (s
        players move before it, the table's order kept: the first mover is then the
        bot at table index N - s, and the responder is at index s of its order)."""
        n = self.n_players
        start = int(self.space.index(np.zeros((1, n), dtype=np.int64))[0])
        return np.array([self.values[(n - s) % n, start, s] for s in range(n)])

    def value_fn(self) -> Callable[[np.ndarray], np.ndarray]:
        """The responder's ``ValueFn`` (``envs.turn_planner``): the values of the turn
        starts after its own turn, where ``bots[0]`` moves (positions in its order)."""
        space, after = self.space, self.values[1 % self.n_players]

        def values(positions: np.ndarray) -> np.ndarray:
            positions = np.asarray(positions)
            if positions.ndim != 2 or positions.shape[1] != self.n_players:
                raise ValueError(
                    f"this best response values positions of {self.n_players} players, got "
                    f"shape {positions.shape}"
                )
            return after[space.index(positions)]

        return values


def solve_best_response(
    bots: Sequence[Policy],
    rules: Rules,
    tol: float = 1e-12,
    progress: Callable[[str, int, int], None] | None = None,
    ends: Sequence[TurnEnds] | None = None,
) -> BestResponse:
    """The exact best response to `bots` (the fixed players after the responder, in
    turn order) under `rules`: each state's values to within `tol` of the fixed point.
    `progress(stage, done, total)` is told how far each stage is; `ends`, if given, are
    the bots' ``turn_ends`` from every position (computed here otherwise)."""
    n = len(bots) + 1
    space = ScoreSpace(rules, n)
    positions = space.positions()
    if ends is None:
        ends = [
            turn_ends(
                bot,
                positions,
                rules,
                progress=_counter(progress, f"turns of {bot.name}", len(positions)),
            )
            for bot in bots
        ]
    moves = [_BotMoves.of(e, space, j + 1) for j, e in enumerate(ends)]
    values = np.zeros((n, space.size, n))
    size = turn_levels(rules)
    blocks = space.blocks(positions)
    for done, (_, states) in enumerate(blocks):
        _solve_block(states, positions, space, moves, values, rules, size, tol)
        if progress is not None:
            progress("blocks", done + 1, len(blocks))
    names = tuple(getattr(bot, "name", type(bot).__name__) for bot in bots)
    return BestResponse(rules, names, values)


def _counter(progress, stage: str, total: int) -> Callable[[int], None] | None:
    if progress is None:
        return None
    done = [0]

    def step(k: int) -> None:
        done[0] += k
        progress(stage, done[0], total)

    return step


@dataclass(frozen=True)
class _BotMoves:
    """A bot's turn ends as a sparse matrix: from state src (its mover's order) to the
    next mover's state dst with chance p; wins[src]: who wins during the turn."""

    table_index: int
    src: np.ndarray
    dst: np.ndarray
    p: np.ndarray
    wins: np.ndarray

    @classmethod
    def of(cls, ends: TurnEnds, space: ScoreSpace, table_index: int) -> _BotMoves:
        """From a bot's turn ends from every position (in any order)."""
        where = space.index(ends.starts)
        if not np.array_equal(np.sort(where), np.arange(space.size)):
            raise ValueError("the turn ends must come from every position, once each")
        wins = np.empty((space.size, space.n_players))
        wins[where] = ends.wins
        src = where[ends.start_of_row]
        return cls(table_index, src, space.index(ends.positions), ends.probs, wins)


def _solve_block(states, positions, space, moves, values, rules, size, tol) -> None:
    """Solve the states `states` (one block: equal highest score) of every mover, the
    blocks above solved already (in `values`)."""
    n = space.n_players
    local = np.full(space.size, -1)
    # The responder's states sorted by their live levels, most first (``turn_values``).
    kind, dst = bank_ends(positions[states], space, rules, size)
    live = live_levels(kind)
    order = np.argsort(-live, kind="stable")
    states, kind, dst, live = states[order], kind[order], dst[order], live[order]
    local[states] = np.arange(len(states))
    b = len(states)

    # The bots' turns: inside the block (sparse), and a constant from the blocks above.
    inside, constant = {}, {}
    for bot in moves:
        rows = np.flatnonzero(local[bot.src] >= 0)
        src, dst_b, p = local[bot.src[rows]], bot.dst[rows], bot.p[rows]
        nxt = (bot.table_index + 1) % n
        within = local[dst_b] >= 0
        outside = np.zeros((b, n))
        for c in range(n):
            outside[:, c] = np.bincount(
                src[~within], p[~within] * values[nxt, dst_b[~within], c], minlength=b
            )
        constant[bot.table_index] = np.roll(outside, 1, axis=1) + bot.wins[states]
        inside[bot.table_index] = (src[within], local[dst_b[within]], p[within])

    def bots_from(responder: np.ndarray) -> dict[int, np.ndarray]:
        """Every bot's values in the block, given the responder's (the last bot moves
        before the responder, and so on back to the first)."""
        out = {0: responder}
        for j in range(n - 1, 0, -1):
            src, dst_l, p = inside[j]
            following = out[(j + 1) % n]
            after = np.stack(
                [np.bincount(src, p * following[dst_l, c], minlength=b) for c in range(n)], axis=1
            )
            out[j] = constant[j] + np.roll(after, 1, axis=1)
        return out

    bust = after_bust(positions[states], space)
    tab = option_tables(rules.hold)
    top = rules.target // STEP
    mover = 1 % n  # who moves after the responder: the responder's value is its last column
    responder = np.full((b, n), 1.0 / n)
    for _ in range(1000):
        first_bot = bots_from(responder)[mover]

        def own(flat: np.ndarray, first_bot=first_bot) -> np.ndarray:
            """The responder's value at states where the first bot moves."""
            where = local[flat]
            known = values[mover, flat, n - 1]
            return np.where(where >= 0, first_bot[np.maximum(where, 0), n - 1], known)

        pass_value = own(bust)
        bank = np.where(kind == WIN, 1.0, 0.0)
        bank = np.where(kind == OTHER, own(dst), bank)
        bank = np.where(kind == PASS, pass_value[:, None], bank)
        bank = np.where(kind == NOT_ALLOWED, -np.inf, bank)
        w, z = turn_values(pass_value, bank, tab, top, live)
        best = w[0, NUM_DICE]
        if np.max(np.abs(best - responder[:, 0])) < tol:
            break
        passed, banked = end_masses(w, z, bank, tab, live)
        responder = _evaluate(
            passed, banked, kind, dst, bust, local, values, mover, bots_from, responder, tol
        )
    else:
        raise RuntimeError(f"the best response did not settle under {rules}")
    for j, v in bots_from(responder).items():
        values[j, states] = v


def _evaluate(passed, banked, kind, dst, bust, local, values, mover, bots_from, guess, tol):
    """The responder's values (every player's) under its play (`passed`, `banked`: where
    its turns end) and the bots', by iterating the linear equations from `guess`."""
    b, n = guess.shape
    level, state = np.nonzero(banked)  # banked is (levels, states)
    p = banked[level, state]
    k = kind[state, level]
    wins = np.zeros((b, n))
    # a win, or a gift that lands its receiver on the target (dst: the winner's index)
    won = (k == WIN) | (k == GIFT_WIN)
    winner = np.where(k == WIN, 0, dst[state, level])
    np.add.at(wins, (state[won], winner[won]), p[won])
    to = np.where(k == PASS, bust[state], dst[state, level])
    moving = (k == PASS) | (k == OTHER)
    src = np.concatenate([np.arange(b), state[moving]])
    to = np.concatenate([bust, to[moving]])
    p = np.concatenate([passed, p[moving]])
    within = local[to] >= 0
    outside = np.stack(
        [
            np.bincount(src[~within], p[~within] * values[mover, to[~within], c], minlength=b)
            for c in range(n)
        ],
        axis=1,
    )
    constant = wins + np.roll(outside, 1, axis=1)
    src, to, p = src[within], local[to[within]], p[within]
    responder = guess
    for _ in range(1_000_000):
        first_bot = bots_from(responder)[mover]
        after = np.stack(
            [np.bincount(src, p * first_bot[to, c], minlength=b) for c in range(n)], axis=1
        )
        new = constant + np.roll(after, 1, axis=1)
        change = np.max(np.abs(new - responder))
        responder = new
        if change < tol * 1e-3:
            return responder
    raise RuntimeError("the evaluation of the best response did not settle")


def after_bust(positions: np.ndarray, space: ScoreSpace) -> np.ndarray:
    """The state after a turn that banks nothing: the same scores, the next player's
    order."""
    return space.index(np.roll(positions, -1, axis=1))


def bank_ends(positions: np.ndarray, space: ScoreSpace, rules: Rules, size: int):
    """What banking each turn total 50*i (i < `size`) does from each position (the
    responder moving): (kind, dst), each (positions, size). kind: NOT_ALLOWED (R8),
    WIN, GIFT_WIN (a gift lands another player on the target: dst is that player's
    index), PASS (points lost, or a total past the target) or OTHER (dst: the state
    where the next player moves). R9 and its switches are the engine's ``bank_batch``."""
    b, n = positions.shape
    totals = np.arange(size) * STEP
    grid = space.scores
    allowed_by_score = np.array([[can_bank(int(s), int(t), rules) for t in totals] for s in grid])
    own = np.searchsorted(grid, positions[:, 0])
    allowed = allowed_by_score[own] & (totals <= rules.target)
    kind = np.where(totals <= rules.target, NOT_ALLOWED, PASS) * np.ones((b, 1), dtype=np.int64)
    dst = np.zeros((b, size), dtype=np.int64)
    s, i = np.nonzero(allowed)
    out = bank_batch(positions[s], np.zeros(s.size, dtype=np.int64), totals[i], rules)
    k = np.select([out.winner == 0, out.winner > 0, out.lost], [WIN, GIFT_WIN, PASS], OTHER)
    kind[s, i] = k
    dst[s[k == GIFT_WIN], i[k == GIFT_WIN]] = out.winner[k == GIFT_WIN]
    other = k == OTHER
    dst[s[other], i[other]] = space.index(np.roll(out.scores[other], -1, axis=1))
    return kind, dst
