"""Scoring of 5000: what the dice of one roll are worth (RULES.md R1-R3, R5, R8).

Everything here is pure and imports nothing from RL. Every sorted roll of 1 to 5
dice (461 of them) is analysed once at import time, so the engine, the bots and the
solver only ever look things up.

Moves are named by one small integer, the *action*, shared by the engine, the
environments, the bots and exported models:

- bits 0-4: which dice of the current roll are held, by position in the roll sorted
  ascending (bit i = the i-th smallest die);
- bit 5 (``BANK_BIT``): bank after holding; otherwise roll the dice that are left.

Among equal faces only the leftmost ones may be held (holding one 5 of two is bit
of the first 5), so each distinct set of held dice has exactly one action.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

NUM_DICE = 5
FACES = (1, 2, 3, 4, 5, 6)
BANK_BIT = 32
NUM_ACTIONS = 64
HOLD_VARIANTS = ("free", "all")

# Three of a kind of each face (R2): three 1s are 1100, other faces face x 100.
TRIPLE_VALUE = {1: 1100, 2: 200, 3: 300, 4: 400, 5: 500, 6: 600}
# Single dice that score on their own.
SINGLE_VALUE = {1: 100, 5: 50}
STRAIGHT_VALUE = 1500
STRAIGHTS = ((1, 2, 3, 4, 5), (2, 3, 4, 5, 6))


OVERSHOOT_VARIANTS = ("gift", "lost")


@dataclass(frozen=True)
class Rules:
    """The rule options of one game: the seeds' rules by default, each house-rule switch
    of RULES.md (V1-V5, and the hold rule R5) a field.

    hold: ``"free"`` (hold any scoring subset, the default) or ``"all"`` (hold every
        scoring die of each roll; the only choice is to bank or roll). R5.
    target: the exact score that wins, a multiple of 100 (5000; smaller values give
        shrunken games for tests and solvers). V5.
    entry: the turn total a player with 0 points needs to bank ("entering"), a multiple
        of 50 from 50 to the target; only entered players receive an overshoot gift. V1.
    bump: banking onto another player's score sends that player to 0 (R9); off, it
        stays where it is. V2.
    overshoot: ``"gift"``: an overshoot's turn total goes to the lowest entered player
        (R9); ``"lost"``: it is simply lost. V3.
    fifty_rule: no banking a turn total ending in 50 (R8); off, banked scores may end
        in 50 and an entered player may bank any total. V4.
    """

    hold: str = "free"
    target: int = 5000
    entry: int = 500
    bump: bool = True
    overshoot: str = "gift"
    fifty_rule: bool = True

    def __post_init__(self) -> None:
        if self.hold not in HOLD_VARIANTS:
            raise ValueError(f"hold must be one of {HOLD_VARIANTS}, got {self.hold!r}")
        if not _is_int(self.target) or self.target <= 0 or self.target % 100:
            raise ValueError(f"target must be a positive multiple of 100, got {self.target!r}")
        if not _is_int(self.entry) or not 50 <= self.entry <= self.target:
            raise ValueError(f"entry must be between 50 and target, got {self.entry!r}")
        if self.entry % 50:
            raise ValueError(f"entry must be a multiple of 50, got {self.entry!r}")
        for name in ("bump", "fifty_rule"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if self.overshoot not in OVERSHOOT_VARIANTS:
            raise ValueError(
                f"overshoot must be one of {OVERSHOOT_VARIANTS}, got {self.overshoot!r}"
            )

    @property
    def score_step(self) -> int:
        """What every banked score is a multiple of: 100 under the 50 rule (R10), else 50."""
        return 100 if self.fifty_rule else 50

    def banked_scores(self) -> tuple[int, ...]:
        """Every banked score a player can start a turn with, ascending: 0, then each
        multiple of ``score_step`` from the smallest total a first bank may be (the entry,
        rounded up to a total that may be banked: R8, V1, V4) to below the target (R10,
        V5). The exact solvers index their tables by this grid."""
        first = next(t for t in range(self.entry, self.target + 1, 50) if can_bank(0, t, self))
        return (0, *range(first, self.target, self.score_step))

    def to_dict(self) -> dict:
        """The options as saved with games and models: hold, target and entry always, a
        house-rule switch only when it differs from the seeds' rule (so files saved
        before the switches existed read the same)."""
        d = {"hold": self.hold, "target": self.target, "entry": self.entry}
        for name, default in SWITCH_DEFAULTS.items():
            if getattr(self, name) != default:
                d[name] = getattr(self, name)
        return d


# The switches that to_dict writes only when they differ from the seeds' rules.
SWITCH_DEFAULTS = {"bump": True, "overshoot": "gift", "fifty_rule": True}


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


DEFAULT_RULES = Rules()

# The largest target the command lines, saved games and training runs take (tests and
# library calls may build any Rules). The exact 2-player solver behind hints, the optimal
# bot and best responses keeps a table per pair of banked scores and turn total: it grows
# as the target cubed: about 1.2 GB at this target (no 50 rule, entry 50, the largest
# grid), so some 10 GB at twice it. Said in docs/rules.md (V5).
MAX_TARGET = 10_000


def check_target_bound(rules: Rules) -> Rules:
    """`rules` if its target is at most MAX_TARGET; a one-line ValueError naming the
    limit otherwise. Checked where rules come from a user, before any work."""
    if rules.target > MAX_TARGET:
        raise ValueError(
            f"target must be at most {MAX_TARGET} (the exact solver's tables would not "
            f"fit in memory beyond it), got {rules.target}"
        )
    return rules


def count_score(counts: Sequence[int]) -> int:
    """Points of held dice given as counts per face (``counts[f]`` for f in 1..6).

    Returns 0 when any die would not take part in the score (R2): such a set cannot
    be held.
    """
    n = sum(counts[f] for f in FACES)
    if n == 0:
        return 0
    if n == NUM_DICE and all(counts[f] <= 1 for f in FACES):
        # Five distinct faces: one of the two straights, or 1-2-3-4-6 / 1-2-3-5-6 /
        # 1-2-4-5-6 / 1-3-4-5-6, which are not straights.
        faces = tuple(f for f in FACES if counts[f])
        if faces in STRAIGHTS:
            return STRAIGHT_VALUE
    points = 0
    for face in FACES:
        c = counts[face]
        if c >= 3:
            # Four of a kind doubles, five of a kind quadruples the triple (R2).
            points += TRIPLE_VALUE[face] * (1 << (c - 3))
        elif c:
            if face not in SINGLE_VALUE:
                return 0
            points += SINGLE_VALUE[face] * c
    return points


def _counts(dice: Iterable[int]) -> list[int]:
    counts = [0] * 7
    for d in dice:
        counts[d] += 1
    return counts


class Hold(NamedTuple):
    """One legal way to set aside dice from a roll."""

    bits: int  # positions held in the sorted roll (bits 0-4 of an action)
    dice: tuple[int, ...]  # the held faces, sorted
    points: int  # what they score (R2), always > 0


@dataclass(frozen=True)
class RollInfo:
    """Everything the game needs to know about one sorted roll."""

    dice: tuple[int, ...]
    bust: bool  # no scoring set (R3)
    free_holds: tuple[Hold, ...]  # every legal hold under hold="free" (R5)
    best: Hold | None  # the best reading of the whole roll: the only hold under "all"
    holds_by_bits_free: dict[int, Hold]
    holds_by_bits_all: dict[int, Hold]

    def holds(self, hold_variant: str) -> tuple[Hold, ...]:
        if hold_variant == "free":
            return self.free_holds
        return (self.best,) if self.best is not None else ()


def _analyse(roll: tuple[int, ...]) -> RollInfo:
    holds: list[Hold] = []
    # Leftmost-first holds: for each face, hold the first k dice of its run.
    runs = [(face, [i for i, d in enumerate(roll) if d == face]) for face in sorted(set(roll))]
    for ks in itertools.product(*(range(len(pos) + 1) for _, pos in runs)):
        bits = 0
        held: list[int] = []
        for (face, positions), k in zip(runs, ks, strict=True):
            for p in positions[:k]:
                bits |= 1 << p
            held.extend([face] * k)
        points = count_score(_counts(held))
        if points > 0:
            holds.append(Hold(bits, tuple(held), points))
    holds.sort(key=lambda h: h.bits)
    best = max(holds, key=lambda h: h.points) if holds else None
    return RollInfo(
        dice=roll,
        bust=not holds,
        free_holds=tuple(holds),
        best=best,
        holds_by_bits_free={h.bits: h for h in holds},
        holds_by_bits_all={best.bits: best} if best else {},
    )


# All sorted rolls of n dice, and the analysis of each.
SORTED_ROLLS: dict[int, tuple[tuple[int, ...], ...]] = {
    n: tuple(itertools.combinations_with_replacement(FACES, n)) for n in range(1, NUM_DICE + 1)
}
ROLL_INFO: dict[tuple[int, ...], RollInfo] = {
    roll: _analyse(roll) for n in SORTED_ROLLS for roll in SORTED_ROLLS[n]
}


def _ordered_roll_table(n: int) -> tuple[RollInfo, ...]:
    """RollInfo of every ordered roll of n dice, indexed by its base-6 code."""
    table = []
    for code in range(6**n):
        dice = []
        for _ in range(n):
            code, digit = divmod(code, 6)
            dice.append(digit + 1)
        table.append(ROLL_INFO[tuple(sorted(dice))])
    return tuple(table)


# ROLL_BY_CODE[n][c] for c uniform in range(6**n) is a uniformly random roll of n dice.
ROLL_BY_CODE: dict[int, tuple[RollInfo, ...]] = {
    n: _ordered_roll_table(n) for n in range(1, NUM_DICE + 1)
}


def _check_dice(dice: Iterable[int], max_len: int = NUM_DICE) -> tuple[int, ...]:
    try:
        out = tuple(sorted(operator.index(d) for d in dice))
    except (TypeError, ValueError):
        raise ValueError(f"dice must be integers 1..6, got {dice!r}") from None
    if any(d not in FACES for d in out) or len(out) > max_len:
        raise ValueError(f"dice must be at most {max_len} integers 1..6, got {list(dice)!r}")
    return out


def hold_score(dice: Iterable[int]) -> int:
    """Points of dice set aside together from one roll (R2); 0 if any die doesn't score."""
    return count_score(_counts(_check_dice(dice)))


def roll_info(dice: Iterable[int]) -> RollInfo:
    """The analysis of a roll of 1 to 5 dice, in any order."""
    if not (key := _check_dice(dice)):
        raise ValueError("a roll has 1 to 5 dice, got none")
    return ROLL_INFO[key]


def is_bust(dice: Iterable[int]) -> bool:
    """True when no set of the roll's dice scores (R3)."""
    return roll_info(dice).bust


def legal_holds(dice: Iterable[int], hold: str = "free") -> list[tuple[int, ...]]:
    """The distinct sets of dice that may be held from this roll (R5), as sorted tuples."""
    Rules(hold=hold)  # validates the variant name
    return [h.dice for h in roll_info(dice).holds(hold)]


def can_bank(banked: int, turn_total: int, rules: Rules | None = None) -> bool:
    """Whether a player with `banked` points may bank `turn_total` (R8; V1 the entry,
    V4 the 50 rule): the one place where this is decided."""
    rules = rules or DEFAULT_RULES
    if turn_total <= 0 or (rules.fifty_rule and turn_total % 100 == 50):
        return False
    return banked > 0 or turn_total >= rules.entry


def roll_probabilities(n: int) -> list[tuple[tuple[int, ...], float]]:
    """Chance outcomes of rolling n dice: every sorted roll with its exact probability."""
    if not 1 <= n <= NUM_DICE:
        raise ValueError(f"n must be 1..{NUM_DICE}, got {n!r}")
    out = []
    for roll in SORTED_ROLLS[n]:
        ways = math.factorial(n)
        for c in Counter(roll).values():
            ways //= math.factorial(c)
        out.append((roll, ways / 6**n))
    return out


def bust_probability(n: int) -> float:
    """Probability that a roll of n dice scores nothing (R3)."""
    return sum(p for roll, p in roll_probabilities(n) if ROLL_INFO[roll].bust)


def action_for(dice_held: Iterable[int], roll: Sequence[int], bank: bool) -> int:
    """The action that holds `dice_held` from `roll` (leftmost-first), then banks or rolls."""
    info = roll_info(roll)
    want = Counter(_check_dice(dice_held))
    bits = 0
    for i, d in enumerate(info.dice):
        if want[d] > 0:
            want[d] -= 1
            bits |= 1 << i
    if +want:
        raise ValueError(f"cannot hold {sorted(dice_held)} from the roll {list(info.dice)}")
    return bits | (BANK_BIT if bank else 0)


def format_dice(dice: Iterable[int]) -> str:
    """Dice as players see them everywhere (events, menus, logs): ``[1 1 5]``."""
    return "[" + " ".join(str(int(d)) for d in dice) + "]"


def describe_action(action: int, roll: Sequence[int], rolling: str = "roll") -> str:
    """Human-readable form of an action, e.g. ``hold [1 5] and bank`` (`rolling`: the
    words for rolling on, "roll" in menus, "roll on" in advice)."""
    dice = tuple(sorted(roll))
    held = [d for i, d in enumerate(dice) if action >> i & 1]
    return f"hold {format_dice(held)} and {'bank' if action & BANK_BIT else rolling}"
