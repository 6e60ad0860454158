"""The bots in JAX (agents/jax_bots.py, issue 45) choose exactly as the numpy bots: on
positions of numpy random play, ``jit(vmap(bot))`` == the batched bot's ``act_batch`` ==
the per-game bot's ``act``, under the default rules and one house-rule set (4 players,
target 3000, entry 1000, no 50 rule: V1, V4, V5), and for turn totals past turn-ev's
table (the full computation, ``BatchedTurnEVBot._act_full``)."""

from __future__ import annotations

import subprocess
import sys
from functools import cache
from typing import NamedTuple

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from fivethousand_rl.agents.batched import (  # noqa: E402
    BatchedRandomBot,
    BatchedThresholdBot,
    BatchedTurnEVBot,
)
from fivethousand_rl.agents.jax_bots import JAX_BOTS, jax_bot, turn_ev_choices, uniform_index  # noqa: E402
from fivethousand_rl.agents.scripted import RandomBot, ThresholdBot, TurnEVBot  # noqa: E402
from fivethousand_rl.envs.batch import NO_ROLL, ROLL_BUST, ROLLS, BatchGames, move_tables  # noqa: E402
from fivethousand_rl.envs.jax_env import FiveThousandJax  # noqa: E402
from fivethousand_rl.envs.rules import BANK_BIT, Rules  # noqa: E402

CONFIGS = {
    "default": (2, Rules()),
    "house": (4, Rules(target=3000, entry=1000, fifty_rule=False)),
    "big": (3, Rules(target=100_000)),  # exact wins with turn totals past 40,000
}
PER_GAME = 200  # positions replayed through the per-game bots, per bot and config


class Positions(NamedTuple):
    """Decision positions as ``BatchGames`` holds them (one row per position)."""

    scores: np.ndarray  # (n, P)
    current: np.ndarray
    turn_total: np.ndarray
    dice_left: np.ndarray
    roll: np.ndarray


class _Feed:
    """A stand-in for numpy's Generator whose ``random`` returns the given numbers in
    order (one per call, or `size` at once), so numpy's bots draw JAX's u = k / 2**24."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = [float(v) for v in values]

    def random(self, size: int | None = None):
        if size is None:
            return self.values.pop(0)
        out, self.values = np.array(self.values[:size]), self.values[size:]
        return out


def _recorded(n_players: int, rules: Rules, want: int = 3000, seed: int = 0) -> Positions:
    """Every decision of numpy random play (``BatchGames`` + ``BatchedRandomBot``) until
    `want` are seen; then a third of them get the mover's score set so that the best
    reading (threshold's hold) lands exactly on the target, and a third so that some
    random legal hold does (turn-ev's exact win), where that score is not negative."""
    games = BatchGames(128, n_players, rules)
    rng = np.random.default_rng(seed)
    bot = BatchedRandomBot()
    parts = []
    while sum(len(p) for p in parts) < want:
        games.reset(np.flatnonzero(games.winner >= 0))
        games.roll_dice(np.flatnonzero(games.roll == NO_ROLL), rng)
        due = np.flatnonzero(games.roll != NO_ROLL)
        parts.append(
            np.column_stack(
                [games.scores[due], games.current[due], games.turn_total[due]]
                + [games.dice_left[due], games.roll[due]]
            )
        )
        games.act(due, bot.act_batch(games, due, rng))
    rows = np.concatenate(parts)
    pos = Positions(rows[:, :n_players].copy(), *rows[:, n_players:].T.copy())
    tables = move_tables(rules.hold)
    n = len(pos.roll)
    lands = np.where(
        np.arange(n) % 3 == 1,
        tables.best_points[pos.roll],
        tables.points[pos.roll, _random_legal_hold(tables.legal[pos.roll], rng)],
    )
    own = rules.target - pos.turn_total - lands
    change = (np.arange(n) % 3 > 0) & (own >= 0)
    pos.scores[np.flatnonzero(change), pos.current[change]] = own[change]
    return pos


def _random_legal_hold(legal: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One legal hold (0..31) per row of `legal` (n, 32), uniformly."""
    keys = np.where(legal, rng.random(legal.shape), -1.0)
    return keys.argmax(axis=1)


def _past_the_table(n_players: int, rules: Rules) -> Positions:
    """Every roll that is a decision (R3: not a bust), entered or not, at turn totals
    around turn-ev's cap (40,000) and far past it, ending in 00 or 50 (V4): the positions
    no recorded game reaches. Where the target allows, the mover's score makes a random
    legal hold land exactly on it (an exact win past the cap)."""
    rolls = np.flatnonzero(~ROLL_BUST[:NO_ROLL])
    totals = [39_900, 39_950, 40_000, 40_050, 40_100, 40_150, 45_050, 123_400, 999_950]
    roll, total, own = (a.ravel() for a in np.meshgrid(rolls, totals, [0, 100, -1]))
    tables = move_tables(rules.hold)
    rng = np.random.default_rng(1)
    winning = (
        rules.target - total - tables.points[roll, _random_legal_hold(tables.legal[roll], rng)]
    )
    own = np.where(own < 0, np.maximum(winning, 0), own)
    current = np.arange(len(roll)) % n_players
    scores = np.zeros((len(roll), n_players), dtype=np.int64)
    scores[np.arange(len(roll)), current] = own
    left = np.array([len(ROLLS[r]) for r in roll])
    return Positions(scores, current, total, left, roll)


def _numpy_games(n_players: int, rules: Rules, pos: Positions) -> BatchGames:
    games = BatchGames(len(pos.roll), n_players, rules)
    games.scores[:] = pos.scores
    games.current[:] = pos.current
    games.turn_total[:] = pos.turn_total
    games.dice_left[:] = pos.dice_left
    games.roll[:] = pos.roll
    return games


@cache
def _setup(config: str, which: str = "recorded"):
    """(game, numpy games, JAX states (batched), positions) of one configuration."""
    n_players, rules = CONFIGS[config]
    pos = _recorded(n_players, rules) if which == "recorded" else _past_the_table(n_players, rules)
    game = FiveThousandJax(n_players, rules)
    states = jax.jit(jax.vmap(game.from_arrays))(*(a.astype(np.int32) for a in pos))
    return game, _numpy_games(n_players, rules, pos), states, pos


def _jax_choices(name: str, game: FiveThousandJax, states, keys=None) -> np.ndarray:
    n = len(states.roll)
    if keys is None:
        keys = jax.random.split(jax.random.key(0), n)
    got = jax.jit(jax.vmap(jax_bot(name, game)))(states, keys)
    assert got.dtype == np.int32 and got.shape == (n,)
    return np.asarray(got).astype(np.int64)


@pytest.mark.parametrize("config", ["default", "house"])
def test_random_matches_numpy_fed_the_same_uniforms(config):
    """random: the JAX bot's pick ((k * n) >> 24 of the legal actions ascending) is the
    numpy bots' legal[int(u * n)] when u = k / 2**24, k = uniform_index(key)."""
    game, games, states, pos = _setup(config)
    idx = np.arange(len(pos.roll))
    assert (np.asarray(states.legal_action_mask) == games.legal_mask(idx)).all()
    keys = jax.random.split(jax.random.key(3), len(idx))
    k = np.asarray(jax.jit(jax.vmap(uniform_index))(keys)).astype(np.int64)
    assert k.min() >= 0 and k.max() < 2**24
    u = k / 2**24
    got = _jax_choices("random", game, states, keys)
    want = BatchedRandomBot().act_batch(games, idx, _Feed(u))
    assert got.tolist() == want.tolist()
    assert games.legal_mask(idx)[idx, got].all()
    # The picks spread over the legal actions: not always the first one.
    n_legal = games.legal_mask(idx).sum(axis=1)
    first = games.legal_mask(idx).argmax(axis=1)
    assert (got != first)[n_legal > 1].mean() > 0.5
    for g in np.random.default_rng(0).choice(idx, PER_GAME, replace=False):
        assert RandomBot().act(games.game_at(int(g)), _Feed(u[g : g + 1])) == got[g]


@pytest.mark.parametrize("config", ["default", "house"])
@pytest.mark.parametrize("name", ["threshold:350", "threshold:1000", "turn-ev"])
def test_deterministic_bots_match_numpy(config, name):
    """threshold:T (R2 best reading; bank when R8 allows and the total reaches T or lands
    on the target, R10) and turn-ev (an exact win first, else the most expected turn
    points): the JAX choice equals the batched and the per-game numpy bots', on recorded
    positions where banking, not banking and exact wins all occur."""
    game, games, states, pos = _setup(config)
    idx = np.arange(len(pos.roll))
    rng = np.random.default_rng(0)
    if name == "turn-ev":
        numpy_bot, per_game = BatchedTurnEVBot(), TurnEVBot()
    else:
        t = int(name.partition(":")[2])
        numpy_bot, per_game = BatchedThresholdBot(t), ThresholdBot(t)
    got = _jax_choices(name, game, states)
    want = numpy_bot.act_batch(games, idx, rng)
    assert got.tolist() == want.tolist()
    assert games.legal_mask(idx)[idx, got].all()
    banks = got >= BANK_BIT
    assert 0.05 < banks.mean() < 0.95
    totals, _ = games.hold_results(idx)
    own = pos.scores[idx, pos.current]
    after = totals[idx, got & (BANK_BIT - 1)]
    wins = banks & (own + after == game.rules.target)
    assert wins.sum() > 20  # exact wins chosen (R10)
    if name != "turn-ev":
        assert (wins & (after < numpy_bot.threshold)).any()  # on the target below T
    for g in rng.choice(idx, PER_GAME, replace=False):
        assert per_game.act(games.game_at(int(g)), rng) == got[g], (name, int(g))


@pytest.mark.parametrize("config", ["default", "house", "big"])
def test_turn_ev_past_its_table(config):
    """turn-ev at turn totals around and past 40,000 (its cap), entered or not (V1),
    ending in 00 or 50 (V4), exact wins where the target allows: the JAX table read at
    level last + (level & 1) equals the numpy bot's full computation (every roll)."""
    game, games, states, pos = _setup(config, "past")
    idx = np.arange(len(pos.roll))
    _, last = turn_ev_choices(game.rules)
    assert last * 50 <= 40_050 < pos.turn_total.max()
    got = _jax_choices("turn-ev", game, states)
    full = BatchedTurnEVBot._act_full(games, idx)
    assert got.tolist() == full.tolist()
    assert got.tolist() == BatchedTurnEVBot().act_batch(games, idx, None).tolist()
    assert games.legal_mask(idx)[idx, got].all()
    # Past the cap a bank beats rolling on wherever R8 allows one; with the 50 rule (V4)
    # some holds may not bank, and a roll that has no other hold is rolled on.
    assert (got >= BANK_BIT).all() != game.rules.fifty_rule
    if config == "big":
        totals, _ = games.hold_results(idx)
        own = pos.scores[idx, pos.current]
        landed = own + totals[idx, got & (BANK_BIT - 1)] == game.rules.target
        assert (landed & (got >= BANK_BIT)).sum() > 50
    rng = np.random.default_rng(0)
    for g in rng.choice(idx, PER_GAME // 2, replace=False):
        assert TurnEVBot().act(games.game_at(int(g)), rng) == got[g]


@pytest.mark.parametrize(
    "name", ["smart", "optimal", "threshold:", "threshold:-5", "random:2", "x.onnx", "", 7]
)
def test_a_name_without_a_jax_bot_is_refused_in_one_line(name):
    game = FiveThousandJax(2)
    with pytest.raises(ValueError) as err:
        jax_bot(name, game)
    message = str(err.value)
    assert "\n" not in message and all(spelled in message for spelled in JAX_BOTS)


def test_names_are_parsed_as_make_policy_parses_them():
    """Spaces and leading zeros as agents.make_policy takes them; equal bots are equal
    (one jit cache entry for both)."""
    game = FiveThousandJax(2)
    assert jax_bot(" threshold:0350 ", game) == jax_bot("threshold:350", game)
    assert jax_bot("threshold:350", game).name == "threshold:350"
    assert jax_bot("turn-ev", game) != jax_bot("turn-ev", FiveThousandJax(3))


def test_agents_does_not_import_jax():
    """The light install: importing agents (and its numpy bots) loads no jax."""
    code = "import sys, fivethousand_rl.agents.batched; sys.exit('jax' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
