"""The house-rule switches of RULES.md V1-V5 in the environments and the models that
read them (issue 31 item 2): every environment takes each switch, as an option or in a
``Rules``; its episodes end as the rules say; the observation follows the score step
(V4) and records the rules, which saved specs keep; a trained model plays only the
rules it was trained under. The vector environment's replays through the engine under
each switch are in tests/test_vector_env.py (``test_replay_through_game_under_house_rules``).
One row per case."""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import shutil
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from pettingzoo.test import api_test

import fivethousand_rl.envs  # noqa: F401 - registers FiveThousand-v0
from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.neural import read_obs_spec, read_settings, spec_problem, write_settings
from fivethousand_rl.agents.value_net import FeatureSpec, ValueNet
from fivethousand_rl.envs.driver import play as play_loop
from fivethousand_rl.envs.encoding import RULE_OPTIONS, ObsSpec, score_bins
from fivethousand_rl.envs.game import DECIDE, ROLL, Game
from fivethousand_rl.envs.gym_env import FiveThousandEnv
from fivethousand_rl.envs.pettingzoo_env import env as pettingzoo_env
from fivethousand_rl.envs.pettingzoo_env import raw_env
from fivethousand_rl.envs.rules import BANK_BIT, SWITCH_DEFAULTS, Rules, can_bank
from tests.helpers import play

ROOT = Path(__file__).resolve().parent.parent
SHIPPED_2P = ROOT / "checkpoints" / "ppo-2p" / "model.zip"
SNAPSHOT_2P = ROOT / "tests" / "data" / "ppo_2p_free_seed1" / "snapshots" / "step7753728.npz"

# Shrunken games (V5), one switch changed from the seeds' rules per row, and all at once.
VARIANTS = {
    "V1 entry 300": Rules(target=1500, entry=300),
    "V1 entry 350 under the 50 rule": Rules(target=1500, entry=350),
    "V2 no bumps": Rules(target=1500, bump=False),
    "V3 overshoot lost": Rules(target=1500, overshoot="lost"),
    "V4 no 50 rule": Rules(target=1500, fifty_rule=False),
    "V1 V4 entry 250 without the 50 rule": Rules(target=1500, entry=250, fifty_rule=False),
    "V1-V5 and R5 all at once": Rules(
        hold="all", target=1000, entry=150, bump=False, overshoot="lost", fifty_rule=False
    ),
}
ALL_AT_ONCE = VARIANTS["V1-V5 and R5 all at once"]


def options(rules: Rules) -> dict:
    """`rules` as the environments' rule options, one per field."""
    return dataclasses.asdict(rules)


# Every environment, built from keyword arguments, unwrapped: the tests read its
# ``rules`` and ``obs_spec``.
MAKERS = {
    "FiveThousand-v0": lambda **kw: gym.make("FiveThousand-v0", **kw).unwrapped,
    "vector": lambda **kw: (
        gym.make_vec(
            "FiveThousand-v0", num_envs=2, vectorization_mode="vector_entry_point", **kw
        ).unwrapped
    ),
    "PettingZoo raw_env": raw_env,
    "PettingZoo env": lambda **kw: pettingzoo_env(**kw).unwrapped,
}


# ------------------------------------------------------------------ the options
@pytest.mark.parametrize("maker", MAKERS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_every_env_takes_each_switch_as_an_option_or_in_rules(maker, variant):
    """V1-V5: gym.make(..., bump=False, ...) and gym.make(..., rules=Rules(...)) are the
    same game; its observation spec records the rules."""
    rules = VARIANTS[variant]
    for kwargs in (options(rules), {"rules": rules}):
        env = MAKERS[maker](**kwargs)
        assert env.rules == rules and env.obs_spec.rules == rules, kwargs


@pytest.mark.parametrize("env_class", [FiveThousandEnv, raw_env])
def test_every_rule_option_is_an_argument(env_class):
    """A switch added to Rules must be added to the environments too."""
    arguments = inspect.signature(env_class).parameters
    assert set(RULE_OPTIONS) | {"rules"} <= set(arguments)
    assert all(arguments[name].default is None for name in (*RULE_OPTIONS, "rules"))


@pytest.mark.parametrize("maker", MAKERS)
def test_the_seeds_rules_by_default(maker):
    env = MAKERS[maker]()
    assert env.rules == Rules() and env.obs_spec == ObsSpec("compact", 2, Rules())


@pytest.mark.parametrize("maker", MAKERS)
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rules": Rules(), "bump": False}, r"either as rules=Rules\(\.\.\.\) or as options"),
        ({"rules": Rules(), "hold": "free"}, r"not both \(got rules= and hold=\)"),
        ({"rules": {"bump": False}}, "rules must be an fivethousand_rl.envs.rules.Rules"),
        ({"entry": 325}, "entry must be a multiple of 50"),  # V1
        ({"entry": 25}, "entry must be between 50 and target"),  # V1
        ({"bump": "no"}, "bump must be true or false"),  # V2
        ({"overshoot": "kept"}, "overshoot must be one of"),  # V3
        ({"fifty_rule": 1}, "fifty_rule must be true or false"),  # V4
        ({"target": 1250}, "target must be a positive multiple of 100"),  # V5
    ],
)
def test_rules_given_twice_or_wrong_are_refused_in_one_line(maker, kwargs, message):
    with pytest.raises(ValueError, match=message) as e:
        MAKERS[maker](**kwargs)
    assert "\n" not in str(e.value)


# ------------------------------------------------------------------ episodes
def on_the_score_grid(score: int, rules: Rules) -> bool:
    """R10 (V4: by 50 without the 50 rule), R8 (V1: nobody banks under the entry)."""
    return score % rules.score_step == 0 and (score == 0 or score >= rules.entry)


@pytest.mark.parametrize("variant", VARIANTS)
def test_episodes_end_as_the_rules_say(variant):
    """Random learner, random and threshold opponents: the game is played under the
    variant; every observation is in the space, its scores and its "ends in 50" flag are
    the game's (R8, V4); banked scores stay on the grid (R10, V1, V4); an episode ends
    when a player reaches the target exactly (R9, V5), +1 to the learner if it is the
    winner, -1 otherwise, or by truncation."""
    rules = VARIANTS[variant]
    env = gym.make(
        "FiveThousand-v0",
        n_players=3,
        opponents=["random", "threshold:300"],
        learner_seat="random",
        max_turns=60,
        rules=rules,
    )
    base = env.unwrapped
    at = base.obs_spec.slices
    rng = np.random.default_rng(0)
    wins, scores_seen = 0, set()
    for episode in range(25):
        obs, info = env.reset(seed=episode)
        assert base.game.rules == rules
        while True:
            game, seat = base.game, base.learner_seat
            s = game.state
            assert env.observation_space.contains(obs)
            own_first = [s.scores[(seat + k) % 3] for k in range(3)]
            np.testing.assert_allclose(obs[at["scores"]] * rules.target, own_first)
            blocked = s.turn_total > 0 and not can_bank(rules.entry, s.turn_total, rules)
            assert obs[at["ends_in_50"]][0] == blocked  # an entered player's R8 refusal
            assert all(on_the_score_grid(x, rules) for x in s.scores), s.scores
            scores_seen.update(s.scores)
            legal = np.flatnonzero(base.action_masks())
            banks = legal[legal >= BANK_BIT]
            action = rng.choice(banks if banks.size and rng.random() < 0.5 else legal)
            obs, reward, terminated, truncated, info = env.step(int(action))
            if terminated:
                winner = info["winner"]
                assert base.game.state.scores[winner] == rules.target
                assert max(base.game.state.scores) == rules.target
                assert reward == (1.0 if winner == seat else -1.0)
                wins += 1
                break
            assert reward == 0.0
            if truncated:
                assert base.game.state.turns >= 60 and info["winner"] == -1  # no winner
                break
            assert base.game.state.phase == DECIDE  # the learner's next decision
    assert wins > 10
    if not rules.fifty_rule:  # V4: scores ending in 50 happen, and are observed
        assert any(x % 100 == 50 for x in scores_seen)


@pytest.mark.parametrize("obs_encoding", ["compact", "rich"])
def test_gymnasium_and_sb3_env_checkers_pass_under_every_switch(obs_encoding):
    from stable_baselines3.common.env_checker import check_env as sb3_check_env  # torch: slow

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "clean" means not even a warning
        env = gym.make("FiveThousand-v0", obs_encoding=obs_encoding, rules=ALL_AT_ONCE)
        gym_check_env(env.unwrapped)
        sb3_check_env(FiveThousandEnv(obs_encoding=obs_encoding, rules=ALL_AT_ONCE), warn=True)


@pytest.mark.filterwarnings("ignore:Observation space for each agent probably should be")
@pytest.mark.filterwarnings("ignore:Observation is not a NumPy array")
def test_pettingzoo_api_test_passes_under_every_switch():
    api_test(pettingzoo_env(n_players=3, rules=ALL_AT_ONCE), num_cycles=300)


# ------------------------------------------------------------------ the observation
@pytest.mark.parametrize(
    ("rules", "scores", "ends_in_50", "bins", "score_bins_hot"),
    [
        # R8, R10: a total of 250 may not be banked; scores by 100, 0..5000: 51 bins.
        (Rules(), (1500, 0), 1.0, 51, [15, 51 + 0]),
        # V4: it may; scores by 50: 101 bins, 1550 in bin 31.
        (Rules(fifty_rule=False), (1550, 0), 0.0, 101, [31, 101 + 0]),
        # V1 + V4 + V5: a small game, scores 950 and 350 by 50.
        (Rules(target=1000, entry=350, fifty_rule=False), (950, 350), 0.0, 21, [19, 21 + 7]),
        # V2, V3 leave the layout as it is.
        (Rules(bump=False, overshoot="lost"), (4900, 4900), 1.0, 51, [49, 51 + 49]),
    ],
)
def test_score_features_follow_the_score_step(rules, scores, ends_in_50, bins, score_bins_hot):
    """The rich one-hot scores are binned by ``Rules.score_step`` (R10; V4), the "ends in
    50" flag is R8's refusal, on under the 50 rule only (V4)."""
    game = Game(2, rules, seed=0)
    game.state.scores = list(scores)
    play(game, [1, 1, 2, 3, 5], [1, 1, 5], bank=False)  # a turn total of 250, two dice left
    game.roll([1, 2])
    assert game.state.phase == DECIDE and game.state.turn_total == 250
    spec = ObsSpec("rich", 2, rules)
    obs = spec.encode(game, 0)
    one_hot = spec.slices["score_one_hot"]
    assert score_bins(rules) == bins and one_hot.stop - one_hot.start == 2 * bins
    assert obs[spec.slices["ends_in_50"]][0] == ends_in_50
    assert np.flatnonzero(obs[one_hot]).tolist() == score_bins_hot
    assert obs.size == spec.size


@pytest.mark.parametrize(
    ("rules", "score", "thermometer"),
    [
        (Rules(target=1000, entry=300), 700, [1] * 7 + [0] * 2),  # R10: by 100
        (Rules(target=1000, entry=300, fifty_rule=False), 350, [1] * 7 + [0] * 12),  # V4
    ],
)
def test_value_net_thermometer_follows_the_score_step(rules, score, thermometer):
    spec = FeatureSpec(rules)
    x, _ = spec.encode(np.array([[0, score]]))
    seats = x[0, : spec.max_players * spec.per_seat].reshape(spec.max_players, spec.per_seat)
    assert seats[1, 3:].tolist() == thermometer


@pytest.mark.parametrize(
    ("rules", "position", "valid"),
    [
        (Rules(target=1000, entry=300), (0, 350), False),  # R10: not a multiple of 100
        (Rules(target=1000, entry=300, fifty_rule=False), (0, 350), True),  # V4
        (Rules(target=1000, entry=350, fifty_rule=False), (0, 300), False),  # V1: under it
        (Rules(target=1000, entry=350), (400, 900), True),  # V1: 400, the first bank
    ],
)
def test_value_net_takes_the_turn_starts_of_its_rules(rules, position, valid):
    spec = FeatureSpec(rules)
    if valid:
        assert spec.check(np.array([position])).tolist() == [list(position)]
    else:
        with pytest.raises(ValueError, match="not a turn-start score") as e:
            spec.check(np.array([position]))
        assert "\n" not in str(e.value)


def default_observations_digest() -> str:
    """SHA-256 of the compact and rich observations, from every seat, of every decision
    of a few seeded games under rules without the switches (banking or random moves)."""
    digest = hashlib.sha256()
    for rules in (Rules(), Rules(hold="all", target=1500, entry=300)):
        for n in (2, 3):
            specs = [ObsSpec(encoding, n, rules) for encoding in ("compact", "rich")]
            rng = np.random.default_rng(n)
            for seed in range(6):
                game = Game(n, rules, seed=seed)
                while not game.over and game.state.turns < 150:
                    if game.state.phase == ROLL:
                        game.roll()
                        continue
                    for seat in range(n):
                        for spec in specs:
                            digest.update(spec.encode(game, seat).tobytes())
                    legal = game.legal_actions()
                    banks = [a for a in legal if a >= BANK_BIT]
                    game.act(int(rng.choice(banks if banks and rng.random() < 0.6 else legal)))
    return digest.hexdigest()


def test_observations_under_the_seeds_rules_are_unchanged_to_the_bit():
    """The shipped agents read these observations: the switches left them as they were
    (digest recorded from the encoding of commit cf92766; a deliberate layout change
    comes with a new OBS_VERSION and a new digest)."""
    assert default_observations_digest() == (
        "ef019a83e5b1c1c8b20c0298c3ae3f731aa859cd73cc7c2ebef0a8a9342e4557"
    )


# ------------------------------------------------------------------ the saved specs
@pytest.mark.parametrize("variant", VARIANTS)
def test_specs_round_trip_every_switch(variant):
    """What a model saves (JSON) reads back as the same rules; a switch is written only
    when it differs from the seeds' rule."""
    rules = VARIANTS[variant]
    for encoding in ("compact", "rich"):
        spec = ObsSpec(encoding, 3, rules)
        saved = json.loads(json.dumps(spec.to_dict()))
        assert ObsSpec.from_dict(saved) == spec
        written = {k for k in saved["rules"] if k in SWITCH_DEFAULTS}
        assert written == {k for k, v in SWITCH_DEFAULTS.items() if getattr(rules, k) != v}
    features = FeatureSpec(rules)
    assert FeatureSpec.from_dict(json.loads(json.dumps(features.to_dict()))) == features
    table = FeatureSpec(rules, 3, ("smart", "random"))
    assert FeatureSpec.from_dict(json.loads(json.dumps(table.to_dict()))) == table


OLD_OBS_SPEC = {  # as models saved it before the switches: no bump, overshoot, fifty_rule
    "encoding": "compact",
    "version": 2,
    "n_players": 2,
    "rules": {"hold": "free", "target": 5000, "entry": 500},
    "size": 47,
    "slices": ObsSpec("compact", 2, Rules()).to_dict()["slices"],
}
OLD_FEATURE_SPEC = {"rules": {"hold": "all", "target": 1000, "entry": 300}, "max_players": 8}


@pytest.mark.parametrize(
    ("read", "rules"),
    [
        (lambda: ObsSpec.from_dict(OLD_OBS_SPEC).rules, Rules()),
        (lambda: read_obs_spec(SHIPPED_2P).rules, Rules()),  # the shipped SB3 model
        (lambda: read_obs_spec(SNAPSHOT_2P).rules, Rules()),
        (
            lambda: FeatureSpec.from_dict({**OLD_FEATURE_SPEC, "version": 1}).rules,
            Rules(hold="all", target=1000, entry=300),
        ),
        (lambda: make_policy("planner-2p").rules, Rules()),  # the shipped value net
    ],
    ids=["obs spec", "SB3 checkpoint", "snapshot", "feature spec", "value net"],
)
def test_specs_saved_before_the_switches_read_as_the_seeds_rules(read, rules):
    assert read() == rules


# ------------------------------------------------------------------ trained models
def snapshot_under(rules: Rules, folder: Path) -> Path:
    """The test snapshot, its spec rewritten for `rules` (whose observation has the
    same size: V2, V3), as if it had been trained under them."""
    path = folder / "snapshot.npz"
    shutil.copy(SNAPSHOT_2P, path)
    settings = read_settings(path)
    spec = ObsSpec.from_dict(settings["obs_spec"])
    settings["obs_spec"] = dataclasses.replace(spec, rules=rules).to_dict()
    write_settings(path, settings)
    return path


def untrained_net(rules: Rules, seed: int = 0) -> ValueNet:
    """A small value net of random weights reading the features of `rules` (no torch)."""
    spec = FeatureSpec(rules)
    rng = np.random.default_rng(seed)
    weights = [rng.normal(size=(spec.size, 8)), rng.normal(size=(8, spec.max_players))]
    return ValueNet(spec, weights, [np.zeros(8), np.zeros(spec.max_players)])


OTHER_RULES = [Rules(bump=False), Rules(overshoot="lost"), Rules(fifty_rule=False), Rules()]


@pytest.mark.parametrize(
    ("model", "trained", "refusal"),
    [
        ("snapshot", Rules(), "cannot play this game: it was trained under"),
        ("snapshot", Rules(bump=False), "cannot play this game: it was trained under"),
        ("snapshot", Rules(overshoot="lost"), "cannot play this game: it was trained under"),
        ("planner", Rules(), "values games under"),
        ("planner", Rules(fifty_rule=False), "values games under"),
        ("planner", Rules(entry=350, bump=False), "values games under"),
    ],
)
def test_a_trained_model_plays_only_its_rules(model, trained, refusal, tmp_path):
    """V1-V4: a model refuses, in one line, every game whose rules differ from the ones
    it was trained under, and takes its own."""
    if model == "snapshot":
        policy = make_policy(str(snapshot_under(trained, tmp_path)))
    else:
        policy = untrained_net(trained).planner()
    policy.check_game(2, trained)
    for rules in OTHER_RULES:
        if rules != trained:
            with pytest.raises(ValueError, match=refusal) as e:
                policy.check_game(2, rules)
            assert "\n" not in str(e.value)


@pytest.mark.parametrize("rules", OTHER_RULES[:3], ids=repr)
def test_the_shipped_sb3_model_reads_only_the_seeds_rules(rules):
    """The check SB3Policy.check_game makes, on the shipped checkpoint's spec (read
    without loading torch)."""
    why = spec_problem(read_obs_spec(SHIPPED_2P), 2, rules)
    assert why.startswith("it was trained under these rules: ") and "\n" not in why


@pytest.mark.parametrize("maker", ["FiveThousand-v0", "vector"])
def test_an_env_refuses_a_trained_opponent_of_other_rules_and_seats_any_bot(maker):
    with pytest.raises(ValueError, match="cannot play this game") as e:
        MAKERS[maker](opponents=str(SNAPSHOT_2P), bump=False)
    assert "\n" not in str(e.value)
    bots = ["optimal", "smart", "turn-ev", "threshold:300", "random"]  # bots play any rules
    env = MAKERS[maker](n_players=6, opponents=bots, rules=ALL_AT_ONCE)
    assert env.rules == ALL_AT_ONCE
    env.reset(seed=0)
    for _ in range(20):
        *_, terminated, truncated, _ = env.step(np.argmax(env.action_masks(), axis=-1))
        if maker == "FiveThousand-v0" and (terminated or truncated):  # the vector env resets
            env.reset()


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_value_nets_planner_plays_whole_games_under_its_rules(variant):
    """The features take every turn start the engine reaches under the switches (scores
    ending in 50 without the 50 rule, V4; first banks from the entry, V1): games end."""
    rules = dataclasses.replace(VARIANTS[variant], target=1000)
    bot = untrained_net(rules).planner()
    for seed, n_players in enumerate((2, 3)):
        game = Game(n_players, rules, seed=seed)
        play_loop(game, [bot] * n_players, np.random.default_rng(seed), max_turns=500)
        assert game.over and max(game.state.scores) == rules.target


def test_a_value_net_saved_under_a_variant_loads_under_it(tmp_path):
    rules = Rules(target=1000, entry=250, fifty_rule=False, overshoot="lost")
    net = untrained_net(rules)
    back = ValueNet.load(net.save(tmp_path / "value_net.npz"))
    assert back.spec.rules == rules
    positions = np.array([[0, 250], [950, 300]])
    np.testing.assert_array_equal(back(positions), net(positions))
