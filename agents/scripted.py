"""Scripted bots (RULES.md references in the docstrings)."""

from __future__ import annotations

import numpy as np

from fivethousand_rl.envs.game import Game, Move
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import BANK_BIT, NUM_DICE, ROLL_INFO, Rules, can_bank
from fivethousand_rl.envs.solver import turn_ev_table


def own_score_view(starts: np.ndarray, rules: Rules) -> np.ndarray:
    """The part of the scores (turn starts, mover's order) that a bot's choices read when
    they read only its own score (``fivethousand_rl.envs.turn_outcomes.view_keys``): that score."""
    return starts[:, :1]


class RandomBot(Policy):
    """Picks uniformly among the legal actions."""

    name = "random"

    def act(self, game: Game, rng: np.random.Generator) -> int:
        legal = game.legal()[0]
        return legal[int(rng.random() * len(legal))]

    turn_view = staticmethod(own_score_view)


class ThresholdBot(Policy):
    """Holds the highest-scoring set of each roll; banks once the turn total reaches
    `threshold` (when banking is allowed, R8), or whenever banking lands exactly on
    the target."""

    def __init__(self, threshold: int) -> None:
        if not isinstance(threshold, int) or threshold < 0:
            raise ValueError(f"threshold must be a non-negative integer, got {threshold!r}")
        self.threshold = threshold
        self.name = f"threshold:{threshold}"

    turn_view = staticmethod(own_score_view)

    def act(self, game: Game, rng: np.random.Generator) -> int:
        s = game.state
        best = ROLL_INFO[s.roll].best  # the best reading of the roll (R2)
        total = s.turn_total + best.points
        banked = s.scores[s.current]
        rules = game.rules
        if can_bank(banked, total, rules) and (
            total >= self.threshold or banked + total == rules.target
        ):
            return best.bits | BANK_BIT
        return best.bits


class TurnEVBot(Policy):
    """Maximizes the expected points of the current turn, exactly (``solve_turn_ev``,
    under the game's rules): it enters with the entry score (V1) and otherwise ignores
    the scores, except that it always takes an exact win."""

    name = "turn-ev"

    turn_view = staticmethod(own_score_view)

    def act(self, game: Game, rng: np.random.Generator) -> int:
        s = game.state
        moves = game.moves()
        win = _exact_win(moves, s.current)
        return _most_points(moves, game.rules, s.scores[s.current] > 0) if win is None else win


def _exact_win(moves: list[Move], me: int) -> int | None:
    """The first banking action that wins the game for seat `me`, or None."""
    return next((m.action for m in moves if m.banks and m.bank.winner == me), None)


def _most_points(moves: list[Move], rules: Rules, entered: bool) -> int:
    """The move after which the turn is expected to bank the most points under
    points-maximizing play (the first of equals)."""
    ev = turn_ev_table(rules)

    def points(move: Move) -> float:
        if move.banks:
            return move.turn_total
        return ev.roll_value(entered, move.turn_total, move.dice_left)

    return max(moves, key=points).action


class SmartBot(Policy):
    """A strong heuristic that knows the endgame.

    In order: take an exact win; bank a total that bumps an opponent (when the rules
    have bumps, V2); never let a turn total past the target feed an opponent (bank it
    when the points would be lost, as every overshoot is when the rules give no gifts,
    V3; else roll on the fewest dice to end the turn); near the target, bank whatever
    safe progress is allowed; otherwise play like ``turn-ev`` (hold and bank choices that
    maximize the turn's expected points). What a bank does is always the engine's word
    (``Move.bank``), so every rule variant is read, never assumed.
    """

    name = "smart"
    ENDGAME = 500  # bank any allowed progress once within this of the target

    @staticmethod
    def turn_view(starts: np.ndarray, rules: Rules) -> np.ndarray:
        """What its choices read of the scores (mover's order): its own, and the others'
        as a set (a bump, a lost gift and a win do not depend on who is where)."""
        return np.column_stack([starts[:, :1], np.sort(starts[:, 1:], axis=1)])

    def act(self, game: Game, rng: np.random.Generator) -> int:
        s = game.state
        target = game.rules.target
        me = s.current
        banked = s.scores[me]
        moves = game.moves()
        # 1. An exact win.
        win = _exact_win(moves, me)
        if win is not None:
            return win
        # 2. A bump (the biggest on offer).
        if bumps := [(m.turn_total, m.action) for m in moves if m.banks and m.bank.bumped]:
            return max(bumps)[1]
        if not (in_range := [m for m in moves if banked + m.turn_total < target]):
            return self._dead_turn(moves)
        # 3. Near the target: bank the biggest allowed step.
        safe_banks = [(m.turn_total, m.action) for m in in_range if m.banks]
        if safe_banks and target - banked - max(safe_banks)[0] <= self.ENDGAME:
            return max(safe_banks)[1]
        # 4. Otherwise maximize the turn's expected points.
        return _most_points(in_range, game.rules, banked > 0)

    @staticmethod
    def _dead_turn(moves: list[Move]) -> int:
        """Every move overshoots: end the turn without feeding anybody."""
        for m in moves:
            if m.banks and m.bank.lost:
                return m.action  # the points go to nobody (V3: always): the turn just ends
        # Roll on, keeping as few dice as possible to roll (the likeliest bust).
        rolls = [(m.dice_left, m.action) for m in moves if not m.banks and m.dice_left < NUM_DICE]
        return min(rolls)[1] if rolls else next(m.action for m in moves if not m.banks)
