"""The game in JAX (envs/jax_env.py, issue 45) against the numpy engine: decision by
decision parity (the full run is ``benchmarks/jax_parity.py``), the mask (R5-R8), banking
(R9, V2, V3), explicit chance, the worked example (R12), the turn limit (R11), pgx's
conventions for ended games and illegal actions, and the one-learner view."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from benchmarks.jax_parity import CONFIGS, Config, Mismatch, _compare, run_parity  # noqa: E402
from fivethousand_rl.envs.batch import (  # noqa: E402
    NO_ROLL,
    ROLL_ID,
    ROLLS,
    BatchGames,
    bank_batch,
    decision_tables,
)
from fivethousand_rl.envs.encoding import ObsSpec, encode  # noqa: E402
from fivethousand_rl.envs.game import Game, IllegalMoveError  # noqa: E402
from fivethousand_rl.envs.jax_env import FiveThousandJax, LearnerEnv, draw_roll  # noqa: E402
from fivethousand_rl.envs.rules import BANK_BIT, Rules, action_for  # noqa: E402

SMALL = (
    Config(2),
    Config(5, Rules(hold="all", bump=False, overshoot="lost", fifty_rule=False)),
    Config(8, Rules(target=1500, entry=300), max_turns=24),
)


@pytest.mark.parametrize("config", SMALL, ids=lambda c: c.label())
def test_parity_with_the_numpy_engine(config):
    """R1-R12 and V1-V5: random legal play with shared dice, every field equal after
    every roll and every decision (games replayed through Game as well)."""
    counts = run_parity(config, lanes=64, decisions=3000, seed=7)
    assert counts["decisions"] >= 3000
    assert counts["rolls"] > counts["decisions"]


RICH = (
    Config(2, Rules(target=1000, entry=50, fifty_rule=False)),
    Config(6, Rules(target=1500, entry=300), max_turns=18),
)


@pytest.mark.parametrize("config", RICH, ids=lambda c: c.label())
def test_rich_parity_with_the_numpy_engine(config):
    """The rich observation (ppo-2p's): every action's row of consequences (R8 may bank,
    R9 wins, bumps, gifts and lost overshoots; V1, V4, V5 here) equal to envs.encoding's,
    bit for bit, after every roll and decision of random legal play. Small targets, so
    that games end (and banks win, bump and overshoot) within the test's decisions."""
    counts = run_parity(config, lanes=32, decisions=1500, seed=11, encoding="rich")
    assert counts["decisions"] >= 1500 and counts["games_ended"] > 0


def _game(n: int, rules: Rules, scores, current: int, total: int, roll: tuple[int, ...]) -> Game:
    """A numpy Game at a decision, written from its numbers."""
    game = BatchGames(1, n, rules).game_at(0)
    game.state.scores = list(scores)
    game.state.current, game.state.turn_total = current, total
    game.state.roll, game.state.phase = roll, "decide"
    return game


@pytest.mark.parametrize(
    "rules, scores, mover, total, roll, shown",
    [
        (Rules(), [4700, 4900, 4600], 0, 200, (1, 1, 5), {"WINS", "GIFTS", "GIFT_WINS"}),
        (Rules(), [4000, 4800, 3000], 1, 300, (1, 2, 3), {"GIFTS"}),  # a gift short of 5000
        (Rules(), [4900, 4800, 4700], 1, 300, (1, 2, 3), {"POINTS_LOST"}),  # it would pass
        (Rules(), [4000, 4200, 0], 0, 100, (1, 1, 5), {"BUMPS"}),  # R9
        (Rules(), [4900, 300, 200], 0, 50, (1, 5, 5), {"POINTS_LOST"}),  # nobody entered
        (Rules(), [3000, 0, 600], 0, 900, (1, 4, 6), {"NEED_AT 1000"}),  # the last bin
        (Rules(overshoot="lost"), [4900, 4900, 4800], 2, 100, (1, 5, 5), {"POINTS_LOST"}),  # V3
        (Rules(bump=False), [4900, 4900, 4800], 2, 0, (1, 5, 5), {"no BUMPS"}),  # V2
        (Rules(entry=1000), [0, 900, 1000], 0, 600, (1, 1, 1, 5), {"MAY_BANK"}),  # V1
        (Rules(fifty_rule=False, target=1500), [1000, 1450, 0], 0, 350, (5, 5, 2, 3), {"BUMPS"}),
    ],
)
def test_rich_rows_equal_the_encoder_on_every_bank_outcome(
    rules, scores, mover, total, roll, shown
):
    """R8-R9 with V1-V5 on chosen positions: the rich observation of the player to move
    and of the others (whose action rows are zeros) equal encode_rich bit for bit; each
    position shows the consequences it was chosen for."""
    from fivethousand_rl.envs.encoding import Col, action_features, encode_rich

    roll = tuple(sorted(roll))
    env = FiveThousandJax(3, rules, encoding="rich")
    state = env.from_arrays(scores, mover, total, len(roll), ROLL_ID[roll])
    game = _game(3, rules, scores, mover, total, roll)
    for seat in range(3):
        mine = np.asarray(env.observe(state, seat)).view(np.uint32)
        assert np.array_equal(mine, encode_rich(game, seat).view(np.uint32)), seat
    assert np.array_equal(np.asarray(state.observation), encode_rich(game, mover))
    rows = action_features(game, mover)
    if "NEED_AT 1000" in shown:  # the one-hot's last column: 1000 points still needed
        assert rows[:, Col.NEED_AT + 20].any()
    elif "no BUMPS" in shown:  # banking 100 lands on the others' 4900: no bump under V2
        assert rows[:, Col.WINS].any() and not rows[:, Col.BUMPS].any()
        bumping = _game(3, Rules(), scores, mover, total, roll)
        assert action_features(bumping, mover)[:, Col.BUMPS].any()  # with bumps on
    else:
        assert {c.name for c in Col if rows[:, c].any()} >= shown


def test_the_parity_grid_covers_every_switch():
    """The full run's grid holds 2..8 players, both hold rules (R5), V1-V5 and R11."""
    assert {c.n_players for c in CONFIGS} == set(range(2, 9))
    rules = [c.rules for c in CONFIGS]
    assert {r.hold for r in rules} == {"free", "all"}
    assert len({r.entry for r in rules}) > 2
    assert {r.bump for r in rules} == {True, False}
    assert {r.overshoot for r in rules} == {"gift", "lost"}
    assert {r.fifty_rule for r in rules} == {True, False}
    assert len({r.target for r in rules}) > 2
    assert any(c.max_turns < 100 for c in CONFIGS)


def test_a_difference_is_caught():
    """The comparison is exact: one turn total off by 50 is named."""
    env = FiveThousandJax(2)
    games = BatchGames(3, 2, Rules())
    js = jax.vmap(lambda _: env.new_game())(jnp.arange(3))
    spec = ObsSpec("compact", 2, Rules())
    _compare(js, games, spec, 1000, "here")  # equal: no error
    with pytest.raises(Mismatch, match="turn_total differs here, game 1"):
        _compare(js.replace(turn_total=js.turn_total.at[1].set(50)), games, spec, 1000, "here")


def test_the_parity_command_says_a_difference_in_one_line(monkeypatch, capsys):
    """benchmarks/jax_parity.py: the first difference ends the run, exit 1, one line."""
    from benchmarks import jax_parity

    def differs(config, **_):
        raise Mismatch(f"{config.label()}: turn_total differs after a roll, game 7")

    monkeypatch.setattr(jax_parity, "run_parity", differs)
    assert jax_parity.main(["--decisions", "16"]) == 1
    out, err = capsys.readouterr()
    assert err.startswith("error: 2p ") and err.count("\n") == 1 and "game 7" in err
    assert '"mismatches"' not in out


@pytest.fixture(scope="module")
def every_decision():
    """Every (roll, entered, turn total level) of decision_tables, as JAX states."""

    def build(rules):
        tables = decision_tables(rules)
        keys = np.arange(len(tables.mask))
        level = keys % tables.levels
        entered = (keys // tables.levels) % 2
        roll = keys // (2 * tables.levels)
        env = FiveThousandJax(2, rules)
        scores = np.stack([entered * 1000, np.zeros_like(entered)], axis=1)
        states = jax.jit(jax.vmap(lambda s, r, t: env.from_arrays(s, 0, t, 5, r)))(
            scores, roll, level * 50
        )
        return tables, states, roll

    return build


@pytest.mark.parametrize(
    "rules",
    [Rules(), Rules(hold="all", entry=1000), Rules(fifty_rule=False, entry=50)],
    ids=["default", "hold-all-entry-1000", "fifty-off-entry-50"],
)
def test_mask_equals_the_engines_for_every_decision(every_decision, rules):
    """R5-R8, V1, V4: the mask of every roll, entered or not, at every turn total level
    is fivethousand_rl.envs.game's (decision_tables); no decision on NO_ROLL."""
    tables, states, roll = every_decision(rules)
    mask = np.asarray(states.legal_action_mask)
    live = roll != NO_ROLL
    assert np.array_equal(mask[live], tables.mask[live])
    assert not mask[~live].any()  # a chance node (NO_ROLL): no decision
    assert not np.asarray(states.is_chance)[live].any()


def test_banking_equals_bank_batch():
    """R9 with V2 and V3: bumps, gifts, gift wins, lost overshoots and exact wins, on
    random positions, as envs.batch.bank_batch (itself checked against bank_outcome)."""
    rng = np.random.default_rng(3)
    for rules in (Rules(target=1500, entry=300), Rules(target=1500, bump=False, overshoot="lost")):
        n, p = 4000, 4
        scores = rng.choice(np.arange(0, rules.target, 100), size=(n, p))
        scores[rng.random((n, p)) < 0.2] = 0
        banker = rng.integers(0, p, size=n)
        total = rng.integers(1, 20, size=n) * 100
        env = FiveThousandJax(p, rules)
        out = jax.jit(jax.vmap(env.bank_outcome))(scores, banker, total)
        want = bank_batch(scores, banker, total, rules)
        assert np.array_equal(np.asarray(out.scores), want.scores)
        assert np.array_equal(np.asarray(out.winner), want.winner)
        assert np.array_equal(np.asarray(out.bumped), want.bumped)
        assert np.array_equal(np.asarray(out.overshoot), want.overshoot)
        assert np.array_equal(np.asarray(out.gift_to), want.gift_to)
        if rules.overshoot == "gift":
            assert (want.gift_to >= 0).any() and (want.winner >= 0).any() and want.bumped.any()


def test_chance_probabilities_are_the_engines():
    """R3/R4 chance nodes: chance_probs gives Game.chance_outcomes' exact probability to
    every roll of the dice left, and nothing elsewhere; draw_roll draws those ids."""
    env = FiveThousandJax(2)
    for left in range(1, 6):
        game = Game(2, seed=0)
        game.state.dice_left = left
        state = env.from_arrays([0, 0], 0, 0, left)
        probs = np.asarray(env.chance_probs(state))
        want = np.zeros(NO_ROLL + 1)
        for roll, p in game.chance_outcomes(exact=True):
            want[ROLL_ID[roll]] = float(Fraction(p))
        np.testing.assert_allclose(probs, want, rtol=1e-6, atol=0)
        drawn = jax.vmap(lambda k, n=left: draw_roll(k, n))(
            jax.random.split(jax.random.key(0), 200)
        )
        assert all(len(ROLLS[i]) == left for i in np.asarray(drawn))
    decision = env.from_arrays([0, 0], 0, 0, 5, ROLL_ID[(1, 1, 4, 5, 6)])
    assert float(env.chance_probs(decision).sum()) == 0.0


def test_the_worked_example_plays_as_written():
    """R12: [1,1,5,6,4] is worth 250 and can't be banked; hold [1,1,5], roll [6,4]...
    then [1,1] makes 450, still not bankable; a third ace after two held adds 100."""
    env = FiveThousandJax(2)
    s = env.stochastic_step(env.new_game(), ROLL_ID[(1, 1, 4, 5, 6)])
    mask = np.asarray(s.legal_action_mask)
    assert not mask[BANK_BIT:].any()  # not entered, and 250 ends in 50 (R8)
    s = env.decide(s, action_for((1, 1, 5), (1, 1, 5, 6, 4), bank=False))
    assert bool(s.is_chance) and int(s.turn_total) == 250 and int(s.dice_left) == 2
    s = env.stochastic_step(s, ROLL_ID[(1, 1)])
    assert not np.asarray(s.legal_action_mask)[BANK_BIT:].any()  # 450 < 500
    s = env.decide(s, action_for((1, 1), (1, 1), bank=False))
    assert int(s.turn_total) == 450 and int(s.dice_left) == 5  # hot dice (R6)
    # A third ace rolled after two held aces is one ace: 100, not 1100.
    t = env.from_arrays([0, 0], 0, 200, 3, ROLL_ID[(1, 2, 3)])
    assert int(env.decide(t, action_for((1,), (1, 2, 3), bank=False)).turn_total) == 300


def test_a_bust_ends_the_turn_and_the_next_player_rolls():
    """R3, R4: a bust loses the turn total and passes the dice; resolve rolls on."""
    env = FiveThousandJax(3)
    s = env.from_arrays([600, 0, 0], 0, 300, 2)
    s = env.stochastic_step(s.replace(is_chance=jnp.bool_(True)), ROLL_ID[(2, 3)])
    assert int(s.current_player) == 1 and int(s.turn_total) == 0 and int(s.turns) == 1
    assert bool(s.is_chance) and int(s.dice_left) == 5
    resolved = env.resolve(s, jax.random.key(1))
    assert not bool(resolved.is_chance) and int(resolved.roll) != NO_ROLL


def test_step_is_decide_then_resolve_and_observes_the_mover():
    """The documented key schedule: step(s, a, k) == resolve(decide(s, a), k) with
    decide's rewards; the observation is fivethousand_rl.envs.encoding's for the player to
    move, bit for bit."""
    env = FiveThousandJax(3)
    step, decide, resolve = jax.jit(env.step), jax.jit(env.decide), jax.jit(env.resolve)
    s = env.init(jax.random.key(5))
    for i in range(30):
        a = int(np.flatnonzero(np.asarray(s.legal_action_mask))[i % int(s.legal_action_mask.sum())])
        k = jax.random.key(100 + i)
        nxt = step(s, a, k)
        after = decide(s, a)
        other = resolve(after, k).replace(rewards=after.rewards)
        for x, y in zip(
            jax.tree_util.tree_leaves(nxt), jax.tree_util.tree_leaves(other), strict=True
        ):
            assert np.array_equal(np.asarray(x), np.asarray(y))
        s = nxt
        game = BatchGames(1, 3, Rules()).game_at(0)
        game.state.scores = [int(x) for x in s.scores]
        game.state.current, game.state.turn_total = int(s.current_player), int(s.turn_total)
        game.state.roll, game.state.phase = ROLLS[int(s.roll)], "decide"
        assert np.array_equal(
            np.asarray(s.observation).view(np.uint32),
            encode(game, game.state.current).view(np.uint32),
        )


def test_illegal_action_and_ended_games():
    """An illegal action ends the game: the actor -1, the others 0, mask all True (pgx);
    stepping (or rolling) an ended game changes nothing and pays nothing; R9's exact win
    pays +1/-1."""
    env = FiveThousandJax(3)
    s = env.from_arrays([4900, 300, 0], 0, 0, 1, ROLL_ID[(1,)])
    bad = env.step(s, 5, jax.random.key(0))
    assert bool(bad.terminated) and np.asarray(bad.rewards).tolist() == [-1.0, 0.0, 0.0]
    assert np.asarray(bad.legal_action_mask).all()
    out_of_range = env.step(s, 64, jax.random.key(0))
    assert bool(out_of_range.terminated) and float(out_of_range.rewards[0]) == -1.0
    won = env.step(s, 1 | BANK_BIT, jax.random.key(0))  # 4900 + 100 = 5000 exactly
    assert bool(won.terminated) and int(won.winner) == 0
    assert np.asarray(won.rewards).tolist() == [1.0, -1.0, -1.0]
    assert int(won.current_player) == 1  # the turn passes on a win, as Game does
    again = env.step(won, 0, jax.random.key(1))
    assert np.asarray(again.rewards).tolist() == [0.0, 0.0, 0.0]
    assert int(again.step_count) == int(won.step_count)
    rolled = env.stochastic_step(won, ROLL_ID[(1, 5)])  # no roll due: unchanged, pays 0
    assert np.asarray(rolled.rewards).tolist() == [0.0, 0.0, 0.0] and int(rolled.winner) == 0


def test_the_win_is_paid_once_by_the_decision_that_makes_it():
    """R9's exact win pays +1/-1 on the decision that banks it (decide, as step); after
    that, decide, resolve, step and stochastic_step on the ended game pay 0 and change
    nothing else."""
    env = FiveThousandJax(3)
    s = env.from_arrays([4900, 300, 0], 0, 0, 1, ROLL_ID[(1,)])
    won = env.decide(s, 1 | BANK_BIT)  # 4900 + 100 = 5000 exactly
    assert bool(won.terminated) and np.asarray(won.rewards).tolist() == [1.0, -1.0, -1.0]
    key = jax.random.key(3)
    for after in (
        env.decide(won, 1 | BANK_BIT),
        env.resolve(won, key),
        env.step(won, 1 | BANK_BIT, key),
        env.stochastic_step(won, ROLL_ID[(1,)]),
    ):
        assert np.asarray(after.rewards).tolist() == [0.0, 0.0, 0.0]
        for x, y in zip(
            jax.tree_util.tree_leaves(after.replace(rewards=won.rewards)),
            jax.tree_util.tree_leaves(won),
            strict=True,
        ):
            assert np.array_equal(np.asarray(x), np.asarray(y))


def test_a_roll_must_throw_the_dice_due():
    """R4, R6: a roll throws the dice not held, as Game.roll insists. Outside jit a
    roll id of other dice (or no roll id at all) is refused in one line; ``roll_fits``
    gives the same answer traced, where nothing is checked."""
    env = FiveThousandJax(2)
    fresh = env.new_game()  # five dice due
    held = env.from_arrays([0, 0], 0, 250, 2)  # two dice due
    for state, dice in ((fresh, 5), (held, 2)):
        for bad in (ROLL_ID[(1, 5, 5)], -1, NO_ROLL, NO_ROLL + 7):
            with pytest.raises(IllegalMoveError, match=f"not a roll of the {dice} dice due") as e:
                env.stochastic_step(state, bad)
            assert "\n" not in str(e.value)
        ids = np.arange(-2, NO_ROLL + 3)
        fits = np.asarray(jax.jit(jax.vmap(env.roll_fits, in_axes=(None, 0)))(state, ids))
        want = [0 <= i < NO_ROLL and len(ROLLS[i]) == dice for i in ids]
        assert fits.tolist() == want
        assert np.array_equal(fits[2:-3], np.asarray(env.chance_probs(state))[:NO_ROLL] > 0)
    rolled = env.stochastic_step(held, ROLL_ID[(1, 5)])
    assert int(rolled.roll) == ROLL_ID[(1, 5)] and int(rolled.turn_total) == 250


def test_turn_limit_truncates_at_a_chance_node():
    """R11: after max_turns turns the game is cut off: truncated, not terminated, 0."""
    env = FiveThousandJax(2, max_turns=2)
    s = env.from_arrays([0, 0], 1, 0, 5, NO_ROLL, turns=1)
    s = env.stochastic_step(s.replace(is_chance=jnp.bool_(True)), ROLL_ID[(2, 2, 3, 4, 6)])
    assert bool(s.truncated) and not bool(s.terminated) and not bool(s.is_chance)
    assert np.asarray(s.rewards).tolist() == [0.0, 0.0]
    assert np.asarray(s.legal_action_mask).all()


def test_bad_configuration_is_refused_in_one_line():
    for kwargs, match in (
        ({"n_players": 1}, "n_players"),
        ({"n_players": 2, "max_turns": 1}, "max_turns"),
        ({"n_players": 2, "rules": "default"}, "rules"),
        ({"n_players": 2, "rules": Rules(target=2_000_000)}, "target"),
        ({"n_players": 2, "encoding": "pixels"}, "encoding"),
    ):
        with pytest.raises(ValueError, match=match) as e:
            FiveThousandJax(**kwargs)
        assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="learner_seat"):
        LearnerEnv(FiveThousandJax(2), _last_legal, learner_seat=2)


def _last_legal(state, key):
    """The highest legal action: bank with the most dice held where banking is allowed."""
    return (63 - jnp.argmax(state.legal_action_mask[::-1])).astype(jnp.int32)


def test_learner_env_deals_to_the_learner_and_pays_at_the_end():
    """The FiveThousand-v0 view: every state hands the learner a decision (its seat, a
    live mask); rewards only when a game ends, +1 for a win, -1 for a loss; the next
    deal follows at once; same key, same games."""
    env = LearnerEnv(FiveThousandJax(2, Rules(target=1000, entry=50)), _last_legal)
    n = 32
    reset = jax.jit(jax.vmap(env.reset))
    step = jax.jit(jax.vmap(env.step))
    s = reset(jax.random.split(jax.random.key(0), n))
    rewards, ends = [], 0
    for i in range(60):
        g = s.game
        assert np.array_equal(np.asarray(g.current_player), np.asarray(s.learner_seat))
        assert np.asarray(s.legal_action_mask).any(axis=1).all()
        assert (np.asarray(g.roll) != NO_ROLL).all()
        a = jax.vmap(_last_legal)(s, None)
        seat = np.asarray(s.learner_seat)  # the seat of the game this step may end
        s = step(s, a, jax.random.split(jax.random.key(i + 1), n))
        r = np.asarray(s.reward)
        over = np.asarray(s.terminated)
        assert (r[~over] == 0).all()
        assert np.array_equal(r[over], np.where(np.asarray(s.winner) == seat, 1.0, -1.0)[over])
        rewards.extend(r[over].tolist())
        ends += int(over.sum())
    assert ends > 0 and set(rewards) == {1.0, -1.0}
    again = reset(jax.random.split(jax.random.key(0), n))
    first = reset(jax.random.split(jax.random.key(0), n))
    assert np.array_equal(np.asarray(again.observation), np.asarray(first.observation))


def test_the_speed_benchmark_prints_one_json_line(capsys):
    """Issue 45 item 3: benchmarks/jax_speed.py (here at a toy size) ends with one JSON
    line holding the JAX self-play, JAX learner and numpy vector env rates of one run."""
    from benchmarks import jax_speed

    argv = ["--batches", "8", "--gpu-batches", "8", "--seconds", "0.01", "--scan", "2"]
    assert jax_speed.main(argv) == 0
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    for key in ("jax_steps_per_s", "jax_learner_steps_per_s", "numpy_steps_per_s"):
        assert report[key]["8"] > 0
    ratio = report["jax_steps_per_s"]["8"] / report["numpy_steps_per_s"]["8"]
    assert report["jax_over_numpy"]["8"] == pytest.approx(ratio, rel=1e-3, abs=0.006)  # rounded
    on_cpu = jax.devices()[0].platform == "cpu"
    assert (report["device"] == "cpu") == on_cpu and report["players"] == 2
    assert report["jax_learner_over_numpy"]["8"] > 0
