"""Long random play and hypothesis properties: invariants hold after every step
(RULES.md R4-R11)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fivethousand_rl.envs.game import DECIDE, OVER, ROLL, Game, state_problem
from fivethousand_rl.envs.rules import BANK_BIT, NUM_DICE, ROLL_INFO, Rules, can_bank


def check_invariants(game: Game, before: dict | None = None) -> None:
    s, rules = game.state, game.rules
    assert state_problem(s, rules) == ""
    # R10: banked scores are 0 or multiples of 100 in entry..target.
    for score in s.scores:
        assert score % 100 == 0 and (score == 0 or rules.entry <= score <= rules.target)
    if s.phase == DECIDE:
        legal = game.legal_actions()
        assert legal, "a decision always has a legal action (R3, R4)"
        assert not ROLL_INFO[s.roll].bust
        assert all(0 <= a < 64 for a in legal)
        assert list(np.flatnonzero(game.action_mask())) == legal
        # Rolling on is always allowed; banking only where R8 allows it.
        for hold in ROLL_INFO[s.roll].holds(rules.hold):
            assert hold.bits in legal
            may_bank = can_bank(s.scores[s.current], s.turn_total + hold.points, rules)
            assert ((hold.bits | BANK_BIT) in legal) == may_bank
    if s.phase == OVER:
        assert s.scores[s.winner] == rules.target
        assert game.legal_actions() == []
    else:
        assert s.winner is None
    if before is not None and s.phase != OVER:
        # Nobody's banked score moves except by banking, bumps and gifts: only the
        # banker rises, or one gift recipient; others can only drop to 0 (bump).
        risen = [
            p for p, (a, b) in enumerate(zip(before["scores"], s.scores, strict=True)) if b > a
        ]
        assert len(risen) <= 1
        for a, b in zip(before["scores"], s.scores, strict=True):
            assert b == a or b == 0 or b > a


def random_decision(game: Game, rng: np.random.Generator) -> int:
    """Random legal play, but banking more often than not so that games end."""
    legal = game.legal_actions()
    banks = [a for a in legal if a & BANK_BIT]
    if banks and rng.random() < 0.6:
        return banks[int(rng.random() * len(banks))]
    return legal[int(rng.random() * len(legal))]


def test_fuzz_100k_random_decisions_all_player_counts_and_variants():
    rng = np.random.default_rng(2024)
    decisions = games = 0
    while decisions < 100_000:
        n_players = int(rng.integers(2, 9))
        hold = ("free", "all")[games % 2]
        game = Game(n_players, Rules(hold=hold), seed=int(rng.integers(2**32)))
        games += 1
        while not game.over and game.state.turns < 400:
            before = game.state.to_dict()
            if game.state.phase == ROLL:
                dice_left = game.state.dice_left
                info = game.roll()
                assert len(info.dice) == dice_left
                if info.bust:  # R4: the turn total is lost, scores unchanged
                    assert game.state.scores == before["scores"]
                    assert game.state.turn_total == 0 and game.state.dice_left == NUM_DICE
            else:
                action = random_decision(game, rng)
                game.act(action)
                decisions += 1
                if not action & BANK_BIT:  # rolling on keeps the turn and adds points
                    assert game.state.current == before["current"]
                    assert game.state.turn_total > before["turn_total"]
            check_invariants(game, before)
    assert games > 100


@settings(max_examples=200, deadline=None)
@given(
    n_players=st.integers(2, 8),
    hold=st.sampled_from(["free", "all"]),
    seed=st.integers(0, 2**32 - 1),
    choices=st.lists(st.integers(0, 10**6), min_size=1, max_size=300),
)
def test_any_sequence_of_legal_choices_keeps_the_invariants(n_players, hold, seed, choices):
    game = Game(n_players, Rules(hold=hold), seed=seed)
    for choice in choices:
        if game.over:
            break
        while game.state.phase == ROLL:
            game.roll()
        if game.over:
            break
        legal = game.legal_actions()
        game.act(legal[choice % len(legal)])
        check_invariants(game)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_players=st.integers(2, 8))
def test_json_round_trip_anywhere(seed, n_players):
    game = Game(n_players, seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(int(rng.integers(1, 200))):
        if game.over:
            break
        if game.state.phase == ROLL:
            game.roll()
        else:
            game.act(random_decision(game, rng))
    copy = Game.from_json(game.to_json())
    assert copy.state == game.state
    assert copy.legal_actions() == game.legal_actions()


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_dice_stream_is_uniform(n):
    """The fast dice stream draws each sorted roll with its exact probability."""
    from fivethousand_rl.envs.rules import roll_probabilities

    game = Game(2, seed=n)
    draws = 60_000
    counts: dict = {}
    for _ in range(draws):
        roll = game._dice.draw(n).dice
        counts[roll] = counts.get(roll, 0) + 1
    # Chi-square goodness of fit against the exact distribution.
    chi2 = sum((counts.get(r, 0) - p * draws) ** 2 / (p * draws) for r, p in roll_probabilities(n))
    dof = len(roll_probabilities(n)) - 1
    assert chi2 < dof + 6 * (2 * dof) ** 0.5  # ~6 sigma
