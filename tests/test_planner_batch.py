"""The planner's batched side (PlannerBot.act_batch) decides exactly as its per-game
act does, each planner with caches of its own (plans made together in one pass against
plans made one turn start at a time): on the decisions of real games (exact values
under the seeds' rules and house rules, the shipped value networks at full rules, 2 to 4
players), on turns rolled on far past the target, sharing act's plan cache, and
refusing the games act's value function cannot value."""

import json
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.batched import BatchedRandomBot
from fivethousand_rl.agents.planner import PlannerBot
from fivethousand_rl.envs.batch import (
    CODE_TO_ROLL,
    NO_ROLL,
    NUM_CODES,
    ROLL_BUST,
    ROLL_ID,
    ROLLS,
    BatchGames,
    play_batch,
)
from fivethousand_rl.envs.game import Game
from fivethousand_rl.envs.rules import BANK_BIT, Rules
from tests.test_planner import share

SMALL = Rules(target=1000, entry=300)
HOUSE = Rules(target=1000, entry=300, bump=False, fifty_rule=False)  # V2, V4
HOLD_ALL_LOST = Rules(target=1500, hold="all", overshoot="lost")  # V1, V3


def exact(rules: Rules) -> PlannerBot:
    return PlannerBot.exact(rules, show_progress=False)


def decision_rows(
    planner: PlannerBot, n_players: int, rules: Rules, n_games: int, seed: int, rerolls: int = 0
) -> BatchGames:
    """Every decision of `n_games` games (seats played by the planner or by the random
    bot, drawn per seat, so turns also run long, overshoot and bank at odd totals), as
    the rows of one BatchGames, each with its roll pending. With `rerolls`, each comes
    with that many other rolls of its dice as well (busts left out): more decisions of
    the same turn starts, which cost no more plans."""
    games = BatchGames(n_games, n_players, rules)
    rng = np.random.default_rng(seed)
    seat_policy = rng.integers(0, 2, size=(n_games, n_players))
    seen = []

    def on_roll(idx, seats, before, ids):
        d = idx[games.roll[idx] != NO_ROLL]  # a bust left no decision
        seen.append([a[d].copy() for a in state_arrays(games)])

    policies = [planner, BatchedRandomBot()]
    play_batch(games, np.arange(n_games), policies, seat_policy, rng, max_turns=80, on_roll=on_roll)
    columns = [np.repeat(np.concatenate(c), rerolls + 1, axis=0) for c in zip(*seen, strict=True)]
    dice, roll = columns[3], columns[4]
    other = np.arange(len(roll)) % (rerolls + 1) > 0
    roll[other] = CODE_TO_ROLL[dice[other], rng.integers(0, NUM_CODES, size=other.sum())]
    return batch_of(n_players, rules, [c[~ROLL_BUST[roll]] for c in columns])


def state_arrays(games: BatchGames) -> list[np.ndarray]:
    """The arrays a decision reads: banked scores, seat to move, turn total, dice, roll."""
    return [games.scores, games.current, games.turn_total, games.dice_left, games.roll]


def batch_of(n_players: int, rules: Rules, columns: list[np.ndarray]) -> BatchGames:
    """A BatchGames of these rows (``state_arrays``' columns)."""
    games = BatchGames(len(columns[0]), n_players, rules)
    for array, column in zip(state_arrays(games), columns, strict=True):
        array[:] = column
    return games


def assert_batch_is_act(make, games: BatchGames) -> np.ndarray:
    """act_batch on all the rows at once gives each row's act, act by a planner of
    its own (every plan made alone); returns the actions."""
    idx = np.arange(games.n_games)
    rng = np.random.default_rng(0)
    got = make().act_batch(games, idx, rng)
    alone = make()
    want = np.array([alone.act(games.game_at(int(g)), rng) for g in idx])
    wrong = np.flatnonzero(got != want)
    assert not wrong.size, [(games.game_at(int(g)).state, got[g], want[g]) for g in wrong[:3]]
    return got


# (the planner, players, rules, games): at least 2,000 decisions each
CASES = [
    pytest.param(lambda: exact(SMALL), 2, SMALL, 96, id="exact-small"),
    pytest.param(lambda: exact(HOUSE), 2, HOUSE, 110, id="exact-no-bump-no-fifty"),
    pytest.param(lambda: exact(HOLD_ALL_LOST), 2, HOLD_ALL_LOST, 72, id="exact-hold-all-lost"),
    # 4 players: gifts of an overshoot to the lowest entered player (R9)
    pytest.param(lambda: PlannerBot(share, rules=SMALL), 4, SMALL, 48, id="share-4p"),
    # the shipped value nets, each decision with 3 more rolls (plans cost)
    pytest.param(lambda: make_policy("planner-2p"), 2, Rules(), 8, id="planner-2p"),
    pytest.param(lambda: make_policy("planner-3p"), 3, Rules(), 8, id="planner-3p"),
]


@pytest.mark.parametrize("make, n_players, rules, n_games", CASES)
def test_act_batch_is_act_on_the_decisions_of_real_games(make, n_players, rules, n_games):
    """Many turn starts in one call (R8 and R9 read through the plan's ends): every row's
    action is act's, and the rows cover banking, winning and overshooting holds."""
    planner = make()
    with threadpool_limits(1):  # a value net's small products: threads only wait (issue 28)
        rerolls = 3 if rules == Rules() else 0
        games = decision_rows(planner, n_players, rules, n_games, n_players, rerolls)
        actions = assert_batch_is_act(make, games)
    print(f"{games.n_games} decisions")
    idx = np.arange(games.n_games)
    totals, _ = games.hold_results(idx)
    own = games.scores[idx, games.current][:, None]
    may_bank = games.legal_mask(idx)[:, BANK_BIT:]
    assert games.n_games >= 2000
    assert (actions >= BANK_BIT).sum() > 100  # banks chosen
    assert (may_bank & (own + totals == rules.target)).any(axis=1).sum() > 10  # a bank wins
    assert (may_bank & (own + totals > rules.target)).any(axis=1).sum() > 10  # or overshoots


def test_turns_rolled_on_past_the_plans_bank_table():
    """Totals so far past the target that the plan has no bank entry for them (a turn
    that rolled on there: banking is lost or forbidden, R8 R9) are valued as act values
    them, and chosen alike; both hold rules (R5, R6). The values are compared too: there
    rolling on is worth what a bank is and comes first, so actions alone cannot tell."""
    rng = np.random.default_rng(7)
    for rules in (SMALL, Rules(target=1000, entry=300, hold="all", fifty_rule=False)):
        planner = exact(rules)
        levels = len(planner.plan(Game(2, rules)).bank)  # the plan's bank table
        n = 1000
        games = BatchGames(n, 2, rules)
        games.scores[:] = rng.choice([0, 300, 700], size=(n, 2))
        games.turn_total[:] = 50 * rng.integers(levels - 90, levels + 10, size=n)
        games.roll[:] = rng.integers(0, len(ROLLS), size=n)
        games.dice_left[:] = [len(ROLLS[r]) for r in games.roll]
        live = np.flatnonzero(games.legal_mask(np.arange(n)).any(axis=1))  # not busts
        rows = batch_of(2, rules, [a[live] for a in state_arrays(games)])
        assert_batch_is_act(lambda rules=rules: exact(rules), rows)
        idx = np.arange(rows.n_games)
        totals, _ = rows.hold_results(idx)
        legal = rows.legal_mask(idx)
        assert (legal[:, BANK_BIT:] & (totals // 50 >= levels)).any(axis=1).sum() > 100
        for g in idx:
            game = rows.game_at(int(g))
            values = planner.action_values_batch(rows, np.array([g]))[0]
            actions = np.flatnonzero(legal[g])
            batched = dict(zip(actions.tolist(), values[actions].tolist(), strict=True))
            assert batched == planner.action_values(game)  # exactly: the same lookups


def test_act_batch_shares_acts_plan_cache():
    """act_batch plans each turn start once, into the cache act reads."""
    planner = PlannerBot(share, rules=SMALL)
    games = decision_rows(PlannerBot(share, rules=SMALL), 3, SMALL, 8, seed=1)
    idx = np.arange(games.n_games)
    planner.act_batch(games, idx, np.random.default_rng(0))
    info = planner.cache_info()
    starts = {planner.plan(games.game_at(int(g))).scores for g in idx}
    assert planner.cache_info() == info  # act found every plan made
    assert info.plans_made == info.plans_kept == len(starts)


def test_an_empty_batch():
    games = BatchGames(2, 2, SMALL)
    actions = PlannerBot(share).act_batch(games, np.zeros(0, dtype=np.int64), None)
    assert actions.shape == (0,) and actions.dtype == np.int64


def test_act_batch_refuses_games_the_values_do_not_cover():
    planner = exact(SMALL)
    games = BatchGames(4, 2, Rules())
    games.roll[:] = ROLL_ID[(1, 1, 5, 5, 5)]
    with pytest.raises(ValueError, match="values games under"):
        planner.act_batch(games, np.arange(4), np.random.default_rng(0))
    with pytest.raises(ValueError, match="values games of 2 players, not 3"):
        planner.act_batch(BatchGames(4, 3, SMALL), np.arange(4), np.random.default_rng(0))


RECORDED = Path(__file__).resolve().parent / "data" / "planner_actions.npz"
ALONE = 1_000  # positions replayed one game at a time (each plan made alone costs more)


@pytest.mark.parametrize(
    "name", ["planner-2p", "planner-3p", "planner-4p", "planner-6p", "planner-multi"]
)
def test_shipped_planners_choose_the_actions_they_chose_before_batched_planning(name):
    """Their actions on 3,000 positions from real games each, recorded with the planner
    as it was before plans were made in batches (tests/data/make_planner_actions.py):
    the same, all positions in one batch and the first ALONE one game at a time."""
    with np.load(RECORDED) as data:
        states, before = data[f"{name}/states"], data[f"{name}/actions"].astype(np.int64)
    rows = [json.loads(text) for text in states]
    n_players = len(rows[0]["scores"])
    games = BatchGames(len(rows), n_players, Rules())
    games.scores[:] = [row["scores"] for row in rows]
    games.current[:] = [row["current"] for row in rows]
    games.turn_total[:] = [row["turn_total"] for row in rows]
    games.dice_left[:] = [row["dice_left"] for row in rows]
    games.roll[:] = [ROLL_ID[tuple(sorted(row["roll"]))] for row in rows]
    rng = np.random.default_rng(0)
    with threadpool_limits(1):
        batched = make_policy(name).act_batch(games, np.arange(len(rows)), rng)
        alone = make_policy(name)
        one_by_one = [alone.act(games.game_at(g), rng) for g in range(ALONE)]
    assert len(before) == 3_000
    assert batched.tolist() == before.tolist()
    assert one_by_one == before[:ALONE].tolist()


def test_a_small_plan_cache_reuses_its_rows_and_plays_alike():
    """With room for 4 plans, the pool reuses the rows used longest ago (and grows only
    for a call that needs more at once): batches of 3 games at a time, then each game
    alone, choose what a planner with a big cache chooses."""
    games = decision_rows(PlannerBot(share, rules=SMALL), 3, SMALL, 6, seed=2)
    small = PlannerBot(share, rules=SMALL, cache_size=4)
    rng = np.random.default_rng(0)
    idx = np.arange(games.n_games)
    batched = np.concatenate([small.act_batch(games, idx[i : i + 3], rng) for i in idx[::3]])
    alone = [small.act(games.game_at(int(g)), rng) for g in idx]
    want = PlannerBot(share, rules=SMALL).act_batch(games, idx, rng)
    assert batched.tolist() == alone == want.tolist()
    info = small.cache_info()
    assert info.plans_kept <= 4 < info.plans_made


def test_the_value_cache_asks_each_position_once():
    """ValueCache: the same values as the function, each grid position computed once;
    positions off the grid, and tables too big to keep, go straight to the function."""
    from fivethousand_rl.agents.planner import ValueCache

    calls = []

    def counted(positions):
        calls.append(np.array(positions))
        return share(positions)

    cache = ValueCache(counted, SMALL, 3)
    grid = np.array(SMALL.banked_scores())
    asked = np.random.default_rng(0).choice(grid, size=(500, 3))
    np.testing.assert_array_equal(cache(asked), share(asked))
    np.testing.assert_array_equal(cache(asked[::-1]), share(asked[::-1]))
    valued = np.concatenate(calls)
    assert len(valued) == len(np.unique(asked, axis=0)) == cache.positions_valued
    off_grid = np.array([[0, 10, 0]])  # not a banked score: computed, not kept
    np.testing.assert_array_equal(cache(off_grid), share(off_grid))
    assert cache.positions_valued == len(valued)
    too_big = ValueCache(counted, SMALL, 3, max_positions=10)
    np.testing.assert_array_equal(too_big(asked), share(asked))
    assert too_big.positions_valued == 0 and len(calls[-1]) == len(asked)
