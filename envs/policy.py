"""The one interface every player implements, and how players are found by name.

A ``Policy`` chooses actions; scripted bots, the solver, trained and exported models
all implement it (they live in ``agents``). The environments and the game driver only
know this interface, never the ``agents`` package: a bot named by a string
(``opponents="smart"``) is built by the *policy resolver*, a function from a name to a
Policy that the ``agents`` package provides. It is found through the Python entry point
group ``fivethousand_rl.policies`` (declared in ``pyproject.toml``), so ``import envs``
alone is enough to play against bots by name, and a separate package can offer its own
bots the same way; ``set_policy_resolver`` replaces it (tests, embedding).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

import numpy as np

from fivethousand_rl.envs.game import Game
from fivethousand_rl.envs.rules import Rules

RESOLVER_GROUP = "fivethousand_rl.policies"


@runtime_checkable
class Policy(Protocol):
    """Chooses an action for the player whose decision is due.

    ``act`` is called only when ``game.state.phase == "decide"``; the deciding seat is
    ``game.state.current``. It returns one of ``game.legal_actions()`` (see
    ``fivethousand_rl.envs.rules`` for the action encoding) and must not change the game. All the
    randomness a policy needs comes from `rng`, so the caller's seed decides it.

    ``check_game`` and ``prepare`` have defaults (any game; nothing to prepare), which a
    class gets by subclassing ``Policy``: ``class MyBot(Policy): name = "mine"; def
    act(...)``. Callers call both on every policy, never probing for them.
    """

    name: str

    def act(self, game: Game, rng: np.random.Generator) -> int: ...

    def check_game(self, n_players: int, rules: Rules) -> None:
        """Raise ValueError (one line) if this policy cannot play such a game: a trained
        model made for another number of players or other rules. Default: any game."""

    def prepare(self, rules: Rules) -> None:
        """Compute, before play starts, what this policy needs under `rules` (a solver
        table), so that work is not repeated or timed in each worker. Default: nothing."""


PolicyResolver = Callable[[str], Policy]
_resolver: PolicyResolver | None = None


def set_policy_resolver(resolver: PolicyResolver | None) -> None:
    """Use `resolver` to build policies from names (None: back to the entry point)."""
    global _resolver
    _resolver = resolver


def resolve_policy(spec: Any) -> Policy:
    """`spec` itself if it is a Policy, else the policy the resolver builds from its
    name; ValueError (one line) for a name nobody knows."""
    if isinstance(spec, Policy):
        return spec
    global _resolver
    if _resolver is None:
        found = entry_points(group=RESOLVER_GROUP)
        if not found:
            raise ValueError(
                f"cannot build the bot {spec!r} by name: no policy resolver is installed "
                f"(entry point group {RESOLVER_GROUP!r}); pass a Policy object instead"
            )
        _resolver = sorted(found, key=lambda ep: ep.name)[0].load()
    return _resolver(spec)
