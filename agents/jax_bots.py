"""The scripted bots ``random``, ``threshold:T`` and ``turn-ev`` in JAX: opponents for
training inside one ``jax.jit`` (``envs.jax_env.LearnerEnv``), choosing exactly as the
numpy bots do (``agents.scripted`` one game at a time, ``agents.batched`` many).

``jax_bot(name, game)`` gives a ``JaxPolicy`` (``fivethousand_rl.envs.jax_env``): a pure function of
*one* game's ``State`` and a key to an int32 action for the player to move
(``state.current_player``), with a decision due; ``jax.vmap`` it for many games. The
bots are hashable values (equal for the same name and game), so a ``LearnerEnv`` built
with one can be a static ``jax.jit`` argument.

Exactness, bot by bot (everything int32, no float decides a choice):

- ``random``: uniform among the legal actions (the state's ``legal_action_mask``).
  Key use: ``k = uniform_index(key)``, one ``randint(key, (), 0, 2**24)``; the pick is
  ``(k * n_legal) >> 24``, the pick-th legal action in ascending order. The numpy bots
  take ``legal[int(u * n_legal)]`` for ``u = rng.random()``: with ``u = k / 2**24``
  (exact in float64) that is the same pick, so fed the same ``k`` both agree.
- ``threshold:T``: the best reading of the roll (R2); bank when R8 allows the total it
  makes and that total is at least T or lands exactly on the target (R9).
- ``turn-ev``: an exact win first (the first banking action, ascending, that lands on
  the target), else the most expected points this turn (first of equals), read from
  the numpy bot's own choice table (``fivethousand_rl.agents.batched._turn_tables``), built once per
  rules with enough turn-total levels that every larger total shares a row: see
  ``turn_ev_choices``.

Only this module (and what imports it) imports jax: ``agents`` itself stays jax-free.
"""

from __future__ import annotations

import dataclasses
from functools import cache

import jax
import jax.numpy as jnp
import numpy as np

from fivethousand_rl.agents import MODEL_SUFFIXES, _quote, make_policy
from fivethousand_rl.agents.batched import _turn_tables
from fivethousand_rl.agents.scripted import RandomBot, ThresholdBot, TurnEVBot
from fivethousand_rl.envs.batch import NO_ROLL
from fivethousand_rl.envs.jax_env import Array, FiveThousandJax, JaxPolicy, State, can_bank
from fivethousand_rl.envs.rules import BANK_BIT, Rules
from fivethousand_rl.envs.solver import STEP, turn_ev_table

# The names jax_bot accepts, as fivethousand_rl.agents.make_policy spells them (T: a whole number).
JAX_BOTS = ("random", "threshold:T", "turn-ev")
RANDOM_BITS = 24  # random's draw: k uniform in 0 .. 2**24 - 1, u = k / 2**24
_INT32_MAX = int(np.iinfo(np.int32).max)


def uniform_index(key: Array) -> Array:
    """The draw ``random`` makes from `key`: k uniform in 0 .. 2**24 - 1 (int32). The
    numpy bots choose the same action when their ``rng.random()`` returns k / 2**24."""
    return jax.random.randint(key, (), 0, 2**RANDOM_BITS, dtype=jnp.int32)


# ------------------------------------------------------------------ the bots
def random_action(state: State, key: Array) -> Array:
    """``random``: the ((k * n) >> 24)-th of the n legal actions, k = uniform_index(key)."""
    mask = state.legal_action_mask
    n = mask.sum(dtype=jnp.int32)
    pick = (uniform_index(key) * n) >> RANDOM_BITS  # < 2**24 * 64: inside int32
    return jnp.argmax(jnp.cumsum(mask, dtype=jnp.int32) > pick).astype(jnp.int32)


def threshold_action(game: FiveThousandJax, threshold: int, state: State) -> Array:
    """``threshold:T``: hold the best reading (R2); bank when allowed (R8) and the turn
    total reaches `threshold` or lands on the target (R9)."""
    tab, rules = game.tables, game.rules
    roll = state.roll
    total = state.turn_total + jnp.asarray(tab.best_points)[roll]
    own = state.scores[state.current_player]
    # A threshold past int32 is never reached (turn totals stay far inside it).
    reach = total >= threshold if threshold <= _INT32_MAX else jnp.bool_(False)
    bank = can_bank(rules, own, total) & (reach | (own + total == rules.target))
    return jnp.asarray(tab.best_bits)[roll] | jnp.where(bank, BANK_BIT, 0).astype(jnp.int32)


@cache
def turn_ev_choices(rules: Rules) -> tuple[np.ndarray, int]:
    """(best, last): turn-ev's choice without the exact win, int8 (462, 2, last + 2) by
    [roll, entered, turn total // 50], and the level `last` (even) from which only the
    parity of the level matters: a level L >= last reads row last + (L & 1).

    Why that is exact: ``TurnEV`` values every roll from a total at or past its cap
    (40,000) as the cap's row, so from ``last * 50 >= cap`` on the roll-on values no
    longer change with the total, while every bank is worth at least ``cap + 50``,
    more than any roll-on value (checked here: at most ~37,205 under every rule set);
    and from past the entry score (V1) on, whether a bank is allowed depends only on
    the total ending in 50 (V4). So the choice is the first legal bank of the most
    points if there is one, else a fixed roll-on, by (roll, entered, parity): the
    numpy bot's full computation (``BatchedTurnEVBot._act_full``) chooses the same."""
    ev = turn_ev_table(rules)
    cap = ev.cap // STEP
    if not ev.value[:, cap, :].max() < ev.cap + STEP:  # never seen; the argument needs it
        raise RuntimeError(f"turn-ev in JAX: a roll-on value past the cap beats a bank ({rules})")
    top = max(cap, -(-rules.entry // STEP))
    last = top + top % 2
    levels = last + 2
    best = _turn_tables(rules, levels=levels).best.reshape(NO_ROLL + 1, 2, levels)
    return best.astype(np.int8), last


def turn_ev_action(game: FiveThousandJax, state: State) -> Array:
    """``turn-ev``: the first banking action that lands exactly on the target (R8, R9),
    else the hold (and bank or roll) with the most expected points this turn."""
    tab, rules = game.tables, game.rules
    roll = state.roll
    own = state.scores[state.current_player]
    after = state.turn_total + jnp.asarray(tab.move_points)[roll]  # (32,) by hold
    legal = jnp.asarray(tab.move_legal)[roll]
    wins = legal & can_bank(rules, own, after) & (own + after == rules.target)
    best, last = turn_ev_choices(rules)
    level = state.turn_total // STEP
    level = jnp.where(level >= last, last + (level & 1), level)
    choice = jnp.asarray(best)[roll, (own > 0).astype(jnp.int32), level].astype(jnp.int32)
    win = (jnp.argmax(wins) | BANK_BIT).astype(jnp.int32)
    return jnp.where(wins.any(), win, choice)


@dataclasses.dataclass(frozen=True)
class JaxBot:
    """One of the bots for one game (a ``JaxPolicy``): ``bot(state, key) -> action``."""

    name: str  # as fivethousand_rl.agents.make_policy spells it
    game: FiveThousandJax
    threshold: int | None = None  # threshold:T's T

    def __post_init__(self) -> None:
        if (self.threshold is None) != (self.name in ("random", "turn-ev")):
            raise ValueError(f"not a JAX bot: {self.name!r} (make it with jax_bot)")

    def __call__(self, state: State, key: Array) -> Array:
        if self.name == "random":
            return random_action(state, key)
        if self.name == "turn-ev":
            return turn_ev_action(self.game, state)
        return threshold_action(self.game, int(self.threshold or 0), state)


def jax_bot(name: str, game: FiveThousandJax) -> JaxPolicy:
    """The JAX bot `name` ("random", "threshold:350", "turn-ev": see ``JAX_BOTS``;
    parsed by ``fivethousand_rl.agents.make_policy``, so the same names and thresholds are accepted)
    for `game`. Raises ValueError (one line, naming the accepted ones) for any other."""
    accepted = f"accepted: {', '.join(JAX_BOTS)} (e.g. threshold:350)"
    if not isinstance(name, str):
        raise ValueError(f"expected a JAX bot name, got {type(name).__name__}; {accepted}")
    if not isinstance(game, FiveThousandJax):
        raise ValueError(
            f"expected an fivethousand_rl.envs.jax_env.FiveThousandJax, got {type(game).__name__}"
        )
    family, _, arg = name.strip().partition(":")
    ours = family in ("random", "threshold", "turn-ev") and not arg.endswith(MODEL_SUFFIXES)
    try:  # only these families, never a model file (nothing is opened)
        policy = make_policy(name) if ours else None
    except ValueError:
        policy = None
    if isinstance(policy, ThresholdBot):
        return JaxBot(policy.name, game, policy.threshold)
    if isinstance(policy, TurnEVBot):
        turn_ev_choices(game.rules)  # the table is built now, not inside a trace
        return JaxBot(policy.name, game)
    if isinstance(policy, RandomBot):
        return JaxBot(policy.name, game)
    raise ValueError(f"unknown JAX bot {_quote(name)}; {accepted}")


__all__ = [
    "JAX_BOTS",
    "JaxBot",
    "jax_bot",
    "random_action",
    "threshold_action",
    "turn_ev_action",
    "turn_ev_choices",
    "uniform_index",
]
