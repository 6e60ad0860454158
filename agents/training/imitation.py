"""One network that plays as a strong teacher does: imitation with data aggregation
(DAgger), for the ``policy-2p`` agent (issue 44 item 1: the teacher is `optimal`, the
exact 2-player solution) and ``policy-3p``/``-4p``/``-6p`` (issue 55 item 1: the teacher
is the table's shipped planner, at its own table of scripted bots).

The network is the PPO agents' own (``fivethousand_rl.agents.networks.ActionScoringPolicy``: a state
embedding joined to each legal action's feature row, one score per action), so the
result is an ordinary MaskablePPO checkpoint: it plays, evaluates and exports as
``ppo-2p`` does, a single feed-forward graph from observation and mask to action.

How it learns, read top to bottom in ``train``:

1. **Data.** Games are played in batches (``fivethousand_rl.envs.batch``); at each decision of a
   recorded seat the position is kept as its observation's state part and the feature
   rows of its legal actions, with every legal action's win probability by the teacher
   (the exact solution's, ``fivethousand_rl.agents.batched.optimal_values``, or the
   planner's, ``PlannerBot.action_values_batch``). A small share of the recorded
   decisions are replaced by a random legal action, so the data also holds the
   positions a slip leads to.
2. **First fit:** games of the teacher at its table (at 2 players `optimal` against
   itself), every seat the teacher plays recorded.
3. **Aggregation rounds:** games of the network in the teacher's seat at the same table,
   the network's seat recorded (labelled by the teacher), added to everything seen so
   far, and the network fitted again: it learns the positions its own mistakes lead to.
4. **The loss weighs a mistake by what it costs:** cross-entropy against the softmax of
   the actions' win probabilities at a low temperature: a clear decision is a hard
   target, two actions within a hair of each other share it (either is fine).

Seats rotate (whole turn-order rotations: a table planner's values hold for its
opponents in that order). Each stage ends with the network's win rate at the table over
seeded games; the teacher's own, on the same seed, is measured once for comparison.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import numpy as np

from fivethousand_rl.agents.batched import BatchedOptimalBot, optimal_values
from fivethousand_rl.agents.neural import NumpyScorer
from fivethousand_rl.envs.batch import BatchGames, decide, play_batch, play_games
from fivethousand_rl.envs.encoding import ACTION_FEATURES, ObsSpec
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import NUM_ACTIONS, Rules
from fivethousand_rl.envs.vector_env import observe_batch


@dataclass
class ImitationConfig:
    """What one run does (the defaults: the recipe of the shipped ``policy-2p``; the
    other tables' recipes are presets, hyperparams/policy_*p.yaml)."""

    hold: str = "free"  # the hold rule (R5): free, or all (every scoring die)
    players: int = 2  # the table's size
    teacher: str = "optimal"  # optimal (2 players) or a planner's name (planner-3p)
    table: tuple[str, ...] = ()  # the bots after the learner's seat; (): the teacher's own
    first_games: int = 8000  # games of the teacher at its table, its seats recorded
    first_deviation: float = 0.15  # share of recorded decisions replaced by a random one
    rounds: int = 3  # aggregation rounds
    round_games: int = 4000  # games of the network at the table per round
    round_deviation: float = 0.05  # the same share in the aggregation rounds
    first_epochs: int = 8  # passes over the data after the first games
    round_epochs: int = 4  # passes over all the data after each round
    batch_size: int = 1024  # decisions per gradient step
    learning_rate: float = 1e-3  # Adam's
    temperature: float = 0.002  # of the soft targets, in win probability
    state_layers: tuple[int, ...] = (256,)  # the state embedding's hidden layers
    scorer_layers: tuple[int, ...] = (256, 256)  # the action scorer's hidden layers
    eval_games: int = 2000  # at the table after each stage
    max_turns: int = 1000  # a game's turn limit
    seed: int = 0  # every game, deviation and batch order follows from it
    torch_threads: int = 2  # torch's CPU threads while fitting

    @property
    def rules(self) -> Rules:
        return Rules(hold=self.hold)


class Teacher(NamedTuple):
    """Who labels the decisions: the player in the learner's seat (`player`), its win
    probability of every action (`values(games, idx)`: (len(idx), 64), -inf where
    illegal), and the table it plays at (`table`: the players after its seat, in turn
    order, with their names)."""

    player: Policy
    values: Callable[[BatchGames, np.ndarray], np.ndarray]
    table: list[Policy]
    table_names: tuple[str, ...]


def make_teacher(config: ImitationConfig) -> Teacher:
    """The teacher `config` names, at its table: `optimal` (2 players only; its table is
    itself unless `config.table` says), or a planner (its table: `config.table`, else the
    one its value network learned, else ``standard_table``). A one-line ValueError for a
    teacher that gives no action values or does not play this table."""
    from fivethousand_rl.agents import make_policy
    from fivethousand_rl.agents.planner import PlannerBot
    from fivethousand_rl.agents.tournament import standard_table

    rules, n = config.rules, config.players
    if not 2 <= n <= 8:
        raise ValueError(f"players must be 2 to 8 (R1), got {n}")
    if config.teacher == "optimal":
        if n != 2:
            raise ValueError(
                f"optimal is the exact 2-player solution: it teaches no {n}-player table"
            )
        player = BatchedOptimalBot(show_progress=False)
        values = partial(optimal_values, player.solution(rules))
        own: tuple[str, ...] = ("optimal",)
    else:
        player = make_policy(config.teacher)
        if not isinstance(player, PlannerBot):
            raise ValueError(
                f"teacher {config.teacher!r} gives no action values: name optimal or a planner"
            )
        player.check_game(n, rules)
        values = player.action_values_batch
        learned = getattr(getattr(player.value_fn, "spec", None), "table", ())
        own = (tuple(learned) or tuple(standard_table(n))) if n > 2 else (config.teacher,)
    names = tuple(config.table) or own
    if len(names) != n - 1:
        raise ValueError(
            f"a table of {n} players needs {n - 1} bots after the learner, got {names}"
        )
    table = [player if name == config.teacher else make_policy(name) for name in names]
    return Teacher(player, values, table, names)


class Decisions:
    """Recorded decisions, compactly: per decision its state part (n_state,) and the
    rows of its legal actions only (about 5 of 64), each row with its action and exact
    value. Grows by ``add``; read by ``arrays``."""

    def __init__(self, n_state: int) -> None:
        self.n_state, self.size = n_state, 0
        # Per add: the states, the legal rows, their values, the rows per decision.
        self._state, self._rows, self._values, self._counts = [], [], [], []

    def add(self, obs: np.ndarray, mask: np.ndarray, values: np.ndarray) -> None:
        """Keep the decisions of rich observations `obs` (k, size), legal masks (k, 64)
        and action values (k, 64)."""
        d, a = np.nonzero(mask)
        rows = obs[:, self.n_state :].reshape(len(obs), NUM_ACTIONS, ACTION_FEATURES)
        self._state.append(obs[:, : self.n_state].copy())
        self._rows.append(rows[d, a])
        self._values.append(values[d, a].astype(np.float32))
        self._counts.append(mask.sum(axis=1))
        self.size += len(obs)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(states (N, n_state), rows (R, 42), values (R,), first row of each decision
        (N + 1,))."""
        starts = np.concatenate([[0], np.cumsum(np.concatenate(self._counts))])
        return (*map(np.concatenate, (self._state, self._rows, self._values)), starts)


class Recorder:
    """A batched player that records the decisions of the seats it plays: the
    position, every legal action's value by the teacher (`values`), then `inner`'s
    action, or with probability `deviation` a random legal one."""

    def __init__(self, inner, values, spec: ObsSpec, data: Decisions, deviation: float) -> None:
        self.inner, self.values, self.spec, self.data = inner, values, spec, data
        self.deviation = deviation
        self.name = f"recorded {inner.name}"

    def act_batch(self, games: BatchGames, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        mask = games.legal_mask(idx)
        obs = observe_batch(games, idx, games.current[idx], mask, self.spec)
        self.data.add(obs, mask, self.values(games, idx))
        actions = decide(self.inner, games, idx, rng)
        slip = rng.random(len(idx)) < self.deviation
        if slip.any():  # a random legal action: the first legal after a random draw
            draw = rng.random((int(slip.sum()), NUM_ACTIONS)) * mask[slip]
            actions[slip] = draw.argmax(axis=1)
        return actions


def rotations(offsets: np.ndarray, n: int) -> np.ndarray:
    """Seat assignments (len(offsets), n): per game the players' turn order rotated by
    its offset (player p sits at seat (p - offset) mod n), so the players after each
    one are always the same, in the same order."""
    return (np.arange(n)[None, :] + np.asarray(offsets)[:, None]) % n


def record_games(
    n_games: int,
    players: list,
    recorded: list[bool],
    values,
    spec: ObsSpec,
    data: Decisions,
    deviation: float,
    rng: np.random.Generator,
    max_turns: int,
) -> None:
    """Play `n_games` between `players` (in this turn order, rotated at random per
    game), recording the decisions of the players marked in `recorded`, labelled by
    `values` (the teacher's)."""
    seats = [
        Recorder(p, values, spec, data, deviation) if r else p
        for p, r in zip(players, recorded, strict=True)
    ]
    n = len(players)
    games = BatchGames(n_games, n, spec.rules)
    # n - 1 - draw: at 2 players the very draws, and seats, of policy-2p's recorded run.
    offsets = n - 1 - (rng.random(n_games) * n).astype(np.int64)
    play_batch(games, np.arange(n_games), seats, rotations(offsets, n), rng, max_turns=max_turns)


def win_rate(player, table: list, rules: Rules, n_games: int, seed: int, max_turns: int) -> float:
    """`player`'s share of wins at `table` (the players after it, in turn order) over
    `n_games` seeded games, its seat rotating game by game (a game cut off by the turn
    limit is no win)."""
    n = len(table) + 1
    seat_policy = rotations(np.arange(n_games) % n, n)
    results = play_games(
        n_games, [player, *table], rules,
        np.random.default_rng(seed), seat_policy=seat_policy, max_turns=max_turns,
    )  # fmt: skip
    won = results.winner >= 0
    mine = seat_policy[np.arange(n_games), np.maximum(results.winner, 0)] == 0
    return float(np.mean(won & mine))


def fit(
    net,
    data: Decisions,
    config: ImitationConfig,
    epochs: int,
    rng: np.random.Generator,
    optimizer,
    say: Callable[[str], None],
) -> float:
    """Fit `net` (an ActionScoringNet) to `data` for `epochs`; the last epoch's mean
    loss."""
    import torch as th

    states, rows, values, starts = data.arrays()
    states_t, rows_t, values_t = th.from_numpy(states), th.from_numpy(rows), th.from_numpy(values)
    counts = np.diff(starts)
    loss_sum = 0.0
    for epoch in range(epochs):
        order = rng.permutation(len(states))
        loss_sum, batches = 0.0, 0
        for b in range(0, len(order), config.batch_size):
            pick = np.sort(order[b : b + config.batch_size])
            n_rows = counts[pick]
            row_idx = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in pick])
            owner = th.from_numpy(np.repeat(np.arange(len(pick)), n_rows))
            bias = net.state_in(net.state_net(states_t[pick]))
            scores = net.scorer(net.action_in(rows_t[row_idx]) + bias[owner]).squeeze(-1)
            q = values_t[row_idx]
            loss = _soft_cross_entropy(scores, q, owner, len(pick), config.temperature)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss_sum, batches = loss_sum + float(loss.detach()), batches + 1
        say(f"  epoch {epoch + 1}/{epochs}: loss {loss_sum / max(batches, 1):.4f}")
    return loss_sum / max(1, -(-len(states) // config.batch_size))


def _soft_cross_entropy(scores, q, owner, n: int, temperature: float):
    """Cross-entropy of the per-decision softmax of `scores` against the softmax of the
    exact values `q` / `temperature` (rows grouped by `owner`)."""
    import torch as th

    def log_softmax(x):
        top = th.full((n,), -th.inf, dtype=x.dtype).scatter_reduce(0, owner, x, "amax")
        shifted = x - top[owner]
        total = th.zeros(n, dtype=x.dtype).index_add(0, owner, shifted.exp())
        return shifted - total.log()[owner]

    target = log_softmax(q / temperature).exp()
    return -(target * log_softmax(scores)).sum() / n


def make_model(config: ImitationConfig):
    """A fresh MaskablePPO model of the policy-2p network kind for `config.players`
    (an environment only gives it its spaces)."""
    import torch as th
    from sb3_contrib import MaskablePPO

    from fivethousand_rl.agents.networks import ActionScoringPolicy, policy_kwargs_for
    from fivethousand_rl.agents.neural import attach_obs_spec
    from fivethousand_rl.envs.gym_env import FiveThousandEnv

    th.manual_seed(config.seed)
    env = FiveThousandEnv(n_players=config.players, rules=config.rules, obs_encoding="rich")
    kwargs = policy_kwargs_for(
        config.players,
        config.rules,
        state_layers=config.state_layers,
        scorer_layers=config.scorer_layers,
    )
    model = MaskablePPO(
        ActionScoringPolicy, env, policy_kwargs=kwargs, seed=config.seed, device="cpu"
    )
    attach_obs_spec(model, ObsSpec("rich", config.players, config.rules))
    return model


def train(
    config: ImitationConfig,
    say: Callable[[str], None] = print,
    on_stage: Callable[[object, list[dict]], None] | None = None,
) -> tuple[object, list[dict]]:
    """Run the stages of the module docstring; the model and each stage's record
    (decisions seen, win rate at the table, the teacher's there on the same seed,
    seconds). `on_stage(model, history)` follows each stage (the program saves the model
    there)."""
    import torch as th

    th.set_num_threads(config.torch_threads)
    rng = np.random.default_rng(config.seed)
    rules = config.rules
    spec = ObsSpec("rich", config.players, rules)
    teacher = make_teacher(config)
    model = make_model(config)
    net = model.policy.mlp_extractor
    data = Decisions(net.n_state)
    params = [p for name, p in net.named_parameters() if not name.startswith("critic")]
    optimizer = th.optim.Adam(params, lr=config.learning_rate)
    history: list[dict] = []
    started = time.monotonic()
    table = ", ".join(teacher.table_names)
    evaluate = partial(
        win_rate, table=teacher.table, rules=rules, n_games=config.eval_games,
        seed=config.seed + 1, max_turns=config.max_turns,
    )  # fmt: skip
    teacher_rate = evaluate(teacher.player)
    say(f"{config.teacher}: {teacher_rate:.1%} at the table ({table}), {config.eval_games:,} games")

    def stage(name: str, epochs: int) -> None:
        say(f"{name}: {data.size:,} decisions; fitting {epochs} epochs")
        fit(net, data, config, epochs, rng, optimizer, say)
        rate = evaluate(NumpyScorer.from_policy(model.policy, name="policy", spec=spec))
        history.append(
            {"stage": name, "decisions": data.size, "win_rate": rate,
             "teacher_win_rate": teacher_rate, "games": config.eval_games,
             "seconds": round(time.monotonic() - started, 1)}
        )  # fmt: skip
        say(f"{name}: {rate:.1%} at the table ({table}) over {config.eval_games:,} games")
        if on_stage is not None:
            on_stage(model, history)

    recorded = [True] + [p is teacher.player for p in teacher.table]  # the teacher's seats
    record_games(
        config.first_games, [teacher.player, *teacher.table], recorded, teacher.values, spec,
        data, config.first_deviation, rng, config.max_turns,
    )  # fmt: skip
    stage("first fit", config.first_epochs)
    for r in range(1, config.rounds + 1):
        player = NumpyScorer.from_policy(model.policy, name="policy", spec=spec)
        record_games(
            config.round_games, [player, *teacher.table], [True] + [False] * len(teacher.table),
            teacher.values, spec, data, config.round_deviation, rng, config.max_turns,
        )  # fmt: skip
        stage(f"round {r}", config.round_epochs)
    return model, history
