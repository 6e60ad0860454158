"""Observation encodings: what a player sees of a game, as a fixed-size float32 vector.

Two encodings: "compact" (the default, below) and "rich" (the compact vector plus
one-hot scores and per-action consequences, further down), used by the trained agents.

Shared by the Gymnasium and PettingZoo environments and by trained and exported
policies, so that a model sees the same numbers wherever it plays. Change the layout
only together with ``OBS_VERSION``.

Layout for N players, seen from seat ``s`` (other seats listed in turn order after s):

=================  ===================================================================
index              meaning
=================  ===================================================================
[0, N)             banked scores / target (own first)
[N, 2N)            1 if that player has entered (banked score > 0), else 0
[2N, 3N)           one-hot: whose turn it is, relative to the observer (0 = own)
3N                 turn total / target (at most 2)
3N+1               (target - mover's score - turn total) / target: what the player to
                   move would still need after banking now (negative: overshoot; at
                   least -1)
3N+2               1 if the turn total is off the score step (``Rules.score_step``): it
                   ends in 50 under the 50 rule, which forbids banking it (R8); always 0
                   with the rule off (V4)
3N+3               number of dice in the roll / 5
3N+4               1 if some legal action banks
[3N+5, 3N+35)      the roll, sorted ascending: 6 slots per die position, one-hot face
[3N+35, 3N+41)     count of each face 1..6 in the roll / 5
=================  ===================================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import IntEnum
from functools import cache, cached_property
from typing import Any

import numpy as np

from fivethousand_rl.envs.batch import NO_ROLL, ROLLS
from fivethousand_rl.envs.game import DECIDE, Game, check_players, in_turn_order
from fivethousand_rl.envs.i18n import _, ngettext
from fivethousand_rl.envs.rules import BANK_BIT, NUM_ACTIONS, NUM_DICE, ROLL_INFO, Rules
from fivethousand_rl.envs.rules_text import describe_rules
from fivethousand_rl.envs.solver import turn_ev_table

# 2: slot 40 of the rich action features holds the turn-EV value (was always 0 in 1).
OBS_VERSION = 2
# Every entry lies in [OBS_LOW, OBS_HIGH]; the two turn-total features are clipped there
# (only a turn total above twice the target would reach the clip).
OBS_LOW, OBS_HIGH = -1.0, 2.0


@cache
def observation_size(n_players: int) -> int:
    return compact_slices(n_players)["face_counts"].stop


def _roll_features(roll: tuple[int, ...]) -> np.ndarray:
    out = np.zeros(6 * NUM_DICE + 6, dtype=np.float32)  # the roll_one_hot and face_counts
    for i, face in enumerate(roll):
        out[6 * i + face - 1] = 1.0
        out[6 * NUM_DICE + face - 1] += 1.0 / NUM_DICE
    return out


_ROLL_FEATURE_TABLE = {roll: _roll_features(roll) for roll in ROLL_INFO}


def off_score_step(total: Any, rules: Rules) -> Any:
    """Whether a turn total (an int or an array) is off the step banked scores keep
    (``Rules.score_step``): under the 50 rule a total ending in 50, which may not be
    banked (R8, R10); never with the rule off (V4). The "ends_in_50" features."""
    return total % rules.score_step != 0


def encode(game: Game, seat: int) -> np.ndarray:
    """The observation vector of `game` as seen from `seat`."""
    s = game.state
    n = len(s.scores)
    target = game.rules.target
    scores = in_turn_order(s.scores, seat)
    whose_turn = [0.0] * n
    whose_turn[(s.current - seat) % n] = 1.0
    total = s.turn_total
    head = [score / target for score in scores]
    head += [float(score > 0) for score in scores]
    head += whose_turn
    head += [
        min(total / target, OBS_HIGH),
        max((target - s.scores[s.current] - total) / target, OBS_LOW),
        float(off_score_step(total, game.rules)),
    ]
    # `head` holds the fields before "roll_one_hot" in their order; the roll's fill the rest.
    obs = np.empty(observation_size(n), dtype=np.float32)
    if s.phase == DECIDE:
        legal = game.legal()[0]
        head += [len(s.roll) / NUM_DICE, float(legal[-1] >= BANK_BIT)]
        obs[len(head) :] = _ROLL_FEATURE_TABLE[s.roll]
    else:
        head += [0.0, 0.0]
        obs[len(head) :] = 0.0
    obs[: len(head)] = head
    return obs


# --------------------------------------------------------------------------- rich
# The "rich" encoding adds, to the compact vector above, one-hot banked scores and a
# block of features for each of the 64 actions describing where that action leads.
# A policy can then score every action with one shared function of its consequences
# (see fivethousand_rl.agents.networks), which is how the game's values are structured: what matters
# is the turn total after the hold, the dice left, and what banking it would do.
RICH_OBS_HIGH = 5.0  # points held / 1000 reach 4.4
_NEED_BINS = 21  # one-hot of the points still needed after the action: 0, 50, ..., 1000


class Col(IntEnum):
    """The columns of one action's row in the rich encoding (see ``action_features``).
    Code that builds or reads a row names its columns; one-hot groups start at their
    ``*_AT`` column."""

    LEGAL = 0
    BANKS = 1
    TURN_TOTAL = 2
    DICE_LEFT_AT = 3  # one-hot, 1..5 dice left to roll
    POINTS = 8
    NEED = 9
    NEED_AT = 10  # one-hot of the points still needed, 0..1000 by 50 (21 columns)
    NEED_OVER_1000 = 31
    OVERSHOOT = 32
    MAY_BANK = 33
    WINS = 34
    BUMPS = 35
    GIFTS = 36
    GIFT_WINS = 37
    POINTS_LOST = 38
    OWN_SCORE_AFTER = 39
    TURN_EV = 40
    ENDS_IN_50 = 41


ACTION_FEATURES = len(Col) + 4 + _NEED_BINS - 1  # 42 columns, one-hot groups included


def score_bins(rules: Rules) -> int:
    """The one-hot bins of a banked score, one per score step from 0 to the target:
    banked scores are multiples of ``Rules.score_step`` (R10; V4 without the 50 rule)."""
    return rules.target // rules.score_step + 1


def action_features(game: Game, seat: int) -> np.ndarray:
    """(64, ACTION_FEATURES) consequences of each legal action for `seat` (zeros for
    illegal actions, and for everybody but the player to move).

    Per action: 0 legal; 1 banks; 2 turn total after the hold / target; 3-7 one-hot
    dice left to roll (1..5, 5 after hot dice); 8 points held / 1000; 9 points still
    needed after it / target (clipped to [-1, 1]); 10-30 one-hot of that need in 0..1000
    by 50; 31 need > 1000; 32 need < 0 (overshoot); 33 the new total may be banked (R8);
    34 banking wins; 35 banking bumps somebody; 36 banking gifts an opponent; 37 that
    gift wins for them; 38 banking loses the points (overshoot, no gift); 39 own score
    after the action / target; 40 the points this turn is expected to bank after the
    action if the player maximized the turn's points from there on (banking: the total
    itself; rolling: ``fivethousand_rl.envs.solver.solve_turn_ev``'s value), / 1000, at most
    RICH_OBS_HIGH; 41 the new total ends in 50 under the 50 rule (``off_score_step``).

    Slot 40 is a hint, not the answer: it ignores the scores (when to bank to win is
    left to the network) and is the same table the ``turn-ev`` bot plays by.
    """
    out = np.zeros((NUM_ACTIONS, ACTION_FEATURES), dtype=np.float32)
    s = game.state
    if s.phase != DECIDE or s.current != seat:
        return out
    rules = game.rules
    target = rules.target
    own = s.scores[seat]
    turn_ev = turn_ev_table(rules)
    entered = own > 0
    for move in game.moves():
        total = move.turn_total
        need = target - own - total
        row = out[move.action]
        row[Col.LEGAL] = 1.0
        row[Col.TURN_TOTAL] = total / target
        row[Col.DICE_LEFT_AT + move.dice_left - 1] = 1.0
        row[Col.POINTS] = move.points / 1000
        row[Col.NEED] = min(max(need / target, -1.0), 1.0)
        if 0 <= need <= 1000:
            row[Col.NEED_AT + need // 50] = 1.0
        elif need > 1000:
            row[Col.NEED_OVER_1000] = 1.0
        else:
            row[Col.OVERSHOOT] = 1.0
        row[Col.MAY_BANK] = not move.why_no_bank
        row[Col.ENDS_IN_50] = off_score_step(total, rules)
        row[Col.OWN_SCORE_AFTER] = own / target
        bank = move.bank
        if bank is None:
            ev = turn_ev.roll_value(entered, total, move.dice_left)
            row[Col.TURN_EV] = min(ev / 1000, RICH_OBS_HIGH)
            continue
        row[Col.TURN_EV] = min(total / 1000, RICH_OBS_HIGH)
        row[Col.BANKS] = 1.0
        if bank.winner == seat:
            row[Col.WINS] = 1.0
            row[Col.OWN_SCORE_AFTER] = 1.0
        elif not bank.overshoot:
            row[Col.BUMPS] = bool(bank.bumped)
            row[Col.OWN_SCORE_AFTER] = bank.scores[seat] / target
        elif bank.lost:
            row[Col.POINTS_LOST] = 1.0
        else:
            row[Col.GIFTS] = 1.0
            row[Col.GIFT_WINS] = bank.winner == bank.gift_to
    return out


def encode_rich(game: Game, seat: int) -> np.ndarray:
    """The compact vector, one-hot banked scores (own first), then the action block."""
    s = game.state
    n = len(s.scores)
    bins, step = score_bins(game.rules), game.rules.score_step
    scores = in_turn_order(s.scores, seat)
    one_hot = np.zeros(n * bins, dtype=np.float32)  # the "score_one_hot" field
    one_hot[[j * bins + score // step for j, score in enumerate(scores)]] = 1.0
    return np.concatenate([encode(game, seat), one_hot, action_features(game, seat).ravel()])


ENCODINGS = {"compact": encode, "rich": encode_rich}


# ---------------------------------------------------------------- the model contract
def _fields(encoding: str, n: int, rules: Rules) -> list[tuple[str, int]]:
    """The named parts of an observation vector (`n` players), in order, with their lengths."""
    fields = [
        ("scores", n),
        ("entered", n),
        ("to_move", n),
        ("turn_total", 1),
        ("need_after_bank", 1),
        ("ends_in_50", 1),
        ("dice_in_roll", 1),
        ("some_action_banks", 1),
        ("roll_one_hot", 6 * NUM_DICE),
        ("face_counts", 6),
    ]
    if encoding == "rich":
        fields += [
            ("score_one_hot", n * score_bins(rules)),
            ("actions", NUM_ACTIONS * ACTION_FEATURES),
        ]
    return fields


@cache
def compact_slices(n_players: int) -> dict[str, slice]:
    """The compact observation's named slices (``ObsSpec.slices``; the rules do not
    change them): where both encoders write each field."""
    return ObsSpec("compact", n_players, Rules()).slices


@cache
def roll_part_table() -> np.ndarray:
    """The compact observation from "dice_in_roll" to the end by roll id (``ROLLS``; row
    ``NO_ROLL``: zeros), "some action banks" left 0 for the caller, whatever the number
    of players: what the batched encoders (numpy and JAX) gather from. Read-only."""
    at = compact_slices(2)
    start = at["dice_in_roll"].start
    table = np.zeros((NO_ROLL + 1, at["face_counts"].stop - start), dtype=np.float32)
    for i, roll in enumerate(ROLLS):
        table[i, 0] = len(roll) / NUM_DICE
        table[i, at["roll_one_hot"].start - start :] = _ROLL_FEATURE_TABLE[roll]
    table.flags.writeable = False
    return table


@dataclass(frozen=True)
class ObsSpec:
    """What an observation vector holds: the contract between the environments that
    write it and the models that read it. Every trained model and exported bot carries
    its spec (``to_dict``); a loader compares it with the spec of the game at hand and
    refuses a model whose spec differs (``mismatch``), never guessing from sizes."""

    encoding: str  # "compact" or "rich"
    n_players: int
    rules: Rules
    version: int = OBS_VERSION

    def __post_init__(self) -> None:
        if self.encoding not in ENCODINGS:
            raise ValueError(
                f"unknown observation encoding {self.encoding!r}; accepted: {', '.join(ENCODINGS)}"
            )

    @cached_property
    def slices(self) -> dict[str, slice]:
        """Each named part's place in the vector."""
        out, start = {}, 0
        for name, length in _fields(self.encoding, self.n_players, self.rules):
            out[name] = slice(start, start + length)
            start += length
        return out

    @property
    def size(self) -> int:
        return sum(length for _, length in _fields(self.encoding, self.n_players, self.rules))

    @property
    def high(self) -> float:
        """The largest value any entry takes (the observation space's upper bound)."""
        return OBS_HIGH if self.encoding == "compact" else RICH_OBS_HIGH

    def encode(self, game: Game, seat: int) -> np.ndarray:
        """The observation of `game` from `seat`."""
        return ENCODINGS[self.encoding](game, seat)

    def to_dict(self) -> dict:
        return {
            "encoding": self.encoding,
            "version": self.version,
            "n_players": self.n_players,
            "rules": self.rules.to_dict(),
            "size": self.size,
            "slices": {name: [s.start, s.stop] for name, s in self.slices.items()},
        }

    @classmethod
    def from_dict(cls, d: object) -> ObsSpec:
        """The spec saved by ``to_dict``; ValueError (one line) if it is not one."""
        try:
            spec = cls(
                encoding=d["encoding"],
                n_players=int(d["n_players"]),
                rules=Rules(**d["rules"]),
                version=int(d["version"]),
            )
            size, slices = int(d["size"]), d["slices"]
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"not an observation spec ({e})") from None
        if spec.version == OBS_VERSION and (
            size != spec.size or slices != spec.to_dict()["slices"]
        ):
            raise ValueError("an observation spec whose layout disagrees with its version")
        return spec

    def mismatch(self, wanted: ObsSpec) -> str:
        """Why a model reading this spec cannot play where `wanted` is written, or "" (in
        the language in use: a player may read it)."""
        if self.version != wanted.version:
            return _(
                "it reads observation version {have}, this toolkit writes version {want}",
                have=self.version,
                want=wanted.version,
            )
        if self.encoding != wanted.encoding:
            return _(
                "it reads the {have} observation, not the {want} one",
                have=self.encoding,
                want=wanted.encoding,
            )
        if self.n_players != wanted.n_players:
            return ngettext(
                "it was trained for {n} player, this game has {want}",
                "it was trained for {n} players, this game has {want}",
                self.n_players,
                want=wanted.n_players,
            )
        if self.rules != wanted.rules:
            return _(
                "it was trained under these rules: {have}; this game is played under: {want}",
                have=describe_rules(self.rules),
                want=describe_rules(wanted.rules),
            )
        return ""


# The rule options every environment takes: the fields of ``Rules`` (R5, V1-V5).
RULE_OPTIONS = tuple(field.name for field in fields(Rules))


def env_rules(rules: Rules | None, **options: Any) -> Rules:
    """The rules an environment is asked for: `rules` itself, or a ``Rules`` of the
    `options` (RULE_OPTIONS) given (None: the seeds' rule), never both; ValueError in one
    line for both, a bad option or a `rules` that is not a ``Rules``."""
    if set(options) - set(RULE_OPTIONS):  # a caller's mistake, not a user's
        raise TypeError(f"unknown rule options {sorted(set(options) - set(RULE_OPTIONS))}")
    given = {name: value for name, value in options.items() if value is not None}
    if rules is None:
        return Rules(**given)
    if not isinstance(rules, Rules):
        raise ValueError(f"rules must be an fivethousand_rl.envs.rules.Rules, got {rules!r}")
    if given:
        raise ValueError(
            f"give the rules either as rules=Rules(...) or as options, not both "
            f"(got rules= and {', '.join(given)}=)"
        )
    return rules


def check_env_options(arguments: Mapping[str, Any], metadata: Mapping[str, Any]) -> ObsSpec:
    """Check the options the Gymnasium, PettingZoo and vector environments share, read
    from an environment constructor's `arguments` (its ``locals()``: ``n_players``,
    ``max_turns``, ``render_mode``, ``obs_encoding``, ``rules`` and the RULE_OPTIONS);
    one-line ValueError for the first bad one; `metadata` gives the accepted
    "render_modes"; the rules as ``env_rules`` takes them. Returns the observation spec
    they describe, which holds the player count and the rules."""
    n_players = check_players(arguments["n_players"])
    max_turns, render_mode = arguments["max_turns"], arguments["render_mode"]
    if not isinstance(max_turns, int) or max_turns < n_players:
        raise ValueError(f"max_turns must be an integer >= n_players, got {max_turns!r}")
    if render_mode is not None and render_mode not in (modes := metadata["render_modes"]):
        raise ValueError(f"render_mode must be one of {modes}, got {render_mode!r}")
    rules = env_rules(arguments["rules"], **{name: arguments[name] for name in RULE_OPTIONS})
    return ObsSpec(arguments["obs_encoding"], n_players, rules)
