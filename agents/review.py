"""A game's review, the numbers only (the terminal and the page say them): every
decision of every player, bots too, replayed from the game's log through the engine and
judged by the policy that gives the hints at that seat (``agents.hints.hint_policy``):
with 2 players the optimal player (exact, the solver's values, solved through the solve
gate ``agents.optimal.two_player_solution``); with 3+ the exact best response to the
other seats' bots where it was computed before, else a shipped planner (an estimate).

For each decision: the position, the move made and the best move, the mover's win
probability with each (``p_made``, ``p_best``) and the cost, what the move made lost
(``p_best - p_made``, never negative: the best move is the one of highest value).

A player's **accuracy** is 100 x the mean, over their decisions with a choice (two or
more legal moves; a forced move says nothing of the player), of ``p_made / p_best``: the
share of the best move's win probability that the move made kept (a decision where even
the best move cannot win counts 100: nothing was there to keep). Optimal play scores 100.

Each seat's **chance of winning across the game** (``Review.series``): at each decision,
every seat's win probability with the best move played (the hint's numbers:
``agents.hints.hint``), then, once the game is over, 1 for the winner and 0 for the rest.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from fivethousand_rl.agents.hints import hint, hint_policy, is_exact
from fivethousand_rl.agents.value_net import CHECKPOINTS
from fivethousand_rl.envs.game import DECIDE, Event, Game, Moved
from fivethousand_rl.envs.game_log import replay_log
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import Rules, check_target_bound

COSTLIEST = 3  # the costliest decisions each player is shown


@dataclass(frozen=True)
class Decision:
    """One decision of the game and what it cost the player who took it."""

    event: int  # its place in the game's log (from 0)
    seat: int
    position: dict  # the state before the move (``GameState.to_dict``)
    made: int  # the action taken
    best: int  # the adviser's best action (the first of highest value)
    p_made: float  # the mover's win probability after the move made
    p_best: float  # ... after the best move
    choices: int  # legal moves there were
    chances: list[float]  # every seat's win probability, the best move played

    @property
    def cost(self) -> float:
        """The win probability the move made lost."""
        return self.p_best - self.p_made


@dataclass(frozen=True)
class PlayerReview:
    """One seat's figures."""

    seat: int
    adviser: str | None  # the name of the policy that judged it; None: none values its table
    exact: bool  # the solver's or a best response's values, not a planner's estimate
    decisions: int  # decisions reviewed
    accuracy: float | None  # see the module doc; None without a decision with a choice
    lost: float  # the win probability all its moves lost, added up
    costliest: list[int]  # its COSTLIEST costliest decisions that cost anything, costliest
    # first, as indices into ``Review.decisions``


@dataclass(frozen=True)
class Review:
    """A game's review: every decision reviewed, in the order played, and each seat's
    figures."""

    n_players: int
    rules: dict  # ``Rules.to_dict``
    winner: int | None  # None: the log stops before the game's end
    decisions: list[Decision]
    players: list[PlayerReview]

    def series(self) -> list[list[float]]:
        """Every seat's chance of winning at each decision reviewed, then the result
        once the game is over (see the module doc)."""
        points = [list(d.chances) for d in self.decisions]
        if self.winner is not None:
            points.append([float(seat == self.winner) for seat in range(self.n_players)])
        return points

    def to_dict(self) -> dict:
        """Everything, JSON-serialisable; each decision with its cost."""
        return {
            "n_players": self.n_players,
            "rules": self.rules,
            "winner": self.winner,
            "decisions": [asdict(d) | {"cost": d.cost} for d in self.decisions],
            "players": [asdict(p) for p in self.players],
            "series": self.series(),
        }


def seat_advisers(
    n_players: int,
    rules: Rules,
    table: Sequence[str | None] | None = None,
    planners: str | Path = CHECKPOINTS,
) -> list[Policy | None]:
    """The policy that judges each seat's decisions: the one that gives that seat its
    hints (``hint_policy``) at a table of the bots `table` (each seat's spec, None at
    a person's; None: no table known), or None where no policy values such a table.
    A ValueError (one line) for 2-player rules the solver does not take."""
    if table is not None and len(table) != n_players:
        raise ValueError(f"table must name {n_players} seats, not {len(table)}")
    made: dict[tuple[str, ...], Policy | None] = {}  # one policy per table of opponents
    seats = []
    for seat in range(n_players):
        others = [table[(seat + i) % n_players] for i in range(1, n_players)] if table else []
        bots = tuple(spec for spec in others if spec is not None)
        # A best response is to a table of bots only: with a person among them, none.
        key = bots if n_players > 2 and len(bots) == n_players - 1 else ()
        if key not in made:
            made[key] = hint_policy(n_players, rules, key, planners)
        seats.append(made[key])
    return seats


def review(
    rules: Rules, n_players: int, events: object, advisers: Sequence[Policy | None]
) -> Review:
    """The review of the game of `n_players` under `rules` whose log is `events`
    (``envs.game_log``: replayed through the engine, a one-line ValueError naming the
    first event that does not fit), each seat's decisions judged by its policy in
    `advisers` (``seat_advisers``; a seat whose adviser is None is not reviewed)."""
    if len(advisers) != n_players:
        raise ValueError(f"advisers must name {n_players} seats, not {len(advisers)}")
    if all(adviser is None for adviser in advisers):
        raise ValueError(f"no policy values a table of {n_players} players under these rules")
    game = Game(n_players, rules)
    decisions: list[Decision] = []
    due: dict = {}  # the decision due, valued before its move is known
    values: dict[int, float] = {}  # the adviser's value of each of its moves
    number = -1  # the event's place in the log

    def on_event(event: Event) -> None:
        nonlocal number
        number += 1
        if isinstance(event, Moved) and due:
            made = event.move.action
            decisions.append(Decision(made=made, p_made=float(values[made]), **due))
            due.clear()
        s = game.state
        if s.phase == DECIDE and (policy := advisers[s.current]) is not None:
            values.clear()
            values.update(policy.action_values(game))
            best = max(values, key=values.__getitem__)  # the first of equal values
            due.update(
                event=number + 1,  # the decision is the next event
                seat=s.current,
                position=s.to_dict(),
                best=best,
                p_best=float(values[best]),
                choices=len(values),
                chances=hint(policy, game)[1],
            )

    replay_log(game, events, on_event)
    players = [_player(seat, advisers[seat], decisions) for seat in range(n_players)]
    return Review(n_players, rules.to_dict(), game.state.winner, decisions, players)


def _player(seat: int, adviser: Policy | None, decisions: list[Decision]) -> PlayerReview:
    """Seat `seat`'s figures from the decisions reviewed."""
    mine = [i for i, d in enumerate(decisions) if d.seat == seat]
    kept = [
        decisions[i].p_made / decisions[i].p_best if decisions[i].p_best > 0 else 1.0
        for i in mine
        if decisions[i].choices > 1
    ]
    costly = sorted((i for i in mine if decisions[i].cost > 0), key=lambda i: -decisions[i].cost)
    return PlayerReview(
        seat=seat,
        adviser=None if adviser is None else adviser.name,
        exact=adviser is not None and is_exact(adviser),
        decisions=len(mine),
        accuracy=100 * sum(kept) / len(kept) if kept else None,
        lost=sum(decisions[i].cost for i in mine),
        costliest=costly[:COSTLIEST],
    )


def read_record(data: object) -> tuple[Rules, int, list]:
    """(rules, number of players, log) of a game's record: a save, the terminal's
    (``agents.terminal.save``) or the web page's (``WebGame.to_dict``), both a game and
    the log that leads to it, or the terminal's game log (``write_log``). The log is
    replayed here, before any solve: a one-line ValueError if it does not fit, or if
    `data` is none of them."""
    if not isinstance(data, dict):
        raise ValueError("not a saved game or a game log")
    saved = None
    if "game" in data and "log" in data:  # a save
        saved = Game.from_json(json.dumps(data["game"]))
        rules, n, events = saved.rules, saved.n_players, data["log"]
    elif {"rules", "players", "events"} <= set(data):  # a game log
        names, given = data["players"], data["rules"]
        if not isinstance(names, list) or not isinstance(given, dict):
            raise ValueError("a game log's players must be a list and its rules an object")
        try:
            rules = Rules(**given)
        except TypeError as e:  # an unknown switch
            raise ValueError(f"not valid rules: {e}") from None
        n, events = len(names), data["events"]
    else:
        raise ValueError("not a saved game or a game log")
    replayed = Game(n, check_target_bound(rules))  # the engine checks the table's size
    replay_log(replayed, events)
    if saved is not None and replayed.state != saved.state:
        raise ValueError("its log does not lead to its game (a hand-edited game or log?)")
    return rules, n, events


def review_record(
    data: object, table: Sequence[str | None] | None = None, planners: str | Path = CHECKPOINTS
) -> Review:
    """The review of the game recorded in `data` (``read_record``), judged by
    ``seat_advisers`` at the table `table`."""
    rules, n, events = read_record(data)
    return review(rules, n, events, seat_advisers(n, rules, table, planners))
