"""Web games and their saves: one JSON file per game, written atomically, checked in
full by the engine when read back.

A save holds the engine's own pieces (``Game.to_json``, ``Game.dice_state``, the bots'
generator state) and the game's event log in play.py's log format (``{"roll": dice,
"player": seat}`` / ``{"act": action, "player": seat}``), and why a bot that failed
ended it. Reading a save replays its log through the engine and requires it to lead to
the saved position, so a hand-edited or damaged file is refused in one line instead of
resuming a game the rules never allowed.

Every game ends: won (R9), cut off without a winner at its bound (R11: ``MAX_TURNS``,
``MAX_STEPS``, which keep every save far below ``MAX_SAVE_BYTES``), or ended without a
winner by a bot that failed (its decision raised or was illegal), which the game says.

One server per data folder: the Store holds the lock file ``.lock`` there (``filelock``)
until closed, so a second server on the same folder refuses to start instead of
overwriting the first one's saves.

How long games are kept (``Limits``; every number can be set, the defaults in
brackets). A game is *used* by every request that names it (a view, a move, a step, a
hint, its replay); its save file's time records the last use, so the rule holds across
restarts.

1. Expiry: a finished game is deleted once unused for ``keep_finished`` (7 days), an
   unfinished one once unused for ``keep_idle`` (30 days) (checked at start, at each
   new game, and when the game is asked for).
2. A game used within the last ``grace`` (30 minutes) is never deleted, but by its
   player abandoning it (``DELETE /api/games/{id}``; the page's New game does so once
   the new game has started).
3. Bounds: each client address (for IPv6, its /64 network) keeps at most
   ``per_address`` (10) games, the server at most ``max_games`` (1000). A new game over
   a bound first deletes games unused for longer than ``grace``, the address's own for
   its bound and anyone's for the server's, finished ones first, then the least
   recently used; if that cannot make room, it is refused (409) and nothing is deleted.

A new address is therefore refused only when the server is full of games used within
the grace, which takes at least ``max_games / per_address`` (100) addresses using theirs
all the time: fewer cannot keep anyone out (no bounded store can promise that against
any number of addresses). A game read at start belongs to the first address that uses
it. Behind a reverse proxy the address is the one it forwards (uvicorn trusts
X-Forwarded-For from 127.0.0.1 and ::1; its FORWARDED_ALLOW_IPS variable says otherwise).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import json
import logging
import os
import re
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from filelock import FileLock, Timeout

from fivethousand_rl.agents.base import BRIEF_CHARS, atomic_write, duration
from fivethousand_rl.envs import driver
from fivethousand_rl.envs.game import (
    DECIDE,
    Event,
    Game,
    Moved,
    Rolled,
    is_int,
    rng_state_problem,
)
from fivethousand_rl.envs.game_log import check_fields, log_entry, one_line, replay_log
from fivethousand_rl.envs.i18n import N_, _, ngettext, timespan
from fivethousand_rl.envs.render import cut_off_text, event_text
from fivethousand_rl.envs.rules import DEFAULT_RULES, Rules
from fivethousand_rl.envs.rules_text import rule_words
from fivethousand_rl.webplay.bots import ROOT, Catalogue

log = logging.getLogger("webplay")

FORMAT, VERSION = "fivethousand-rl web game", 2
FIELDS = (  # the keys of WebGame.to_dict, in its order ("failure" may be missing)
    "format", "version", "id", "bots", "humans", "people", "seed", "created", "updated", "game",
    "dice", "bot_rng", "log", "failure",
)  # fmt: skip
# Version 1 (one person, at seat "human"), still read: its game goes on as version 2.
FIELDS_V1 = (
    "format", "version", "id", "bots", "human", "seed", "created", "updated", "game", "dice",
    "bot_rng", "log",
)  # fmt: skip
HUMAN = N_("you")  # the name of the one person at a table of bots (translated where shown)
MAX_NAME = 24  # characters of a person's name (pass and play)
ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{20,64}")
MAX_SAVE_BYTES = 4 << 20  # a long game's save is tens of kB; anything this big is no save
# Every game is bounded (R11): cut off without a winner after MAX_TURNS turns, or
# MAX_STEPS steps (a turn alone has no bound), so its save, at most 36 bytes a step,
# stays far below MAX_SAVE_BYTES. A game that never banks takes about 7 steps a turn.
MAX_TURNS = driver.DEFAULT_MAX_TURNS
MAX_STEPS = 50 * MAX_TURNS
LOG_LINES = 80  # log lines sent with each view
LOCK_FILE = ".lock"
MINUTE, HOUR, DAY = 60.0, 3600.0, 86400.0
# The largest target a game of this server may have (V5): a 2-player hint solves the
# game's variant, in time and memory that grow with the square of the target, so a
# client can ask for nothing bigger than the seeds' game.
MAX_TARGET = 5000
MAX_WAITING = 16  # requests that may wait for one game; the page sends one at a time
MAX_WORK, MAX_WORK_PER_ADDRESS = 2, 1  # expensive work at once (fivethousand_rl.webplay.app.Work)
# Which rules the server solves exactly when no solution is cached (--solve): a solve
# of new house rules takes 6-35 s of CPU and writes about 40 MB to the solver's cache.
SOLVE_CHOICES = {
    "any": "any rules the solver takes, within --max-work (the default)",
    "standard": "the standard rules only; house rules only where already solved",
    "cached": "none: only rules already solved (in the solver's cache)",
}


class GateFull(Exception):
    """Too many requests already wait for this game."""


class Gate:
    """A game's turn for requests: one at a time, the others waiting in the event loop
    (not in a worker thread, so a slow game holds no thread but its own), first come
    first served, at most `limit` waiting (``enter`` raises GateFull beyond). Any event
    loop may wait (the test client runs one per request)."""

    def __init__(self, limit: int = MAX_WAITING) -> None:
        self.limit = limit
        self._lock = threading.Lock()  # guards the two fields below, held briefly
        self._held = False
        self._waiting: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = deque()

    async def enter(self) -> None:
        """Wait for the game's turn (then the caller holds it until ``leave``)."""
        with self._lock:
            if not self._held:
                self._held = True
                return
            if len(self._waiting) >= self.limit:
                raise GateFull(
                    ngettext(
                        "{n} request already waits for this game",
                        "{n} requests already wait for this game",
                        self.limit,
                    )
                )
            loop = asyncio.get_running_loop()
            ticket = (loop, loop.create_future())
            self._waiting.append(ticket)
        try:
            await ticket[1]
        except BaseException:  # cancelled: out of the queue, or the turn passed on
            with self._lock:
                if ticket in self._waiting:
                    self._waiting.remove(ticket)
                    raise
            self.leave()
            raise

    def leave(self) -> None:
        """End the caller's turn: the next waiting request's begins."""
        with self._lock:
            while self._waiting:
                loop, future = self._waiting.popleft()
                try:
                    loop.call_soon_threadsafe(_wake, future)
                except RuntimeError:  # its loop has closed: the next one
                    continue
                return
            self._held = False


def _wake(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


class WebGame:
    """One game: the engine's Game, who sits where (bots, and the people playing on this
    device: one, or several passing it round), the bots' generator and the log (the
    engine's entries, saved, and its events, put in words only when a view is made, in
    the language of the request that asks)."""

    def __init__(
        self,
        gid: str,
        bots: list[str | None],
        humans: list[int],
        seed: int,
        game: Game,
        people: list[str | None] | None = None,
    ) -> None:
        self.id, self.humans, self.seed, self.game = gid, list(humans), seed, game
        self.bots = bots  # catalogue key per seat; None at a person's seat
        # The people's names, one per seat of `humans` (None: "player N" in the language
        # of the view); a single person is "you".
        self.people = list(people) if people is not None else [None] * len(self.humans)
        # As play.py: the dice and the bots draw from two streams of the one seed.
        self.bot_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[1])
        self.log: list[dict] = []
        # The log's events, put in words when a view is made (``log_lines``), in the
        # language of the request that asks: nothing stored is translated.
        self.events: list[Event] = []
        # A bot that failed (its seat, and why in one line) ended the game without a winner.
        self.failure: dict | None = None
        self.created = self.updated = time.time()
        # The store's bookkeeping (never saved): see the module docstring.
        self.touched = self.updated  # the last use, by the store's clock
        self.owner: str | None = None  # the client address that created (or resumed) it
        self.rematch: str | None = None  # the id of its rematch: a repeated request gets it
        self.lock = threading.Lock()  # one request at a time on this game
        self.gate = Gate()  # where requests for it wait their turn (fivethousand_rl.webplay.app)
        self.gone = False  # deleted while a request waited for its lock

    @property
    def human(self) -> int:
        """The first person's seat (the page's "your seat" with one person)."""
        return self.humans[0]

    @property
    def names(self) -> list[str]:
        """Who sits where, as the page names them in the language in use: "you" at the
        seat of the one person at a table of bots, people by their names (or "player 1",
        "player 2", ...) in pass and play, the bots by key (and seat, where a key sits
        twice)."""
        people = dict(zip(self.humans, self.people, strict=True))
        names = []
        for i, key in enumerate(self.bots):
            if key is not None:
                many = self.bots.count(key) > 1
                names.append(_("{bot} (seat {seat})", bot=key, seat=i) if many else key)
            elif len(self.humans) == 1:
                names.append(_(HUMAN))
            else:
                names.append(people[i] or _("player {seat}", seat=self.humans.index(i) + 1))
        return names

    @classmethod
    def new(
        cls,
        bots: list[str],
        seat: int,
        rules: Rules,
        seed: int | None = None,
        humans: list[int] | None = None,
        people: list[str | None] | None = None,
    ) -> WebGame:
        """A new game under `rules`: one person at `seat` with `bots` in turn order around
        them, or (pass and play) people at the seats `humans` (named `people`) and `bots`
        in the other seats in order."""
        seed = secrets.randbits(63) if seed is None else seed
        humans = sorted(humans) if humans is not None else [seat]
        n = len(bots) + len(humans)
        others = iter(bots)
        seats: list[str | None] = [None if i in humans else next(others) for i in range(n)]
        dice = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[0])
        gid = secrets.token_urlsafe(32)  # unguessable: 256 random bits
        return cls(gid, seats, humans, seed, Game(n, rules, seed=dice), people)

    # ------------------------------------------------------------- queries
    @property
    def over(self) -> bool:
        """Won, cut off (R11) or ended by a bot's failure."""
        return self.game.over or self.cut_off or self.failure is not None

    @property
    def cut_off(self) -> bool:
        """Whether the game has reached its bound without a winner (see MAX_TURNS)."""
        s = self.game.state
        return not self.game.over and (s.turns >= MAX_TURNS or len(self.log) >= MAX_STEPS)

    def end(self) -> str | None:
        """Why the game ended without a winner, in the language in use (None if it has
        a winner or goes on)."""
        if self.failure is not None:
            return _(
                "{bot} failed: {why}; the game ended without a winner",
                bot=self.names[self.failure["seat"]],
                why=self.failure["reason"],
            )
        if self.cut_off:
            return cut_off_text(self.game.state.turns)
        return None

    def to_play(self) -> int | None:
        """The seat of the person whose decision is due, or None (a roll or a bot's
        decision is next, or the game is over)."""
        current = self.game.state.current
        due = not self.over and current in self.humans and driver.decision_of(current)(self.game)
        return current if due else None

    def status(self) -> str:
        """ "you" (a person's decision is due: the one at ``to_play``), "over", or
        "wait" (a roll or a bot's decision is next: the client asks for a step)."""
        return "over" if self.over else "you" if self.to_play() is not None else "wait"

    # ------------------------------------------------------------- play
    def record(self, event: Event) -> None:
        """Log a step that just happened."""
        self.log.append(log_entry(event))
        self.events.append(event)
        self.updated = time.time()

    def note(self, event: Event) -> dict:
        """Log a step that just happened; returns its frame (see ``frame``)."""
        self.record(event)
        return frame(self.game, event, self.names)

    def log_lines(self, last: int) -> list[dict]:
        """The last `last` events of the log in words (in the language in use), each
        with its seat and kind (as a frame's)."""
        names = self.names
        return [
            {"seat": event.seat, "kind": event_kind(event), "text": event_text(event, names)}
            for event in self.events[-last:]
        ]

    def act(self, action: int) -> dict:
        """The decision of the person at ``to_play`` (the engine refuses an illegal one,
        changing nothing)."""
        self.game.act(action)
        return self.note(self.game.last_event)

    def advance(
        self, catalogue: Catalogue, steps: int, refusals: tuple[type[Exception], ...] = ()
    ) -> list[dict]:
        """Up to `steps` rolls and decisions of the bots (`catalogue`'s), through the
        game driver; stops early at a person's decision or the end. Returns their frames.
        A bot whose decision raises (but for `refusals`: the request is refused, the game
        goes on) or is illegal ends the game without a winner: ``failure``, and one line
        in the server's log."""
        frames: list[dict] = []
        policies = [None if key is None else catalogue.policy(key) for key in self.bots]
        try:
            driver.play(
                self.game,
                policies,
                self.bot_rng,
                max_turns=MAX_TURNS,
                until=lambda game: (
                    self.cut_off or len(frames) >= steps or self.to_play() is not None
                ),
                on_event=lambda game, event: frames.append(self.note(event)),
            )
        except refusals:
            raise
        except Exception as e:
            seat = self.game.state.current
            if self.game.state.phase != DECIDE or self.bots[seat] is None:
                raise  # no bot's doing
            why = said(e, catalogue.root)
            why = why if len(why) <= BRIEF_CHARS else why[: BRIEF_CHARS - 3] + "..."
            self.failure, self.updated = {"seat": seat, "reason": why}, time.time()
            log.warning(
                "game %s ended: bot %s (seat %d) failed: %s", self.id, self.bots[seat], seat, why
            )
        return frames

    # ------------------------------------------------------------- saves
    def restore(self, data: dict, catalogue: Catalogue) -> None:
        """Put the game back as `data` (its earlier ``to_dict``) says; the store's
        bookkeeping (lock, owner, last use) stays."""
        old = WebGame.from_dict(data, catalogue)
        self.game, self.bot_rng, self.log, self.events = old.game, old.bot_rng, old.log, old.events
        self.failure, self.updated = old.failure, old.updated

    def to_dict(self) -> dict:
        return {
            "format": FORMAT,
            "version": VERSION,
            "id": self.id,
            "bots": list(self.bots),
            "humans": list(self.humans),
            "people": list(self.people),
            "seed": self.seed,
            "created": self.created,
            "updated": self.updated,
            "game": json.loads(self.game.to_json()),
            "dice": self.game.dice_state(),
            "bot_rng": self.bot_rng.bit_generator.state,
            "log": [dict(event) for event in self.log],  # a copy: a snapshot to restore
            "failure": None if self.failure is None else dict(self.failure),
        }

    @classmethod
    def from_dict(cls, data: object, catalogue: Catalogue) -> WebGame:
        """The game saved in `data`, checked field by field and by replaying its log
        through the engine; a one-line ValueError if anything is off."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("not a saved web game")
        version = data.get("version")
        if version not in (1, VERSION) or not is_int(version):
            raise ValueError(f"version {version!r}: this server reads versions 1 and {VERSION}")
        # A save from before bots' failures were recorded has none.
        if version == VERSION:
            check_fields({"failure": None} | data, FIELDS)
        else:
            check_fields(data, FIELDS_V1)
        gid, bots, seed = data["id"], data["bots"], data["seed"]
        if not isinstance(gid, str) or not ID_PATTERN.fullmatch(gid):
            raise ValueError("id must be a game id")
        # The engine checks the position and the rules (a save made before the house-rule
        # switches has none of them: the seeds' rules, as Rules.to_dict promises).
        saved = Game.from_json(json.dumps(data["game"]))
        check_target(saved.rules)
        n = saved.n_players
        if version == 1:  # one person
            if not is_int(data["human"]) or not 0 <= data["human"] < n:
                raise ValueError(f"human must be a seat 0..{n - 1}")
            humans, people = [data["human"]], [None]
        else:
            humans, people = data["humans"], data["people"]
            check_people(humans, people, n)
        if not isinstance(bots, list) or len(bots) != n:
            raise ValueError(f"bots must be a list of {n} entries, one per seat")
        for seat, key in enumerate(bots):
            if (key is None) != (seat in humans):
                raise ValueError("bots must be null at the people's seats only")
            if key is not None and not isinstance(key, str):
                raise ValueError("bots must be the bots' keys")
        if not is_int(seed) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, not {seed!r}")
        for name in ("created", "updated"):
            if not isinstance(data[name], int | float) or isinstance(data[name], bool):
                raise ValueError(f"{name} must be a time in seconds")
        if problem := rng_state_problem(np.random.PCG64(), data["bot_rng"]):
            raise ValueError(f"bot_rng: {problem}")
        web = cls(gid, bots, humans, seed, Game(n, saved.rules), people)
        replay_log(web.game, data["log"], web.record)
        if web.game.state != saved.state:
            raise ValueError("its log does not lead to its game (a hand-edited game or log?)")
        web.game.set_dice_state(data["dice"])
        web.bot_rng.bit_generator.state = data["bot_rng"]
        web.created, web.updated = float(data["created"]), float(data["updated"])
        web.failure = check_failure(data.get("failure"), bots)
        # The bots of a game that goes on must be offered and take it; those of a
        # finished one never play again (the one that failed may be gone since).
        for key in set() if web.over else set(bots) - {None}:
            if key not in catalogue:
                raise ValueError(f"bot {key!r} is not offered by this server")
            catalogue.policy(key).check_game(n, saved.rules)
        return web


def check_failure(failure: object, bots: list[str | None]) -> dict | None:
    """A save's ``failure``, checked: None, or the seat of a bot and a reason of 1 to
    BRIEF_CHARS characters (ValueError, one line, if not)."""
    if failure is None:
        return None
    if not isinstance(failure, dict) or set(failure) != {"seat", "reason"}:
        raise ValueError("failure must be null or an object of seat and reason")
    seat, reason = failure["seat"], failure["reason"]
    if not is_int(seat) or not 0 <= seat < len(bots) or bots[seat] is None:
        raise ValueError("failure's seat must be a bot's seat")
    if not isinstance(reason, str) or not 1 <= len(reason) <= BRIEF_CHARS:
        raise ValueError(f"failure's reason must be 1 to {BRIEF_CHARS} characters")
    return {"seat": seat, "reason": reason}


def client_key(host: str) -> str:
    """Whose request or connection this is, for the limits per client: the address, an
    IPv6 one as its /64 network (which one subscriber usually holds whole)."""
    with contextlib.suppress(ValueError):  # not an IP address: the name as it is
        if ipaddress.ip_address(host).version == 6:
            return str(ipaddress.ip_network(f"{host}/64", strict=False))
    return host


def check_people(humans: object, people: object, n: int) -> None:
    """ValueError (one line, in the language in use) unless `humans` are distinct seats
    of a table of `n` in increasing order and `people` their names, one each: a name is
    None (said "player N") or 1 to MAX_NAME printable characters without spaces at
    either end, no two alike (ignoring case)."""
    if not (isinstance(humans, list) and humans and all(is_int(h) for h in humans)):
        raise ValueError(_("humans must be a list of seats"))
    if humans != sorted(set(humans)) or not 0 <= humans[0] <= humans[-1] < n:
        raise ValueError(_("humans must be different seats 0..{last}", last=n - 1))
    if not isinstance(people, list) or len(people) != len(humans):
        raise ValueError(
            ngettext(
                "people must be a list of {n} name (or null), one per person",
                "people must be a list of {n} names (or null), one per person",
                len(humans),
            )
        )
    for name in people:
        if name is None:
            continue
        if not isinstance(name, str) or not 1 <= len(name) <= MAX_NAME:
            raise ValueError(_("a name has 1 to {most} characters", most=MAX_NAME))
        if name != name.strip() or not name.isprintable():
            raise ValueError(
                _(
                    "a name is printable characters without spaces at either end: {name}",
                    name=repr(name),
                )
            )
    given = [name.casefold() for name in people if name is not None]
    if len(set(given)) != len(given):
        raise ValueError(_("two people have the same name"))


def check_target(rules: Rules) -> None:
    """ValueError (one line) if `rules` have a target bigger than this server plays."""
    if rules.target > MAX_TARGET:
        raise ValueError(
            _(
                "target must be at most {most} on this server, got {target}",
                most=MAX_TARGET,
                target=rules.target,
            )
        )


def rules_line(rules: Rules) -> list[dict]:
    """The game's rules as the page shows them, one short item per field of Rules
    ("target 1000", "no bumps", ...), each with ``house`` true where it differs from the
    seeds' rules (the page highlights those) and ``about`` saying what it means (its
    tooltip); in the language in use."""
    words = {  # each switch's words, in envs.rules_text's order; shorter for three of them
        **rule_words(rules),
        "target": _("target {target}", target=rules.target),
        "entry": _("entry {entry}", entry=rules.entry),
        "fifty_rule": _("50 rule") if rules.fifty_rule else _("no 50 rule"),
    }
    about = {  # what each means (its tooltip)
        "target": _("the exact score that wins (V5)"),
        "entry": _("the turn total needed to bank a first time (V1)"),
        "bump": _("banking onto another player's score sends it to 0 (V2)")
        if rules.bump
        else _("banking onto another player's score leaves it there (V2)"),
        "fifty_rule": _("no banking a total that ends in 50 (V4)")
        if rules.fifty_rule
        else _("a total that ends in 50 may be banked (V4)"),
        "overshoot": _("a total past the target goes to the lowest entered player (V3)")
        if rules.overshoot == "gift"
        else _("a total past the target is lost (V3)"),
        "hold": _("hold any scoring dice (R5)")
        if rules.hold == "free"
        else _("hold every scoring die (R5)"),
    }
    house = {name: getattr(rules, name) != getattr(DEFAULT_RULES, name) for name in words}
    return [{"text": words[name], "about": about[name], "house": house[name]} for name in words]


def position(game: Game) -> dict:
    """Where `game` stands, as the page shows it (a view, and each frame)."""
    s = game.state
    return {
        "scores": list(s.scores),
        "current": s.current,
        "turn": s.turns + 1,
        "turn_total": s.turn_total,
        "dice_left": s.dice_left,
        "held": [list(h) for h in s.held],
        "winner": s.winner,
    }


def event_kind(event: Event) -> str:
    """What kind of step `event` is, for the page's styles: "roll", "bust", "hold" or
    "bank"."""
    if isinstance(event, Rolled):
        return "bust" if event.bust else "roll"
    return "bank" if event.move.banks else "hold"


def frame(game: Game, event: Event | None, names: list[str]) -> dict:
    """What the page draws after a step: the dice of the event (a roll, or the roll a
    decision was taken on with the held dice marked), its words (in the language in
    use), and the position."""
    out = {"seat": None, "kind": "start", "text": _("the game starts"), "dice": [], "marked": []}
    out.update(position(game))
    if isinstance(event, Rolled):
        out.update(seat=event.seat, kind=event_kind(event), dice=list(event.dice))
    elif isinstance(event, Moved):
        marked = [i for i in range(len(event.roll)) if event.move.action >> i & 1]
        out.update(seat=event.seat, kind=event_kind(event), dice=list(event.roll), marked=marked)
    if event is not None:
        out["text"] = event_text(event, names)
    return out


def replay_frames(web: WebGame) -> list[dict]:
    """Every step of `web` from its start, as frames (the replay view)."""
    game = Game(web.game.n_players, web.game.rules)
    names = web.names
    frames = [frame(game, None, names)]
    replay_log(game, web.log, lambda event: frames.append(frame(game, event, names)))
    if end := web.end():  # no winner: the last frame says why it ended
        last = {"seat": None, "current": None, "kind": "end", "text": end, "dice": [], "marked": []}
        frames.append(frames[-1] | last)
    return frames


def said(error: BaseException, *folders: Path) -> str:
    """An error's message for a client: one line without the server's own paths (an
    OSError's reason only; else paths under `folders` or the project's folder shown
    from there, the home folder as ~)."""
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    text = one_line(error)
    for folder in (*folders, ROOT):
        text = text.replace(f"{folder}{os.sep}", "")
    return text.replace(str(Path.home()), "~")


@dataclass(frozen=True)
class Limits:
    """How many games a Store keeps and how long (seconds): the rule of the module
    docstring. ValueError (one line) if the numbers contradict it."""

    max_games: int = 1000
    per_address: int = 10
    keep_finished: float = 7 * DAY
    keep_idle: float = 30 * DAY
    grace: float = 30 * MINUTE

    def __post_init__(self) -> None:
        if not (self.max_games >= 1 and self.per_address >= 1):
            raise ValueError("max_games and per_address must be at least 1")
        # Expiry must not delete a game used within the grace (rule 2); NaN fails too.
        if not (0 <= self.grace <= self.keep_finished and self.grace <= self.keep_idle):
            raise ValueError(
                "the grace must be between 0 and the times finished and idle games are kept"
            )

    def rule(self) -> str:
        """The rule in a few lines (the server's --help)."""
        return (
            f"A finished game is kept until unused for {duration(self.keep_finished)}, an "
            f"unfinished one until unused for {duration(self.keep_idle)} (any request on a "
            f"game uses it). A game used within the last {duration(self.grace)} is never "
            "deleted, except when its player abandons it (New game). Each client address "
            f"keeps at most {self.per_address} games, the server {self.max_games}: a new "
            "game over either bound deletes games unused for longer than that, finished "
            "ones first, then the least recently used, or is refused if there are none: "
            f"fewer than {self.max_games // self.per_address} addresses can never keep "
            "another from starting a game."
        )


class StoreFull(Exception):
    """No room for another game (the message says why, in one line)."""


class Store:
    """The games of a data folder (holding its lock until ``close``): loaded at start
    (bad files reported and skipped), each saved atomically after every change, kept
    and deleted by `limits` as the module docstring says, `clock` telling the time."""

    def __init__(
        self,
        folder: Path,
        catalogue: Catalogue,
        limits: Limits | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.catalogue, self.limits, self.clock = catalogue, limits or Limits(), clock
        self.games: dict[str, WebGame] = {}
        self.problems: list[dict] = []
        self.lock = threading.Lock()  # the games dict and its bookkeeping, held briefly
        # thread_local=False: the server may close from another thread than it started.
        self._folder_lock = FileLock(self.folder / LOCK_FILE, timeout=0, thread_local=False)
        try:
            self._folder_lock.acquire()
        except Timeout:
            raise OSError(errno.EBUSY, "another server is using it") from None
        try:
            self._load()
        except BaseException:
            self.close()
            raise

    def _load(self) -> None:
        # A save's temporary file left by a crash (agents.base.atomic_write's name for
        # it): no server writes here but this one, so none is in use.
        for path in self.folder.glob(".*.json.*.tmp"):
            with contextlib.suppress(OSError):
                path.unlink()
        for path in sorted(self.folder.glob("*.json")):
            try:
                if path.stat().st_size > MAX_SAVE_BYTES:
                    raise ValueError(f"larger than {MAX_SAVE_BYTES} bytes")
                data = json.loads(path.read_text(encoding="utf-8"))
                web = WebGame.from_dict(data, self.catalogue)
                if web.id != path.stem:
                    raise ValueError("its id is not its file name")
                web.touched = path.stat().st_mtime  # the last use (see _stamp)
            except Exception as e:  # whatever is wrong with one file, the others still load
                why = said(e, self.catalogue.root)
                log.warning("skipped saved game %s: %s", path, why)
                self.problems.append({"file": path.name, "error": why})
                continue
            self.games[web.id] = web
        with self.lock:
            self._expire(self.clock())

    def close(self) -> None:
        """Let another server use the folder."""
        self._folder_lock.release()

    def path(self, gid: str) -> Path:
        return self.folder / f"{gid}.json"

    def _stamp(self, web: WebGame) -> None:
        """Record the last use as the save file's time, which the next start reads."""
        os.utime(self.path(web.id), (web.touched, web.touched))

    def save(self, web: WebGame) -> None:
        """Write `web` atomically, stamped with its last use."""
        atomic_write(self.path(web.id), json.dumps(web.to_dict(), separators=(",", ":")))
        self._stamp(web)

    # ------------------------------------------------------------- the rule
    def _expired(self, web: WebGame, now: float) -> bool:
        limit = self.limits.keep_finished if web.over else self.limits.keep_idle
        return now - web.touched > limit

    def _drop(self, web: WebGame) -> bool:
        """Delete `web` unless a request holds it (then it is in use: False)."""
        if not web.lock.acquire(blocking=False):
            return False
        try:
            self._forget(web)
        finally:
            web.lock.release()
        return True

    def _forget(self, web: WebGame) -> None:
        self.path(web.id).unlink(missing_ok=True)
        del self.games[web.id]
        web.gone = True

    def _expire(self, now: float) -> None:
        for web in [w for w in self.games.values() if self._expired(w, now)]:
            self._drop(web)

    def get(self, gid: str, client: str) -> WebGame | None:
        """The game `gid`, now used by `client` (None if there is none, or it expired)."""
        with self.lock:
            web = self.games.get(gid)
            now = self.clock()
            if web is None or (self._expired(web, now) and self._drop(web)):
                return None
            web.touched = now
            web.owner = web.owner or client  # a game read at start: the first to use it
            with contextlib.suppress(OSError):  # the next save records it anyway
                self._stamp(web)
            return web

    def remove(self, web: WebGame) -> None:
        """Delete `web` (its player abandons it); the caller holds its lock."""
        with self.lock:
            self._forget(web)

    def add(self, web: WebGame, client: str) -> None:
        """Store the new game `web` of `client`, first making room as the rule says;
        StoreFull (nothing deleted) if it cannot."""
        with self.lock:
            now = self.clock()
            self._expire(now)
            grace = self.limits.grace

            def unused(games: list[WebGame]) -> list[WebGame]:
                """Those past the grace, in the order they go: finished, then oldest."""
                old = [g for g in games if now - g.touched > grace]
                return sorted(old, key=lambda g: (not g.over, g.touched))

            games = list(self.games.values())
            mine = [g for g in games if g.owner == client]
            drop = unused(mine)[: max(0, len(mine) - self.limits.per_address + 1)]
            if len(mine) - len(drop) >= self.limits.per_address:
                raise StoreFull(
                    ngettext(
                        "this address already keeps {n} game used in the last {time}, "
                        "the most one address may keep: abandon it (New game) or try "
                        "again later",
                        "this address already keeps {n} games used in the last {time}, "
                        "the most one address may keep: abandon one (New game) or try "
                        "again later",
                        self.limits.per_address,
                        time=timespan(grace),
                    )
                )
            others = [g for g in unused(games) if g not in drop]
            drop += others[: max(0, len(games) - len(drop) - self.limits.max_games + 1)]
            if len(games) - len(drop) >= self.limits.max_games:
                raise StoreFull(
                    ngettext(
                        "the server already keeps {n} game used in the last {time}, the "
                        "most it keeps: try again later",
                        "the server already keeps {n} games used in the last {time}, the "
                        "most it keeps: try again later",
                        self.limits.max_games,
                        time=timespan(grace),
                    )
                )
            for old in drop:
                self._drop(old)
            web.owner, web.touched = client, now
            self.save(web)
            self.games[web.id] = web
