"""Gymnasium, PettingZoo and Stable-Baselines3 conventions, checked with their own tools
(issue 41, item 1): ``gym.make_vec`` in "sync" and "async" modes, info keys of one type,
``action_space.sample(mask=...)``, PettingZoo's ``state()`` with its ``state_test`` and
``parallel_api_test``, plain ``pickle`` whatever the opponents, and the public SB3
adapter over the batched environment. (Gymnasium's and SB3's ``check_env``, with and
without ``dict_obs``, run in tests/test_gym_env.py.)

Run as a script, ``python tests/test_gym_conventions.py`` steps the full 10,000 random
legal steps with 8 environments in both modes and prints the time each took (the unit
test steps 10,000 in "sync" mode and ASYNC_STEPS in "async" mode, to stay fast).
"""

from __future__ import annotations

import functools
import pickle
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script too
import fivethousand_rl.envs  # noqa: E402, F401 - registers FiveThousand-v0
from fivethousand_rl.envs.gym_env import NO_WINNER  # noqa: E402
from fivethousand_rl.envs.policy import Policy  # noqa: E402
from fivethousand_rl.envs.rules import NUM_ACTIONS, Rules  # noqa: E402

# 10,000 async steps with 8 worker processes took 18 to 75 s on 2 busy cores: the script
# (python tests/test_gym_conventions.py) runs those; the unit test a tenth.
ASYNC_STEPS = 1_000
INFO_TYPES = {
    "illegal_action": bool,
    "turns": int,
    "winner": int,
    "learner_seat": int,
    "learner_turns": int,
    "learner_busts": int,
    "action_mask": np.ndarray,  # int8 (64,): Gymnasium's info["action_mask"] convention
}


def random_legal_steps(
    mode: str, steps: int, num_envs: int = 8, seed: int = 0, vector_kwargs=None, **options
):
    """Step ``gym.make_vec(..., vectorization_mode=mode)`` `steps` times with a random
    legal action per environment, read from ``info["action_mask"]`` alone, checking at
    every step that each info key keeps its array type and shape, that the mask is the
    environment's own ``action_masks()`` (all 0 only in a row about to autoreset, with
    Gymnasium's next-step autoreset; a finished game's is all 0 in ``final_info``), that
    no action was illegal, and that finished games report a winner (-1 after a
    truncation) that agrees with the reward. Returns the number of episodes finished."""
    env = gym.make_vec(
        "FiveThousand-v0",
        num_envs=num_envs,
        vectorization_mode=mode,
        vector_kwargs=vector_kwargs or {},
        **options,
    )
    rng = np.random.default_rng(seed)
    same_step = env.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    try:
        _, info = env.reset(seed=seed)
        types = {key: (value.dtype, value.shape) for key, value in info.items()}
        assert set(types) == set(INFO_TYPES) | {f"_{key}" for key in INFO_TYPES}
        assert types["action_mask"] == (np.int8, (num_envs, NUM_ACTIONS))
        episodes, ended = 0, np.zeros(num_envs, dtype=bool)
        for _ in range(steps):
            masks = info["action_mask"]
            own = env.action_masks() if mode == "vector_entry_point" else env.call("action_masks")
            assert np.array_equal(masks, np.stack(own))
            assert (masks.any(axis=1) == ~ended).all()
            actions = (rng.random(masks.shape) * masks).argmax(axis=1)
            _, reward, terminated, truncated, info = env.step(actions)
            assert {key: (info[key].dtype, info[key].shape) for key in types} == types
            if not same_step:
                ended = terminated | truncated
            if same_step and "final_info" in info:
                final = info["final_info"]
                assert final["action_mask"].dtype == np.int8
                rows = final["_action_mask"]
                assert rows.any() and not final["action_mask"][rows].any()
                assert not final["illegal_action"].any()
            assert not info["illegal_action"].any()
            over = np.flatnonzero(terminated)
            winner, seat = info["winner"][over], info["learner_seat"][over]
            assert (winner >= 0).all()
            assert (reward[over] == np.where(winner == seat, 1.0, -1.0)).all()
            assert (info["winner"][truncated] == NO_WINNER).all()
            episodes += int((terminated | truncated).sum())
        return episodes
    finally:
        env.close()


# ------------------------------------------------------------ gym.make_vec, info types
def test_make_vec_sync_steps_10000_random_legal_steps_with_8_envs():
    assert random_legal_steps("sync", 10_000) > 500


def test_make_vec_async_steps_random_legal_steps_with_8_envs():
    assert random_legal_steps("async", ASYNC_STEPS) > 50


def test_make_vec_sync_batches_truncations_and_a_bigger_table():
    assert random_legal_steps("sync", 300, n_players=4, max_turns=12, learner_seat="random")


@pytest.mark.parametrize(
    "mode, vector_kwargs",
    [("sync", {"autoreset_mode": AutoresetMode.SAME_STEP}), ("vector_entry_point", {})],
)
def test_info_carries_the_mask_with_same_step_autoreset(mode, vector_kwargs):
    """Gymnasium's same-step autoreset (the batched env's own mode) too: after a game
    ends, info["action_mask"] is the next game's and final_info's the ended one's."""
    assert random_legal_steps(mode, 300, vector_kwargs=vector_kwargs, max_turns=12) > 100


def _episode_infos(env, rng, illegal_at: int = 0):
    """The infos of one episode (reset's first), a random legal action each step, or an
    illegal one at step `illegal_at` if set."""
    _, info = env.reset(seed=int(rng.integers(1000)))
    infos = [info]
    for step in range(1, 10_000):
        mask = info["action_mask"]
        assert mask.dtype == np.int8 and np.array_equal(mask, env.unwrapped.action_masks())
        action = int(rng.choice(np.flatnonzero(mask == (0 if step == illegal_at else 1))))
        _, _, terminated, truncated, info = env.step(action)
        infos.append(info)
        if terminated or truncated:
            assert not info["action_mask"].any()  # the episode is over
            return infos
    raise AssertionError("the episode did not end")


@pytest.mark.parametrize(
    "options",
    [{}, {"n_players": 3, "learner_seat": "random", "opponents": "smart"}, {"max_turns": 8}],
)
def test_every_info_key_keeps_one_type_across_steps_and_episodes(options):
    """Gymnasium's vector envs batch infos by the type of their first value: a key that
    changes type (winner None, then an int) breaks them. Episodes won, lost, truncated
    and ended by an illegal action alike."""
    env = gym.make("FiveThousand-v0", **options)
    rng = np.random.default_rng(1)
    infos = []
    for episode in range(12):
        infos += _episode_infos(env, rng, illegal_at=5 if episode == 11 else 0)
    for info in infos:
        assert {key: type(value) for key, value in info.items()} == INFO_TYPES
    assert any(info["illegal_action"] for info in infos)
    winners = {info["winner"] for info in infos}
    if "max_turns" in options:  # truncated: still nobody has won
        assert winners == {NO_WINNER} and any(info["turns"] == 8 for info in infos)
    else:  # won and lost: the winner was -1, then a seat
        assert NO_WINNER in winners and winners - {NO_WINNER}


def test_the_vector_envs_agree_with_the_single_envs_info():
    """The batched vector env's infos have the keys and array types that Gymnasium's
    SyncVectorEnv makes of the single env's (-1: no winner in both)."""
    sync = gym.make_vec("FiveThousand-v0", num_envs=4, vectorization_mode="sync")
    batched = gym.make_vec("FiveThousand-v0", num_envs=4, vectorization_mode="vector_entry_point")
    (_, a), (_, b) = sync.reset(seed=0), batched.reset(seed=0)
    assert {k: (v.dtype, v.shape) for k, v in a.items()} == {
        k: (v.dtype, v.shape) for k, v in b.items()
    }
    assert (a["winner"] == NO_WINNER).all() and (b["winner"] == NO_WINNER).all()


# ------------------------------------------------------------------------ action masks
def test_action_space_sample_takes_the_mask():
    """Gymnasium's Discrete.sample wants an int8 mask (as Taxi's info["action_mask"])."""
    env = gym.make("FiveThousand-v0", n_players=3, opponents="smart")
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(500):
        mask = env.unwrapped.action_masks()
        assert mask.dtype == np.int8 and mask.shape == (NUM_ACTIONS,) and set(mask) <= {0, 1}
        action = env.action_space.sample(mask=mask)
        assert mask[action] == 1
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            assert not env.unwrapped.action_masks().any()
            env.reset()


def test_maskable_ppo_reads_the_int8_mask():
    """sb3-contrib turns the mask into a bool tensor: an int8 mask masks as the bool one,
    in training (its rollouts read ``action_masks()``) and in ``predict``."""
    import torch
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.distributions import MaskableCategorical
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.env_util import make_vec_env

    vec_env = make_vec_env("FiveThousand-v0", n_envs=2, seed=0)
    vec_env.reset()
    masks = get_action_masks(vec_env)
    assert masks.dtype == np.int8 and masks.shape == (2, NUM_ACTIONS) and masks.any(axis=1).all()
    logits = torch.randn(2, NUM_ACTIONS)
    as_int8, as_bool = MaskableCategorical(logits=logits), MaskableCategorical(logits=logits)
    as_int8.apply_masking(masks)
    as_bool.apply_masking(masks.astype(bool))
    assert torch.equal(as_int8.probs, as_bool.probs)
    assert (as_int8.probs[torch.as_tensor(masks == 0)] == 0).all()

    model = MaskablePPO("MlpPolicy", vec_env, n_steps=64, batch_size=64, seed=0, device="cpu")
    model.learn(total_timesteps=128)
    env = vec_env.envs[0].unwrapped
    obs, _ = env.reset(seed=3)
    for _ in range(200):
        mask = env.action_masks()
        action, _ = model.predict(obs, action_masks=mask, deterministic=False)
        assert mask[int(action)] == 1
        obs, _, terminated, truncated, _ = env.step(int(action))
        if terminated or truncated:
            obs, _ = env.reset()


# ------------------------------------------------------------------ Gymnasium checkers
@pytest.mark.parametrize("dict_obs", [False, True])
def test_the_vector_env_keeps_gymnasiums_vector_contract(dict_obs):
    """Gymnasium 1.4 has no checker for vector envs: the checks its check_env makes of
    a single env, made here of the batched one (spaces batched from the single ones,
    observations in their space and not reused between steps, a seed that decides
    everything, a ``_key`` mask beside every info key)."""
    from gymnasium.utils.env_checker import data_equivalence
    from gymnasium.utils.passive_env_checker import data_shares_objects
    from gymnasium.vector.utils import batch_space

    def run(seed):
        env = gym.make_vec(
            "FiveThousand-v0",
            num_envs=6,
            vectorization_mode="vector_entry_point",
            dict_obs=dict_obs,
            max_turns=10,
        )
        assert env.observation_space == batch_space(env.single_observation_space, 6)
        assert env.action_space == batch_space(env.single_action_space, 6)
        env.action_space.seed(seed)
        obs, info = env.reset(seed=seed)
        trace = [(obs, info)]
        for _ in range(60):
            assert env.observation_space.contains(obs)
            keys = {key for key in info if not key.startswith("_")}
            assert set(info) == keys | {f"_{key}" for key in keys}
            masks = env.unwrapped.action_masks()
            actions = np.array([np.flatnonzero(m)[0] for m in masks])  # never empty
            step = env.step(actions)
            assert not data_shares_objects(step[0], obs)
            obs, info = step[0], step[4]
            trace.append(step)
        return trace

    first = run(5)
    assert data_equivalence(first, run(5))
    assert not data_equivalence(first, run(6))


# --------------------------------------------------------------------------- PettingZoo
@pytest.mark.filterwarnings("ignore:Observation space for each agent probably should be")
@pytest.mark.filterwarnings("ignore:Observation is not a NumPy array")
@pytest.mark.parametrize("n_players", [2, 4])
def test_pettingzoo_state_test_and_parallel_api_test(n_players):
    from pettingzoo.test import parallel_api_test, state_test
    from pettingzoo.utils.conversions import turn_based_aec_to_parallel

    from fivethousand_rl.envs.pettingzoo_env import env

    state_test(env(n_players=n_players), turn_based_aec_to_parallel(env(n_players=n_players)))
    parallel_api_test(turn_based_aec_to_parallel(env(n_players=n_players)), num_cycles=500)


@pytest.mark.parametrize("obs_encoding", ["compact", "rich"])
def test_pettingzoo_state_is_the_compact_observation_from_seat_0(obs_encoding):
    """The game hides nothing, so the state is what player_0 would see in the compact
    encoding, whatever encoding the agents observe: every score in seat order, whose
    turn (by seat number), the turn total and the roll."""
    from fivethousand_rl.envs.encoding import ObsSpec, compact_slices
    from fivethousand_rl.envs.pettingzoo_env import raw_env

    aec = raw_env(n_players=3, obs_encoding=obs_encoding)
    with pytest.raises(RuntimeError, match="reset"):
        aec.state()
    aec.reset(seed=2)
    at, compact = compact_slices(3), ObsSpec("compact", 3, Rules())
    rng = np.random.default_rng(0)
    seen_movers = set()
    while not any(aec.terminations.values()):
        state, s = aec.state(), aec.game.state
        assert aec.state_space.contains(state) and state.shape == (3 * 3 + 41,)
        np.testing.assert_array_equal(state, compact.encode(aec.game, 0))
        np.testing.assert_allclose(state[at["scores"]] * 5000, s.scores)  # seat order
        assert np.flatnonzero(state[at["to_move"]]).tolist() == [s.current]
        assert state[at["dice_in_roll"]][0] == len(s.roll) / 5
        seen_movers.add(s.current)
        aec.step(int(rng.choice(aec.game.legal_actions())))
    assert seen_movers == {0, 1, 2}
    assert aec.state_space.contains(aec.state())  # still a state once the game is over


def test_turn_based_aec_to_parallel_plays_whole_games():
    """The conversion the docs show: every agent hands an action each step; only the
    agent whose decision is due (the one with a legal action) is heard."""
    from pettingzoo.utils.conversions import turn_based_aec_to_parallel

    from fivethousand_rl.envs.pettingzoo_env import env

    par = turn_based_aec_to_parallel(env(n_players=3))
    rng = np.random.default_rng(0)
    for seed in range(3):
        observations, _ = par.reset(seed=seed)
        rewards = {}
        while par.agents:
            movers = [a for a, o in observations.items() if o["action_mask"].any()]
            assert len(movers) == 1
            actions = {
                agent: int(rng.choice(np.flatnonzero(o["action_mask"]))) if agent in movers else 0
                for agent, o in observations.items()
            }
            assert np.array_equal(par.state(), par.unwrapped.state())
            observations, rewards, *_ = par.step(actions)
        assert sorted(rewards.values()) == [-1, -1, 1]


# ------------------------------------------------------------------------------ pickle
class PlainBot(Policy):
    """A user's own bot: always the first legal action."""

    name = "plain"

    def act(self, game, rng):
        return game.legal_actions()[0]


@pytest.fixture(scope="module")
def exported_bots(tmp_path_factory) -> dict[str, str]:
    """ppo-2p and planner-2p exported to ONNX (a PPO bot and a planner)."""
    from fivethousand_rl import export

    folder = tmp_path_factory.mktemp("bots")
    bots = {"ONNX": str(folder / "ppo-2p.onnx"), "ONNX_PLANNER": str(folder / "planner-2p.onnx")}
    assert export.main(["ppo-2p", "-o", bots["ONNX"]]) == 0
    assert export.main(["planner-2p", "-o", bots["ONNX_PLANNER"]]) == 0
    return bots


def _play(env, rng, steps: int) -> list:
    """`steps` random legal steps (resetting when an episode ends): every result."""
    trace = []
    for _ in range(steps):
        action = int(rng.choice(np.flatnonzero(env.unwrapped.action_masks())))
        obs, reward, terminated, truncated, info = env.step(action)
        mask = info["action_mask"].tobytes()  # an array: compared as bytes
        trace.append((obs.tobytes(), reward, terminated, truncated, {**info, "action_mask": mask}))
        if terminated or truncated:
            env.reset()
            trace.append("reset")
    return trace


# A self-play snapshot (.npz) as training writes them.
SNAPSHOT = Path(__file__).parent / "data" / "ppo_2p_free_seed1" / "snapshots" / "step7753728.npz"
OPPONENTS = {  # id: (n_players, opponents or opponent_pool, steps played before pickling)
    "random": (2, "random", 40),
    "threshold": (2, "threshold:350", 40),
    "smart": (2, "smart", 40),
    "turn-ev": (2, "turn-ev", 40),
    "optimal": (2, "optimal", 40),
    "best-response": (2, "best-response:smart", 40),  # in a small game (below): quick
    "ppo-2p": (2, "ppo-2p", 40),
    "planner-2p": (2, "planner-2p", 20),
    "planner-3p": (3, "planner-3p", 10),
    "sb3-zip": (2, "ZIP", 40),
    "onnx-bot": (2, "ONNX", 40),
    "onnx-planner": (2, "ONNX_PLANNER", 20),
    "snapshot": (2, str(SNAPSHOT), 40),
    "own-policy": (3, [PlainBot(), "smart"], 40),
    "pool": (2, [("ppo-2p", 2.0), ("smart", 1.0), ("planner-2p", 1.0)], 40),
}


@pytest.mark.parametrize("kind", OPPONENTS)
def test_the_env_pickles_with_plain_pickle_and_plays_on_identically(kind, exported_bots):
    """Whatever sits in the opponents' seats, pickle.dumps/loads gives an env that goes
    on exactly as the original (same observations, rewards and infos for the same
    actions), and plays the same game again from the same seed."""
    from fivethousand_rl.agents.shipped import shipped_model

    n_players, opponents, steps = OPPONENTS[kind]
    files = {"ZIP": str(shipped_model("ppo-2p")), **exported_bots}
    opponents = files.get(opponents, opponents) if isinstance(opponents, str) else opponents
    seats = {"opponent_pool" if kind == "pool" else "opponents": opponents}
    rules = {"target": 1000, "entry": 300} if kind == "best-response" else {}
    env = gym.make("FiveThousand-v0", n_players=n_players, **seats, **rules)
    env.reset(seed=1)
    _play(env, np.random.default_rng(0), steps)  # caches filled, models used
    copy = pickle.loads(pickle.dumps(env))
    assert _play(copy, np.random.default_rng(1), 30) == _play(env, np.random.default_rng(1), 30)
    copy.reset(seed=9)
    env.reset(seed=9)
    assert _play(copy, np.random.default_rng(2), 30) == _play(env, np.random.default_rng(2), 30)


def test_an_onnx_bot_whose_file_changed_is_refused_when_unpickled(exported_bots, tmp_path):
    from fivethousand_rl.agents import make_policy
    from fivethousand_rl.agents.exported import ExportError

    path = tmp_path / "bot.onnx"
    path.write_bytes(Path(exported_bots["ONNX"]).read_bytes())
    path.with_suffix(".json").write_bytes(
        Path(exported_bots["ONNX"]).with_suffix(".json").read_bytes()
    )
    pickled = pickle.dumps(make_policy(str(path)))
    path.write_bytes(path.read_bytes() + b"\0")
    with pytest.raises(ExportError, match=r"^cannot unpickle the exported bot: .* changed"):
        pickle.loads(pickled)
    path.unlink()
    with pytest.raises(ExportError, match=r"^cannot unpickle the exported bot: .* is gone$"):
        pickle.loads(pickled)


def test_async_workers_get_an_env_with_a_trained_opponent_by_plain_pickle():
    """SubprocVecEnv-style: the env built here, pickled, unpickled in each worker
    process (spawned, as with torch loaded forking can hang), and stepped there."""
    env = gym.make("FiveThousand-v0", opponents="ppo-2p")
    make = functools.partial(pickle.loads, pickle.dumps(env))
    vec = gym.vector.AsyncVectorEnv([make, make], context="spawn")
    try:
        obs, info = vec.reset(seed=0)
        for _ in range(20):
            masks = np.stack(vec.call("action_masks"))
            obs, reward, terminated, truncated, info = vec.step(masks.argmax(axis=1))
        assert obs.shape == (2, 3 * 2 + 41) and info["winner"].dtype == np.int64
        assert vec.call("opponent_names") == (["ppo-2p"], ["ppo-2p"])
    finally:
        vec.close()


# -------------------------------------------------------------- the public SB3 adapter
def test_maskable_ppo_trains_through_the_public_sb3_adapter():
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import VecEnv

    from fivethousand_rl.agents.sb3 import make_sb3_vec_env

    vec_env = make_sb3_vec_env(16, seed=0, opponents="smart")
    assert isinstance(vec_env, VecEnv) and vec_env.num_envs == 16
    model = MaskablePPO("MlpPolicy", vec_env, n_steps=16, batch_size=64, seed=0, device="cpu")
    model.learn(total_timesteps=512)
    assert model.num_timesteps == 512
    obs = vec_env.reset()
    for _ in range(20):
        masks = vec_env.action_masks()
        actions, _ = model.predict(obs, action_masks=masks, deterministic=True)
        assert masks[np.arange(16), actions].all()
        obs, rewards, dones, infos = vec_env.step(actions)
        for info in np.array(infos)[dones]:
            assert info["winner"] >= 0 or info["TimeLimit.truncated"]
            assert "terminal_observation" in info and "episode" in info


def test_the_adapter_takes_make_vecs_env_and_refuses_others():
    from fivethousand_rl.agents.sb3 import BatchedVecEnv

    vec = gym.make_vec(
        "FiveThousand-v0", num_envs=4, vectorization_mode="vector_entry_point", n_players=3
    )
    adapter = BatchedVecEnv(vec)
    assert adapter.reset().shape == (4, 3 * 3 + 41)
    sync = gym.make_vec("FiveThousand-v0", num_envs=4, vectorization_mode="sync")
    with pytest.raises(ValueError, match="^BatchedVecEnv takes the vector environment of"):
        BatchedVecEnv(sync)
    with pytest.raises(ValueError, match="^n_players must be"):
        from fivethousand_rl.agents.sb3 import make_sb3_vec_env

        make_sb3_vec_env(4, n_players=9)


def test_the_trainers_schedule_pickles_and_decays_linearly():
    from fivethousand_rl.agents.training.model import LinearLearningRate

    schedule = pickle.loads(pickle.dumps(LinearLearningRate(3e-4, 1e-5)))
    assert schedule(1.0) == 3e-4 and schedule(0.0) == 1e-5
    assert schedule(0.5) == 1e-5 + (3e-4 - 1e-5) * 0.5  # the lambda's arithmetic, bit for bit


if __name__ == "__main__":
    for mode in ("sync", "async"):
        start = time.perf_counter()
        episodes = random_legal_steps(mode, 10_000)
        seconds = time.perf_counter() - start
        print(f"{mode}: 10,000 steps of 8 envs, {episodes} episodes, {seconds:.1f} s")
