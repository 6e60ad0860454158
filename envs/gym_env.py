"""Gymnasium environment ``FiveThousand-v0``: one learning seat against policy-driven opponents."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from fivethousand_rl.envs.driver import decision_of, play
from fivethousand_rl.envs.encoding import OBS_LOW, check_env_options
from fivethousand_rl.envs.game import (
    DECIDE,
    OVER,
    Event,
    Game,
    IllegalMoveError,
    Rolled,
    action_index,
)
from fivethousand_rl.envs.policy import Policy, resolve_policy
from fivethousand_rl.envs.render import render_rgb, render_text
from fivethousand_rl.envs.rules import NUM_ACTIONS, Rules

ILLEGAL_ACTION_MODES = ("lose", "raise")
# The observation: the vector, or with dict_obs {"observation": ..., "action_mask": ...}.
Observation = np.ndarray | dict[str, np.ndarray]
Action = int | np.integer  # 0..63 (see "Action Space")
NO_WINNER = -1  # info["winner"] while nobody has won (as the vector env's arrays say it)


class FiveThousandEnv(gym.Env[Observation, Action]):
    """The dice game 5000 (RULES.md) from the seat of one learning player.

    ## Description
    Each turn a player rolls five dice, sets aside scoring dice, and either banks the
    points of the turn or rolls the remaining dice, risking a bust that loses the
    turn's points. The first player to bank exactly 5000 (the target) wins. The house
    rules of RULES.md V1-V5 are arguments (below). The other seats are played by
    opponent policies inside ``step()``: the learner is only ever handed a scoring roll
    of its own, never a bust or a finished game.

    ## Action Space
    ``Discrete(64)``. Bits 0-4 select the dice of the current roll to hold, by position
    in the roll sorted ascending (as the observation shows it); bit 5 set means bank
    after holding, clear means roll the dice left. Among equal faces only leftmost-first
    holds are legal, so each distinct hold has one action. ``action_masks()`` gives the
    legal ones as an int8 vector of 0s and 1s: what sb3-contrib's MaskablePPO reads, and
    what ``action_space.sample(mask=...)`` takes (Gymnasium's mask convention).

    ## Observation Space
    ``Box(-1, 2, (3N+41,), float32)`` for N players, laid out as documented in
    ``envs.encoding`` (scores from the learner's seat onward, entered flags, whose turn,
    turn total, the 50 rule, dice count, the sorted roll one-hot, face counts). With
    ``dict_obs=True``: ``{"observation": that vector, "action_mask": int8 (64,)}``.

    ## Rewards
    +1 when the learner wins, -1 when any other player wins (with N players a loss is
    -1 whoever wins), 0 on every other step and on truncation. An illegal action with
    ``illegal_action="lose"`` ends the episode with -1.

    ## Episode End
    Terminated when a player wins or (``illegal_action="lose"``) the learner plays an
    illegal action; truncated after ``max_turns`` turns (all players' turns counted).

    ## Info
    ``reset()`` and every ``step()`` return the same seven keys, each always of one type
    (so Gymnasium's vector environments can batch them into arrays):

    - ``illegal_action`` (bool): this step was an illegal action, which ended the
      episode (``illegal_action="lose"``);
    - ``turns`` (int): turns played so far in the game, every player's counted;
    - ``winner`` (int): the winning seat, or ``NO_WINNER`` (-1) while nobody has won
      (and after a truncation), as the vector environment reports it;
    - ``learner_seat`` (int): the learner's seat this episode;
    - ``learner_turns``, ``learner_busts`` (int): the learner's turns begun so far, and
      how many of them ended in a bust;
    - ``action_mask`` (int8 array (64,)): ``action_masks()``, Gymnasium's
      ``info["action_mask"]`` convention (all 0 once the episode is over), so that
      ``gym.make_vec`` in any mode hands the masks over as an int8 (num_envs, 64) array.

    ## Arguments
    - ``n_players``: 2 to 8.
    - ``opponents``: a bot name (``"random"``, ``"threshold:350"``, ...; built by the
      policy resolver, see ``envs.policy``) or a ``envs.policy.Policy``, used for every
      other seat; or a sequence of N-1 of them, for the seats after the learner's in
      turn order. With any of the toolkit's players (bots, trained or exported models,
      best responses, pools of them) the environment pickles with the standard
      ``pickle`` and the copy plays on exactly as the original; a Policy of one's own
      needs to pickle itself.
    - ``learner_seat``: a seat number, or ``"random"`` to draw it at each reset. Seat 0
      always plays first.
    - The rules (``envs.rules.Rules``, the seeds' rules by default), either one field
      at a time or all at once, not both:

      - ``hold``: ``"free"`` (default) or ``"all"`` (RULES.md R5);
      - ``target``: the exact score that wins, a multiple of 100 (5000; V5);
      - ``entry``: the turn total a player at 0 needs to bank, a multiple of 50 from 50
        to the target (500; V1);
      - ``bump``: banking onto another player's score sends it to 0 (True; V2);
      - ``overshoot``: ``"gift"`` (default: the turn total goes to the lowest entered
        player) or ``"lost"`` (V3);
      - ``fifty_rule``: no banking a total ending in 50 (True; V4: off, scores may end
        in 50);
      - ``rules``: a ``Rules`` instead of the options above.

      Trained opponents must have been trained under the same rules (refused in one
      line otherwise); bots play any.
    - ``max_turns``: truncation limit, 1000 by default.
    - ``illegal_action``: ``"lose"`` (default) or ``"raise"`` (IllegalMoveError).
    - ``dict_obs``: observations as a dict that carries the action mask.
    - ``render_mode``: ``"ansi"`` (``render()`` returns text), ``"human"`` (prints it) or
      ``"rgb_array"`` (an image of the dice and score bars, for video recording).
    - ``obs_encoding``: ``"compact"`` (default, above) or ``"rich"`` (adds one-hot scores
      and the consequences of each action, see ``fivethousand_rl.envs.encoding``).
    - ``opponent_pool``: ``[(opponent, weight), ...]``; each opponent seat is drawn from
      it at every reset (``add_opponent`` grows it, e.g. with self-play snapshots).
    """

    metadata = {"render_modes": ["ansi", "human", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        n_players: int = 2,
        opponents: Any = "random",
        learner_seat: int | str = 0,
        hold: str | None = None,
        target: int | None = None,
        entry: int | None = None,
        max_turns: int = 1000,
        illegal_action: str = "lose",
        dict_obs: bool = False,
        render_mode: str | None = None,
        obs_encoding: str = "compact",
        opponent_pool: Sequence[tuple[Any, float]] | None = None,
        bump: bool | None = None,
        overshoot: str | None = None,
        fifty_rule: bool | None = None,
        rules: Rules | None = None,
    ) -> None:
        # A rule option left at None is the seeds' rule (fivethousand_rl.envs.encoding.env_rules).
        self.obs_spec = spec = check_env_options(locals(), self.metadata)
        self.rules, self.n_players = spec.rules, (n_players := spec.n_players)
        if learner_seat != "random" and (
            not isinstance(learner_seat, int) or not 0 <= learner_seat < n_players
        ):
            raise ValueError(
                f"learner_seat must be 0..{n_players - 1} or 'random', got {learner_seat!r}"
            )
        if illegal_action not in ILLEGAL_ACTION_MODES:
            raise ValueError(
                f"illegal_action must be one of {ILLEGAL_ACTION_MODES}, got {illegal_action!r}"
            )
        if isinstance(opponents, str) or not isinstance(opponents, Sequence):
            opponents = [opponents] * (n_players - 1)
        if len(opponents) != n_players - 1:
            raise ValueError(
                f"need {n_players - 1} opponents for {n_players} players, got {len(opponents)}"
            )
        self.opponents = [resolve_policy(o) for o in opponents]
        self.opponent_specs = list(opponents)  # how each was named (name, path or Policy)
        for policy in self.opponents:  # trained models must fit this game
            policy.check_game(n_players, self.rules)
        self.set_opponent_pool(opponent_pool or [])
        self.learner_seat_option, self.max_turns = learner_seat, max_turns
        self.illegal_action, self.dict_obs, self.render_mode = illegal_action, dict_obs, render_mode

        self.action_space = spaces.Discrete(NUM_ACTIONS)
        vector = spaces.Box(OBS_LOW, spec.high, shape=(spec.size,), dtype=np.float32)
        if dict_obs:
            mask = spaces.Box(0, 1, shape=(NUM_ACTIONS,), dtype=np.int8)
            # Gymnasium types a Dict space's samples as dict[str, Space]: they are arrays.
            self.observation_space = spaces.Dict(  # type: ignore[assignment]
                {"observation": vector, "action_mask": mask}
            )
        else:
            self.observation_space = vector

        self.game: Game | None = None
        self.learner_seat = learner_seat if isinstance(learner_seat, int) else 0
        self._seat_policy: list[Any] = []
        self._seat_specs: list[Any] = []
        self._done = True
        self._learner_turns = self._learner_busts = 0

    # ------------------------------------------------------------------ API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        super().reset(seed=seed)
        rng = self.np_random
        if self.learner_seat_option == "random":
            self.learner_seat = int(rng.integers(self.n_players))
        # Seat k after the learner is played by opponents[k - 1], or, with a pool, by
        # a member drawn for this game in proportion to its weight.
        opponents, specs = self.opponents, self.opponent_specs
        if self.opponent_pool:
            weights = np.array([w for _, w in self.opponent_pool], dtype=float)
            picks = rng.choice(len(weights), size=self.n_players - 1, p=weights / weights.sum())
            opponents = [self.opponent_pool[i][0] for i in picks]
            specs = [self.pool_specs[i] for i in picks]
        self._seat_policy, self._seat_specs = [None] * self.n_players, [None] * self.n_players
        for k, (policy, spec) in enumerate(zip(opponents, specs, strict=True), start=1):
            seat = (self.learner_seat + k) % self.n_players
            self._seat_policy[seat], self._seat_specs[seat] = policy, spec
        # The first decision is the learner's by construction. In the rare game that an
        # opponent wins (or every learner roll busts until the turn limit) before it, a
        # new game is dealt: an episode never starts finished.
        while True:
            self._learner_turns = self._learner_busts = 0
            self.game = Game(self.n_players, self.rules, seed=int(rng.integers(2**63)))
            self._advance()
            if self.game.state.phase == DECIDE:
                break
        self._done = False
        if self.render_mode == "human":
            self.render()
        return self._observation(), self._info()

    def step(self, action: Action) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """`action` (0..63; numpy integers too) for the learner; the opponents play on
        to its next decision or the end."""
        action = action_index(action)
        if self._done:
            raise RuntimeError("the episode is over: call reset() before step()")
        game = self._live_game
        try:
            game.act(action)
        except IllegalMoveError:
            if self.illegal_action == "raise":
                raise
            self._done = True
            return self._observation(), -1.0, True, False, {**self._info(), "illegal_action": True}
        self._advance()
        s = game.state
        terminated = s.phase == OVER
        reward = (1.0 if s.winner == self.learner_seat else -1.0) if terminated else 0.0
        truncated = not terminated and s.turns >= self.max_turns
        self._done = terminated or truncated
        if self.render_mode == "human":
            self.render()
        return self._observation(), reward, terminated, truncated, self._info()

    def add_opponent(self, spec: Any, weight: float = 1.0) -> None:
        """Add a policy (or bot name, or checkpoint path) to the opponent pool; from the
        next reset, each opponent seat is drawn from the pool by weight."""
        if not weight > 0:
            raise ValueError(f"an opponent's weight must be positive, got {weight!r}")
        policy = resolve_policy(spec)
        policy.check_game(self.n_players, self.rules)
        self.opponent_pool.append((policy, float(weight)))
        self.pool_specs.append(spec)

    def set_opponent_pool(self, pool: Sequence[tuple[Any, float]]) -> None:
        """Replace the opponent pool (used from the next reset)."""
        self.opponent_pool: list[tuple[Policy, float]] = []
        self.pool_specs: list[Any] = []  # how each member was named
        for spec, weight in pool:
            self.add_opponent(spec, weight)

    def opponent_names(self) -> list[str]:
        """Names of the policies in the seats around the learner this game."""
        return [p.name for seat, p in enumerate(self._seat_policy) if seat != self.learner_seat]

    def get_state(self) -> dict[str, Any]:
        """Everything needed to continue this environment exactly where it is: the game,
        the dice stream and the generators, the seats (opponents by their spec, so the
        pool may have changed since the game began)."""
        return {
            "game": self.game.to_json() if self.game is not None else None,
            "dice": self.game.dice_state() if self.game is not None else None,
            "np_random": self.np_random.bit_generator.state,
            "learner_seat": self.learner_seat,
            "seat_specs": list(self._seat_specs),
            "done": self._done,
            "learner_turns": self._learner_turns,
            "learner_busts": self._learner_busts,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore a state saved by ``get_state``."""
        # The seats keep the opponents they had, even one that has left the pool since.
        known = dict(zip(self.pool_specs, (p for p, _ in self.opponent_pool), strict=True))
        known.update(zip(self.opponent_specs, self.opponents, strict=True))
        self.np_random.bit_generator.state = state["np_random"]
        self.learner_seat = state["learner_seat"]
        self._seat_specs = list(state["seat_specs"])
        self._seat_policy = [
            None if spec is None else known.get(spec) or resolve_policy(spec)
            for spec in self._seat_specs
        ]
        self._done = state["done"]
        self._learner_turns, self._learner_busts = state["learner_turns"], state["learner_busts"]
        if state["game"] is not None:
            self.game = Game.from_json(state["game"])
            self.game.set_dice_state(state["dice"])

    def action_masks(self) -> np.ndarray:
        """Legal actions now, as int8 0/1 (all 0 once the episode is over): Gymnasium's
        mask convention, so ``action_space.sample(mask=env.action_masks())`` draws a legal
        action; MaskablePPO reads it as bool. Test it with ``mask == 1`` or
        ``np.flatnonzero(mask)``: as an index (``x[mask]``, ``~mask``) int8 is not bool."""
        if self._done or self.game is None:
            return np.zeros(NUM_ACTIONS, dtype=np.int8)
        return self.game.action_mask().astype(np.int8)

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi'")
            return None
        if self.render_mode == "rgb_array":
            return render_rgb(self.game) if self.game is not None else None
        if self.game is None:
            text = "(call reset() first)\n"
        else:
            names = [f"player {i}" for i in range(self.n_players)]
            names[self.learner_seat] += " (learner)"
            text = render_text(self.game, names)
        if self.render_mode == "ansi":
            return text
        print(text)
        return None

    # ------------------------------------------------------------- internals
    @property
    def _live_game(self) -> Game:
        if self.game is None:
            raise RuntimeError("call reset() first")
        return self.game

    def _advance(self) -> None:
        """Play dice and opponents until the learner must decide, the game ends, or the
        turn limit is reached."""
        play(
            self._live_game,
            self._seat_policy,
            self.np_random,
            max_turns=self.max_turns,
            until=decision_of(self.learner_seat),
            on_event=self._count_learner_rolls,
        )

    def _count_learner_rolls(self, game: Game, event: Event) -> None:
        if event.seat == self.learner_seat and type(event) is Rolled:
            self._learner_turns += event.turn_total == 0  # a turn's first roll
            self._learner_busts += event.bust

    def _observation(self) -> Observation:
        obs = self.obs_spec.encode(self._live_game, self.learner_seat)
        if self.dict_obs:
            return {"observation": obs, "action_mask": self.action_masks()}
        return obs

    def _info(self) -> dict[str, Any]:
        """The info of every reset and step: the same keys, each of one type throughout
        (documented in the class's "Info" section)."""
        s = self._live_game.state
        return {
            "illegal_action": False,
            "turns": s.turns,
            "winner": NO_WINNER if s.winner is None else s.winner,
            "learner_seat": self.learner_seat,
            "learner_turns": self._learner_turns,
            "learner_busts": self._learner_busts,
            "action_mask": self.action_masks(),
        }
