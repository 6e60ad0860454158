"""Exact solutions of 5000 by dynamic programming.

Two solvers share the chance structure of the dice (``OptionTables``):

- ``solve_turn_ev``: the expected points of one turn under the play that maximizes
  them (Bellman recursion over turn total and dice left; no opponent, no target).
- ``solve_two_player``: the probability of winning a 2-player game for the player to
  move, under optimal play by both, over every (own banked score, opponent's banked
  score, turn total, dice left), with entry, the 50 rule, bumps, the overshoot gift
  and the exact target in the model.

Notation. ``t`` is a turn total, stored by index ``t // 50``; ``k`` is the number of
dice about to be rolled (1..5). After a roll of k dice the player picks one *option*:
hold a set worth ``points`` leaving ``k'`` dice (5 after hot dice, R6), then bank or
roll on. Rolls with the same set of (points, k') options are merged into one chance
*class* with their summed probability, so a level of the recursion is a few numpy
calls over all classes at once.

Two-player solve. V[a, b] is the win probability of the player about to start a turn
with banked score a against b, for a and b on the rules' grid of banked scores
(``Rules.banked_scores``: multiples of 100, or of 50 without the 50 rule). Within a
turn, for given V, the recursion over t runs backward from high turn totals (holding
always adds points, so t only grows). Across turns the values are coupled: a bust hands
the turn over (value 1 - V[b, a]); a bank leads to 1 - V[b', a'] with the scores the
engine's banking leaves (``bank_batch``: entry, the 50 rule, bumps, gifts, lost points
and the exact target, under every house rule). The higher banked score of the two never
decreases (banking raises the banker, a bump only happens to a player already at that
higher score, a gift raises the other), so the score pairs are solved in blocks of
equal max(a, b), from the highest down. Inside a block the values are found by Newton's
method (policy iteration): for the current values the best play of every turn is
found (``turn_values``), where that play ends is pushed forward exactly
(``_end_chances``), and the linear equations of that play are solved, until the values
no longer change (to 1e-12).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property

import numpy as np

from fivethousand_rl.envs.batch import bank_batch
from fivethousand_rl.envs.game import bank_outcome as game_bank_outcome
from fivethousand_rl.envs.rules import NUM_DICE, ROLL_INFO, Rules, can_bank, roll_probabilities

STEP = 50  # every score and turn total is a multiple of 50
FEW_STATES = 8  # turn_values: batches up to this many states take the class maxima by reduceat


@dataclass(frozen=True)
class OptionTables:
    """The chance classes of rolls of k dice and the options each offers.

    Class c occurs with probability ``class_prob[c]`` when ``class_dice[c]`` dice are
    rolled; ``bust[k]`` is the probability that k dice score nothing. Classes are sorted
    by their number of options, most first, and options are laid out *rank-major*: the
    first option of every class, then the second option of every class that has one,
    and so on. Rank r's options sit at ``rank_offset[r]`` and belong to classes
    ``0..rank_count[r]-1``, so a class-wise max is a few slice operations.
    Option o holds ``points[o]`` and leaves ``dice_left[o]`` dice (1..5).
    """

    points: np.ndarray
    dice_left: np.ndarray
    class_prob: np.ndarray
    class_dice: np.ndarray
    rank_offset: np.ndarray
    rank_count: np.ndarray
    bust: np.ndarray  # index 0..5

    @cached_property
    def steps(self) -> np.ndarray:
        """Option o moves the turn total up by steps[o] levels of 50 points."""
        return self.points // STEP

    def class_matrix(self) -> np.ndarray:
        """(classes, 6) matrix: M[c, k] = probability of class c when rolling k dice."""
        m = np.zeros((len(self.class_prob), NUM_DICE + 1))
        m[np.arange(len(self.class_prob)), self.class_dice] = self.class_prob
        return m

    @cached_property
    def _rank_slices(self) -> list[tuple[slice, slice]]:
        """For each rank after the first: (its classes' rows of rank 0, its own rows)."""
        ranks = zip(self.rank_offset[1:], self.rank_count[1:], strict=True)
        return [(slice(0, count), slice(offset, offset + count)) for offset, count in ranks]

    @cached_property
    def class_major(self) -> tuple[np.ndarray, np.ndarray]:
        """(order, starts): the options of class c are ``order[starts[c]:starts[c+1]]``,
        so that a class-wise max is one ``np.maximum.reduceat`` (fewer calls than
        ``class_max`` where there are few states)."""
        rank = np.repeat(np.arange(len(self.rank_count)), self.rank_count)
        klass = np.arange(len(self.points)) - self.rank_offset[rank]
        order = np.argsort(klass, kind="stable")
        return order, np.searchsorted(klass[order], np.arange(len(self.class_prob)))

    def class_max(self, option_values: np.ndarray) -> np.ndarray:
        """Max over each class's options of `option_values` (options along axis 0; any
        type that orders), computed in place: returns the first ``rank_count[0]`` rows of
        `option_values`, whose other rows it leaves as they are."""
        for head, rank in self._rank_slices:
            np.maximum(option_values[head], option_values[rank], out=option_values[head])
        return option_values[: self.rank_count[0]]


@cache
def option_tables(hold: str = "free") -> OptionTables:
    bust = np.zeros(NUM_DICE + 1)
    classes: list[tuple[float, int, tuple]] = []
    for k in range(1, NUM_DICE + 1):
        merged: dict[tuple, float] = {}
        for roll, p in roll_probabilities(k):
            if not (holds := ROLL_INFO[roll].holds(hold)):
                bust[k] += p
                continue
            key = tuple(sorted({(h.points, (k - len(h.dice)) or NUM_DICE) for h in holds}))
            merged[key] = merged.get(key, 0.0) + p
        classes.extend((p, k, key) for key, p in merged.items())
    classes.sort(key=lambda c: -len(c[2]))  # stable: most options first
    points, dice_left, rank_offset, rank_count = [], [], [], []
    for rank in range(len(classes[0][2])):
        having = [c for c in classes if len(c[2]) > rank]
        rank_offset.append(len(points))
        rank_count.append(len(having))
        for _, _, key in having:
            points.append(key[rank][0])
            dice_left.append(key[rank][1])
    return OptionTables(
        points=np.array(points),
        dice_left=np.array(dice_left),
        class_prob=np.array([c[0] for c in classes]),
        class_dice=np.array([c[1] for c in classes]),
        rank_offset=np.array(rank_offset),
        rank_count=np.array(rank_count),
        bust=bust,
    )


def turn_levels(rules: Rules) -> int:
    """How many turn-total levels a turn's recursion keeps: up to the target's, then one
    hold more (the totals past the target can only pass the turn: their points are lost)."""
    return rules.target // STEP + 1 + int(option_tables(rules.hold).steps.max()) + 1


# --------------------------------------------------------------------- turn EV
@dataclass(frozen=True)
class TurnEV:
    """Expected points of the rest of a turn under points-maximizing play.

    ``value[e, i, k]``: before rolling k dice with turn total 50*i, for a player who has
    entered (e=1) or not (e=0, banking needs ``entry``). Turn totals at or beyond
    ``cap`` are banked when allowed (far beyond where rolling on pays).
    """

    value: np.ndarray
    rules: Rules
    cap: int

    def bank_value(self, entered: bool, total: int) -> float:
        # A banked score above 0 is all that entering means (V1): 1 stands for any.
        return float(total) if can_bank(int(entered), total, self.rules) else -np.inf

    def roll_value(self, entered: bool, total: int, dice: int) -> float:
        i = min(total, self.cap) // STEP
        return float(self.value[int(entered), i, dice])

    @property
    def entered_turn_value(self) -> float:
        """Best expected points of one turn for a player who has entered."""
        return float(self.value[1, 0, NUM_DICE])


@cache
def turn_ev_table(rules: Rules) -> TurnEV:
    """``solve_turn_ev(rules)``, solved once per rules and shared by the bots and encoders."""
    return solve_turn_ev(rules)


def solve_turn_ev(rules: Rules | None = None, cap: int = 40_000) -> TurnEV:
    rules = rules or Rules()
    tab = option_tables(rules.hold)
    steps = tab.steps
    n_levels = cap // STEP + 1
    size = n_levels + int(steps.max()) + 1
    totals = np.arange(size) * STEP
    value = np.zeros((2, size, NUM_DICE + 1))
    cls = tab.class_matrix()
    for entered in (0, 1):
        may_bank = np.array([can_bank(entered, int(t), rules) for t in totals])  # 1: entered
        bank = np.where(may_bank, totals, -np.inf)
        # Beyond the cap: bank if allowed, else the value one hold later (~ the same).
        value[entered, n_levels:, :] = np.where(may_bank, totals, totals + STEP)[n_levels:, None]
        for i in range(n_levels - 1, -1, -1):
            j = i + steps
            best = np.maximum(value[entered, j, tab.dice_left], bank[j])
            value[entered, i, :] = tab.class_max(best) @ cls  # a bust scores 0
    return TurnEV(value=value[:, :n_levels, :], rules=rules, cap=cap)


# ------------------------------------------------------------------ two players
WIN, LOSE, PASS, OTHER = 0, 1, 2, 3  # what a bank does (see ``bank_outcome``)
NOT_ALLOWED = -1  # a bank kind: R8 forbids banking this total
# Newton's linear equations are made again from the current play only when a step did
# not shrink the error at least this much (the play then changed); else the last ones
# serve, which are exact once the play has settled.
REFRESH = 0.01


@dataclass
class TwoPlayerSolution:
    """Optimal 2-player play.

    ``scores``: the possible banked scores, ``rules.banked_scores()``.
    ``V[ia, ib]``: win probability of the player about to roll five dice with banked
    score ``scores[ia]`` against ``scores[ib]``.
    ``W[ia, ib, i, k]``: win probability before rolling k dice with turn total 50*i
    (i up to target/50; beyond, the turn can only end without profit).
    Every house rule (``rules``: V1-V5, R5) is in the numbers; nothing here assumes one.
    """

    rules: Rules
    scores: np.ndarray
    V: np.ndarray
    W: np.ndarray

    def score_index(self, score: int) -> int:
        return int(self._index[score])

    def __post_init__(self) -> None:
        self._index = {int(s): i for i, s in enumerate(self.scores)}

    def bank_value(self, own: int, opp: int, total: int) -> float:
        """Win probability after banking `total` now (R9), or -inf if not allowed (R8)."""
        if not can_bank(own, total, self.rules):
            return -np.inf
        kind, x, y = bank_outcome(own, opp, total, self.rules)
        if kind == WIN:
            return 1.0
        if kind == LOSE:
            return 0.0
        if kind == PASS:
            return self._pass_value(own, opp)
        return 1.0 - float(self.V[self._index[x], self._index[y]])

    def roll_value(self, own: int, opp: int, total: int, dice: int) -> float:
        """Win probability of rolling `dice` dice on with turn total `total`."""
        if total > self.rules.target:
            return self._pass_value(own, opp)
        ia, ib = self._index[own], self._index[opp]
        return float(self.W[ia, ib, total // STEP, dice])

    def _pass_value(self, own: int, opp: int) -> float:
        return 1.0 - float(self.V[self._index[opp], self._index[own]])

    @property
    def first_player_win_probability(self) -> float:
        return float(self.V[0, 0])


def bank_outcome(own: int, opp: int, total: int, rules: Rules) -> tuple[int, int, int]:
    """The engine's ``envs.game.bank_outcome`` (R9) in the solver's terms (kind, x, y):
    WIN, LOSE (a gift that lands the opponent on the target), PASS (an overshoot whose
    points are lost: the opponent moves on at (opp, own)), or OTHER: the opponent is
    then to move with banked score x against y."""
    outcome = game_bank_outcome((own, opp), 0, total, rules)
    if outcome.winner is not None:
        return (WIN if outcome.winner == 0 else LOSE), 0, 0
    if outcome.lost:
        return PASS, 0, 0
    return OTHER, outcome.scores[1], outcome.scores[0]


def _bank_ends(scores: np.ndarray, rules: Rules, size: int) -> tuple[np.ndarray, np.ndarray]:
    """What banking each turn total 50*i (i < `size`) does from every pair of scores:
    (kind, pair), each (n, n, size). kind: NOT_ALLOWED (R8, ``can_bank``), WIN, LOSE,
    PASS (points lost, or a total past the target: only passing is left) or OTHER, with
    ``pair`` the flat index ``x * n + y`` of the opponent's next turn start (x against y).
    R9 and its switches come from ``envs.batch.bank_batch``, the engine's banking for many
    games at once."""
    n = len(scores)
    totals = np.arange(size) * STEP
    allowed = np.array([[can_bank(int(a), int(t), rules) for t in totals] for a in scores])
    kind = np.empty((n, n, size), dtype=np.int8)
    kind[:] = np.where(totals <= rules.target, NOT_ALLOWED, PASS)
    pair = np.zeros((n, n, size), dtype=np.int64)
    ia, ib, it = np.nonzero(
        np.broadcast_to(allowed[:, None, :] & (totals <= rules.target), kind.shape)
    )
    if ia.size:
        out = bank_batch(
            np.stack([scores[ia], scores[ib]], axis=1),
            np.zeros(ia.size, dtype=np.int64),
            totals[it],
            rules,
        )
        kind[ia, ib, it] = np.select(
            [out.winner == 0, out.winner == 1, out.lost], [WIN, LOSE, PASS], OTHER
        )
        other = kind[ia, ib, it] == OTHER
        after = out.scores[other]  # (banker, opponent): the opponent moves next
        x, y = (np.minimum(np.searchsorted(scores, after[:, j]), n - 1) for j in (1, 0))
        if not (np.array_equal(scores[x], after[:, 1]) and np.array_equal(scores[y], after[:, 0])):
            raise RuntimeError(f"a bank left a score off rules.banked_scores() under {rules}")
        pair[ia[other], ib[other], it[other]] = x * n + y
    return kind, pair


def solve_two_player(
    rules: Rules | None = None, tol: float = 1e-12, max_iter: int = 100, progress=None
) -> TwoPlayerSolution:
    """Solve the 2-player game under `rules` (any house rules) exactly: each state's
    value to `tol`. `progress(done, total)` is called per block."""
    rules = rules or Rules()
    tab = option_tables(rules.hold)
    scores = np.array(rules.banked_scores())
    n = len(scores)
    top = rules.target // STEP  # last turn-total level kept
    size = turn_levels(rules)  # levels past `top` only ever pass
    kind, target_pair = _bank_ends(scores, rules, size)

    V = np.zeros((n, n))
    W = np.zeros((n, n, top + 1, NUM_DICE + 1))
    live_all = live_levels(kind.reshape(n * n, size)).reshape(n, n)
    last = None  # the block solved last: its position map and end chances
    for done, m in enumerate(range(n - 1, -1, -1)):
        # Block m: the pairs whose higher score is scores[m], those that need the most
        # turn-total levels first (see ``turn_values``).
        pa = np.concatenate([np.full(m + 1, m), np.arange(m)])
        pb = np.concatenate([np.arange(m + 1), np.full(m, m)])
        order = np.argsort(-live_all[pa, pb], kind="stable")
        pa, pb = pa[order], pb[order]
        live = live_all[pa, pb]
        flat_mirror = pb * n + pa
        k_blk, tp_blk = kind[pa, pb], target_pair[pa, pb]
        # Where each turn end leads inside the block (-1: outside, its value is known).
        position = np.full(n * n, -1)
        position[pa * n + pb] = np.arange(len(pa))
        ends = np.where(k_blk == PASS, position[flat_mirror][:, None], -1)
        ends = np.where(k_blk == OTHER, position[tp_blk], ends)
        # Start from the solved states one score step up on both sides (a player at 0,
        # not entered, stays at 0; a fair coin in the first block and at (0, 0)): close
        # to the solution, so Newton's steps below converge fast.
        up_a, up_b = np.where(pa > 0, pa + 1, 0), np.where(pb > 0, pb + 1, 0)
        v = V[up_a, up_b] if 0 < m < n - 1 else np.full(len(pa), 0.5)
        # Newton's method (policy iteration): with the policy fixed, each state's value
        # is affine in the block's values, u - P (v' - v), where P[s, s'] is the chance
        # that s's turn ends where the opponent moves from s' (the mover then has
        # 1 - V[s']); v' = u - P (v' - v) is solved exactly. P is computed again only
        # when the error stops falling fast; the steps in between use the last P, at
        # first the last block's, one step up (where the start values come from).
        chances, error = None, np.inf
        if 0 < m < n - 1:
            up = last[0][up_a * n + up_b]
            chances = last[1][np.ix_(up, up)]
            step = np.linalg.inv(np.eye(len(pa)) + chances)
        for _ in range(max_iter):
            V[pa, pb] = v
            pass_value = 1.0 - V.ravel()[flat_mirror]
            bank = _bank_values(V, k_blk, tp_blk, pass_value)
            w, z = turn_values(pass_value, bank, tab, top, live)
            u = w[0, NUM_DICE].copy()
            error, last_error = np.max(np.abs(u - v)), error
            if error < tol:
                break
            if chances is None or error > REFRESH * last_error:
                chances = _end_chances(w, z, bank, tab, live, ends, position[flat_mirror])
                step = np.linalg.inv(np.eye(len(pa)) + chances)
            v = step @ (u + chances @ v)
        else:
            raise RuntimeError(f"the 2-player solve did not converge under {rules}")
        W[pa, pb] = w[: top + 1].transpose(2, 0, 1)
        V[pa, pb] = u
        last = position, chances
        if progress is not None:
            progress(done + 1, n)
    return TwoPlayerSolution(rules=rules, scores=scores, V=V, W=W)


def _bank_values(V, kind, target_pair, pass_value) -> np.ndarray:
    """Value of banking each turn total, for a batch of states (see ``_bank_ends``)."""
    bank = np.where(kind == WIN, 1.0, 0.0)
    bank = np.where(kind == OTHER, 1.0 - V.ravel()[target_pair], bank)
    bank = np.where(kind == PASS, pass_value[:, None], bank)
    return np.where(kind == NOT_ALLOWED, -np.inf, bank)


def live_levels(kind: np.ndarray) -> np.ndarray:
    """Per state (rows of `kind`, see ``_bank_ends``), the last turn-total level where
    banking can do anything but pass the turn: above it every end of the turn is worth
    the pass value, so the turn's values there are the pass value."""
    useful = (kind != NOT_ALLOWED) & (kind != PASS)
    last = useful.shape[1] - 1 - np.argmax(useful[:, ::-1], axis=1)
    return np.where(useful.any(axis=1), last, 0)


def turn_values(pass_value, bank, tab: OptionTables, top: int, live=None):
    """(W, Z) for a batch of states s, from terminal values: `pass_value[s]` for a bust
    or a turn total past the target, `bank[s, i]` for banking turn total 50*i (-inf
    where not allowed; i < size). Each is (size, 6, s), the state axis last so that
    gathers and maxima run on contiguous rows: ``W[i, k, s]`` the value before rolling
    k dice with turn total 50*i, ``Z[i, k, s]`` the value of having held to that total
    with k dice left, the better of banking and rolling on (what an option is worth).

    `live` (default: `top` for all), sorted descending: state s's last level where
    anything but passing can happen (``live_levels``); above it W is the pass value,
    so the recursion skips those states there."""
    s, size = bank.shape
    width = NUM_DICE + 1
    live = np.full(s, top) if live is None else np.minimum(live, top)
    w = np.empty((size, width, s))
    w[:] = pass_value
    w[:, 0, :] = 0.0
    bank_t = np.ascontiguousarray(bank.T)
    z = np.maximum(w, bank_t[:, None, :])
    options = z.reshape(size * width, s)
    # Row `classes` of the option values, free once the class maxima are taken, carries
    # the pass value, so that one product gives a level: rolls by class, and busts.
    classes = len(tab.class_prob)
    chances = np.concatenate([tab.class_matrix().T, tab.bust[:, None]], axis=1)
    rows = option_rows(tab, top, spare=True)
    states = np.searchsorted(-live, -np.arange(top + 1), side="right")  # live at level i
    order, starts = tab.class_major
    few_rows = rows[:, order]
    for i in range(top, -1, -1):
        c = states[i]
        if c == 0:
            continue
        if c <= FEW_STATES:  # one reduceat costs less than class_max's slices here
            best = np.maximum.reduceat(options[few_rows[i], :c], starts, axis=0)
            np.matmul(chances[:, :classes], best, out=w[i, :, :c])
            w[i, :, :c] += chances[:, classes, None] * pass_value[:c]
        else:
            values = options[rows[i], :c]  # every option's value, from the levels it leads to
            tab.class_max(values)
            values[classes] = pass_value[:c]
            np.matmul(chances, values[: classes + 1], out=w[i, :, :c])
        np.maximum(w[i, :, :c], bank_t[i, :c], out=z[i, :, :c])
    return w, z


def option_rows(tab: OptionTables, top: int, spare: bool = False) -> np.ndarray:
    """rows[i, o]: the row of (level, dice) arrays flattened to (levels * 6, ...) that
    option o leads to from level i (0..top); with `spare`, one more row per level (row
    0: whatever it holds), room for a row of a level's own."""
    width = NUM_DICE + 1
    rows = tab.steps * width + tab.dice_left
    if spare:
        rows = np.append(rows, 0)
    return rows + np.arange(top + 1)[:, None] * width


def _turn_recursion(pass_value, bank, tab: OptionTables, top: int, size: int) -> np.ndarray:
    """W[s, i, k]: the value before rolling k dice with turn total 50*i, for a batch of
    states (see ``turn_values``; `bank` has `size` levels)."""
    return turn_values(pass_value, bank[:, :size], tab, top)[0].transpose(2, 0, 1)


def _end_chances(w, z, bank, tab: OptionTables, live, ends, mirror) -> np.ndarray:
    """P[s, s']: the chance that state s's turn, played as ``turn_values`` values it
    (`w`, `z`, `live`), ends where the opponent moves from state s' of the same batch: a
    bust, a total past state s's live levels or a banked total that nobody gets lead to
    s's mirror state `mirror[s]`; banking 50*i leads to ``ends[s, i]`` (-1: outside)."""
    passed, banked = end_masses(w, z, bank, tab, live)
    s = len(passed)
    chances = np.zeros((s, s))
    chances[np.arange(s), mirror] = passed
    state, level = np.nonzero(ends >= 0)
    np.add.at(chances, (state, ends[state, level]), banked[level, state])
    return chances


def end_masses(w, z, bank, tab: OptionTables, live) -> tuple[np.ndarray, np.ndarray]:
    """How the turns of a batch of states s end, played as ``turn_values`` values them
    (`w`, `z`, `bank`, `live`): (passed[s], banked[i, s]), the chance that s's turn ends
    without banking (a bust, or a total past its live levels, whose ends all pass) and
    the chance that it banks 50*i.

    The chance of each (turn total, dice to roll) is pushed forward level by level: a
    roll's whole chance goes to its chosen option, which then banks or rolls on (the
    first best option of each chance class; rolling on where banking is worth no more)."""
    size, width, s = w.shape
    # The choice of every chance class, by one max over keys that sort as the options'
    # values do: the value's lowest bits (below 2**-42 of it) replaced by where the
    # option leads, counted from the current level: row (steps, dice left) of `mass`, or
    # (steps, 0) when it banks there (so row 0 of `mass`, which no option leaves, gathers
    # the banked chance). Non-negative doubles sort as their bits do as integers; the
    # values are probabilities.
    dice_bits = 3
    low = (1 << (int(tab.steps.max()).bit_length() + dice_bits)) - 1
    landing = np.where(bank.T[:, None, :] > w, 0, np.arange(width)[None, :, None])
    keys = (np.maximum(z, 0.0).view(np.int64) & ~low | landing).reshape(size * width, s)
    option_lead = (tab.steps << dice_bits)[:, None]
    # A lead's offset into the flattened `mass`, from the current level.
    code = np.arange(low + 1)
    offset = ((code >> dice_bits) * width + (code & ((1 << dice_bits) - 1))) * s
    rows = option_rows(tab, int(live[0]))
    mass = np.zeros((size, width, s))  # before rolling k dice with turn total 50*i
    mass[0, NUM_DICE] = 1.0
    flat = mass.reshape(-1)
    cls = tab.class_matrix()
    at_level = np.arange(s) + np.arange(size)[:, None] * (width * s)  # (level, state) offsets
    states = np.searchsorted(-live, -np.arange(int(live[0]) + 1), side="right")
    for i, c in enumerate(states):  # c: the states still live at level i
        option_keys = keys[rows[i], :c]
        option_keys |= option_lead
        lead = tab.class_max(option_keys) & low
        where = offset[lead]
        where += at_level[i, :c]
        flow = cls @ mass[i, :, :c]  # each class's chance, all to its chosen option
        np.add.at(flat, where.ravel(), flow.ravel())
    banked = mass[:, 0, :]
    live_level = np.arange(size)[:, None] <= live[None, :]
    passed = (tab.bust @ (mass * live_level[:, None, :]).sum(axis=0)) + (
        mass[:, 1:, :].sum(axis=1) * ~live_level
    ).sum(axis=0)
    return passed, banked
