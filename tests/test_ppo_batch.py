"""The trained PPO policies' batched side (act_batch of SB3Policy, Snapshot, NumpyScorer
and ExportedBot) decides exactly as their per-game act does: on 1,000 decisions of real
games each (2 and 4 players), in any order and any chunking, refusing the games act
refuses; and when sampling, from the legal actions with the caller's generator. Their
observations (``fivethousand_rl.envs.vector_env.observe_batch``) are the encoders' to the bit."""

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from fivethousand_rl import export
from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.exported import ExportError
from fivethousand_rl.agents.neural import (
    CheckpointError,
    NumpyScorer,
    SB3Policy,
    batch_actions,
    load_snapshot,
)
from fivethousand_rl.agents.shipped import shipped_model
from fivethousand_rl.envs.batch import NO_ROLL, BatchGames, play_batch
from fivethousand_rl.envs.encoding import ObsSpec
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import NUM_DICE, Rules
from fivethousand_rl.envs.vector_env import observe_batch

SNAPSHOT_2P = Path(__file__).parent / "data" / "ppo_2p_free_seed1" / "snapshots" / "step7753728.npz"
ROWS = 1000  # decisions compared per model
RULES = Rules()  # the shipped models' rules (the seeds')
DRIVERS = ("random", "smart", "threshold:350", "turn-ev")


def state_arrays(games: BatchGames) -> list[np.ndarray]:
    """The arrays a decision reads: banked scores, seat to move, turn total, dice, roll."""
    return [games.scores, games.current, games.turn_total, games.dice_left, games.roll]


def decision_rows(n_players: int, n_games: int, seed: int) -> BatchGames:
    """ROWS decisions drawn from every decision of `n_games` games whose seats are
    played by the scripted bots, drawn per seat (the random one makes long turns,
    overshoots and odd totals), as the rows of one BatchGames, each with its roll pending."""
    games = BatchGames(n_games, n_players, RULES)
    rng = np.random.default_rng(seed)
    seat_policy = rng.integers(0, len(DRIVERS), size=(n_games, n_players))
    seen = []

    def on_roll(idx, seats, before, ids):
        due = idx[games.roll[idx] != NO_ROLL]  # a bust left no decision
        seen.append([a[due].copy() for a in state_arrays(games)])

    drivers = [make_policy(name) for name in DRIVERS]
    play_batch(games, np.arange(n_games), drivers, seat_policy, rng, max_turns=400, on_roll=on_roll)
    columns = [np.concatenate(c) for c in zip(*seen, strict=True)]
    pick = rng.choice(len(columns[0]), size=ROWS, replace=False)
    rows = BatchGames(ROWS, n_players, RULES)
    for array, column in zip(state_arrays(rows), columns, strict=True):
        array[:] = column[pick]
    return rows


@pytest.fixture(scope="module")
def rows() -> dict[int, BatchGames]:
    return {2: decision_rows(2, 60, 0), 4: decision_rows(4, 30, 1)}


def test_the_decisions_cover_the_game(rows):
    """The rows are varied: every number of dice, movers not entered yet (R8's entry)
    and close to the target (R9), long turns; and (4 players) every seat to move."""
    for n, games in rows.items():
        mover = games.scores[np.arange(ROWS), games.current]
        assert set(games.dice_left.tolist()) == set(range(1, NUM_DICE + 1)), n
        assert (mover == 0).sum() > 50 and (mover >= RULES.target - 1000).sum() > 50, n
        assert (games.turn_total >= 1000).sum() > 10, n
        assert set(games.current.tolist()) == set(range(n)), n


@pytest.mark.parametrize("encoding", ["compact", "rich"])
def test_observe_batch_writes_the_encoders_bits_from_any_seat(rows, encoding):
    """What the models read: each row's observation from the seat to move and from the
    next seat (whose rich action block stays empty), bit for bit ``ObsSpec.encode``."""
    for n, games in rows.items():
        spec = ObsSpec(encoding, n, RULES)
        idx = np.arange(0, ROWS, 3)
        mask = games.legal_mask(idx)
        for seat in (games.current[idx], (games.current[idx] + 1) % n):
            got = observe_batch(games, idx, seat, mask, spec)
            assert got.dtype == np.float32 and got.shape == (idx.size, spec.size)
            for row, g, s in zip(got, idx.tolist(), seat.tolist(), strict=True):
                assert row.tobytes() == spec.encode(games.game_at(g), s).tobytes(), (n, g, s)


# The shipped agents, loaded once per test process (a load takes seconds).
shipped = cache(make_policy)


def ppo_4p_scorer() -> NumpyScorer:
    """The shipped 4-player actor as a bare NumpyScorer (a snapshot's network)."""
    sb3 = shipped("ppo-4p")
    return NumpyScorer.from_policy(sb3.model.policy, name="ppo-4p scorer", spec=sb3.spec)


def exported(folder: Path) -> Path:
    out = folder / "ppo-2p.onnx"
    assert export.main([str(shipped_model("ppo-2p")), "-o", str(out)]) == 0
    return out


class Model(NamedTuple):
    players: int
    make: Callable[[Path], Policy]  # given a folder to export into
    # A game its act refuses (RULES.md V1-V5: house rules; other player counts).
    refused: tuple[int, Rules, type[ValueError], str]


MODELS = {
    "ppo-2p": Model(  # SB3Policy
        2,
        lambda folder: shipped("ppo-2p"),
        (3, RULES, CheckpointError, "it was trained for 2 players, this game has 3"),
    ),
    "ppo-4p": Model(
        4,
        lambda folder: shipped("ppo-4p"),
        (4, Rules(fifty_rule=False), CheckpointError, "it was trained under"),  # V4
    ),
    "snapshot-2p": Model(  # Snapshot
        2,
        lambda folder: make_policy(str(SNAPSHOT_2P)),
        (4, RULES, CheckpointError, "step7753728.npz cannot play this game"),
    ),
    "scorer-4p": Model(  # NumpyScorer
        4,
        lambda folder: ppo_4p_scorer(),
        (2, RULES, ValueError, "ppo-4p scorer cannot play this game"),
    ),
    "exported-2p": Model(  # ExportedBot (the export: ~15 s)
        2,
        lambda folder: make_policy(str(exported(folder))),
        (2, Rules(entry=300), ExportError, "ppo-2p.onnx cannot play this game"),  # V1
    ),
}


@pytest.mark.parametrize("name", MODELS)
def test_act_batch_is_act(name, rows, tmp_path):
    """On ROWS decisions of real games, act_batch takes act's action in every one; for
    any rows, in their order, however many forward passes; and it refuses (before any
    work) the games act refuses."""
    case = MODELS[name]
    policy = case.make(tmp_path)
    games, idx = rows[case.players], np.arange(ROWS)
    rng = np.random.default_rng(0)
    got = policy.act_batch(games, idx, rng)
    want = np.array([policy.act(games.game_at(int(g)), rng) for g in idx])
    wrong = np.flatnonzero(got != want)
    assert not wrong.size, [(games.game_at(int(g)).state, got[g], want[g]) for g in wrong[:3]]

    some = rng.permutation(ROWS)[:500]
    assert policy.act_batch(games, some, rng).tolist() == got[some].tolist()
    chunked = batch_actions(games, some, policy.spec, policy.choose, rng, rows=37)
    assert chunked.tolist() == got[some].tolist()
    assert policy.act_batch(games, idx[:0], rng).shape == (0,)

    n_players, rules, error, message = case.refused
    other = BatchGames(3, n_players, rules)
    other.roll_dice(np.arange(3), rng)
    with pytest.raises(error, match=message):
        policy.act_batch(other, np.arange(3), rng)


def test_a_sampling_scorer_draws_as_its_act_does(rows):
    """NumpyScorer not deterministic: one draw of the caller's generator per row, in
    order, the draws act makes: the same actions as act row by row, from the same seed."""
    snapshot = load_snapshot(SNAPSHOT_2P)
    snapshot.scorer.deterministic = False
    games, idx = rows[2], np.arange(ROWS)
    got = snapshot.act_batch(games, idx, np.random.default_rng(5))
    rng = np.random.default_rng(5)
    want = [snapshot.act(games.game_at(int(g)), rng) for g in idx]
    assert got.tolist() == want
    snapshot.scorer.deterministic = True
    assert (got != snapshot.act_batch(games, idx, None)).sum() > 10  # it samples


def test_a_sampling_checkpoint_draws_legal_actions_from_the_callers_generator(rows):
    """SB3Policy not deterministic: torch's generator seeded from the caller's (once per
    chunk of games); legal actions, the same ones from the same seed."""
    policy = SB3Policy(shipped_model("ppo-2p"), deterministic=False)
    games, idx = rows[2], np.arange(ROWS)
    first = policy.act_batch(games, idx, np.random.default_rng(7))
    assert games.are_legal(idx, first).all()
    assert first.tolist() == policy.act_batch(games, idx, np.random.default_rng(7)).tolist()
    policy.deterministic = True
    assert (first != policy.act_batch(games, idx, None)).sum() > 10  # it samples


def test_the_mode_without_the_distribution_objects_is_maskableppos():
    """``masked_mode`` (what a greedy checkpoint plays, batched or not) takes the same
    action as sb3-contrib's masked distribution, exact ties of logits included."""
    import torch
    from sb3_contrib.common.maskable.distributions import MaskableCategoricalDistribution

    from fivethousand_rl.agents.neural import masked_mode

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(50_000, 64, generator=g) * 5
    logits[:500, 1] = logits[:500, 0]  # exact ties: the first wins
    mask = torch.rand(50_000, 64, generator=g) < 0.3
    mask[:, 0] = True
    dist = MaskableCategoricalDistribution(64).proba_distribution(action_logits=logits)
    dist.apply_masking(mask)
    assert torch.equal(masked_mode(logits, mask), dist.get_actions(deterministic=True))
