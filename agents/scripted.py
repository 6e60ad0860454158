"""Scripted bots (RULES.md references in the docstrings)."""

from __future__ import annotations

from functools import cache

import numpy as np

from agents.solver import TurnEV, solve_turn_ev
from envs.game import Game, gift_recipient
from envs.rules import BANK_BIT, NUM_DICE, ROLL_INFO, Rules, can_bank


class RandomBot:
    """Picks uniformly among the legal actions."""

    name = "random"

    def act(self, game: Game, rng: np.random.Generator) -> int:
        legal = game.legal()[0]
        return legal[int(rng.random() * len(legal))]


class ThresholdBot:
    """Holds the highest-scoring set of each roll; banks once the turn total reaches
    `threshold` (when banking is allowed, R8), or whenever banking lands exactly on
    the target."""

    def __init__(self, threshold: int) -> None:
        if not isinstance(threshold, int) or threshold < 0:
            raise ValueError(f"threshold must be a non-negative integer, got {threshold!r}")
        self.threshold = threshold
        self.name = f"threshold:{threshold}"

    def act(self, game: Game, rng: np.random.Generator) -> int:
        s = game.state
        best = ROLL_INFO[s.roll].best  # the best reading of the roll (R2)
        total = s.turn_total + best.points
        banked = s.scores[s.current]
        rules = game.rules
        if can_bank(banked, total, rules.entry) and (
            total >= self.threshold or banked + total == rules.target
        ):
            return best.bits | BANK_BIT
        return best.bits


@cache
def _turn_ev(rules: Rules) -> TurnEV:
    return solve_turn_ev(rules)


def _options(game: Game):
    """(action, held points, dice left to roll, bank?) of every legal action."""
    s = game.state
    info = ROLL_INFO[s.roll]
    holds = info.hold_for_bits(game.rules.hold)
    n = len(info.dice)
    for action in game.legal()[0]:
        hold = holds[action & ~BANK_BIT]
        yield (
            action,
            s.turn_total + hold.points,
            (n - len(hold.dice)) or NUM_DICE,
            bool(action & BANK_BIT),
        )


class TurnEVBot:
    """Maximizes the expected points of the current turn, exactly (``solve_turn_ev``):
    it enters with 500 and otherwise ignores the scores, except that it always takes
    an exact win."""

    name = "turn-ev"

    def act(self, game: Game, rng: np.random.Generator) -> int:
        s = game.state
        ev = _turn_ev(game.rules)
        banked = s.scores[s.current]
        entered = banked > 0
        best, best_value = None, -np.inf
        for action, total, left, bank in _options(game):
            if bank and banked + total == game.rules.target:
                return action
            value = total if bank else ev.roll_value(entered, total, left)
            if value > best_value:
                best, best_value = action, value
        return best


class SmartBot:
    """A strong heuristic that knows the endgame.

    In order: take an exact win; bank a total that bumps an opponent; never let a
    turn total past the target feed an opponent (bank it only when the gift would be
    lost, else roll on the fewest dice to end the turn); near the target, bank whatever
    safe progress is allowed; otherwise play like ``turn-ev`` (hold and bank choices that
    maximize the turn's expected points).
    """

    name = "smart"
    ENDGAME = 500  # bank any allowed progress once within this of the target

    def act(self, game: Game, rng: np.random.Generator) -> int:
        s = game.state
        rules = game.rules
        me = s.current
        banked = s.scores[me]
        others = [score for seat, score in enumerate(s.scores) if seat != me]
        options = list(_options(game))
        # 1. An exact win.
        for action, total, _, bank in options:
            if bank and banked + total == rules.target:
                return action
        # 2. A bump (the biggest on offer).
        bumps = [(total, a) for a, total, _, bank in options if bank and banked + total in others]
        if bumps:
            return max(bumps)[1]
        in_range = [o for o in options if banked + o[1] < rules.target]
        if not in_range:
            return self._dead_turn(game, options, banked)
        # 3. Near the target: bank the biggest allowed step.
        safe_banks = [(total, a) for a, total, _, bank in in_range if bank]
        if safe_banks and rules.target - banked - max(safe_banks)[0] <= self.ENDGAME:
            return max(safe_banks)[1]
        # 4. Otherwise maximize the turn's expected points.
        ev = _turn_ev(rules)
        entered = banked > 0
        best, best_value = None, -np.inf
        for action, total, left, bank in in_range:
            value = total if bank else ev.roll_value(entered, total, left)
            if value > best_value:
                best, best_value = action, value
        return best

    @staticmethod
    def _dead_turn(game: Game, options, banked: int) -> int:
        """Every option overshoots: end the turn without feeding anybody."""
        s, rules = game.state, game.rules
        for action, total, _, bank in options:
            if bank and gift_recipient(s.scores, s.current, total, rules) is None:
                return action  # the points are lost: the turn just ends
        # Roll on, keeping as few dice as possible to roll (the likeliest bust).
        rolls = [(left, a) for a, _, left, bank in options if not bank and left < NUM_DICE]
        if rolls:
            return min(rolls)[1]
        return next(a for a, _, _, bank in options if not bank)
