"""Scripted bots (RULES.md references in the docstrings)."""

from __future__ import annotations

import numpy as np

from envs.game import Game
from envs.rules import BANK_BIT, ROLL_INFO, can_bank


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
