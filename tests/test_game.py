"""The game state machine: RULES.md R1 and R4-R12, with injected dice."""

import json

import numpy as np
import pytest

from envs.game import DECIDE, OVER, ROLL, Game, IllegalMoveError
from envs.rules import BANK_BIT, action_for
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


@pytest.mark.parametrize(
    ("scores", "banker", "turn_total_roll", "expected", "winner", "why"),
    [
        # Gift of 300 (three 3s) from player 0 at 4800.
        (
            [4800, 1000, 700],
            0,
            [3, 3, 3, 2, 4],
            [4800, 1000, 1000],
            None,
            "R9 lowest qualified gets it",
        ),
        (
            [4800, 700, 700],
            0,
            [3, 3, 3, 2, 4],
            [4800, 1000, 700],
            None,
            "R9 tie: first after banker",
        ),
        ([700, 4800, 700], 1, [3, 3, 3, 2, 4], [700, 4800, 1000], None, "R9 tie order wraps"),
        ([4800, 0, 400], 0, [3, 3, 3, 2, 4], [4800, 0, 400], None, "R9 nobody has 500: lost"),
        ([4800, 0, 700], 0, [3, 3, 3, 2, 4], [4800, 0, 1000], None, "R9 0 doesn't qualify"),
        ([4800, 4800], 0, [3, 3, 3, 2, 4], [4800, 4800], None, "R9 gift would overshoot: lost"),
        ([4800, 4700], 0, [3, 3, 3, 2, 4], [4800, 5000], 1, "R9 gift reaching 5000 wins"),
        ([4800, 600, 900], 0, [3, 3, 3, 2, 4], [4800, 900, 900], None, "R9 a gift never bumps"),
    ],
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
    assert "legal: 1 (hold [1] and roll), 3 (hold [1, 1] and roll)" in message
    assert "\n" not in message
    assert g.state.to_dict() == before


def test_same_seed_same_game():
    from agents import make_policy

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
    bot, rng = __import__("agents").make_policy("threshold:300"), np.random.default_rng(0)
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
