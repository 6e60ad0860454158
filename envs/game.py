"""The game of 5000 as a state machine (RULES.md R4-R11). Knows nothing of RL.

A game alternates two kinds of steps, as in OpenSpiel:

- a *chance* step, ``Game.roll()``: the current player rolls the dice not held. The
  dice come from the game's ``numpy.random.Generator`` or are given by the caller
  (tests, replays). A bust ends the turn at once (R4), so it never needs a decision.
- a *decision* step, ``Game.act(action)``: the player holds a scoring set of the roll
  and then banks or rolls again, both in one action (see ``envs.rules`` for the
  encoding).

``state.phase`` says which step comes next: ``"roll"``, ``"decide"`` or ``"over"``.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from envs.rules import (
    BANK_BIT,
    NUM_ACTIONS,
    NUM_DICE,
    ROLL_BY_CODE,
    ROLL_INFO,
    RollInfo,
    Rules,
    can_bank,
    describe_action,
    roll_info,
)

ROLL, DECIDE, OVER = "roll", "decide", "over"
MIN_PLAYERS, MAX_PLAYERS = 2, 8


# (roll, hold variant, entry, entered, turn total % 100, capped turn total) -> legal moves
_LEGAL_CACHE: dict[tuple, tuple[tuple[int, ...], np.ndarray]] = {}


class IllegalMoveError(ValueError):
    """An action that the rules do not allow in the current state."""


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
    last_event: str = ""  # what the last step did, for display

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
            "last_event": self.last_event,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], rules: Rules) -> GameState:
        try:
            state = cls(
                scores=[int(s) for s in d["scores"]],
                current=int(d["current"]),
                turn_total=int(d["turn_total"]),
                dice_left=int(d["dice_left"]),
                roll=tuple(int(x) for x in d["roll"]) if d["roll"] is not None else None,
                held=[tuple(int(x) for x in h) for h in d.get("held", [])],
                phase=str(d["phase"]),
                winner=None if d.get("winner") is None else int(d["winner"]),
                turns=int(d.get("turns", 0)),
                last_event=str(d.get("last_event", "")),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"not a valid game state: {e!r}") from None
        problem = state_problem(state, rules)
        if problem:
            raise ValueError(f"not a valid game state: {problem}")
        return state


def state_problem(s: GameState, rules: Rules) -> str:
    """Why `s` breaks an invariant of the rules, or "" if it is consistent."""
    n = len(s.scores)
    if not MIN_PLAYERS <= n <= MAX_PLAYERS:
        return f"{n} players (2 to {MAX_PLAYERS} allowed)"
    for score in s.scores:
        if score % 100 or not (score == 0 or rules.entry <= score <= rules.target):
            return f"banked score {score} is not 0 or a multiple of 100 in entry..target (R10)"
    if not 0 <= s.current < n:
        return f"current seat {s.current} out of range"
    if s.phase not in (ROLL, DECIDE, OVER):
        return f"unknown phase {s.phase!r}"
    if (s.phase == OVER) != (s.winner is not None):
        return "a finished game needs a winner and only it"
    if s.winner is not None and s.scores[s.winner] != rules.target:
        return "the winner must have exactly the target score"
    if s.phase != OVER and any(score >= rules.target for score in s.scores):
        return "a score reached the target but the game is not over"
    if s.turns < 0:
        return f"negative turn count {s.turns}"
    if s.turn_total < 0 or s.turn_total % 50:
        return f"turn total {s.turn_total} is not a non-negative multiple of 50"
    if not 1 <= s.dice_left <= NUM_DICE:
        return f"dice_left {s.dice_left} not in 1..5"
    if s.turn_total != sum(ROLL_INFO[h].best.points if h in ROLL_INFO else -1 for h in s.held):
        return "the turn total is not the sum of the holds of this turn"
    for h in s.held:
        if h not in ROLL_INFO or ROLL_INFO[h].best is None or len(ROLL_INFO[h].best.dice) != len(h):
            return f"held dice {list(h)} do not all score (R2)"
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


def gift_recipient(scores: list[int], banker: int, total: int, rules: Rules) -> int | None:
    """Who receives an overshooting `total` banked by `banker` (R9): the other player
    with the lowest score among those with at least the entry score, ties to the first
    in turn order after the banker; None if nobody qualifies or the gift would take the
    recipient past the target (the points are lost)."""
    n = len(scores)
    recipient = None
    for k in range(1, n):
        p = (banker + k) % n
        if scores[p] >= rules.entry and (recipient is None or scores[p] < scores[recipient]):
            recipient = p
    if recipient is None or scores[recipient] + total > rules.target:
        return None
    return recipient


class _DiceStream:
    """Uniform rolls drawn from a Generator in batches (one draw per roll, fast)."""

    BATCH = 1024

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self._codes: list[int] = []
        self._next = 0

    def get_state(self) -> dict:
        return {"rng": self.rng.bit_generator.state, "codes": list(self._codes), "next": self._next}

    def set_state(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]
        self._codes = list(state["codes"])
        self._next = int(state["next"])

    def draw(self, n: int) -> RollInfo:
        if self._next >= len(self._codes):
            # 6**5 is a multiple of 6**n, so code % 6**n is uniform for every n.
            self._codes = self.rng.integers(0, 6**NUM_DICE, size=self.BATCH).tolist()
            self._next = 0
        code = self._codes[self._next]
        self._next += 1
        return ROLL_BY_CODE[n][code % 6**n]


class Game:
    """A game of 5000 between 2 to 8 seats.

    Args:
        n_players: number of seats, 2 to 8 (R11).
        rules: rule options (hold variant, target, entry), see ``envs.rules.Rules``.
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
        if not isinstance(n_players, int) or not MIN_PLAYERS <= n_players <= MAX_PLAYERS:
            raise ValueError(f"n_players must be 2..{MAX_PLAYERS}, got {n_players!r}")
        if not isinstance(first_player, int) or not 0 <= first_player < n_players:
            raise ValueError(
                f"first_player must be a seat 0..{n_players - 1}, got {first_player!r}"
            )
        self.rules = rules if rules is not None else Rules()
        self.state = GameState(scores=[0] * n_players, current=first_player)
        self.seed(seed)

    def seed(self, seed: int | np.random.Generator | None) -> None:
        """Set the source of the dice."""
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        self._dice = _DiceStream(rng)

    def dice_state(self) -> dict:
        """The dice source's exact position (generator state and unused draws)."""
        return self._dice.get_state()

    def set_dice_state(self, state: dict) -> None:
        self._dice.set_state(state)

    # ----------------------------------------------------------------- queries
    @property
    def n_players(self) -> int:
        return len(self.state.scores)

    @property
    def over(self) -> bool:
        return self.state.phase == OVER

    def roll_info(self) -> RollInfo:
        """Analysis of the roll awaiting a decision."""
        if self.state.phase != DECIDE:
            raise RuntimeError(f"no roll awaits a decision (phase is {self.state.phase!r})")
        return ROLL_INFO[self.state.roll]

    def legal_actions(self) -> list[int]:
        """Legal actions in the current state, ascending; empty unless a decision is due."""
        if self.state.phase != DECIDE:
            return []
        return list(self.legal()[0])

    def action_mask(self) -> np.ndarray:
        """Boolean vector of the 64 actions, True where legal."""
        if self.state.phase != DECIDE:
            return np.zeros(NUM_ACTIONS, dtype=bool)
        return self.legal()[1].copy()

    def legal(self) -> tuple[tuple[int, ...], np.ndarray]:
        """(legal actions, boolean mask) of the pending decision: shared cached objects,
        for hot paths that only read them. Call only in the decide phase."""
        # Legality depends only on the roll, the rules, whether the player has entered,
        # and the turn total up to the entry threshold and modulo 100 (R5, R8): cache it.
        s = self.state
        rules = self.rules
        entered = s.scores[s.current] > 0
        total = s.turn_total
        key = (
            s.roll,
            rules.hold,
            rules.entry,
            entered,
            total % 100,
            entered or min(total, rules.entry),
        )
        cached = _LEGAL_CACHE.get(key)
        if cached is None:
            banked = 1 if entered else 0
            actions = []
            for hold in ROLL_INFO[s.roll].holds(rules.hold):
                actions.append(hold.bits)
                if can_bank(banked, total + hold.points, rules.entry):
                    actions.append(hold.bits | BANK_BIT)
            actions.sort()
            mask = np.zeros(NUM_ACTIONS, dtype=bool)
            mask[actions] = True
            cached = _LEGAL_CACHE[key] = (tuple(actions), mask)
        return cached

    def describe(self, action: int) -> str:
        roll = self.state.roll or ()
        return f"{action} ({describe_action(action, roll)})"

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
            info = roll_info(dice)
            if len(info.dice) != s.dice_left:
                raise IllegalMoveError(
                    f"the roll must have {s.dice_left} dice, got {len(info.dice)}: {list(dice)}"
                )
        if info.bust:
            s.last_event = (
                f"player {s.current} rolled {list(info.dice)}: bust, loses {s.turn_total}"
            )
            self._end_turn()
        else:
            s.roll = info.dice
            s.phase = DECIDE
            s.last_event = f"player {s.current} rolled {list(info.dice)}"
        return info

    def act(self, action: int) -> None:
        """Hold dice of the pending roll, then bank or roll again (R5-R9).

        Raises IllegalMoveError (naming the legal actions) and changes nothing if the
        action is not allowed.
        """
        s = self.state
        if s.phase != DECIDE:
            raise IllegalMoveError(f"no decision is due: the game is in the {s.phase!r} phase")
        try:
            if isinstance(action, bool | np.bool_):
                raise TypeError("a boolean is not an action")
            action = operator.index(action)
        except TypeError:
            raise IllegalMoveError(self._illegal_message(action)) from None
        hold = ROLL_INFO[s.roll].hold_for_bits(self.rules.hold).get(action & ~BANK_BIT)
        bank = action & BANK_BIT
        total = s.turn_total + hold.points if hold is not None else 0
        if (
            hold is None
            or not 0 <= action < NUM_ACTIONS
            or (bank and not can_bank(s.scores[s.current], total, self.rules.entry))
        ):
            raise IllegalMoveError(self._illegal_message(action))
        s.turn_total = total
        s.held.append(hold.dice)
        s.roll = None
        left = s.dice_left - len(hold.dice)
        s.dice_left = left if left else NUM_DICE  # hot dice (R6)
        if bank:
            self._bank()
        else:
            s.phase = ROLL
            s.last_event = f"player {s.current} held {list(hold.dice)}, turn total {total}"

    def _illegal_message(self, action: object) -> str:
        legal = ", ".join(self.describe(a) for a in self.legal_actions())
        if isinstance(action, int | np.integer) and 0 <= action < NUM_ACTIONS:
            what = f"action {self.describe(int(action))}"
        else:
            what = f"action {action!r}"
        return f"illegal {what} for roll {list(self.state.roll)}; legal: {legal}"

    def _bank(self) -> None:
        """Apply R9 to the current player's turn total and end the turn."""
        s = self.state
        me, total, target = s.current, s.turn_total, self.rules.target
        new = s.scores[me] + total
        if new == target:
            s.scores[me] = new
            s.last_event = f"player {me} banked {total} and wins with exactly {target}"
            self._finish(me)
            return
        if new < target:
            s.scores[me] = new
            bumped = [p for p in range(len(s.scores)) if p != me and s.scores[p] == new]
            for p in bumped:
                s.scores[p] = 0  # bump (R9)
            s.last_event = f"player {me} banked {total}, now {new}" + (
                f"; bumps player {', '.join(map(str, bumped))} to 0" if bumped else ""
            )
        else:
            s.last_event = self._give_overshoot(me, total)
            if s.phase == OVER:
                return
        self._end_turn()

    def _give_overshoot(self, me: int, total: int) -> str:
        """R9 overshoot: the turn total goes to the lowest qualified opponent."""
        s = self.state
        head = f"player {me} banked {total}: overshoot"
        recipient = gift_recipient(s.scores, me, total, self.rules)
        if recipient is None:
            return head + ", no gift (nobody has entry points, or it would overshoot them)"
        new = s.scores[recipient] + total
        s.scores[recipient] = new
        if new == self.rules.target:
            self._finish(recipient)
            return head + f", gift to player {recipient} who wins with {new}"
        return head + f", gift to player {recipient}, now {new}"

    def _end_turn(self) -> None:
        s = self.state
        s.turns += 1
        s.turn_total = 0
        s.dice_left = NUM_DICE
        s.held = []
        s.roll = None
        s.phase = ROLL
        s.current = (s.current + 1) % len(s.scores)

    def _finish(self, winner: int) -> None:
        self._end_turn()
        self.state.winner = winner
        self.state.phase = OVER

    # ----------------------------------------------------------------- JSON
    def to_json(self) -> str:
        """The rules and the state as JSON (the dice generator is not included)."""
        return json.dumps({"rules": self.rules.to_dict(), "state": self.state.to_dict()})

    @classmethod
    def from_json(cls, text: str, seed: int | np.random.Generator | None = None) -> Game:
        """Rebuild a game saved by ``to_json``; raises ValueError if it is not valid."""
        try:
            data = json.loads(text)
            rules = Rules(**data["rules"])
            state_dict = data["state"]
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise ValueError(f"not a saved game: {e}") from None
        state = GameState.from_dict(state_dict, rules)
        game = cls(len(state.scores), rules, seed)
        game.state = state
        return game
