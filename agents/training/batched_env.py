"""Stable-Baselines3's VecEnv over the batched ``FiveThousandVectorEnv``: every game of
a training run stepped at once with array operations (train.py's ``vec_env: batched``).
Its public face is ``fivethousand_rl.agents.sb3`` (``make_sb3_vec_env``).

SB3 wants the Gymnasium 0.2x vector API; the vector environment's same-step autoreset
maps onto it directly: ``dones = terminated | truncated``; a finished game's last
observation is ``infos[i]["terminal_observation"]`` (the env's ``final_obs``), its
info the env's ``final_info`` row, ``"TimeLimit.truncated"`` is ``truncated and not
terminated``, and the observation returned in that row is already the next game's.
sb3-contrib's MaskablePPO reads the masks through ``env_method("action_masks")`` (one
row per game, stacked): that call returns the rows of the env's ``action_masks()``.

What SB3's ``Monitor`` does for the single environments is done here, per row: each
finished game's info carries ``"episode": {"r", "l", "t"}``, and the attributes that
the checkpoint saves of a Monitor (``rewards``, ``needs_reset``, ``episode_returns``,
``episode_lengths``, ``total_steps``) are answered per row by ``get_attr``/``set_attr``
(the lists of past episodes are not kept: empty). ``env_method("get_state")`` and
``env_method("set_state", state, indices=[i])`` save and restore row i's game, so a
resumed run continues exactly.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices

from fivethousand_rl.agents.training.checkpoint import MONITOR_FIELDS
from fivethousand_rl.envs.vector_env import FiveThousandVectorEnv


class BatchedVecEnv(VecEnv):
    """`env` (a ``FiveThousandVectorEnv``) as an SB3 VecEnv with one row per game."""

    def __init__(self, env: FiveThousandVectorEnv) -> None:
        if not isinstance(env, FiveThousandVectorEnv):
            raise ValueError(
                "BatchedVecEnv takes the vector environment of gym.make_vec('FiveThousand-v0', "
                f"num_envs=..., vectorization_mode='vector_entry_point'), got {type(env).__name__}"
            )
        self.env = env
        self.render_mode = None
        super().__init__(env.num_envs, env.single_observation_space, env.single_action_space)
        n = env.num_envs
        self.ep_return = np.zeros(n)
        self.ep_length = np.zeros(n, dtype=np.int64)
        self.total_steps = np.zeros(n, dtype=np.int64)
        self._seed: int | None = None
        self._actions: np.ndarray | None = None
        self._start = time.time()

    # ------------------------------------------------------------------ VecEnv
    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """The seed of the next reset (one for the whole batch)."""
        self._seed = seed
        return [seed] * self.num_envs

    def reset(self) -> np.ndarray:
        obs, _ = self.env.reset(seed=self._seed)
        self._seed = None
        self.ep_return[:] = 0.0
        self.ep_length[:] = 0
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self):
        obs, reward, terminated, truncated, info = self.env.step(self._actions)
        done = terminated | truncated
        self.ep_return += reward
        self.ep_length += 1
        self.total_steps += 1
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if done.any():
            final = info["final_info"]
            keys = [k for k in final if not k.startswith("_")]
            now = round(time.time() - self._start, 6)
            for i in np.flatnonzero(done).tolist():
                # SB3's per-env infos: Python scalars, and the ended game's action_mask row.
                row = {k: final[k][i].item() if final[k].ndim == 1 else final[k][i] for k in keys}
                row["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
                row["terminal_observation"] = info["final_obs"][i]
                row["episode"] = {"r": float(self.ep_return[i]), "l": int(self.ep_length[i])}
                row["episode"]["t"] = now
                infos[i] = row
            self.ep_return[done] = 0.0
            self.ep_length[done] = 0
        return obs, reward.astype(np.float32), done, infos

    def close(self) -> None:
        self.env.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        rows = list(self._get_indices(indices))
        if attr_name == "rewards":  # Monitor's rewards so far: 0 (only a last step is rewarded)
            return [[0.0] * int(self.ep_length[i]) for i in rows]
        if attr_name == "total_steps":
            return [int(self.total_steps[i]) for i in rows]
        if attr_name in MONITOR_FIELDS:  # needs_reset, and the past episodes (not kept)
            return [False if attr_name == "needs_reset" else [] for _ in rows]
        return [getattr(self.env, attr_name)] * len(rows)

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        if attr_name not in MONITOR_FIELDS:
            setattr(self.env, attr_name, value)
            return
        for i in self._get_indices(indices):
            if attr_name == "rewards":
                self.ep_return[i], self.ep_length[i] = float(sum(value)), len(value)
            elif attr_name == "total_steps":
                self.total_steps[i] = value

    def env_method(
        self, method_name: str, *method_args, indices: VecEnvIndices = None, **method_kwargs
    ) -> list[Any]:
        """``action_masks``, ``get_state`` and ``set_state`` per row; any other method of
        the vector env is called once (e.g. ``set_opponent_pool``), its result given
        for every row asked."""
        rows = list(self._get_indices(indices))
        if method_name == "action_masks":
            return list(self.env.action_masks()[rows])
        if method_name in ("get_state", "set_state"):
            method = getattr(self.env, method_name)
            return [method(i, *method_args, **method_kwargs) for i in rows]
        result = getattr(self.env, method_name)(*method_args, **method_kwargs)
        return [result] * len(rows)

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None):
        return [False] * len(list(self._get_indices(indices)))

    def has_attr(self, attr_name: str) -> bool:
        return attr_name in MONITOR_FIELDS or hasattr(self.env, attr_name)

    def action_masks(self) -> np.ndarray:
        """(num_envs, 64) bool: every game's legal actions."""
        return self.env.action_masks()
