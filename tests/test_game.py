"""The game state machine: RULES.md R1 and R4-R12, with injected dice."""

import copy
import json
import math
import pickle
import re
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fivethousand_rl.envs import driver
from fivethousand_rl.envs.game import (
    DECIDE,
    OVER,
    ROLL,
    Game,
    IllegalMoveError,
    Move,
    Moved,
    bank_outcome,
    chance_index,
    format_dice,
)
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.render import bank_text, event_text, lost_reason
from fivethousand_rl.envs.rules import (
    BANK_BIT,
    ROLL_BY_CODE,
    Rules,
    action_for,
    is_bust,
    roll_probabilities,
)
from tests.helpers import bank_total, game_at, play


def _copy(game):
    return Game.from_json(game.to_json())


def test_worked_example_r12():
    g = game_at([0, 0])
    g.roll([1, 1, 5, 6, 4])
    s = g.state
    assert g.roll_info().best.points == 250
    # 250 ends in 50 and the player has not entered: no banking action at all (R8).
    assert not any(a & BANK_BIT for a in g.legal_actions())
    g.act(action_for([1, 1, 5], [1, 1, 5, 6, 4], bank=False))
    assert (s.turn_total, s.dice_left, s.phase) == (250, 2, ROLL)
    # [5,5] -> 350, [1,x] -> 350 (a third ace after two held aces adds 100, R1),
    # [1,1] -> 450: none of these may be banked.
    for result, total in [([5, 5], 350), ([1, 3], 350), ([1, 6], 350), ([1, 1], 450)]:
        trial = _copy(g)
        trial.roll(result)
        assert not any(a & BANK_BIT for a in trial.legal_actions()), result
        trial.act(action_for([d for d in result if d in (1, 5)], result, bank=False))
        assert trial.state.turn_total == total


def test_combinations_count_only_within_one_roll_r1():
    g = game_at([0, 0])
    play(g, [1, 1, 2, 3, 4], [1, 1], bank=False)  # 200
    play(g, [1, 6, 6], [1], bank=False)  # the third ace: 100, not 1100
    assert g.state.turn_total == 300
    assert g.state.held == [(1, 1), (1,)]


def test_bust_loses_turn_total_and_passes_the_dice_r4():
    g = game_at([700, 900])
    play(g, [1, 5, 2, 3, 4], [1, 5], bank=False)
    g.roll([2, 3, 6])  # bust
    s = g.state
    assert s.scores == [700, 900]
    assert (s.current, s.turn_total, s.dice_left, s.phase, s.turns) == (1, 0, 5, ROLL, 1)


def test_a_scoring_roll_must_be_held_from_r4():
    g = game_at([700, 900])
    g.roll([1, 2, 3, 4, 6])
    with pytest.raises(IllegalMoveError):
        g.act(0)  # holding nothing
    with pytest.raises(IllegalMoveError):
        g.act(0 | BANK_BIT)


def test_free_hold_may_leave_scoring_dice_r5():
    g = game_at([1000, 0])
    play(g, [1, 5, 5, 2, 3], [1], bank=False)
    assert (g.state.turn_total, g.state.dice_left) == (100, 4)


def test_all_variant_forces_every_scoring_die_r5():
    g = game_at([1000, 0], hold="all")
    roll = [1, 5, 5, 2, 3]
    g.roll(roll)
    all_scoring = action_for([1, 5, 5], roll, bank=False)
    assert g.legal_actions() == [all_scoring, all_scoring | BANK_BIT]
    with pytest.raises(IllegalMoveError):
        g.act(action_for([1], roll, bank=False))
    g.act(all_scoring)
    assert (g.state.turn_total, g.state.dice_left) == (200, 2)


@pytest.mark.parametrize("hold", ["free", "all"])
def test_hot_dice_give_back_five_r6(hold):
    g = game_at([0, 0], hold=hold)
    play(g, [1, 1, 1, 2, 3], [1, 1, 1], bank=False)  # 1100, 2 dice left
    play(g, [1, 5], [1, 5], bank=False)  # all five held: hot dice
    assert (g.state.turn_total, g.state.dice_left) == (1250, 5)
    play(g, [2, 3, 4, 5, 6], [2, 3, 4, 5, 6], bank=False)  # straight, hot dice again
    assert (g.state.turn_total, g.state.dice_left) == (2750, 5)
    play(g, [5, 2, 2, 3, 4], [5], bank=False)  # 2800 ends in 00 but we roll on
    g.roll([1, 2, 3, 4])
    g.act(action_for([1], [1, 2, 3, 4], bank=True))
    assert g.state.scores == [2900, 0]


def test_hot_dice_may_also_bank_r6():
    g = game_at([1000, 0])
    play(g, [1, 1, 5, 5, 5], [1, 1, 5, 5, 5], bank=True)  # 700, all five held
    assert g.state.scores == [1700, 0]


def test_roll_only_the_dice_not_held_r7():
    g = game_at([1000, 0])
    play(g, [1, 5, 2, 3, 4], [1, 5], bank=False)
    with pytest.raises(IllegalMoveError, match="must have 3 dice"):
        g.roll([1, 2, 3, 4, 6])
    assert g.state.phase == ROLL
    info = g.roll()
    assert len(info.dice) == 3 or g.state.current == 1  # rolled 3 dice (or busted)


@pytest.mark.parametrize(
    ("banked", "turn", "bank_allowed", "why"),
    [
        ([0, 0], [([1, 1, 1, 2, 3], [1, 1, 1])], True, "R8 entering with 1100"),
        ([0, 0], [([5, 5, 5, 2, 3], [5, 5, 5])], True, "R8 entering with exactly 500"),
        ([0, 0], [([4, 4, 4, 2, 3], [4, 4, 4])], False, "R8 400 is not enough to enter"),
        ([0, 0], [([5, 5, 5, 1, 5], [5, 5, 5, 5, 1])], True, "R8 four 5s + ace = 1100"),
        ([0, 0], [([5, 5, 5, 5, 3], [5, 5, 5, 5]), ([5], [5])], False, "R8 1050 ends in 50"),
        ([800, 0], [([5, 2, 3, 4, 6], [5])], False, "R8 50 ends in 50"),
        ([800, 0], [([1, 2, 3, 4, 6], [1])], True, "R8 entered: 100 is enough"),
        ([800, 0], [([1, 5, 2, 3, 4], [1, 5])], False, "R8 150 ends in 50"),
    ],
)
def test_banking_rules_r8(banked, turn, bank_allowed, why):
    g = game_at(banked)
    for roll, held in turn[:-1]:
        play(g, roll, held, bank=False)
    roll, held = turn[-1]
    g.roll(roll)
    action = action_for(held, roll, bank=True)
    assert (action in g.legal_actions()) is bank_allowed, why
    if not bank_allowed:
        before = g.state.to_dict()
        with pytest.raises(IllegalMoveError, match="legal:"):
            g.act(action)
        assert g.state.to_dict() == before  # an illegal move changes nothing


def test_bank_adds_to_score_r9():
    g = game_at([1200, 600])
    bank_total(g, [([1, 1, 2, 3, 4], [1, 1])])
    assert g.state.scores == [1400, 600]
    assert (g.state.current, g.state.turns) == (1, 1)


def test_bump_drops_every_other_player_on_the_new_score_r9():
    g = game_at([1200, 1400, 1400, 900])
    bank_total(g, [([1, 1, 2, 3, 4], [1, 1])])  # 1200 + 200 = 1400
    assert g.state.scores == [1400, 0, 0, 900]


def test_bump_hits_nobody_when_scores_differ_r9():
    g = game_at([1200, 1300, 1500])
    bank_total(g, [([1, 1, 2, 3, 4], [1, 1])])
    assert g.state.scores == [1400, 1300, 1500]


def test_bumped_player_must_enter_again_r8_r9():
    g = game_at([1200, 1400])
    bank_total(g, [([1, 1, 2, 3, 4], [1, 1])])
    assert g.state.scores[1] == 0
    g.roll([1, 1, 2, 3, 4])  # player 1: 200 is no longer enough
    assert not any(a & BANK_BIT for a in g.legal_actions())


def test_exact_target_wins_r9():
    g = game_at([4800, 4900])
    bank_total(g, [([1, 1, 2, 3, 4], [1, 1])])
    s = g.state
    assert (s.phase, s.winner, s.scores) == (OVER, 0, [5000, 4900])
    assert g.legal_actions() == []
    with pytest.raises(IllegalMoveError):
        g.roll()


# Gift of 300 (three 3s) banked by `banker`: (scores, banker, roll, expected, winner, why).
GIFT_ROWS = [
    ([4800, 1000, 700], 0, [3, 3, 3, 2, 4], [4800, 1000, 1000], None, "R9 lowest qualified"),
    ([4800, 700, 700], 0, [3, 3, 3, 2, 4], [4800, 1000, 700], None, "R9 tie: first after banker"),
    ([700, 4800, 700], 1, [3, 3, 3, 2, 4], [700, 4800, 1000], None, "R9 tie order wraps"),
    ([4800, 0, 400], 0, [3, 3, 3, 2, 4], [4800, 0, 400], None, "R9 nobody has 500: lost"),
    ([4800, 0, 700], 0, [3, 3, 3, 2, 4], [4800, 0, 1000], None, "R9 0 doesn't qualify"),
    ([4800, 4800], 0, [3, 3, 3, 2, 4], [4800, 4800], None, "R9 gift would overshoot: lost"),
    ([4800, 4700], 0, [3, 3, 3, 2, 4], [4800, 5000], 1, "R9 gift reaching 5000 wins"),
    ([4800, 600, 900], 0, [3, 3, 3, 2, 4], [4800, 900, 900], None, "R9 a gift never bumps"),
]


@pytest.mark.parametrize(
    ("scores", "banker", "turn_total_roll", "expected", "winner", "why"), GIFT_ROWS
)
def test_overshoot_gift_r9(scores, banker, turn_total_roll, expected, winner, why):
    g = game_at(scores, current=banker)
    held = [d for d in turn_total_roll if turn_total_roll.count(d) >= 3]
    bank_total(g, [(turn_total_roll, held)])
    assert g.state.scores == expected, why
    assert g.state.winner == winner, why
    assert g.state.phase == (OVER if winner is not None else ROLL)


def test_gift_goes_to_lowest_not_first_r9():
    g = game_at([4700, 2000, 800, 800, 600], current=0)
    bank_total(g, [([4, 4, 4, 2, 3], [4, 4, 4])])  # 4700 + 400 > 5000
    assert g.state.scores == [4700, 2000, 800, 800, 1000]


def test_overshoot_by_a_player_entering_r9():
    # Target 2000: 0 + 2200 overshoots; 800 + 2200 would overshoot too, so it is lost.
    g = game_at([0, 800], target=2000)
    bank_total(g, [([1, 1, 1, 1, 2], [1, 1, 1, 1])])
    assert g.state.scores == [0, 800]
    assert g.state.phase == ROLL and g.state.current == 1


@pytest.mark.parametrize("n_players", [3, 4, 5, 6, 7, 8])
def test_turns_go_round_in_seat_order_r11(n_players):
    g = Game(n_players, first_player=n_players - 1, seed=1)
    seen = []
    for _ in range(2 * n_players):
        seen.append(g.state.current)
        g.roll([2, 3, 4, 6, 6])  # everybody busts
    assert seen == [(n_players - 1 + k) % n_players for k in range(2 * n_players)]
    assert g.state.turns == 2 * n_players


@pytest.mark.parametrize("n_players", [1, 9, "2"])
def test_player_count_is_checked_r11(n_players):
    with pytest.raises(ValueError, match="n_players"):
        Game(n_players)


def test_acting_in_the_wrong_phase_is_refused():
    g = game_at([0, 0])
    with pytest.raises(IllegalMoveError, match="no decision is due"):
        g.act(1)
    g.roll([1, 2, 3, 4, 6])
    with pytest.raises(IllegalMoveError, match="cannot roll now"):
        g.roll()


@pytest.mark.parametrize("action", [2, 64, -1, 1.0, "1", None, True])
def test_illegal_actions_name_the_legal_ones_and_change_nothing(action):
    g = game_at([0, 0])
    g.roll([1, 1, 2, 3, 4])
    before = g.state.to_dict()
    with pytest.raises(IllegalMoveError) as err:
        g.act(action)
    message = str(err.value)
    assert "legal: 1 (hold [1] and roll), 3 (hold [1 1] and roll)" in message
    assert "\n" not in message
    assert g.state.to_dict() == before


def test_same_seed_same_game():
    from fivethousand_rl.agents import make_policy

    def trajectory(seed):
        g = Game(3, seed=seed)
        bot, rng = make_policy("random"), np.random.default_rng(seed)
        log = []
        while not g.over and g.state.turns < 300:
            if g.state.phase == ROLL:
                log.append(g.roll().dice)
            else:
                action = bot.act(g, rng)
                log.append(action)
                g.act(action)
        return log, g.state.to_dict()

    assert trajectory(7) == trajectory(7)
    assert trajectory(7) != trajectory(8)


def test_json_round_trip_mid_game():
    g = Game(4, seed=3)
    from fivethousand_rl.agents import make_policy

    bot, rng = make_policy("threshold:300"), np.random.default_rng(0)
    for _ in range(200):
        if g.state.phase == ROLL:
            g.roll()
        elif g.state.phase == DECIDE:
            text = g.to_json()
            copy = Game.from_json(text)
            assert copy.state == g.state
            assert copy.rules == g.rules
            assert copy.legal_actions() == g.legal_actions()
            assert json.loads(copy.to_json()) == json.loads(text)
            g.act(bot.act(g, rng))


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "{}",
        '{"rules": {"hold": "free", "target": 5000, "entry": 500}, "state": {"scores": [0]}}',
        '{"rules": {"hold": "odd"}, "state": {}}',
        # a banked score that is not a multiple of 100 (R10)
        '{"rules": {}, "state": {"scores": [150, 0], "current": 0, "turn_total": 0,'
        ' "dice_left": 5, "roll": null, "phase": "roll"}}',
        # a decision on a bust roll
        '{"rules": {}, "state": {"scores": [0, 0], "current": 0, "turn_total": 0,'
        ' "dice_left": 5, "roll": [2, 2, 3, 4, 6], "phase": "decide"}}',
    ],
)
def test_corrupt_saved_games_are_refused(text):
    with pytest.raises(ValueError, match="not a"):
        Game.from_json(text)


# ------------------------------------------------- bank_outcome: banking decided in one place
def _changed_seat(before, after):
    changed = [p for p, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    return changed[0] if changed else None


# The cases of the banking tests above, as (scores, banker, total, scores after, winner,
# bumped, gift_to, lost, why); the game's own banking goes through bank_outcome.
BANK_ROWS = [
    ([1200, 600], 0, 200, [1400, 600], None, (), None, False, "R9 bank adds"),
    ([1200, 1400, 1400, 900], 0, 200, [1400, 0, 0, 900], None, (1, 2), None, False, "R9 bump"),
    ([1200, 1300, 1500], 0, 200, [1400, 1300, 1500], None, (), None, False, "R9 no bump"),
    ([4800, 4900], 0, 200, [5000, 4900], 0, (), None, False, "R9 exactly 5000 wins"),
    ([0, 0], 0, 1100, [1100, 0], None, (), None, False, "R8 entering with 1100"),
    ([4800, 500], 0, 1100, [4800, 1600], None, (), 1, False, "R9 three 1s at 4800: gift"),
] + [
    (
        scores,
        banker,
        300,
        expected,
        winner,
        (),
        _changed_seat(scores, expected),
        scores == expected,
        why,
    )
    for scores, banker, _, expected, winner, why in GIFT_ROWS
]


@pytest.mark.parametrize(
    ("scores", "banker", "total", "after", "winner", "bumped", "gift_to", "lost", "why"),
    BANK_ROWS,
)
def test_bank_outcome_r9(scores, banker, total, after, winner, bumped, gift_to, lost, why):
    before = list(scores)
    o = bank_outcome(scores, banker, total, Rules())
    assert o.allowed, why
    assert list(o.scores) == after, why
    assert (o.winner, o.bumped, o.gift_to, o.lost) == (winner, bumped, gift_to, lost), why
    assert o.overshoot == (scores[banker] + total > 5000), why
    assert scores == before  # pure


@pytest.mark.parametrize(
    ("banked", "total", "why_not"),
    [
        (0, 400, "is under the 500 needed to enter"),
        (0, 250, "ends in 50 and is under the 500 needed to enter"),
        (0, 1050, "ends in 50"),
        (800, 50, "ends in 50"),
        (800, 0, "nothing to bank"),
    ],
)
def test_bank_outcome_says_why_banking_is_refused_r8(banked, total, why_not):
    o = bank_outcome([banked, 700], 0, total, Rules())
    assert not o.allowed and o.why_not == why_not
    assert o.scores == (banked, 700) and o.winner is None and not o.overshoot


def test_bank_outcome_overshoot_by_an_entering_player_r9():
    o = bank_outcome([0, 800], 0, 2200, Rules(target=2000))
    assert o.lost and o.lost_candidate == 1
    assert lost_reason(o, ["A", "B"]) == "it would take B past 2000"
    o = bank_outcome([4800, 0], 0, 300, Rules())
    assert o.lost and o.lost_why == "nobody else has 500 or more"


def test_the_game_banks_as_bank_outcome_says_r9():
    rng = np.random.default_rng(5)
    for seed in range(30):
        g = Game(3, seed=seed)
        while not g.over:
            if g.state.phase == ROLL:
                g.roll()
                continue
            legal = g.legal_actions()
            action = legal[int(rng.integers(len(legal)))]
            s = g.state
            if action & BANK_BIT:
                hold = g.roll_info().holds_by_bits_free[action & ~BANK_BIT]
                o = bank_outcome(s.scores, s.current, s.turn_total + hold.points, g.rules)
                g.act(action)
                assert tuple(g.state.scores) == o.scores and g.state.winner == o.winner
                assert g.last_event.move.bank == o
            else:
                g.act(action)


# Events read well with any name, "you" included: past tense, one dice format.
@pytest.mark.parametrize(
    ("scores", "banker", "total", "event"),
    [
        ([4800, 4900], 0, 200, "you banked 200 and won with exactly 5000"),
        ([1200, 1400, 1400], 0, 200, "you banked 200, now 1400, which bumped B and C to 0"),
        ([1200, 1400], 1, 200, "B banked 200, now 1600"),
        ([4800, 4700], 0, 300, "you banked 300: overshoot, gift of 300 to B, who won with exactly"),
        ([4700, 4800], 1, 300, "B banked 300: overshoot, gift of 300 to you, who won with exactly"),
        ([4800, 0], 0, 300, "you banked 300: overshoot, the points are lost (nobody else has 500"),
    ],
)
def test_bank_events_are_grammatical_for_every_name(scores, banker, total, event):
    text = bank_text(bank_outcome(scores, banker, total, Rules()), ["you", "B", "C"])
    assert text.startswith(event)


def test_roll_and_hold_events_use_one_dice_format():
    g = game_at([700, 0])
    names = ["player 0", "player 1"]
    g.roll([5, 1, 2, 3, 3])
    assert event_text(g.last_event, names) == "player 0 rolled [1 2 3 3 5]"
    g.act(action_for([1, 5], [1, 2, 3, 3, 5], bank=False))
    assert event_text(g.last_event, names) == "player 0 held [1 5], turn total 150"
    g.roll([2, 3, 4])
    assert event_text(g.last_event, names) == "player 0 rolled [2 3 4]: bust, lost 150"
    g.roll([2, 3, 4, 6, 6])
    assert event_text(g.last_event, names) == "player 1 rolled [2 3 4 6 6]: bust"
    assert format_dice((1, 1, 5)) == "[1 1 5]"


# ------------------------------------------------- saved states: every field checked
def _state(**changes):
    """A valid mid-turn state (1 held, 100 points, 4 dice to roll), with `changes`."""
    state = {
        "scores": [700, 0],
        "current": 0,
        "turn_total": 100,
        "dice_left": 4,
        "roll": None,
        "held": [[1]],
        "phase": "roll",
        "winner": None,
        "turns": 3,
        "last_event": "",
    }
    state.update(changes)
    return json.dumps({"rules": {"hold": "free", "target": 5000, "entry": 500}, "state": state})


def test_the_valid_state_above_loads():
    assert Game.from_json(_state()).state.held == [(1,)]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"held": [[2]]}, "held dice [2] do not all score (R2)"),
        ({"held": [[5, 1]]}, "held dice [5, 1] are not 1 to 5 dice 1..6 in ascending order"),
        ({"held": [[]]}, "held dice [] are not"),
        ({"held": [[7]]}, "held dice [7] are not"),
        ({"held": [1]}, "held must be a list of dice lists"),
        ({"held": [[1.0]]}, "held must be"),
        ({"scores": [700.5, 0]}, "scores must be a list of ints"),
        ({"scores": ["700", 0]}, "scores must be"),
        ({"scores": [True, 0]}, "scores must be"),
        ({"scores": [750, 0]}, "banked score 750 is not 0 or a multiple of 100"),
        ({"scores": [700, 5100]}, "banked score 5100"),
        ({"scores": [700]}, "1 players"),
        ({"current": 2}, "current seat 2 out of range 0..1"),
        ({"current": -1}, "current seat -1 out of range"),
        ({"current": "0"}, "current must be an integer"),
        ({"turn_total": 120}, "turn total 120 is not a non-negative multiple of 50"),
        ({"turn_total": 200}, "the turn total is not the sum of the holds"),
        ({"dice_left": 5}, "dice_left 5 does not follow from the holds of this turn (R6)"),
        ({"dice_left": 0}, "dice_left 0 not in 1..5"),
        ({"held": [[1, 1, 1], [5, 5, 5]], "turn_total": 1600}, "does not follow"),  # 6 dice
        ({"phase": "decide"}, "a decision needs a sorted roll"),
        ({"phase": "decide", "roll": [4, 3, 2, 1]}, "a decision needs a sorted roll"),
        ({"phase": "decide", "roll": [2, 3, 4, 6]}, "a decision needs a scoring roll"),
        ({"phase": "decide", "roll": [1, 2, 3, 9]}, "a decision needs a scoring roll"),
        ({"roll": [1, 2, 3, 4]}, "a roll is only pending in the decide phase"),
        ({"phase": "paused"}, "unknown phase 'paused'"),
        ({"phase": 1}, "phase must be a string"),
        ({"phase": "over", "winner": 0}, "the winner, and only the winner"),
        ({"winner": 0}, "a finished game needs a winner and only it"),
        ({"phase": "over", "winner": 5}, "winner seat 5 out of range"),
        ({"phase": "over", "winner": -1}, "winner seat -1 out of range"),
        ({"turns": -1}, "negative turn count -1"),
        ({"turns": 2.5}, "turns must be an integer"),
        ({"last_event": None}, "last_event must be a string"),
        ({"colour": "red"}, "unknown field 'colour'"),
    ],
)
def test_a_corrupt_state_is_refused_in_one_line(changes, message):
    with pytest.raises(ValueError) as err:
        Game.from_json(_state(**changes))
    text = str(err.value)
    assert text.startswith("not a valid game state: ") and message in text, text
    assert "\n" not in text


@pytest.mark.parametrize("missing", ["scores", "current", "turn_total", "dice_left", "roll"])
def test_a_state_missing_a_field_is_refused(missing):
    data = json.loads(_state())
    del data["state"][missing]
    with pytest.raises(ValueError, match=f"missing field '{missing}'"):
        Game.from_json(json.dumps(data))


def test_optional_fields_default():
    data = json.loads(_state(held=[], turn_total=0, dice_left=5))
    for name in ("held", "winner", "turns", "last_event"):
        del data["state"][name]
    assert Game.from_json(json.dumps(data)).state.turns == 0


@pytest.mark.parametrize(
    "text",
    ["[]", "5", '{"rules": [], "state": {}}', '{"rules": {}, "state": {}, "extra": 1}'],
)
def test_a_saved_game_that_is_not_an_object_of_rules_and_state_is_refused(text):
    with pytest.raises(ValueError, match="not a saved game"):
        Game.from_json(text)


DEEP = "[" * 100_000 + "]" * 100_000  # json.loads recurses once per bracket


@pytest.mark.parametrize(
    "where",
    ["the whole save", "the rules", "the state", "a score"],
)
def test_a_saved_game_nested_too_deeply_is_a_one_line_value_error(where):
    """Issue 28 item 11: json.loads raised RecursionError, not the loader's ValueError."""
    saved = json.loads(Game(2, seed=0).to_json())
    if where == "the rules":
        saved["rules"] = "DEEP"
    elif where == "the state":
        saved["state"] = "DEEP"
    elif where == "a score":
        saved["state"]["scores"] = "DEEP"
    text = DEEP if where == "the whole save" else json.dumps(saved).replace('"DEEP"', DEEP)
    with pytest.raises(ValueError, match="^not a saved game: nested too deeply$"):
        Game.from_json(text)


# ------------------------------------------------- the dice stream's state
def _dice_state(**changes):
    g = Game(2, seed=1)
    g.roll()  # draws a batch
    state = g.dice_state()
    state.update(changes)
    return state


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"codes": ["1"] * 1024}, "codes must be integers in 0..7775, not '1'"),
        ({"codes": [1.5] * 1024}, "not 1.5"),
        ({"codes": [True] * 1024}, "not True"),
        ({"codes": [-3] * 1024}, "not -3"),
        ({"codes": [7776] * 1024}, "not 7776"),
        ({"codes": [1] * 1025}, "codes must be a list of at most 1024 rolls"),
        ({"codes": "12"}, "codes must be a list"),
        ({"next": -1}, "next must be an integer in 0..1024, not -1"),
        ({"next": 1025}, "next must be an integer in 0..1024"),
        ({"next": 1.0}, "not 1.0"),
        ({"rng": {"bit_generator": "MT19937"}}, "'bit_generator': 'PCG64'"),
        ({"rng": []}, "'bit_generator': 'PCG64'"),
        ({"extra": 1}, "exactly 'rng', 'codes' and 'next'"),
    ],
)
def test_a_corrupt_dice_state_is_refused_and_changes_nothing(changes, message):
    g = Game(2, seed=7)
    before = g.dice_state()
    with pytest.raises(ValueError) as err:
        g.set_dice_state(_dice_state(**changes))
    assert str(err.value).startswith("not a valid dice state: ") and message in str(err.value)
    assert g.dice_state() == before


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("state", -1, "PCG64 state must be an integer in 0..2**128-1, not -1"),
        ("state", 2**128, "PCG64 state must be"),
        ("state", 1.5, "not 1.5"),
        ("inc", "x", "PCG64 inc must be"),
        ("has_uint32", 2, "PCG64 has_uint32 must be an integer in 0..2**1-1"),
        ("uinteger", -5, "PCG64 uinteger must be"),
        ("uinteger", True, "not True"),
    ],
)
def test_a_corrupt_generator_state_is_refused(key, value, message):
    state = _dice_state()
    where = state["rng"]["state"] if key in ("state", "inc") else state["rng"]
    where[key] = value
    with pytest.raises(ValueError, match=re.escape(message)):
        Game(2).set_dice_state(state)


def test_a_dice_state_round_trips_exactly():
    g = Game(2, seed=3)
    for _ in range(5):
        g.roll() if g.state.phase == ROLL else g.act(g.legal_actions()[0])
    copy = Game.from_json(g.to_json())
    copy.set_dice_state(json.loads(json.dumps(g.dice_state())))
    for _ in range(50):
        if g.over:
            break
        if g.state.phase == ROLL:
            assert g.roll() == copy.roll()
        else:
            g.act(g.legal_actions()[-1])
            copy.act(copy.legal_actions()[-1])
    assert g.state == copy.state


# ------------------------------------------------- the move model: what each action does
@pytest.mark.parametrize(
    ("scores", "roll", "held", "bank", "expect"),
    [
        # R6: all five dice held, five come back; R8: entering with 1500
        (
            [0, 0],
            [1, 2, 3, 4, 5],
            [1, 2, 3, 4, 5],
            True,
            {"points": 1500, "turn_total": 1500, "dice_left": 5, "scores": (1500, 0)},
        ),
        # R8: 250 ends in 50, no banking on it; 3 dice would be rolled
        (
            [700, 1000],
            [1, 1, 2, 3, 5],
            [1, 1, 5],
            False,
            {"turn_total": 250, "dice_left": 2, "why_no_bank": "ends in 50"},
        ),
        # R8: not entered, 200 is under the entry
        (
            [0, 0],
            [1, 1, 2, 3, 4],
            [1, 1],
            False,
            {"dice_left": 3, "why_no_bank": "is under the 500 needed to enter"},
        ),
        # R9: landing on the opponent's score bumps them to 0
        ([800, 1000], [1, 1, 2, 3, 4], [1, 1], True, {"scores": (1000, 0), "bumped": (1,)}),
        # R9: exactly the target wins
        ([4800, 4700], [1, 1, 2, 3, 4], [1, 1], True, {"scores": (5000, 4700), "winner": 0}),
        # R9: overshoot, the gift would take the only candidate past 5000: lost
        (
            [4800, 4700],
            [1, 1, 1, 2, 3],
            [1, 1, 1],
            True,
            {"scores": (4800, 4700), "overshoot": True, "lost": True, "lost_candidate": 1},
        ),
        # R9: overshoot, gift to the lowest opponent with at least 500
        (
            [4800, 3000],
            [1, 1, 1, 2, 3],
            [1, 1, 1],
            True,
            {"scores": (4800, 4100), "gift_to": 1, "winner": None},
        ),
    ],
)
def test_each_move_says_what_it_leads_to(scores, roll, held, bank, expect):
    g = game_at(scores)
    g.roll(roll)
    action = action_for(held, roll, bank)
    move = g.move(action)
    assert move in g.moves() and move.action == action and move.held == tuple(held)
    assert move.banks == bank
    for name, value in expect.items():
        where = move if name in Move._fields else move.bank
        assert getattr(where, name) == value, name
    before = copy.deepcopy(g.state)
    assert g.act(action) == move  # act applies exactly the move it announces
    if bank:
        assert tuple(g.state.scores) == move.bank.scores
    else:
        assert g.state.turn_total == move.turn_total and g.state.dice_left == move.dice_left
    assert g.last_event == Moved(before.current, tuple(sorted(roll)), move)


class _RandomMover(Policy):
    """Checks the move list against the legal actions at every decision, then picks one."""

    name = "random-mover"

    def act(self, game, rng):
        moves = game.moves()
        assert [m.action for m in moves] == game.legal_actions()
        return moves[int(rng.integers(len(moves)))].action


def test_moves_are_the_legal_actions_in_order():
    rng = np.random.default_rng(3)
    for seed in range(20):
        driver.play(Game(3, seed=seed), [_RandomMover()] * 3, rng, max_turns=60)


def test_an_illegal_move_is_refused_and_changes_nothing():
    g = game_at([0, 0])
    g.roll([1, 1, 2, 3, 4])
    before = g.to_json()
    for action in (action_for([1, 1], [1, 1, 2, 3, 4], bank=True), 64, -1, True, "3"):
        with pytest.raises(IllegalMoveError):
            g.move(action)
        with pytest.raises(IllegalMoveError):
            g.act(action)
    assert g.to_json() == before


# ------------------------------------------------------------- search: clone and chance
def _play_until(game, phase, seed=0, steps=0):
    """Play `game` with random legal actions until `phase` comes (after at least `steps`
    steps, and before a turn limit)."""
    rng = np.random.default_rng(seed)
    for _ in range(10_000):
        if game.state.phase == phase and steps <= 0:
            return game
        if game.over:
            break
        steps -= 1
        if game.state.phase == ROLL:
            game.roll()
        else:
            legal = game.legal_actions()
            game.act(legal[int(rng.integers(len(legal)))])
    raise AssertionError(f"phase {phase!r} never came")


def _same_play(a, b, steps, seed=0, bank=True):
    """Play `a` and `b` alike (the same choices; each rolls its own dice) for `steps`
    steps, or until over; each step's record (roll or move) must agree. Without `bank`
    nobody banks: the game goes on, roll after roll. Returns the number of rolls."""
    rng = np.random.default_rng(seed)
    rolls = 0
    for _ in range(steps):
        if a.over:
            break
        if a.state.phase == ROLL:
            assert a.roll() == b.roll()
            rolls += 1
        else:
            legal = [x for x in a.legal_actions() if bank or not x & BANK_BIT]
            action = legal[int(rng.integers(len(legal)))]
            assert a.act(action) == b.act(action)
        assert a.state == b.state and a.last_event == b.last_event
    assert a.dice_state() == b.dice_state()
    return rolls


@pytest.mark.parametrize("phase", [ROLL, DECIDE, OVER])
def test_a_clone_is_the_same_game_in_every_phase(phase):
    g = _play_until(Game(3, seed=11), phase, steps=7)
    c = g.clone()
    assert type(c) is Game and set(vars(c)) == set(vars(g)), "clone copies every attribute"
    assert c.state == g.state and c.last_event == g.last_event and c.rules is g.rules
    assert c.state.scores is not g.state.scores and c.state.held is not g.state.held
    assert c.dice_state() == g.dice_state()
    assert c.legal_actions() == g.legal_actions() and c.to_json() == g.to_json()


def test_a_clone_rolls_the_same_dice_past_the_buffer():
    """Same seed, same future: 3,000 steps cross the dice buffer's refills (1,024 rolls),
    and a clone of a clone too."""
    g = _play_until(Game(2, seed=5), DECIDE, steps=3)
    c = g.clone()
    cc = c.clone()
    assert _same_play(g, c, 3000, seed=1, bank=False) > 1024
    fresh = _play_until(Game(2, seed=5), DECIDE, steps=3)
    assert _same_play(fresh, cc, 3000, seed=1, bank=False) > 1024


@pytest.mark.parametrize("first", ["original", "clone"])
def test_a_clone_and_its_original_are_independent(first):
    g = _play_until(Game(2, seed=2), DECIDE, steps=5)
    c = g.clone()
    moved, kept = (g, c) if first == "original" else (c, g)
    before, dice_before = kept.state.to_dict(), kept.dice_state()
    event = kept.last_event
    _play_until(moved, OVER)  # every kind of step, every roll from the generator
    moved.set_dice_state(Game(2, seed=99).dice_state())
    moved.state.scores[0] = 700
    assert kept.state.to_dict() == before and kept.last_event == event
    assert kept.dice_state() == dice_before


def test_a_clone_does_not_share_a_callers_generator():
    """A game seeded with the caller's Generator draws from it; its clone keeps the
    generator's state at cloning, whatever the caller draws afterwards."""
    rng = np.random.default_rng(4)
    c = Game(2, seed=rng).clone()
    rng.random(10)  # the caller's own use of its generator
    assert _same_play(Game(2, seed=np.random.default_rng(4)), c, 3000, bank=False) > 1024


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_players=st.integers(2, 8),
    before=st.integers(0, 300),
    after=st.integers(1, 300),
)
def test_clones_play_on_as_the_original_would(seed, n_players, before, after):
    """Property, over random play: a clone taken at any step plays on exactly as its
    original (same dice, same states, same events), and playing it leaves the original
    where it was."""
    g = Game(n_players, seed=seed, first_player=seed % n_players)
    rng = np.random.default_rng(seed)
    for _ in range(before):
        if g.over:
            break
        if g.state.phase == ROLL:
            g.roll()
        else:
            g.act(g.legal_actions()[int(rng.integers(len(g.legal_actions())))])
    kept, dice = g.state.to_dict(), g.dice_state()
    c = g.clone()
    _same_play(c, g.clone(), after, seed=seed)
    assert g.state.to_dict() == kept and g.dice_state() == dice


def test_clone_is_not_deepcopy_but_agrees_with_it():
    g = _play_until(Game(4, seed=8), DECIDE, steps=20)
    deep, c = copy.deepcopy(g), g.clone()
    assert _same_play(deep, c, 3000, bank=False) > 1024


@pytest.mark.parametrize(("dice_left", "count"), [(5, 252), (4, 126), (3, 56), (2, 21), (1, 6)])
def test_chance_outcomes_are_every_roll_with_its_exact_probability(dice_left, count):
    """At a chance node: every sorted roll of the dice left, in a stable order that
    chance_index numbers, probabilities summing to 1 (exactly, as fractions), and the
    same as the dice stream's own: each of the 6**5 codes it draws uniformly maps to
    one outcome (ROLL_BY_CODE)."""
    g = game_at([0, 0])
    g.state.dice_left = dice_left  # only the size of the roll matters here
    outcomes, exact = g.chance_outcomes(), g.chance_outcomes(exact=True)
    assert len(outcomes) == count == len(exact)
    assert outcomes == roll_probabilities(dice_left)
    assert [d for d, _ in outcomes] == sorted(d for d, _ in outcomes)
    assert all(d == tuple(sorted(d)) and len(d) == dice_left for d, _ in outcomes)
    assert math.fsum(p for _, p in outcomes) == 1.0 and sum(p for _, p in exact) == 1
    assert all(float(q) == p for (_, p), (_, q) in zip(outcomes, exact, strict=True))
    assert [chance_index(d) for d, _ in outcomes] == list(range(count))
    drawn = Counter(ROLL_BY_CODE[dice_left][code % 6**dice_left].dice for code in range(6**5))
    assert {d: Fraction(drawn[d], 6**5) for d, _ in exact} == dict(exact)
    outcomes.clear()  # the caller's list: the next call is whole again
    assert len(g.chance_outcomes()) == count


def test_chance_index_reads_dice_in_any_order():
    assert chance_index([1, 1, 1, 1, 1]) == 0 and chance_index([6, 6, 6, 6, 6]) == 251
    assert chance_index([5, 1, 3]) == chance_index((1, 3, 5))
    assert chance_index([6]) == 5
    for bad in ([], [0], [7, 1], [1, 1, 1, 1, 1, 1], ["a"]):
        with pytest.raises(ValueError):
            chance_index(bad)


@pytest.mark.parametrize("phase", [DECIDE, OVER])
def test_chance_outcomes_exist_only_where_a_roll_is_due(phase):
    g = _play_until(Game(2, seed=3), phase, steps=3)
    with pytest.raises(RuntimeError, match=f"no roll is due.*phase is '{phase}'") as err:
        g.chance_outcomes()
    assert "\n" not in str(err.value)


def test_rolling_on_stops_at_the_chance_node_without_rolling_r6_r7():
    """A decision that rolls on leaves the game at a chance node: nothing is drawn until
    roll() (the environments roll at once; the game does not), and the outcomes are the
    rolls of the dice left; hot dice give five back (R6)."""
    g = game_at([0, 0])
    g.roll([1, 5, 2, 3, 4])
    dice = g.dice_state()
    g.act(action_for([1], [1, 2, 3, 4, 5], bank=False))  # R7: roll the four left
    assert g.state.phase == ROLL and g.dice_state() == dice
    assert len(g.chance_outcomes()) == 126
    g.roll([1, 5, 5, 2])
    g.act(action_for([1, 5, 5], [1, 2, 5, 5], bank=False))
    assert g.state.dice_left == 1
    assert [d for d, _ in g.chance_outcomes()] == [(i,) for i in range(1, 7)]
    g.roll([5])
    g.act(action_for([5], [5], bank=False))  # all five held: hot dice (R6)
    assert g.state.dice_left == 5 and len(g.chance_outcomes()) == 252


def test_a_bust_outcome_ends_the_turn_r4():
    """Applying a bust among the chance outcomes ends the turn, losing its total (R4)."""
    g = game_at([600, 0])
    g.roll([1, 1, 2, 3, 4])
    g.act(action_for([1, 1], [1, 1, 2, 3, 4], bank=False))
    busts = [d for d, _ in g.chance_outcomes() if is_bust(d)]
    assert (2, 2, 3) in busts and (1, 2, 3) not in busts
    g.roll(busts[0])
    assert g.state.current == 1 and g.state.turn_total == 0 and g.state.scores == [600, 0]
    assert g.state.phase == ROLL and len(g.chance_outcomes()) == 252


def test_a_clone_pickles_with_its_future():
    """A clone whose generator is still a snapshot pickles (the environments pickle their
    game) and rolls on as its original."""
    g = _play_until(Game(2, seed=6), ROLL, steps=9)
    c = pickle.loads(pickle.dumps(g.clone()))
    assert _same_play(g, c, 3000, bank=False) > 1024
