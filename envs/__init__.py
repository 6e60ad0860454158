"""The 5000 engine and its RL environments. Importing this package registers
``FiveThousand-v0`` with Gymnasium."""

import gymnasium as gym

ENV_ID = "FiveThousand-v0"

if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point="envs.gym_env:FiveThousandEnv")
