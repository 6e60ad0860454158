"""The shipped agents by name (issue 30 item 1), from a clone and from any working
folder; the installed wheel is tested in test_package.py."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import fivethousand_rl.agents.shipped
from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.shipped import SHIPPED, data_folder, shipped_model
from fivethousand_rl.envs.driver import play
from fivethousand_rl.envs.game import Game
from fivethousand_rl.envs.rules import Rules

# name -> the table sizes it plays (table agents play their own table size only)
PLAYS = {
    "planner-2p": 2,
    "planner-multi": 3,
    "planner-3p": 3,
    "planner-4p": 4,
    "planner-6p": 6,
    "policy-2p": 2,
    "policy-3p": 3,
    "policy-4p": 4,
    "policy-6p": 6,
    "ppo-2p": 2,
    "ppo-4p": 4,
}


def test_every_shipped_agent_is_listed_here():
    assert set(PLAYS) == set(SHIPPED)


@pytest.mark.parametrize("name", list(SHIPPED))
def test_a_shipped_agent_loads_by_name_from_another_folder(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    policy = make_policy(name)
    assert policy.name == name
    policy.check_game(PLAYS[name], Rules())  # it plays the game it was trained for


def test_a_name_never_opens_a_users_file(tmp_path, monkeypatch):
    """A folder of the user's named like a shipped agent is not what the name loads (a
    .zip is a pickle: only the package's own files are opened by name)."""
    (tmp_path / "checkpoints" / "ppo-2p").mkdir(parents=True)
    (tmp_path / "checkpoints" / "ppo-2p" / "model.zip").write_bytes(b"not the shipped model")
    monkeypatch.chdir(tmp_path)
    assert not shipped_model("ppo-2p").is_relative_to(tmp_path)
    assert make_policy("ppo-2p").name == "ppo-2p"  # the real one loads


def test_an_unknown_name_lists_the_shipped_agents():
    with pytest.raises(ValueError) as err:
        make_policy("planner-5p")
    message = str(err.value)
    assert "unknown bot 'planner-5p'" in message and "\n" not in message
    for name in SHIPPED:
        assert name in message


def test_a_shipped_agent_whose_model_is_missing_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(fivethousand_rl.agents.shipped, "data_folder", lambda name: tmp_path)
    with pytest.raises(ValueError, match="'planner-2p' is missing its model") as err:
        make_policy("planner-2p")
    assert "\n" not in str(err.value)


def test_the_installed_copy_of_the_data_is_preferred(tmp_path, monkeypatch):
    """In a wheel the data lies inside the package (agents/checkpoints); a clone has
    none there and uses its root's folders."""
    assert (
        data_folder("checkpoints") == fivethousand_rl.agents.shipped.PACKAGE.parent / "checkpoints"
    )
    (tmp_path / "checkpoints").mkdir()
    monkeypatch.setattr(fivethousand_rl.agents.shipped, "PACKAGE", tmp_path)
    assert data_folder("checkpoints") == tmp_path / "checkpoints"
    assert data_folder("hyperparams") == tmp_path.parent / "hyperparams"


def test_the_environment_takes_a_shipped_agent_as_opponent_by_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = gym.make("FiveThousand-v0", opponents="planner-2p")
    obs, info = env.reset(seed=3)
    terminated = truncated = False
    while not (terminated or truncated):
        action = int(np.flatnonzero(env.unwrapped.action_masks())[0])
        obs, reward, terminated, truncated, info = env.step(action)
    assert terminated


def test_a_game_of_planner_2p_against_smart_by_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    game = Game(2, seed=1)
    play(game, [make_policy("planner-2p"), make_policy("smart")], np.random.default_rng(1))
    assert game.state.winner in (0, 1)
