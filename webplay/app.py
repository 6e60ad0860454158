"""The web app: a JSON API over the engine, and the page that plays through it.

Every request body is a pydantic model (unknown fields, wrong types and out-of-range
numbers refused), and every move is then checked by the engine; a refusal is a 4xx
JSON answer ``{"error": "one line"}`` and leaves the game as it was. A new game names
its rules, a field per house-rule switch (``envs.rules.Rules``, checked by it; the seeds'
rules by default), which the game's views, save and replay carry. Game ids are
unguessable (``secrets.token_urlsafe``); an unknown one is a 404; DELETE abandons one.
Which games are kept, and for how long: fivethousand_rl.webplay.games.

A move names the position it answers (``at``, the view's count of steps so far), so a
repeated or late request (a double click, a retry) is refused (409) instead of being
played at a later decision; a step request may name it too, and a repeated rematch
answers the same new game.

Each game has a turn of its own (``fivethousand_rl.webplay.games.Gate``): a request waits only for
requests on the same game, and waits in the event loop, not in a worker thread, so a
game busy with slow work holds one thread, never the pool the other games need; more
than ``MAX_WAITING`` requests waiting for one game get a 429. One-time work (a model
load, the 2-player solve of the first hint) waits only for requests that need it
(``Catalogue.once``), and the expensive kind (a new game's preparation, a planner build,
and every solve, whatever needs it: ``Work.solves_for``) runs at most ``max_work`` at
once, ``max_work_per_address`` for the address that keeps the game: a request over
either gets a 503 or a 429 at once.

Every answer is in the request's language (``Language``): the one the page names (its
``X-Language`` header, or a ``lang`` query parameter), else the best of its
``Accept-Language``, else English; the texts a player reads (the log, the choices, the
rules line, hints, errors) are put in words as the answer is made, never stored
translated, so saves hold what they always held. The page's own texts come from
``/api/i18n/{lang}`` (``fivethousand_rl.envs.i18n.catalogue_json``); ``/api/languages`` lists them.

Every response carries security headers (a strict Content-Security-Policy: the page
has no inline script or style; no framing; no referrer; no MIME sniffing), and a request
whose Host header is not one of the names the server answers to is refused (400, the
API's JSON error), so a page of another site cannot drive a local server through DNS
rebinding.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import logging
import re
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, TypeVar
from urllib.parse import parse_qs

from fastapi import Body, FastAPI, HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware

from fivethousand_rl.agents import hints
from fivethousand_rl.agents.cache import LRU
from fivethousand_rl.agents.optimal import solves_admitted_by
from fivethousand_rl.agents.value_net import CHECKPOINTS
from fivethousand_rl.envs import i18n
from fivethousand_rl.envs.game import IllegalMoveError, Move
from fivethousand_rl.envs.game_log import one_line
from fivethousand_rl.envs.i18n import _, ngettext
from fivethousand_rl.envs.render import action_text, count_dice, join_words, refusal
from fivethousand_rl.envs.rules import (
    BANK_BIT,
    DEFAULT_RULES,
    HOLD_VARIANTS,
    OVERSHOOT_VARIANTS,
    Rules,
    check_target_bound,
)
from fivethousand_rl.envs.rules_text import rules_sections
from fivethousand_rl.webplay.bots import Catalogue
from fivethousand_rl.webplay.games import (
    LOG_LINES,
    MAX_TARGET,
    MAX_WORK,
    MAX_WORK_PER_ADDRESS,
    SOLVE_CHOICES,
    GateFull,
    Limits,
    Store,
    StoreFull,
    WebGame,
    check_people,
    check_target,
    client_key,
    frame,
    position,
    replay_frames,
    rules_line,
    said,
)

log = logging.getLogger("webplay")
STATIC = Path(__file__).resolve().parent / "static"
MAX_BODY = 4096  # bytes: the largest request (a new game with 7 bots) is far smaller
MAX_STEPS = 10_000
LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")  # Host names a local server answers to
SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
        b"form-action 'self'; frame-ancestors 'none'",
    ),
    (b"x-frame-options", b"DENY"),  # frame-ancestors for older browsers
    (b"referrer-policy", b"no-referrer"),
]


MAX_PREPARED = 4096  # (bot, rules) pairs remembered as prepared, so needing no slot
T = TypeVar("T")


class Work:
    """The bound on expensive work (solves of new rules, planner builds): at most `total`
    at once, `per_address` for one client address. ``slot`` raises the HTTP refusal at
    once (503 when the server is busy, 429 when the address is) instead of queueing:
    each such piece of work holds a worker thread for seconds. A slot is one per request:
    work inside work already holding one (a solve within a hint's first build) uses it.
    `solve` (a key of ``SOLVE_CHOICES``) says which rules may be solved at all
    (``check_solvable``); every solve needs a slot (``solves_for``)."""

    def __init__(
        self, total: int = MAX_WORK, per_address: int = MAX_WORK_PER_ADDRESS, solve: str = "any"
    ) -> None:
        if total < 1 or per_address < 1:
            raise ValueError("--max-work and --max-work-per-address must be at least 1")
        if solve not in SOLVE_CHOICES:
            raise ValueError(f"--solve must be one of {', '.join(SOLVE_CHOICES)}, got {solve!r}")
        self.total, self.per_address, self.solve = total, per_address, solve
        self._lock = threading.Lock()
        self._running: Counter[str] = Counter()  # pieces running, by client address
        self._held: ContextVar[bool] = ContextVar("work_slot_held", default=False)

    @contextlib.contextmanager
    def slot(self, client: str) -> Iterator[None]:
        if self._held.get():  # this request's own slot, entered further up
            yield
            return
        with self._lock:
            if self._running[client] >= self.per_address:
                raise HTTPException(
                    429,
                    ngettext(
                        "this address already has {n} solve or planner build running, the "
                        "most one address may: try again when it ends",
                        "this address already has {n} solves or planner builds running, "
                        "the most one address may: try again when they end",
                        self.per_address,
                    ),
                )
            if sum(self._running.values()) >= self.total:
                raise HTTPException(
                    503,
                    ngettext(
                        "the server is busy with {n} solve or planner build, the most it "
                        "runs at once: try again in a minute",
                        "the server is busy with {n} solves or planner builds, the most it "
                        "runs at once: try again in a minute",
                        self.total,
                    ),
                )
            self._running[client] += 1
        held = self._held.set(True)
        try:
            yield
        finally:
            self._held.reset(held)
            with self._lock:
                self._running[client] -= 1
                if not self._running[client]:
                    del self._running[client]

    def solves_for(self, client: str) -> contextlib.AbstractContextManager[None]:
        """A block (a request's work) in which every solve takes a slot of `client`'s
        first (``agents.optimal.solves_admitted_by``: the gate every solve passes), or
        is refused at once (429, 503); a solution in memory or on disk needs none."""
        return solves_admitted_by(functools.partial(self.slot, client))

    def check_solvable(self, rules: Rules) -> None:
        """ValueError (one line) if the 2-player solution of `rules` would need a solve
        this server does not run (``solve``); nothing is solved here."""
        from fivethousand_rl.agents.optimal import solution_known

        if self.solve == "any" or (self.solve == "standard" and rules == DEFAULT_RULES):
            return
        if not solution_known(rules):
            raise ValueError(
                _(
                    "this server solves no new rules (its operator chose --solve {choice})",
                    choice=self.solve,
                )
            )


RULE_FIELDS = [f.name for f in dataclasses.fields(Rules)]


class RulesOnly(BaseModel):
    """A set of rules, a field per field of envs.rules.Rules, the seeds' rules where left
    out; checked by Rules itself (``rules``)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    hold: str = Field(DEFAULT_RULES.hold, max_length=20)
    target: int = DEFAULT_RULES.target
    entry: int = DEFAULT_RULES.entry
    bump: bool = DEFAULT_RULES.bump
    overshoot: str = Field(DEFAULT_RULES.overshoot, max_length=20)
    fifty_rule: bool = DEFAULT_RULES.fifty_rule

    def rules(self) -> Rules:
        """The rules; a one-line ValueError (Rules's own) for a bad value."""
        return Rules(**{name: getattr(self, name) for name in RULE_FIELDS})


class NewGame(RulesOnly):
    """A new game: the bots (keys of /api/bots), the person's seat, and the rules: a
    field per field of fivethousand_rl.envs.rules.Rules (R5, V1-V5), the seeds' rules when left out.
    Pass and play: `humans`, the seats of the people taking turns on this device (then
    not `seat`), and `people`, their names (null: "player N"); the bots sit in the other
    seats in order. 2 to 8 players in all. Here only the types are checked; the values by
    Rules itself (``rules``) and by ``start``."""

    bots: list[Annotated[str, Field(max_length=100)]] = Field(max_length=7)
    seat: int = Field(0, ge=0, le=7)
    humans: list[int] | None = Field(None, min_length=1, max_length=8)
    people: list[Annotated[str, Field(max_length=100)] | None] | None = Field(None, max_length=8)
    seed: int | None = Field(None, ge=0, lt=2**63)


class MoveRequest(BaseModel):
    """The human's decision: an action of the engine's encoding (bits 0-4 hold those
    positions of the sorted roll, bit 5 banks), and `at`, the view's ``at`` (the steps
    played so far) of the position it answers."""

    model_config = ConfigDict(extra="forbid", strict=True)
    action: int = Field(ge=0, le=63)
    at: int = Field(ge=0)


class StepRequest(BaseModel):
    """How many rolls and bot decisions to play (stopping at the human's decision); `at`,
    if given, the view's ``at`` of the position they follow."""

    model_config = ConfigDict(extra="forbid", strict=True)
    steps: int = Field(1, ge=1, le=MAX_STEPS)
    at: int | None = Field(None, ge=0)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _validation_message(exc: RequestValidationError) -> str:
    """Pydantic's first complaint, in one line: "bots: List should have at most 7 items"."""
    if not (errors := exc.errors()):
        return _("invalid request")
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
    message = one_line(Exception(first.get("msg", "invalid")))
    if first.get("type") == "json_invalid":
        return _("the request body is not valid JSON")
    if first.get("type") == "missing" and not where:
        return _("a JSON request body is required")
    return f"{where}: {message}" if where else message


class HttpMiddleware:
    """ASGI middleware that acts on HTTP requests only (``http``); any other scope
    (lifespan, websocket) goes straight on to the app."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            await self.http(scope, receive, send)
        else:
            await self.app(scope, receive, send)


class BodyLimit(HttpMiddleware):
    """ASGI middleware: a request body over `limit` bytes gets a 413, read no further; a
    request whose client disconnects before its body is whole reaches no endpoint."""

    def __init__(self, app, limit: int) -> None:
        self.app, self.limit = app, limit

    async def http(self, scope, receive, send) -> None:
        declared = dict(scope.get("headers") or []).get(b"content-length")
        too_big = declared is not None and (not declared.isdigit() or int(declared) > self.limit)
        body = bytearray()
        more = True
        # Read the body first (it is small), so a lying client is caught too.
        while more and not too_big:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left part-way: a cut-off body is never acted on
            body += message.get("body", b"")
            more = message.get("more_body", False)
            too_big = len(body) > self.limit
        if too_big:
            response = _error(413, _("the request body is over {limit} bytes", limit=self.limit))
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


class SecurityHeaders(HttpMiddleware):
    """ASGI middleware: SECURITY_HEADERS on every response, an unexpected error's 500
    included (answered here, in one line, then raised on for the server's log)."""

    async def http(self, scope, receive, send) -> None:
        started = False

        async def send_with_headers(message: dict) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception:
            if not started:
                answer = _error(500, _("internal server error"))
                await answer(scope, receive, send_with_headers)
            raise


class HostCheck:
    """ASGI middleware: Starlette's TrustedHostMiddleware (the Host header must name one of
    `allowed_hosts`), its refusal answered as the API's JSON error rather than plain text."""

    def __init__(self, app, allowed_hosts: Sequence[str]) -> None:
        async def passed(scope, receive, send) -> None:
            scope["fivethousand_rl.webplay.host_checked"] = True
            await app(scope, receive, send)

        self.app = app
        self.check = TrustedHostMiddleware(passed, allowed_hosts=allowed_hosts, www_redirect=False)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.check(scope, receive, send)
            return

        async def answer(message: dict) -> None:
            if scope.get("fivethousand_rl.webplay.host_checked"):
                await send(message)
            elif message["type"] == "http.response.start":  # the refusal: ours instead
                refused = _error(
                    400, _("the Host header names none of the names this server answers to")
                )
                await refused(scope, receive, send)

        await self.check(scope, receive, answer)


LANGUAGE_HEADER = "x-language"  # the page's choice, sent with each API call


def request_language(scope: dict) -> str:
    """The language of a request: the one it names (a ``lang`` query parameter, else
    the page's ``X-Language`` header) if this project speaks it, else the best of its
    ``Accept-Language`` (``fivethousand_rl.envs.i18n.negotiate``), else English."""
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    headers = {k.lower(): v for k, v in scope.get("headers") or []}
    named = query.get("lang", [""])[-1] or headers.get(LANGUAGE_HEADER.encode(), b"").decode(
        "latin-1"
    )
    if (base := re.split(r"[-_]", named.strip().lower(), maxsplit=1)[0]) in i18n.LANGUAGES:
        return base
    return i18n.negotiate(headers.get(b"accept-language", b"").decode("latin-1"))


class Language(HttpMiddleware):
    """ASGI middleware: the request's language (``request_language``) in use while it is
    answered (``envs.i18n.language``, a context variable: it follows the request into
    the worker threads of its endpoints, and no other request sees it). An API answer
    says its language (``Content-Language``) and that it depends on the request's
    (``Vary``); the catalogues (/api/i18n/...) and static files say nothing of it."""

    async def http(self, scope, receive, send) -> None:
        lang = request_language(scope)
        path = scope.get("path", "")
        marked = path.startswith("/api/") and not path.startswith("/api/i18n/")

        async def send_with_language(message: dict) -> None:
            if marked and message["type"] == "http.response.start":
                headers, vary = [], [b"Accept-Language", b"X-Language"]
                for key, value in message.get("headers", []):
                    if key.lower() == b"vary":  # another's Vary: kept, with ours
                        vary[:0] = [v.strip() for v in value.split(b",") if v.strip()]
                    elif key.lower() != b"content-language":
                        headers.append((key, value))
                headers += [(b"content-language", lang.encode()), (b"vary", b", ".join(vary))]
                message = {**message, "headers": headers}
            await send(message)

        with i18n.using(lang):
            await self.app(scope, receive, send_with_language)


CATALOGUE_MAX_AGE = 3600  # seconds a browser may keep a catalogue without asking again


@functools.cache
def catalogue_body(lang: str) -> tuple[bytes, str]:
    """`lang`'s catalogue as the page reads it (JSON) and its ETag; read once per
    process (the catalogues change only with the installed package). A language whose
    catalogue is not there yet: no messages (the page shows the English)."""
    try:
        data = i18n.catalogue_json(lang)
    except FileNotFoundError:
        data = {"lang": lang, "messages": {}}
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    return body, f'"{hashlib.sha256(body).hexdigest()[:32]}"'


def check_hosts(hosts: Sequence[str]) -> list[str]:
    """`hosts` as TrustedHostMiddleware takes them; ValueError (one line) for a pattern it
    would refuse (its own check is an assert)."""
    for host in hosts:
        wildcard = host == "*" or host.startswith("*.") or not host.startswith("*")
        if not host or "*" in host[1:] or not wildcard:
            raise ValueError(
                f"allowed host {host!r}: give a name, an address, '*.example.com' or '*'"
            )
    return list(hosts)


def choice_text(move: Move, names: list[str]) -> str:
    """What a choice does, in a few words (for its button): roll on, or what banking does."""
    o = move.bank
    if o is None:
        return _("roll {dice}", dice=count_dice(move.dice_left))
    said = {"total": o.total, "score": o.scores[o.banker]}
    if o.winner == o.banker:
        return _("win with {score}", **said)
    if o.lost:
        return _("overshoot: the {total} points are lost", **said)
    if o.overshoot:
        said["name"] = names[o.gift_to]
        if o.winner == o.gift_to:
            return _("overshoot: gift of {total} to {name}, who wins", **said)
        return _("overshoot: gift of {total} to {name}", **said)
    if not o.bumped:
        return _("score {score}", **said)
    said["names"] = join_words([names[p] for p in o.bumped])
    return _("score {score}, bumps {names} to 0", **said)


def create_app(
    data: str | Path,
    *,
    limits: Limits | None = None,
    clock: Callable[[], float] = time.time,
    allowed_hosts: Sequence[str] = LOCAL_HOSTS,
    max_body: int = MAX_BODY,
    catalogue: Catalogue | None = None,
    planners: str | Path = CHECKPOINTS,
    work: Work | None = None,
) -> FastAPI:
    """The app over the saved games of the folder `data` (created if missing, and locked
    until the app shuts down: OSError EBUSY if another server holds it), kept by `limits`
    (fivethousand_rl.webplay.games) on the time of `clock`; it answers requests for the Host names
    `allowed_hosts` only ('*' for any). Hints for 3+ players may come from a shipped planner
    in `planners` (``hints.hint_policy``). `work` bounds the expensive work (``Work()``)."""
    hosts = check_hosts(allowed_hosts)
    catalogue = catalogue or Catalogue()
    work = work or Work()
    prepared = LRU(MAX_PREPARED)  # (bot, rules) prepared: no slot needed
    store = Store(Path(data), catalogue, limits, clock)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        store.close()

    app = FastAPI(title="5000", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.store = store
    # The last added runs first: the headers go on every answer, the refusals included.
    app.add_middleware(BodyLimit, limit=max_body)
    app.add_middleware(HostCheck, allowed_hosts=hosts)
    app.add_middleware(Language)  # outside the refusals above: they are translated too
    app.add_middleware(SecurityHeaders)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, one_line(Exception(exc.detail)))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, _validation_message(exc))

    def address(request: Request) -> str:
        """Who asks: the client's address (a proxy's forwarded one, see webplay.games); an
        IPv6 one as its /64 network, which one subscriber usually holds whole."""
        return client_key(request.client.host if request.client else "unknown")

    async def on_game(web: WebGame | str, request: Request, use: Callable[[WebGame], T]) -> T:
        """`use(game)` in a worker thread, the game `web` (or its id, used by this
        request: 404 if none) held for it alone. The request waits for its turn in the
        event loop (``Gate``): 429 if too many already wait."""
        if isinstance(web, str):
            web = await run_in_threadpool(store.get, web, address(request))
            if web is None:
                raise HTTPException(404, _("no such game"))
        try:
            await web.gate.enter()
        except GateFull as e:
            raise HTTPException(429, _("{why}: try again shortly", why=str(e))) from None

        def held(web: WebGame) -> T:
            # Any solve this request needs (a hint, a bot's step) takes a slot of the
            # address that keeps the game, or is refused at once.
            with web.lock, work.solves_for(web.owner or "unknown"):
                if web.gone:  # abandoned or expired while this request waited
                    raise HTTPException(404, _("no such game"))
                return use(web)

        try:
            return await run_in_threadpool(held, web)
        finally:
            web.gate.leave()

    def check_at(web: WebGame, at: int | None) -> None:
        """409 unless `at` (if given) names the game's current position."""
        if at is not None and at != len(web.log):
            raise HTTPException(
                409,
                _(
                    "this request answers step {at} but the game is at step {now} (a "
                    "repeated or late request): nothing was played",
                    at=at,
                    now=len(web.log),
                ),
            )

    def table_specs(web: WebGame) -> tuple[str, ...]:
        """The bots after the person in turn order, by their specs: the table a best
        response is computed for (none in pass and play: people are no table of bots)."""
        n = web.game.n_players
        if len(web.humans) > 1:
            return ()
        seats = [(web.human + i) % n for i in range(1, n)]
        return tuple(catalogue.bots[web.bots[seat]].spec for seat in seats)

    def hint_key(web: WebGame) -> tuple:
        game = web.game
        table = table_specs(web) if game.n_players > 2 else ()
        return ("hint", game.n_players, game.rules, table)

    def hint_policy(web: WebGame) -> tuple[object | None, str]:
        """The policy that gives the hints of this table under its rules
        (``hints.hint_policy``), or None and why not (in the language in use). Made once
        per table and rules, by the first request that needs it."""
        n, rules = web.game.n_players, web.game.rules
        if n == 2:
            try:
                work.check_solvable(rules)
            except ValueError as e:  # a solve this server does not run: no hint
                return None, _("no exact hint under these rules: {why}", why=one_line(e))

        def make() -> tuple[object | None, str]:
            """The policy, or None and why not (the solver's own words: what is made
            here is kept for every request, whatever its language)."""
            try:
                return hints.hint_policy(n, rules, table_specs(web), planners), ""
            except ValueError as e:  # rules the solver does not take: no hint, the game goes on
                return None, one_line(e)

        key = hint_key(web)
        if catalogue.made(key) is not None:
            policy, why = catalogue.once(key, make)
        else:
            with work.slot(web.owner or "unknown"):  # the solve or the planner build
                policy, why = catalogue.once(key, make)
        if policy is not None:
            return policy, ""
        if n > 2:
            return None, ngettext(
                "no hint for {n} player under these rules: no shipped planner values such a table",
                "no hint for {n} players under these rules: no shipped planner values such a table",
                n,
            )
        return None, _("no exact hint under these rules: {why}", why=why)

    def hint_kind(web: WebGame) -> str | None:
        """What a hint will be: "exact" (2 players, unless the solver is known to refuse
        the rules: it solves at the first hint, not before; 3+, a computed best response),
        "estimate" (3+, a shipped planner), or None (no hint)."""
        if web.game.n_players == 2 and catalogue.made(hint_key(web)) is None:
            try:  # not asked yet: exact, unless this server would not solve it
                work.check_solvable(web.game.rules)
            except ValueError:
                return None
            return "exact"
        try:  # made already (then at once), or a planner's build
            policy = hint_policy(web)[0]
        except HTTPException:  # no room to build the planner now: the hint request will
            return "estimate"
        if policy is None:
            return None
        return "exact" if hints.is_exact(policy) else "estimate"

    def view(web: WebGame, events: list[dict] | None = None) -> dict:
        """Everything the page shows of a game."""
        game, s = web.game, web.game.state
        status = web.status()
        names = web.names  # in the request's language
        moves, mask = [], [0] * 64
        if status == "you":
            for move in game.moves():
                mask[move.action] = 1
                why = move.why_no_bank and _(
                    "can't bank {total}: it {why}",
                    total=move.turn_total,
                    why=refusal(move.why_no_bank),
                )
                moves.append(
                    {
                        "action": move.action,
                        "banks": move.banks,
                        "turn_total": move.turn_total,
                        "text": choice_text(move, names),
                        "why_no_bank": why,
                    }
                )
        last = game.last_event
        return {
            "id": web.id,
            "at": len(web.log),  # the steps so far: a move names the position it answers
            "status": status,
            "names": names,
            "bots": web.bots,
            "human": web.human,
            "humans": web.humans,
            "to_play": web.to_play(),
            "rules": game.rules.to_dict(),
            "rules_line": rules_line(game.rules),
            **position(game),
            "phase": s.phase,
            "roll": list(s.roll) if s.roll is not None else None,
            "mask": mask,
            "moves": moves,
            "hint": None if web.over else hint_kind(web),  # its bots may be gone
            "last": frame(game, last, names) if last is not None else None,
            "log": web.log_lines(LOG_LINES),  # in words now, in the request's language
            "log_start": max(1, len(web.events) - LOG_LINES + 1),  # the number of its first line
            "events": events or [],
            "end": web.end(),  # why it ended without a winner (None: won, or goes on)
        }

    def commit(web: WebGame, before: dict) -> None:
        """Save `web`; if that fails, put the game back as it was and answer 503."""
        try:
            store.save(web)
        except OSError as e:
            web.restore(before, catalogue)
            log.error("could not save game %s: %s", web.id, one_line(e))
            raise HTTPException(503, _("could not save the game: {why}", why=said(e))) from None

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    # The small answers run in the event loop itself: no worker thread to wait for.
    @app.get("/api/bots")
    async def bots() -> dict:
        return {"bots": catalogue.to_list(), "max_bots": 7}

    @app.get("/api/rules")
    async def rule_choices() -> dict:
        """What the new-game form offers: the seeds' rules (every field of Rules), the
        choices of the switches that have names, and the largest target."""
        return {
            "defaults": dataclasses.asdict(DEFAULT_RULES),
            "choices": {"hold": list(HOLD_VARIANTS), "overshoot": list(OVERSHOOT_VARIANTS)},
            "max_target": MAX_TARGET,
        }

    @app.post("/api/rules/text")
    def rules_text_of(req: RulesOnly) -> dict:
        """The rules as a player reads them (``envs.rules_text``), under the rules given
        (a game's ``rules``; none: the standard rules), in the request's language: titled
        sections of lines, for the page's rules panel."""
        try:
            rules = check_target_bound(req.rules())
        except ValueError as e:
            raise HTTPException(422, one_line(e)) from None
        return {"sections": [{"title": t, "lines": lines} for t, lines in rules_sections(rules)]}

    @app.get("/api/languages")
    async def languages() -> dict:
        """The languages the page can be read in, each named in itself, and the one this
        request is answered in (its choice, else its Accept-Language)."""
        return {"languages": i18n.LANGUAGES, "default": i18n.language.get()}

    @app.get("/api/i18n/{lang}")
    async def messages(lang: str, request: Request) -> Response:
        """The catalogue of `lang` for the page (``envs.i18n.catalogue_json``): the same
        for every request, so it may be cached (and revalidated by its ETag)."""
        if lang not in i18n.LANGUAGES:
            raise HTTPException(404, _("no such language: {lang}", lang=lang[:20]))
        body, etag = await run_in_threadpool(catalogue_body, lang)
        headers = {
            "cache-control": f"public, max-age={CATALOGUE_MAX_AGE}",
            "etag": etag,
            "content-language": lang,
        }
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        return Response(body, media_type="application/json", headers=headers)

    @app.get("/api/problems")
    async def problems() -> dict:
        """Saved games that could not be read at start (skipped)."""
        return {"problems": store.problems}

    def start(
        bots: list[str],
        seat: int,
        rules: Rules,
        seed: int | None,
        client: str,
        humans: list[int] | None = None,
        people: list[str | None] | None = None,
    ) -> WebGame:
        """A new game of `client`'s under `rules`, stored: one person at `seat`, or
        (pass and play) people at the seats `humans`, named `people`."""
        if unknown := [k for k in bots if k not in catalogue]:
            raise HTTPException(422, _("unknown bot {bot}; see /api/bots", bot=repr(unknown[0])))
        if humans is None:
            if people is not None:
                raise HTTPException(422, _("people names the people of humans: give both"))
            if not bots:
                raise HTTPException(422, _("a game needs 2 to 8 players"))
            if seat > len(bots):
                raise HTTPException(
                    422,
                    ngettext(
                        "seat must be 0..{n} with {n} bot",
                        "seat must be 0..{n} with {n} bots",
                        len(bots),
                    ),
                )
        else:
            if seat:
                raise HTTPException(422, _("give seat or humans, not both"))
            n = len(bots) + len(humans)
            if not 2 <= n <= 8:
                raise HTTPException(422, _("a game needs 2 to 8 players"))
            people = people if people is not None else [None] * len(humans)
            if len(people) == len(humans):  # in seat order, each name with its seat
                order = sorted(range(len(humans)), key=humans.__getitem__)
                humans, people = [humans[i] for i in order], [people[i] for i in order]
            try:
                check_people(humans, people, n)
            except ValueError as e:
                raise HTTPException(422, one_line(e)) from None
        web = WebGame.new(bots, seat, rules, seed, humans, people)
        for key in dict.fromkeys(bots):
            done = (key, web.game.n_players, web.game.rules)
            try:  # a model load or a solve, once: no lock but the bot's own is held
                if catalogue.bots[key].kind == "solver":
                    work.check_solvable(web.game.rules)
                if done in prepared:  # a solve all the same if its solution has gone
                    with work.solves_for(client):
                        catalogue.prepared(key, web.game.n_players, web.game.rules)
                else:  # perhaps expensive: within the bound
                    with work.slot(client):
                        catalogue.prepared(key, web.game.n_players, web.game.rules)
                    prepared.put(done, None)
            except ValueError as e:
                why = said(e, catalogue.root)  # a policy's message often names it already
                named = why if why.startswith(f"{key} ") else f"{key}: {why}"
                raise HTTPException(422, named) from None
        try:
            store.add(web, client)
        except StoreFull as e:
            raise HTTPException(409, str(e)) from None
        except OSError as e:
            raise HTTPException(503, _("could not save the game: {why}", why=said(e))) from None
        return web

    @app.post("/api/games", status_code=201)
    def new_game(req: NewGame, request: Request) -> dict:
        try:
            rules = req.rules()
            check_target(rules)
        except ValueError as e:  # a rule's value (Rules's own checks), or too big a target
            raise HTTPException(422, one_line(e)) from None
        web = start(req.bots, req.seat, rules, req.seed, address(request), req.humans, req.people)
        with web.lock:
            return view(web)

    @app.get("/api/games/{gid}")
    async def show(gid: str, request: Request) -> dict:
        return await on_game(gid, request, view)

    @app.delete("/api/games/{gid}", status_code=204)
    async def abandon(gid: str, request: Request) -> Response:
        """The player abandons the game: its save is deleted."""

        def remove(web: WebGame) -> None:
            try:
                store.remove(web)
            except OSError as e:
                raise HTTPException(
                    503, _("could not delete the game: {why}", why=said(e))
                ) from None

        await on_game(gid, request, remove)
        return Response(status_code=204)

    @app.post("/api/games/{gid}/move")
    async def move(gid: str, req: MoveRequest, request: Request) -> dict:
        return await on_game(gid, request, lambda web: played(web, req))

    def played(web: WebGame, req: MoveRequest) -> dict:
        check_at(web, req.at)
        if web.status() != "you":
            raise HTTPException(
                409, _("the game is over") if web.over else _("it is not your move")
            )
        before = web.to_dict()
        try:
            event = web.act(req.action)
        except IllegalMoveError as e:
            raise HTTPException(400, one_line(e)) from None
        commit(web, before)
        return view(web, [event])

    @app.post("/api/games/{gid}/step")
    async def step(
        gid: str, request: Request, req: Annotated[StepRequest | None, Body()] = None
    ) -> dict:
        return await on_game(gid, request, lambda web: stepped(web, req or StepRequest()))

    def stepped(web: WebGame, req: StepRequest) -> dict:
        check_at(web, req.at)
        if web.status() != "wait":
            raise HTTPException(409, _("the game is over") if web.over else _("it is your move"))
        before = web.to_dict()
        # A bot that fails ends the game (saved); a refusal (no room for a solve) does not,
        # and leaves the game as saved, not part-way through the steps it had made.
        try:
            events = web.advance(catalogue, req.steps, refusals=(HTTPException,))
        except HTTPException:
            web.restore(before, catalogue)
            raise
        commit(web, before)
        return view(web, events)

    @app.get("/api/games/{gid}/hint")
    async def hint(gid: str, request: Request) -> dict:
        return await on_game(gid, request, hinted)

    def hinted(web: WebGame) -> dict:
        if web.status() != "you":
            raise HTTPException(409, _("a hint is for your own decision"))
        game = web.game
        policy, why_not = hint_policy(web)
        if policy is None:
            return {"available": False, "note": why_not}
        best, chances = hints.hint(policy, game)
        roll = game.state.roll
        if game.n_players == 2:
            note = _("exact: optimal play from here on")
        elif hints.is_exact(policy):
            note = _("exact: the best response to these bots")
        else:
            note = _("an estimate by the trained planner {name}, not exact", name=policy.name)
        return {
            "available": True,
            "action": best,
            "marked": [i for i in range(len(roll)) if best >> i & 1],
            "bank": bool(best & BANK_BIT),
            "text": action_text(best, roll, advice=True),
            "chances": chances,
            "exact": hints.is_exact(policy),
            "source": policy.name,
            "note": note,
        }

    @app.post("/api/games/{gid}/rematch", status_code=201)
    async def rematch(gid: str, request: Request) -> dict:
        """A new game at the same table; asked again, the same new game."""
        client = address(request)

        def again(web: WebGame) -> WebGame:
            if not web.over:
                raise HTTPException(409, _("the game is not over"))
            new = web.rematch and store.get(web.rematch, client)
            if not new:
                bots = [k for k in web.bots if k is not None]
                new = start(bots, 0, web.game.rules, None, client, web.humans, web.people)
                web.rematch = new.id
            return new

        return await on_game(await on_game(gid, request, again), request, view)

    @app.get("/api/games/{gid}/replay")
    async def replay(gid: str, request: Request) -> dict:
        return await on_game(gid, request, replayed)

    def replayed(web: WebGame) -> dict:
        return {
            "id": web.id,
            "names": web.names,
            "human": web.human,
            "humans": web.humans,
            "rules": web.game.rules.to_dict(),
            "rules_line": rules_line(web.game.rules),
            "frames": replay_frames(web),
        }

    return app
