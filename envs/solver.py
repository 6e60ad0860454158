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
with banked score a against b. Within a turn, for given V, the recursion over t runs
backward from high turn totals (holding always adds points, so t only grows). Across
turns the values are coupled: a bust hands the turn over (value 1 - V[b, a]); a bank
leads to 1 - V[b', a'] with the new scores. The higher banked score of the two never
decreases (banking raises the banker, a bump only happens to a player already at that
higher score, a gift raises the other), so the score pairs are solved in blocks of
equal max(a, b), from the highest down; inside a block the values are iterated, with
each state's dependence on its bust value (1 - V[b, a]) solved exactly per pair of
mirror states, until the values no longer change (to 1e-12).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from envs.game import bank_outcome as game_bank_outcome
from envs.rules import NUM_DICE, ROLL_INFO, Rules, can_bank, check_hundreds, roll_probabilities

STEP = 50  # every score and turn total is a multiple of 50


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

    @property
    def steps(self) -> np.ndarray:
        return self.points // STEP

    def class_matrix(self) -> np.ndarray:
        """(classes, 6) matrix: M[c, k] = probability of class c when rolling k dice."""
        m = np.zeros((len(self.class_prob), NUM_DICE + 1))
        m[np.arange(len(self.class_prob)), self.class_dice] = self.class_prob
        return m

    def class_max(self, option_values: np.ndarray) -> np.ndarray:
        """Max over each class's options of `option_values` (options along axis 0)."""
        n = self.rank_count[0]
        out = option_values[:n].copy()
        for offset, count in zip(self.rank_offset[1:], self.rank_count[1:], strict=True):
            np.maximum(out[:count], option_values[offset : offset + count], out=out[:count])
        return out


@cache
def option_tables(hold: str = "free") -> OptionTables:
    bust = np.zeros(NUM_DICE + 1)
    classes: list[tuple[float, int, tuple]] = []
    for k in range(1, NUM_DICE + 1):
        merged: dict[tuple, float] = {}
        for roll, p in roll_probabilities(k):
            holds = ROLL_INFO[roll].holds(hold)
            if not holds:
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
        allowed = total % 100 != 50 and (entered or total >= self.rules.entry)
        return float(total) if allowed else -np.inf

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
    check_hundreds(rules, "the turn-EV table")
    tab = option_tables(rules.hold)
    steps = tab.steps
    n_levels = cap // STEP + 1
    size = n_levels + int(steps.max()) + 1
    totals = np.arange(size) * STEP
    value = np.zeros((2, size, NUM_DICE + 1))
    cls = tab.class_matrix()
    for entered in (0, 1):
        may_bank = (totals % 100 != 50) & ((totals >= rules.entry) | bool(entered))
        bank = np.where(may_bank, totals, -np.inf)
        # Beyond the cap: bank if allowed, else the value one hold later (~ the same).
        value[entered, n_levels:, :] = np.where(may_bank, totals, totals + STEP)[n_levels:, None]
        for i in range(n_levels - 1, -1, -1):
            j = i + steps
            best = np.maximum(value[entered, j, tab.dice_left], bank[j])
            value[entered, i, :] = tab.class_max(best) @ cls  # a bust scores 0
    return TurnEV(value=value[:, :n_levels, :], rules=rules, cap=cap)


# ------------------------------------------------------------------ two players
WIN, LOSE, PASS, OTHER = 0, 1, 2, 3


@dataclass
class TwoPlayerSolution:
    """Optimal 2-player play.

    ``scores``: the possible banked scores (0 and entry..target-100).
    ``V[ia, ib]``: win probability of the player about to roll five dice with banked
    score ``scores[ia]`` against ``scores[ib]``.
    ``W[ia, ib, i, k]``: win probability before rolling k dice with turn total 50*i
    (i up to target/50; beyond, the turn can only end without profit).
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


def solve_two_player(
    rules: Rules | None = None, tol: float = 1e-12, max_iter: int = 10_000, progress=None
) -> TwoPlayerSolution:
    """Solve the 2-player game exactly. `progress(done, total)` is called per block."""
    rules = rules or Rules()
    check_hundreds(rules, "the 2-player solver")
    tab = option_tables(rules.hold)
    steps = tab.steps
    scores = np.array([0] + list(range(rules.entry, rules.target, 100)))
    n = len(scores)
    index = {int(s): i for i, s in enumerate(scores)}
    top = rules.target // STEP  # last turn-total level kept
    size = top + 1 + int(steps.max()) + 1  # levels past `top` only ever pass
    totals = np.arange(size) * STEP

    V = np.zeros((n, n))
    W = np.zeros((n, n, top + 1, NUM_DICE + 1))

    # Static bank outcomes of every pair and turn total: kind and the pair it leads to.
    kind = np.full((n, n, size), PASS, dtype=np.int8)
    target_pair = np.zeros((n, n, size), dtype=np.int64)  # flat index into V
    for ia, a in enumerate(scores):
        for ib, b in enumerate(scores):
            for i, t in enumerate(totals):
                if t == 0 or t % 100 == 50 or (a == 0 and t < rules.entry) or t > rules.target:
                    kind[ia, ib, i] = -1 if t <= rules.target else PASS  # not allowed / pass
                    continue
                k, x, y = bank_outcome(int(a), int(b), int(t), rules)
                kind[ia, ib, i] = k
                if k == OTHER:
                    target_pair[ia, ib, i] = index[x] * n + index[y]

    blocks = sorted({int(s) for s in scores}, reverse=True)
    for done, m in enumerate(blocks):
        im = index[m]
        pairs = [(im, j) for j in range(im + 1)] + [(j, im) for j in range(im)]
        pa = np.array([p[0] for p in pairs])
        pb = np.array([p[1] for p in pairs])
        flat_mirror = pb * n + pa
        position = {p: i for i, p in enumerate(pairs)}
        mirror = np.array([position[(b, a)] for a, b in pairs])
        k_blk, tp_blk = kind[pa, pb], target_pair[pa, pb]
        q = None
        # Start from the solved states one score step up on both sides: close enough
        # to save a fifth of the iterations (the fixed point does not depend on it).
        up_a, up_b = np.minimum(pa + 1, n - 1), np.minimum(pb + 1, n - 1)
        V[pa, pb] = V[up_a, up_b]
        for it in range(max_iter):
            pass_value = 1.0 - V.ravel()[flat_mirror]
            bank = _bank_values(V, k_blk, tp_blk, pass_value)
            if it < 3 or it % 4 == 0:
                # Also evaluate at a slightly higher pass value: the slope q is each
                # state's dependence on its pass value, i.e. on its mirror state.
                delta = 1e-6
                bank_up = np.where(k_blk == PASS, (pass_value + delta)[:, None], bank)
                w = _turn_recursion(
                    np.concatenate([pass_value, pass_value + delta]),
                    np.concatenate([bank, bank_up]),
                    tab,
                    top,
                    size,
                )
                u = w[: len(pairs), 0, NUM_DICE]
                q = np.clip((w[len(pairs) :, 0, NUM_DICE] - u) / delta, 0.0, 1.0 - 1e-12)
            else:  # the slope barely moves once the policy settles: reuse it
                u = _turn_recursion(pass_value, bank, tab, top, size)[:, 0, NUM_DICE]
            # With V_ab = c_ab + q_ab (1 - V_ba), solve each pair of mirror states exactly.
            # (Any q gives the same fixed point; a good q makes it converge fast.)
            c = u - q * pass_value
            qa, qb, ca, cb = q, q[mirror], c, c[mirror]
            new = (ca + qa - qa * (cb + qb)) / (1.0 - qa * qb)
            change = np.max(np.abs(new - V[pa, pb]))
            V[pa, pb] = new
            if change < tol:
                break
        # Final consistent tables at the converged values.
        pass_value = 1.0 - V.ravel()[flat_mirror]
        w = _turn_recursion(pass_value, _bank_values(V, k_blk, tp_blk, pass_value), tab, top, size)
        W[pa, pb] = w[:, : top + 1, :]
        V[pa, pb] = w[:, 0, NUM_DICE]
        if progress is not None:
            progress(done + 1, len(blocks))
    return TwoPlayerSolution(rules=rules, scores=scores, V=V, W=W)


def _bank_values(V, kind, target_pair, pass_value) -> np.ndarray:
    """Value of banking each turn total, for a batch of states (see ``bank_outcome``)."""
    bank = np.where(kind == WIN, 1.0, 0.0)
    bank = np.where(kind == OTHER, 1.0 - V.ravel()[target_pair], bank)
    bank = np.where(kind == PASS, pass_value[:, None], bank)
    return np.where(kind == -1, -np.inf, bank)


def _turn_recursion(pass_value, bank, tab: OptionTables, top: int, size: int) -> np.ndarray:
    """W[s, i, k] for a batch of states s, from terminal values: `pass_value[s]` for a
    bust or a turn total past the target, `bank[s, i]` for banking turn total 50*i
    (-inf where not allowed)."""
    s = len(pass_value)
    # Work with the state axis last so that gathers and maxima run on contiguous rows.
    w = np.empty((size, NUM_DICE + 1, s))
    w[top + 1 :] = pass_value
    w[:, 0, :] = 0.0
    rows = w.reshape(size * (NUM_DICE + 1), s)
    bank_t = np.ascontiguousarray(bank.T)
    cls_t = np.ascontiguousarray(tab.class_matrix().T)
    bust_part = tab.bust[:, None] * pass_value[None, :]
    roll_row = tab.steps * (NUM_DICE + 1) + tab.dice_left  # row of option o, from level 0
    rolled = np.empty((len(roll_row), s))
    banked = np.empty((len(roll_row), s))
    for i in range(top, -1, -1):
        np.take(rows, roll_row + i * (NUM_DICE + 1), axis=0, out=rolled)
        np.take(bank_t, tab.steps + i, axis=0, out=banked)
        np.maximum(rolled, banked, out=rolled)
        w[i] = cls_t @ tab.class_max(rolled) + bust_part
    return w.transpose(2, 0, 1)
