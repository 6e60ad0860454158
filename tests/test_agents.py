"""Bots and the policy interface."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agents import BOT_NAMES, Policy, RandomBot, ThresholdBot, make_policy
from envs import driver
from envs.game import Game
from envs.rules import BANK_BIT, Rules, action_for
from tests.helpers import game_at, play


@pytest.mark.parametrize(
    ("spec", "name"),
    [("random", "random"), ("threshold:350", "threshold:350"), (" threshold:0", "threshold:0")],
)
def test_bots_by_name(spec, name):
    policy = make_policy(spec)
    assert isinstance(policy, Policy) and policy.name == name


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("grandmaster", "unknown bot 'grandmaster'; accepted: random, threshold:T"),
        ("threshold", "threshold needs a whole number"),
        ("threshold:-5", "threshold needs a whole number"),
        ("threshold:abc", "threshold needs a whole number"),
        ("threshold:²", "threshold needs a whole number"),
        ("random:3", "unknown bot"),
        (42, "expected a bot name"),
    ],
)
def test_bad_bot_names_are_one_clear_line(spec, message):
    with pytest.raises(ValueError, match=message) as err:
        make_policy(spec)
    assert "\n" not in str(err.value)
    assert f"accepted: {', '.join(BOT_NAMES)}" in str(err.value)


def test_policy_objects_pass_through():
    bot = ThresholdBot(300)
    assert make_policy(bot) is bot


@pytest.mark.parametrize(
    ("scores", "turn", "threshold", "expected", "why"),
    [
        (
            [1000, 0],
            [([1, 1, 1, 2, 3], None)],
            350,
            ([1, 1, 1], True),
            "holds the best set, banks >= T",
        ),
        ([1000, 0], [([1, 2, 3, 4, 6], None)], 350, ([1], False), "rolls on under T"),
        ([0, 0], [([5, 5, 5, 2, 3], None)], 350, ([5, 5, 5], True), "enters with 500"),
        (
            [0, 0],
            [([4, 4, 4, 2, 3], None)],
            350,
            ([4, 4, 4], False),
            "can't bank 400 unentered (R8)",
        ),
        ([1000, 0], [([1, 5, 5, 2, 3], None)], 100, ([1, 5, 5], True), "banks 200 with T=100"),
        ([1000, 0], [([1, 5, 2, 3, 3], None)], 100, ([1, 5], False), "150 ends in 50 (R8)"),
        ([4900, 0], [([1, 2, 3, 4, 6], None)], 350, ([1], True), "takes an exact 5000 (R9)"),
        ([4800, 0], [([1, 2, 3, 4, 6], None)], 350, ([1], False), "4900 is not a win: rolls"),
    ],
)
def test_threshold_bot(scores, turn, threshold, expected, why):
    g = game_at(scores)
    roll = turn[0][0]
    g.roll(roll)
    held, bank = expected
    assert ThresholdBot(threshold).act(g, np.random.default_rng(0)) == action_for(
        held, roll, bank
    ), why


def test_random_bot_plays_every_legal_action_and_only_those():
    g = game_at([1000, 0])
    g.roll([1, 1, 5, 2, 3])
    legal = set(g.legal_actions())
    rng = np.random.default_rng(0)
    picks = {RandomBot().act(g, rng) for _ in range(500)}
    assert picks == legal


@pytest.mark.parametrize("hold", ["free", "all"])
@pytest.mark.parametrize("n_players", [2, 5, 8])
def test_bot_games_finish(hold, n_players):
    bots = [make_policy("threshold:350"), make_policy("random"), make_policy("threshold:500")]
    rng = np.random.default_rng(n_players)
    seats = [bots[seat % 3] for seat in range(n_players)]
    for seed in range(5):  # an illegal action would raise IllegalMoveError
        g = driver.play(Game(n_players, Rules(hold=hold), seed=seed), seats, rng, max_turns=5000)
        assert g.over
        assert g.state.scores[g.state.winner] == 5000


def test_threshold_bot_banks_when_hot_dice_reach_threshold_r6():
    g = game_at([1000, 0])
    play(g, [1, 1, 1, 2, 3], [1, 1, 1], bank=False)
    g.roll([5, 5])
    action = ThresholdBot(350).act(g, np.random.default_rng(0))
    assert action == action_for([5, 5], [5, 5], bank=True)
    assert action & BANK_BIT


# Rows: (scores, seat to move, turn so far, roll, the action expected, why).
SMART_ROWS = [
    ([4800, 3000], [], [1, 1, 2, 3, 4], ([1, 1], True), "R9 takes the exact 5000"),
    (
        [4700, 3000],
        [([1, 2, 3, 4, 6], [1])],
        [1, 1, 3, 4],
        ([1, 1], True),
        "exact win after a roll",
    ),
    ([1200, 1500], [([1, 2, 3, 4, 6], [1])], [1, 1, 3, 4], ([1, 1], True), "R9 bumps 1500 to 0"),
    ([4700, 2000], [], [1, 1, 1, 2, 3], ([1, 1], True), "biggest bank short of overshooting"),
    (
        [4500, 4800],
        [([6, 6, 6, 2, 3], [6, 6, 6])],
        [1, 5],
        ([1], True),
        "gift would be lost: banks",
    ),
    ([4500, 2000], [([6, 6, 6, 2, 3], [6, 6, 6])], [1, 5], ([1], False), "no gift: rolls on 1 die"),
    ([4400, 1000], [], [1, 1, 5, 2, 3], ([1, 1], True), "endgame: banks safe progress"),
]


@pytest.mark.parametrize(("scores", "turn", "roll", "expected", "why"), SMART_ROWS)
def test_smart_bot_knows_the_endgame(scores, turn, roll, expected, why):
    g = game_at(scores)
    for r, held in turn:
        play(g, r, held, bank=False)
    g.roll(roll)
    held, bank = expected
    assert make_policy("smart").act(g, np.random.default_rng(0)) == action_for(held, roll, bank), (
        why
    )


def test_turn_ev_bot_takes_the_points_maximizing_choice():
    # Entered: 1150 can't be banked (R8) and rolling on risks it all: bank the 1100.
    g = game_at([1000, 0])
    g.roll([1, 1, 1, 5, 3])
    action = make_policy("turn-ev").act(g, np.random.default_rng(0))
    assert action == action_for([1, 1, 1], [1, 1, 1, 5, 3], bank=True)
    # Not entered with 300 in hand and 4 dice: it must roll; it keeps one ace.
    g = game_at([0, 0])
    g.roll([1, 2, 3, 4, 6])
    assert make_policy("turn-ev").act(g, np.random.default_rng(0)) == action_for(
        [1], [1, 2, 3, 4, 6], False
    )


@pytest.mark.parametrize("name", ["smart", "turn-ev"])
@pytest.mark.parametrize("hold", ["free", "all"])
def test_heuristic_bots_play_legally_in_big_games(name, hold):
    bot = make_policy(name)
    rng = np.random.default_rng(0)
    for n_players in (2, 4, 8):  # an illegal action would raise IllegalMoveError
        g = driver.play(Game(n_players, Rules(hold=hold), seed=n_players), [bot] * n_players, rng)
        assert g.over


# ------------------------------------------------------------------ issue 9 item 2
ROOT = Path(__file__).resolve().parent.parent
SHIPPED_2P = ROOT / "checkpoints" / "ppo-2p" / "model.zip"
SNAPSHOT_2P = ROOT / "checkpoints" / "ppo_2p_free_seed1" / "snapshots" / "step7753728.npz"
FREE_2P = {"players": 2, "hold": "free", "seed": 1}
ALL_2P = {"players": 2, "hold": "all"}
REFUSED = "was trained for 2-player games with hold rule"


def place(tmp_path, source, model, config_at=None, config=None):
    """A model file at tmp_path/model (linked to `source`), with a config.json."""
    path = tmp_path / model
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(source)
    if config_at is not None:
        text = config if isinstance(config, str) else json.dumps(config)
        (tmp_path / config_at).write_text(text)
    return path


def play_a_decision(policy, n_players, hold):
    game = Game(n_players, Rules(hold=hold), seed=0)
    game.roll([1, 1, 5, 2, 3])
    return policy.act(game, np.random.default_rng(0)), game


# Rows: (model file, where config.json is, its content, players, hold, refusal or None).
LAYOUTS = [
    ("ppo-2p/model.zip", "ppo-2p/config.json", FREE_2P, 2, "free", None),
    ("ppo-2p/model.zip", "ppo-2p/config.json", FREE_2P, 2, "all", f"{REFUSED} 'free'"),
    ("ppo-2p/model.zip", "ppo-2p/config.json", FREE_2P, 3, "free", "this game has 3 players"),
    ("run/best/model.zip", "run/config.json", FREE_2P, 2, "all", f"{REFUSED} 'free'"),
    ("run/latest/model.zip", "run/config.json", ALL_2P, 2, "free", f"{REFUSED} 'all'"),
    ("run/latest/model.zip", "run/config.json", ALL_2P, 2, "all", None),
    ("agent.zip", None, None, 2, "all", None),  # no config: as before, size check only
    ("run/snapshots/s.npz", "run/config.json", FREE_2P, 2, "all", f"{REFUSED} 'free'"),
    ("run/snapshots/s.npz", "run/config.json", FREE_2P, 2, "free", None),
    ("snapshots/s.npz", None, None, 2, "all", None),
]


@pytest.mark.parametrize(("model", "config_at", "config", "players", "hold", "refusal"), LAYOUTS)
def test_trained_models_play_only_the_game_of_their_config(
    tmp_path, model, config_at, config, players, hold, refusal
):
    source = SNAPSHOT_2P if model.endswith(".npz") else SHIPPED_2P
    policy = make_policy(str(place(tmp_path, source, model, config_at, config)))
    if refusal is None:
        policy.check_game(players, Rules(hold=hold))
        action, game = play_a_decision(policy, players, hold)
        assert action in game.legal_actions()
        return
    with pytest.raises(ValueError, match=refusal) as err:
        policy.check_game(players, Rules(hold=hold))
    assert "\n" not in str(err.value) and "config.json" in str(err.value)
    with pytest.raises(ValueError, match=refusal):  # seated without asking: refused too
        play_a_decision(policy, players, hold)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("{not json", "is unreadable"),
        ("[2, 3]", r"names no valid players \(2\.\.8\) and hold rule"),
        (json.dumps({"players": 2, "hold": "sometimes"}), "names no valid players"),
        (json.dumps({"players": "2", "hold": "free"}), "names no valid players"),
        (json.dumps({"players": 2, "hold": "free", "target": 4950}), "multiple of 100"),
    ],
)
def test_a_bad_run_config_is_one_clear_line(tmp_path, config, message):
    path = place(tmp_path, SNAPSHOT_2P, "run/snapshots/s.npz", "run/config.json", config)
    with pytest.raises(ValueError, match=message) as err:
        make_policy(str(path))
    assert "\n" not in str(err.value) and "run/config.json" in str(err.value)


SHIPPED = "checkpoints/ppo-2p/model.zip"
SHIPPED_REFUSES = (
    f"{SHIPPED} was trained for 2-player games with hold rule 'free' "
    "(checkpoints/ppo-2p/config.json); this game has"
)


@pytest.mark.parametrize(
    "args",
    [
        [SHIPPED, "smart", "--hold", "all", "--games", "2"],
        [SHIPPED, "smart", "random", "--players", "3", "--games", "3"],
    ],
)
def test_evaluate_refuses_the_shipped_agent_in_another_game(args, capsys, monkeypatch):
    import evaluate

    monkeypatch.chdir(ROOT)
    assert evaluate.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and SHIPPED_REFUSES in err, err


def test_play_refuses_the_shipped_agent_under_another_hold_rule():
    result = subprocess.run(
        [sys.executable, "play.py", "--opponents", SHIPPED, "--hold", "all"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        input="",
        timeout=120,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    err = result.stderr.strip()
    assert len(err.splitlines()) == 1 and SHIPPED_REFUSES in err, err


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("checkpoints/ppo-2p/model.zip", "ppo-2p"),
        ("checkpoints/demo_quick/best/model.zip", "demo_quick"),
        ("checkpoints/demo_quick/latest/model.zip", "demo_quick"),
        ("checkpoints/demo_quick/snapshots/step512.npz", "demo_quick@step512"),
        ("bots/ppo-2p.onnx", "ppo-2p"),
        ("agent.zip", "agent"),
    ],
)
def test_model_files_have_short_names(path, name):
    """Issue 9 item 11: tables show a shipped agent by its name, a run's models by the
    run's name, other files by their stem."""
    from agents.neural import short_name

    assert short_name(path) == name
