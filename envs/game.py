"""The game of 5000 as a state machine (RULES.md R4-R11). Knows nothing of RL.

A game alternates two kinds of steps, as in OpenSpiel:

- a *chance* step, ``Game.roll()``: the current player rolls the dice not held. The
  dice come from the game's ``numpy.random.Generator`` or are given by the caller
  (tests, replays). A bust ends the turn at once (R4), so it never needs a decision.
- a *decision* step, ``Game.act(action)``: the player holds a scoring set of the roll
  and then banks or rolls again, both in one action (see ``fivethousand_rl.envs.rules`` for the
  encoding).

``state.phase`` says which step comes next: ``"roll"``, ``"decide"`` or ``"over"``.

For search (expectimax, MCTS with chance nodes) the game is its own model:
``Game.clone()`` is an independent copy (its dice generator included: same future
rolls); a decision that rolls on stops at the chance node without rolling (the
environments roll at once, the game does not); ``Game.chance_outcomes()`` lists the
rolls that may come, with their probabilities, in a fixed order (``chance_index``), and
``Game.roll(dice)`` applies the one chosen. docs/search.md has a worked agent.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache, lru_cache
from typing import Any, NamedTuple

import numpy as np

from fivethousand_rl.envs.rules import (
    BANK_BIT,
    NUM_ACTIONS,
    NUM_DICE,
    ROLL_BY_CODE,
    ROLL_INFO,
    RollInfo,
    Rules,
    can_bank,
    describe_action,
    format_dice,
    roll_info,
    roll_probabilities,
)

ROLL, DECIDE, OVER = "roll", "decide", "over"
MIN_PLAYERS, MAX_PLAYERS = 2, 8  # the one bound on the table size (R11)


class IllegalMoveError(ValueError):
    """An action that the rules do not allow in the current state."""


def is_int(value: object) -> bool:
    """Whether a value read from a save is an integer (not a bool, float or string):
    int(True), int(2.7) and int("3") would hide a corrupt file."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def check_players(n_players: object, name: str = "n_players") -> int:
    """`n_players` if it is a table size the rules allow, else a one-line ValueError
    naming the argument (every entry point checks the player count here)."""
    if not is_int(n_players) or not MIN_PLAYERS <= n_players <= MAX_PLAYERS:
        raise ValueError(f"{name} must be {MIN_PLAYERS}..{MAX_PLAYERS}, got {n_players!r}")
    return int(n_players)


def in_turn_order(scores: Sequence[int], first: int) -> tuple[int, ...]:
    """The banked scores rotated so that seat `first` comes first, then the seats after
    it in playing order: how a position is seen from the player to move (the solver,
    the planners and the observations all use this order)."""
    return tuple(scores[first:]) + tuple(scores[:first])


def action_index(action: object) -> int:
    """`action` as an int of the action space (0..63), or a one-line ValueError: the
    environments' check of what a caller passes to step() (not an assert, which
    ``python -O`` drops; a legal action is the game's to judge)."""
    try:
        if isinstance(action, bool | np.bool_):
            raise TypeError
        index = operator.index(action)  # ints and numpy integers, not 1.5 or "3"
    except TypeError:
        index = None
    if index is None or not 0 <= index < NUM_ACTIONS:
        raise ValueError(f"action must be an integer in 0..{NUM_ACTIONS - 1}, got {action!r}")
    return index


def _is_dice(value: object) -> bool:
    return isinstance(value, list | tuple) and all(is_int(d) for d in value)


# Every field of a saved state: (is its value well-typed?, what it should be, default
# when absent; _REQUIRED means it may not be absent).
_REQUIRED = object()
_STATE_FIELDS: dict[str, tuple[Any, str, Any]] = {
    "scores": (lambda v: isinstance(v, list) and all(map(is_int, v)), "a list of ints", _REQUIRED),
    "current": (is_int, "an integer", _REQUIRED),
    "turn_total": (is_int, "an integer", _REQUIRED),
    "dice_left": (is_int, "an integer", _REQUIRED),
    "roll": (lambda v: v is None or _is_dice(v), "null or a list of dice", _REQUIRED),
    "held": (lambda v: isinstance(v, list) and all(map(_is_dice, v)), "a list of dice lists", []),
    "phase": (lambda v: isinstance(v, str), "a string", _REQUIRED),
    "winner": (lambda v: v is None or is_int(v), "null or an integer", None),
    "turns": (is_int, "an integer", 0),
    # Saves written before events became records carry the last event's text: ignored.
    "last_event": (lambda v: isinstance(v, str), "a string", ""),
}


def _fields_problem(d: object) -> str:
    """Why `d` is not a dict of well-typed state fields, or ""."""
    if not isinstance(d, dict):
        return f"a game state is a JSON object, not {type(d).__name__}"
    if unknown := sorted(set(d) - set(_STATE_FIELDS), key=str):
        return f"unknown field {unknown[0]!r}"
    for name, (ok, what, default) in _STATE_FIELDS.items():
        if name not in d:
            if default is _REQUIRED:
                return f"missing field {name!r}"
        elif not ok(d[name]):
            return f"{name} must be {what}, not {d[name]!r}"
    return ""


@dataclass(slots=True)
class GameState:
    """Everything that defines a position; JSON-serializable with ``to_dict``."""

    scores: list[int]  # banked score of each seat
    current: int = 0  # seat whose turn it is
    turn_total: int = 0  # points held so far this turn
    dice_left: int = NUM_DICE  # dice not held this turn: the next roll's size (R6)
    roll: tuple[int, ...] | None = None  # sorted dice awaiting a decision
    held: list[tuple[int, ...]] = field(default_factory=list)  # holds of this turn
    phase: str = ROLL
    winner: int | None = None
    turns: int = 0  # turns completed (banked or bust)

    @property
    def n_players(self) -> int:
        return len(self.scores)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scores": list(self.scores),
            "current": self.current,
            "turn_total": self.turn_total,
            "dice_left": self.dice_left,
            "roll": list(self.roll) if self.roll is not None else None,
            "held": [list(h) for h in self.held],
            "phase": self.phase,
            "winner": self.winner,
            "turns": self.turns,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], rules: Rules) -> GameState:
        """The state `d` (as written by ``to_dict``), checked field by field and against
        the rules (``state_problem``); raises a one-line ValueError if it is not valid."""
        if problem := _fields_problem(d):
            raise ValueError(f"not a valid game state: {problem}")
        d = {name: d.get(name, default) for name, (_, _, default) in _STATE_FIELDS.items()}
        state = cls(
            scores=[int(s) for s in d["scores"]],
            current=int(d["current"]),
            turn_total=int(d["turn_total"]),
            dice_left=int(d["dice_left"]),
            roll=tuple(int(x) for x in d["roll"]) if d["roll"] is not None else None,
            held=[tuple(int(x) for x in h) for h in d["held"]],
            phase=d["phase"],
            winner=None if d["winner"] is None else int(d["winner"]),
            turns=int(d["turns"]),
        )
        if problem := state_problem(state, rules):
            raise ValueError(f"not a valid game state: {problem}")
        return state


def state_problem(s: GameState, rules: Rules) -> str:
    """Why `s` breaks an invariant of the rules, or "" if it is consistent."""
    n = len(s.scores)
    if not MIN_PLAYERS <= n <= MAX_PLAYERS:
        return f"{n} players (2 to {MAX_PLAYERS} allowed)"
    for score in s.scores:
        step = rules.score_step
        if score % step or not (score == 0 or rules.entry <= score <= rules.target):
            return f"banked score {score} is not 0 or a multiple of {step} in entry..target (R10)"
    if not 0 <= s.current < n:
        return f"current seat {s.current} out of range 0..{n - 1}"
    if s.phase not in (ROLL, DECIDE, OVER):
        return f"unknown phase {s.phase!r} (roll, decide or over)"
    if (s.phase == OVER) != (s.winner is not None):
        return "a finished game needs a winner and only it"
    if s.winner is not None and not 0 <= s.winner < n:
        return f"winner seat {s.winner} out of range 0..{n - 1}"
    at_target = [p for p, score in enumerate(s.scores) if score == rules.target]
    if s.winner is not None and at_target != [s.winner]:
        return "the winner, and only the winner, must have exactly the target score (R9)"
    if s.phase != OVER and at_target:
        return "a score reached the target but the game is not over (R9)"
    if s.turns < 0:
        return f"negative turn count {s.turns}"
    if s.turn_total < 0 or s.turn_total % 50:
        return f"turn total {s.turn_total} is not a non-negative multiple of 50"
    if not 1 <= s.dice_left <= NUM_DICE:
        return f"dice_left {s.dice_left} not in 1..5"
    for h in s.held:
        # Each hold is one roll's scoring set, every die of it scoring (R2).
        info = ROLL_INFO.get(h)  # keyed by 1 to 5 dice 1..6 in ascending order
        if info is None:
            return f"held dice {list(h)} are not 1 to 5 dice 1..6 in ascending order"
        if info.best is None or len(info.best.dice) != len(h):
            return f"held dice {format_dice(h)} do not all score (R2)"
    if s.turn_total != sum(ROLL_INFO[h].best.points for h in s.held):
        return "the turn total is not the sum of the holds of this turn"
    if s.dice_left != _dice_left_after(s.held):
        return f"dice_left {s.dice_left} does not follow from the holds of this turn (R6)"
    if s.phase == OVER and (s.turn_total or s.held):
        return "a finished game has no turn in progress"
    if s.phase == DECIDE:
        if s.roll is None or len(s.roll) != s.dice_left or tuple(sorted(s.roll)) != s.roll:
            return "a decision needs a sorted roll of dice_left dice"
        if s.roll not in ROLL_INFO or ROLL_INFO[s.roll].bust:
            return "a decision needs a scoring roll"
    elif s.roll is not None:
        return "a roll is only pending in the decide phase"
    return ""


def _dice_left_after(held: Sequence[tuple[int, ...]]) -> int | None:
    """Dice left to roll after this turn's holds (hot dice give five back, R6); None if
    the holds use more dice than were there to hold."""
    used = 0
    for h in held:
        used += len(h)
        if used > NUM_DICE:
            return None
        if used == NUM_DICE:
            used = 0
    return NUM_DICE - used


def _gift_candidate(scores: Sequence[int], banker: int, rules: Rules) -> int | None:
    """The other player with the lowest score among those with at least the entry
    score, ties to the first in turn order after the banker; None if nobody (R9)."""
    n = len(scores)
    candidate = None
    for k in range(1, n):
        p = (banker + k) % n
        if scores[p] >= rules.entry and (candidate is None or scores[p] < scores[candidate]):
            candidate = p
    return candidate


class BankOutcome(NamedTuple):
    """What banking `total` does (R8, R9); made by ``bank_outcome``.

    ``fivethousand_rl.envs.render.bank_text`` puts it in words.
    """

    banker: int
    total: int
    allowed: bool  # R8; when False nothing below changes anything
    why_not: str  # why banking is not allowed, e.g. "ends in 50" ("" when allowed)
    scores: tuple[int, ...]  # every seat's banked score afterwards
    winner: int | None = None  # the banker (exactly the target) or a gift's recipient
    bumped: tuple[int, ...] = ()  # other seats that had the new score: now 0
    overshoot: bool = False  # the banker's score would pass the target
    gift_to: int | None = None  # overshoot: who receives the turn total
    lost_why: str = ""  # overshoot with no gift: why nobody receives it
    lost_candidate: int | None = None  # ... the seat it would have taken past the target

    @property
    def lost(self) -> bool:
        """The turn total goes nowhere (an overshoot that nobody may receive)."""
        return self.overshoot and self.gift_to is None


def _bank_refusal(banked: int, total: int, rules: Rules) -> str:
    """Why `can_bank` refuses (R8, V1, V4), in a few words."""
    if total <= 0:
        return "nothing to bank"
    reasons = []
    if rules.fifty_rule and total % 100 == 50:
        reasons.append("ends in 50")
    if banked == 0 and total < rules.entry:
        reasons.append(f"is under the {rules.entry} needed to enter")
    return " and ".join(reasons)


def bank_outcome(scores: Sequence[int], banker: int, total: int, rules: Rules) -> BankOutcome:
    """What `banker` banking a turn total of `total` would do to `scores` (R8, R9): the
    one place where banking is decided (``Game`` applies it). Pure: `scores` is not
    modified."""
    before = tuple(map(int, scores))
    if not can_bank(before[banker], total, rules):
        why = _bank_refusal(before[banker], total, rules)
        return BankOutcome(banker, total, False, why, before)
    new = before[banker] + total
    if new <= rules.target:
        # A bump: every *other* seat on the new score drops to 0 (R9), unless the house
        # rules have no bumps (V2).
        bumped = (
            ()
            if new == rules.target or not rules.bump
            else tuple(p for p, x in enumerate(before) if p != banker and x == new)
        )
        after = tuple(new if p == banker else 0 if p in bumped else x for p, x in enumerate(before))
        winner = banker if new == rules.target else None
        return BankOutcome(banker, total, True, "", after, winner, bumped)
    # Overshoot: the banker keeps their score; the total is a gift, or lost (R9), or
    # always lost under the house rule V3.
    gifts = rules.overshoot == "gift"
    recipient = _gift_candidate(before, banker, rules) if gifts else None
    if recipient is None or before[recipient] + total > rules.target:
        if not gifts:
            why = "overshoots are lost under these rules"
        elif recipient is None:
            why = f"nobody else has {rules.entry} or more"
        else:
            why = f"it would take them past {rules.target}"
        return BankOutcome(
            banker, total, True, "", before, overshoot=True, lost_why=why, lost_candidate=recipient
        )
    gifted = before[recipient] + total
    after = tuple(gifted if p == recipient else x for p, x in enumerate(before))
    winner = recipient if gifted == rules.target else None
    return BankOutcome(banker, total, True, "", after, winner, overshoot=True, gift_to=recipient)


class Move(NamedTuple):
    """One legal action of the pending decision and everything it leads to: the one
    place that says what an action does (``Game.moves``). Encoders, bots, the solver's
    glue, play and the environments read these instead of working it out again."""

    action: int
    banks: bool  # bank after holding (else roll the dice left)
    held: tuple[int, ...]  # the dice set aside, sorted
    points: int  # what they score (R2)
    turn_total: int  # the turn total after holding them
    dice_left: int  # dice the next roll would have: 5 again after hot dice (R6)
    bank: BankOutcome | None  # a banking action: what banking does; None: rolls on
    why_no_bank: str  # why this turn total could not be banked (R8); "" if it could


class Rolled(NamedTuple):
    """Event: `seat` rolled `dice` with `turn_total` points held so far this turn (0: the
    turn's first roll); a bust ended the turn and lost them (R4)."""

    seat: int
    dice: tuple[int, ...]
    bust: bool
    turn_total: int


class Moved(NamedTuple):
    """Event: `seat` took `move` on the roll `roll` (a banking move ended the turn)."""

    seat: int
    roll: tuple[int, ...]
    move: Move


Event = Rolled | Moved


def rng_state_problem(bit_generator: np.random.BitGenerator, state: object) -> str:
    """Why `state` is not a state of `bit_generator`'s kind (as its ``.state`` gives it,
    through JSON), or "". Numpy's own setter takes floats, booleans and out-of-range
    words silently, so PCG64 (what ``default_rng`` uses) is checked field by field."""
    kind = type(bit_generator).__name__
    if not isinstance(state, dict) or state.get("bit_generator") != kind:
        return f"a generator state is an object with 'bit_generator': {kind!r}"
    if kind == "PCG64":
        inner = state.get("state")
        words = [
            (inner, "state", 128),
            (inner, "inc", 128),
            (state, "has_uint32", 1),
            (state, "uinteger", 32),
        ]
        if set(state) != {"bit_generator", "state", "has_uint32", "uinteger"} or not (
            isinstance(inner, dict) and set(inner) == {"state", "inc"}
        ):
            return "a PCG64 state has exactly state.state, state.inc, has_uint32, uinteger"
        for where, key, bits in words:
            if not is_int(where[key]) or not 0 <= where[key] < 2**bits:
                return f"PCG64 {key} must be an integer in 0..2**{bits}-1, not {where[key]!r}"
    try:
        type(bit_generator)().state = state  # a scratch generator: numpy's own checks
    except (TypeError, ValueError, KeyError, OverflowError) as e:
        return f"not a {kind} state ({' '.join(str(e).split())})"
    return ""


# The seed of the bit generators that copies of a dice stream build before setting their
# state: a fixed SeedSequence saves gathering entropy from the OS for a state overwritten.
_SCRATCH_SEED = np.random.SeedSequence(0)


class _DiceStream:
    """Uniform rolls drawn from a Generator in batches (one draw per roll, fast)."""

    BATCH = 1024

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng: np.random.Generator | None = rng
        # A copy's generator until it needs one: (bit generator class, state when copied).
        self._snapshot: tuple[type[np.random.BitGenerator], dict] | None = None
        self._codes: list[int] = []
        self._next = 0

    @property
    def rng(self) -> np.random.Generator:
        """The generator of the dice; a copy builds its own from its snapshot here, when
        it first needs one."""
        if self._rng is None:
            kind, state = self._snapshot
            bit_generator = kind(_SCRATCH_SEED)
            bit_generator.state = state
            self._rng, self._snapshot = np.random.Generator(bit_generator), None
        return self._rng

    def copy(self) -> _DiceStream:
        """An independent stream that draws the same rolls as this one from here on.

        The generator's state is read now (this stream may go on drawing; a generator
        passed by a caller may be drawn from elsewhere) but made into a generator only
        when the copy draws past its buffered rolls: search copies games by the
        thousand and sets their dice. Neither the snapshot nor the buffer is ever
        modified in place (``draw`` and ``set_state`` replace them), so both are shared."""
        out = _DiceStream.__new__(_DiceStream)
        if self._rng is None:
            out._snapshot = self._snapshot
        else:
            bit_generator = self._rng.bit_generator
            out._snapshot = (type(bit_generator), bit_generator.state)
        out._rng = None
        out._codes = self._codes
        out._next = self._next
        return out

    def get_state(self) -> dict:
        return {"rng": self.rng.bit_generator.state, "codes": list(self._codes), "next": self._next}

    def state_problem(self, state: object) -> str:
        """Why `state` is not one ``get_state`` could have returned, or ""."""
        if not isinstance(state, dict) or set(state) != {"rng", "codes", "next"}:
            return "a dice state is an object with exactly 'rng', 'codes' and 'next'"
        codes, next_ = state["codes"], state["next"]
        if not isinstance(codes, list) or len(codes) > self.BATCH:
            return f"codes must be a list of at most {self.BATCH} rolls"
        bad = next((c for c in codes if not is_int(c) or not 0 <= c < 6**NUM_DICE), None)
        if bad is not None:
            return f"codes must be integers in 0..{6**NUM_DICE - 1}, not {bad!r}"
        if not is_int(next_) or not 0 <= next_ <= len(codes):
            return f"next must be an integer in 0..{len(codes)}, not {next_!r}"
        return rng_state_problem(self.rng.bit_generator, state["rng"])

    def set_state(self, state: dict) -> None:
        """Restore a ``get_state``; raises ValueError, changing nothing, if it is not one."""
        if problem := self.state_problem(state):
            raise ValueError(f"not a valid dice state: {problem}")
        self.rng.bit_generator.state = state["rng"]
        self._codes = [int(c) for c in state["codes"]]
        self._next = int(state["next"])

    def draw(self, n: int) -> RollInfo:
        if self._next >= len(self._codes):
            # 6**5 is a multiple of 6**n, so code % 6**n is uniform for every n.
            self._codes = self.rng.integers(0, 6**NUM_DICE, size=self.BATCH).tolist()
            self._next = 0
        code = self._codes[self._next]
        self._next += 1
        return ROLL_BY_CODE[n][code % 6**n]


@cache
def _chance_outcomes(n: int, exact: bool) -> tuple[tuple[tuple[int, ...], Any], ...]:
    """``Game.chance_outcomes`` of a roll of n dice (made once, copied out per call)."""
    outcomes = roll_probabilities(n)
    if not exact:
        return tuple(outcomes)
    # p is the float nearest ways / 6**n, with ways at most 5! = 120: rounding p * 6**n
    # gives the count back exactly.
    return tuple((dice, Fraction(round(p * 6**n), 6**n)) for dice, p in outcomes)


# Each sorted roll's position among the chance outcomes of as many dice.
_CHANCE_INDEX: dict[tuple[int, ...], int] = {
    dice: i for n in range(1, NUM_DICE + 1) for i, (dice, _) in enumerate(roll_probabilities(n))
}


def chance_index(dice: Iterable[int]) -> int:
    """The position of a roll of 1 to 5 dice (in any order) in ``Game.chance_outcomes()``
    of that many dice: a stable index, 0..251 for five dice (0..125, 0..55, 0..20 and 0..5
    for four to one), as OpenSpiel numbers chance outcomes. ValueError if `dice` is not
    1 to 5 dice of 1..6."""
    return _CHANCE_INDEX[roll_info(dice).dice]


class LegalMoves(NamedTuple):
    """The legal moves of a pending decision before banking is applied (see
    ``_legal_moves``), and the same as action numbers and as a mask."""

    by_action: dict[int, Move]
    actions: tuple[int, ...]  # ascending
    mask: np.ndarray  # bool (64,), shared: read only


@lru_cache(maxsize=1 << 16)
def _legal_moves(roll: tuple[int, ...], rules: Rules, entered: bool, turn_total: int) -> LegalMoves:
    """The legal moves of a roll, by ascending action, before banking is applied: what
    they hold and lead to depends only on these arguments (R5, R6, R8), so it is cached;
    a banking move's ``bank`` is filled in by ``Game._with_bank``. The one place that
    decides which actions are legal."""
    banked = 1 if entered else 0  # only whether the player has entered matters here
    out = {}
    for hold in sorted(ROLL_INFO[roll].holds(rules.hold), key=lambda h: h.bits):
        total = turn_total + hold.points
        left = (len(roll) - len(hold.dice)) or NUM_DICE  # hot dice (R6)
        bankable = can_bank(banked, total, rules)
        why_not = "" if bankable else _bank_refusal(banked, total, rules)
        out[hold.bits] = Move(hold.bits, False, hold.dice, hold.points, total, left, None, why_not)
        if bankable:
            out[hold.bits | BANK_BIT] = Move(
                hold.bits | BANK_BIT, True, hold.dice, hold.points, total, left, None, ""
            )
    by_action = dict(sorted(out.items()))
    mask = np.zeros(NUM_ACTIONS, dtype=bool)
    mask[list(by_action)] = True
    return LegalMoves(by_action, tuple(by_action), mask)


@lru_cache(maxsize=1 << 16)
def _banking_move(move: Move, scores: tuple[int, ...], banker: int, rules: Rules) -> Move:
    """A banking move with its BankOutcome (cached: positions recur across games)."""
    return move._replace(bank=bank_outcome(scores, banker, move.turn_total, rules))


class Game:
    """A game of 5000 between 2 to 8 seats.

    For search: ``clone()`` copies a position (dice generator included), ``act`` with a
    move that rolls on stops at the chance node without rolling, ``chance_outcomes()``
    lists the rolls that may come with their probabilities (``chance_index`` numbers
    them), and ``roll(dice)`` applies one; a bust ends the turn (R4). See
    docs/search.md.

    Args:
        n_players: number of seats, 2 to 8 (R11).
        rules: rule options (hold variant, target, entry), see ``fivethousand_rl.envs.rules.Rules``.
        seed: an int seed or a ``numpy.random.Generator`` for the dice.
        first_player: the seat that plays first.
    """

    def __init__(
        self,
        n_players: int = 2,
        rules: Rules | None = None,
        seed: int | np.random.Generator | None = None,
        first_player: int = 0,
    ) -> None:
        n_players = check_players(n_players)
        if not isinstance(first_player, int) or not 0 <= first_player < n_players:
            raise ValueError(
                f"first_player must be a seat 0..{n_players - 1}, got {first_player!r}"
            )
        self.rules = rules if rules is not None else Rules()
        self.state = GameState(scores=[0] * n_players, current=first_player)
        self.last_event: Event | None = None  # what the last step did (for display)
        self.seed(seed)

    def seed(self, seed: int | np.random.Generator | None) -> None:
        """Set the source of the dice."""
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        self._dice = _DiceStream(rng)

    def dice_state(self) -> dict:
        """The dice source's exact position (generator state and unused draws)."""
        return self._dice.get_state()

    def set_dice_state(self, state: dict) -> None:
        """Restore a ``dice_state``; raises a one-line ValueError, changing nothing, if
        `state` is not one (wrong types, codes out of range, a foreign generator)."""
        self._dice.set_state(state)

    def clone(self) -> Game:
        """An independent copy of this game, for search: the same state, last event
        and rules, and a dice source that rolls the same dice as this game would from
        here on (``roll()`` without dice). Nothing done to either changes the other.

        Several times faster than ``copy.deepcopy`` (``benchmarks/clone_speed.py``
        measures both): the scores and holds are copied as lists, everything immutable
        (the rules, the roll, each hold, the event records) is shared, and the dice
        generator is copied from its state only if the copy draws dice."""
        s = self.state
        out = type(self).__new__(type(self))
        out.rules = self.rules
        out.state = GameState(
            list(s.scores),
            s.current,
            s.turn_total,
            s.dice_left,
            s.roll,
            list(s.held),
            s.phase,
            s.winner,
            s.turns,
        )
        out.last_event = self.last_event
        out._dice = self._dice.copy()
        return out

    # ----------------------------------------------------------------- queries
    @property
    def n_players(self) -> int:
        return len(self.state.scores)

    @property
    def over(self) -> bool:
        return self.state.phase == OVER

    def chance_outcomes(
        self, exact: bool = False
    ) -> list[tuple[tuple[int, ...], float]] | list[tuple[tuple[int, ...], Fraction]]:
        """The rolls that may come at this chance node (phase ``"roll"``), each with its
        probability: every sorted roll of the ``dice_left`` dice (``roll_probabilities``),
        in a fixed order whose positions ``chance_index`` gives (ascending dice: 252 rolls
        of five dice, 126, 56, 21 and 6 of four to one die).

        Probabilities are floats, as OpenSpiel's ``chance_outcomes`` gives them, each the
        float nearest to (ordered rolls giving it) / 6**dice_left; with `exact`,
        ``fractions.Fraction``s of those counts, which sum to exactly 1. Apply one with
        ``roll(dice)``: a bust (R3) ends the turn there (R4). RuntimeError unless a roll
        is due."""
        s = self.state
        if s.phase != ROLL:
            raise RuntimeError(
                f"no roll is due, so there are no chance outcomes (phase is {s.phase!r})"
            )
        return list(_chance_outcomes(s.dice_left, bool(exact)))

    def roll_info(self) -> RollInfo:
        """Analysis of the roll awaiting a decision."""
        if self.state.phase != DECIDE:
            raise RuntimeError(f"no roll awaits a decision (phase is {self.state.phase!r})")
        return ROLL_INFO[self.state.roll]

    def legal_actions(self) -> list[int]:
        """Legal actions in the current state, ascending; empty unless a decision is due."""
        return list(self.legal()[0]) if self.state.phase == DECIDE else []

    def action_mask(self) -> np.ndarray:
        """Boolean vector of the 64 actions, True where legal."""
        if self.state.phase != DECIDE:
            return np.zeros(NUM_ACTIONS, dtype=bool)
        return self.legal()[1].copy()

    def legal(self) -> tuple[tuple[int, ...], np.ndarray]:
        """(legal actions, boolean mask) of the pending decision: shared cached objects,
        for hot paths that only read them. Call only in the decide phase."""
        legal = self._legal_moves()
        return legal.actions, legal.mask

    def describe(self, action: int) -> str:
        """An action of the pending roll in words, e.g. ``33 (hold [1] and bank)``."""
        return f"{action} ({describe_action(action, self.state.roll or ())})"

    def moves(self) -> list[Move]:
        """Every legal action of the pending decision with what it leads to (``Move``),
        by ascending action; empty unless a decision is due."""
        if self.state.phase != DECIDE:
            return []
        return [self._with_bank(move) for move in self._legal_moves().by_action.values()]

    def move(self, action: int) -> Move:
        """What `action` does in the pending decision; IllegalMoveError (naming the
        legal actions) if the rules do not allow it."""
        s = self.state
        if s.phase != DECIDE:
            raise IllegalMoveError(f"no decision is due: the game is in the {s.phase!r} phase")
        if type(action) is not int:  # numpy integers are fine; booleans are not actions
            try:
                if isinstance(action, bool | np.bool_):
                    raise TypeError("a boolean is not an action")
                action = operator.index(action)
            except TypeError:
                raise IllegalMoveError(self._illegal_message(action)) from None
        move = self._legal_moves().by_action.get(action)
        if move is None:
            raise IllegalMoveError(self._illegal_message(action))
        return self._with_bank(move)

    def _legal_moves(self) -> LegalMoves:
        s, rules = self.state, self.rules
        return _legal_moves(s.roll, rules, s.scores[s.current] > 0, s.turn_total)

    def _with_bank(self, move: Move) -> Move:
        """`move` with its BankOutcome, which depends on every score."""
        if not move.banks:
            return move
        s, rules = self.state, self.rules
        return _banking_move(move, tuple(s.scores), s.current, rules)

    # ----------------------------------------------------------------- steps
    def roll(self, dice: Iterable[int] | None = None) -> RollInfo:
        """Roll the dice not held (R4, R6): random, or the given `dice` (any order).

        A bust ends the turn (R4). Returns the analysis of the roll.
        """
        s = self.state
        if s.phase != ROLL:
            raise IllegalMoveError(f"cannot roll now: the game is in the {s.phase!r} phase")
        if dice is None:
            info = self._dice.draw(s.dice_left)
        else:
            # The rolls of chance_outcomes() are ROLL_INFO's own keys (search rolls them
            # by the thousand); any other dice are checked and sorted first.
            info = ROLL_INFO.get(dice) if type(dice) is tuple else None
            if info is None or info.dice is not dice:
                info = roll_info(dice)
            if len(info.dice) != s.dice_left:
                raise IllegalMoveError(
                    f"the roll must have {s.dice_left} dice, got {len(info.dice)}: "
                    f"{format_dice(info.dice)}"
                )
        self.last_event = Rolled(s.current, info.dice, info.bust, s.turn_total)
        if info.bust:
            self._end_turn()
        else:
            s.roll, s.phase = info.dice, DECIDE
        return info

    def act(self, action: int) -> Move:
        """Hold dice of the pending roll, then bank or roll again (R5-R9); returns the
        move taken.

        Raises IllegalMoveError (naming the legal actions) and changes nothing if the
        action is not allowed.
        """
        s = self.state
        move = None
        if s.phase == DECIDE and type(action) is int:  # the common case, without move()'s checks
            move = self._legal_moves().by_action.get(action)
        move = self.move(action) if move is None else self._with_bank(move)
        self.last_event = Moved(s.current, s.roll, move)
        s.turn_total, s.roll, s.dice_left = move.turn_total, None, move.dice_left
        s.held.append(move.held)
        if move.bank is None:
            s.phase = ROLL
            return move
        s.scores[:] = move.bank.scores  # R9, as bank_outcome decided it
        if move.bank.winner is not None:
            self._finish(move.bank.winner)
        else:
            self._end_turn()
        return move

    def _illegal_message(self, action: object) -> str:
        legal = ", ".join(self.describe(a) for a in self.legal_actions())
        known = isinstance(action, int | np.integer) and 0 <= action < NUM_ACTIONS
        what = self.describe(int(action)) if known else repr(action)
        return f"illegal action {what} for roll {format_dice(self.state.roll)}; legal: {legal}"

    def _end_turn(self) -> None:
        s = self.state
        s.turns, s.turn_total, s.dice_left, s.held, s.roll = s.turns + 1, 0, NUM_DICE, [], None
        s.phase, s.current = ROLL, (s.current + 1) % len(s.scores)

    def _finish(self, winner: int) -> None:
        self._end_turn()
        self.state.winner, self.state.phase = winner, OVER

    # ----------------------------------------------------------------- JSON
    def to_json(self) -> str:
        """The rules and the state as JSON (the dice generator is not included)."""
        return json.dumps({"rules": self.rules.to_dict(), "state": self.state.to_dict()})

    @classmethod
    def from_json(cls, text: str, seed: int | np.random.Generator | None = None) -> Game:
        """Rebuild a game saved by ``to_json``; raises ValueError if it is not valid."""
        try:
            data = json.loads(text)
            if not isinstance(data, dict) or set(data) != {"rules", "state"}:
                raise ValueError("a saved game is an object with 'rules' and 'state'")
            if not isinstance(data["rules"], dict):
                raise ValueError("'rules' must be an object")
            rules = Rules(**data["rules"])
            state_dict = data["state"]
        except (json.JSONDecodeError, TypeError, ValueError) as e:
            raise ValueError(f"not a saved game: {e}") from None
        except RecursionError:  # json.loads recurses once per bracket of a nested file
            raise ValueError("not a saved game: nested too deeply") from None
        state = GameState.from_dict(state_dict, rules)
        game = cls(len(state.scores), rules, seed)
        game.state = state
        return game
