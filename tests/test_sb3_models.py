"""Any MaskablePPO model of a user's own SB3 loop plays by its path (issue 53, item 5):
the classes SB3 users put in ``policy_kwargs`` (torch activations and optimizers, SB3's
feature extractors, a custom ``net_arch``) and a learning-rate schedule load without
running code from the file; a class of the user's own is refused in one line naming it
and the opt-in for a file its user trusts, which then loads it with SB3's own loader."""

from __future__ import annotations

import base64
import json
import os
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, FlattenExtractor
from stable_baselines3.common.utils import LinearSchedule
from torch import nn

from fivethousand_rl import evaluate
from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.neural import (
    TRUSTED_MODELS_VARIABLE,
    CheckpointError,
    ForbiddenPickle,
    SB3Policy,
    read_policy_kwargs,
)
from fivethousand_rl.agents.sb3 import make_sb3_vec_env
from fivethousand_rl.envs.batch import NO_ROLL, BatchGames
from fivethousand_rl.envs.rules import Rules
from fivethousand_rl.envs.vector_env import observe_batch

TINY = {"n_steps": 8, "batch_size": 8, "n_epochs": 1, "seed": 0, "device": "cpu"}


class TinyExtractor(BaseFeaturesExtractor):
    """A feature extractor of the user's own: code the loader must not run untrusted."""

    def __init__(self, observation_space, features: int = 8) -> None:
        super().__init__(observation_space, features)
        self.linear = nn.Linear(observation_space.shape[0], features)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.linear(obs)


def save_model(folder: Path, name: str, policy_kwargs: dict, **options) -> tuple[Path, object]:
    """A MaskablePPO model as a user's loop saves it (on FiveThousand-v0's vector env),
    untrained: its file and the model."""
    model = MaskablePPO(
        "MlpPolicy", make_sb3_vec_env(2, seed=0), policy_kwargs=policy_kwargs, **TINY, **options
    )
    path = folder / f"{name}.zip"
    model.save(path)
    return path, model


def serialized_settings(path: Path) -> dict:
    data = json.loads(zipfile.ZipFile(path).read("data"))
    return {k: v for k, v in data.items() if isinstance(v, dict) and ":serialized:" in v}


def same_choices(policy: SB3Policy, model) -> None:
    """The loaded policy picks what the saved model's own predict picks, on the first
    decisions of 64 games (those whose roll did not bust)."""
    games = BatchGames(64, 2, Rules())
    games.roll_dice(np.arange(64), np.random.default_rng(1))
    idx = np.flatnonzero(games.roll != NO_ROLL)
    mask = games.legal_mask(idx)
    obs = observe_batch(games, idx, games.current[idx], mask, policy.spec)
    expected, _ = model.predict(obs, action_masks=mask, deterministic=True)
    assert len(idx) > 40 and len(set(expected.tolist())) > 1
    assert (policy.choose(obs, mask, np.random.default_rng(0)) == expected).all()


@pytest.mark.parametrize("activation", [nn.ReLU, nn.Tanh])
def test_common_policy_kwargs_and_a_schedule_load_without_running_code(
    tmp_path, activation, monkeypatch
):
    """activation_fn, a custom net_arch, an optimizer and its settings, SB3's own feature
    extractor and a learning-rate schedule: SB3 pickles them (policy_kwargs by reference,
    the schedule by value); the model loads with cloudpickle never called, holds the
    same classes and weights, and plays as the saved model; evaluate takes it by path
    (as does best-response: the same make_policy, too slow to run here)."""
    kwargs = {
        "activation_fn": activation,
        "net_arch": {"pi": [16, 8], "vf": [8]},
        "optimizer_class": torch.optim.RMSprop,
        "optimizer_kwargs": {"alpha": 0.9, "eps": 1e-5},
        "features_extractor_class": FlattenExtractor,
        "ortho_init": False,
    }
    schedule = LinearSchedule(3e-4, 1e-5, 1.0)
    path, model = save_model(tmp_path, activation.__name__, kwargs, learning_rate=schedule)
    pickled = serialized_settings(path)
    assert {"policy_kwargs", "learning_rate", "lr_schedule"} <= pickled.keys()

    def refuse(*args, **kwargs):
        raise AssertionError("cloudpickle ran")

    monkeypatch.setattr("stable_baselines3.common.save_util.cloudpickle.loads", refuse)
    policy = make_policy(str(path))
    assert isinstance(policy, SB3Policy) and not policy.trusted
    loaded = policy.model.policy
    assert loaded.activation_fn is activation and loaded.optimizer_class is torch.optim.RMSprop
    assert loaded.net_arch == {"pi": [16, 8], "vf": [8]}
    assert loaded.optimizer.defaults["alpha"] == 0.9
    assert isinstance(loaded.mlp_extractor.policy_net[1], activation)
    saved = model.policy.state_dict()
    assert all(torch.equal(saved[k], v) for k, v in loaded.state_dict().items())
    same_choices(policy, model)
    assert pickle.loads(pickle.dumps(policy)).model.policy.activation_fn is activation
    assert evaluate.main([str(path), "random", "--games", "4", "--workers", "1"]) == 0


def test_a_class_of_the_users_own_is_refused_naming_it_and_the_opt_in(tmp_path, monkeypatch):
    """A feature extractor defined by the user: refused in one line naming the class and
    the opt-in; named in FIVETHOUSAND_TRUSTED_MODELS (commands) or trusted=True
    (Python), the file loads with SB3's own loader and plays, pickled copies too."""
    kwargs = {"features_extractor_class": TinyExtractor, "net_arch": [8]}
    path, model = save_model(tmp_path, "own", kwargs)
    monkeypatch.delenv(TRUSTED_MODELS_VARIABLE, raising=False)
    with pytest.raises(CheckpointError) as refusal:
        make_policy(str(path))
    message = str(refusal.value)
    assert "\n" not in message and str(path) in message
    assert f"{__name__}.TinyExtractor (features_extractor_class)" in message
    assert f"{TRUSTED_MODELS_VARIABLE}={path}" in message and "trusted=True" in message
    other = tmp_path / "other.zip"
    monkeypatch.setenv(TRUSTED_MODELS_VARIABLE, os.pathsep.join([str(other), str(path)]))
    policy = make_policy(str(path))
    assert policy.trusted and isinstance(policy.model.policy.features_extractor, TinyExtractor)
    same_choices(policy, model)
    copy = pickle.loads(pickle.dumps(policy))  # as worker processes get it
    assert isinstance(copy.model.policy.features_extractor, TinyExtractor)
    monkeypatch.setenv(TRUSTED_MODELS_VARIABLE, str(other))  # another file is trusted
    with pytest.raises(CheckpointError, match="TinyExtractor"):
        make_policy(str(path))
    assert SB3Policy(path, trusted=True).trusted


@pytest.fixture
def marker(tmp_path) -> Path:
    return tmp_path / "ran_code"


class Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.mark.parametrize(
    "case",
    ["an instance of an allowed class", "a function", "a call", "a class of another module"],
)
def test_a_policy_kwargs_pickle_of_more_than_those_classes_is_refused(marker, case):
    """The unpickler hands out the allowed classes themselves, never an object built by
    calling one (REDUCE, BUILD...), nor any other global: refused, nothing runs."""
    value = {
        "an instance of an allowed class": {"activation_fn": nn.ReLU()},
        "a function": {"activation_fn": torch.relu},
        "a call": {"activation_fn": Payload(marker)},
        "a class of another module": {"activation_fn": nn.Linear},
    }[case]
    with pytest.raises(ForbiddenPickle) as refusal:
        read_policy_kwargs(pickle.dumps(value))
    named = {"a class of another module": "torch.nn.modules.linear.Linear"}
    assert named.get(case, "") in str(refusal.value)
    assert not marker.exists()


def test_a_hostile_policy_kwargs_beside_allowed_names_is_refused(tmp_path, marker):
    """A file whose readable fields show allowed classes but whose pickle calls something:
    refused in one line naming what the pickle does, the payload never runs."""
    path, _ = save_model(tmp_path, "hostile", {"activation_fn": nn.ReLU})
    raw = zipfile.ZipFile(path).read("data")
    data = json.loads(raw)
    data["policy_kwargs"][":serialized:"] = base64.b64encode(
        pickle.dumps({"activation_fn": Payload(marker)})
    ).decode()
    hostile = tmp_path / "model.zip"
    with zipfile.ZipFile(path) as old, zipfile.ZipFile(hostile, "w") as new:
        for info in old.infolist():
            new.writestr(info, json.dumps(data) if info.filename == "data" else old.read(info))
    with pytest.raises(CheckpointError, match=r"policy_kwargs calls what it names \(REDUCE\)"):
        make_policy(str(hostile))
    assert not marker.exists()
