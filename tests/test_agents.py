"""Bots and the policy interface."""

import numpy as np
import pytest

from agents import BOT_NAMES, Policy, RandomBot, ThresholdBot, make_policy
from envs.game import ROLL, Game
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
    for seed in range(5):
        g = Game(n_players, Rules(hold=hold), seed=seed)
        while not g.over:
            assert g.state.turns < 5000
            if g.state.phase == ROLL:
                g.roll()
            else:
                action = bots[g.state.current % 3].act(g, rng)
                assert action in g.legal_actions()
                g.act(action)
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
    for n_players in (2, 4, 8):
        g = Game(n_players, Rules(hold=hold), seed=n_players)
        while not g.over:
            assert g.state.turns < 1000
            if g.state.phase == ROLL:
                g.roll()
            else:
                action = bot.act(g, rng)
                assert action in g.legal_actions()
                g.act(action)
