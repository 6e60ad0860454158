"""PettingZoo AEC environment for 5000 with 2 to 8 players.

Every seat is an agent (``player_0`` ... ``player_{N-1}``, ``player_0`` plays first).
The agent selected is always the one whose decision is due: dice are rolled and busts
resolved inside ``step()``, so the same agent is often selected several times in a row
(one decision per roll) and an agent whose turn busts at once is skipped.

Observations are ``{"observation": float32 vector, "action_mask": int8 (64,)}``, the
vector as in ``fivethousand_rl.envs.encoding`` seen from the observing agent's seat; the mask is all
zeros for agents whose decision is not due. Actions use the same encoding as
``FiveThousand-v0``. Rewards: +1 to the winner, -1 to every other agent; nothing on
truncation after ``max_turns`` turns. With ``env()``'s wrappers an illegal move ends the
game with -1 for the offender and 0 for the others (PettingZoo's classic convention).

Arguments (``env(...)`` and ``raw_env(...)`` alike), as ``FiveThousand-v0``'s:

- ``n_players``: 2 to 8;
- the rules, one field at a time or all at once, not both (RULES.md; None: the seeds'
  rule): ``hold`` (``"free"`` or ``"all"``, R5), ``target`` (5000, V5), ``entry`` (500,
  a multiple of 50, V1), ``bump`` (True, V2), ``overshoot`` (``"gift"`` or ``"lost"``,
  V3), ``fifty_rule`` (True, V4), or ``rules=Rules(...)``;
- ``max_turns``: truncation limit, 1000 by default;
- ``render_mode``: ``"ansi"`` or ``"human"``;
- ``obs_encoding``: ``"compact"`` (default) or ``"rich"``, the richer vector the trained
  agents read.

``state()`` is the global state, for centralised critics and search: the compact vector
of ``fivethousand_rl.envs.encoding`` seen from seat 0 (``player_0``), whatever ``obs_encoding`` the
agents observe. The game has no hidden information, so it holds everything any agent
sees: every seat's banked score and entered flag in seat order, whose turn it is (the
one-hot is the mover's seat number), the turn total, what the mover would still need
after banking it, the 50 rule's flag, and the pending roll (dice count, sorted faces,
face counts, whether some action banks); all zeros in the roll's slots once the game is
over. ``state_space`` is its ``Box(-1, 2, (3N+41,), float32)``. PettingZoo's
``turn_based_aec_to_parallel`` turns the environment into a ParallelEnv (one agent acts
per step; the others' actions are ignored), whose ``state()`` is this one.

Use ``env()`` for the wrapped environment (illegal moves end the game with -1 for the
offender, API misuse raises, and an action outside 0..63 raises ValueError, as in
``raw_env``) or ``raw_env`` for the bare one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from fivethousand_rl.envs.driver import any_decision, play
from fivethousand_rl.envs.encoding import OBS_LOW, ObsSpec, check_env_options
from fivethousand_rl.envs.game import OVER, Game, action_index
from fivethousand_rl.envs.render import render_text
from fivethousand_rl.envs.rules import NUM_ACTIONS, Rules


def env(**kwargs: Any) -> AECEnv:
    """The AEC environment with PettingZoo's standard safety wrappers, an action
    outside the action space refused by ValueError rather than asserted."""
    aec = raw_env(**kwargs)
    aec = wrappers.TerminateIllegalWrapper(aec, illegal_reward=-1)
    aec = CheckedActions(aec)
    return wrappers.OrderEnforcingWrapper(aec)


class CheckedActions(wrappers.BaseWrapper):
    """PettingZoo's AssertOutOfBoundsWrapper as a one-line ValueError: an assert
    vanishes under ``python -O``, and an action past the mask would reach
    TerminateIllegalWrapper's mask lookup (an IndexError, or -1 read as action 63)."""

    def step(self, action: int | None) -> None:
        agent = self.agent_selection
        if action is not None or not (self.terminations[agent] or self.truncations[agent]):
            action_index(action)
        super().step(action)


class raw_env(AECEnv):  # noqa: N801 - PettingZoo's naming convention
    metadata = {
        "render_modes": ["ansi", "human"],
        "name": "fivethousand_v0",
        "is_parallelizable": False,
        "render_fps": 4,
    }

    def __init__(
        self,
        n_players: int = 2,
        hold: str | None = None,
        target: int | None = None,
        entry: int | None = None,
        max_turns: int = 1000,
        render_mode: str | None = None,
        obs_encoding: str = "compact",
        bump: bool | None = None,
        overshoot: str | None = None,
        fifty_rule: bool | None = None,
        rules: Rules | None = None,
    ) -> None:
        super().__init__()
        # A rule option left at None is the seeds' rule (fivethousand_rl.envs.encoding.env_rules).
        self.obs_spec = check_env_options(locals(), self.metadata)
        self.rules, self.n_players = self.obs_spec.rules, (n_players := self.obs_spec.n_players)
        self.max_turns, self.render_mode = max_turns, render_mode
        self.possible_agents = [f"player_{i}" for i in range(n_players)]
        self.agents = self.possible_agents[:]
        vector = spaces.Box(OBS_LOW, self.obs_spec.high, (self.obs_spec.size,), np.float32)
        mask = spaces.Box(0, 1, (NUM_ACTIONS,), np.int8)
        obs_space = spaces.Dict({"observation": vector, "action_mask": mask})
        self.observation_spaces = dict.fromkeys(self.possible_agents, obs_space)
        # The global state: the compact observation from seat 0, for any obs_encoding.
        self.state_spec = ObsSpec("compact", n_players, self.rules)
        self.state_space = spaces.Box(
            OBS_LOW, self.state_spec.high, (self.state_spec.size,), np.float32
        )
        self.action_spaces = {a: spaces.Discrete(NUM_ACTIONS) for a in self.possible_agents}
        self.np_random, _ = seeding.np_random(None)
        self.game: Game | None = None

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        seat = self.possible_agents.index(agent)
        mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        game = self._live_game
        if game.state.phase != OVER and game.state.current == seat:
            mask[game.legal_actions()] = 1
        return {"observation": self.obs_spec.encode(game, seat), "action_mask": mask}

    def state(self) -> np.ndarray:
        """The global state (see the module's docstring): the compact observation of
        the game from seat 0, a float32 vector in ``state_space``."""
        return self.state_spec.encode(self._live_game, 0)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is not None:
            self.np_random, _ = seeding.np_random(seed)
        self.game = Game(self.n_players, self.rules, seed=int(self.np_random.integers(2**63)))
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self._roll_until_decision()
        if self.render_mode == "human":
            self.render()

    def step(self, action: int) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        action = action_index(action)  # refused before anything changes
        self._cumulative_rewards[agent] = 0
        self._live_game.act(action)
        self._roll_until_decision()
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _roll_until_decision(self) -> None:
        """Roll (resolving busts) until a decision is due, then select its agent; set
        rewards and terminations when the game has ended or the turn limit is hit."""
        game = self._live_game
        s = game.state
        play(game, [], self.np_random, max_turns=self.max_turns, until=any_decision)
        self.rewards = dict.fromkeys(self.agents, 0)
        if s.phase == OVER:
            for i, agent in enumerate(self.possible_agents):
                self.rewards[agent] = 1 if i == s.winner else -1
            self.terminations = dict.fromkeys(self.agents, True)
        elif s.turns >= self.max_turns:
            self.truncations = dict.fromkeys(self.agents, True)
        self.agent_selection = self.possible_agents[s.current]

    def render(self) -> str | None:
        if self.render_mode is None:
            return None
        text = render_text(self._live_game, self.possible_agents)
        if self.render_mode == "ansi":
            return text
        print(text)
        return None

    def close(self) -> None:
        """Nothing to release: the game holds no files, windows or processes."""

    @property
    def _live_game(self) -> Game:
        if self.game is None:
            raise RuntimeError("call reset() first")
        return self.game
