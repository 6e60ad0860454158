"""Stable-Baselines3 on the batched vector environment: every game of a run stepped at
once with array operations, behind SB3's ``VecEnv`` interface, so that SB3's algorithms
and sb3-contrib's ``MaskablePPO`` train on it as on ``DummyVecEnv`` (several times
faster: the opponents of all games decide together too).

    from sb3_contrib import MaskablePPO

    from fivethousand_rl.agents.sb3 import make_sb3_vec_env

    vec_env = make_sb3_vec_env(64, seed=0, opponents="smart")
    model = MaskablePPO("MlpPolicy", vec_env, n_steps=128, seed=0)
    model.learn(total_timesteps=100_000)

``make_sb3_vec_env`` takes the options of ``FiveThousand-v0`` (``fivethousand_rl.envs.gym_env``) and
builds the vector environment (``envs.vector_env``) and its adapter, ``BatchedVecEnv``
(``agents.training.batched_env``, which ``train.py --vec-env batched`` uses): one SB3 row
per game, each finished game's info with SB3's ``"terminal_observation"``,
``"TimeLimit.truncated"`` and Monitor's ``"episode"``, and the masks that MaskablePPO
reads through ``env_method("action_masks")``. A vector environment made otherwise (by
``gym.make_vec("FiveThousand-v0", num_envs=..., vectorization_mode="vector_entry_point",
...)``) goes into ``BatchedVecEnv(env)`` directly.
"""

from __future__ import annotations

from typing import Any

from fivethousand_rl.agents.training.batched_env import BatchedVecEnv
from fivethousand_rl.envs.vector_env import FiveThousandVectorEnv


def make_sb3_vec_env(num_envs: int = 64, seed: int | None = None, **options: Any) -> BatchedVecEnv:
    """`num_envs` games of ``FiveThousand-v0`` with the given `options` (``n_players``,
    ``opponents``, ``learner_seat``, the rules, ``obs_encoding``, ``dict_obs``, ...; the
    same checks and one-line errors, rendering excepted) as one SB3 ``VecEnv``. `seed`
    seeds its first reset (an SB3 algorithm given a seed seeds it again)."""
    vec_env = BatchedVecEnv(FiveThousandVectorEnv(num_envs, **options))
    vec_env.seed(seed)
    return vec_env


__all__ = ["BatchedVecEnv", "make_sb3_vec_env"]
