"""Values of N-player 5000 with nobody's play fixed: max-n value iteration, and the
paranoid values that bound what one player can guarantee.

With 2 players the game is zero-sum and ``fivethousand_rl.envs.solver`` solves it exactly. With 3 or
more there is no single "optimal play": each player maximizes its own chance, and a
stationary equilibrium (every player's play a best response to the others', the same
at every visit of a turn start) need not exist in a stochastic game of 3 players
(Flesch, Thuijsman and Vrieze, 1997, "Cyclic Markov equilibria in stochastic games",
International Journal of Game Theory 26: a 3-player example whose equilibria are all
cyclic). This module computes what can be computed:

- ``maxn_value_iteration``: max-n value iteration. All players are alike, so a state is
  a turn start: the banked scores in turn order from the mover (``ScoreSpace``), and
  its values are every player's win probability in that order. One sweep backs up
  every state: the mover plays its best turn against the current values (the exact
  recursion over rolls and holds), and every player's value under that turn is
  pushed back with it (``turn_vectors``). A fixed point would be a stationary
  subgame-perfect equilibrium; the iteration is watched for settling or cycling.
- ``solve_paranoid``: player i's *paranoid* value: every other player minimizes i's
  chance of winning. That is a zero-sum game of i against a coalition, so value
  iteration converges (by blocks of the highest score, as the 2-player solver), and
  its value is what i can guarantee whatever the others do.

Terms as in ``fivethousand_rl.envs.best_response``: values in the mover's order; the state after a
turn is in the next mover's order, where the old mover is the last player, so its
values are rolled by one (``np.roll(v, 1)``) into the old mover's order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from fivethousand_rl.envs.best_response import GIFT_WIN, ScoreSpace, after_bust, bank_ends
from fivethousand_rl.envs.rules import NUM_DICE, Rules
from fivethousand_rl.envs.solver import (
    NOT_ALLOWED,
    OTHER,
    PASS,
    STEP,
    WIN,
    OptionTables,
    live_levels,
    option_rows,
    option_tables,
    turn_levels,
    turn_values,
)

TIES = ("first", "average")


# ------------------------------------------------------------------ turn structure
@dataclass(frozen=True)
class Turns:
    """What every end of the turn does from a set of turn starts (one block, or all).

    ``states``: position indices (``ScoreSpace``), sorted by their live levels, most
    first (as ``turn_values`` needs); ``kind[s, i]``, ``dst[s, i]``: what banking 50*i
    does (``fivethousand_rl.envs.best_response.bank_ends``: WIN, GIFT_WIN with the winner's index,
    PASS, OTHER with the next state, NOT_ALLOWED); ``bust[s]``: the state after a turn
    that banks nothing; ``live[s]``: the last level where anything but passing can
    happen (``fivethousand_rl.envs.solver.live_levels``)."""

    rules: Rules
    states: np.ndarray
    kind: np.ndarray
    dst: np.ndarray
    bust: np.ndarray
    live: np.ndarray

    @classmethod
    def of(cls, space: ScoreSpace, states: np.ndarray, positions: np.ndarray) -> Turns:
        """The turns from `states` (indices into `positions`, ``space.positions()``)."""
        rules = space.rules
        kind, dst = bank_ends(positions[states], space, rules, turn_levels(rules))
        live = live_levels(kind)
        order = np.argsort(-live, kind="stable")
        states = np.asarray(states)[order]
        bust = after_bust(positions[states], space)
        return cls(rules, states, kind[order], dst[order], bust, live[order])

    @property
    def top(self) -> int:
        return self.rules.target // STEP


# ------------------------------------------------------------ max-n: one turn
RANK_BITS = 4  # option ranks (at most 11) kept in the low bits of the mover's values


def turn_vectors(
    pass_vec: np.ndarray,
    bank_vec: np.ndarray,
    allowed: np.ndarray,
    tab: OptionTables,
    top: int,
    live: np.ndarray,
    ties: str = "first",
    eps: float = 0.0,
    choices: np.ndarray | None = None,
) -> np.ndarray:
    """Every player's value (mover's order) of the rest of a turn, for a batch of turn
    starts s, the mover playing its best turn for its own value (column 0).

    `pass_vec[s]` (s, N): the values after a bust, or a total past the target;
    `bank_vec[s, i]` (s, levels, N): after banking 50*i where `allowed[s, i]` (R8; keep
    the values elsewhere finite, they are never chosen); `live` (sorted descending):
    each start's last live level (above it, everything is worth `pass_vec`).

    Returns Q (s, levels, 6, N): ``Q[s, i, k]`` before rolling k = 1..5 dice with turn
    total 50*i; ``Q[s, i, 0]`` (no dice are ever rolled) holds `bank_vec`'s values, so
    that every place a choice can lead to is a row of one array. The mover's choice
    after each roll, among the options of its chance class (hold a set, then bank or
    roll on):

    - ``ties="first"``: the first best option (``option_tables``' order; values equal
      to 2**-48 of themselves tie), rolling on where banking is worth no more:
      ``fivethousand_rl.envs.turn_planner.TurnPlan.probabilities``' rule, so the numbers are the
      planner's;
    - ``ties="average"``: every move (an option then bank, or the option then roll on)
      worth at least the best minus `eps` to the mover, with equal chances: the mover
      is indifferent among them, so none of the others' values is favoured.

    Column 0 of the values is the mover's under that play (with ``"first"``, the best:
    ``turn_values``' W). With ``"first"``, `choices` (levels, classes, s) ints, if
    given, is filled with each roll's choice: at level i after a roll of chance class
    c, where it leads, as the row j*6 + k of Q (the total 50*j, then k dice rolled
    on, or banked for k = 0); -1 where the state is not live."""
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, got {ties!r}")
    s, size, n = bank_vec.shape
    width = NUM_DICE + 1
    live = np.minimum(live, top)
    # State-major: each state's table is one contiguous block, so the gathers below,
    # within a state's own table, stay local in memory.
    q = np.empty((s, size, width, n))
    q[:] = pass_vec[:, None, None, :]
    q[:, :, 0] = bank_vec
    flat_q = q.reshape(s, size * width, n)
    rows_q = q.reshape(s * size * width, n)
    bank_own = np.where(allowed, bank_vec[..., 0], -np.inf)  # (s, levels)
    # Where landing on (level i, k dice left) leads, as a row of `rows_q` (state s's
    # row i*6 + k to roll on, i*6 to bank: rolling on where banking is worth no more),
    # and what that is worth to the mover, kept up to date as the levels are solved
    # from the top: (levels, 6, s).
    level_row = np.arange(size)[:, None, None] * width + np.arange(s) * (size * width)
    lands = np.empty((size, width, s), dtype=np.int64)
    worth = np.empty((size, width, s))
    _landings(q[:, :, :, 0].transpose(1, 2, 0), bank_own.T, level_row, lands, worth)
    flat_lands, flat_worth = lands.reshape(size * width, s), worth.reshape(size * width, s)
    rows = option_rows(tab, top)  # rows[i, o]: the (level, dice) row option o leads to
    classes = len(tab.class_prob)
    rank_of = np.repeat(np.arange(len(tab.rank_count)), tab.rank_count)
    class_of = np.arange(len(tab.points)) - tab.rank_offset[rank_of]
    low = (1 << RANK_BITS) - 1
    rank_code = (low - rank_of)[:, None]  # the first rank sorts highest
    cls_t = tab.class_matrix().T[1:]  # (5, classes): k = 1..5 dice
    bust = tab.bust[1:, None]
    states = np.searchsorted(-live, -np.arange(top + 1), side="right")  # live at level i
    if choices is not None:
        choices[:] = -1
    for i in range(top, -1, -1):
        c = states[i]
        if c == 0:
            continue
        col = np.arange(c)
        if ties == "first":
            # The worth of every option with its rank in the lowest bits: one max per
            # class finds the best, and the first of equal ones (non-negative doubles
            # sort as their bits do).
            keys = flat_worth[rows[i], :c].view(np.int64)
            keys &= ~low
            keys |= rank_code
            best = tab.class_max(keys)
            option = tab.rank_offset[low - (best & low)] + np.arange(classes)[:, None]
            lead = flat_lands[rows[i][option], col]  # (classes, c)
            chosen = np.take(rows_q, lead, axis=0)
            if choices is not None:
                choices[i, :, :c] = lead - col * (size * width)
        else:
            landing = i + tab.steps  # (options,)
            rolled = flat_q[:c, rows[i]]  # (c, options, N)
            banked = q[:c, landing, 0]
            bank_value = bank_own[:c, landing]
            value = np.maximum(rolled[..., 0], bank_value).T.copy()  # (options, c)
            best = tab.class_max(value)[class_of].T  # (c, options)
            take_roll = rolled[..., 0] >= best - eps
            take_bank = bank_value >= best - eps  # never where not allowed (-inf)
            total = (take_roll[..., None] * rolled + take_bank[..., None] * banked).transpose(
                1, 0, 2
            )  # (options, c, N)
            count = (take_roll.astype(float) + take_bank).T
            sums, counts = total[:classes].copy(), count[:classes].copy()
            for r in range(1, len(tab.rank_count)):
                offset, k = tab.rank_offset[r], tab.rank_count[r]
                sums[:k] += total[offset : offset + k]
                counts[:k] += count[offset : offset + k]
            chosen = sums / counts[..., None]
        # chosen: (classes, c, N), each class's chosen move's values
        rolls = (cls_t @ chosen.reshape(classes, c * n)).reshape(NUM_DICE, c, n)
        q[:c, i, 1:] = rolls.transpose(1, 0, 2) + bust * pass_vec[:c, None, :]
        _landings(
            q[:c, i, :, 0].T[None],
            bank_own[:c, i][None],
            level_row[i : i + 1, :, :c],
            lands[i : i + 1, :, :c],
            worth[i : i + 1, :, :c],
        )
    return q


def _landings(own, bank_own, level_row, lands, worth) -> None:
    """Into `lands` and `worth` (levels, 6, s): where landing on each (level, dice left)
    leads (`level_row` (levels, 1, s): the level's first row, state by state, plus the
    dice to roll on) and what it is worth to the mover, from its values `own` (levels,
    6, s) of rolling on and `bank_own` (levels, s) of banking there."""
    banks = bank_own[:, None, :] > own
    np.copyto(lands, level_row + np.arange(NUM_DICE + 1)[None, :, None])
    np.copyto(lands, level_row, where=banks)
    np.maximum(own, bank_own[:, None, :], out=worth)


def end_values(values: np.ndarray, turns: Turns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every player's value (mover's order) at every end of the turns of `turns`, from
    `values` (positions, N) of the turn starts: (pass_vec (s, N), bank_vec (s, levels,
    N), allowed (s, levels)), as ``turn_vectors`` takes them. A win is certain (the
    mover's, or a gift's receiver's); lost points pass; the next turn start's values are
    rolled into the mover's order."""
    after = np.roll(values, 1, axis=1)
    pass_vec = after[turns.bust]
    kind, dst = turns.kind, turns.dst  # (s, levels)
    bank_vec = np.zeros((*kind.shape, values.shape[1]))
    other = kind == OTHER
    bank_vec[other] = after[dst[other]]
    state, level = np.nonzero(kind == PASS)
    bank_vec[state, level] = pass_vec[state]
    bank_vec[..., 0] += kind == WIN
    state, level = np.nonzero(kind == GIFT_WIN)
    bank_vec[state, level, dst[state, level]] = 1.0
    return pass_vec, bank_vec, kind != NOT_ALLOWED


def maxn_backup(
    values: np.ndarray,
    turns: Turns,
    ties: str = "first",
    eps: float = 0.0,
    choices: np.ndarray | None = None,
) -> np.ndarray:
    """(len(turns.states), N): every player's value at each start of `turns` when its
    mover plays the best turn against `values` (see ``turn_vectors`` for `ties` and
    `choices`)."""
    pass_vec, bank_vec, allowed = end_values(values, turns)
    tab = option_tables(turns.rules.hold)
    q = turn_vectors(pass_vec, bank_vec, allowed, tab, turns.top, turns.live, ties, eps, choices)
    return q[:, 0, NUM_DICE]


def maxn_choices(values: np.ndarray, turns: Turns) -> np.ndarray:
    """(levels, classes, s): the movers' choices at the starts of `turns` against
    `values` (``turn_vectors``' `choices`, first best)."""
    classes = len(option_tables(turns.rules.hold).class_prob)
    out = np.empty((turn_levels(turns.rules), classes, len(turns.states)), dtype=np.int64)
    maxn_backup(values, turns, choices=out)
    return out


# ------------------------------------------------------- max-n: value iteration
@dataclass(frozen=True)
class Cycle:
    """How the last iterates of a run that did not settle repeat.

    ``period``: the smallest k >= 1 with the last iterate within ``distance`` (max
    over states and players) of the one k sweeps before, ``distance`` at most
    ``CYCLE_MATCH`` of the largest swing of any value over the window (None: no such
    k, e.g. a slow drift or a quasi-periodic orbit); ``amplitude``: the largest swing
    (max - min) of any value over the last period (without one, over the last half of
    the window: the early iterates may still be on their way to the cycle);
    ``swing_state`` (a position index), ``swing_player`` (mover's order): where."""

    window: int
    period: int | None
    distance: float
    amplitude: float
    swing_state: int
    swing_player: int
    distances: np.ndarray  # distances[k - 1]: to the iterate k sweeps before


CYCLE_MATCH = 0.01  # a repeat is within 1% of the swing


def detect_cycle(
    history: np.ndarray, states: np.ndarray | None = None, period: int | None = None
) -> Cycle:
    """The cycle of iterates `history` (sweeps, states, N), the last one last; `states`:
    the position index of each row (default: the row); `period`, if known (an exact
    repeat), rather than searched for."""
    last = history[-1]
    back = history[-2::-1]  # back[k - 1]: k sweeps before the last
    distances = np.abs(back - last).max(axis=(1, 2))
    window_swing = float((history.max(axis=0) - history.min(axis=0)).max())
    close = np.flatnonzero(distances <= CYCLE_MATCH * window_swing)
    if period is None and close.size and window_swing > 0:
        period = int(close[0]) + 1
    distance = float(distances[period - 1]) if period else float(distances.min())
    orbit = history[-(period + 1) :] if period else history[len(history) // 2 :]
    spread = orbit.max(axis=0) - orbit.min(axis=0)
    row, player = np.unravel_index(int(np.argmax(spread)), spread.shape)
    state = int(row if states is None else states[row])
    return Cycle(len(history), period, distance, float(spread.max()), state, int(player), distances)


@dataclass
class BlockRun:
    """The sweeps of one block (under Jacobi, one "block": the whole space, ``score``
    None): its highest score, how many sweeps, whether it settled, the last residual
    (and its movers' own part), its cycle if it did not settle, and its states' last
    iterates (``history``: up to the run's window, oldest first, or one turn of an
    exact cycle; rows in the order of ``states``). ``repeat``: an iterate came back
    bit for bit after that many sweeps, so the iteration (a fixed map) would repeat
    that cycle for ever."""

    score: int | None
    states: np.ndarray
    sweeps: int
    settled: bool
    residual: float
    own_residual: float
    cycle: Cycle | None
    history: np.ndarray
    repeat: int | None = None  # the period of an exact repeat, where one stopped it

    def orbit(self) -> np.ndarray:
        """The last iterates that make one turn of the cycle (``Cycle.amplitude``'s)."""
        if self.cycle is not None and (period := self.cycle.period):
            return self.history[-(period + 1) :]
        return self.history[len(self.history) // 2 :]


@dataclass
class MaxnRun:
    """What max-n value iteration did.

    ``values`` (positions, N): the last iterate; ``residuals[t]``, ``own_residuals[t]``:
    at sweep t, max |backup - V| over the swept states and every player, and over the
    movers' own values only; ``blocks``: what each block did (one for Jacobi);
    ``trace`` (sweeps, k, N): the values after each sweep at the positions asked for."""

    rules: Rules
    n_players: int
    values: np.ndarray
    residuals: list[float] = field(default_factory=list)
    own_residuals: list[float] = field(default_factory=list)
    blocks: list[BlockRun] = field(default_factory=list)
    trace: list[np.ndarray] = field(default_factory=list)

    @property
    def settled(self) -> bool:
        """Every block got below the tolerance."""
        return all(b.settled for b in self.blocks)

    @property
    def sweeps(self) -> int:
        return len(self.residuals)

    @property
    def space(self) -> ScoreSpace:
        return ScoreSpace(self.rules, self.n_players)

    def swings(self) -> np.ndarray:
        """(positions, N): the range (max - min) of each value over its block's cycle
        (as ``Cycle.amplitude`` measures it) where the block did not settle, else 0."""
        out = np.zeros_like(self.values)
        for b in self.blocks:
            if not b.settled:
                orbit = b.orbit()
                out[b.states] = orbit.max(axis=0) - orbit.min(axis=0)
        return out


ORDERS = ("jacobi", "blocks")


def maxn_value_iteration(
    rules: Rules,
    n_players: int = 3,
    order: str = "jacobi",
    alpha: float = 1.0,
    averaging: bool = False,
    ties: str = "first",
    eps: float = 0.0,
    tol: float = 1e-12,
    max_sweeps: int = 1000,
    window: int = 200,
    stop_on_repeat: bool = True,
    trace: np.ndarray | None = None,
    progress: Callable[[int, float], None] | None = None,
) -> MaxnRun:
    """Max-n value iteration from every value 1/N: V <- (1 - a) V + a backup
    (``maxn_backup`` with `ties`, `eps`), a = `alpha`, or with `averaging` a = 1/t at
    the t-th sweep (V is then the running mean of the backups, as in fictitious
    play), until max |backup - V| < `tol` or `max_sweeps` sweeps (per block with
    ``order="blocks"``).

    ``order="jacobi"``: every state backed up from the same iterate. ``"blocks"``
    (Gauss-Seidel by blocks): the states of equal highest score, from the top (the
    highest score never drops, R9, so a block's turns only lead to its own states and
    to blocks already done), each iterated to `tol` before the next; a block that does
    not settle keeps its last iterate and the blocks below are solved against it.
    The last `window` iterates of each block are kept (``BlockRun.history``, and
    ``detect_cycle``); with `stop_on_repeat`, a block stops when an iterate of the
    window comes back bit for bit (the sweep is a fixed map, so it would cycle so for
    ever). The values at the positions `trace` (indices) are kept after every sweep.
    `progress(sweep, residual)` is called after each sweep."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    space = ScoreSpace(rules, n_players)
    positions = space.positions()
    values = np.full((space.size, n_players), 1.0 / n_players)
    run = MaxnRun(rules, n_players, values)
    trace = np.zeros(0, dtype=np.int64) if trace is None else np.asarray(trace)
    whole: list[tuple[int | None, np.ndarray]] = [(None, np.arange(space.size))]
    for score, states in whole if order == "jacobi" else space.blocks(positions):
        turns = Turns.of(space, states, positions)
        ring = np.empty((window, len(turns.states), n_players))  # the last iterates
        seen: dict[int, int] = {}  # hash of an iterate's bytes -> its sweep
        residual, settled, repeat = np.inf, False, None
        for sweep in range(max_sweeps):
            current = values[turns.states]
            backup = maxn_backup(values, turns, ties, eps)
            change = np.abs(backup - current)
            residual = float(change.max())
            run.residuals.append(residual)
            run.own_residuals.append(float(change[:, 0].max()))
            step = 1.0 / (sweep + 1) if averaging else alpha
            values[turns.states] = (1.0 - step) * current + step * backup
            ring[sweep % window] = values[turns.states]
            run.trace.append(values[trace].copy())
            if progress is not None:
                progress(len(run.residuals), residual)
            if residual < tol:
                settled = True
                break
            if stop_on_repeat:
                key = hash(ring[sweep % window].tobytes())
                before = seen.get(key, -window)
                if sweep - before < window and np.array_equal(
                    ring[before % window], ring[sweep % window]
                ):
                    repeat = sweep - before
                    break
                seen[key] = sweep
        kept = min(sweep + 1, window)
        history = np.roll(ring, -((sweep + 1) % window), axis=0)[window - kept :]
        if repeat is not None:  # one turn of the cycle, and its first iterate again
            history = history[-(repeat + 1) :]
        cycle = None if settled else detect_cycle(history, turns.states, repeat)
        own = run.own_residuals[-1]
        block = BlockRun(
            score, turns.states, sweep + 1, settled, residual, own, cycle, history, repeat
        )
        run.blocks.append(block)
    return run


# -------------------------------------------------------------------- paranoid
@dataclass
class ParanoidValues:
    """The paranoid values of one player (the *responder*; all players are alike, so
    one solve serves every seat).

    ``values[r, p]``: the responder's win probability, against the others minimizing
    it, at turn start ``space.positions()[p]`` (mover's order) when the mover sits r
    seats after the responder (r = 0: the responder moves; it is then at index
    ``(N - r) % N`` of the mover's order)."""

    rules: Rules
    n_players: int
    values: np.ndarray  # (N, positions)
    sweeps: int

    @property
    def space(self) -> ScoreSpace:
        return ScoreSpace(self.rules, self.n_players)

    def seat_values(self) -> np.ndarray:
        """The responder's guaranteed win probability from the start of a game, by its
        seat s (s players move before it: the first mover sits N - s seats after it)."""
        n = self.n_players
        start = int(self.space.index(np.zeros((1, n), dtype=np.int64))[0])
        return np.array([self.values[(n - s) % n, start] for s in range(n)])


def solve_paranoid(
    rules: Rules,
    n_players: int = 3,
    tol: float = 1e-12,
    max_sweeps: int = 100_000,
    progress: Callable[[int, int], None] | None = None,
) -> ParanoidValues:
    """The paranoid values of `rules` with `n_players` players, each to within about
    `tol`: value iteration by blocks of the highest score, from the top; one sweep of
    a block backs up the movers r = N-1, ..., 1, 0 in that order (each from the values
    just found for the mover after it), so a sweep is a round of the table. The
    responder maximizes its chance; the others maximize 1 minus it.
    `progress(done, total)` is told the blocks done."""
    space = ScoreSpace(rules, n_players)
    positions = space.positions()
    n = n_players
    values = np.zeros((n, space.size))
    tab = option_tables(rules.hold)
    blocks = space.blocks(positions)
    sweeps = 0
    for done, (_, states) in enumerate(blocks):
        turns = Turns.of(space, states, positions)
        for _ in range(max_sweeps):
            sweeps += 1
            change = 0.0
            for r in range(n - 1, -1, -1):
                new = _paranoid_backup(values, turns, r, tab)
                change = max(change, float(np.abs(new - values[r, turns.states]).max()))
                values[r, turns.states] = new
            if change < tol:
                break
        else:
            raise RuntimeError(f"the paranoid values did not settle under {rules}")
        if progress is not None:
            progress(done + 1, len(blocks))
    return ParanoidValues(rules, n_players, values, sweeps)


def _paranoid_backup(values: np.ndarray, turns: Turns, r: int, tab: OptionTables) -> np.ndarray:
    """The responder's value at the starts of `turns` when the player r seats after it
    moves, from `values` (every start of the next mover): the responder (r = 0) plays
    its best turn, any other mover the turn worst for the responder."""
    n = values.shape[0]
    after = values[(r + 1) % n]  # the responder's value where the next player moves
    responder = (n - r) % n  # the responder's index in the mover's order
    # The mover maximizes `sign * v + offset`: v itself, or 1 - v.
    sign, offset = (1.0, 0.0) if r == 0 else (-1.0, 1.0)
    kind, dst = turns.kind, turns.dst
    pass_value = sign * after[turns.bust] + offset
    won = np.where(kind == WIN, responder == 0, (kind == GIFT_WIN) & (dst == responder))
    bank = sign * won + offset
    bank = np.where(kind == OTHER, sign * after[dst] + offset, bank)
    bank = np.where(kind == PASS, pass_value[:, None], bank)
    bank = np.where(kind == NOT_ALLOWED, -np.inf, bank)
    w, _ = turn_values(pass_value, bank, tab, turns.top, turns.live)
    return sign * (w[0, NUM_DICE] - offset)
