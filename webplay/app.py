"""The web app: a JSON API over the engine, and the page that plays through it.

Every request body is a pydantic model (unknown fields, wrong types and out-of-range
numbers refused), and every move is then checked by the engine; a refusal is a 4xx
JSON answer ``{"error": "one line"}`` and leaves the game as it was. Game ids are
unguessable (``secrets.token_urlsafe``); an unknown one is a 404.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Annotated, Literal

from fastapi import Body, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from agents.value_net import CHECKPOINTS, shipped_planner
from envs.game import BankOutcome, IllegalMoveError
from envs.game_log import one_line
from envs.render import count_dice
from envs.rules import BANK_BIT, describe_action
from webplay.bots import Catalogue
from webplay.games import LOG_LINES, Store, StoreFull, WebGame, frame, replay_frames

log = logging.getLogger("webplay")
STATIC = Path(__file__).resolve().parent / "static"
MAX_BODY = 4096  # bytes: the largest request (a new game with 7 bots) is far smaller
MAX_GAMES = 500
MAX_STEPS = 10_000


class NewGame(BaseModel):
    """A new game: 1 to 7 bots (keys of /api/bots), the human's seat, the hold rule."""

    model_config = ConfigDict(extra="forbid", strict=True)
    bots: list[Annotated[str, Field(max_length=100)]] = Field(min_length=1, max_length=7)
    seat: int = Field(0, ge=0, le=7)
    hold: Literal["free", "all"] = "free"
    seed: int | None = Field(None, ge=0, lt=2**63)


class MoveRequest(BaseModel):
    """The human's decision: an action of the engine's encoding (bits 0-4 hold those
    positions of the sorted roll, bit 5 banks)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    action: int = Field(ge=0, le=63)


class StepRequest(BaseModel):
    """How many rolls and bot decisions to play (stopping at the human's decision)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    steps: int = Field(1, ge=1, le=MAX_STEPS)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _validation_message(exc: RequestValidationError) -> str:
    """Pydantic's first complaint, in one line: "bots: List should have at most 7 items"."""
    errors = exc.errors()
    if not errors:
        return "invalid request"
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
    message = one_line(Exception(first.get("msg", "invalid")))
    if first.get("type") == "json_invalid":
        return "the request body is not valid JSON"
    if first.get("type") == "missing" and not where:
        return "a JSON request body is required"
    return f"{where}: {message}" if where else message


class BodyLimit:
    """ASGI middleware: a request body over `limit` bytes gets a 413, read no further."""

    def __init__(self, app, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        too_big = declared is not None and (not declared.isdigit() or int(declared) > self.limit)
        body = bytearray()
        more = True
        # Read the body first (it is small), so a lying client is caught too.
        while more and not too_big:
            message = await receive()
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            more = message.get("more_body", False)
            too_big = len(body) > self.limit
        if too_big:
            response = _error(413, f"the request body is over {self.limit} bytes")
            await response(scope, receive, send)
            return
        sent = False

        async def replay() -> dict:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def bank_preview(outcome: BankOutcome, names: list[str]) -> str:
    """What banking would do, in a few words (for the Bank button)."""
    o = outcome
    if o.winner == o.banker:
        return f"win with {o.scores[o.banker]}"
    if o.lost:
        return f"overshoot: the {o.total} points are lost"
    if o.overshoot:
        won = ", who wins" if o.winner == o.gift_to else ""
        return f"overshoot: gift of {o.total} to {names[o.gift_to]}{won}"
    bumps = " and ".join(names[p] for p in o.bumped)
    return f"score {o.scores[o.banker]}" + (f", bumps {bumps} to 0" if bumps else "")


def create_app(
    data: str | Path,
    *,
    max_games: int = MAX_GAMES,
    max_body: int = MAX_BODY,
    catalogue: Catalogue | None = None,
    planners: str | Path = CHECKPOINTS,
) -> FastAPI:
    """The app over the saved games of the folder `data` (created if missing); hints
    for 3+ players come from a shipped planner in `planners` (``shipped_planner``)."""
    catalogue = catalogue or Catalogue()
    store = Store(Path(data), catalogue, max_games)
    lock = threading.RLock()  # one game step at a time: the engine and bots are not shared-safe
    hints: dict[tuple, object] = {}  # (players, rules) -> hint policy, or None if none fits

    app = FastAPI(title="5000", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.store = store
    app.add_middleware(BodyLimit, limit=max_body)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, one_line(Exception(exc.detail)))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, _validation_message(exc))

    def get(gid: str) -> WebGame:
        web = store.games.get(gid)
        if web is None:
            raise HTTPException(404, "no such game")
        return web

    def policies(web: WebGame) -> dict[int, object]:
        return {i: catalogue.policy(k) for i, k in enumerate(web.bots) if k is not None}

    def hint_policy(web: WebGame):
        """optimal's solver (2 players, exact), a shipped planner (3+, an estimate), or
        None."""
        game = web.game
        key = (game.n_players, game.rules)
        if key not in hints:
            if game.n_players == 2:
                from agents.optimal import OptimalBot

                hints[key] = OptimalBot(show_progress=False)
            else:
                hints[key] = shipped_planner(game.n_players, game.rules, planners)
        return hints[key]

    def view(web: WebGame, events: list[dict] | None = None) -> dict:
        """Everything the page shows of a game."""
        game, s = web.game, web.game.state
        status = web.status()
        moves, mask = [], [0] * 64
        if status == "you":
            for move in game.moves():
                mask[move.action] = 1
                if move.bank is not None:
                    what = bank_preview(move.bank, web.names)
                else:
                    what = f"roll {count_dice(move.dice_left)}"
                why = move.why_no_bank and f"can't bank {move.turn_total}: it {move.why_no_bank}"
                moves.append(
                    {
                        "action": move.action,
                        "banks": move.banks,
                        "turn_total": move.turn_total,
                        "text": what,
                        "why_no_bank": why,
                    }
                )
        last = game.last_event
        if game.n_players == 2:
            hint = "exact"
        else:
            hint = "estimate" if hint_policy(web) is not None else None
        return {
            "id": web.id,
            "status": status,
            "names": web.names,
            "bots": web.bots,
            "human": web.human,
            "rules": game.rules.to_dict(),
            "scores": list(s.scores),
            "current": s.current,
            "phase": s.phase,
            "turn": s.turns + 1,
            "turn_total": s.turn_total,
            "dice_left": s.dice_left,
            "held": [list(h) for h in s.held],
            "roll": list(s.roll) if s.roll is not None else None,
            "mask": mask,
            "moves": moves,
            "winner": s.winner,
            "hint": hint,
            "last": frame(game, last, web.names) if last is not None else None,
            "log": web.lines[-LOG_LINES:],
            "log_start": max(1, len(web.lines) - LOG_LINES + 1),  # the number of its first line
            "events": events or [],
        }

    def commit(web: WebGame, before: dict) -> None:
        """Save `web`; if that fails, put the game back as it was and answer 503."""
        try:
            store.save(web)
        except OSError as e:
            store.games[web.id] = WebGame.from_dict(before, catalogue)
            log.error("could not save game %s: %s", web.id, one_line(e))
            raise HTTPException(503, f"could not save the game: {one_line(e)}") from None

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.get("/api/bots")
    def bots() -> dict:
        return {"bots": catalogue.to_list(), "max_bots": 7}

    @app.get("/api/problems")
    def problems() -> dict:
        """Saved games that could not be read at start (skipped)."""
        return {"problems": store.problems}

    def start(bots: list[str], seat: int, hold: str, seed: int | None) -> dict:
        unknown = [k for k in bots if k not in catalogue]
        if unknown:
            raise HTTPException(422, f"unknown bot {unknown[0]!r}; see /api/bots")
        if seat > len(bots):
            raise HTTPException(422, f"seat must be 0..{len(bots)} with {len(bots)} bots")
        web = WebGame.new(bots, seat, hold, seed)
        for key in dict.fromkeys(bots):
            try:
                catalogue.policy(key).check_game(web.game.n_players, web.game.rules)
            except ValueError as e:
                raise HTTPException(422, f"{key}: {one_line(e)}") from None
        try:
            store.add(web)
        except StoreFull as e:
            raise HTTPException(409, str(e)) from None
        except OSError as e:
            raise HTTPException(503, f"could not save the game: {one_line(e)}") from None
        return view(web)

    @app.post("/api/games", status_code=201)
    def new_game(req: NewGame) -> dict:
        with lock:
            return start(req.bots, req.seat, req.hold, req.seed)

    @app.get("/api/games/{gid}")
    def show(gid: str) -> dict:
        with lock:
            return view(get(gid))

    @app.post("/api/games/{gid}/move")
    def move(gid: str, req: MoveRequest) -> dict:
        with lock:
            web = get(gid)
            if web.status() != "you":
                raise HTTPException(
                    409, "it is not your move" if not web.over else "the game is over"
                )
            before = web.to_dict()
            try:
                event = web.act(req.action)
            except IllegalMoveError as e:
                raise HTTPException(400, one_line(e)) from None
            commit(web, before)
            return view(web, [event])

    @app.post("/api/games/{gid}/step")
    def step(gid: str, req: Annotated[StepRequest | None, Body()] = None) -> dict:
        with lock:
            web = get(gid)
            if web.status() != "wait":
                raise HTTPException(409, "it is your move" if not web.over else "the game is over")
            before = web.to_dict()
            events = web.advance(policies(web), (req or StepRequest()).steps)
            commit(web, before)
            return view(web, events)

    @app.get("/api/games/{gid}/hint")
    def hint(gid: str) -> dict:
        with lock:
            web = get(gid)
            if web.status() != "you":
                raise HTTPException(409, "a hint is for your own decision")
            return hint_for(web)

    def hint_for(web: WebGame) -> dict:
        game = web.game
        policy = hint_policy(web)
        if policy is None:
            return {
                "available": False,
                "note": (
                    f"no hint for {game.n_players} players under the hold rule "
                    f"'{game.rules.hold}': no shipped planner values such a table"
                ),
            }
        values = policy.action_values(game)
        best = max(values, key=values.__getitem__)  # the first of equal values
        roll = game.state.roll
        if game.n_players == 2:
            mine = float(values[best])
            chances = [mine if i == web.human else 1 - mine for i in range(2)]
            note = "exact: optimal play from here on"
            source, exact = "optimal", True
        else:
            chances = [float(p) for p in policy.win_probabilities(game)]
            note = f"an estimate by the trained planner {policy.name}, not exact"
            source, exact = policy.name, False
        return {
            "available": True,
            "action": best,
            "marked": [i for i in range(len(roll)) if best >> i & 1],
            "bank": bool(best & BANK_BIT),
            "text": describe_action(best, roll, rolling="roll on"),
            "chances": chances,
            "exact": exact,
            "source": source,
            "note": note,
        }

    @app.post("/api/games/{gid}/rematch", status_code=201)
    def rematch(gid: str) -> dict:
        with lock:
            web = get(gid)
            if not web.over:
                raise HTTPException(409, "the game is not over")
            bots = [k for k in web.bots if k is not None]
            return start(bots, web.human, web.game.rules.hold, None)

    @app.get("/api/games/{gid}/replay")
    def replay(gid: str) -> dict:
        with lock:
            web = get(gid)
            return {
                "id": web.id,
                "names": web.names,
                "human": web.human,
                "frames": replay_frames(web),
            }

    return app
