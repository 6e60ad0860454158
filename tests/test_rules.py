"""Scoring of one roll: RULES.md R1-R3, R5 and R8, table-driven."""

import itertools
import math
import re
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fivethousand_rl.envs.rules import (
    BANK_BIT,
    ROLL_INFO,
    Rules,
    action_for,
    bust_probability,
    can_bank,
    hold_score,
    is_bust,
    legal_holds,
    roll_info,
    roll_probabilities,
)

# One row per case: (dice held from one roll, points, why).
SCORING_ROWS = [
    ([1], 100, "R2 single ace"),
    ([5], 50, "R2 single 5"),
    ([1, 1], 200, "R2 two aces are two singles"),
    ([5, 5], 100, "R2 two 5s are two singles"),
    ([1, 5], 150, "R2 ace and 5"),
    ([1, 1, 1], 1100, "R2 three aces"),
    ([2, 2, 2], 200, "R2 three 2s"),
    ([3, 3, 3], 300, "R2 three 3s"),
    ([4, 4, 4], 400, "R2 three 4s"),
    ([5, 5, 5], 500, "R2 three 5s"),
    ([6, 6, 6], 600, "R2 three 6s"),
    ([1, 1, 1, 1], 2200, "R2 four aces = 2 x 1100"),
    ([2, 2, 2, 2], 400, "R2 four 2s"),
    ([3, 3, 3, 3], 600, "R2 four 3s"),
    ([4, 4, 4, 4], 800, "R2 four 4s"),
    ([5, 5, 5, 5], 1000, "R2 four 5s: best reading, not 500 + 50"),
    ([6, 6, 6, 6], 1200, "R2 four 6s"),
    ([1, 1, 1, 1, 1], 4400, "R2 five aces = 4 x 1100"),
    ([2, 2, 2, 2, 2], 800, "R2 five 2s"),
    ([3, 3, 3, 3, 3], 1200, "R2 five 3s"),
    ([4, 4, 4, 4, 4], 1600, "R2 five 4s"),
    ([5, 5, 5, 5, 5], 2000, "R2 five 5s"),
    ([6, 6, 6, 6, 6], 2400, "R2 five 6s"),
    ([1, 2, 3, 4, 5], 1500, "R2 low straight held whole, not 100 + 50"),
    ([5, 3, 1, 4, 2], 1500, "R2 straight in any order"),
    ([2, 3, 4, 5, 6], 1500, "R2 high straight"),
    ([1, 1, 1, 5], 1150, "R2 triple plus single"),
    ([2, 2, 2, 1], 300, "R2 triple of 2 plus ace"),
    ([2, 2, 2, 1, 5], 350, "R2 triple plus two singles"),
    ([5, 5, 5, 1, 1], 700, "R2 triple of 5 plus two aces"),
    ([1, 1, 1, 1, 5], 2250, "R2 four aces plus a 5"),
    ([3, 3, 3, 5, 5], 400, "R2 triple plus two 5s"),
    ([6, 6, 6, 6, 1], 1300, "R2 four 6s plus an ace"),
    ([], 0, "R2 nothing held"),
    ([2], 0, "R2 a lone 2 cannot be held"),
    ([3], 0, "R2 a lone 3"),
    ([4], 0, "R2 a lone 4"),
    ([6], 0, "R2 a lone 6"),
    ([2, 2], 0, "R2 a pair of 2s"),
    ([6, 6], 0, "R2 a pair of 6s"),
    ([3, 3], 0, "R2 two 3s without the third"),
    ([1, 2], 0, "R2 every held die must score"),
    ([3, 3, 3, 2], 0, "R2 a 2 beside a triple of 3s"),
    ([2, 2, 2, 2, 3], 0, "R2 a 3 beside four 2s"),
    ([1, 2, 3, 4, 6], 0, "R2 1-2-3-4-6 is no straight"),
    ([1, 3, 4, 5, 6], 0, "R2 1-3-4-5-6 is no straight"),
    ([1, 2, 3, 4], 0, "R2 a straight needs all five dice"),
]


@pytest.mark.parametrize(("dice", "points", "why"), SCORING_ROWS)
def test_hold_score_table(dice, points, why):
    assert hold_score(dice) == points, why


@pytest.mark.parametrize("bad", [[0], [7], [1, 1, 1, 1, 1, 1], ["x"], [1.5]])
def test_hold_score_rejects_non_dice(bad):
    with pytest.raises(ValueError, match="dice"):
        hold_score(bad)


# (roll, bust?) rows for R3.
BUST_ROWS = [
    ([2, 3, 4, 6, 6], True),
    ([2, 2, 3, 3, 4], True),
    ([2, 2, 3, 3, 6], True),
    ([2, 2, 2, 3, 4], False),  # a triple scores
    ([1, 2, 3, 4, 6], False),  # the ace scores
    ([2, 3, 4, 5, 6], False),  # straight (and the 5)
    ([6], True),
    ([1], False),
    ([5], False),
    ([4, 6], True),
    ([3, 3, 3], False),
    ([2, 3, 4, 6], True),
    ([6, 6, 4, 4], True),
]


@pytest.mark.parametrize(("roll", "bust"), BUST_ROWS)
def test_bust_table_r3(roll, bust):
    assert is_bust(roll) is bust


def _ordered_bust_fraction(n):
    """Bust probability by brute force over all 6**n ordered rolls, without the tables."""
    busts = 0
    for roll in itertools.product(range(1, 7), repeat=n):
        scoring_subsets = (
            sub
            for k in range(1, n + 1)
            for sub in itertools.combinations(roll, k)
            if hold_score(sub) > 0
        )
        busts += next(scoring_subsets, None) is None
    return busts / 6**n


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_bust_probability_equals_enumeration_r3(n):
    assert bust_probability(n) == pytest.approx(_ordered_bust_fraction(n), abs=1e-12)


def test_bust_probability_small_cases_by_hand_r3():
    # 1 die: 2, 3, 4, 6 bust. 2 dice: both from {2,3,4,6}. 3 dice: that, minus the
    # four triples 222, 333, 444, 666.
    assert bust_probability(1) == pytest.approx(4 / 6)
    assert bust_probability(2) == pytest.approx(16 / 36)
    assert bust_probability(3) == pytest.approx((64 - 4) / 216)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_roll_probabilities_sum_to_one(n):
    outcomes = roll_probabilities(n)
    assert sum(p for _, p in outcomes) == pytest.approx(1.0)
    assert len({roll for roll, _ in outcomes}) == len(outcomes)


# (roll, hold variant, the legal holds) rows for R5.
HOLD_ROWS = [
    ([1, 1, 5, 6, 4], "free", [(1,), (1, 1), (5,), (1, 5), (1, 1, 5)]),
    ([1, 1, 5, 6, 4], "all", [(1, 1, 5)]),
    ([1, 2, 3, 4, 5], "free", [(1,), (5,), (1, 5), (1, 2, 3, 4, 5)]),
    ([1, 2, 3, 4, 5], "all", [(1, 2, 3, 4, 5)]),
    ([2, 2, 2, 3, 4], "free", [(2, 2, 2)]),
    ([5, 5, 5, 5, 3], "all", [(5, 5, 5, 5)]),
    ([5, 5, 5, 5, 3], "free", [(5,), (5, 5), (5, 5, 5), (5, 5, 5, 5)]),
    ([2, 3, 4, 6, 6], "free", []),
    ([2, 3, 4, 6, 6], "all", []),
]


@pytest.mark.parametrize(("roll", "variant", "holds"), HOLD_ROWS)
def test_legal_holds_table_r5(roll, variant, holds):
    assert sorted(legal_holds(roll, variant)) == sorted(holds)


def test_unknown_hold_variant_rejected():
    with pytest.raises(ValueError, match="hold must be one of"):
        legal_holds([1, 5], "some")


# (banked, turn total, may bank?) rows for R8, with entry 500.
BANK_ROWS = [
    (0, 450, False),  # not entered, under 500
    (0, 500, True),  # entering with exactly 500
    (0, 550, False),  # ends in 50
    (0, 600, True),
    (1000, 100, True),  # entered: any total of 100 or more
    (1000, 50, False),  # ends in 50
    (1000, 350, False),  # ends in 50
    (1000, 0, False),  # nothing to bank
    (4900, 100, True),
]


@pytest.mark.parametrize(("banked", "total", "allowed"), BANK_ROWS)
def test_can_bank_r8(banked, total, allowed):
    assert can_bank(banked, total, Rules(entry=500)) is allowed


def test_action_encoding_is_leftmost_first_and_unique():
    roll = [1, 1, 5, 6, 4]  # sorted: 1 1 4 5 6
    assert action_for([1], roll, bank=False) == 0b00001
    assert action_for([1, 1, 5], roll, bank=True) == 0b01011 | BANK_BIT
    info = roll_info(roll)
    assert 0b00010 not in info.holds_by_bits_free  # the second ace alone: not leftmost
    with pytest.raises(ValueError, match="cannot hold"):
        action_for([5, 5], roll, bank=False)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"target": 1234}, "target must be a positive multiple of 100"),  # V5
        ({"target": 0}, "target must be a positive multiple of 100"),
        ({"entry": 0}, "entry must be between 50 and target"),  # V1
        ({"entry": 25}, "entry must be between 50 and target"),
        ({"entry": 375}, "entry must be a multiple of 50"),
        ({"entry": 5100}, "entry must be between 50 and target"),
        ({"entry": 500.0}, "entry must be between 50 and target"),
        ({"bump": 1}, "bump must be true or false"),  # V2
        ({"overshoot": "keep"}, "overshoot must be one of"),  # V3
        ({"fifty_rule": "no"}, "fifty_rule must be true or false"),  # V4
        ({"hold": "some"}, "hold must be one of"),  # R5
    ],
)
def test_rules_validation(options, message):
    with pytest.raises(ValueError, match=message):
        Rules(**options)


@pytest.mark.parametrize(
    "options",
    [{"entry": 50}, {"entry": 350}, {"entry": 5000}, {"bump": False}, {"overshoot": "lost"}],
)
def test_every_house_rule_value_of_v1_to_v5_is_accepted(options):
    assert getattr(Rules(**options), next(iter(options))) == next(iter(options.values()))


def test_saved_rules_name_a_switch_only_when_it_differs_from_the_seeds():
    """Files saved before the switches existed (hold, target, entry) read the same."""
    assert Rules().to_dict() == {"hold": "free", "target": 5000, "entry": 500}
    changed = Rules(bump=False, overshoot="lost", fifty_rule=False)
    assert changed.to_dict() == {
        "hold": "free", "target": 5000, "entry": 500,
        "bump": False, "overshoot": "lost", "fifty_rule": False,
    }  # fmt: skip
    assert Rules(**changed.to_dict()) == changed


def _distinct_scoring_submultisets(roll):
    subs = set()
    for k in range(1, len(roll) + 1):
        for idx in itertools.combinations(range(len(roll)), k):
            sub = tuple(sorted(roll[i] for i in idx))
            if hold_score(sub) > 0:
                subs.add(sub)
    return subs


dice_lists = st.lists(st.integers(1, 6), min_size=1, max_size=5)


@given(dice_lists)
def test_every_legal_hold_scores_and_uses_only_roll_dice_r5(roll):
    info = roll_info(roll)
    roll_counts = Counter(roll)
    for hold in info.free_holds:
        assert hold.points > 0
        assert hold.points == hold_score(hold.dice)
        assert not Counter(hold.dice) - roll_counts  # a sub-multiset of the roll
        assert tuple(info.dice[i] for i in range(len(info.dice)) if hold.bits >> i & 1) == hold.dice
    # Exactly one action per distinct scoring set, and every one is there.
    assert {h.dice for h in info.free_holds} == _distinct_scoring_submultisets(roll)
    assert len({h.bits for h in info.free_holds}) == len(info.free_holds)
    # Bust exactly when nothing scores (R3).
    assert info.bust == (not info.free_holds)


@given(dice_lists)
def test_all_variant_holds_the_best_reading_r5(roll):
    info = roll_info(roll)
    if info.bust:
        assert info.best is None
        return
    # The best reading is the unique highest-scoring hold and contains every other hold.
    top = [h for h in info.free_holds if h.points == info.best.points]
    assert top == [info.best]
    best_counts = Counter(info.best.dice)
    for hold in info.free_holds:
        assert not Counter(hold.dice) - best_counts


def test_tables_cover_every_sorted_roll():
    # C(6+n-1, n) sorted rolls of n dice, n = 1..5: 6 + 21 + 56 + 126 + 252.
    assert len(ROLL_INFO) == 461


# ------------------------------------------------- docs/rules.md: its tables are the engine's
RULES_DOC = Path(__file__).resolve().parent.parent / "docs" / "rules.md"


def _section(number: int) -> str:
    """The text of rule R<number> in docs/rules.md, up to the next rule."""
    doc = RULES_DOC.read_text(encoding="utf-8")
    start = doc.index(f'<a id="r{number}"></a>')
    end = doc.find('<a id="r', start + 1)
    return doc[start : end if end > 0 else len(doc)]


def _table(number: int) -> list[list[str]]:
    """The body rows of the (first) table in rule R<number>, as lists of cells."""
    rows = [line for line in _section(number).splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def _dice(cell: str) -> list[int]:
    return [int(d) for d in re.fullmatch(r"`\[([1-6 ]+)\]`", cell).group(1).split()]


def test_every_rule_has_an_anchor_and_a_heading_r1_to_r12():
    doc = RULES_DOC.read_text(encoding="utf-8")
    for number in range(1, 13):
        assert f'<a id="r{number}"></a>\n### R{number}. ' in doc


def test_the_docs_scoring_table_is_the_engines_r2():
    rows = _table(2)
    assert len(rows) >= 15
    for what, example, points in rows:
        assert hold_score(_dice(example)) == int(points), what


def test_the_docs_bust_chances_are_the_engines_r3():
    rows = _table(3)
    assert [int(n) for n, _ in rows] == [5, 4, 3, 2, 1]
    for n, chance in rows:
        fraction = Fraction(chance.split()[0])
        assert math.isclose(bust_probability(int(n)), fraction), n


def test_the_docs_banking_rules_table_is_the_engines_r8():
    for banked, total, allowed, why in _table(8):
        assert can_bank(int(banked), int(total)) is (allowed == "yes"), why


def _seats(cell: str) -> dict[str, int]:
    return {seat: int(score) for seat, score in re.findall(r"([A-D]) (\d+)", cell)}


def test_the_docs_banking_examples_are_the_engines_r9():
    from fivethousand_rl.envs.game import bank_outcome

    rows = _table(9)
    assert len(rows) >= 10
    for before, banker, total, what, after, winner in rows:
        scores = _seats(before)
        seats = sorted(scores)
        o = bank_outcome([scores[s] for s in seats], seats.index(banker), int(total), Rules())
        assert dict(zip(seats, o.scores, strict=True)) == _seats(after), what
        assert (seats[o.winner] if o.winner is not None else "none") == winner, what


def test_the_docs_worked_examples_hold_r5_r6():
    assert legal_holds([1, 5, 5, 2, 3], "free") == [(1,), (5,), (1, 5), (5, 5), (1, 5, 5)]
    assert legal_holds([1, 5, 5, 2, 3], "all") == [(1, 5, 5)]
    r5 = " ".join(_section(5).split())
    assert "`[1 5]`, `[5 5]` or `[1 5 5]`; under `all` you must hold `[1 5 5]` (200)" in r5
    assert hold_score([1, 1, 1]) + hold_score([1, 5]) == 1250 and "(1250)" in _section(6)
