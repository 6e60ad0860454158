"""The house-rule switches of RULES.md V1-V5 in the engine (issue 31 item 1): each
changes exactly one rule, and the defaults are the seeds' rules. One row per case."""

from __future__ import annotations

import numpy as np
import pytest

from fivethousand_rl.envs.batch import bank_batch
from fivethousand_rl.envs.driver import play
from fivethousand_rl.envs.game import Game, bank_outcome
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import Rules, can_bank

SEEDS = Rules()


@pytest.mark.parametrize(
    ("rules", "banked", "total", "allowed"),
    [
        (SEEDS, 0, 450, False),  # R8: under the entry
        (SEEDS, 0, 550, False),  # R8: ends in 50
        (SEEDS, 0, 500, True),
        (Rules(entry=300), 0, 300, True),  # V1: another entry
        (Rules(entry=300), 0, 200, False),
        (Rules(entry=350), 0, 350, False),  # V1 with the 50 rule: 350 ends in 50
        (Rules(entry=350), 0, 400, True),
        (Rules(entry=1000), 0, 900, False),  # V1: a high entry
        (Rules(entry=1000), 0, 1000, True),
        (SEEDS, 500, 50, False),  # R8: an entered player, a total ending in 50
        (Rules(fifty_rule=False), 500, 50, True),  # V4: any total of 50 and up
        (Rules(fifty_rule=False), 0, 550, True),
        (Rules(fifty_rule=False), 0, 450, False),  # V4 leaves the entry as it is
        (Rules(entry=50, fifty_rule=False), 0, 50, True),  # V1 + V4: the smallest entry
    ],
)
def test_banking_is_allowed_as_the_switches_say_r8_v1_v4(rules, banked, total, allowed):
    assert can_bank(banked, total, rules) is allowed
    outcome = bank_outcome((banked, 600), 0, total, rules)
    assert outcome.allowed is allowed
    if not allowed:
        assert outcome.why_not and outcome.scores == (banked, 600)  # nothing changes


@pytest.mark.parametrize(
    ("rules", "scores", "total", "after", "bumped"),
    [
        (SEEDS, (1000, 1500), 500, (1500, 0), (1,)),  # R9: a bump
        (Rules(bump=False), (1000, 1500), 500, (1500, 1500), ()),  # V2: both stay
        (SEEDS, (1000, 1500, 1500), 500, (1500, 0, 0), (1, 2)),
        (Rules(bump=False), (1000, 1500, 1500), 500, (1500, 1500, 1500), ()),
    ],
)
def test_landing_on_a_score_bumps_only_with_bumps_on_r9_v2(rules, scores, total, after, bumped):
    outcome = bank_outcome(scores, 0, total, rules)
    assert (outcome.scores, outcome.bumped) == (after, bumped)


@pytest.mark.parametrize(
    ("rules", "scores", "after", "gift_to", "winner"),
    [
        (SEEDS, (4800, 1000), (4800, 1500), 1, None),  # R9: the overshoot is a gift
        (Rules(overshoot="lost"), (4800, 1000), (4800, 1000), None, None),  # V3: lost
        (SEEDS, (4800, 4500), (4800, 5000), 1, 1),  # a gift onto the target wins
        (Rules(overshoot="lost"), (4800, 4500), (4800, 4500), None, None),
    ],
)
def test_an_overshoot_is_a_gift_or_lost_r9_v3(rules, scores, after, gift_to, winner):
    outcome = bank_outcome(scores, 0, 500, rules)
    assert outcome.overshoot
    assert (outcome.scores, outcome.gift_to, outcome.winner) == (after, gift_to, winner)
    assert outcome.lost is (gift_to is None)
    if rules.overshoot == "lost":
        assert "lost under these rules" in outcome.lost_why


def test_a_shorter_target_is_won_exactly_v5():
    rules = Rules(target=2000)
    assert bank_outcome((1500, 0), 0, 500, rules).winner == 0
    assert bank_outcome((1600, 0), 0, 500, rules).overshoot


def test_banked_scores_may_end_in_50_only_without_the_fifty_rule_r10_v4():
    outcome = bank_outcome((500, 0), 0, 150, Rules(fifty_rule=False))
    assert outcome.scores == (650, 0)
    assert Rules(fifty_rule=False).score_step == 50 and SEEDS.score_step == 100
    game = Game(2, Rules(fifty_rule=False))
    game.state.scores = [650, 0]
    Game.from_json(game.to_json())  # a score ending in 50 is a valid position under V4
    seeds = Game(2)
    seeds.state.scores = [650, 0]
    with pytest.raises(ValueError, match="multiple of 100"):
        Game.from_json(seeds.to_json())  # ... and not under R10


class Banker(Policy):
    """Banks whenever it may, else holds the first legal hold and rolls on."""

    name = "banker"

    def act(self, game: Game, rng: np.random.Generator) -> int:
        legal = game.legal_actions()
        banks = [a for a in legal if game.move(a).banks]
        return banks[-1] if banks else legal[0]


@pytest.mark.parametrize(
    "rules",
    [
        Rules(target=2000, entry=300, bump=False),
        Rules(target=2000, overshoot="lost"),
        Rules(target=2000, entry=250, fifty_rule=False),
        Rules(target=3000, entry=50, bump=False, overshoot="lost", fifty_rule=False),
    ],
    ids=repr,
)
def test_games_under_house_rules_play_to_the_end_and_agree_with_the_batch(rules):
    """Whole games under each switch end with a winner on exactly the target, and every
    bank the engine made is what the batched bank (the vector env's) makes of it."""
    for seed in range(20):
        game = Game(3, rules, seed=seed)
        banks = []

        def record(game, event, banks=banks):
            move = getattr(event, "move", None)
            if move is not None and move.banks:
                banks.append(move.bank)

        play(game, [Banker()] * 3, np.random.default_rng(seed), on_event=record)
        assert game.state.scores[game.state.winner] == rules.target  # R9, V5
        assert banks
        out = bank_batch(
            np.array([_before(b) for b in banks]),
            np.array([b.banker for b in banks]),
            np.array([b.total for b in banks]),
            rules,
        )
        assert [tuple(map(int, row)) for row in out.scores] == [b.scores for b in banks]


def _before(bank) -> tuple[int, ...]:
    """The scores before a bank, rebuilt from its outcome."""
    scores = list(bank.scores)
    if bank.gift_to is not None:
        scores[bank.gift_to] -= bank.total
    elif not bank.overshoot:
        scores[bank.banker] -= bank.total
        for p in bank.bumped:
            scores[p] = scores[bank.banker] + bank.total
    return tuple(scores)
