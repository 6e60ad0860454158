"""Expectimax over the rest of a turn, written only against the game's search API.

``ExpectimaxBot`` searches the current turn by playing it out on copies of the game:
``Game.clone()`` copies a node, ``Game.moves()`` lists a decision's actions and
``Game.act`` takes one (a move that rolls on stops at the chance node, unrolled),
``Game.chance_outcomes()`` lists the rolls that may come and ``Game.roll(dice)`` applies
one. Decision nodes take the best action, chance nodes the expectation over the rolls.
The turn ends with a bank, a bust (R4) or a win (R9); each end is worth what a value
function of turn starts says the position it leaves is worth to the mover (a win is
1, a loss 0). With the exact 2-player values (``envs.turn_planner.exact_two_player_values``,
the default) the search decides as the exact turn planner and ``optimal`` do
(tests/test_search.py; docs/search.md walks through it).

The turn's tree is finite: every hold scores (R2), so the turn total only grows, and
past the target every end of the turn is a pass (banked points are lost, R9), so the
search stops there with a bust's value; it stops sooner where the engine's
``bank_outcome`` says that every larger total banked would be lost (an overshoot
nobody may receive, R9). A node's value depends only on the turn start,
the turn total and the dice (left, or rolled): chance nodes are memoized by (turn
total, dice left), per turn start, so each is searched once, and so is each decision
node below it. ``max_rolls`` optionally limits how many rolls ahead are searched: a
roll beyond the limit counts as a bust (a pessimistic leaf; the turn must bank within
the horizon), and the search is exact again when no turn needs more rolls.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable

import numpy as np

from fivethousand_rl.agents.planner import rules_refusal, table_sizes
from fivethousand_rl.envs.game import DECIDE, Game, Move, bank_outcome, in_turn_order
from fivethousand_rl.envs.i18n import _
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import Rules
from fivethousand_rl.envs.solver import STEP
from fivethousand_rl.envs.turn_planner import ValueFn, exact_two_player_values

# Turn starts whose searched nodes are kept: up to about a thousand values each (about
# 100 kB) for a full turn under the seeds' rules.
DEFAULT_CACHE_SIZE = 256
# Actions whose values differ by less are equal (the planner's rule, agents.planner.TIE):
# the first of them in ascending order is played.
TIE = 1e-12


class TurnSearch:
    """The search of one turn, from its start (every node of a turn has the same banked
    scores and mover), against `value_fn`. Values are the mover's win probability."""

    def __init__(self, game: Game, value_fn: ValueFn) -> None:
        s = game.state
        self.value_fn = value_fn
        self.me, self.players = s.current, len(s.scores)
        self.scores = tuple(s.scores)
        # The largest turn total whose banking does more than pass the turn (allowed, R8,
        # and not lost, R9), as the engine says: beyond it every end of the turn is a
        # pass. Past the target every bank is lost (a gift recipient has points, R9).
        totals = range(STEP, game.rules.target + 1, STEP)
        outcomes = (bank_outcome(self.scores, self.me, t, game.rules) for t in totals)
        self.last_useful = max((o.total for o in outcomes if o.allowed and not o.lost), default=0)
        self.chance: dict[tuple[int, int, int | None], float] = {}  # (total, dice, rolls left)
        self.banks: dict[int, float] = {}  # turn total banked -> value
        self.ends: dict[tuple[tuple[int, ...], int], float] = {}  # (scores, next) -> value
        self.nodes = 0  # nodes searched (decisions and chance nodes)

    # ------------------------------------------------------------- ends of the turn
    def end_value(self, game: Game) -> float:
        """What the position after this turn is worth to the mover: a win 1, a loss 0,
        else the value function's word on the turn start it leaves."""
        s = game.state
        if s.winner is not None:
            return 1.0 if s.winner == self.me else 0.0
        return self._position_value(tuple(s.scores), s.current)

    def _position_value(self, scores: tuple[int, ...], to_move: int) -> float:
        key = (scores, to_move)
        if key not in self.ends:
            values = self.value_fn(np.array([in_turn_order(scores, to_move)], dtype=np.int64))
            # The values are in the order of play from `to_move`; the mover is that many
            # seats after it.
            self.ends[key] = float(values[0][(self.me - to_move) % self.players])
        return self.ends[key]

    def pass_value(self) -> float:
        """The value of a turn that banks nothing (a bust, R4): the scores as they were,
        the next player to move."""
        return self._position_value(self.scores, (self.me + 1) % self.players)

    # ------------------------------------------------------------- the search
    def move_value(self, game: Game, move: Move, rolls_left: int | None) -> float:
        """The value of `move` at the decision `game`: a bank ends the turn, any other
        move leads to the chance node of its turn total and dice left (memoized)."""
        known = (
            self.banks.get(move.turn_total)
            if move.banks
            else self.chance.get(self._key(move.turn_total, move.dice_left, rolls_left))
        )
        if known is not None:
            return known
        child = game.clone()
        child.act(move.action)  # rolls on: stops at the chance node, nothing rolled
        if move.banks:
            self.banks[move.turn_total] = value = self.end_value(child)
            return value
        return self.chance_value(child, rolls_left)

    def _key(self, total: int, dice: int, rolls_left: int | None) -> tuple[int, int, int | None]:
        """A chance node's key. A roll limit that cannot bind is no limit (None): from
        turn total `total` at most one roll per 50 points up to ``last_useful`` can
        happen before every end is a pass (each hold scores 50 or more, R2)."""
        if rolls_left is not None and rolls_left * STEP >= self.last_useful - total:
            rolls_left = None
        return total, dice, rolls_left

    def decision_value(self, game: Game, rolls_left: int | None) -> float:
        """The best move's value at the decision `game`."""
        self.nodes += 1
        return max(self.move_value(game, move, rolls_left) for move in game.moves())

    def chance_value(self, game: Game, rolls_left: int | None) -> float:
        """The expected value of the roll due at `game`, over its chance outcomes."""
        s = game.state
        key = self._key(s.turn_total, s.dice_left, rolls_left)
        if key in self.chance:
            return self.chance[key]
        self.nodes += 1
        rolls_left = key[2]
        if s.turn_total >= self.last_useful or rolls_left == 0:
            # Every bank from here on is lost or not allowed: every end is a pass. At the
            # search's horizon the roll counts as a bust.
            value = self.pass_value()
        else:
            below = None if rolls_left is None else rolls_left - 1
            value = 0.0
            for dice, probability in game.chance_outcomes():
                child = game.clone()
                child.roll(dice)
                if child.state.phase == DECIDE:
                    value += probability * self.decision_value(child, below)
                else:  # a bust: the turn is over (R4)
                    value += probability * self.end_value(child)
        self.chance[key] = value
        return value


class ExpectimaxBot(Policy):
    """Plays the action of highest value by expectimax over the rest of the turn (see
    the module docstring), the first of equal values (to ``TIE``) in ascending order,
    as the planner does.

    `value_fn`: the value of turn starts (``fivethousand_rl.envs.turn_planner.ValueFn``); None, the
    exact 2-player values of the game's rules (solved or loaded when first needed,
    ``agents.optimal``), which limits the bot to 2 players. `players` and `rules`, when
    given, are the only games `value_fn` can value (``check_game`` refuses others).
    `max_rolls`: search at most this many rolls ahead (None: to the end of the turn).
    Searched turns are kept per turn start (up to `cache_size`); a value function that
    changes needs ``clear_cache``.
    """

    def __init__(
        self,
        value_fn: ValueFn | None = None,
        *,
        players: Collection[int] | None = None,
        rules: Rules | None = None,
        max_rolls: int | None = None,
        name: str | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        show_progress: bool = True,
    ) -> None:
        if max_rolls is not None and (
            not isinstance(max_rolls, int) or isinstance(max_rolls, bool) or max_rolls < 1
        ):
            raise ValueError(f"max_rolls must be a whole number of at least 1, got {max_rolls!r}")
        self.value_fn = value_fn
        self.players = (2,) if value_fn is None else None if players is None else tuple(players)
        self.rules = rules
        self.max_rolls = max_rolls
        self.name = name or ("expectimax" if max_rolls is None else f"expectimax:{max_rolls}")
        self.cache_size = cache_size
        self.show_progress = show_progress
        self._exact: dict[Rules, ValueFn] = {}
        self._turns: dict[Hashable, TurnSearch] = {}

    def check_game(self, n_players: int, rules: Rules) -> None:
        if self.players is not None and n_players not in self.players:
            tables = table_sizes(tuple(sorted(self.players)))
            values = {"bot": self.name, "tables": tables, "n": n_players}
            raise ValueError(
                _(
                    "{bot} searches against the exact 2-player values: games of {tables} "
                    "players, not {n}",
                    **values,
                )
                if self.value_fn is None
                else _(
                    "{bot} searches against its value function: games of {tables} players, not {n}",
                    **values,
                )
            )
        if self.rules is not None and rules != self.rules:
            raise ValueError(rules_refusal(self.name, self.rules, rules))

    def prepare(self, rules: Rules) -> None:
        if self.value_fn is None:
            self._values(rules)  # solve (or load) the exact values once, before play

    def clear_cache(self) -> None:
        self._turns.clear()

    def __getstate__(self) -> dict:
        """Pickled (for worker processes) without what it has searched or loaded: the
        exact values are a local function, and the caches are rebuilt as needed."""
        return {**self.__dict__, "_exact": {}, "_turns": {}}

    def _values(self, rules: Rules) -> ValueFn:
        if self.value_fn is not None:
            return self.value_fn
        if rules not in self._exact:
            from fivethousand_rl.agents.optimal import two_player_solution  # when asked for

            solution = two_player_solution(rules, self.show_progress)
            self._exact[rules] = exact_two_player_values(solution)
        return self._exact[rules]

    def search(self, game: Game) -> TurnSearch:
        """The search of the current turn: kept per turn start (the rules, the banked
        scores and the mover's seat), so a turn's later decisions, and turns that start
        alike, reuse what was searched."""
        s = game.state
        key = (game.rules, tuple(s.scores), s.current)
        turn = self._turns.pop(key, None)
        if turn is None:
            self.check_game(len(s.scores), game.rules)
            turn = TurnSearch(game, self._values(game.rules))
        self._turns[key] = turn  # the most recently used last
        while len(self._turns) > self.cache_size:
            del self._turns[next(iter(self._turns))]
        return turn

    def action_values(self, game: Game) -> dict[int, float]:
        """The mover's win probability after each legal action, by the search."""
        if game.state.phase != DECIDE:
            raise RuntimeError(f"no decision is due (phase is {game.state.phase!r})")
        turn = self.search(game)
        return {move.action: turn.move_value(game, move, self.max_rolls) for move in game.moves()}

    def act(self, game: Game, rng: np.random.Generator) -> int:
        values = self.action_values(game)
        best = max(values.values())
        return next(action for action, v in values.items() if v >= best - TIE)
