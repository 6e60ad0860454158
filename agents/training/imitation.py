"""One network that plays as the exact 2-player solution does: imitation of `optimal`
with data aggregation (DAgger), for the ``policy-2p`` agent (issue 44 item 1).

The network is the PPO agents' own (``fivethousand_rl.agents.networks.ActionScoringPolicy``: a state
embedding joined to each legal action's feature row, one score per action), so the
result is an ordinary MaskablePPO checkpoint: it plays, evaluates and exports as
``ppo-2p`` does, a single feed-forward graph from observation and mask to action.

How it learns, read top to bottom in ``train``:

1. **Data.** Games are played in batches (``fivethousand_rl.envs.batch``); at each decision of a
   recorded seat the position is kept as its observation's state part and the feature
   rows of its legal actions, with every legal action's exact win probability from the
   solution (``fivethousand_rl.agents.batched.optimal_values``). A small share of the recorded
   decisions are replaced by a random legal action, so the data also holds the
   positions a slip leads to.
2. **First fit:** games of `optimal` against itself, both seats recorded.
3. **Aggregation rounds:** games of the network against `optimal`, the network's seat
   recorded (labelled by the solution), added to everything seen so far, and the
   network fitted again: it learns the positions its own mistakes lead to.
4. **The loss weighs a mistake by what it costs:** cross-entropy against the softmax of
   the actions' win probabilities at a low temperature: a clear decision is a hard
   target, two actions within a hair of each other share it (either is fine).

Each stage ends with the network's win rate against `optimal` over seeded games.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fivethousand_rl.agents.batched import BatchedOptimalBot, optimal_values
from fivethousand_rl.agents.neural import NumpyScorer
from fivethousand_rl.envs.batch import BatchGames, decide, play_batch, play_games
from fivethousand_rl.envs.encoding import ACTION_FEATURES, ObsSpec
from fivethousand_rl.envs.rules import NUM_ACTIONS, Rules
from fivethousand_rl.envs.vector_env import observe_batch


@dataclass
class ImitationConfig:
    """What one run does (the defaults: the recipe of the shipped ``policy-2p``)."""

    hold: str = "free"  # the hold rule (R5): free, or all (every scoring die)
    first_games: int = 8000  # games of optimal against itself, both seats recorded
    first_deviation: float = 0.15  # share of recorded decisions replaced by a random one
    rounds: int = 3  # aggregation rounds
    round_games: int = 4000  # games of the network against optimal per round
    round_deviation: float = 0.05  # the same share in the aggregation rounds
    first_epochs: int = 8  # passes over the data after the first games
    round_epochs: int = 4  # passes over all the data after each round
    batch_size: int = 1024  # decisions per gradient step
    learning_rate: float = 1e-3  # Adam's
    temperature: float = 0.002  # of the soft targets, in win probability
    state_layers: tuple[int, ...] = (256,)  # the state embedding's hidden layers
    scorer_layers: tuple[int, ...] = (256, 256)  # the action scorer's hidden layers
    eval_games: int = 2000  # against optimal after each stage
    max_turns: int = 1000  # a game's turn limit
    seed: int = 0  # every game, deviation and batch order follows from it
    torch_threads: int = 2  # torch's CPU threads while fitting

    @property
    def rules(self) -> Rules:
        return Rules(hold=self.hold)


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
    position, every legal action's exact value, then `inner`'s action, or with
    probability `deviation` a random legal one."""

    def __init__(self, inner, sol, spec: ObsSpec, data: Decisions, deviation: float) -> None:
        self.inner, self.sol, self.spec, self.data = inner, sol, spec, data
        self.deviation = deviation
        self.name = f"recorded {inner.name}"

    def act_batch(self, games: BatchGames, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        mask = games.legal_mask(idx)
        obs = observe_batch(games, idx, games.current[idx], mask, self.spec)
        self.data.add(obs, mask, optimal_values(self.sol, games, idx))
        actions = decide(self.inner, games, idx, rng)
        slip = rng.random(len(idx)) < self.deviation
        if slip.any():  # a random legal action: the first legal after a random draw
            draw = rng.random((int(slip.sum()), NUM_ACTIONS)) * mask[slip]
            actions[slip] = draw.argmax(axis=1)
        return actions


def record_games(
    n_games: int,
    players: list,
    recorded: list[bool],
    sol,
    spec: ObsSpec,
    data: Decisions,
    deviation: float,
    rng: np.random.Generator,
    max_turns: int,
) -> None:
    """Play `n_games` between `players` (their seats drawn at random per game),
    recording the decisions of the players marked in `recorded`."""
    seats = [
        Recorder(p, sol, spec, data, deviation) if r else p
        for p, r in zip(players, recorded, strict=True)
    ]
    games = BatchGames(n_games, 2, spec.rules)
    seat_policy = np.stack([np.arange(2)] * n_games)
    swap = rng.random(n_games) < 0.5
    seat_policy[swap] = seat_policy[swap, ::-1]
    play_batch(games, np.arange(n_games), seats, seat_policy, rng, max_turns=max_turns)


def win_rate(player, rules: Rules, n_games: int, seed: int, max_turns: int) -> float:
    """`player`'s share of wins against optimal over `n_games` seeded games, each seat
    in half of them (a game cut off by the turn limit is no win)."""
    seat_policy = np.array([[0, 1], [1, 0]] * (n_games // 2) + [[0, 1]] * (n_games % 2))
    results = play_games(
        n_games, [player, BatchedOptimalBot(show_progress=False)], rules,
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
    """A fresh MaskablePPO model of the policy-2p network (an environment only gives
    it its spaces)."""
    import torch as th
    from sb3_contrib import MaskablePPO

    from fivethousand_rl.agents.networks import ActionScoringPolicy, policy_kwargs_for
    from fivethousand_rl.agents.neural import attach_obs_spec
    from fivethousand_rl.envs.gym_env import FiveThousandEnv

    th.manual_seed(config.seed)
    env = FiveThousandEnv(n_players=2, rules=config.rules, obs_encoding="rich")
    kwargs = policy_kwargs_for(
        2, config.rules, state_layers=config.state_layers, scorer_layers=config.scorer_layers
    )
    model = MaskablePPO(
        ActionScoringPolicy, env, policy_kwargs=kwargs, seed=config.seed, device="cpu"
    )
    attach_obs_spec(model, ObsSpec("rich", 2, config.rules))
    return model


def train(
    config: ImitationConfig,
    say: Callable[[str], None] = print,
    on_stage: Callable[[object, list[dict]], None] | None = None,
) -> tuple[object, list[dict]]:
    """Run the stages of the module docstring; the model and each stage's record
    (decisions seen, win rate against optimal, seconds). `on_stage(model, history)`
    follows each stage (the program saves the model there)."""
    import torch as th

    th.set_num_threads(config.torch_threads)
    rng = np.random.default_rng(config.seed)
    rules = config.rules
    spec = ObsSpec("rich", 2, rules)
    optimal = BatchedOptimalBot(show_progress=False)
    sol = optimal.solution(rules)
    model = make_model(config)
    net = model.policy.mlp_extractor
    data = Decisions(net.n_state)
    params = [p for name, p in net.named_parameters() if not name.startswith("critic")]
    optimizer = th.optim.Adam(params, lr=config.learning_rate)
    history: list[dict] = []
    started = time.monotonic()

    def stage(name: str, epochs: int) -> None:
        say(f"{name}: {data.size:,} decisions; fitting {epochs} epochs")
        fit(net, data, config, epochs, rng, optimizer, say)
        player = NumpyScorer.from_policy(model.policy, name="policy", spec=spec)
        rate = win_rate(player, rules, config.eval_games, config.seed + 1, config.max_turns)
        history.append(
            {"stage": name, "decisions": data.size, "win_rate": rate,
             "games": config.eval_games, "seconds": round(time.monotonic() - started, 1)}
        )  # fmt: skip
        say(f"{name}: {rate:.1%} against optimal over {config.eval_games:,} games")
        if on_stage is not None:
            on_stage(model, history)

    record_games(
        config.first_games, [optimal, optimal], [True, True], sol, spec, data,
        config.first_deviation, rng, config.max_turns,
    )  # fmt: skip
    stage("first fit", config.first_epochs)
    for r in range(1, config.rounds + 1):
        player = NumpyScorer.from_policy(model.policy, name="policy", spec=spec)
        record_games(
            config.round_games, [player, optimal], [True, False], sol, spec, data,
            config.round_deviation, rng, config.max_turns,
        )  # fmt: skip
        stage(f"round {r}", config.round_epochs)
    return model, history
