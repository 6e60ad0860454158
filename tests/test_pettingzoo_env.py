"""The PettingZoo AEC environment."""

import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test

from fivethousand_rl.envs.game import DECIDE
from fivethousand_rl.envs.pettingzoo_env import env as make_env
from fivethousand_rl.envs.pettingzoo_env import raw_env


# api_test warns about any dict observation; the {"observation", "action_mask"} dict is
# the format PettingZoo's own classic games use, so those two notes are expected.
@pytest.mark.filterwarnings("ignore:Observation space for each agent probably should be")
@pytest.mark.filterwarnings("ignore:Observation is not a NumPy array")
@pytest.mark.parametrize("n_players", [2, 3, 8])
def test_pettingzoo_api_test(n_players):
    api_test(make_env(n_players=n_players), num_cycles=1000)


def test_pettingzoo_seed_test():
    seed_test(lambda: make_env(n_players=3), num_cycles=200)


def _play(aec, seed):
    aec.reset(seed=seed)
    rng = np.random.default_rng(seed)
    log = []
    for agent in aec.agent_iter():
        obs, reward, terminated, truncated, _ = aec.last()
        if terminated or truncated:
            action = None
        else:
            mask = obs["action_mask"]
            assert mask.any(), "the selected agent always has a legal move"
            for other in aec.agents:  # nobody else may act now
                if other != agent:
                    assert not aec.observe(other)["action_mask"].any()
            action = int(rng.choice(np.flatnonzero(mask)))
        log.append((agent, action, reward))
        aec.step(action)
    return log


@pytest.mark.parametrize("n_players", [2, 4, 8])
def test_full_games_reward_the_winner(n_players):
    aec = make_env(n_players=n_players)
    log = _play(aec, seed=n_players)
    final = {agent: reward for agent, action, reward in log if action is None}
    assert sorted(final.values()) == [-1] * (n_players - 1) + [1]
    assert log == _play(aec, seed=n_players)  # same seed, same game


def test_the_selected_agent_is_the_player_to_decide():
    aec = raw_env(n_players=3)
    aec.reset(seed=5)
    for _ in range(50):
        state = aec.game.state
        assert state.phase == DECIDE
        assert aec.agent_selection == f"player_{state.current}"
        aec.step(aec.game.legal_actions()[0])  # hold one die and roll: the turn goes on
        if aec.terminations[aec.agent_selection] or aec.truncations[aec.agent_selection]:
            break


def test_illegal_move_ends_the_game_for_the_offender():
    aec = make_env(n_players=2)
    aec.reset(seed=0)
    agent = aec.agent_selection
    mask = aec.observe(agent)["action_mask"]
    aec.step(int(np.flatnonzero(mask == 0)[0]))
    assert aec.rewards[agent] == -1
    assert all(reward == 0 for other, reward in aec.rewards.items() if other != agent)
    assert all(aec.terminations.values())


def test_truncation_after_max_turns():
    aec = raw_env(n_players=2, max_turns=4)
    aec.reset(seed=0)
    while not any(aec.truncations.values()):
        aec.step(aec.game.legal_actions()[0])  # never bank
    assert aec.game.state.turns == 4
    assert all(r == 0 for r in aec.rewards.values())


@pytest.mark.filterwarnings("ignore:Observation space for each agent probably should be")
@pytest.mark.filterwarnings("ignore:Observation is not a NumPy array")
def test_rich_encoding_passes_the_api_test():
    api_test(make_env(n_players=3, obs_encoding="rich"), num_cycles=300)


@pytest.mark.parametrize("make", [make_env, raw_env], ids=["env", "raw_env"])
@pytest.mark.parametrize("action", [64, -1, np.int64(70), 1.5, "3", True, None])
def test_an_action_outside_the_space_is_a_one_line_value_error(make, action):
    """Issue 28 item 11: env() asserted (an AssertionError, gone under python -O) and
    raw_env read 1.5, "3" and True as actions 1, 3 and 1; now a ValueError, nothing
    changed."""
    aec = make(n_players=2)
    aec.reset(seed=0)
    before = (aec.agent_selection, aec.unwrapped.game.to_json())
    with pytest.raises(ValueError, match=r"^action must be an integer in 0\.\.63, got "):
        aec.step(action)
    assert (aec.agent_selection, aec.unwrapped.game.to_json()) == before


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_players": 9}, r"^n_players must be 2\.\.8, got 9$"),
        ({"max_turns": 1}, r"^max_turns must be an integer >= n_players, got 1$"),
        ({"render_mode": "rgb_array"}, r"^render_mode must be one of \['ansi', 'human'\]"),
        ({"hold": "most"}, "^hold must be one of"),
        ({"obs_encoding": "full"}, "^unknown observation encoding 'full'"),
    ],
)
def test_bad_options_are_refused_in_one_line_as_by_the_gym_env(kwargs, message):
    """raw_env checks the options it shares with FiveThousand-v0 by the same function
    (fivethousand_rl.envs.encoding.check_env_options), so with the same one-line messages."""
    with pytest.raises(ValueError, match=message) as e:
        raw_env(**kwargs)
    assert "\n" not in str(e.value)
