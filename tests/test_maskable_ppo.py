"""MaskablePPO trains on FiveThousand-v0 and only ever takes legal actions."""

import gymnasium as gym
import numpy as np
import pytest
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.evaluation import evaluate_policy
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

import fivethousand_rl.envs  # noqa: F401 - registers FiveThousand-v0


class CountIllegal(gym.Wrapper):
    """Counts the actions the learner takes that the mask forbids."""

    def __init__(self, env):
        super().__init__(env)
        self.steps = self.illegal = 0

    def step(self, action):
        self.steps += 1
        self.illegal += not self.env.unwrapped.action_masks()[int(action)]
        return self.env.step(action)

    def action_masks(self):
        return self.env.unwrapped.action_masks()


@pytest.mark.parametrize("vec_env_cls", [DummyVecEnv, SubprocVecEnv])
def test_maskable_ppo_takes_no_illegal_action(vec_env_cls):
    n_envs = 2
    vec_env = make_vec_env(
        "FiveThousand-v0",
        n_envs=n_envs,
        seed=0,
        vec_env_cls=vec_env_cls,
        # "raise": an illegal action would stop training with an IllegalMoveError.
        env_kwargs={"illegal_action": "raise", "opponents": "threshold:350"},
        wrapper_class=CountIllegal,
    )
    model = MaskablePPO(
        "MlpPolicy",
        vec_env,
        n_steps=512,
        batch_size=128,
        n_epochs=2,
        seed=0,
        policy_kwargs={"net_arch": [32, 32]},
        device="cpu",
    )
    model.learn(total_timesteps=3072)
    steps = vec_env.get_attr("steps")
    illegal = vec_env.get_attr("illegal")
    vec_env.close()
    assert sum(steps) >= 3072
    assert sum(illegal) == 0


def test_trained_policy_only_predicts_legal_actions():
    env = gym.make("FiveThousand-v0", opponents="random")
    model = MaskablePPO("MlpPolicy", env, n_steps=256, batch_size=64, seed=1, device="cpu")
    model.learn(total_timesteps=512)
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    for _ in range(2000):
        mask = env.unwrapped.action_masks()
        action, _ = model.predict(obs, action_masks=mask, deterministic=bool(rng.integers(2)))
        assert mask[int(action)]
        obs, _, terminated, truncated, _ = env.step(int(action))
        if terminated or truncated:
            obs, _ = env.reset()
    # sb3-contrib's own evaluation honours masks too.
    mean_reward, _ = evaluate_policy(model, env, n_eval_episodes=10, warn=False)
    assert -1.0 <= mean_reward <= 1.0


def test_the_actor_scores_legal_rows_only_with_the_function_of_every_row():
    """Training scores only the legal rows (Col.LEGAL); they get the logits the network
    gives every row, the illegal ones 0 (masked out by MaskablePPO)."""
    import torch

    from fivethousand_rl.agents.networks import ActionScoringNet
    from fivethousand_rl.envs.encoding import ACTION_FEATURES, Col, ObsSpec
    from fivethousand_rl.envs.rules import NUM_ACTIONS, Rules

    spec = ObsSpec("rich", 3, Rules())
    n_state = spec.slices["actions"].start
    torch.manual_seed(0)
    net = ActionScoringNet(n_state)
    obs = torch.randn(32, spec.size)
    rows = obs[:, n_state:].reshape(32, NUM_ACTIONS, ACTION_FEATURES)
    legal = torch.rand(32, NUM_ACTIONS) < 0.1
    legal[:, 0] = True  # every position has a legal action
    rows[..., Col.LEGAL] = legal.float()
    sparse = net.forward_actor(obs)
    dense = net.score_every_action(obs)
    assert torch.allclose(sparse[legal], dense[legal], atol=1e-5)
    assert (sparse[~legal] == 0).all()
    sparse[legal].sum().backward()  # gradients reach every part of the actor
    assert all(p.grad is not None for p in net.scorer.parameters())
