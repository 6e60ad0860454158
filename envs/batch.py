"""Many games of 5000 at once, as arrays: the engine's tables, batched banking, the
batched game loop, and the batched side of the policy interface.

Everything the rules decide is looked up in tables built once, at import, from the
engine itself (``fivethousand_rl.envs.rules.ROLL_INFO`` / ``ROLL_BY_CODE`` for the rolls and holds,
``envs.game``'s move model for what a hold leads to, ``envs.rules.can_bank`` for R8),
so no rule is written a second time here; banking (R9) is the one computation done on
arrays, and ``tests/test_vector_env.py`` checks it against ``envs.game.bank_outcome``.

A roll is named by its *roll id*: the index of its sorted dice in ``ROLLS`` (every
sorted roll of 1 to 5 dice); ``NO_ROLL`` (the last id) means no roll awaits a decision.

``BatchGames`` holds N games of P players as arrays (scores, whose turn, turn total,
dice left, pending roll, turns, winner) and steps any subset of them: ``roll`` (chance)
and ``act`` (decision), exactly as ``Game.roll`` / ``Game.act`` do. ``play_batch`` is
the batched ``fivethousand_rl.envs.driver.play``: one policy per (game, seat), a turn limit and an
optional seat to stop at.

A policy decides for many games at once if it has ``act_batch(games, idx, rng)``
returning one action per game of ``idx`` (``BatchPolicy``); the batched scripted bots
live in ``agents.batched``. Any other ``Policy`` still plays here, one game at a time
through a ``Game`` whose state is written from the arrays (``act_each``: slower, but
the same decisions).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import cache
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np

from fivethousand_rl.envs.game import (
    DECIDE,
    OVER,
    ROLL,
    Game,
    GameState,
    IllegalMoveError,
    _legal_moves,
    check_players,
)
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import (
    BANK_BIT,
    NUM_ACTIONS,
    NUM_DICE,
    ROLL_BY_CODE,
    ROLL_INFO,
    SORTED_ROLLS,
    Rules,
    can_bank,
    describe_action,
    format_dice,
)

HOLD_ACTIONS = BANK_BIT  # actions 0..31 hold and roll; +32 banks
NUM_CODES = 6**NUM_DICE  # a roll is drawn as one uniform code, as Game's dice stream does

# ------------------------------------------------------------------ roll tables
ROLLS: tuple[tuple[int, ...], ...] = tuple(
    roll for n in range(1, NUM_DICE + 1) for roll in SORTED_ROLLS[n]
)
ROLL_ID: dict[tuple[int, ...], int] = {roll: i for i, roll in enumerate(ROLLS)}
NO_ROLL = len(ROLLS)
_N_IDS = NO_ROLL + 1

ROLL_BUST = np.array([ROLL_INFO[r].bust for r in ROLLS] + [False])
# ROLL_DICE[id] is the sorted roll padded with zeros (for recording and display).
ROLL_DICE = np.zeros((_N_IDS, NUM_DICE), dtype=np.int64)
for _i, _r in enumerate(ROLLS):
    ROLL_DICE[_i, : len(_r)] = _r
# CODE_TO_ROLL[n, c]: the roll id of n dice drawn as code c (uniform in 0..6**5-1), the
# same mapping as Game's dice stream (``ROLL_BY_CODE[n][c % 6**n]``).
CODE_TO_ROLL = np.full((NUM_DICE + 1, NUM_CODES), NO_ROLL, dtype=np.int64)
for _n in range(1, NUM_DICE + 1):
    _ids = np.array([ROLL_ID[info.dice] for info in ROLL_BY_CODE[_n]], dtype=np.int64)
    CODE_TO_ROLL[_n] = _ids[np.arange(NUM_CODES) % 6**_n]


class MoveTables(NamedTuple):
    """What each hold (action bits 0-4) of each roll does under one hold rule (R5, R6),
    read from ``fivethousand_rl.envs.game``'s move model; the rows of ``NO_ROLL`` hold nothing."""

    legal: np.ndarray  # bool (ids, 32): the hold is allowed
    points: np.ndarray  # int (ids, 32): what it scores (R2)
    dice_left: np.ndarray  # int (ids, 32): dice to roll after it (5 after hot dice)
    best_bits: np.ndarray  # int (ids,): the best reading of the roll (its hold bits)
    best_points: np.ndarray  # int (ids,)


@cache
def move_tables(hold: str) -> MoveTables:
    """The hold tables of every roll under `hold` ("free" or "all")."""
    Rules(hold=hold)  # checks the name
    legal = np.zeros((_N_IDS, HOLD_ACTIONS), dtype=bool)
    points, left = np.zeros((2, _N_IDS, HOLD_ACTIONS), dtype=np.int64)
    best_bits, best_points = np.zeros((2, _N_IDS), dtype=np.int64)
    for i, roll in enumerate(ROLLS):
        info = ROLL_INFO[roll]
        if info.bust:
            continue
        # Entered, turn total 0: every hold appears as a roll-on move (banking aside).
        for move in _legal_moves(roll, Rules(hold=hold), True, 0).by_action.values():
            if not move.banks:
                legal[i, move.action] = True
                points[i, move.action] = move.points
                left[i, move.action] = move.dice_left
        best_bits[i], best_points[i] = info.best.bits, info.best.points
    return MoveTables(legal, points, left, best_bits, best_points)


class BankTable(NamedTuple):
    """``can_bank`` (R8) for every turn total, by ``index(total)``."""

    allowed: np.ndarray  # bool (2, L + 2): [entered, index]
    last: int  # L: totals of index >= L differ only by ending in 50 or not

    def index(self, totals: np.ndarray) -> np.ndarray:
        """Row index of each turn total (a multiple of 50)."""
        i = totals // 50
        return np.where(i >= self.last, self.last + (i & 1), i)


@cache
def bank_table(rules: Rules) -> BankTable:
    """R8 as a table, from ``fivethousand_rl.envs.rules.can_bank``: past the entry score only the 50
    rule matters, so totals from ``last`` on share two rows (even and odd index)."""
    entry = rules.entry
    last = entry // 50 + 2 + (entry // 50) % 2  # even, and past the entry
    allowed = np.array(
        [[can_bank(entered, 50 * i, rules) for i in range(last + 2)] for entered in (0, 1)]
    )
    return BankTable(allowed, last)


class DecisionTables(NamedTuple):
    """The legal actions of every decision, by its *key* (``key``): the roll, whether
    the player has entered, and the turn total before the hold, which matters only up
    to the entry score and then only by ending in 50 or not. Read from the engine's
    own move model (``fivethousand_rl.envs.game``'s legal moves), so the mask is the engine's."""

    mask: np.ndarray  # bool (keys, 64)
    n_legal: np.ndarray  # (keys,)
    legal: np.ndarray  # (keys, most legal actions): the legal actions ascending, then 0s
    levels: int  # turn-total rows per (roll, entered)

    def key(self, roll: np.ndarray, entered: np.ndarray, turn_total: np.ndarray) -> np.ndarray:
        i = turn_total // 50
        last = self.levels - 2
        i = np.where(i >= last, last + (i & 1), i)
        return (roll * 2 + entered) * self.levels + i


@cache
def decision_tables(rules: Rules) -> DecisionTables:
    """The decision tables of one game's rules (built once, ~0.2 s): they read the hold
    rule, the entry score and the 50 rule."""
    entry = rules.entry
    last = entry // 50 + (entry // 50) % 2  # even; from here on the total is past entry
    levels = last + 2
    mask = np.zeros((_N_IDS * 2 * levels, NUM_ACTIONS), dtype=bool)
    for i, roll in enumerate(ROLLS):
        if ROLL_INFO[roll].bust:
            continue
        for entered in (0, 1):
            for level in range(levels):
                moves = _legal_moves(roll, rules, bool(entered), 50 * level)
                mask[(i * 2 + entered) * levels + level] = moves.mask
    n_legal = mask.sum(axis=1)
    width = int(n_legal.max())
    first = np.argsort(~mask, axis=1, kind="stable")[:, :width]  # legal ones first, ascending
    legal = np.where(np.arange(width) < n_legal[:, None], first, 0)
    return DecisionTables(mask, n_legal, legal, levels)


# ------------------------------------------------------------------ banking (R9)
class BankBatch(NamedTuple):
    """What banking did in each game (``bank_batch``); -1 means nobody."""

    scores: np.ndarray  # (m, P) every seat's banked score afterwards
    winner: np.ndarray  # (m,) the banker (exact target) or a gift's recipient
    bumped: np.ndarray  # (m,) bool: some other seat dropped to 0
    overshoot: np.ndarray  # (m,) bool: the banker's score would pass the target
    gift_to: np.ndarray  # (m,) recipient of an overshoot's points
    lost: np.ndarray  # (m,) bool: an overshoot that nobody may receive


def bank_batch(
    scores: np.ndarray, banker: np.ndarray, total: np.ndarray, rules: Rules
) -> BankBatch:
    """``envs.game.bank_outcome`` for m games at once, for totals the banker may bank
    (R8 is the mask's business): `scores` (m, P) is not modified.

    R9: new = own + total; at most the target: the banker gets it (exactly the target
    wins), every other seat on the new score below the target drops to 0; past the
    target: the banker keeps their score and the total goes to the other seat with the
    lowest score among those with at least the entry score (ties to the first in turn
    order after the banker), unless that would take them past the target (then lost);
    landing that seat exactly on the target makes it win.
    """
    m, n = scores.shape
    rows = np.arange(m)
    new = scores[rows, banker] + total
    after = scores.copy()
    winner = np.full(m, -1, dtype=np.int64)
    fits = new <= rules.target
    win = new == rules.target
    after[rows[fits], banker[fits]] = new[fits]
    winner[win] = banker[win]
    # The banker's own column never matches: new > own, every bank holds points.
    bump = (scores == new[:, None]) & (fits & ~win & rules.bump)[:, None]  # V2: off, no bump
    bumped = bump.any(axis=1)
    if bumped.any():
        after[bump] = 0
    gift_to = np.full(m, -1, dtype=np.int64)
    over = np.flatnonzero(~fits) if rules.overshoot == "gift" else np.zeros(0, np.int64)  # V3
    if over.size:
        # The gift's candidate by (score, turn order after the banker).
        s, b, t = scores[over], banker[over], total[over]
        order = (np.arange(n)[None, :] - b[:, None]) % n  # 0: the banker
        eligible = (s >= rules.entry) & (order > 0)
        key = np.where(eligible, s * n + order, np.iinfo(np.int64).max)
        candidate = key.argmin(axis=1)
        received = s[np.arange(over.size), candidate] + t
        gets = eligible.any(axis=1) & (received <= rules.target)
        g = over[gets]
        after[g, candidate[gets]] = received[gets]
        gift_to[g] = candidate[gets]
        lands = gets & (received == rules.target)
        winner[over[lands]] = candidate[lands]
    overshoot = ~fits
    return BankBatch(after, winner, bumped, overshoot, gift_to, lost=overshoot & (gift_to < 0))


# ------------------------------------------------------------------ many games
class BatchGames:
    """N games of P players as arrays, stepped like ``Game`` (chance steps ``roll``,
    decisions ``act``) on any subset of games given as an index array. Seat 0 plays
    first. A game is in the decide phase when ``roll[g] != NO_ROLL``, over when
    ``winner[g] >= 0``, else it waits for a roll."""

    def __init__(self, n_games: int, n_players: int, rules: Rules) -> None:
        n_players = check_players(n_players)
        if not isinstance(n_games, int) or n_games < 1:
            raise ValueError(f"the number of games must be a positive integer, got {n_games!r}")
        self.n_games, self.n_players, self.rules = n_games, n_players, rules
        self.tables = move_tables(rules.hold)
        self.bank_rule = bank_table(rules)
        self.decisions = decision_tables(rules)
        self._points_flat = self.tables.points.ravel()  # hot path: 1-d takes
        self._left_flat = self.tables.dice_left.ravel()
        self._mask_flat = self.decisions.mask.ravel()
        self.scores = np.zeros((n_games, n_players), dtype=np.int64)
        self.current, self.turn_total, self.dice_left, self.roll, self.turns, self.winner = (
            np.zeros(n_games, dtype=np.int64) for _ in range(6)
        )
        self.reset(slice(None))

    def reset(self, idx: np.ndarray | slice) -> None:
        """New games in `idx`: all scores 0, seat 0 to roll five dice."""
        self.scores[idx] = self.current[idx] = self.turn_total[idx] = self.turns[idx] = 0
        self.dice_left[idx], self.roll[idx], self.winner[idx] = NUM_DICE, NO_ROLL, -1

    # ------------------------------------------------------------- queries
    def entered(self, idx: np.ndarray) -> np.ndarray:
        """Whether the player to move in each game of `idx` has entered (score > 0)."""
        return self.scores[idx, self.current[idx]] > 0

    def may_bank(self, entered: np.ndarray, totals: np.ndarray) -> np.ndarray:
        """``can_bank`` (R8) elementwise: `entered` (bool) broadcast against `totals`."""
        return self.bank_rule.allowed[entered.astype(np.int64), self.bank_rule.index(totals)]

    def hold_results(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(turn total after, dice left after), each (len(idx), 32), of every hold of
        each game's pending roll (meaningful where the hold is legal)."""
        roll = self.roll[idx]
        return self.turn_total[idx, None] + self.tables.points[roll], self.tables.dice_left[roll]

    def decision_key(self, idx: np.ndarray) -> np.ndarray:
        """Each game's row in ``self.decisions`` (no legal action where none is due)."""
        return self.decisions.key(self.roll[idx], self.entered(idx), self.turn_total[idx])

    def legal_mask(self, idx: np.ndarray) -> np.ndarray:
        """(len(idx), 64) bool: the legal actions of each game's pending roll (all False
        where no decision is due), as ``Game.action_mask``."""
        return self.decisions.mask[self.decision_key(idx)]

    def game_at(self, g: int) -> Game:
        """Game number `g` as a ``Game`` (for policies without a batched side). Its
        ``held`` list is empty: the arrays keep the turn total, not the holds."""
        game = Game(self.n_players, self.rules)
        game.state = next(self.states(np.array([g])))
        return game

    def states(self, idx: np.ndarray) -> Iterator[GameState]:
        """The games `idx` as ``GameState``s, one at a time (fresh objects, their
        ``held`` lists empty, as ``game_at``'s): the arrays are read once, as lists."""
        rows = zip(
            self.scores[idx].tolist(),
            self.current[idx].tolist(),
            self.turn_total[idx].tolist(),
            self.dice_left[idx].tolist(),
            self.roll[idx].tolist(),
            self.winner[idx].tolist(),
            self.turns[idx].tolist(),
            strict=True,
        )
        for scores, current, total, left, roll, winner, turns in rows:
            phase = OVER if winner >= 0 else DECIDE if roll != NO_ROLL else ROLL
            dice = ROLLS[roll] if roll != NO_ROLL else None
            won = winner if winner >= 0 else None
            yield GameState(scores, current, total, left, dice, [], phase, won, turns)

    # ------------------------------------------------------------- steps
    def roll_dice(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Roll the dice not held in each game of `idx` (all in the roll phase); a bust
        ends the turn (R4). Returns the roll ids."""
        codes = rng.integers(0, NUM_CODES, size=len(idx))
        ids = CODE_TO_ROLL[self.dice_left[idx], codes]
        self.set_roll(idx, ids)
        return ids

    def set_roll(self, idx: np.ndarray, ids: np.ndarray) -> None:
        """The rolls `ids` (of the right sizes) land in the games of `idx`."""
        bust = ROLL_BUST[ids]
        self.roll[idx] = np.where(bust, NO_ROLL, ids)
        if bust.any():
            self._end_turn(idx[bust])

    def are_legal(self, idx: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Whether each action is legal in its game of `idx` (any integers)."""
        inside = (actions >= 0) & (actions < NUM_ACTIONS)
        flat = self.decision_key(idx) * NUM_ACTIONS + np.where(inside, actions, 0)
        return inside & self._mask_flat.take(flat)

    def act(self, idx: np.ndarray, actions: np.ndarray) -> None:
        """Each game of `idx` takes its action, which must be legal (``legal_mask``):
        hold, then roll on or bank (R5-R9), as ``Game.act``."""
        flat = self.roll[idx] * HOLD_ACTIONS + (actions & (HOLD_ACTIONS - 1))
        self.turn_total[idx] += self._points_flat.take(flat)
        self.dice_left[idx] = self._left_flat.take(flat)
        self.roll[idx] = NO_ROLL
        banking = idx[actions >= BANK_BIT]
        if banking.size:
            out = bank_batch(
                self.scores[banking], self.current[banking], self.turn_total[banking], self.rules
            )
            self.scores[banking] = out.scores
            self.winner[banking] = out.winner
            self._end_turn(banking)

    def _end_turn(self, idx: np.ndarray) -> None:
        self.turns[idx] += 1
        self.turn_total[idx], self.dice_left[idx], self.roll[idx] = 0, NUM_DICE, NO_ROLL
        self.current[idx] = (self.current[idx] + 1) % self.n_players

    def illegal_message(self, g: int, action: int, who: str = "action") -> str:
        """One line: `action` is not legal in game `g`, and what is."""
        roll = ROLLS[self.roll[g]] if self.roll[g] != NO_ROLL else ()
        legal = np.flatnonzero(self.legal_mask(np.array([g]))[0])
        listed = ", ".join(f"{a} ({describe_action(int(a), roll)})" for a in legal)
        return (
            f"illegal {who} {action} in game {g} for roll {format_dice(roll)}; "
            f"legal: {listed or 'none (no decision is due)'}"
        )


# ------------------------------------------------------------------ policies
@runtime_checkable
class BatchPolicy(Protocol):
    """The batched side of a policy: decide for the games `idx` of `games` at once,
    each with a decision due for seat ``games.current[g]``; return one legal action per
    game (int array). Randomness comes from `rng` only."""

    name: str

    def act_batch(
        self, games: BatchGames, idx: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray: ...


def is_batched(policy: Policy) -> bool:
    """Whether `policy` decides for many games at once (``BatchPolicy``; isinstance on a
    runtime protocol is slow on hot paths)."""
    return callable(getattr(policy, "act_batch", None))


def decide(
    policy: Policy, games: BatchGames, idx: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """`policy`'s actions for the games `idx`: batched if it can, else one ``Game`` at
    a time. Raises IllegalMoveError (one line) if it returns an illegal action."""
    if is_batched(policy):
        actions = np.asarray(policy.act_batch(games, idx, rng), dtype=np.int64)
    else:
        actions = np.array(act_each(policy, games, idx, rng), dtype=np.int64)
    if actions.shape != idx.shape:
        raise ValueError(f"{policy.name} returned {actions.shape} actions for {len(idx)} games")
    if not games.are_legal(idx, actions).all():
        bad = int(np.flatnonzero(~games.are_legal(idx, actions))[0])
        raise IllegalMoveError(
            games.illegal_message(int(idx[bad]), int(actions[bad]), f"action of {policy.name}")
        )
    return actions


def act_each(
    policy: Policy, games: BatchGames, idx: np.ndarray, rng: np.random.Generator
) -> list[int]:
    """`policy.act` in each game of `idx`, one at a time: the per-game side of
    ``decide``. The policy is shown one ``Game`` whose state is replaced before each
    call (``BatchGames.states``): building a ``Game`` per decision (its dice generator
    above all) would cost several times the decision of a simple bot, and a turn's exact
    ends (``fivethousand_rl.envs.turn_outcomes``) ask for millions. A policy may read the game only
    during its call (it must not change it, ``fivethousand_rl.envs.policy.Policy``)."""
    game = Game(games.n_players, games.rules, seed=0)  # its dice are never rolled here
    act = policy.act
    out = []
    for state in games.states(idx):
        game.state = state
        out.append(act(game, rng))
    return out


RollHook = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], None]
ActHook = Callable[[np.ndarray, np.ndarray], None]


def play_batch(
    games: BatchGames,
    idx: np.ndarray,
    policies: Sequence[Policy],
    seat_policy: np.ndarray,
    rng: np.random.Generator,
    *,
    max_turns: int,
    stop_seat: np.ndarray | None = None,
    on_roll: RollHook | None = None,
    on_act: ActHook | None = None,
) -> None:
    """Play the games `idx` on, as ``envs.driver.play`` does each of them, until it is
    over, `max_turns` turns are complete, or (with `stop_seat`, one seat per game of
    the whole batch) that seat has a decision to make. Seat s of game g is played by
    ``policies[seat_policy[g, s]]``. `on_roll(idx, seats, turn_totals, roll_ids)` (who
    rolled, with the turn total before the roll) and `on_act(idx, actions)` follow
    every chance step and decision."""
    active = np.asarray(idx, dtype=np.int64)
    while True:
        # The games that play on: not over, under the turn limit, not at a stop seat's decision.
        keep = (games.winner[active] < 0) & (games.turns[active] < max_turns)
        if stop_seat is not None:
            keep &= (games.roll[active] == NO_ROLL) | (games.current[active] != stop_seat[active])
        active = active[keep]
        if not active.size:
            return
        _one_round(games, active, policies, seat_policy, rng, stop_seat, on_roll, on_act)


def _one_round(
    games: BatchGames,
    active: np.ndarray,
    policies: Sequence[Policy],
    seat_policy: np.ndarray,
    rng: np.random.Generator,
    stop_seat: np.ndarray | None,
    on_roll: RollHook | None,
    on_act: ActHook | None,
) -> None:
    """One step of each live game of `active`: a roll where one is due, then a
    decision where one is due (a roll and a decision in one round where both are)."""
    rolling = active[games.roll[active] == NO_ROLL]
    if rolling.size:
        seats, before = games.current[rolling], games.turn_total[rolling]
        ids = games.roll_dice(rolling, rng)
        if on_roll is not None:
            on_roll(rolling, seats, before, ids)
    deciding = games.roll[active] != NO_ROLL
    if stop_seat is not None:
        deciding &= games.current[active] != stop_seat[active]
    movers = active[deciding]
    if not movers.size:
        return
    if len(policies) == 1:
        groups = [(0, movers)]
    else:  # (np.unique would cost more than the comparisons)
        who = seat_policy[movers, games.current[movers]]
        groups = [(p, movers[who == p]) for p in range(len(policies))]
    for p, sel in groups:
        if not sel.size:
            continue
        actions = decide(policies[p], games, sel, rng)
        games.act(sel, actions)
        if on_act is not None:
            on_act(sel, actions)


class GameResults(NamedTuple):
    """The end of each game of ``play_games`` (-1 winner: cut off by the turn limit)."""

    winner: np.ndarray  # (n_games,) seat, or -1
    turns: np.ndarray  # (n_games,)
    scores: np.ndarray  # (n_games, P) banked scores at the end


def play_games(
    n_games: int,
    policies: Sequence[Policy],
    rules: Rules,
    rng: np.random.Generator,
    *,
    seat_policy: np.ndarray | None = None,
    max_turns: int = 1000,
    width: int = 4096,
    on_progress: Callable[[int], None] | None = None,
) -> GameResults:
    """Play `n_games` whole games, seat s of game g played by ``policies[s]`` (or by
    ``policies[seat_policy[g, s]]``), `width` games at a time: a finished game's place
    goes to the next game at once, so every round steps a full batch. Results depend on
    the generator's seed and on `width`. `on_progress(n)` is told of every n games
    that end together."""
    if not isinstance(n_games, int) or n_games < 1:
        raise ValueError(f"n_games must be a positive integer, got {n_games!r}")
    n_players = len(policies) if seat_policy is None else seat_policy.shape[1]
    if seat_policy is None:
        seat_policy = np.broadcast_to(np.arange(n_players), (n_games, n_players))
    if (
        seat_policy.shape != (n_games, n_players)
        or not ((seat_policy >= 0) & (seat_policy < len(policies))).all()
    ):
        raise ValueError(f"seat_policy must be ({n_games}, players) indices into the policies")
    for policy in policies:
        policy.check_game(n_players, rules)
        policy.prepare(rules)
    width = min(width, n_games)
    games = BatchGames(width, n_players, rules)
    slot_game = np.arange(width)  # the game number each slot plays
    seats = np.array(seat_policy[:width])
    winner = np.full(n_games, -1, dtype=np.int64)
    turns = np.zeros(n_games, dtype=np.int64)
    scores = np.zeros((n_games, n_players), dtype=np.int64)
    running = np.arange(width)
    next_game = width
    while running.size:
        alive = (games.winner[running] < 0) & (games.turns[running] < max_turns)
        live = running[alive]
        if live.size < running.size:
            ended = running[~alive]
            numbers = slot_game[ended]
            winner[numbers] = games.winner[ended]
            turns[numbers] = games.turns[ended]
            scores[numbers] = games.scores[ended]
            if on_progress is not None:
                on_progress(ended.size)
            refill = ended[: max(0, n_games - next_game)]
            if refill.size:
                games.reset(refill)
                slot_game[refill] = np.arange(next_game, next_game + refill.size)
                seats[refill] = seat_policy[slot_game[refill]]
                next_game += refill.size
                live = np.concatenate([live, refill])
            running = live
        _one_round(games, live, policies, seats, rng, None, None, None)
    return GameResults(winner, turns, scores)
