"""Observation encoding: what a player sees of a game, as a fixed-size float32 vector.

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
3N+2               1 if the turn total ends in 50 (no banking on it, R8)
3N+3               number of dice in the roll / 5
3N+4               1 if some legal action banks
[3N+5, 3N+35)      the roll, sorted ascending: 6 slots per die position, one-hot face
[3N+35, 3N+41)     count of each face 1..6 in the roll / 5
=================  ===================================================================
"""

from __future__ import annotations

import numpy as np

from envs.game import DECIDE, Game
from envs.rules import BANK_BIT, NUM_DICE, ROLL_INFO

OBS_VERSION = 1
# Every entry lies in [OBS_LOW, OBS_HIGH]; the two turn-total features are clipped there
# (only a turn total above twice the target would reach the clip).
OBS_LOW, OBS_HIGH = -1.0, 2.0
_ROLL_FEATURES = 6 * NUM_DICE + 6


def observation_size(n_players: int) -> int:
    return 3 * n_players + 5 + _ROLL_FEATURES


def _roll_features(roll: tuple[int, ...]) -> np.ndarray:
    out = np.zeros(_ROLL_FEATURES, dtype=np.float32)
    for i, face in enumerate(roll):
        out[6 * i + face - 1] = 1.0
        out[6 * NUM_DICE + face - 1] += 1.0 / NUM_DICE
    return out


_ROLL_FEATURE_TABLE = {roll: _roll_features(roll) for roll in ROLL_INFO}


def encode(game: Game, seat: int) -> np.ndarray:
    """The observation vector of `game` as seen from `seat`."""
    s = game.state
    n = len(s.scores)
    target = game.rules.target
    scores = s.scores[seat:] + s.scores[:seat]
    whose_turn = [0.0] * n
    whose_turn[(s.current - seat) % n] = 1.0
    total = s.turn_total
    head = [score / target for score in scores]
    head += [float(score > 0) for score in scores]
    head += whose_turn
    head += [
        min(total / target, OBS_HIGH),
        max((target - s.scores[s.current] - total) / target, OBS_LOW),
        float(total % 100 == 50),
    ]
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
