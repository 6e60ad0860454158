"""The game loop, written once: tournaments, the environments' opponents, the regret
analysis, the terminal game and the demo all play through ``play``.

A game alternates chance steps (``Game.roll``, from the game's own dice) and decisions
(``Game.act``); ``play`` runs them with one policy per seat, from whatever position the
game is in, and tells an optional callback of every step as an event record
(``envs.game.Rolled`` / ``envs.game.Moved``), from which text and pictures are made
(``fivethousand_rl.envs.render``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from fivethousand_rl.envs.game import DECIDE, OVER, Event, Game
from fivethousand_rl.envs.policy import Policy

DEFAULT_MAX_TURNS = 1000  # R11: a game that reaches it is cut off without a winner


def play(
    game: Game,
    policies: Sequence[Policy | None],
    rng: np.random.Generator,
    *,
    max_turns: int = DEFAULT_MAX_TURNS,
    until: Callable[[Game], bool] | None = None,
    on_event: Callable[[Game, Event], None] | None = None,
) -> Game:
    """Play `game` on until it is over, `max_turns` turns are complete, or `until(game)`
    holds before a step. Seat i's decisions come from ``policies[i].act(game, rng)``
    (a seat whose decisions never come up, because `until` stops first, may be None);
    `on_event(game, event)` follows each step. Returns `game`."""
    state, roll, act = game.state, game.roll, game.act  # hot loop: look them up once
    while state.phase != OVER and state.turns < max_turns:
        if until is not None and until(game):
            break
        if state.phase == DECIDE:
            act(policies[state.current].act(game, rng))
        else:
            roll()
        if on_event is not None:
            on_event(game, game.last_event)
    return game


def decision_of(seat: int) -> Callable[[Game], bool]:
    """An `until` for ``play``: stop when `seat` has a decision to make."""
    return lambda game: game.state.phase == DECIDE and game.state.current == seat


def any_decision(game: Game) -> bool:
    """An `until` for ``play``: stop at the next decision, whoever makes it."""
    return game.state.phase == DECIDE
