"""PPO end to end in JAX (issue 45), PureJaxRL style: the game (``envs.jax_env``), the
rollout, GAE and the minibatch updates are one jitted function, so the whole loop runs
inside XLA; a Python loop calls it chunk by chunk for progress lines and checkpoints.

One file, plain arrays: the networks are lists of ``(W, b)`` layers (orthogonal init, as
PureJaxRL), no flax or distrax. The actor (``Actor``) is an MLP on the compact
observation (``network="mlp"``) or ppo-2p's action-scoring network on the rich one
(``network="action-scoring"``: one small network scores each action from its row of
consequences); the critic is an MLP on the state part of the observation. The actor's 64
logits are masked as the exported bots mask them (illegal logits ->
``fivethousand_rl.agents.exported.MASKED_LOGIT``), the log-probabilities and entropy come from
``log_softmax`` of the masked logits, the optimizer is optax's (global-norm clipping,
Adam with a linear decay of the step size).

The learner plays ``envs.jax_env.LearnerEnv``: one seat drawn at random each deal, the
other seats played by an *opponent*; each environment lane has one opponent for the
whole run, the lanes shared out by the weights of ``JaxPPOConfig.opponents``
("name@weight"; a per-game mix, with fixed proportions):

- ``self``: the learner's current parameters (the ones being trained, traced inside the
  jitted update), reading ``state.observation`` (the observation of the player to move)
  and ``state.legal_action_mask``; it samples from its masked softmax
  (``self_play="sample"``, as the learner does while it collects) or plays its most
  probable action (``self_play="greedy"``, as the exported bot will);
- a JAX bot of ``fivethousand_rl.agents.jax_bots`` (``random``, ``threshold:T``, ``turn-ev``).

The trained actor is exported as an ONNX graph (MatMul / Add / Tanh or Relu, and Slice /
Reshape / Unsqueeze for the action-scoring actor) with the metadata of the project's
"ppo" exported bots (``fivethousand_rl.agents.exported``: the observation spec, action encoding,
masking, provenance), so ``python evaluate.py RUN/model.onnx optimal`` and
``fivethousand_rl.agents.best_response`` measure it as they measure ppo-2p; its greedy choice
(``greedy_actions``) is ``fivethousand_rl.agents.exported.masked_choices`` of the same logits.

Checkpoints are plain ``.npz`` files (parameters, optimizer state, the environments'
states, the key, counters and the config as JSON; never pickle): a run stopped after any
chunk resumes where it stopped, exactly.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from fivethousand_rl.agents.base import atomic_write
from fivethousand_rl.agents.exported import MASKED_LOGIT, ExportedBot
from fivethousand_rl.agents.exporting import actor_graph, ppo_metadata, provenance, write_aside
from fivethousand_rl.agents.jax_bots import jax_bot
from fivethousand_rl.agents.training.config import (
    FRACTION,
    NOT_NEGATIVE,
    POSITIVE,
    GameRules,
    PPOSettings,
    check_fields,
    parse_opponents,
)
from fivethousand_rl.envs.encoding import ACTION_FEATURES, Col
from fivethousand_rl.envs.game import check_players
from fivethousand_rl.envs.jax_env import FiveThousandJax, LearnerEnv, LearnerState, State
from fivethousand_rl.envs.rules import NUM_ACTIONS

ACTIVATIONS = {"tanh": jnp.tanh, "relu": jax.nn.relu}
SELF_PLAY_MODES = ("sample", "greedy")
NETWORKS = ("mlp", "action-scoring")
SELF = "self"
CHECKPOINT_FORMAT = "fivethousand-rl jax ppo checkpoint"
CHECKPOINT_VERSION = 1
MASKED = np.float32(MASKED_LOGIT)

Params = dict[str, list[tuple[jax.Array, jax.Array]]]
# JaxPPOConfig's checks (``check_fields``, as the other trainers' configs).
WHOLE = ("a positive integer", lambda v: isinstance(v, int) and not isinstance(v, bool) and v > 0)
JAX_BOUNDS = {
    **dict.fromkeys(("num_envs", "num_steps", "total_steps", "update_epochs"), WHOLE),
    **dict.fromkeys(("num_minibatches", "chunk_updates", "max_turns"), WHOLE),
    **dict.fromkeys(("lr", "final_lr", "max_grad_norm", "clip"), POSITIVE),
    **dict.fromkeys(("gamma", "gae_lambda"), FRACTION),
    **dict.fromkeys(("ent_coef", "vf_coef", "time_limit"), NOT_NEGATIVE),
}
JAX_CHOICES = {"activation": ACTIVATIONS, "network": NETWORKS, "self_play": SELF_PLAY_MODES}
JAX_LAYERS = ("actor_layers", "state_layers", "scorer_layers", "critic_layers")


# ------------------------------------------------------------------ config
@dataclass
class JaxPPOConfig(PPOSettings, GameRules):
    """Every setting of a JAX PPO run (saved as config.json and inside each checkpoint);
    each field is a flag of train_jax.py, its docstring the --help text. The rules first,
    then the PPO settings the trainers share (``agents.training.config``)."""

    seed: int = 0
    """Seed of everything: the network, the deals, the dice, the sampling."""
    n_players: int = 2
    """Players per game, 2 to 8; the learner's seat is drawn at random each deal."""
    max_turns: int = 1000
    """Turn limit per game (a cut-off game pays 0, and ends the episode)."""
    opponents: list[str] = field(default_factory=lambda: ["self@3", "turn-ev@1"])
    """Who plays the other seats, "name@weight" (weight 1 if left out): "self" (the
    learner's current network) or a JAX bot (random, threshold:T, turn-ev). The
    environment lanes are shared out by weight, each lane keeping its opponent."""
    self_play: str = "sample"
    """How "self" chooses: "sample" from its masked softmax, or "greedy" (its most
    probable action)."""
    num_envs: int = 256
    """Games played side by side (the vmapped environment lanes)."""
    num_steps: int = 64
    """Learner decisions per lane per update (the rollout length)."""
    total_steps: int = 6_500_000
    """Learner decisions to train for (the step size decays linearly over them); the
    action-scoring actor trains at about 5,000 decisions/s on 2 idle cores, so the
    default takes about 22 minutes there (the "mlp" actor about 15,000/s)."""
    time_limit: float = 0.0
    """Stop after the chunk that passes this many minutes (0: no limit); the step size
    still follows total_steps, so a run cut short ends before its decay does."""
    lr: float = 1e-3
    """Adam step size at the start (1e-3 learned faster than 3e-4 in 3-minute probes)."""
    final_lr: float = 1e-5
    """Step size reached at total_steps (linear decay)."""
    clip: float = 0.2
    """PPO clip range (the policy ratio, and the value function's change)."""
    ent_coef: float = 0.005  # in PPOSettings' place, with this trainer's default
    update_epochs: int = 4
    """Passes over each rollout."""
    num_minibatches: int = 8
    """Shuffled minibatches per pass (num_envs x num_steps must be a multiple)."""
    network: str = "action-scoring"
    """The actor: "action-scoring" (one small network scoring every action from its row
    of the rich observation, as ppo-2p's) or "mlp" (an MLP on the compact observation);
    ``Actor``."""
    actor_layers: list[int] = field(default_factory=lambda: [256, 256])
    """Hidden layers of the "mlp" actor."""
    state_layers: list[int] = field(default_factory=lambda: [128, 64])
    """The "action-scoring" actor: layers of the state's embedding."""
    scorer_layers: list[int] = field(default_factory=lambda: [64, 64])
    """The "action-scoring" actor: hidden layers of the network scoring each action."""
    critic_layers: list[int] = field(default_factory=lambda: [256, 256])
    """Hidden layers of the critic (it reads the state part of the observation)."""
    activation: str = "relu"
    """Hidden activation: "relu" or "tanh"."""
    chunk_updates: int = 8
    """Updates per jitted chunk: a progress line and a checkpoint after each."""

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def num_updates(self) -> int:
        return max(1, self.total_steps // self.batch_size)

    def check(self) -> JaxPPOConfig:
        """This config, or a one-line ValueError naming the setting at fault."""
        self.rules  # noqa: B018 (the rules' own checks)
        check_players(self.n_players)
        check_fields(self, JAX_BOUNDS, JAX_CHOICES, JAX_LAYERS)
        if self.max_turns < self.n_players:
            raise ValueError(f"max_turns must be at least n_players, got {self.max_turns}")
        if self.batch_size % self.num_minibatches:
            raise ValueError(
                f"num_envs x num_steps ({self.batch_size}) must be a multiple of "
                f"num_minibatches ({self.num_minibatches})"
            )
        game = self.game()
        for name in set(lane_opponents(self.opponents, self.num_envs)[0]) - {SELF}:
            jax_bot(name, game)  # one line for an unknown bot
        return self

    def game(self) -> FiveThousandJax:
        """The JAX game of this run, with the observation its network reads."""
        encoding = "rich" if self.network == "action-scoring" else "compact"
        return FiveThousandJax(self.n_players, self.rules, self.max_turns, encoding)

    @classmethod
    def from_dict(cls, values: dict) -> JaxPPOConfig:
        """The config a config.json (or a checkpoint) recorded; unknown keys refused."""
        if unknown := sorted(set(values) - {f.name for f in dataclasses.fields(cls)}):
            raise ValueError(f"unknown setting(s) in the saved config: {', '.join(unknown)}")
        if "network" not in values:
            values = {**values, "network": "mlp"}  # saved before there was a choice
        return cls(**values).check()


def lane_opponents(specs: list[str], num_envs: int) -> tuple[list[str], np.ndarray]:
    """The distinct opponents and each lane's index into them: the lanes shared out in
    proportion to the weights (largest remainders), each opponent at least one lane."""
    pairs = parse_opponents(specs, known=str)  # the names: checked against the game's bots
    if len(dict(pairs)) != len(pairs):
        raise ValueError("opponents: each name at most once")
    weights = np.array([w for _, w in pairs])
    share = weights / weights.sum() * num_envs
    counts = np.floor(share).astype(int)
    for i in np.argsort(-(share - counts), kind="stable")[: num_envs - counts.sum()]:
        counts[i] += 1
    if (counts == 0).any():
        raise ValueError(f"opponents: {num_envs} lanes cannot give each of {len(pairs)} one")
    return [n for n, _ in pairs], np.repeat(np.arange(len(pairs)), counts).astype(np.int32)


# ------------------------------------------------------------------ the network
def init_mlp(key: jax.Array, sizes: list[int], last_scale: float) -> list:
    """Orthogonal weights (scale sqrt(2) for hidden layers, `last_scale` for the
    output), zero biases: PureJaxRL's initialisation."""
    layers = []
    keys = jax.random.split(key, len(sizes) - 1)
    for i, (k, n_in, n_out) in enumerate(zip(keys, sizes[:-1], sizes[1:], strict=True)):
        scale = last_scale if i == len(sizes) - 2 else math.sqrt(2)
        w = jax.nn.initializers.orthogonal(scale)(k, (n_in, n_out), jnp.float32)
        layers.append((w, jnp.zeros(n_out, jnp.float32)))
    return layers


def mlp(layers: list, x: jax.Array, activation: str, last_activation: bool = False) -> jax.Array:
    act = ACTIVATIONS[activation]
    for w, b in layers[:-1]:
        x = act(x @ w + b)
    w, b = layers[-1]
    x = x @ w + b
    return act(x) if last_activation else x


@dataclass(frozen=True)
class Actor:
    """The actor's architecture (``JaxPPOConfig.network``), for the game it reads:

    - "mlp": the compact observation through ``actor_layers`` to the 64 logits;
    - "action-scoring": ``fivethousand_rl.agents.networks.ActionScoringNet`` in JAX, on the rich
      observation (its first `n_state` numbers are the state, then one row of
      ``ACTION_FEATURES`` consequences per action): the state through
      ``state_layers`` to an embedding; every action's logit is the same small network
      (``scorer_layers``) of its row joined to that embedding, so what the actor learns
      of one roll carries over to every roll that leads to the same place. As there, the
      join layer is split in two (the rows' part, the state's part, computed once per
      observation); unlike torch's, both parts carry a bias (the same functions) and
      start as one orthogonal matrix.
    """

    network: str
    activation: str
    n_state: int  # where the action rows start (the whole observation for "mlp")
    max_legal: int  # the most legal actions a decision can have under these rules

    def init(self, key: jax.Array, config: JaxPPOConfig) -> Params:
        k_actor, k_critic, k_state, k_in = jax.random.split(key, 4)
        critic = init_mlp(k_critic, [self.n_state, *config.critic_layers, 1], 1.0)
        if self.network == "mlp":
            actor = init_mlp(k_actor, [self.n_state, *config.actor_layers, NUM_ACTIONS], 0.01)
            return {"actor": actor, "critic": critic}
        width = config.scorer_layers[0]
        state = init_mlp(k_state, [self.n_state, *config.state_layers], math.sqrt(2))
        joined = init_mlp(k_in, [ACTION_FEATURES + config.state_layers[-1], width], math.sqrt(2))
        ((w, b),) = joined  # the join layer, split: action rows' part, the state's part
        return {
            "state": state,
            "action_in": [(w[:ACTION_FEATURES], b)],
            "state_in": [(w[ACTION_FEATURES:], jnp.zeros(width, jnp.float32))],
            "scorer": init_mlp(k_actor, [*config.scorer_layers, 1], 0.01),
            "critic": critic,
        }

    def value(self, params: Params, obs: jax.Array) -> jax.Array:
        """The critic's value of each observation (it reads the state part only)."""
        return mlp(params["critic"], obs[..., : self.n_state], self.activation)[..., 0]

    def logits(self, params: Params, obs: jax.Array) -> jax.Array:
        """The 64 logits of each observation (batch, D) -> (batch, 64); the action-scoring
        actor scores only each row's legal actions (at most ``max_legal``, ~1/3 of
        the work), leaving the others' logits 0: they are masked anyway."""
        if self.network == "mlp":
            return mlp(params["actor"], obs, self.activation)
        rows = obs[:, self.n_state :].reshape(-1, NUM_ACTIONS, ACTION_FEATURES)
        legal = partial(jnp.nonzero, size=self.max_legal, fill_value=NUM_ACTIONS)
        index = jax.vmap(lambda r: legal(r[:, Col.LEGAL] > 0.5)[0])(rows)  # NUM_ACTIONS: none
        picked = jnp.take_along_axis(rows, jnp.minimum(index, NUM_ACTIONS - 1)[..., None], axis=1)
        scores = self._score(params, obs, picked)
        out = jnp.zeros((rows.shape[0], NUM_ACTIONS + 1), jnp.float32)
        out = jax.vmap(lambda o, i, x: o.at[i].set(x))(out, index, scores)
        return out[:, :NUM_ACTIONS]

    def every_logit(self, params: Params, obs: jax.Array) -> jax.Array:
        """Every action's logit, legal or not (``logits`` and the exported graph equal it
        on the legal actions)."""
        if self.network == "mlp":
            return self.logits(params, obs)
        rows = obs[:, self.n_state :].reshape(-1, NUM_ACTIONS, ACTION_FEATURES)
        return self._score(params, obs, rows)

    def _score(self, params: Params, obs: jax.Array, rows: jax.Array) -> jax.Array:
        """The logit of each of `rows` (batch, k, ACTION_FEATURES) of each observation."""
        act = ACTIVATIONS[self.activation]
        embedding = mlp(params["state"], obs[:, : self.n_state], self.activation, True)
        ((w_s, b_s),) = params["state_in"]
        ((w_a, b_a),) = params["action_in"]
        joined = act(rows @ w_a + b_a + (embedding @ w_s + b_s)[:, None, :])
        return mlp(params["scorer"], joined, self.activation)[..., 0]


def actor_for(config: JaxPPOConfig, game: FiveThousandJax) -> Actor:
    """The actor of `config` on `game` (whose observation it reads)."""
    spec = game.spec
    n_state = spec.slices["actions"].start if spec.encoding == "rich" else spec.size
    max_legal = 2 * int(game.tables.move_legal.sum(axis=1).max())  # each hold, bank or not
    return Actor(config.network, config.activation, n_state, max_legal)


def masked_logits(actor: Actor, params: Params, obs: jax.Array, mask: jax.Array) -> jax.Array:
    """The actor's logits with every illegal action's replaced by MASKED_LOGIT."""
    return jnp.where(mask, actor.logits(params, obs), MASKED)


def greedy_actions(logits: jax.Array) -> jax.Array:
    """The most probable action of masked logits, the first of equals, computed as
    ``agents.exported.masked_choices`` computes it (a float32 softmax, then argmax)."""
    e = jnp.exp(logits - logits.max(axis=-1, keepdims=True))
    return jnp.argmax(e / e.sum(axis=-1, keepdims=True), axis=-1).astype(jnp.int32)


def greedy_policy(params: Params, actor: Actor) -> Callable:
    """(obs (B, D), mask (B, 64)) -> actions (B,): the exported bot's choice, jitted;
    ``fivethousand_rl.agents.from_function`` makes it a player of the numpy engine."""

    @jax.jit
    def act(obs: jax.Array, mask: jax.Array) -> jax.Array:
        return greedy_actions(masked_logits(actor, params, obs, mask))

    def fn(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return np.asarray(act(jnp.asarray(obs, jnp.float32), jnp.asarray(mask, bool)))

    return fn


# ------------------------------------------------------------------ opponents
def self_policy(params: Params, actor: Actor, mode: str) -> Callable:
    """The learner's network as an opponent: it reads the observation of the player to
    move and samples (or takes the most probable action)."""

    def act(state: State, key: jax.Array) -> jax.Array:
        obs, mask = state.observation[None], state.legal_action_mask[None]
        logits = masked_logits(actor, params, obs, mask)[0]
        if mode == "greedy":
            return greedy_actions(logits)
        return jax.random.categorical(key, logits).astype(jnp.int32)

    return act


# ------------------------------------------------------------------ training
class Transition(NamedTuple):
    done: jax.Array
    action: jax.Array
    value: jax.Array
    reward: jax.Array
    log_prob: jax.Array
    obs: jax.Array
    mask: jax.Array


class RunnerState(NamedTuple):
    params: Params
    opt_state: Any
    env_state: LearnerState
    key: jax.Array
    update: jax.Array  # int32: updates done


@dataclass(frozen=True)
class Trainer:
    """The jitted pieces of one config (``make_train``)."""

    config: JaxPPOConfig
    game: FiveThousandJax
    init: Callable[[jax.Array], RunnerState]  # key -> the state before update 0
    run: Callable[[RunnerState, int], tuple[RunnerState, dict]]  # n updates (n static)
    opponent_names: list[str]
    actor: Actor
    compiled: dict = field(default_factory=dict)  # n -> `run` compiled for n updates

    def chunk(self, runner: RunnerState, n: int) -> tuple[Callable, float]:
        """`run` for `n` updates compiled ahead (cached), and the seconds compiling took."""
        if n in self.compiled:
            return self.compiled[n], 0.0
        started = time.monotonic()
        self.compiled[n] = self.run.lower(runner, n).compile()
        return self.compiled[n], time.monotonic() - started


_TRAINERS: dict[str, Trainer] = {}  # by config: a process compiles each config once


def make_train(config: JaxPPOConfig) -> Trainer:
    """``make_train_uncached``, once per config (its JSON) in a process."""
    key = json.dumps(dataclasses.asdict(config.check()), sort_keys=True)
    if key not in _TRAINERS:
        _TRAINERS[key] = make_train_uncached(config)
    return _TRAINERS[key]


def make_train_uncached(config: JaxPPOConfig) -> Trainer:
    """PureJaxRL's ``make_train``, split for a Python loop: ``init(key)`` and
    ``run(state, n)``, n updates in one jitted ``lax.scan`` returning each update's
    metrics (losses, entropy, approximate KL, clip fraction, and per opponent the games
    that ended and the learner's wins)."""
    c = config.check()
    game = c.game()
    actor = actor_for(c, game)
    names, lanes = lane_opponents(c.opponents, c.num_envs)
    lane_ids = jnp.asarray(lanes)
    bots = {n: jax_bot(n, game) for n in names if n != SELF}  # (state, key) -> action
    n_opp = len(names)
    minibatch = c.batch_size // c.num_minibatches
    schedule = optax.linear_schedule(
        c.lr, c.final_lr, c.num_updates * c.update_epochs * c.num_minibatches
    )
    tx = optax.chain(optax.clip_by_global_norm(c.max_grad_norm), optax.adam(schedule, eps=1e-5))

    def lane_env(params: Params, opp: jax.Array) -> LearnerEnv:
        """The environment of one lane, whose opponent is `opp` (traced)."""
        policies = [
            self_policy(params, actor, c.self_play) if n == SELF else bots[n] for n in names
        ]

        def opponent(state: State, key: jax.Array) -> jax.Array:
            if n_opp == 1:
                return policies[0](state, key)
            acts = jnp.stack([jnp.asarray(p(state, key), jnp.int32) for p in policies])
            return acts[opp]

        return LearnerEnv(game, opponent)

    def init(key: jax.Array) -> RunnerState:
        k_net, k_env, key = jax.random.split(key, 3)
        params = actor.init(k_net, c)
        reset = jax.vmap(lambda k, o: lane_env(params, o).reset(k))
        env_state = reset(jax.random.split(k_env, c.num_envs), lane_ids)
        return RunnerState(params, tx.init(params), env_state, key, jnp.int32(0))

    def policy_value(params: Params, obs: jax.Array, mask: jax.Array):
        logits = masked_logits(actor, params, obs, mask)
        return jax.nn.log_softmax(logits), actor.value(params, obs)

    def update(runner: RunnerState, _: Any) -> tuple[RunnerState, dict]:
        params, opt_state, env_state, key, n = runner
        step_env = jax.vmap(lambda s, a, k, o: lane_env(params, o).step(s, a, k))

        def env_step(carry, _):
            env_state, key = carry
            key, k_act, k_env = jax.random.split(key, 3)
            obs, mask = env_state.observation, env_state.legal_action_mask
            log_probs, value = policy_value(params, obs, mask)
            action = jax.random.categorical(k_act, log_probs).astype(jnp.int32)
            log_prob = jnp.take_along_axis(log_probs, action[:, None], axis=1)[:, 0]
            nxt = step_env(env_state, action, jax.random.split(k_env, c.num_envs), lane_ids)
            done = nxt.terminated | nxt.truncated
            t = Transition(done, action, value, nxt.reward, log_prob, obs, mask)
            ended = jax.nn.one_hot(lane_ids, n_opp) * done[:, None]
            won = ended * (nxt.reward > 0)[:, None]
            return (nxt, key), (t, ended.sum(0), won.sum(0), (nxt.turns * done).sum())

        (env_state, key), (traj, ended, won, turns) = jax.lax.scan(
            env_step, (env_state, key), None, c.num_steps
        )
        _, last_value = policy_value(params, env_state.observation, env_state.legal_action_mask)
        advantages, targets = gae(traj, last_value, c.gamma, c.gae_lambda)

        def epoch(carry, _):
            params, opt_state, key = carry
            key, k_perm = jax.random.split(key)
            perm = jax.random.permutation(k_perm, c.batch_size)
            flat = jax.tree_util.tree_map(
                lambda x: x.reshape((c.batch_size, *x.shape[2:])), (traj, advantages, targets)
            )
            shuffled = jax.tree_util.tree_map(
                lambda x: x[perm].reshape((c.num_minibatches, minibatch, *x.shape[1:])), flat
            )

            def minibatch_step(carry, batch):
                params, opt_state = carry
                grads, info = jax.grad(loss_fn, has_aux=True)(params, *batch)
                updates, opt_state = tx.update(grads, opt_state, params)
                return (optax.apply_updates(params, updates), opt_state), info

            (params, opt_state), info = jax.lax.scan(minibatch_step, (params, opt_state), shuffled)
            return (params, opt_state, key), info

        def loss_fn(params, t: Transition, adv, target):
            log_probs, value = policy_value(params, t.obs, t.mask)
            log_prob = jnp.take_along_axis(log_probs, t.action[:, None], axis=1)[:, 0]
            v_clipped = t.value + jnp.clip(value - t.value, -c.clip, c.clip)
            v_loss = 0.5 * jnp.maximum((value - target) ** 2, (v_clipped - target) ** 2).mean()
            ratio = jnp.exp(log_prob - t.log_prob)
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            pg_loss = -jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - c.clip, 1 + c.clip) * adv)
            pg_loss = pg_loss.mean()
            probs = jnp.exp(log_probs)
            entropy = -(probs * jnp.where(t.mask, log_probs, 0.0)).sum(-1).mean()
            loss = pg_loss + c.vf_coef * v_loss - c.ent_coef * entropy
            info = dict(loss=loss, policy_loss=pg_loss, value_loss=v_loss, entropy=entropy)
            info["approx_kl"] = ((ratio - 1) - jnp.log(ratio)).mean()
            info["clip_fraction"] = (jnp.abs(ratio - 1) > c.clip).mean()
            return loss, info

        (params, opt_state, key), info = jax.lax.scan(
            epoch, (params, opt_state, key), None, c.update_epochs
        )
        metrics = jax.tree_util.tree_map(jnp.mean, info)
        metrics.update(
            games=ended.sum(0), wins=won.sum(0), turns=turns.sum(), reward=traj.reward.sum()
        )
        return RunnerState(params, opt_state, env_state, key, n + 1), metrics

    @partial(jax.jit, static_argnums=1)
    def run(runner: RunnerState, n: int) -> tuple[RunnerState, dict]:
        return jax.lax.scan(update, runner, None, n)

    return Trainer(c, game, jax.jit(init), run, names, actor)


def gae(traj: Transition, last_value: jax.Array, gamma: float, lam: float):
    """Generalised advantage estimates by a reverse ``lax.scan`` (PureJaxRL), and the
    value targets (advantage + value)."""

    def back(carry, t: Transition):
        gae_next, value_next = carry
        not_done = 1.0 - t.done
        delta = t.reward + gamma * value_next * not_done - t.value
        gae_now = delta + gamma * lam * not_done * gae_next
        return (gae_now, t.value), gae_now

    _, adv = jax.lax.scan(back, (jnp.zeros_like(last_value), last_value), traj, reverse=True)
    return adv, adv + traj.value


# ------------------------------------------------------------------ checkpoints
def save_checkpoint(path: Path, runner: RunnerState, config: JaxPPOConfig, extra: dict) -> None:
    """The whole training state as one .npz (no pickle): every leaf of the runner state
    in flattening order, the config and `extra` (counters, history) as JSON."""
    leaves = jax.tree_util.tree_leaves(runner)
    arrays = {f"leaf{i:04d}": np.asarray(x) for i, x in enumerate(leaves)}
    meta = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION}
    meta["config"] = dataclasses.asdict(config)
    arrays["meta"] = np.array(json.dumps({**meta, **extra}))
    atomic_write(path, lambda name: np.savez(name, **arrays))


def read_checkpoint_meta(path: Path) -> dict:
    """The JSON record of a checkpoint, or a one-line ValueError."""
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
    except (OSError, KeyError, ValueError) as e:
        raise ValueError(f"{path} is not a JAX PPO checkpoint: {e}") from None
    if meta.get("format") != CHECKPOINT_FORMAT or meta.get("version") != CHECKPOINT_VERSION:
        raise ValueError(f"{path} is not a version {CHECKPOINT_VERSION} JAX PPO checkpoint")
    return meta


def load_checkpoint(path: Path, trainer: Trainer) -> tuple[RunnerState, dict]:
    """The runner state saved at `path`, laid out as `trainer`'s (its config must be the
    checkpoint's), and its JSON record."""
    meta = read_checkpoint_meta(path)
    template = jax.eval_shape(trainer.init, jax.random.PRNGKey(0))
    leaves, treedef = jax.tree_util.tree_flatten(template)
    with np.load(path, allow_pickle=False) as data:
        loaded = []
        for i, like in enumerate(leaves):
            name = f"leaf{i:04d}"
            if name not in data or data[name].shape != like.shape:
                raise ValueError(f"{path} does not fit this config (array {i})")
            loaded.append(jnp.asarray(data[name], like.dtype))
        if f"leaf{len(leaves):04d}" in data:
            raise ValueError(f"{path} does not fit this config (too many arrays)")
    return jax.tree_util.tree_unflatten(treedef, loaded), meta


# ------------------------------------------------------------------ export
def export_actor(
    params: Params, config: JaxPPOConfig, out: Path, checkpoint: Path | None = None
) -> dict:
    """Write the actor as an exported "ppo" bot: `out` (.onnx) and its metadata beside
    it, as ``fivethousand_rl.agents.exporting`` writes them (the same metadata and
    provenance); loaded back by ``ExportedBot`` before it takes `out`'s name (no partial
    file is ever left). The metadata."""
    import onnx

    out, game = Path(out), config.game()
    training = {**dataclasses.asdict(config), "method": "jax_ppo"}
    versions = {"jax": jax.__version__, "optax": optax.__version__, "onnx": onnx.__version__}

    def write(tmp: Path) -> dict:
        actor = actor_for(config, game)
        n_state = None if actor.network == "mlp" else actor.n_state
        graph = actor_graph(params, actor.activation, game.spec.size, n_state, "train_jax.py")
        onnx.save(graph, str(tmp))
        return ppo_metadata(
            out, game.spec, provenance("checkpoint", checkpoint, training, **versions)
        )

    return write_aside(out, write, ExportedBot)


# ------------------------------------------------------------------ the loop
def summarize(metrics: dict, names: list[str]) -> dict:
    """One chunk's metrics (stacked per update) as plain numbers: means of the losses,
    and per opponent the games ended and the learner's win rate."""
    out = {k: float(np.mean(v)) for k, v in metrics.items() if k not in ("games", "wins", "turns")}
    games = np.asarray(metrics["games"]).sum(0)
    wins = np.asarray(metrics["wins"]).sum(0)
    out["reward"] = float(np.sum(metrics["reward"]))
    out["games"] = {n: int(g) for n, g in zip(names, games, strict=True)}
    out["win_rate"] = {
        n: (float(w / g) if g else None) for n, w, g in zip(names, wins, games, strict=True)
    }
    total = int(games.sum())
    out["episode_return"] = out["reward"] / total if total else None  # wins - losses per game
    out["mean_turns"] = float(np.sum(metrics["turns"]) / total) if total else None
    return out


def progress_line(record: dict, config: JaxPPOConfig) -> str:
    wins = "  ".join(
        f"{n} {w:.1%}" if w is not None else f"{n} -" for n, w in record["win_rate"].items()
    )
    ret = record["episode_return"]
    return (
        f"update {record['update']:,}/{config.num_updates:,}  {record['steps']:,} steps  "
        f"{record['steps_per_s']:,.0f} steps/s  win: {wins}  return "
        + (f"{ret:+.3f}" if ret is not None else "-")
        + f"  entropy {record['entropy']:.3f}  kl {record['approx_kl']:.4f}  "
        f"value loss {record['value_loss']:.4f}"
    )


def training_speed(history: list[dict]) -> float:
    """Learner decisions per second over a run's chunks (``train``'s history), compiling
    and checkpoints excluded: all their decisions over all their time, each chunk's time
    being its decisions over its rate (a plain mean of the rates would give a short or
    a slow chunk the weight of a long one)."""
    ends = [record["steps"] for record in history]
    steps = [end - start for end, start in zip(ends, [0, *ends[:-1]], strict=True)]
    return sum(steps) / sum(n / r["steps_per_s"] for n, r in zip(steps, history, strict=True))


def train(
    config: JaxPPOConfig,
    checkpoint: Path,
    *,
    resume: bool = False,
    stop_after: int = 0,
    say: Callable[[str], None] = print,
    on_chunk: Callable[[RunnerState, list[dict]], None] | None = None,
) -> tuple[RunnerState, list[dict], bool]:
    """Train (or go on training from `checkpoint`, `resume`), saving `checkpoint` after
    every chunk; stop at the config's end, its time limit, or after `stop_after` more
    updates (0: no such stop). The final state, the history (one record per chunk) and
    whether the run is complete."""
    trainer = make_train(config)
    c = trainer.config
    if resume:
        runner, meta = load_checkpoint(checkpoint, trainer)
        history = list(meta.get("history", []))
        elapsed = float(meta.get("seconds", 0.0))
    else:
        runner = trainer.init(jax.random.PRNGKey(c.seed))
        history, elapsed = [], 0.0
    done = int(runner.update)
    goal = c.num_updates if stop_after <= 0 else min(c.num_updates, done + stop_after)
    started = time.monotonic()
    while done < goal:
        n = min(c.chunk_updates, goal - done)
        run, compile_s = trainer.chunk(runner, n)
        if compile_s:
            say(f"compiled {n} update(s) in {compile_s:.1f} s")
        t0 = time.monotonic()
        runner, metrics = run(runner)
        metrics = jax.device_get(metrics)
        seconds = time.monotonic() - t0
        done += n
        record = summarize(metrics, trainer.opponent_names)
        record.update(
            update=done,
            steps=done * c.batch_size,
            seconds=round(elapsed + time.monotonic() - started, 2),
            steps_per_s=n * c.batch_size / seconds,
        )
        history.append(record)
        extra = {"history": history, "seconds": record["seconds"], "update": done}
        save_checkpoint(checkpoint, runner, c, extra)
        say(progress_line(record, c))
        if on_chunk is not None:
            on_chunk(runner, history)
        if c.time_limit and record["seconds"] >= c.time_limit * 60:
            say(f"time limit of {c.time_limit:g} min reached")
            break
    return runner, history, done >= c.num_updates
