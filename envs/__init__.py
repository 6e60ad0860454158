"""The 5000 engine and its RL environments. Importing this package registers
``FiveThousand-v0`` with Gymnasium (``gym.make``: one game; ``gym.make_vec``: the
batched vector environment)."""

if __name__ == "envs":  # imported from a clone's root as a top-level package
    raise ImportError("import fivethousand_rl.envs, not envs: the package has one namespace")

import gymnasium as gym

ENV_ID = "FiveThousand-v0"

if ENV_ID not in gym.registry:
    gym.register(
        id=ENV_ID,
        entry_point="fivethousand_rl.envs.gym_env:FiveThousandEnv",
        # gym.make_vec(ENV_ID, num_envs=...): all games stepped at once as arrays.
        vector_entry_point="fivethousand_rl.envs.vector_env:FiveThousandVectorEnv",
    )
