"""Measuring a researcher's own agent exactly (issue 41, item 3): a MaskablePPO model
saved by a plain user loop on FiveThousand-v0 is taken by path everywhere, its
observation layout read from its saved observation space; a batch function is an agent
by one call (``agents.from_function``); a plain ``Policy`` with only ``act`` gets its
exact exploitability; and the best-response cache holds only what it identifies
exactly, never a policy by its name or class alone.

Oracles: the package's own bots (the plain bots here are written from the same rules,
R2, R8, R9, so their exact numbers must be the package bots'), and fresh computations
against cached ones."""

from __future__ import annotations

import importlib
import json
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

from fivethousand_rl.agents import FunctionAgent, from_function, make_policy
from fivethousand_rl.agents import best_response as br_core
from fivethousand_rl.agents.best_response import (
    NotDeterministicError,
    best_response,
    bot_key,
    exploitability,
    summary,
)
from fivethousand_rl.agents.best_response import cli as br_cli
from fivethousand_rl.agents.neural import (
    CheckpointError,
    SB3Policy,
    read_obs_spec,
    read_settings,
    write_settings,
)
from fivethousand_rl.envs.best_response import BestResponse, ScoreSpace
from fivethousand_rl.envs.encoding import ObsSpec
from fivethousand_rl.envs.game import Game
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import BANK_BIT, ROLL_INFO, Rules, can_bank
from fivethousand_rl.envs.turn_outcomes import turn_ends

SMALL = Rules(target=1000, entry=300)
ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------ plain user models
def train_plain(path, **env_options):
    """What a user's own loop saves: MaskablePPO on gym.make("FiveThousand-v0"), 64
    steps, nothing of this project's attached."""
    import gymnasium as gym
    from sb3_contrib import MaskablePPO

    import fivethousand_rl.envs  # noqa: F401  (registers FiveThousand-v0)

    env = gym.make("FiveThousand-v0", **env_options)
    policy = "MultiInputPolicy" if env_options.get("dict_obs") else "MlpPolicy"
    model = MaskablePPO(
        policy, env, n_steps=64, batch_size=32, n_epochs=1, seed=0, policy_kwargs={"net_arch": [8]}
    )
    model.learn(64)
    model.save(path)
    return path


MODELS = {
    "compact 2p": ({}, ObsSpec("compact", 2, Rules())),
    "compact 4p": ({"n_players": 4}, ObsSpec("compact", 4, Rules())),
    "rich 2p": ({"obs_encoding": "rich"}, ObsSpec("rich", 2, Rules())),
    "dict_obs 2p": ({"dict_obs": True}, ObsSpec("compact", 2, Rules())),
}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("user")
    return {
        case: train_plain(folder / f"{case.replace(' ', '_')}.zip", **options)
        for case, (options, _) in MODELS.items()
    }


@pytest.mark.parametrize("case", MODELS)
def test_a_plain_model_is_known_by_its_observation_space(models, case, monkeypatch):
    """No spec saved: the encoding and the player count are read from the observation
    space in SB3's JSON (never its pickle), the default rules assumed; the model then
    plays a legal move (a dict_obs model fed its dict)."""
    path = models[case]
    assert "obs_spec" not in read_settings(path)

    def no_unpickling(*args, **kwargs):
        raise AssertionError("unpickled")

    import cloudpickle  # SB3's pickle of the space

    monkeypatch.setattr(pickle, "loads", no_unpickling)
    monkeypatch.setattr(cloudpickle, "loads", no_unpickling)
    assert read_obs_spec(path) == MODELS[case][1]
    monkeypatch.undo()
    policy = make_policy(str(path))
    assert isinstance(policy, SB3Policy) and policy.spec == MODELS[case][1]
    assert policy.dict_obs == (case == "dict_obs 2p")
    game = Game(policy.spec.n_players, seed=0)
    game.roll([1, 5, 5, 2, 3])
    assert policy.act(game, np.random.default_rng(0)) in game.legal_actions()


def with_space(tmp_path, source, **fields):
    """A copy of `source` whose saved observation space has `fields` instead."""
    path = tmp_path / "other.zip"
    path.write_bytes(source.read_bytes())
    settings = read_settings(path)
    settings["observation_space"] = {**settings["observation_space"], **fields}
    write_settings(path, settings)
    return path


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"_shape": [51]}, id="size 51: no player count"),
        pytest.param({"high": "[9. 9. 9. ... 9. 9. 9.]"}, id="other bounds"),
        pytest.param({":type:": "<class 'gymnasium.spaces.discrete.Discrete'>"}, id="Discrete"),
    ],
)
def test_a_model_of_another_observation_is_refused_in_one_line(models, tmp_path, fields):
    path = with_space(tmp_path, models["compact 2p"], **fields)
    with pytest.raises(CheckpointError) as err:
        make_policy(str(path))
    message = str(err.value)
    assert "\n" not in message and str(path) in message
    assert "no FiveThousand-v0 observation" in message and "migrate_checkpoint(" in message


def test_rules_are_assumed_and_a_game_of_others_says_so(models):
    """The rules do not show in an observation space (R12's options change no compact
    size): the default rules are assumed, and another game's refusal says so and names
    the fix; a spec saved with migrate_checkpoint is then the model's."""
    policy = make_policy(str(models["compact 2p"]))
    policy.check_game(2, Rules())
    with pytest.raises(CheckpointError) as err:
        policy.check_game(2, SMALL)
    assert "the default rules were assumed" in str(err.value) and "\n" not in str(err.value)
    assert "migrate_checkpoint" in str(err.value)


def test_a_rich_model_of_other_rules_is_refused(tmp_path):
    """The rich observation's size grows with the score grid (V5): trained under target
    1000, no player count matches it under the default rules, so it is refused, naming
    migrate_checkpoint; given its spec that way, it plays its own game."""
    from fivethousand_rl.agents.neural import migrate_checkpoint

    path = train_plain(tmp_path / "rich1000.zip", obs_encoding="rich", target=1000)
    with pytest.raises(CheckpointError, match="no FiveThousand-v0 observation under the default"):
        make_policy(str(path))
    assert migrate_checkpoint(path, ObsSpec("rich", 2, Rules(target=1000)))
    make_policy(str(path)).check_game(2, Rules(target=1000))


def test_evaluate_play_and_export_take_a_plain_model_by_path(models, tmp_path, capsys):
    from fivethousand_rl import evaluate, export, play

    path = str(models["compact 2p"])
    assert evaluate.main([path, "random", "--games", "4", "--json", str(tmp_path / "e.json")]) == 0
    assert json.loads((tmp_path / "e.json").read_text())["games"] == 4
    four = str(models["compact 4p"])
    assert (
        evaluate.main([four, "smart", "random", "turn-ev", "--players", "4", "--games", "4"]) == 0
    )
    answers = iter(["b", "r"] * 2000)  # bank when allowed, else roll on
    assert play.main(["--opponents", path, "--seed", "1"], ask=lambda _: next(answers)) == 0
    assert export.main([path, "-o", str(tmp_path / "bot.onnx")]) == 0
    exported = make_policy(str(tmp_path / "bot.onnx"))
    assert exported.spec == ObsSpec("compact", 2, Rules())
    assert export.main([str(models["dict_obs 2p"]), "-o", str(tmp_path / "d.onnx")]) == 2
    assert "reads dict observations" in capsys.readouterr().err


def test_the_best_response_takes_a_plain_model_by_path(models, monkeypatch, capsys):
    """The command takes the file (its cache key is the file's digest); the model is
    asked for its turns by the exact machinery (here from a few turn starts: the whole
    game takes minutes, the time the docs give); a game of other rules is refused."""
    path = str(models["compact 2p"])
    assert bot_key(path).startswith(f"{models['compact 2p'].name}@")
    seen = []

    def few_turns(policies, names, rules, show, workers):
        starts = ScoreSpace(rules, 2).positions()[::500]
        ends = turn_ends(policies[0], starts, rules)
        assert ends.probs.sum() + ends.wins.sum() == pytest.approx(len(starts))
        seen.append(names)
        return BestResponse(rules, names, np.full((2, ScoreSpace(rules, 2).size, 2), 0.5))

    monkeypatch.setattr(br_core, "_compute", few_turns)
    assert br_cli.main([path, "--json"]) == 0
    assert seen == [(path,)] and json.loads(capsys.readouterr().out)["exploitability"] == 0
    assert br_cli.main([path, "--target", "1000"]) == 2
    assert "the default rules were assumed" in capsys.readouterr().err


# ------------------------------------------------------------------ plain Python bots
class PlainThreshold(Policy):
    """A bot as a user writes it, with `act` only: hold the best reading of the roll
    (R2), bank from `threshold` when allowed (R8), or whenever banking wins (R9). The
    package's threshold:T, written again."""

    name = "mine"

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold
        self.asked = 0

    def act(self, game: Game, rng: np.random.Generator) -> int:
        self.asked += 1
        s = game.state
        best = ROLL_INFO[s.roll].best
        total = s.turn_total + best.points
        banked = s.scores[s.current]
        if can_bank(banked, total, game.rules) and (
            total >= self.threshold or banked + total == game.rules.target
        ):
            return best.bits | BANK_BIT
        return best.bits


def test_a_plain_policy_is_measured_exactly():
    """With `act` only, a policy's turns end exactly where its batched twin's do (every
    decision asked of one game whose state is rewritten), and it is never asked where
    one action is legal; its exploitability is the package bot's."""
    positions = ScoreSpace(SMALL, 2).positions()
    plain = PlainThreshold(300)
    mine, theirs = (
        turn_ends(plain, positions, SMALL),
        turn_ends(make_policy("threshold:300"), positions, SMALL),
    )
    assert np.array_equal(mine.offsets, theirs.offsets)
    assert np.array_equal(mine.positions, theirs.positions)
    assert mine.probs == pytest.approx(theirs.probs, abs=1e-15)
    assert mine.wins == pytest.approx(theirs.wins, abs=1e-15)

    class Counting(PlainThreshold):
        def act(self, game, rng):
            assert len(game.legal_actions()) > 1  # a forced decision is not asked
            return super().act(game, rng)

    turn_ends(Counting(300), positions[:40], SMALL)
    expected = exploitability("threshold:300", SMALL, show_progress=False)
    assert exploitability(PlainThreshold(300), SMALL, show_progress=False) == pytest.approx(
        expected, abs=1e-12
    )


def test_the_progress_moves_while_a_plain_policys_turns_are_followed():
    """A policy that decides one game at a time is followed a few turn starts at a
    time, so the progress bar of the turn ends moves all along."""
    calls = []
    starts = ScoreSpace(SMALL, 2).positions()
    turn_ends(PlainThreshold(300), starts, SMALL, progress=calls.append)
    assert sum(calls) == len(starts) and len(calls) >= len(starts) // 32


def test_one_name_two_bots_two_results(monkeypatch):
    """The issue's case: one name, thresholds 300 then 600, each gets its own exact
    exploitability (the package bot's): a Policy object, like a name made by the
    caller's make_policy, is computed every time, never read from a cache."""
    expected = {t: exploitability(f"threshold:{t}", SMALL, show_progress=False) for t in (300, 600)}
    assert expected[300] != pytest.approx(expected[600], abs=1e-3)
    for t in (300, 600, 300):
        got = exploitability(PlainThreshold(t), SMALL, show_progress=False)
        assert got == pytest.approx(expected[t], abs=1e-12)
    computed, compute = [], br_core._compute
    monkeypatch.setattr(br_core, "_compute", lambda *a: computed.append(a) or compute(*a))
    for t in (600, 300):  # computed again, each its own
        got = exploitability(PlainThreshold(t), SMALL, show_progress=False)
        assert got == pytest.approx(expected[t], abs=1e-12)
    assert len(computed) == 2
    monkeypatch.undo()
    bots = {"mine": PlainThreshold(300)}
    first = best_response(("mine",), SMALL, bots.__getitem__, show_progress=False)
    bots["mine"] = PlainThreshold(600)
    second = best_response(("mine",), SMALL, bots.__getitem__, show_progress=False)
    got = [summary(br)["exploitability"] for br in (first, second)]
    assert got == pytest.approx([expected[300], expected[600]], abs=1e-12)
    assert first.bots == second.bots == ("mine",)


def test_policies_are_known_exactly_or_not_cached():
    """Keys: a model by its file, the package's bots by their names; a user's own
    Policy object has none: it is never cached (tests/test_best_response_cache.py)."""
    assert bot_key("optimal") == "optimal"
    assert bot_key("ppo-2p").startswith("ppo-2p@")
    assert bot_key("threshold:300") == "threshold:300" != bot_key("threshold:350")
    assert bot_key(PlainThreshold(300)) is None


def test_a_policy_that_draws_is_refused_in_one_line():
    """A policy whose choices change with the generator has no exact turn ends: refused,
    not cached; one that says its action probabilities is followed on every branch."""

    class Coin(Policy):
        name = "coin"

        def act(self, game, rng):
            return game.legal_actions()[int(rng.integers(len(game.legal_actions())))]

    with pytest.raises(NotDeterministicError) as err:
        exploitability(Coin(), SMALL, show_progress=False)
    assert "coin is not deterministic" in str(err.value) and "\n" not in str(err.value)
    assert br_cli.main(["random", "--target", "1000", "--entry", "300", "--json"]) == 0


# ------------------------------------------------------------------ batch functions
def first_legal(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """A batch function: the lowest legal action of each row."""
    return mask.argmax(axis=1)


class FirstLegal(Policy):
    """The same, one game at a time."""

    name = "first-legal"

    def act(self, game, rng):
        return game.legal_actions()[0]


def test_a_batch_function_is_an_agent_by_one_call():
    """from_function: act and act_batch agree with the same bot written with act; its
    exploitability is exact (the plain bot's); a torch tensor is a fine answer."""
    import torch

    agent = from_function(first_legal, name="first", n_players=2, rules=SMALL)
    assert isinstance(agent, FunctionAgent) and isinstance(agent, Policy)
    game = Game(2, SMALL, seed=0)
    game.roll([1, 5, 5, 2, 3])
    assert agent.act(game, np.random.default_rng(0)) == game.legal_actions()[0]
    expected = exploitability(FirstLegal(), SMALL, show_progress=False)
    assert exploitability(agent, SMALL, show_progress=False) == pytest.approx(expected, abs=1e-12)
    as_torch = from_function(
        lambda obs, mask: torch.as_tensor(mask).int().argmax(dim=1), rules=SMALL
    )
    assert exploitability(as_torch, SMALL, show_progress=False) == pytest.approx(
        expected, abs=1e-12
    )


def test_a_batch_function_sees_the_environments_observations():
    """The rows fn gets are what FiveThousand-v0 shows the player to move, and the
    masks its action_masks()."""
    import gymnasium as gym

    import fivethousand_rl.envs  # noqa: F401

    env = gym.make("FiveThousand-v0", obs_encoding="rich")
    obs, _ = env.reset(seed=3)
    seen = []
    agent = from_function(lambda o, m: seen.append((o, m)) or m.argmax(axis=1), obs_encoding="rich")
    agent.act(env.unwrapped.game, np.random.default_rng(0))
    ((rows, masks),) = seen
    assert rows.dtype == np.float32 and rows.shape == (1, *obs.shape)
    assert rows[0].tobytes() == obs.tobytes()
    assert np.array_equal(masks[0], env.unwrapped.action_masks())


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: from_function(first_legal).check_game(3, Rules()), "plays 2-player games"),
        (
            lambda: from_function(first_legal).check_game(2, SMALL),
            "under Rules(hold='free', target=5000",
        ),
        (lambda: from_function("not a function"), "needs a function of (obs, mask)"),
        (lambda: from_function(first_legal, obs_encoding="pixels"), "unknown observation encoding"),
        (lambda: from_function(first_legal, n_players=9), "n_players must be 2..8"),
    ],
)
def test_bad_agents_and_games_are_refused_in_one_line(make, message):
    with pytest.raises(ValueError) as err:
        make()
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_batch_function_must_answer_one_integer_per_row():
    game = Game(2, seed=0)
    game.roll([1, 5, 5, 2, 3])
    for wrong in (lambda o, m: m.argmax(axis=1)[:, None], lambda o, m: m.argmax(axis=1) * 1.0):
        with pytest.raises(ValueError, match="expected one integer action per row"):
            from_function(wrong).act(game, np.random.default_rng(0))


# ------------------------------------------------------------------ by name: module:function
OWN_AGENT = '''
"""An agent of one's own, named where a bot is taken as FILE.py:make or MODULE:make."""
from fivethousand_rl.agents import from_function
from fivethousand_rl.envs.rules import Rules


def bank_first(obs, mask):
    return 63 - mask[:, ::-1].argmax(axis=1)  # each row's highest legal action


def make():
    return from_function(bank_first, name="bank-first", rules=Rules(target=1000, entry=300))


def not_a_policy():
    return "bank-first"


NAME = "bank-first"
'''
SMALL_FLAGS = ["--target", "1000", "--entry", "300"]


def bank_first(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """OWN_AGENT's function, here."""
    return 63 - mask[:, ::-1].argmax(axis=1)


@pytest.fixture
def own_agent(tmp_path, monkeypatch):
    """The folder holding own_agent_53.py (OWN_AGENT), the current one; what loading it
    puts on sys.path and in sys.modules is gone after the test."""
    (tmp_path / "own_agent_53.py").write_text(OWN_AGENT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if Path(getattr(sys.modules[name], "__file__", None) or "/").is_relative_to(tmp_path):
            del sys.modules[name]


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("my_agent:make", ("my_agent", "make")),
        ("pkg.agents:factory.make", ("pkg.agents", "factory.make")),
        ("path/to/my_agent.py:make", ("path/to/my_agent.py", "make")),
        (" my-folder/agent.py:make ", ("my-folder/agent.py", "make")),
        ("threshold:350", None),
        ("expectimax:3", None),
        ("best-response:smart", None),
        ("best-response:smart,turn-ev", None),
        ("smart", None),
        ("checkpoints/ppo-2p/model.zip", None),
        ("my_agent:", None),
        (":make", None),
    ],
)
def test_code_specs_are_told_apart_from_bot_names(spec, parsed):
    """Issue 53 item 7: uvicorn's module:app form; the package's own names with a colon
    are not code."""
    from fivethousand_rl.agents import opens_file_or_code
    from fivethousand_rl.envs.policy import code_spec

    assert code_spec(spec) == parsed
    assert opens_file_or_code(spec) == (parsed is not None or spec.endswith(".zip"))


def test_your_own_agent_by_name_plays_in_evaluate_and_play(own_agent, capsys):
    """Issue 53 item 7: FILE.py:make and MODULE:make (from the current folder) are
    agents in a tournament, shown by the policy's name; the same function seated twice
    is two agents, told apart by their specs; and it plays you in the terminal game."""
    from fivethousand_rl import evaluate, play

    by_file = str(own_agent / "own_agent_53.py") + ":make"
    out = own_agent / "e.json"
    args = [by_file, "smart", "--games", "6", "--json", str(out), *SMALL_FLAGS]
    assert evaluate.main(args) == 0
    agents = {a["agent"]: (a["spec"], a["games"]) for a in json.loads(out.read_text())["agents"]}
    assert agents == {"bank-first": (by_file, 6), "smart": ("smart", 6)}
    args = ["own_agent_53:make", "own_agent_53.py:make", "--games", "4", "--json", str(out)]
    assert evaluate.main([*args, *SMALL_FLAGS]) == 0
    agents = [a["agent"] for a in json.loads(out.read_text())["agents"]]
    assert sorted(agents) == ["own_agent_53.py:make", "own_agent_53:make"]
    answers = iter(["b", "r"] * 2000)  # bank when allowed, else roll on
    play_args = ["--opponents", "own_agent_53:make", "--seed", "1", *SMALL_FLAGS]
    assert play.main(play_args, ask=lambda _: next(answers)) == 0
    assert "bank-first" in capsys.readouterr().out


def test_your_own_agent_by_name_gets_its_exact_exploitability(own_agent, capsys):
    """Issue 53 item 7: the best-response command takes FILE.py:make; its number is the
    one the same function gets as a Python object (from_function)."""
    assert br_cli.main(["own_agent_53.py:make", *SMALL_FLAGS, "--json"]) == 0
    numbers = json.loads(capsys.readouterr().out)
    agent = from_function(bank_first, name="mine", rules=SMALL)
    expected = exploitability(agent, SMALL, show_progress=False)
    assert numbers["bots"] == ["own_agent_53.py:make"]
    assert numbers["exploitability"] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_such_module_53:make", "cannot import no_such_module_53: No module named"),
        ("own_agent_53:missing", "own_agent_53 has no 'missing'"),
        ("own_agent_53:not_a_policy", "own_agent_53:not_a_policy() returned str, not a Policy"),
        ("own_agent_53:NAME", "own_agent_53:NAME is a str, not a function"),
        ("no/such/agent.py:make", "no Python file no/such/agent.py"),
    ],
)
def test_a_bad_agent_by_name_is_refused_in_one_line(own_agent, capsys, spec, message):
    from fivethousand_rl import evaluate

    assert evaluate.main([spec, "smart", "--games", "2", *SMALL_FLAGS]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_the_pages_torch_agent_plays_by_name(own_agent):
    """docs/getting-started/own-agent.md's my_agent.py, beside cleanrl_ppo.py and a
    network it saved (untrained here), plays a tournament as my_agent.py:make."""
    import re
    import shutil

    from fivethousand_rl import evaluate

    page = (ROOT / "docs" / "getting-started" / "own-agent.md").read_text()
    (code,) = re.findall(r"```python\n(# my_agent\.py\n.*?)```", page, re.S)
    (own_agent / "my_agent.py").write_text(code)
    shutil.copy(ROOT / "examples" / "cleanrl_ppo.py", own_agent)
    sys.path.insert(0, str(own_agent))
    cleanrl = importlib.import_module("cleanrl_ppo")
    cleanrl.save(cleanrl.Agent(47, 8), cleanrl.Config(), str(own_agent / "model.pt"))
    out = own_agent / "e.json"
    assert evaluate.main(["my_agent.py:make", "smart", "--games", "2", "--json", str(out)]) == 0
    assert sorted(a["agent"] for a in json.loads(out.read_text())["agents"]) == ["my-ppo", "smart"]


def test_an_exported_bundle_is_named_as_its_folder(tmp_path, capsys):
    """Issue 53 item 8: a bundle's model.onnx (checkpoints/NAME/model.onnx, export.py
    --out NAME) is NAME in tournaments' tables and on the web page, not "model"."""
    import shutil

    from fivethousand_rl import evaluate
    from fivethousand_rl.agents.shipped import shipped_folder
    from fivethousand_rl.webplay.bots import Catalogue

    for folder in ("bots/my-bundle", "checkpoints/their-bot", "elsewhere/policy-copy"):
        (tmp_path / folder).mkdir(parents=True)
        for name in ("model.onnx", "model.json"):
            shutil.copy(shipped_folder("policy-2p") / name, tmp_path / folder / name)
    path = str(tmp_path / "elsewhere/policy-copy/model.onnx")
    assert make_policy(path).name == "policy-copy"
    out = tmp_path / "e.json"
    assert evaluate.main([path, "smart", "--games", "2", "--json", str(out)]) == 0
    assert sorted(a["agent"] for a in json.loads(out.read_text())["agents"]) == [
        "policy-copy",
        "smart",
    ]
    catalogue = Catalogue(tmp_path)
    for key in ("my-bundle", "their-bot"):
        assert catalogue.bots[key].kind == "exported" and catalogue.policy(key).name == key
    assert "model.onnx" not in catalogue


EVIL = """
from pathlib import Path

Path("imported.txt").write_text("a save ran this")


def make():
    from fivethousand_rl.agents import make_policy

    return make_policy("smart")
"""


def test_a_save_naming_code_never_imports_it_by_itself(own_agent, capsys):
    """Issue 53 item 7: importing code runs it, so a saved game whose bot seat is
    FILE.py:make is refused in one line, the module never imported, unless the user
    names that code again (--opponents), as for a model file (issue 28 item 1)."""
    from fivethousand_rl import play

    (own_agent / "evil_53.py").write_text(EVIL)
    save = own_agent / "game.json"
    answers = iter([f"save {save}", "quit", "n"])
    play.main(["--opponents", "smart", "--seed", "1"], ask=lambda _: next(answers))
    data = json.loads(save.read_text())
    data["players"][1] = "evil_53.py:make"
    save.write_text(json.dumps(data))
    capsys.readouterr()
    assert play.main(["--load", str(save)], ask=lambda _: "quit") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "evil_53.py:make" in err and "--opponents" in err, err
    assert not (own_agent / "imported.txt").exists() and "evil_53" not in sys.modules
    flags = ["--load", str(save), "--opponents", "evil_53.py:make"]  # named by the user: played
    assert play.main(flags, ask=lambda _: "quit") == 0
    assert (own_agent / "imported.txt").exists()


def test_a_sweep_checks_your_own_agent_by_name_before_any_trial(own_agent, capsys):
    """Issue 53 item 7: a sweep's opponents take MODULE:FUNCTION too, made (imported and
    called) when the sweep is checked, before Ray starts or anything is written."""
    from fivethousand_rl import sweep

    grid = "opponents=[[own_agent_53:not_a_policy], [smart]]"
    assert sweep.main(["--grid", grid, "--checkpoints", str(own_agent / "runs")]) == 2
    err = capsys.readouterr().err
    assert "own_agent_53:not_a_policy() returned str, not a Policy" in err and err.count("\n") == 1
    assert not (own_agent / "runs").exists()


def test_the_best_response_to_a_model_file_is_made_by_name():
    """`best-response:PATH` names a table of one model file: the best response to it,
    not the file itself (a spec ending in .onnx or .zip was opened as a model)."""
    model = ROOT / "checkpoints" / "ppo-2p" / "model.onnx"
    bot = make_policy(f"best-response:{model}")
    assert type(bot).__name__ == "BestResponseBot" and bot.name == f"best-response:{model}"
