"""Web games and their saves: one JSON file per game, written atomically, checked in
full by the engine when read back.

A save holds the engine's own pieces (``Game.to_json``, ``Game.dice_state``, the bots'
generator state) and the game's event log in play.py's log format (``{"roll": dice,
"player": seat}`` / ``{"act": action, "player": seat}``). Reading a save replays its log
through the engine and requires it to lead to the saved position, so a hand-edited or
damaged file is refused in one line instead of resuming a game the rules never allowed.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import secrets
import tempfile
import time
from pathlib import Path

import numpy as np

from envs import driver
from envs.game import Event, Game, Moved, Rolled, is_int, rng_state_problem
from envs.game_log import check_fields, log_entry, one_line, replay_log
from envs.render import event_text
from envs.rules import Rules
from webplay.bots import Catalogue

log = logging.getLogger("webplay")

FORMAT, VERSION = "fivethousand-rl web game", 1
FIELDS = (
    "format",
    "version",
    "id",
    "bots",
    "human",
    "seed",
    "created",
    "updated",
    "game",
    "dice",
    "bot_rng",
    "log",
)
HUMAN = "you"
ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{20,64}")
MAX_SAVE_BYTES = 4 << 20  # a long game's save is tens of kB; anything this big is no save
LOG_LINES = 80  # log lines sent with each view


def new_id() -> str:
    """An unguessable game id (256 random bits)."""
    return secrets.token_urlsafe(32)


class WebGame:
    """One game: the engine's Game, who sits where, the bots' generator and the log."""

    def __init__(self, gid: str, bots: list[str | None], human: int, seed: int, game: Game) -> None:
        self.id = gid
        self.bots = bots  # catalogue key per seat; None at the human's seat
        self.human = human
        self.seed = seed
        self.game = game
        # As play.py: the dice and the bots draw from two streams of the one seed.
        self.bot_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[1])
        self.log: list[dict] = []
        self.lines: list[dict] = []  # the log in words, for the page
        self.created = self.updated = time.time()
        self.names = [
            HUMAN if key is None else key if bots.count(key) == 1 else f"{key} (seat {i})"
            for i, key in enumerate(bots)
        ]

    @classmethod
    def new(cls, bots: list[str], seat: int, hold: str, seed: int | None = None) -> WebGame:
        """A new game: `bots` in turn order around the human's `seat`."""
        seed = secrets.randbits(63) if seed is None else seed
        seats: list[str | None] = [*bots[:seat], None, *bots[seat:]]
        dice = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[0])
        return cls(new_id(), seats, seat, seed, Game(len(seats), Rules(hold=hold), seed=dice))

    # ------------------------------------------------------------- queries
    @property
    def over(self) -> bool:
        return self.game.over

    def status(self) -> str:
        """ "you" (the human's decision is due), "over", or "wait" (a roll or a bot's
        decision is next: the client asks for a step)."""
        if self.over:
            return "over"
        return "you" if driver.decision_of(self.human)(self.game) else "wait"

    # ------------------------------------------------------------- play
    def note(self, event: Event) -> dict:
        """Log a step that just happened; returns its frame (see ``frame``)."""
        self.log.append(log_entry(event))
        f = frame(self.game, event, self.names)
        self.lines.append({"seat": f["seat"], "kind": f["kind"], "text": f["text"]})
        self.updated = time.time()
        return f

    def act(self, action: int) -> dict:
        """The human's decision (the engine refuses an illegal one, changing nothing)."""
        self.game.act(action)
        return self.note(self.game.last_event)

    def advance(self, policies: dict[int, object], steps: int) -> list[dict]:
        """Up to `steps` rolls and bot decisions, through the game driver; stops early
        at the human's decision or the end. Returns their frames."""
        frames: list[dict] = []
        at_human = driver.decision_of(self.human)
        seats = [policies.get(i) for i in range(self.game.n_players)]
        driver.play(
            self.game,
            seats,
            self.bot_rng,
            max_turns=math.inf,  # as play.py: a person's game is not cut off (R11)
            until=lambda game: len(frames) >= steps or at_human(game),
            on_event=lambda game, event: frames.append(self.note(event)),
        )
        return frames

    # ------------------------------------------------------------- saves
    def to_dict(self) -> dict:
        return {
            "format": FORMAT,
            "version": VERSION,
            "id": self.id,
            "bots": list(self.bots),
            "human": self.human,
            "seed": self.seed,
            "created": self.created,
            "updated": self.updated,
            "game": json.loads(self.game.to_json()),
            "dice": self.game.dice_state(),
            "bot_rng": self.bot_rng.bit_generator.state,
            "log": [dict(event) for event in self.log],  # a copy: a snapshot to restore
        }

    @classmethod
    def from_dict(cls, data: object, catalogue: Catalogue) -> WebGame:
        """The game saved in `data`, checked field by field and by replaying its log
        through the engine; a one-line ValueError if anything is off."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("not a saved web game")
        check_fields(data, FIELDS)
        if data["version"] != VERSION or not is_int(data["version"]):
            raise ValueError(f"version {data['version']!r}: this server reads version {VERSION}")
        gid, bots, human, seed = data["id"], data["bots"], data["human"], data["seed"]
        if not isinstance(gid, str) or not ID_PATTERN.fullmatch(gid):
            raise ValueError("id must be a game id")
        saved = Game.from_json(json.dumps(data["game"]))  # the engine checks the position
        n = saved.n_players
        if not is_int(human) or not 0 <= human < n:
            raise ValueError(f"human must be a seat 0..{n - 1}")
        if not isinstance(bots, list) or len(bots) != n:
            raise ValueError(f"bots must be a list of {n} entries, one per seat")
        for seat, key in enumerate(bots):
            if (key is None) != (seat == human):
                raise ValueError("bots must be null at the human's seat only")
            if key is not None and key not in catalogue:
                raise ValueError(f"bot {key!r} is not offered by this server")
        if not is_int(seed) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, not {seed!r}")
        for name in ("created", "updated"):
            if not isinstance(data[name], int | float) or isinstance(data[name], bool):
                raise ValueError(f"{name} must be a time in seconds")
        problem = rng_state_problem(np.random.PCG64(), data["bot_rng"])
        if problem:
            raise ValueError(f"bot_rng: {problem}")
        web = cls(gid, bots, human, seed, Game(n, saved.rules))
        replay_log(web.game, data["log"], web.note)
        if web.game.state != saved.state:
            raise ValueError("its log does not lead to its game (a hand-edited game or log?)")
        web.game.set_dice_state(data["dice"])
        web.bot_rng.bit_generator.state = data["bot_rng"]
        web.created, web.updated = float(data["created"]), float(data["updated"])
        for key in set(bots) - {None}:
            catalogue.policy(key).check_game(n, saved.rules)
        return web


def frame(game: Game, event: Event | None, names: list[str]) -> dict:
    """What the page draws after a step: the dice of the event (a roll, or the roll a
    decision was taken on with the held dice marked), its words, and the position."""
    s = game.state
    out = {
        "seat": None,
        "kind": "start",
        "text": "the game starts",
        "dice": [],
        "marked": [],
        "scores": list(s.scores),
        "current": s.current,
        "turn": s.turns + 1,
        "turn_total": s.turn_total,
        "dice_left": s.dice_left,
        "held": [list(h) for h in s.held],
        "winner": s.winner,
    }
    if isinstance(event, Rolled):
        kind = "bust" if event.bust else "roll"
        out.update(seat=event.seat, kind=kind, dice=list(event.dice))
    elif isinstance(event, Moved):
        action = event.move.action
        marked = [i for i in range(len(event.roll)) if action >> i & 1]
        kind = "bank" if event.move.banks else "hold"
        out.update(seat=event.seat, kind=kind, dice=list(event.roll), marked=marked)
    if event is not None:
        out["text"] = event_text(event, names)
    return out


def replay_frames(web: WebGame) -> list[dict]:
    """Every step of `web` from its start, as frames (the replay view)."""
    game = Game(web.game.n_players, web.game.rules)
    frames = [frame(game, None, web.names)]
    replay_log(game, web.log, lambda event: frames.append(frame(game, event, web.names)))
    return frames


class StoreFull(Exception):
    """No room for another game."""


class Store:
    """The games of a data folder: loaded at start (bad files reported and skipped),
    each saved atomically after every change."""

    def __init__(self, folder: Path, catalogue: Catalogue, max_games: int) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.catalogue = catalogue
        self.max_games = max_games
        self.games: dict[str, WebGame] = {}
        self.problems: list[dict] = []
        for path in sorted(self.folder.glob("*.json")):
            try:
                if path.stat().st_size > MAX_SAVE_BYTES:
                    raise ValueError(f"larger than {MAX_SAVE_BYTES} bytes")
                web = WebGame.from_dict(json.loads(path.read_text(encoding="utf-8")), catalogue)
                if web.id != path.stem:
                    raise ValueError("its id is not its file name")
            except Exception as e:  # whatever is wrong with one file, the others still load
                why = one_line(e)
                log.warning("skipped saved game %s: %s", path, why)
                self.problems.append({"file": path.name, "error": why})
                continue
            self.games[web.id] = web

    def path(self, gid: str) -> Path:
        return self.folder / f"{gid}.json"

    def save(self, web: WebGame) -> None:
        """Write `web` atomically: a temporary file in the folder, then os.replace."""
        data = json.dumps(web.to_dict(), separators=(",", ":"))
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=".part")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path(web.id))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def add(self, web: WebGame) -> None:
        """Store a new game, first pruning the oldest finished game when full;
        StoreFull if every stored game is still in progress."""
        if len(self.games) >= self.max_games:
            finished = [g for g in self.games.values() if g.over]
            if not finished:
                raise StoreFull(
                    f"{len(self.games)} games are in progress, the most this server keeps; "
                    "finish one first"
                )
            oldest = min(finished, key=lambda g: g.updated)
            self.path(oldest.id).unlink(missing_ok=True)
            del self.games[oldest.id]
        self.save(web)
        self.games[web.id] = web
