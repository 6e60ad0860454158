"""The batched engine and vector environment play the same game as ``Game``.

The replay tests record every chance step and decision of the vector environment
(dice and actions, opponents' included), play them again through ``Game`` with the same
dice, and compare masks, observations, rewards, terminations, truncations, scores and
the batched bots' choices with the per-game ones (RULES.md R4-R11)."""

from __future__ import annotations

import itertools

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import fivethousand_rl.envs  # noqa: F401 - registers FiveThousand-v0
from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.batched import (
    BatchedOptimalBot,
    BatchedRandomBot,
    BatchedSmartBot,
    BatchedThresholdBot,
    BatchedTurnEVBot,
    batched,
)
from fivethousand_rl.agents.optimal import OptimalBot
from fivethousand_rl.agents.scripted import SmartBot, ThresholdBot, TurnEVBot
from fivethousand_rl.envs.batch import (
    CODE_TO_ROLL,
    NO_ROLL,
    ROLL_ID,
    ROLLS,
    BatchGames,
    bank_batch,
    decision_tables,
    play_batch,
    play_games,
)
from fivethousand_rl.envs.driver import play
from fivethousand_rl.envs.encoding import ObsSpec
from fivethousand_rl.envs.game import (
    DECIDE,
    OVER,
    Game,
    IllegalMoveError,
    _legal_moves,
    bank_outcome,
)
from fivethousand_rl.envs.rules import ROLL_BY_CODE, Rules
from fivethousand_rl.envs.vector_env import FiveThousandVectorEnv


def make_env(num_envs: int = 8, **kwargs) -> FiveThousandVectorEnv:
    return gym.make_vec(
        "FiveThousand-v0", num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs
    )


# ------------------------------------------------------------------ tables
def test_roll_codes_match_the_engines_dice_stream():
    for n in range(1, 6):
        for code in range(0, 6**5, 7):
            assert ROLLS[CODE_TO_ROLL[n, code]] == ROLL_BY_CODE[n][code % 6**n].dice


@pytest.mark.parametrize(
    "rules",
    [
        Rules(),
        Rules(hold="all"),
        Rules(entry=300),
        Rules(entry=350),  # V1: an entry ending in 50, under the 50 rule
        Rules(entry=250, fifty_rule=False),  # V1, V4
        Rules(hold="all", entry=50, fifty_rule=False),
    ],
    ids=repr,
)
def test_decision_masks_are_the_engines(rules):
    """R5, R8 (V1, V4): the mask of every roll, entered or not, at turn totals far past
    the table's rows, is the engine's own."""
    table = decision_tables(rules)
    rng = np.random.default_rng(0)
    for roll in ROLLS:
        for entered in (0, 1):
            for total in rng.choice(np.arange(0, 4000, 50), size=6, replace=False):
                key = table.key(np.array([ROLL_ID[roll]]), np.array([entered]), np.array([total]))
                want = _legal_moves(roll, rules, bool(entered), int(total)).mask
                assert np.array_equal(table.mask[key[0]], want), (roll, entered, total)
                legal = table.legal[key[0], : table.n_legal[key[0]]]
                assert list(legal) == list(np.flatnonzero(want))


def _bank_cases(n_players: int, rules: Rules, values, totals):
    for scores in itertools.product(values, repeat=n_players):
        for banker, total in itertools.product(range(n_players), totals):
            if bank_outcome(scores, banker, total, rules).allowed:
                yield scores, banker, total


def _check_bank_batch(cases, rules):
    scores = np.array([c[0] for c in cases])
    banker = np.array([c[1] for c in cases])
    total = np.array([c[2] for c in cases])
    out = bank_batch(scores, banker, total, rules)
    for j, (s, b, t) in enumerate(cases):
        want = bank_outcome(s, b, t, rules)
        got = (
            tuple(int(x) for x in out.scores[j]),
            None if out.winner[j] < 0 else int(out.winner[j]),
            bool(out.bumped[j]),
            bool(out.overshoot[j]),
            None if out.gift_to[j] < 0 else int(out.gift_to[j]),
            bool(out.lost[j]),
        )
        assert got == (
            want.scores,
            want.winner,
            bool(want.bumped),
            want.overshoot,
            want.gift_to,
            want.lost,
        ), (s, b, t)


SMALL = dict(target=1200, entry=500)


@pytest.mark.parametrize("n_players", [2, 3])
@pytest.mark.parametrize(
    "rules",
    [
        Rules(**SMALL),
        Rules(**SMALL, bump=False),  # V2
        Rules(**SMALL, overshoot="lost"),  # V3
        Rules(**SMALL, fifty_rule=False),  # V4: scores and totals may end in 50
        Rules(target=1200, entry=250, fifty_rule=False, bump=False, overshoot="lost"),
    ],
    ids=repr,
)
def test_bank_batch_is_bank_outcome_exhaustively(n_players, rules):
    """R9 (win, bumps, overshoot gifts, lost points) and its switches V2-V4 on every
    score combination of a small game."""
    step = rules.score_step
    values = [0, *range(rules.entry + (-rules.entry) % step, rules.target, step)]
    cases = list(_bank_cases(n_players, rules, values, range(step, 1500, step)))
    _check_bank_batch(cases, rules)


@pytest.mark.parametrize("n_players", [4, 6, 8])
def test_bank_batch_is_bank_outcome_on_crowded_tables(n_players):
    """R9 with many players: ties for the gift, several bumped at once."""
    rules = Rules()
    rng = np.random.default_rng(n_players)
    cases = []
    while len(cases) < 3000:
        values = [0, 500, 1000, 4500, 4600, 4800, 4900]
        scores = tuple(int(x) for x in rng.choice(values, n_players))
        banker = int(rng.integers(n_players))
        total = int(rng.choice([100, 200, 400, 500, 1000, 3500, 4500, 5000]))
        if bank_outcome(scores, banker, total, rules).allowed:
            cases.append((scores, banker, total))
    _check_bank_batch(cases, rules)


# ------------------------------------------------------------------ replay
class Recorder:
    """Every env row's events, with the learner's decisions and outcomes in place."""

    def __init__(self, n: int) -> None:
        self.logs: list[list[tuple]] = [[] for _ in range(n)]
        self.deal_at: dict[int, int] = {}

    def __call__(self, kind: str, idx: np.ndarray, values: np.ndarray) -> None:
        for g, v in zip(idx.tolist(), values, strict=True):
            if kind == "deal":
                self.deal_at.setdefault(g, len(self.logs[g]))
                self.logs[g].append(("deal", int(v)))
            elif kind == "roll":
                self.logs[g].append(("roll", tuple(int(d) for d in v if d)))
            else:
                self.logs[g].append(("act", int(v)))

    def outcome(self, g: int, event: tuple) -> None:
        """The step's outcome goes before the next game's deal, if any."""
        at = self.deal_at.get(g, len(self.logs[g]))
        self.logs[g].insert(at, event)


def run_recorded(env, steps: int, seed: int, illegal_every: int = 0):
    rec = Recorder(env.num_envs)
    env.unwrapped.recorder = rec
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for g in range(env.num_envs):
        rec.logs[g].append(("decide", obs[g].copy(), env.unwrapped.action_masks()[g]))
    for t in range(steps):
        mask = env.unwrapped.action_masks()
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in mask])
        if illegal_every and t % illegal_every == 0:
            g = t % env.num_envs
            actions[g] = np.flatnonzero(~mask[g])[0]
        rec.deal_at = {}
        obs, reward, term, trunc, info = env.step(actions)
        done = term | trunc
        for g in range(env.num_envs):
            last = info["final_obs"][g] if done[g] else obs[g]
            fin = info["final_info"] if done[g] else info
            rec.outcome(
                g,
                (
                    "outcome",
                    reward[g],
                    term[g],
                    trunc[g],
                    last.copy(),
                    bool(fin["illegal_action"][g]),
                    int(fin["turns"][g]),
                    int(fin["winner"][g]),
                ),
            )
            rec.logs[g].append(("decide", obs[g].copy(), env.unwrapped.action_masks()[g]))
    return rec.logs


def replay(log, n_players, rules, max_turns, opponents, encoding="compact"):
    """Play a row's events through Game; assert everything the env said. Returns how
    many learner steps, games over and truncations it saw."""
    spec = ObsSpec(encoding, n_players, rules)
    rng = np.random.default_rng(0)
    seen = {"steps": 0, "over": 0, "truncated": 0, "illegal": 0}
    game, seat = None, None
    for event in log:
        kind = event[0]
        if kind == "deal":
            # A game dealt again before the learner's first decision had really ended.
            assert game is None or game.state.phase == OVER or game.state.turns >= max_turns
            game, seat = Game(n_players, rules), event[1]
        elif kind == "roll":
            game.roll(event[1])  # checks the number of dice (R4, R6)
        elif kind == "act":
            s = game.state
            if s.current != seat:  # an opponent: the batched bot chose as its per-game self
                bot = opponents[(s.current - seat) % n_players - 1]
                if bot.name != "random":
                    assert bot.act(game, rng) == event[1], (bot.name, game.to_json())
            game.act(event[1])  # IllegalMoveError if the env let an illegal move through
        elif kind == "decide":
            assert game.state.phase == DECIDE and game.state.current == seat
            assert np.array_equal(event[2], game.action_mask())
            assert np.array_equal(event[1], spec.encode(game, seat))
        else:
            _, reward, term, trunc, last, illegal, turns, winner = event
            s = game.state
            seen["steps"] += 1
            if illegal:
                seen["illegal"] += 1
                assert (reward, term, trunc) == (-1.0, True, False)
            elif s.phase == OVER:
                seen["over"] += 1
                assert (reward, term, trunc) == (1.0 if s.winner == seat else -1.0, True, False)
            else:
                assert not term and trunc == (s.turns >= max_turns) and reward == 0.0
                seen["truncated"] += trunc
            assert (turns, winner) == (s.turns, -1 if s.winner is None else s.winner)
            assert np.array_equal(last, spec.encode(game, seat))  # scores included
            if term or trunc:
                game = None  # the row's next game is dealt next
    return seen


REPLAY_CASES = [
    (2, "free", ["optimal"]),
    (2, "all", ["threshold:300"]),
    (3, "free", ["smart", "turn-ev"]),
    (3, "all", ["random", "optimal"]),
    (8, "free", ["smart", "threshold:300", "turn-ev", "random", "optimal", "smart", "random"]),
    (8, "all", ["turn-ev"] * 7),
]


@pytest.mark.parametrize("n_players, hold, opponents", REPLAY_CASES)
def test_replay_through_game(n_players, hold, opponents):
    """Masks, observations, rewards, terminations, truncations, scores and opponents'
    choices of the vector env, replayed through Game with the same dice."""
    rules = Rules(hold=hold, target=1500)
    max_turns = 6 * n_players
    bots = [make_policy(o) for o in opponents]
    env = make_env(
        12,
        n_players=n_players,
        opponents=bots,
        hold=hold,
        target=1500,
        learner_seat="random",
        max_turns=max_turns,
    )
    logs = run_recorded(env, steps=60, seed=n_players)
    plain = [make_policy(o) for o in opponents]
    seen = {"steps": 0, "over": 0, "truncated": 0, "illegal": 0}
    for log in logs:
        for key, value in replay(log, n_players, rules, max_turns, plain).items():
            seen[key] += value
    assert seen["steps"] == 12 * 60
    assert seen["over"] > 0 and seen["truncated"] > 0


@pytest.mark.parametrize("n_players, hold, opponents", [REPLAY_CASES[i] for i in (0, 3, 4)])
def test_rich_observation_replays_bit_for_bit(n_players, hold, opponents):
    """obs_encoding="rich": every observation (final ones included) equals
    ``ObsSpec("rich", ...).encode`` of the replayed game, bit for bit; with illegal
    actions (the final observation of a game still at its decision)."""
    rules = Rules(hold=hold, target=1500)
    max_turns = 6 * n_players
    env = make_env(
        8,
        n_players=n_players,
        opponents=[make_policy(o) for o in opponents],
        hold=hold,
        target=1500,
        learner_seat="random",
        max_turns=max_turns,
        obs_encoding="rich",
    )
    assert env.observation_space.shape == (8, ObsSpec("rich", n_players, rules).size)
    logs = run_recorded(env, steps=40, seed=n_players, illegal_every=7)
    plain = [make_policy(o) for o in opponents]
    seen = [replay(log, n_players, rules, max_turns, plain, "rich") for log in logs]
    assert sum(s["over"] for s in seen) > 0 and sum(s["illegal"] for s in seen) > 0


# RULES.md V1-V5 on shrunken games: one switch per row, then all of them with R5's "all".
HOUSE_RULES = [
    Rules(target=1500, entry=350),  # V1: an entry ending in 50 (under the 50 rule)
    Rules(target=1500, bump=False),  # V2
    Rules(target=1500, overshoot="lost"),  # V3
    Rules(target=1500, entry=250, fifty_rule=False),  # V4 (and V1)
    Rules(hold="all", target=1000, entry=150, bump=False, overshoot="lost", fifty_rule=False),
]


@pytest.mark.parametrize(
    "encoding, opponents",
    [("compact", ["optimal", "smart", "turn-ev"]), ("rich", ["threshold:300", "random", "smart"])],
)
@pytest.mark.parametrize("rules", HOUSE_RULES, ids=repr)
def test_replay_through_game_under_house_rules(rules, encoding, opponents):
    """V1-V5: the batched games, their masks, observations (compact and rich, bit for
    bit), rewards and ends, and the batched bots' choices (every bot plays any rules),
    replayed through Game under the same rules; with illegal actions."""
    max_turns = 24
    env = make_env(
        8,
        n_players=4,
        opponents=[make_policy(o) for o in opponents],
        rules=rules,
        learner_seat="random",
        max_turns=max_turns,
        obs_encoding=encoding,
    )
    assert env.unwrapped.games.rules == rules
    logs = run_recorded(env, steps=40, seed=31, illegal_every=9)
    plain = [make_policy(o) for o in opponents]
    seen = [replay(log, 4, rules, max_turns, plain, encoding) for log in logs]
    assert sum(s["steps"] for s in seen) == 8 * 40
    assert sum(s["over"] for s in seen) > 0 and sum(s["illegal"] for s in seen) > 0


def test_replay_with_illegal_actions_and_a_per_game_opponent():
    """illegal_action="lose": that row alone ends with -1 and the game unchanged; an
    opponent without a batched side plays one game at a time, the same game."""
    assert not hasattr(SmartBot(), "act_batch")
    with pytest.warns(UserWarning, match="one game at a time, correctly but slowly: smart"):
        env = make_env(6, n_players=3, opponents=[SmartBot(), "threshold:300"], target=1500)
    logs = run_recorded(env, steps=40, seed=3, illegal_every=5)
    rules = Rules(target=1500)
    plain = [SmartBot(), make_policy("threshold:300")]
    seen = [replay(log, 3, rules, 1000, plain) for log in logs]
    assert sum(s["illegal"] for s in seen) == 8


def test_default_game_replays():
    """The full 5000 game, default options."""
    env = make_env(8, n_players=2, opponents=make_policy("threshold:350"))
    logs = run_recorded(env, steps=80, seed=11)
    plain = [make_policy("threshold:350")]
    seen = [replay(log, 2, Rules(), 1000, plain) for log in logs]
    assert sum(s["over"] for s in seen) > 0


# ------------------------------------------------------------------ the interface
def test_make_vec_gives_the_batched_env_with_same_step_autoreset():
    env = make_env(4, n_players=3)
    assert isinstance(env, FiveThousandVectorEnv)
    assert env.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    assert gym.make_vec("FiveThousand-v0", num_envs=2).unwrapped.num_envs == 2  # the default
    obs, info = env.reset(seed=0)
    assert obs.shape == (4, 3 * 3 + 41) and obs.dtype == np.float32
    assert env.observation_space.contains(obs)
    mask = env.action_masks()
    assert mask.shape == (4, 64) and mask.dtype == bool and mask.any(axis=1).all()
    done_seen = False
    for _ in range(200):
        mask = env.action_masks()
        obs, reward, term, trunc, info = env.step(mask.argmax(axis=1))
        assert env.action_masks().any(axis=1).all()  # same-step: always a decision
        if (term | trunc).any():
            done_seen = True
            assert info["_final_obs"].tolist() == (term | trunc).tolist()
            g = int(np.flatnonzero(term | trunc)[0])
            assert info["final_obs"][g].shape == obs[g].shape
            assert info["final_info"]["_winner"][g]
            assert info["turns"][g] == 0 or info["turns"][g] < info["final_info"]["turns"][g]
    assert done_seen


def test_dict_obs_carries_the_mask():
    env = make_env(3, dict_obs=True)
    obs, _ = env.reset(seed=0)
    assert obs["action_mask"].dtype == np.int8
    assert np.array_equal(obs["action_mask"].astype(bool), env.action_masks())
    for _ in range(30):
        obs, _, term, trunc, info = env.step(env.action_masks().argmax(axis=1))
        assert np.array_equal(obs["action_mask"].astype(bool), env.action_masks())


def test_dict_obs_final_observation_is_the_finished_games_last():
    # The dict and array forms play the same games: a finished game's final_obs must be
    # its last observation in both, not the first one of the game that replaces it.
    pair = [make_env(8, dict_obs=True, max_turns=20), make_env(8, max_turns=20)]
    for env in pair:
        env.reset(seed=5)
    ended = 0
    for _ in range(120):
        actions = pair[1].unwrapped.action_masks().argmax(axis=1)
        (d_obs, *_, d_info), (a_obs, *_, a_info) = (env.step(actions) for env in pair)
        assert np.array_equal(d_obs["observation"], a_obs)
        for g in np.flatnonzero(a_info.get("_final_obs", [])):
            final = d_info["final_obs"][g]
            assert np.array_equal(final["observation"], a_info["final_obs"][g])
            assert not np.array_equal(final["observation"], d_obs["observation"][g])
            ended += 1
    assert ended > 8


def test_same_seed_same_trajectories():
    def run(seed):
        env = make_env(16, n_players=3, opponents=["random", "smart"], learner_seat="random")
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(0)
        out = [obs]
        for _ in range(30):
            mask = env.action_masks()
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in mask])
            obs, reward, term, trunc, _ = env.step(actions)
            out += [obs, reward, term, trunc]
        return out

    a, b, c = run(5), run(5), run(6)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))


def test_opponent_pool_draws_per_game():
    env = make_env(64, n_players=2, opponent_pool=[("random", 1.0), ("smart", 1.0)])
    env.reset(seed=0)
    picked = env.unwrapped.seat_policy[:, 1]
    assert len(set(picked.tolist())) == 2


# ------------------------------------------------------------------ bad input (one line)
@pytest.mark.parametrize(
    "actions, message",
    [
        (np.zeros(3, dtype=np.int64), r"shape \(4,\)"),
        (np.zeros((4, 1), dtype=np.int64), r"shape \(4,\)"),
        (np.zeros(4, dtype=float), "integer array"),
        (np.zeros(4, dtype=bool), "integer array"),
        (np.array([0, 64, 0, 0]), "0..63"),
        (np.array([0, 0, -1, 0]), "0..63"),
        ("1", "integer array"),
    ],
)
def test_bad_actions_are_refused_and_change_nothing(actions, message):
    env = make_env(4)
    env.reset(seed=0)
    arrays = {k: v for k, v in vars(env.unwrapped.games).items() if isinstance(v, np.ndarray)}
    before = {k: v.copy() for k, v in arrays.items()}
    with pytest.raises(ValueError, match=message) as e:
        env.step(actions)
    assert "\n" not in str(e.value)
    after = vars(env.unwrapped.games)
    assert all(np.array_equal(v, after[k]) for k, v in before.items())


def test_illegal_action_raise_names_the_game_and_changes_nothing():
    env = make_env(4, illegal_action="raise")
    env.reset(seed=0)
    mask = env.action_masks()
    actions = mask.argmax(axis=1)
    actions[2] = np.flatnonzero(~mask[2])[0]
    scores = env.unwrapped.games.scores.copy()
    rolls = env.unwrapped.games.roll.copy()
    with pytest.raises(IllegalMoveError, match="in game 2 for roll .*; legal: ") as e:
        env.step(actions)
    assert "\n" not in str(e.value)
    assert np.array_equal(rolls, env.unwrapped.games.roll)
    assert np.array_equal(scores, env.unwrapped.games.scores)


def test_illegal_action_lose_ends_only_that_game():
    env = make_env(4, illegal_action="lose")
    env.reset(seed=0)
    mask = env.action_masks()
    actions = mask.argmax(axis=1)
    actions[1] = np.flatnonzero(~mask[1])[0]
    _, reward, term, trunc, info = env.step(actions)
    assert reward[1] == -1.0 and term[1] and not trunc[1]
    assert info["final_info"]["illegal_action"][1]
    assert not info["illegal_action"][1]  # the row already holds the next game
    # The ended game's mask is all 0, as the single env's after an illegal action.
    assert not info["final_info"]["action_mask"][1].any()
    assert np.array_equal(info["action_mask"], env.action_masks())
    assert not info["final_info"]["illegal_action"][[0, 2, 3]].any()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_envs": 0}, "num_envs must be a positive integer"),
        ({"obs_encoding": "full"}, "unknown observation encoding 'full'"),
        ({"render_mode": "ansi"}, "does not render"),
        ({"n_players": 9}, "n_players must be 2..8"),
        ({"opponents": "nobody"}, "unknown bot"),
        ({"illegal_action": "ignore"}, "illegal_action must be one of"),
        ({"learner_seat": 5}, "learner_seat must be"),
    ],
)
def test_bad_options_are_refused_in_one_line(kwargs, message):
    kwargs = {"num_envs": 2, **kwargs}
    with pytest.raises(ValueError, match=message) as e:
        FiveThousandVectorEnv(**kwargs)
    assert "\n" not in str(e.value)


def test_step_before_reset_and_bad_seed():
    env = make_env(2)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match="one integer"):
        env.reset(seed=[1, 2])


# ------------------------------------------------------------------ batched bots
def test_batched_twins():
    assert type(batched(make_policy("threshold:250"))) is BatchedThresholdBot
    assert batched(make_policy("threshold:250")).threshold == 250
    assert type(batched(make_policy("random"))) is BatchedRandomBot
    assert type(batched(make_policy("turn-ev"))) is BatchedTurnEVBot
    assert type(batched(make_policy("smart"))) is BatchedSmartBot
    assert type(make_policy("optimal")) is BatchedOptimalBot

    class Custom(SmartBot):  # a subclass may decide differently: no twin for it
        name = "custom"

    other = Custom()
    assert batched(other) is other


def test_batched_random_is_uniform_over_legal_actions():
    games = BatchGames(6000, 2, Rules())
    games.set_roll(np.arange(6000), np.full(6000, ROLL_ID[(1, 1, 5, 5, 6)]))
    actions = BatchedRandomBot().act_batch(games, np.arange(6000), np.random.default_rng(0))
    legal = np.flatnonzero(games.legal_mask(np.array([0]))[0])
    counts = np.bincount(actions, minlength=64)
    assert set(np.flatnonzero(counts)) == set(legal)
    expected = 6000 / len(legal)
    assert np.all(np.abs(counts[legal] - expected) < 5 * np.sqrt(expected))


def test_play_batch_replays_and_wins_like_the_per_game_driver():
    """Whole games, every seat batched: the events replay through Game, and the win
    rate of the first seat agrees with per-game play within the intervals."""
    rules = Rules()
    names = ["smart", "threshold:350"]
    games = BatchGames(400, 2, rules)
    logs = [[] for _ in range(400)]

    def on_roll(idx, seats, before, ids):
        for g, i in zip(idx.tolist(), ids.tolist(), strict=True):
            logs[g].append(("roll", ROLLS[i]))

    def on_act(idx, actions):
        for g, a in zip(idx.tolist(), actions.tolist(), strict=True):
            logs[g].append(("act", a))

    bots = [make_policy(n) for n in names]
    play_batch(
        games,
        np.arange(400),
        bots,
        np.broadcast_to(np.arange(2), (400, 2)),
        np.random.default_rng(1),
        max_turns=1000,
        on_roll=on_roll,
        on_act=on_act,
    )
    for g in range(0, 400, 20):
        game = Game(2, rules)
        for kind, value in logs[g]:
            game.roll(value) if kind == "roll" else game.act(value)
        assert game.state.winner == games.winner[g] and game.state.scores == list(games.scores[g])
    assert (games.roll == NO_ROLL).all()

    n = 1500
    batch = play_games(n, bots, rules, np.random.default_rng(2))
    rate_batch = np.mean(batch.winner == 0)
    plain = [make_policy(x) for x in names]
    rng = np.random.default_rng(3)
    wins = [play(Game(2, rules, seed=i), plain, rng).state.winner == 0 for i in range(n)]
    rate_game = np.mean(wins)
    assert abs(rate_batch - rate_game) < 4 * np.sqrt(0.25 / n * 2)


@pytest.mark.parametrize(
    "n_players, hold, target", [(2, "free", 5000), (2, "all", 1500), (4, "free", 1500)]
)
def test_batched_bots_choose_as_their_per_game_selves(n_players, hold, target):
    """Every deterministic batched bot, on the positions of random play (table paths
    and full paths alike), picks the per-game bot's action (optimal: on small games,
    whose solution takes no time)."""
    env = make_env(48, n_players=n_players, hold=hold, target=target, learner_seat="random")
    env.reset(seed=1)
    rng = np.random.default_rng(0)
    per_game = {"threshold:350": ThresholdBot(350), "turn-ev": TurnEVBot(), "smart": SmartBot()}
    if target < 5000:
        per_game["optimal"] = OptimalBot()
    pairs = [(make_policy(name), bot) for name, bot in per_game.items()]
    games, idx = env.unwrapped.games, np.arange(48)
    for _ in range(40):
        positions = [games.game_at(int(g)) for g in idx]
        for fast, slow in pairs:
            got = fast.act_batch(games, idx, rng)
            want = [slow.act(game, rng) for game in positions]
            assert got.tolist() == want, fast.name
        env.step(BatchedRandomBot().act_batch(games, idx, rng))
