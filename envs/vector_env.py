"""``FiveThousand-v0`` as a Gymnasium vector environment: N games stepped at once with
array operations (``fivethousand_rl.envs.batch``).

    gym.make_vec("FiveThousand-v0", num_envs=4096, vectorization_mode="vector_entry_point",
                 n_players=2, opponents="threshold:350")

Same options and game as ``envs.gym_env.FiveThousandEnv`` (which checks them, with the
same messages), compact and rich observations alike, written from the arrays
(``observe_batch``, also the trained models' batched side in ``agents.neural``) bit for
bit as ``fivethousand_rl.envs.encoding`` writes them. Autoreset is *same-step*
(``AutoresetMode.SAME_STEP``): when a game ends, ``step`` returns the first observation of
the next game in that row, and the last observation and info of the finished one in
``infos["final_obs"]`` / ``infos["final_info"]`` (with the masks ``"_final_obs"`` /
``"_final_info"``), as Gymnasium's ``SyncVectorEnv`` does in that mode. So every row
always has a decision pending, ``action_masks()`` is never empty, and the training
loop needs no dummy step (which is also what Stable-Baselines3's VecEnv expects:
``terminal_observation`` is ``final_obs``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from fivethousand_rl.envs.batch import (
    NO_ROLL,
    ROLL_BUST,
    ROLL_DICE,
    BatchGames,
    bank_batch,
    play_batch,
)
from fivethousand_rl.envs.encoding import (
    ACTION_FEATURES,
    OBS_HIGH,
    OBS_LOW,
    RICH_OBS_HIGH,
    Col,
    ObsSpec,
    off_score_step,
    roll_part_table,
    score_bins,
)
from fivethousand_rl.envs.game import IllegalMoveError
from fivethousand_rl.envs.gym_env import FiveThousandEnv
from fivethousand_rl.envs.policy import resolve_policy
from fivethousand_rl.envs.rules import BANK_BIT, NUM_ACTIONS
from fivethousand_rl.envs.solver import STEP, turn_ev_table


def rich_features(
    games: BatchGames, idx: np.ndarray, seat: np.ndarray, mask: np.ndarray, out: np.ndarray
) -> None:
    """Write into `out` (k rows of the rich size, zeros) what the rich observation
    (``envs.encoding.encode_rich``) adds to the compact one, for the games `idx` seen from
    `seat` (one per game) with legal actions `mask` (k, 64): one-hot banked scores (own
    first), then each action's consequences (``action_features``; zeros unless `seat` has
    a decision due), computed in float64 as there and stored as float32: the same bits."""
    n, rules = games.n_players, games.rules
    target, bins, step = rules.target, score_bins(rules), rules.score_step
    at = ObsSpec("rich", n, rules).slices
    k = idx.size
    rows = np.arange(k)
    scores = games.scores[idx]
    own_first = scores[rows[:, None], (seat[:, None] + np.arange(n)) % n]
    out[rows[:, None], at["score_one_hot"].start + np.arange(n) * bins + own_first // step] = 1.0
    block = out[:, at["actions"]].reshape(k, NUM_ACTIONS, ACTION_FEATURES)
    due = np.flatnonzero((games.roll[idx] != NO_ROLL) & (games.current[idx] == seat))
    if not due.size:
        return
    g, mask = idx[due], mask[due]
    own = scores[due, seat[due]]
    held, left = games.hold_results(g)  # (m, 32) each
    points = games.tables.points[games.roll[g]]
    # Actions a and a + 32 hold the same dice, then roll on or bank.
    total, left, points = (np.concatenate([x, x], axis=1) for x in (held, left, points))
    need = target - own[:, None] - total
    rows, acts = np.nonzero(mask)  # every legal action, as (row of due, action)
    cells = block[due[rows], acts]  # (legal actions, ACTION_FEATURES), written back below
    t, nd = total[rows, acts], need[rows, acts]
    cells[:, Col.LEGAL] = 1.0
    cells[:, Col.TURN_TOTAL] = t / target
    cells[np.arange(rows.size), Col.DICE_LEFT_AT + left[rows, acts] - 1] = 1.0
    cells[:, Col.POINTS] = points[rows, acts] / 1000
    cells[:, Col.NEED] = np.minimum(np.maximum(nd / target, -1.0), 1.0)
    inside = (nd >= 0) & (nd <= 1000)
    cells[inside, Col.NEED_AT + nd[inside] // 50] = 1.0
    cells[:, Col.NEED_OVER_1000] = nd > 1000
    cells[:, Col.OVERSHOOT] = nd < 0
    entered = own[rows] > 0
    cells[:, Col.MAY_BANK] = games.may_bank(entered, t)
    cells[:, Col.ENDS_IN_50] = off_score_step(t, rules)
    cells[:, Col.OWN_SCORE_AFTER] = own[rows] / target
    ev = turn_ev_table(rules)
    rolled = ev.value[entered.astype(np.int64), np.minimum(t, ev.cap) // STEP, left[rows, acts]]
    banks = acts >= BANK_BIT
    cells[:, Col.TURN_EV] = np.minimum(np.where(banks, t, rolled) / 1000, RICH_OBS_HIGH)
    cells[:, Col.BANKS] = banks
    b = np.flatnonzero(banks)
    if b.size:
        who = seat[due[rows[b]]]
        bank = bank_batch(scores[due[rows[b]]], who, t[b], rules)
        wins = bank.winner == who
        fits = ~wins & ~bank.overshoot
        gifts = bank.overshoot & ~bank.lost
        cells[b, Col.WINS] = wins
        after = np.where(fits, bank.scores[np.arange(b.size), who], own[rows[b]]) / target
        cells[b, Col.OWN_SCORE_AFTER] = np.where(wins, 1.0, after)
        cells[b, Col.BUMPS] = fits & bank.bumped
        cells[b, Col.POINTS_LOST] = ~wins & bank.lost
        cells[b, Col.GIFTS] = ~wins & gifts
        cells[b, Col.GIFT_WINS] = ~wins & gifts & (bank.winner == bank.gift_to)
    block[due[rows], acts] = cells


def observe_batch(
    games: BatchGames, idx: np.ndarray, seat: np.ndarray, mask: np.ndarray, spec: ObsSpec
) -> np.ndarray:
    """The observations of the games `idx` of `games`, each seen from its `seat` (one per
    game), as float32 rows (k, ``spec.size``): bit for bit ``spec.encode(game, seat)``,
    compact or rich. `mask` (k, 64) holds each game's legal actions
    (``games.legal_mask(idx)``; all False where no decision is due). `spec` must describe
    these games (their players and rules): it is trusted, not checked."""
    n, rules = games.n_players, games.rules
    target = rules.target
    k = idx.size
    rows = np.arange(k)
    scores = games.scores[idx]
    own_first = scores[rows[:, None], (seat[:, None] + np.arange(n)) % n]
    current = games.current[idx]
    total = games.turn_total[idx]
    roll = games.roll[idx]
    deciding = roll != NO_ROLL
    # float32 columns assigned from float64 values: the same rounding as encode().
    at = spec.slices
    out = np.zeros((k, spec.size), dtype=np.float32)
    out[:, at["scores"]] = own_first / target
    out[:, at["entered"]] = own_first > 0
    out[rows, at["to_move"].start + (current - seat) % n] = 1.0
    out[:, at["turn_total"].start] = np.minimum(total / target, OBS_HIGH)
    need = (target - scores[rows, current] - total) / target
    out[:, at["need_after_bank"].start] = np.maximum(need, OBS_LOW)
    out[:, at["ends_in_50"].start] = off_score_step(total, rules)
    out[:, at["dice_in_roll"].start : at["face_counts"].stop] = roll_part_table()[roll]
    out[:, at["some_action_banks"].start] = deciding & mask[:, BANK_BIT:].any(axis=1)
    if spec.encoding == "rich":
        rich_features(games, idx, seat, mask, out)
    return out


# The arrays of BatchGames that hold a game (saved and restored by get_state/set_state).
_GAME_ARRAYS = ("scores", "current", "turn_total", "dice_left", "roll", "turns", "winner")


class FiveThousandVectorEnv(VectorEnv):
    """`num_envs` games of 5000, each from the seat of one learning player.

    Arguments: ``num_envs`` and every argument of ``FiveThousandEnv`` (n_players,
    opponents, learner_seat, max_turns, illegal_action, dict_obs, obs_encoding,
    opponent_pool, and the rules: hold, target, entry, bump, overshoot, fifty_rule, or
    rules=Rules(...), RULES.md R5 and V1-V5), with the same meaning, per game: the
    batched games follow every rule switch as ``fivethousand_rl.envs.game.Game`` does. Differences:

    - ``render_mode`` is refused (nothing is drawn); both observations are written from
      the arrays (``rich_features``), equal to ``fivethousand_rl.envs.encoding``'s to the bit;
    - actions are an integer array of shape (num_envs,); a wrong shape or dtype, or an
      action outside 0..63, raises ValueError and changes nothing;
    - an action illegal under the mask: with ``illegal_action="raise"`` an
      IllegalMoveError (one line, naming the game and its legal actions) and nothing
      changes; with ``"lose"`` that game ends with reward -1, terminated, and
      ``info["illegal_action"]`` True (the others step normally);
    - opponents decide for all games at once when their policy has a batched side
      (``envs.batch.BatchPolicy``: the scripted bots of ``agents.batched``), else one
      game at a time (correct, slower);
    - infos are arrays (``illegal_action``, ``turns``, ``winner`` with -1 for none,
      ``learner_seat``, ``learner_turns``, ``learner_busts``, and ``action_mask``: int8
      (num_envs, 64), each row the legal actions of that row's pending decision, the new
      game's after an autoreset), each with its ``_`` mask: the single environment's keys
      and types (its "Info" section), as Gymnasium's ``SyncVectorEnv`` batches them;
    - ``action_masks()`` is a bool array (num_envs, 64), for indexing, where the single
      environment's (and ``info["action_mask"]``) is int8 (Gymnasium's mask convention).

    ``recorder``, if set to a callable, is told of every step of every game (tests):
    ``recorder("deal", idx, learner_seats)``, ``recorder("roll", idx, dice)`` with the
    sorted dice padded with 0, ``recorder("act", idx, actions)`` (all seats).
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, **kwargs: Any) -> None:
        if not isinstance(num_envs, int) or isinstance(num_envs, bool) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        if kwargs.get("render_mode") is not None:
            raise ValueError("the vector environment does not render; use FiveThousand-v0 alone")
        single = FiveThousandEnv(**kwargs)  # checks every option, resolves the opponents
        self._single, self.num_envs, self.n_players = single, num_envs, single.n_players
        self.rules, self.max_turns, self.obs_spec = single.rules, single.max_turns, single.obs_spec
        self.illegal_action, self.dict_obs = single.illegal_action, single.dict_obs
        self.learner_seat_option = single.learner_seat_option
        self.single_observation_space = single.observation_space
        self.single_action_space = single.action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.render_mode = self.recorder = None

        # The policies that play, each once: opponents named by the same string share
        # one object, so their games are decided in one batch. _specs[i] names
        # _policies[i] (for get_state: a spec, or the policy object itself).
        self._policies: list[Any] = []
        self._specs: list[Any] = []
        self._known: dict[Any, int] = {}
        everyone = single.opponents + [p for p, _ in single.opponent_pool]
        slow = sorted({p.name for p in everyone if not callable(getattr(p, "act_batch", None))})
        if slow:
            gym.logger.warn(
                f"opponents without a batched side (act_batch) play one game at a time, "
                f"correctly but slowly: {', '.join(slow)}"
            )
        specs = zip(single.opponent_specs, single.opponents, strict=True)
        self._opponents = [self._index(spec, policy) for spec, policy in specs]
        self._use_pool()

        n = num_envs
        self.games = BatchGames(n, self.n_players, self.rules)
        self.learner_seat = np.zeros(n, dtype=np.int64)
        self.seat_policy = np.zeros((n, self.n_players), dtype=np.int64)
        self.learner_turns = np.zeros(n, dtype=np.int64)
        self.learner_busts = np.zeros(n, dtype=np.int64)
        self._mask = np.zeros((n, NUM_ACTIONS), dtype=bool)
        self._ready = False
        self._np_random, self._np_random_seed = seeding.np_random(None)
        self._all = np.arange(n)

    # ------------------------------------------------------------------ API
    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Deal a new game in every row (or, with ``options={"reset_mask": mask}``, in
        the rows where the boolean mask is True); `seed` reseeds everything."""
        if seed is not None:
            if not isinstance(seed, int | np.integer) or isinstance(seed, bool):
                raise ValueError(f"seed must be one integer for the whole batch, got {seed!r}")
            self._np_random, self._np_random_seed = seeding.np_random(int(seed))
        idx = self._all
        if options and "reset_mask" in options:
            mask = np.asarray(options["reset_mask"])
            if mask.shape != (self.num_envs,) or mask.dtype != bool:
                raise ValueError(f"reset_mask must be a bool array of shape ({self.num_envs},)")
            idx = np.flatnonzero(mask)
        self._deal(idx)
        self._ready = True
        return self._observe(self._all), self._info(self._all)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if not self._ready:
            raise RuntimeError("call reset() before step()")
        actions = self._check_actions(actions)
        games, rows = self.games, self._all
        legal = self._mask[rows, actions]
        illegal = ~legal
        if illegal.any() and self.illegal_action == "raise":
            g = int(np.flatnonzero(illegal)[0])
            raise IllegalMoveError(games.illegal_message(g, int(actions[g])))
        ok = rows[legal]
        games.act(ok, actions[ok])
        if self.recorder is not None:
            self.recorder("act", ok, actions[ok])
        self._advance(ok)
        over = games.winner >= 0
        reward = np.where(over, np.where(games.winner == self.learner_seat, 1.0, -1.0), 0.0)
        reward[illegal] = -1.0
        terminated = over | illegal
        truncated = ~terminated & (games.turns >= self.max_turns)
        done = terminated | truncated
        self._mask = games.legal_mask(rows)
        obs = self._observe(rows)
        info = self._info(rows, illegal)
        if done.any():
            ended = np.flatnonzero(done)
            info["action_mask"][ended] = 0  # as the single env's once its episode is over
            final_info = {}  # the finished games' infos, each with the mask `done`
            for key, value in info.items():
                if not key.startswith("_"):
                    final_info[key] = value.copy()
                    final_info[f"_{key}"] = done
            final_obs = np.full(self.num_envs, None, dtype=object)
            if self.dict_obs:
                for i in ended:  # copies: the new games' observations overwrite these rows
                    final_obs[i] = {k: v[i].copy() for k, v in obs.items()}
            else:
                final_obs[ended] = list(obs[ended])
            info["final_obs"], info["_final_obs"] = final_obs, done
            info["final_info"], info["_final_info"] = final_info, done
            self._deal(ended)
            fresh = self._observe(ended)
            if self.dict_obs:
                for k in obs:
                    obs[k][ended] = fresh[k]
            else:
                obs[ended] = fresh
            for key, value in self._info(ended).items():
                if not key.startswith("_"):
                    info[key][ended] = value
        return obs, reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """(num_envs, 64) bool: the legal actions of each game's pending decision."""
        return self._mask.copy()

    def close_extras(self, **kwargs: Any) -> None:
        self._single.close()

    def set_opponent_pool(self, pool: Sequence[tuple[Any, float]]) -> None:
        """Replace the opponent pool, ``[(opponent, weight), ...]`` as the single
        environment's (checked there): each game dealt from now on draws its opponents
        from it; the games under way keep theirs."""
        self._single.set_opponent_pool(pool)
        self._use_pool()

    def get_state(self, row: int) -> dict[str, Any]:
        """Everything needed to continue game `row` exactly where it is: its arrays, the
        seats (opponents by their spec) and the batch's generator (shared by the rows:
        restoring any row restores it)."""
        g = self.games
        game = {name: getattr(g, name)[row].tolist() for name in _GAME_ARRAYS}
        seats = [
            None if seat == self.learner_seat[row] else self._specs[self.seat_policy[row, seat]]
            for seat in range(self.n_players)
        ]
        return {
            "game": game,
            "learner_seat": int(self.learner_seat[row]),
            "seat_specs": seats,
            "learner_turns": int(self.learner_turns[row]),
            "learner_busts": int(self.learner_busts[row]),
            "np_random": self.np_random.bit_generator.state,
        }

    def set_state(self, row: int, state: dict[str, Any]) -> None:
        """Restore game `row` (and the generator) as ``get_state`` saved it; an opponent
        that has left the pool since is built again from its spec."""
        g = self.games
        for name in _GAME_ARRAYS:
            getattr(g, name)[row] = state["game"][name]
        self.learner_seat[row] = state["learner_seat"]
        for seat, spec in enumerate(state["seat_specs"]):
            if spec is None:
                self.seat_policy[row, seat] = -1
            else:
                known = self._known.get(spec if isinstance(spec, str) else id(spec))
                self.seat_policy[row, seat] = (
                    known if known is not None else self._index(spec, resolve_policy(spec))
                )
        self.learner_turns[row] = state["learner_turns"]
        self.learner_busts[row] = state["learner_busts"]
        self.np_random.bit_generator.state = state["np_random"]
        self._mask[row] = g.legal_mask(np.array([row]))[0]
        self._ready = True

    # ------------------------------------------------------------- internals
    def _index(self, spec: Any, policy: Any) -> int:
        """The place of `policy` (named `spec`) among the policies that play."""
        key = spec if isinstance(spec, str) else id(policy)
        if key not in self._known:
            self._known[key] = len(self._policies)
            self._policies.append(policy)
            self._specs.append(spec if isinstance(spec, str) else policy)
        return self._known[key]

    def _use_pool(self) -> None:
        """The single environment's opponent pool as indices and probabilities."""
        pool, specs = self._single.opponent_pool, self._single.pool_specs
        self._pool = [self._index(s, p) for s, (p, _) in zip(specs, pool, strict=True)]
        weights = np.array([w for _, w in pool], dtype=float)
        self._pool_p = weights / weights.sum() if len(weights) else None

    def _check_actions(self, actions: Any) -> np.ndarray:
        a = np.asarray(actions)
        if a.shape != (self.num_envs,) or a.dtype.kind not in "iu":
            raise ValueError(
                f"actions must be an integer array of shape ({self.num_envs},), "
                f"got {a.dtype} of shape {a.shape}"
            )
        bad = (a < 0) | (a >= NUM_ACTIONS)
        if bad.any():
            g = int(np.flatnonzero(bad)[0])
            raise ValueError(f"actions must be integers in 0..63, got {a[g]!r} for game {g}")
        return a.astype(np.int64, copy=False)

    def _deal(self, idx: np.ndarray) -> None:
        """New games in `idx`, played on to the learner's first decision; a game that
        ends (or hits the turn limit) before it is dealt again, as the single env does."""
        rng = self.np_random
        n = self.n_players
        while idx.size:
            self.games.reset(idx)
            if self.learner_seat_option == "random":
                self.learner_seat[idx] = rng.integers(n, size=idx.size)
            else:
                self.learner_seat[idx] = self.learner_seat_option
            if self._pool:
                picks = rng.choice(len(self._pool), size=(idx.size, n - 1), p=self._pool_p)
                others = np.asarray(self._pool)[picks]
            else:
                others = np.broadcast_to(np.asarray(self._opponents), (idx.size, n - 1))
            seats = (self.learner_seat[idx, None] + np.arange(1, n)) % n
            self.seat_policy[idx[:, None], seats] = others
            self.seat_policy[idx, self.learner_seat[idx]] = -1
            self.learner_turns[idx] = self.learner_busts[idx] = 0
            if self.recorder is not None:
                self.recorder("deal", idx, self.learner_seat[idx].copy())
            self._advance(idx)
            idx = idx[self.games.roll[idx] == NO_ROLL]  # over, or stopped by the turn limit
        self._mask = self.games.legal_mask(self._all)

    def _advance(self, idx: np.ndarray) -> None:
        play_batch(
            self.games,
            idx,
            self._policies,
            self.seat_policy,
            self.np_random,
            max_turns=self.max_turns,
            stop_seat=self.learner_seat,
            on_roll=self._on_roll,
            on_act=partial(self.recorder, "act") if self.recorder is not None else None,
        )

    def _on_roll(
        self, idx: np.ndarray, seats: np.ndarray, before: np.ndarray, ids: np.ndarray
    ) -> None:
        mine = seats == self.learner_seat[idx]
        self.learner_turns[idx[mine & (before == 0)]] += 1  # a turn's first roll
        self.learner_busts[idx[mine & ROLL_BUST[ids]]] += 1
        if self.recorder is not None:
            self.recorder("roll", idx, ROLL_DICE[ids])

    def _observe(self, idx: np.ndarray) -> Any:
        """The observations of the games `idx` from their learner's seat (``observe_batch``),
        with their action masks when observations are dicts."""
        mask = self._mask[idx]
        out = observe_batch(self.games, idx, self.learner_seat[idx], mask, self.obs_spec)
        if self.dict_obs:
            return {"observation": out, "action_mask": mask.astype(np.int8)}
        return out

    def _info(self, idx: np.ndarray, illegal: np.ndarray | None = None) -> dict[str, Any]:
        g = self.games
        info = {
            "illegal_action": np.zeros(idx.size, dtype=bool) if illegal is None else illegal[idx],
            "turns": g.turns[idx].copy(),
            "winner": g.winner[idx].copy(),
            "learner_seat": self.learner_seat[idx].copy(),
            "learner_turns": self.learner_turns[idx].copy(),
            "learner_busts": self.learner_busts[idx].copy(),
            "action_mask": self._mask[idx].astype(np.int8),
        }
        every = np.ones(idx.size, dtype=bool)
        info.update({f"_{key}": every for key in list(info)})
        return info
