"""The game log: each step of a game as a small JSON record, and a log replayed onto a
new game through the engine, which checks every step. play.py's saves and logs and the
web page's saves keep their games this way.
"""

from __future__ import annotations

from collections.abc import Callable

from fivethousand_rl.envs.game import Event, Game, Rolled, is_int

EVENT_KEYS = ({"roll", "player"}, {"act", "player"})  # a logged roll, a logged decision


def one_line(error: BaseException) -> str:
    """An error's message on one line (its type's name if it has none)."""
    return " ".join(str(error).split()) or type(error).__name__


def check_fields(data: dict, fields: tuple[str, ...]) -> None:
    """ValueError naming the first of `fields` missing from `data`, else its first
    unknown key."""
    missing = [k for k in fields if k not in data]
    unknown = sorted(set(data) - set(fields), key=str)
    if missing:
        raise ValueError(f"missing field {missing[0]!r}")
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r}")


def log_entry(event: Event) -> dict:
    """A step as the game log (play.py's and the web saves') records it."""
    if isinstance(event, Rolled):
        return {"roll": list(event.dice), "player": event.seat}
    return {"act": event.move.action, "player": event.seat}


def apply_event(game: Game, event: object) -> None:
    """Play one logged event, ``{"roll": dice, "player": seat}`` or ``{"act": action,
    "player": seat}``, through the engine, which checks it; ValueError if it can't."""
    if not isinstance(event, dict) or set(event) not in EVENT_KEYS:
        raise ValueError("an event is {'roll': dice, 'player': seat} or {'act': n, 'player': seat}")
    s = game.state
    if event["player"] != s.current or not is_int(event["player"]):
        raise ValueError(f"it is seat {s.current}'s move, not {event['player']!r}'s")
    if "roll" in event:
        dice = event["roll"]
        if not isinstance(dice, list) or not all(is_int(d) for d in dice):
            raise ValueError(f"a roll is a list of dice, not {dice!r}")
        game.roll(dice)
    else:
        if not is_int(event["act"]):
            raise ValueError(f"an action is an integer, not {event['act']!r}")
        game.act(event["act"])


def replay_log(
    game: Game, events: object, on_event: Callable[[Event], object] = lambda event: None
) -> None:
    """Play the logged `events` on `game` (at its start) through the engine, which checks
    every one, calling `on_event` after each; ValueError naming the first that does not
    fit."""
    if not isinstance(events, list):
        raise ValueError("log must be a list of events")
    for number, event in enumerate(events, 1):
        try:
            apply_event(game, event)
        except ValueError as e:
            raise ValueError(f"log event {number}: {one_line(e)}") from None
        on_event(game.last_event)
