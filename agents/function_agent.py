"""Your own network as a player, by one call: the batched-agent protocol.

A *batch function* takes the observations of many decisions at once and returns one
action per decision:

    fn(obs, mask) -> actions
        obs:     (B, D) float32, each row what the environment shows the player to move
                 (``FiveThousand-v0``'s observation: ``envs.encoding``, compact or rich)
        mask:    (B, 64) bool, the legal actions of each row (``action_masks()``)
        actions: (B,) integers, a legal action per row (numpy, or anything ``np.asarray``
                 reads; a torch tensor is moved to the CPU first)

``from_function(fn, name=..., n_players=2, obs_encoding="compact", rules=None)`` makes it a
``Policy`` (``FunctionAgent``): it plays in the engine, the environments, tournaments
(``evaluate``) and the exact best response, which asks it for every decision its turns
can reach, ``BATCH_ROWS`` rows per call (``fivethousand_rl.envs.batch``'s ``act_batch``; one row per
call through ``act``). Torch or JAX can sit behind `fn`; the rows are written from the
game's arrays by ``fivethousand_rl.envs.vector_env.observe_batch``, bit for bit the environment's
observation, as for the trained models of ``fivethousand_rl.agents.neural``.

`fn` gets no random generator: the agent is deterministic, which an exact
exploitability needs (``agents.best_response.exploitability``). A function that draws
its own random numbers (sampling from a softmax) has no exact best response; play it
greedily (the argmax of the legal logits) to measure it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fivethousand_rl.agents.neural import batch_actions
from fivethousand_rl.envs.batch import BatchGames
from fivethousand_rl.envs.encoding import ObsSpec
from fivethousand_rl.envs.game import Game, check_players
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import Rules

# (observations (B, D) float32, legal masks (B, 64) bool) -> (B,) integer actions
BatchFunction = Callable[[np.ndarray, np.ndarray], Any]


class FunctionAgent(Policy):
    """A batch function (see the module) that plays the games of its observation spec:
    `n_players` players under `rules` (None: the seeds' rules), observed with
    `obs_encoding` ("compact" or "rich"); ``check_game`` refuses any other game in one
    line. Deterministic: `fn` is given no generator. Made by ``from_function``:

        agent = from_function(fn, name="my-agent", n_players=2)
        exploitability(agent)  # fivethousand_rl.agents.best_response: exact, 2 players
    """

    def __init__(
        self,
        fn: BatchFunction,
        name: str | None = None,
        n_players: int = 2,
        obs_encoding: str = "compact",
        rules: Rules | None = None,
    ) -> None:
        if not callable(fn):
            raise ValueError(f"from_function needs a function of (obs, mask), got {fn!r}")
        if rules is not None and not isinstance(rules, Rules):
            raise ValueError(
                f"rules must be an fivethousand_rl.envs.rules.Rules or None, got {rules!r}"
            )
        self.fn = fn
        self.name = name if name is not None else getattr(fn, "__name__", "function")
        self.spec = ObsSpec(obs_encoding, check_players(n_players), rules or Rules())
        self._checked: tuple | None = None  # the (players, rules) last checked by act

    def check_game(self, n_players: int, rules: Rules) -> None:
        """Raise ValueError (one line) unless the game is the one `fn` was made for."""
        spec = self.spec
        if (n_players, rules) != (spec.n_players, spec.rules):
            raise ValueError(
                f"{self.name} plays {spec.n_players}-player games under {spec.rules}, not "
                f"{n_players} players under {rules} (from_function(..., n_players=, rules=))"
            )

    def choose(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """`fn`'s actions for rows of observations and masks (`rng` is not used: `fn`
        is deterministic); ValueError (one line) for anything but one integer per row."""
        out = self.fn(obs, mask)
        if hasattr(out, "detach"):  # a torch tensor, maybe on a GPU
            out = out.detach().cpu().numpy()
        actions = np.asarray(out)
        if actions.shape != (len(obs),) or not np.issubdtype(actions.dtype, np.integer):
            raise ValueError(
                f"{self.name} returned {actions.dtype} of shape {actions.shape}; expected one "
                f"integer action per row, shape ({len(obs)},)"
            )
        return actions.astype(np.int64, copy=False)

    def act(self, game: Game, rng: np.random.Generator) -> int:
        """`fn` on a batch of one: the observation of the player to move."""
        key = (game.n_players, game.rules)
        if key != self._checked:  # a game seated without asking is refused too
            self.check_game(*key)
            self._checked = key
        obs = self.spec.encode(game, game.state.current)[None]
        return int(self.choose(obs, game.action_mask()[None], rng)[0])  # a copy: fn may write

    def act_batch(self, games: BatchGames, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """`fn` on the games `idx` at once (``fivethousand_rl.agents.neural.batch_actions``)."""
        self.check_game(games.n_players, games.rules)
        return batch_actions(games, idx, self.spec, self.choose, rng)


# The player that batch function `fn` is, by the name the module and the docs give it.
from_function = FunctionAgent
