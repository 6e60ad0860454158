"""The one small interface every player implements: scripted bots, the solver,
trained models and exported models alike."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from envs.game import Game


@runtime_checkable
class Policy(Protocol):
    """Chooses an action for the player whose decision is due.

    ``act`` is called only when ``game.state.phase == "decide"``; the deciding seat is
    ``game.state.current``. It returns one of ``game.legal_actions()`` (see
    ``envs.rules`` for the action encoding) and must not change the game. All the
    randomness a policy needs comes from `rng`, so the caller's seed decides it.
    """

    name: str

    def act(self, game: Game, rng: np.random.Generator) -> int: ...
