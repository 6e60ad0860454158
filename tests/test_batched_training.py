"""Training on the batched vector env: the SB3 adapter (agents.training.batched_env),
train.py's ``vec_env: batched``, and exact resume on it."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported

from fivethousand_rl import train
from fivethousand_rl.agents.training.batched_env import BatchedVecEnv
from fivethousand_rl.agents.training.config import BATCHED_FROM, TrainConfig
from fivethousand_rl.agents.training.model import make_vec_env
from fivethousand_rl.envs.encoding import ObsSpec
from fivethousand_rl.envs.rules import Rules
from fivethousand_rl.envs.vector_env import FiveThousandVectorEnv
from tests.test_train import TINY


def adapter(n: int = 6, **kwargs) -> BatchedVecEnv:
    kwargs = {"n_players": 2, "opponents": "smart", "target": 1500, "max_turns": 8, **kwargs}
    vec = BatchedVecEnv(FiveThousandVectorEnv(n, **kwargs))
    vec.seed(3)
    return vec


def test_the_adapter_speaks_sb3s_vecenv_with_masks():
    vec = adapter(obs_encoding="rich", learner_seat="random")
    obs = vec.reset()
    assert obs.shape == (6, ObsSpec("rich", 2, Rules(target=1500)).size)
    assert is_masking_supported(vec)
    rng = np.random.default_rng(0)
    finished = {"over": 0, "truncated": 0}
    for _ in range(60):
        masks = get_action_masks(vec)  # MaskablePPO's own call
        assert np.array_equal(masks, vec.env.action_masks()) and masks.any(axis=1).all()
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs, rewards, dones, infos = vec.step(actions)
        assert obs.dtype == np.float32 and dones.dtype == bool
        for i in range(6):
            if not dones[i]:
                assert infos[i] == {} and rewards[i] == 0.0
                continue
            info = infos[i]
            truncated = info["TimeLimit.truncated"]
            finished["truncated" if truncated else "over"] += 1
            assert info["terminal_observation"].shape == obs[i].shape
            assert not np.array_equal(info["terminal_observation"], obs[i])  # a new game
            won = info["winner"] == info["learner_seat"]
            assert rewards[i] == (0.0 if truncated else 1.0 if won else -1.0)
            assert info["episode"]["r"] == rewards[i] and info["episode"]["l"] >= 1
    assert finished["over"] > 0 and finished["truncated"] > 0


def test_row_state_round_trips_and_continues_exactly():
    a, b = adapter(), adapter()
    a.reset()
    b.reset()
    rng = np.random.default_rng(1)
    for _ in range(5):
        a.step(np.array([rng.choice(np.flatnonzero(m)) for m in a.env.action_masks()]))
    for i, state in enumerate(a.env_method("get_state")):
        b.env_method("set_state", state, indices=[i])
    for name in ("rewards", "total_steps"):
        for i, value in enumerate(a.get_attr(name)):
            b.set_attr(name, value, indices=[i])
    for _ in range(20):
        actions = np.array([np.flatnonzero(m)[-1] for m in a.env.action_masks()])
        out_a, out_b = a.step(actions), b.step(actions)
        for x, y in zip(out_a[:3], out_b[:3], strict=True):
            assert np.array_equal(x, y)
        assert [i.get("episode", {}).get("l") for i in out_a[3]] == [
            i.get("episode", {}).get("l") for i in out_b[3]
        ]


def test_training_on_the_batched_env_resumes_exactly(tmp_path):
    args = ["--n-timesteps", "768", *TINY, "vec_env=batched", "self_play_weight=1"]
    args += ["snapshot_freq=256", "learning_rate=0.001"]
    assert train.main([*args, "--checkpoints", str(tmp_path / "a")]) == 0
    assert train.main([*args, "--checkpoints", str(tmp_path / "b"), "--stop-after", "256"]) == 0
    run_a, run_b = tmp_path / "a" / "quick_free_seed0", tmp_path / "b" / "quick_free_seed0"
    assert json.loads((run_a / "config.json").read_text())["vec_env"] == "batched"
    assert train.main(["--resume", str(run_b), "--no-progress"]) == 0

    from sb3_contrib import MaskablePPO

    a = MaskablePPO.load(run_a / "latest" / "model.zip")
    b = MaskablePPO.load(run_b / "latest" / "model.zip")
    assert a.num_timesteps == b.num_timesteps == 768
    for key, value in a.policy.state_dict().items():
        assert torch.equal(value, b.policy.state_dict()[key]), key
    assert json.loads((run_a / "evals.json").read_text()) == json.loads(
        (run_b / "evals.json").read_text()
    )


@pytest.mark.parametrize(
    "vec_env, n_envs, kind",
    [
        ("auto", 16, "dummy"),
        ("auto", BATCHED_FROM - 1, "dummy"),
        ("auto", BATCHED_FROM, "batched"),
        ("auto", 512, "batched"),
        ("dummy", 512, "dummy"),
        ("batched", 4, "batched"),
        ("subproc", 256, "subproc"),
    ],
)
def test_auto_takes_the_batched_env_where_it_trains_faster(vec_env, n_envs, kind):
    config = TrainConfig(vec_env=vec_env, n_envs=n_envs, n_steps=8, batch_size=8)
    config.validate()
    assert config.vec_env_kind == kind


def test_the_default_run_builds_its_envs_by_the_rule():
    config = TrainConfig(n_envs=BATCHED_FROM, n_steps=8, batch_size=8)
    env = make_vec_env(config)
    try:
        assert isinstance(env, BatchedVecEnv) and env.num_envs == BATCHED_FROM
    finally:
        env.close()
