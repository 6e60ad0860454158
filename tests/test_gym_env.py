"""FiveThousand-v0: the Gymnasium interface, masks, rewards, errors."""

import dataclasses
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import fivethousand_rl.envs  # noqa: F401 - registers FiveThousand-v0
from fivethousand_rl.envs.encoding import ObsSpec, compact_slices, observation_size
from fivethousand_rl.envs.game import DECIDE, IllegalMoveError
from fivethousand_rl.envs.gym_env import FiveThousandEnv
from fivethousand_rl.envs.rules import BANK_BIT, NUM_ACTIONS, Rules, format_dice


def random_legal(env, rng):
    legal = np.flatnonzero(env.unwrapped.action_masks())
    return int(legal[rng.integers(len(legal))])


@pytest.mark.parametrize("kwargs", [{}, {"dict_obs": True}, {"n_players": 5, "hold": "all"}])
def test_gymnasium_and_sb3_env_checkers_pass(kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "clean" means not even a warning
        gym_check_env(gym.make("FiveThousand-v0", **kwargs).unwrapped)
        sb3_check_env(FiveThousandEnv(**kwargs), warn=True)


def test_spaces_and_observation_size():
    env = gym.make("FiveThousand-v0", n_players=4)
    assert env.action_space == gym.spaces.Discrete(64)
    assert env.observation_space.shape == (observation_size(4),) == (53,)
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.float32 and env.observation_space.contains(obs)


@pytest.mark.parametrize("n_players", [2, 3, 8])
@pytest.mark.parametrize("hold", ["free", "all"])
def test_learner_only_sees_its_own_scoring_decisions(n_players, hold):
    env = gym.make("FiveThousand-v0", n_players=n_players, hold=hold, learner_seat="random")
    rng = np.random.default_rng(0)
    seats = set()
    for episode in range(20):
        env.reset(seed=episode)
        base = env.unwrapped
        seats.add(base.learner_seat)
        done = False
        while not done:
            s = base.game.state
            assert s.phase == DECIDE and s.current == base.learner_seat
            mask = base.action_masks()
            assert mask.dtype == np.int8 and mask.shape == (NUM_ACTIONS,) and mask.any()
            _, reward, terminated, truncated, info = env.step(random_legal(env, rng))
            done = terminated or truncated
        assert not base.action_masks().any()  # nothing is legal after the end
        assert reward == (1.0 if info["winner"] == base.learner_seat else -1.0)
    assert len(seats) > 1  # "random" seats do vary


def test_rewards_are_zero_during_the_game_and_plus_minus_one_at_the_end():
    env = gym.make("FiveThousand-v0", n_players=3, opponents="threshold:300")
    rng = np.random.default_rng(1)
    outcomes = []
    for episode in range(30):
        env.reset(seed=episode)
        rewards = []
        done = False
        while not done:
            _, reward, terminated, truncated, info = env.step(random_legal(env, rng))
            rewards.append(reward)
            done = terminated or truncated
        assert all(r == 0 for r in rewards[:-1])
        outcomes.append(rewards[-1])
    assert set(outcomes) <= {-1.0, 1.0} and -1.0 in outcomes


def test_truncation_after_max_turns_r11():
    env = gym.make("FiveThousand-v0", max_turns=6, opponents="random")
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    while True:
        _, reward, terminated, truncated, info = env.step(random_legal(env, rng) & ~BANK_BIT)
        if terminated or truncated:
            break
    assert truncated and not terminated and reward == 0.0 and info["turns"] == 6


def test_same_seed_same_episode():
    def episode(seed):
        env = gym.make("FiveThousand-v0", n_players=3, learner_seat="random")
        rng = np.random.default_rng(seed)
        obs, _ = env.reset(seed=seed)
        trace = [obs.tolist()]
        done = False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(random_legal(env, rng))
            trace.append((obs.tolist(), reward))
            done = terminated or truncated
        return trace

    assert episode(11) == episode(11)
    assert episode(11) != episode(12)


@pytest.mark.parametrize("action", [64, -1, 1.5, "3", None, True, np.float32(2)])
def test_action_outside_the_space_raises_value_error(action):
    env = gym.make("FiveThousand-v0")
    env.reset(seed=0)
    before = env.unwrapped.game.state.to_dict()
    with pytest.raises(ValueError, match="0..63"):
        env.step(action)
    assert env.unwrapped.game.state.to_dict() == before


def _illegal_action(env):
    mask = env.unwrapped.action_masks()
    return int(np.flatnonzero(mask == 0)[0])  # int8: ~mask would be -1 or -2, all "true"


def test_illegal_action_loses_by_default():
    env = gym.make("FiveThousand-v0")
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step(_illegal_action(env))
    assert (reward, terminated, truncated, info["illegal_action"]) == (-1.0, True, False, True)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_illegal_action_can_raise_and_change_nothing():
    env = gym.make("FiveThousand-v0", illegal_action="raise")
    env.reset(seed=0)
    before = env.unwrapped.game.state.to_dict()
    with pytest.raises(IllegalMoveError, match="legal:"):
        env.step(_illegal_action(env))
    assert env.unwrapped.game.state.to_dict() == before


def test_observation_layout_from_the_learners_seat():
    env = FiveThousandEnv(n_players=3, learner_seat=1)
    env.reset(seed=3)
    g = env.game
    g.state.scores = [600, 1200, 0]
    g.state.turn_total = 250
    obs = env._observation()
    n = 3
    assert obs[:n].tolist() == pytest.approx([1200 / 5000, 0, 600 / 5000])  # own first
    assert obs[n : 2 * n].tolist() == [1, 0, 1]
    assert obs[2 * n : 3 * n].tolist() == [1, 0, 0]  # it is the learner's turn
    assert obs[3 * n] == pytest.approx(250 / 5000)
    assert obs[3 * n + 1] == pytest.approx((5000 - 1200 - 250) / 5000)
    assert obs[3 * n + 2] == 1.0  # 250 ends in 50
    roll = g.state.roll
    assert obs[3 * n + 3] == pytest.approx(len(roll) / 5)
    one_hot = obs[3 * n + 5 : 3 * n + 35].reshape(5, 6)
    for i, face in enumerate(roll):
        assert one_hot[i].tolist() == [float(f == face) for f in range(1, 7)]


def test_dict_observation_carries_the_mask():
    env = gym.make("FiveThousand-v0", dict_obs=True)
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"observation", "action_mask"}
    assert obs["action_mask"].dtype == np.int8
    assert (obs["action_mask"].astype(bool) == env.unwrapped.action_masks()).all()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"opponents": "grandmaster"}, "unknown bot 'grandmaster'; accepted: random"),
        ({"opponents": ["random"], "n_players": 3}, "need 2 opponents"),
        ({"n_players": 9}, "n_players"),
        ({"learner_seat": 2}, "learner_seat"),
        ({"illegal_action": "ignore"}, "illegal_action"),
        ({"hold": "most"}, "hold"),
        ({"max_turns": 1}, "max_turns"),
        ({"render_mode": "video"}, "render_mode"),
    ],
)
def test_bad_arguments_give_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        FiveThousandEnv(**kwargs)


def test_opponents_may_be_policy_objects_per_seat():
    from fivethousand_rl.agents import RandomBot, ThresholdBot

    env = FiveThousandEnv(n_players=3, opponents=[ThresholdBot(400), RandomBot()], learner_seat=2)
    env.reset(seed=0)
    assert env._seat_policy[0].name == "threshold:400"  # the seat after the learner
    assert env._seat_policy[1].name == "random"


def test_ansi_render_shows_scores_roll_and_turn_total():
    env = gym.make("FiveThousand-v0", render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    roll = env.unwrapped.game.state.roll
    assert "player 0 (learner)" in text and "turn total 0" in text
    assert "roll: " + format_dice(roll) in text


def test_human_render_prints(capsys):
    env = gym.make("FiveThousand-v0", render_mode="human")
    env.reset(seed=0)
    assert "roll:" in capsys.readouterr().out


def test_rgb_render_works_with_sb3_make_vec_env():
    # SB3's make_vec_env asks for render_mode="rgb_array" unless told otherwise.
    from stable_baselines3.common.env_util import make_vec_env

    vec_env = make_vec_env("FiveThousand-v0", n_envs=2, seed=0)
    vec_env.reset()
    frames = vec_env.get_images()
    assert len(frames) == 2 and frames[0].ndim == 3 and frames[0].dtype == np.uint8
    assert (frames[0] != 255).any()  # something is drawn


def test_record_video_records_an_episode_with_the_video_extra(tmp_path):
    """Gymnasium's RecordVideo over render_mode="rgb_array": with the `video` extra
    (moviepy) it writes one frame per step of the episode, reset's included; without it
    Gymnasium refuses in one line, saying what to install (docs/environments.md names
    the extra)."""
    from gymnasium.wrappers import RecordVideo

    env = gym.make("FiveThousand-v0", render_mode="rgb_array", max_turns=6)
    try:
        import moviepy  # noqa: F401
    except ImportError:
        with pytest.raises(gym.error.DependencyNotInstalled, match="pip install") as e:
            RecordVideo(env, str(tmp_path / "videos"))
        assert "\n" not in str(e.value)
        return
    import imageio_ffmpeg

    folder = tmp_path / "videos"  # RecordVideo warns when its folder exists
    env = RecordVideo(env, str(folder), episode_trigger=lambda _: True, disable_logger=True)
    _, info = env.reset(seed=0)
    steps = 0
    while True:
        steps += 1
        _, _, terminated, truncated, info = env.step(int(np.argmax(info["action_mask"])))
        if terminated or truncated:
            break
    env.close()
    (video,) = folder.glob("*.mp4")
    frames, _ = imageio_ffmpeg.count_frames_and_secs(str(video))
    assert frames == steps + 1


def test_rich_encoding_describes_each_legal_action():
    from fivethousand_rl.envs.encoding import ACTION_FEATURES
    from fivethousand_rl.envs.rules import Rules, action_for

    env = FiveThousandEnv(obs_encoding="rich", opponents="smart")
    env.reset(seed=0)
    g = env.game
    g.state.scores = [4700, 3000]
    g.state.roll = (1, 1, 2, 3, 4)
    obs = env._observation()
    assert env.observation_space.contains(obs)
    rows = obs[ObsSpec("rich", 2, Rules()).slices["actions"]].reshape(64, ACTION_FEATURES)
    legal = env.action_masks()
    assert (rows[:, 0] == legal).all()  # feature 0 is the mask
    win = rows[action_for([1, 1], [1, 1, 2, 3, 4], bank=False)]
    assert win[2] == pytest.approx(200 / 5000) and win[5] == 1  # 200 in hand, 3 dice left
    assert win[10 + 100 // 50] == 1  # 100 still needed
    bank = rows[action_for([1], [1, 1, 2, 3, 4], bank=True)]
    assert bank[1] == 1 and bank[39] == pytest.approx(4800 / 5000)


# Slot 40 of an action's row: the turn's expected banked points after the action for a
# points-maximizing player (solve_turn_ev), / 1000. One row per case:
# (banked scores, turn total before the roll, roll, held dice, bank?, expected value).
TURN_EV_CASES = [
    # Entered, banking 200 of 1-1: the total itself (R8 allows it).
    ([1000, 0], 0, (1, 1, 2, 3, 4), [1, 1], True, lambda ev: 200),
    # Rolling on 4 dice with 100 in hand: the turn-EV table's value.
    ([1000, 0], 0, (1, 1, 2, 3, 4), [1], False, lambda ev: ev.roll_value(True, 100, 4)),
    # Not entered yet (R8): the table for a player who still needs 500 to bank.
    ([0, 0], 300, (1, 5, 2, 3, 4), [1, 5], False, lambda ev: ev.roll_value(False, 450, 3)),
    # Hot dice (R6): three 1s (1100, R2) and two 5s held, five dice to roll again.
    (
        [1000, 0],
        0,
        (1, 1, 1, 5, 5),
        [1, 1, 1, 5, 5],
        False,
        lambda ev: ev.roll_value(True, 1200, 5),
    ),
]


@pytest.mark.parametrize("scores, total, roll, held, bank, expected", TURN_EV_CASES)
def test_rich_slot_40_is_the_turn_ev_of_the_action(scores, total, roll, held, bank, expected):
    from fivethousand_rl.envs.encoding import ACTION_FEATURES, action_features
    from fivethousand_rl.envs.game import Game
    from fivethousand_rl.envs.rules import Rules, action_for
    from fivethousand_rl.envs.solver import solve_turn_ev

    game = Game(2, seed=0)
    game.state.scores = list(scores)
    game.state.turn_total = total
    game.roll(roll)
    rows = action_features(game, 0).reshape(64, ACTION_FEATURES)
    row = rows[action_for(held, list(roll), bank=bank)]
    assert row[0] == 1  # legal
    assert row[40] == pytest.approx(expected(solve_turn_ev(Rules())) / 1000)


def test_opponent_pool_draws_opponents_by_weight():
    env = FiveThousandEnv(opponent_pool=[("smart", 3.0), ("random", 1.0)])
    names = []
    for seed in range(400):
        env.reset(seed=seed)
        names += env.opponent_names()
    share = names.count("smart") / len(names)
    assert 0.68 < share < 0.82  # 3:1 weights
    with pytest.raises(ValueError, match="weight must be positive"):
        env.add_opponent("smart", 0)


def test_state_round_trip_continues_identically():
    def run(env, steps, rng):
        trace = []
        for _ in range(steps):
            legal = np.flatnonzero(env.action_masks())
            obs, reward, terminated, truncated, _ = env.step(int(legal[rng.integers(len(legal))]))
            trace.append((obs.tolist(), reward))
            if terminated or truncated:
                env.reset()
        return trace

    a = FiveThousandEnv(opponent_pool=[("smart", 1), ("random", 1)], obs_encoding="rich")
    a.reset(seed=4)
    run(a, 37, np.random.default_rng(0))
    saved = a.get_state()
    b = FiveThousandEnv(opponent_pool=[("smart", 1), ("random", 1)], obs_encoding="rich")
    b.reset(seed=99)
    b.set_state(saved)
    assert run(a, 200, np.random.default_rng(1)) == run(b, 200, np.random.default_rng(1))


def test_state_keeps_an_opponent_that_left_the_pool():
    env = FiveThousandEnv(opponent_pool=[("turn-ev", 1)])
    env.reset(seed=1)
    saved = env.get_state()
    env.set_opponent_pool([("smart", 1)])  # the pool moved on, the game in progress did not
    env.set_state(saved)
    assert env.opponent_names() == ["turn-ev"]
    assert env.get_state()["seat_specs"] == saved["seat_specs"]


# ------------------------------------------------- the observation spec (model contract)
@pytest.mark.parametrize("encoding", ["compact", "rich"])
@pytest.mark.parametrize("n_players", [2, 3, 8])
def test_the_observation_spec_names_every_part_of_the_vector(encoding, n_players):
    env = FiveThousandEnv(n_players=n_players, obs_encoding=encoding)
    spec = env.obs_spec
    obs, _ = env.reset(seed=n_players)
    assert obs.shape == (spec.size,) == env.observation_space.shape
    parts = list(spec.slices.values())
    assert parts[0].start == 0 and parts[-1].stop == spec.size
    assert all(a.stop == b.start for a, b in zip(parts, parts[1:], strict=False))
    game = env.unwrapped.game
    scores = obs[spec.slices["scores"]] * game.rules.target
    assert list(scores) == game.state.scores[0:]  # the learner sits in seat 0
    assert obs[spec.slices["dice_in_roll"]][0] == len(game.state.roll) / 5
    assert ObsSpec.from_dict(spec.to_dict()) == spec


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"n_players": 3}, "trained for 3 players, this game has 2"),
        ({"encoding": "compact"}, "reads the compact observation, not the rich one"),
        ({"version": 1}, "reads observation version 1"),
        ({"rules": Rules(hold="all")}, "trained under"),
    ],
)
def test_a_spec_says_why_it_does_not_fit(change, why):
    wanted = ObsSpec("rich", 2, Rules())
    model = dataclasses.replace(wanted, **change)
    assert why in model.mismatch(wanted)
    assert wanted.mismatch(wanted) == ""


@pytest.mark.parametrize(
    "broken",
    [[], {"encoding": "rich"}, {**ObsSpec("rich", 2, Rules()).to_dict(), "size": 12}],
)
def test_a_damaged_spec_is_refused(broken):
    with pytest.raises(ValueError, match="observation spec"):
        ObsSpec.from_dict(broken)


def test_the_cached_compact_layout_is_the_specs_under_any_rules():
    """The vector env writes the compact fields at ``compact_slices(n)``, cached per player
    count: it must be the spec's layout whatever the rules, and give ``encode``'s size."""
    for n in range(2, 9):
        for rules in (Rules(), Rules(hold="all", target=1000, entry=300)):
            spec = ObsSpec("compact", n, rules)
            assert compact_slices(n) == spec.slices
            assert observation_size(n) == spec.size
