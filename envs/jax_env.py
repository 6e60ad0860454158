"""The game of 5000 in JAX: pure ``init`` / ``step`` functions over a pytree state, in
the style of pgx, for training and search on an accelerator (``pip install .[jax]``).

Overview
--------
``FiveThousandJax(n_players, rules, max_turns, encoding)`` is the game for one table
size and one set of rules (``envs.rules.Rules``: R1-R12 and the house switches V1-V5 as static
configuration; each combination compiles once). Its functions take and return a
``State`` for *one* game; ``jax.vmap`` them for many and ``jax.jit`` them for speed::

    env = FiveThousandJax(2)
    init, step = jax.jit(jax.vmap(env.init)), jax.jit(jax.vmap(env.step))
    state = init(jax.random.split(key, 4096))
    state = step(state, actions, jax.random.split(key2, 4096))

A state returned by ``init`` or ``step`` is always a decision of ``current_player`` or an
ended game: the rolls between decisions (and a bust's end of turn, R4) happen inside.

Chance, made explicit
---------------------
A decision first makes an *afterstate* (``decide``): the dice are held, the turn total
grows, and the turn either ends (bank, R9) or waits for a roll (``is_chance``). A roll
is then applied by ``stochastic_step(state, roll_id)``, the outcome given from outside
(what tree search over chance nodes needs, pgx issue #1308), or drawn from a key by
``resolve(state, key)``, which rolls until a decision is due (a bust ends the turn and
the next player rolls at once). ``chance_probs(state)`` gives the probability of every
roll id, equal to ``Game.chance_outcomes``. ``step(state, action, key)`` is
``resolve(decide(state, action), key)`` with ``decide``'s rewards: the decision that
ends a game pays for it, a roll pays 0, and so does anything done to an ended game.
``stochastic_step`` refuses a roll id of the wrong dice outside ``jax.jit`` (under it,
check ``roll_fits``).

A roll is named by its roll id (``envs.batch.ROLLS``, ``NO_ROLL`` for none); rolls are
drawn as one uniform code in 0..7775 mapped by ``envs.batch.CODE_TO_ROLL``, exactly as
``envs.game.Game`` and ``envs.batch.BatchGames`` draw them, so the three engines fed the
same codes play the same game (``benchmarks/jax_parity.py`` checks it decision by
decision). Key schedule: ``resolve`` splits its key once per roll (``key, sub =
split(key)``; the roll's code is ``randint(sub, (), 0, 7776)``).

State
-----
``current_player`` (int32), ``observation`` (float32, ``envs.encoding``'s layout seen
from ``current_player``: the compact one, or with ``encoding="rich"`` the rich one, whose
64 rows say what each legal action leads to; a policy trained here reads the numpy
environments' observations too, bit for bit), ``legal_action_mask`` (bool, 64; all True
once the game has ended, as pgx does, so that a masked softmax never divides by zero),
``rewards`` (float32, one per seat: +1 to the winner and -1 to every other seat on the
step that ends the game, else 0; a cut-off game pays 0), ``terminated``, ``truncated``
(the turn limit, R11), ``is_chance`` and the game itself (``scores``, ``turn_total``,
``dice_left``, ``roll``, ``turns``, ``winner`` (-1: none), ``step_count``).

An illegal action (outside the mask, or outside 0..63) ends the game: the actor gets -1,
every other seat 0 (PettingZoo's ``TerminateIllegalWrapper`` with ``illegal_reward=-1``,
as ``fivethousand_rl.envs.pettingzoo_env``). A step on an ended game changes nothing and pays 0.

Numbers
-------
Everything is int32 and bool except the observation. Its fractions (score / target
and the like) are read from tables computed by numpy in float64 and rounded once to
float32, because XLA's float32 division can differ from numpy's in the last bit.
Targets up to ``MAX_TARGET`` keep every total inside int32.

``LearnerEnv`` is the ``FiveThousand-v0`` view of it: one learning seat, the others
played by a JAX policy function, auto-reset, for PPO (``agents/training/jax_ppo.py``)
and the speed benchmark (``benchmarks/jax_speed.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import cache
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from fivethousand_rl.envs.batch import CODE_TO_ROLL, NO_ROLL, NUM_CODES, ROLL_BUST, move_tables
from fivethousand_rl.envs.encoding import (
    _NEED_BINS,
    ACTION_FEATURES,
    ENCODINGS,
    OBS_HIGH,
    OBS_LOW,
    RICH_OBS_HIGH,
    Col,
    ObsSpec,
    roll_part_table,
    score_bins,
)
from fivethousand_rl.envs.game import IllegalMoveError, check_players
from fivethousand_rl.envs.rules import BANK_BIT, NUM_ACTIONS, NUM_DICE, Rules
from fivethousand_rl.envs.solver import STEP, turn_ev_table

MAX_TARGET = 1_000_000  # scores and turn totals stay far inside int32
# The rich observation's "turn total / target" column is read from a table up to this
# total (no game comes near: it takes hundreds of scoring rolls in a row); beyond it the
# table's last entry is read.
RICH_TOTAL_LIMIT = 2 * MAX_TARGET
HOLD_BITS = BANK_BIT - 1

Array = jax.Array
# An opponent of ``LearnerEnv``: (state of one game with a decision due, key) -> action.
JaxPolicy = Callable[["State", Array], Array]


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class State:
    """One game (vmap for many); see the module docstring."""

    current_player: Array  # int32 ()
    observation: Array  # float32 (obs_size,) from current_player
    legal_action_mask: Array  # bool (64,)
    rewards: Array  # float32 (P,)
    terminated: Array  # bool ()
    truncated: Array  # bool ()
    is_chance: Array  # bool (): a roll is due
    scores: Array  # int32 (P,)
    turn_total: Array  # int32 ()
    dice_left: Array  # int32 (): dice the next roll throws
    roll: Array  # int32 (): the roll id awaiting a decision, or NO_ROLL
    turns: Array  # int32 (): turns completed
    winner: Array  # int32 (): -1 while nobody has won
    step_count: Array  # int32 (): decisions taken

    def replace(self, **changes: Any) -> State:
        return dataclasses.replace(self, **changes)


def _paying_nothing(s: State) -> State:
    return s.replace(rewards=jnp.zeros_like(s.rewards))


def _where(cond: Array, a: State, b: State) -> State:
    """`a` where `cond` else `b`, field by field (cond a scalar bool of one game)."""
    return jax.tree_util.tree_map(lambda x, y: jnp.where(cond, x, y), a, b)


# ------------------------------------------------------------------ tables
class Tables(NamedTuple):
    """The numpy tables the JAX functions gather from (built once per rules)."""

    roll_bust: np.ndarray  # bool (462,)
    roll_prob: np.ndarray  # float32 (6, 462): chance of each roll id for n dice
    move_legal: np.ndarray  # bool (462, 32)
    move_points: np.ndarray  # int32 (462, 32)
    move_left: np.ndarray  # int32 (462, 32); 5 for holds that are not legal (never 0)
    best_bits: np.ndarray  # int32 (462,)
    best_points: np.ndarray  # int32 (462,)
    roll_part: np.ndarray  # float32 (462, 38): observation from "dice_in_roll" on
    score_frac: np.ndarray  # float32: score / target by score // 50
    total_frac: np.ndarray  # float32: min(total / target, 2) by min(total // 50, 2T / 50)
    need_frac: np.ndarray  # float32: max(need / target, -1) by (clip(need, ±T) + T) // 50


@cache
def jax_tables(rules: Rules) -> Tables:
    """The tables of `rules`, from the numpy engine's own (``fivethousand_rl.envs.batch``)."""
    moves = move_tables(rules.hold)
    t = rules.target
    steps = np.arange(2 * t // 50 + 1, dtype=np.int64) * 50
    counts = np.zeros((NUM_DICE + 1, NO_ROLL + 1), dtype=np.int64)
    for n in range(1, NUM_DICE + 1):
        counts[n] = np.bincount(CODE_TO_ROLL[n], minlength=NO_ROLL + 1)
    return Tables(
        roll_bust=ROLL_BUST.copy(),
        roll_prob=(counts / NUM_CODES).astype(np.float32),
        move_legal=moves.legal.copy(),
        move_points=moves.points.astype(np.int32),
        # An illegal hold leaves five dice, so that no state ever rolls zero dice.
        move_left=np.where(moves.legal, moves.dice_left, NUM_DICE).astype(np.int32),
        best_bits=moves.best_bits.astype(np.int32),
        best_points=moves.best_points.astype(np.int32),
        roll_part=roll_part_table(),
        score_frac=(steps[: t // 50 + 1] / t).astype(np.float32),
        total_frac=np.minimum(steps / t, OBS_HIGH).astype(np.float32),
        need_frac=np.maximum((steps - t) / t, OBS_LOW).astype(np.float32),
    )


class RichTables(NamedTuple):
    """The extra tables of the rich observation (``fivethousand_rl.envs.encoding.action_features``),
    float32 values computed in float64 by numpy as the encoder computes them."""

    total_frac: np.ndarray  # total / target (not clipped) by total // 50
    points_frac: np.ndarray  # (462, 32): the hold's points / 1000
    roll_ev: np.ndarray  # (2, levels, 6): min(turn-EV roll value / 1000, RICH_OBS_HIGH)
    bank_ev: np.ndarray  # min(total / 1000, RICH_OBS_HIGH) by min(total // 50, ...)


@cache
def rich_tables(rules: Rules) -> RichTables:
    """The tables of the rich observation under `rules`."""
    ev = turn_ev_table(rules)
    totals = np.arange(RICH_TOTAL_LIMIT // STEP + 1, dtype=np.int64) * STEP
    banked = np.arange(int(RICH_OBS_HIGH * 1000) // STEP + 1, dtype=np.int64) * STEP
    return RichTables(
        total_frac=(totals / rules.target).astype(np.float32),
        points_frac=(move_tables(rules.hold).points / 1000).astype(np.float32),
        roll_ev=np.minimum(ev.value / 1000, RICH_OBS_HIGH).astype(np.float32),
        bank_ev=np.minimum(banked / 1000, RICH_OBS_HIGH).astype(np.float32),
    )


class BankOutcome(NamedTuple):
    """What banking a total does (R9, V2, V3), as ``envs.game.BankOutcome`` says it, for
    one game: the scores after it, the winner (-1: none), and what the rich observation
    tells of it."""

    scores: Array  # int32 (P,)
    winner: Array  # int32 ()
    bumped: Array  # bool (): some other seat drops to 0
    overshoot: Array  # bool (): the banker would pass the target
    gift_to: Array  # int32 (): who receives an overshoot (-1: nobody, it is lost)


def can_bank(rules: Rules, own: Array, total: Array) -> Array:
    """R8 (V1 the entry, V4 the 50 rule) in jnp, as ``envs.rules.can_bank``: may a player
    with `own` banked points bank the turn total `total`?"""
    ok = (total > 0) & ((own > 0) | (total >= rules.entry))
    if rules.fifty_rule:
        ok &= total % 100 != 50
    return ok


def draw_roll(key: Array, dice_left: Array) -> Array:
    """A roll of `dice_left` dice drawn from `key`: one uniform code in 0..7775, mapped
    as the numpy engine maps it (``fivethousand_rl.envs.batch.CODE_TO_ROLL``)."""
    code = jax.random.randint(key, (), 0, NUM_CODES, dtype=jnp.int32)
    return jnp.asarray(CODE_TO_ROLL.astype(np.int32))[dice_left, code]


# ------------------------------------------------------------------ the game
@dataclasses.dataclass(frozen=True)
class FiveThousandJax:
    """5000 for `n_players` seats under `rules`, cut off after `max_turns` turns (R11;
    ``envs.driver.DEFAULT_MAX_TURNS`` in the other environments). Hashable: pass it to
    ``jax.jit`` as a static argument, or close over it."""

    n_players: int
    rules: Rules = Rules()
    max_turns: int = 1000
    encoding: str = "compact"

    def __post_init__(self) -> None:
        check_players(self.n_players)
        if not isinstance(self.rules, Rules):
            raise ValueError(
                f"rules must be an fivethousand_rl.envs.rules.Rules, got {self.rules!r}"
            )
        if self.encoding not in ENCODINGS:
            raise ValueError(
                f"encoding must be one of {', '.join(ENCODINGS)}, got {self.encoding!r}"
            )
        if self.rules.target > MAX_TARGET:
            raise ValueError(
                f"the JAX game takes targets up to {MAX_TARGET}, got {self.rules.target}"
            )
        mt = self.max_turns
        if not isinstance(mt, int) or isinstance(mt, bool) or not self.n_players <= mt < 2**30:
            raise ValueError(f"max_turns must be an integer >= n_players, got {mt!r}")

    # ------------------------------------------------------------- sizes
    @property
    def num_actions(self) -> int:
        return NUM_ACTIONS

    @property
    def spec(self) -> ObsSpec:
        """The observation's layout, as the numpy environments describe it."""
        return ObsSpec(self.encoding, self.n_players, self.rules)

    @property
    def observation_size(self) -> int:
        return self.spec.size

    @property
    def tables(self) -> Tables:
        return jax_tables(self.rules)

    # ------------------------------------------------------------- starts
    def new_game(self) -> State:
        """A new game before its first roll: every score 0, seat 0 to throw five dice."""
        p = self.n_players
        zero = jnp.int32(0)
        state = State(
            current_player=zero,
            observation=jnp.zeros(self.observation_size, jnp.float32),
            legal_action_mask=jnp.zeros(NUM_ACTIONS, bool),
            rewards=jnp.zeros(p, jnp.float32),
            terminated=jnp.bool_(False),
            truncated=jnp.bool_(False),
            is_chance=jnp.bool_(True),
            scores=jnp.zeros(p, jnp.int32),
            turn_total=zero,
            dice_left=jnp.int32(NUM_DICE),
            roll=jnp.int32(NO_ROLL),
            turns=zero,
            winner=jnp.int32(-1),
            step_count=zero,
        )
        return self._finish(state)

    def from_arrays(
        self,
        scores: Any,
        current: Any,
        turn_total: Any = 0,
        dice_left: Any = NUM_DICE,
        roll: Any = NO_ROLL,
        turns: Any = 0,
        winner: Any = -1,
    ) -> State:
        """A state of one game written from its numbers (as ``BatchGames`` holds them):
        for tests and for search from a given position. Trusted, not checked."""
        state = self.new_game().replace(
            scores=jnp.asarray(scores, jnp.int32),
            current_player=jnp.asarray(current, jnp.int32),
            turn_total=jnp.asarray(turn_total, jnp.int32),
            dice_left=jnp.asarray(dice_left, jnp.int32),
            roll=jnp.asarray(roll, jnp.int32),
            turns=jnp.asarray(turns, jnp.int32),
            winner=jnp.asarray(winner, jnp.int32),
        )
        return self._finish(state)

    def init(self, key: Array) -> State:
        """A new game rolled on to its first decision (seat 0, or a later seat if seat 0
        busts)."""
        return self.resolve(self.new_game(), key)

    # ------------------------------------------------------------- transitions
    def step(self, state: State, action: Array, key: Array) -> State:
        """The player to move takes `action`; the dice are then rolled from `key` until
        the next decision or the end (``resolve``). Illegal: the game ends, the actor
        gets -1. Ended already: nothing changes, rewards 0."""
        action = jnp.asarray(action, jnp.int32)
        inside = (action >= 0) & (action < NUM_ACTIONS)
        legal = inside & state.legal_action_mask[jnp.clip(action, 0, NUM_ACTIONS - 1)]
        # Both branches are computed (vmap): the refused one plays a legal action instead.
        fallback = jnp.argmax(state.legal_action_mask).astype(jnp.int32)
        played = self._resolve_raw(self._decide_raw(state, jnp.where(legal, action, fallback)), key)
        actor = jnp.arange(self.n_players) == state.current_player
        refused = state.replace(
            terminated=jnp.bool_(True),
            is_chance=jnp.bool_(False),
            rewards=jnp.where(actor, -1.0, 0.0).astype(jnp.float32),
            step_count=state.step_count + 1,
            legal_action_mask=jnp.ones(NUM_ACTIONS, bool),
        )
        return self._unless_ended(state, _where(legal, self._finish(played), refused))

    def decide(self, state: State, action: Array) -> State:
        """The afterstate of a legal `action` (trusted: check the mask first): the hold
        and, if it banks, the bank (R9) and the end of the turn, paying the win it makes.
        The rolls to come are left to ``stochastic_step`` or ``resolve``. Ended already:
        nothing changes, rewards 0."""
        out = self._finish(self._decide_raw(state, jnp.asarray(action, jnp.int32)))
        return self._unless_ended(state, out)

    def stochastic_step(self, state: State, roll_id: Array) -> State:
        """The roll `roll_id` (of ``state.dice_left`` dice) lands; a bust (R3) ends the
        turn (R4). Nothing changes unless a roll is due (``is_chance``). It pays 0: a
        roll never wins, and on an ended game nothing is paid twice.

        Called outside ``jax.jit`` / ``vmap``, a roll id that is not a roll of the dice
        due raises IllegalMoveError in one line, as ``Game.roll`` does; traced, it is not
        checked (what follows such a roll is unspecified): check ``roll_fits`` there."""
        roll_id = jnp.asarray(roll_id, jnp.int32)
        values = (roll_id, state.is_chance, state.dice_left)
        concrete = not any(isinstance(x, jax.core.Tracer) for x in values)
        if concrete and np.any(state.is_chance & ~self.roll_fits(state, roll_id)):
            raise IllegalMoveError(
                f"roll id {roll_id} is not a roll of the {state.dice_left} dice due"
            )
        out = _where(state.is_chance, self._roll_raw(state, roll_id), state)
        return _paying_nothing(self._finish(out))

    def roll_fits(self, state: State, roll_id: Array) -> Array:
        """bool (): is `roll_id` a roll of ``state.dice_left`` dice (an id whose
        ``chance_probs`` is above 0 where a roll is due)? Traceable: the check to make
        before ``stochastic_step`` under ``jax.jit`` or ``vmap``."""
        roll_id = jnp.asarray(roll_id, jnp.int32)
        inside = (roll_id >= 0) & (roll_id < NO_ROLL)
        probs = jnp.asarray(self.tables.roll_prob)[state.dice_left, jnp.clip(roll_id, 0, NO_ROLL)]
        return inside & (probs > 0)

    def resolve(self, state: State, key: Array) -> State:
        """Roll from `key` until a decision is due or the game has ended. It pays 0: a
        roll never wins, and the decision that ended a game has paid for it."""
        return _paying_nothing(self._finish(self._resolve_raw(state, key)))

    def chance_probs(self, state: State) -> Array:
        """(462,) float32: the chance of each roll id at this chance node (the roll ids
        of ``dice_left`` dice; all 0 unless a roll is due)."""
        probs = jnp.asarray(self.tables.roll_prob)[state.dice_left]
        return jnp.where(state.is_chance, probs, 0.0)

    def observe(self, state: State, seat: Array) -> Array:
        """The observation of the game from `seat` (``fivethousand_rl.envs.encoding.encode``, or
        ``encode_rich`` with the rich encoding, bit for bit; a seat not to move sees
        zeros in the rich action rows, as there)."""
        return self._observe(state, jnp.asarray(seat, jnp.int32), self._real_mask(state))

    # ------------------------------------------------------------- internals
    def _decide_raw(self, s: State, action: Array) -> State:
        tab = self.tables
        bits = action & HOLD_BITS
        roll = s.roll
        total = s.turn_total + jnp.asarray(tab.move_points)[roll, bits]
        held = s.replace(
            turn_total=total,
            dice_left=jnp.asarray(tab.move_left)[roll, bits],
            roll=jnp.int32(NO_ROLL),
            step_count=s.step_count + 1,
        )
        bank = self.bank_outcome(s.scores, s.current_player, total)
        banked = self._end_turn(held.replace(scores=bank.scores, winner=bank.winner))
        out = _where(action >= BANK_BIT, banked, held)
        return self._status(out)

    def _unless_ended(self, state: State, out: State) -> State:
        """`out`, or `state` unchanged and paying 0 if it had already ended."""
        return _where(state.terminated | state.truncated, _paying_nothing(state), out)

    def bank_outcome(self, scores: Array, banker: Array, total: Array) -> BankOutcome:
        """``envs.batch.bank_batch`` for one game: R9 with V2 (bump) and V3 (overshoot).
        Banking is assumed allowed (R8: check ``can_bank`` first)."""
        r, p = self.rules, self.n_players
        new = scores[banker] + total
        fits = new <= r.target
        win = new == r.target
        after = jnp.where(fits, scores.at[banker].set(new), scores)
        bumped = jnp.bool_(False)
        if r.bump:  # the banker's own column never matches: new > own
            bumps = (scores == new) & fits & ~win
            after, bumped = jnp.where(bumps, 0, after), bumps.any()
        winner = jnp.where(win, banker, -1)
        gift_to = jnp.int32(-1)
        if r.overshoot == "gift":
            order = (jnp.arange(p) - banker) % p
            eligible = (scores >= r.entry) & (order > 0)
            candidate = jnp.argmin(jnp.where(eligible, scores * p + order, 2**30))
            received = scores[candidate] + total
            gets = ~fits & eligible.any() & (received <= r.target)
            after = jnp.where(gets, after.at[candidate].set(received), after)
            winner = jnp.where(gets & (received == r.target), candidate, winner)
            gift_to = jnp.where(gets, candidate, -1)
        return BankOutcome(
            scores=after.astype(jnp.int32),
            winner=winner.astype(jnp.int32),
            bumped=bumped,
            overshoot=~fits,
            gift_to=jnp.asarray(gift_to, jnp.int32),
        )

    def _end_turn(self, s: State) -> State:
        return s.replace(
            turns=s.turns + 1,
            turn_total=jnp.int32(0),
            dice_left=jnp.int32(NUM_DICE),
            roll=jnp.int32(NO_ROLL),
            current_player=(s.current_player + 1) % self.n_players,
        )

    def _roll_raw(self, s: State, roll_id: Array) -> State:
        bust = jnp.asarray(self.tables.roll_bust)[roll_id]
        out = _where(bust, self._end_turn(s), s.replace(roll=roll_id))
        return self._status(out)

    def _resolve_raw(self, state: State, key: Array) -> State:
        def body(carry: tuple[State, Array]) -> tuple[State, Array]:
            s, k = carry
            k, sub = jax.random.split(k)
            return self._roll_raw(s, draw_roll(sub, s.dice_left)), k

        return jax.lax.while_loop(lambda c: c[0].is_chance, body, (state, key))[0]

    def _status(self, s: State) -> State:
        """The flags that follow from the numbers: ended, cut off, a roll due."""
        over = s.winner >= 0
        cut = ~over & (s.turns >= self.max_turns)
        chance = (s.roll == NO_ROLL) & ~over & ~cut
        return s.replace(terminated=over, truncated=cut, is_chance=chance)

    def _real_mask(self, s: State) -> Array:
        """R5-R8, as ``envs.game._legal_moves``: the holds of the roll, each also as a
        bank where ``can_bank`` allows the total it makes. All False unless a decision
        is due."""
        tab = self.tables
        legal = jnp.asarray(tab.move_legal)[s.roll]
        after = s.turn_total + jnp.asarray(tab.move_points)[s.roll]
        may_bank = can_bank(self.rules, s.scores[s.current_player], after)
        live = (s.roll != NO_ROLL) & (s.winner < 0)
        return jnp.concatenate([legal, legal & may_bank]) & live

    def _observe(self, s: State, seat: Array, mask: Array) -> Array:
        r, tab, p = self.rules, self.tables, self.n_players
        t = r.target
        own_first = s.scores[(seat + jnp.arange(p)) % p]
        total = s.turn_total
        need = t - s.scores[s.current_player] - total
        head = [
            jnp.asarray(tab.score_frac)[own_first // 50],
            (own_first > 0).astype(jnp.float32),
            (jnp.arange(p) == (s.current_player - seat) % p).astype(jnp.float32),
            jnp.asarray(tab.total_frac)[jnp.minimum(total // 50, 2 * t // 50)][None],
            jnp.asarray(tab.need_frac)[(jnp.clip(need, -t, t) + t) // 50][None],
            (total % r.score_step != 0).astype(jnp.float32)[None],
        ]
        part = jnp.asarray(tab.roll_part)[s.roll]
        banks = (s.roll != NO_ROLL) & mask[BANK_BIT:].any()
        part = part.at[1].set(banks.astype(jnp.float32))
        if self.encoding == "compact":
            return jnp.concatenate([*head, part])
        bins = score_bins(r)
        one_hot = jax.nn.one_hot(own_first // r.score_step, bins, dtype=jnp.float32).ravel()
        rows = self._action_rows(s, seat, mask).ravel()
        return jnp.concatenate([*head, part, one_hot, rows])

    def _action_rows(self, s: State, seat: Array, mask: Array) -> Array:
        """(64, ACTION_FEATURES): ``envs.encoding.action_features`` bit for bit, each
        legal action's consequences for `seat` (zeros unless `seat` is to decide)."""
        r, tab, rich = self.rules, self.tables, rich_tables(self.rules)
        t = r.target
        legal = mask & (s.roll != NO_ROLL) & (s.current_player == seat)
        own = s.scores[seat]

        def both(x: Array) -> Array:  # actions a and a + 32 hold the same dice
            return jnp.concatenate([x, x])

        points = both(jnp.asarray(rich.points_frac)[s.roll])
        left = both(jnp.asarray(tab.move_left)[s.roll])
        total = s.turn_total + both(jnp.asarray(tab.move_points)[s.roll])
        need = t - own - total
        banks = jnp.arange(NUM_ACTIONS) >= BANK_BIT
        entered = (own > 0).astype(jnp.int32)
        capped = jnp.minimum(total, turn_ev_table(r).cap)
        roll_ev = jnp.asarray(rich.roll_ev)[entered, capped // STEP, left]
        bank_ev = jnp.asarray(rich.bank_ev)[jnp.minimum(total // STEP, rich.bank_ev.size - 1)]
        bank = jax.vmap(lambda x: self.bank_outcome(s.scores, seat, x))(total)
        wins = banks & (bank.winner == seat)
        fits = banks & ~wins & ~bank.overshoot
        lost = banks & ~wins & bank.overshoot & (bank.gift_to < 0)
        gifts = banks & ~wins & bank.overshoot & (bank.gift_to >= 0)
        score_frac = jnp.asarray(tab.score_frac)
        own_frac = score_frac[own // STEP]
        after = jnp.where(fits, score_frac[bank.scores[:, seat] // STEP], own_frac)
        total_index = jnp.minimum(total // STEP, rich.total_frac.size - 1)
        columns = {
            Col.LEGAL: legal,
            Col.BANKS: banks,
            Col.TURN_TOTAL: jnp.asarray(rich.total_frac)[total_index],
            Col.DICE_LEFT_AT: jax.nn.one_hot(left - 1, NUM_DICE),
            Col.POINTS: points,
            Col.NEED: jnp.asarray(tab.need_frac)[(jnp.clip(need, -t, t) + t) // STEP],
            # need // 50 outside 0..1000 falls outside the one-hot: a row of zeros
            Col.NEED_AT: jax.nn.one_hot(jnp.where(need >= 0, need // STEP, -1), _NEED_BINS),
            Col.NEED_OVER_1000: need > 1000,
            Col.OVERSHOOT: need < 0,
            Col.MAY_BANK: can_bank(r, own, total),
            Col.WINS: wins,
            Col.BUMPS: fits & bank.bumped,
            Col.GIFTS: gifts,
            Col.GIFT_WINS: gifts & (bank.winner == bank.gift_to),
            Col.POINTS_LOST: lost,
            Col.OWN_SCORE_AFTER: jnp.where(wins, 1.0, after),
            Col.TURN_EV: jnp.where(banks, bank_ev, roll_ev),
            Col.ENDS_IN_50: total % r.score_step != 0,
        }
        parts = [columns[c].astype(jnp.float32).reshape(NUM_ACTIONS, -1) for c in sorted(columns)]
        rows = jnp.concatenate(parts, axis=1)
        assert rows.shape == (NUM_ACTIONS, ACTION_FEATURES)
        return jnp.where(legal[:, None], rows, 0.0)

    def _finish(self, s: State) -> State:
        """Rewards, mask and observation of a state whose numbers are set."""
        s = self._status(s)
        mask = self._real_mask(s)
        ended = s.terminated | s.truncated
        seat = jnp.arange(self.n_players)
        rewards = jnp.where(s.terminated, jnp.where(seat == s.winner, 1.0, -1.0), 0.0)
        return s.replace(
            observation=self._observe(s, s.current_player, mask),
            legal_action_mask=mask | ended,
            rewards=rewards.astype(jnp.float32),
        )


# ------------------------------------------------------------------ one learner
@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class LearnerState:
    """One game seen by the learning seat (``LearnerEnv``). After a step that ended the
    game, ``reward`` / ``terminated`` / ``truncated`` / ``winner`` / ``turns`` describe
    that game and ``final_observation`` is its last observation, while ``game``,
    ``observation`` and ``legal_action_mask`` already belong to the next deal (Gymnasium's
    same-step auto-reset, as ``FiveThousand-v0``'s vector environment)."""

    game: State
    learner_seat: Array  # int32 ()
    observation: Array  # float32: from the learner's seat
    legal_action_mask: Array  # bool (64,): the learner's legal actions
    reward: Array  # float32 ()
    terminated: Array  # bool ()
    truncated: Array  # bool ()
    final_observation: Array  # float32
    winner: Array  # int32 (): the ended game's winner (-1: none or not ended)
    turns: Array  # int32 (): the ended game's turns

    def replace(self, **changes: Any) -> LearnerState:
        return dataclasses.replace(self, **changes)


@dataclasses.dataclass(frozen=True)
class LearnerEnv:
    """One learning seat against `opponent` (a ``JaxPolicy``: one game's state and a key
    to an action, e.g. ``agents.jax_bots.jax_bot("random", game)``) in every other seat.
    The learner's seat is drawn at each deal (`learner_seat` None) or fixed. A deal that
    ends before the learner has a decision is dealt again, as ``FiveThousand-v0`` does.
    Reward +1 / -1 when the learner wins / loses, -1 for an illegal action (which ends
    the game), 0 otherwise and on a cut-off game."""

    game: FiveThousandJax
    opponent: JaxPolicy
    learner_seat: int | None = None

    def __post_init__(self) -> None:
        seat = self.learner_seat
        if seat is not None and not (
            isinstance(seat, int) and not isinstance(seat, bool) and 0 <= seat < self.game.n_players
        ):
            raise ValueError(
                f"learner_seat must be None or 0..{self.game.n_players - 1}, got {seat!r}"
            )

    @property
    def observation_size(self) -> int:
        return self.game.observation_size

    def reset(self, key: Array) -> LearnerState:
        """A new deal, played on to the learner's first decision (a deal that ends
        before it is dealt again)."""
        k_seat, k_play = jax.random.split(key)
        g, seat = self.game.new_game(), self._draw_seat(k_seat)
        return self._handed_to_learner(g, seat, k_play, record=False)

    def step(self, state: LearnerState, action: Array, key: Array) -> LearnerState:
        """The learner takes `action`; the opponents play until the learner's next
        decision or the end; an ended game is replaced by a new deal at once."""
        k_step, k_play = jax.random.split(key)
        after = self.game.step(state.game, action, k_step)  # an illegal action ends it
        return self._handed_to_learner(after, state.learner_seat, k_play, record=True)

    # ------------------------------------------------------------- internals
    def _draw_seat(self, key: Array) -> Array:
        if self.learner_seat is not None:
            return jnp.int32(self.learner_seat)
        return jax.random.randint(key, (), 0, self.game.n_players, dtype=jnp.int32)

    def _handed_to_learner(
        self, g: State, seat: Array, key: Array, *, record: bool
    ) -> LearnerState:
        """Play `g` on (rolls, the opponents' decisions, a new deal for a game that
        ended) until the learner must decide, in one loop: under ``vmap`` every lane runs
        as many rounds as the slowest one, so each round does all a lane may need next:
        deal anew if the game ended, else decide for an opponent, then roll if a roll is
        due. With `record`, the first game to end is kept (with the learner's seat in
        it) for the step's reward and end flags."""
        env = self.game

        def learner_due(c) -> Array:
            s, seat = c[0], c[1]
            return ~(s.terminated | s.truncated) & ~s.is_chance & (s.current_player == seat)

        def body(c):
            s, seat, key, ended_first, end_state, end_seat = c
            key, k_bot, k_seat, k_roll = jax.random.split(key, 4)
            ended = s.terminated | s.truncated
            first = ended & ~ended_first
            end_state = _where(first, s, end_state)
            end_seat = jnp.where(first, seat, end_seat)
            decided = env._decide_raw(s, self.opponent(env._finish(s), k_bot))
            s = _where(ended, env.new_game(), _where(s.is_chance, s, decided))
            seat = jnp.where(ended, self._draw_seat(k_seat), seat)
            rolled = env._roll_raw(s, draw_roll(k_roll, s.dice_left))
            s = _where(s.is_chance, rolled, s)
            return s, seat, key, ended_first | ended, end_state, end_seat

        start = (g, seat, key, jnp.bool_(False), g, seat)
        g, seat, _, ended, end_state, end_seat = jax.lax.while_loop(
            lambda c: ~learner_due(c), body, start
        )
        g = env._finish(g)  # the learner is to move: its observation and mask
        observation, mask = g.observation, g.legal_action_mask
        ended &= record  # a reset tells nothing of the deals it replaced
        won = end_state.winner == end_seat  # end flags and winner: set by _status
        reward = jnp.where(ended & end_state.terminated, jnp.where(won, 1.0, -1.0), 0.0)
        return LearnerState(
            game=g,
            learner_seat=seat,
            observation=observation,
            legal_action_mask=mask,
            reward=reward.astype(jnp.float32),
            terminated=ended & end_state.terminated,
            truncated=ended & end_state.truncated,
            final_observation=jnp.where(ended, env.observe(end_state, end_seat), observation),
            winner=jnp.where(ended, end_state.winner, jnp.int32(-1)),
            turns=jnp.where(ended, end_state.turns, g.turns),
        )
