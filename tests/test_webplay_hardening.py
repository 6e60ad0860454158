"""The web server against what a tester broke (issue 28, items 2 to 6), through the HTTP
API (FastAPI's TestClient) and the command line (``webplay.__main__.main`` in process,
uvicorn's serving stubbed out): which games are kept and for how long (an injected
clock, no sleeping), one server per data folder, repeated requests, per-game locking,
security headers, Host names, paths in errors, the start-up refusals."""

import contextlib
import errno
import json
import logging
import socket
import threading
import time

import pytest

pytest.importorskip("fastapi", reason="the web app needs fastapi (dev extras)")

import uvicorn  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from fivethousand_rl.agents import RandomBot  # noqa: E402
from fivethousand_rl.envs.policy import Policy  # noqa: E402
from fivethousand_rl.webplay import __main__ as cli  # noqa: E402
from fivethousand_rl.webplay import server  # noqa: E402
from fivethousand_rl.webplay.app import LOCAL_HOSTS, create_app  # noqa: E402
from fivethousand_rl.webplay.bots import Bot, Catalogue  # noqa: E402
from fivethousand_rl.webplay.games import Limits  # noqa: E402
from tests.test_webplay_api import client, greedy, move, new_game, play_on, restart  # noqa: E402

GRACE = 600.0
KEEP_FINISHED, KEEP_IDLE = 10_000.0, 50_000.0


class Clock:
    """The store's clock, moved by hand."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def as_address(c: TestClient, address: str) -> TestClient:
    """Another client of `c`'s app, from `address`."""
    return TestClient(c.app, base_url="http://localhost", client=(address, 5000))


def saves(c: TestClient) -> set[str]:
    return {p.stem for p in c.app.state.store.folder.glob("*.json")}


# ------------------------------------------------------------------ item 2: the store
EXPIRY = [  # (finished, unused for, read back after a restart, kept)
    (True, KEEP_FINISHED - 1, False, True),
    (True, KEEP_FINISHED + 1, False, False),
    (True, KEEP_FINISHED + 1, True, False),  # the last use survives a restart
    (False, KEEP_FINISHED + 1, True, True),  # unfinished: kept longer
    (False, KEEP_IDLE - 1, False, True),
    (False, KEEP_IDLE + 1, False, False),
    (False, KEEP_IDLE + 1, True, False),
]


@pytest.mark.parametrize(("finished", "unused", "restarted", "kept"), EXPIRY)
def test_games_expire_by_the_rule(tmp_path, finished, unused, restarted, kept):
    """Issue 28 item 2: finished and long-unused games expire, by the documented rule."""
    clock = Clock()
    limits = Limits(keep_finished=KEEP_FINISHED, keep_idle=KEEP_IDLE, grace=GRACE)
    c = client(tmp_path, limits=limits, clock=clock)
    view = new_game(c, bots=["threshold:350"], seed=6)
    if finished:
        view = play_on(c, view)
        assert view["status"] == "over"
    clock.now += 5
    c.get(f"/api/games/{view['id']}")  # its last use
    if restarted:
        c = restart(c, limits=limits, clock=clock)
    clock.now += unused
    new_game(as_address(c, "10.0.0.9"), seed=2)  # a new game sweeps the expired ones
    assert (view["id"] in saves(c)) == kept
    assert c.get(f"/api/games/{view['id']}").status_code == (200 if kept else 404)


# Three games of the server's, then a new one: which goes? Each game: (address, unused
# for, finished); a game used within GRACE must stay.
ROOM = [
    ("all used lately: refused", [("a", 10, 0), ("a", 20, 0), ("b", 30, 0)], "c", "409 server"),
    ("the unused one goes", [("a", 10, 0), ("a", 900, 0), ("b", 30, 0)], "c", 1),
    ("the least recently used", [("a", 900, 0), ("a", 1000, 0), ("b", 30, 0)], "c", 1),
    ("finished ones first", [("a", 900, 1), ("a", 1000, 0), ("b", 30, 0)], "c", 0),
    ("an address's own bound", [("a", 10, 0), ("a", 20, 0)], "a", "409 address"),
    (
        "an IPv6 /64 is one address",
        [("2001:db8::1", 10, 0), ("2001:db8::2", 20, 0)],
        "2001:db8::3",
        "409 address",
    ),
    ("its own unused one goes", [("a", 10, 0), ("a", 900, 0)], "a", 1),
    ("its own before others'", [("b", 5000, 0), ("a", 10, 0), ("a", 900, 0)], "a", 2),
    ("others' when under its bound", [("b", 5000, 0), ("b", 10, 0), ("a", 20, 0)], "a", 0),
]


@pytest.mark.parametrize(
    ("games", "creator", "outcome"), [r[1:] for r in ROOM], ids=[r[0] for r in ROOM]
)
def test_room_is_made_from_unused_games_only(tmp_path, games, creator, outcome):
    """Issue 28 item 2: at a bound, the rule says which game goes; a game used within the
    grace never does, and a refused game deletes nothing."""
    clock = Clock()
    limits = Limits(max_games=3, per_address=2, grace=GRACE, keep_finished=1e6, keep_idle=1e6)
    c = client(tmp_path, limits=limits, clock=clock)
    ids = []
    for address, _, finished in games:
        view = new_game(as_address(c, address), bots=["threshold:350"], seed=6)
        ids.append((play_on(c, view) if finished else view)["id"])
    start = clock.now + 10_000
    for gid, (address, unused, _) in sorted(zip(ids, games, strict=True), key=lambda g: -g[1][1]):
        clock.now = start - unused
        assert as_address(c, address).get(f"/api/games/{gid}").status_code == 200
    clock.now = start
    r = as_address(c, creator).post("/api/games", json={"bots": ["smart"]})
    if isinstance(outcome, str):
        words = "the most one address may keep" if outcome.endswith("address") else "try again"
        assert r.status_code == 409 and words in r.json()["error"]
        assert "\n" not in r.json()["error"] and saves(c) == set(ids)
    else:
        assert r.status_code == 201
        assert saves(c) == {*ids, r.json()["id"]} - {ids[outcome]}


def test_one_address_cannot_keep_another_from_playing(tmp_path):
    """Issue 28 item 2: an address creating and using games as fast as it can holds at
    most its share, restarts included; a new address still starts a game."""
    clock = Clock()
    limits = Limits(max_games=4, per_address=2, grace=GRACE)
    flood = as_address(client(tmp_path, limits=limits, clock=clock), "6.6.6.6")
    mine = []
    for round_ in range(6):
        if round_ == 3:  # the server restarts: its games are the first user's again
            flood = as_address(restart(flood, limits=limits, clock=clock), "6.6.6.6")
        for gid in mine:  # keep every game in use
            assert flood.get(f"/api/games/{gid}").status_code == 200
        r = flood.post("/api/games", json={"bots": ["smart"]})
        if r.status_code == 201:
            mine.append(r.json()["id"])
        else:
            assert r.status_code == 409 and "abandon one" in r.json()["error"]
        clock.now += 60
    assert len(mine) == 2 and saves(flood) == set(mine)
    assert (
        as_address(flood, "10.1.2.3").post("/api/games", json={"bots": ["smart"]}).status_code
        == 201
    )
    # Abandoning one makes room for its player at once.
    assert flood.delete(f"/api/games/{mine[0]}").status_code == 204
    assert flood.post("/api/games", json={"bots": ["smart"]}).status_code == 201


@pytest.mark.parametrize("finished", [False, True])
def test_a_player_abandons_a_game(tmp_path, finished):
    """Issue 28 item 2: DELETE /api/games/{id} deletes the game and its save."""
    c = client(tmp_path)
    view = new_game(c, bots=["threshold:350"], seed=6)
    if finished:
        view = play_on(c, view)
    other = new_game(c, seed=3)
    r = c.delete(f"/api/games/{view['id']}")
    assert r.status_code == 204 and saves(c) == {other["id"]}
    for r in (c.get(f"/api/games/{view['id']}"), c.delete(f"/api/games/{view['id']}")):
        assert r.status_code == 404 and r.json()["error"] == "no such game"
    assert c.get(f"/api/games/{other['id']}").status_code == 200


LIMITS = [  # (numbers, words of the refusal)
    ({"max_games": 0}, "at least 1"),
    ({"per_address": 0}, "at least 1"),
    ({"grace": -1.0}, "the grace must be"),
    ({"grace": float("nan")}, "the grace must be"),
    ({"keep_finished": 10.0, "grace": 60.0}, "the grace must be"),  # expiry inside the grace
    ({"keep_idle": float("nan")}, "the grace must be"),
]


@pytest.mark.parametrize(("numbers", "words"), LIMITS)
def test_contradictory_limits_are_refused(numbers, words):
    """Issue 28 item 2: no setting lets expiry delete a game used within the grace."""
    with pytest.raises(ValueError, match=words):
        Limits(**numbers)


# ------------------------------------------------------------------ item 3: one server a folder
def test_a_second_server_on_a_folder_is_refused(tmp_path):
    """Issue 28 item 3: two servers on one folder would overwrite each other's saves."""
    c = client(tmp_path)
    view = play_on(c, new_game(c, seed=2), decisions=2)
    saved = (tmp_path / f"{view['id']}.json").read_bytes()
    with pytest.raises(OSError) as refused:
        create_app(tmp_path)
    assert refused.value.errno == errno.EBUSY
    assert (tmp_path / f"{view['id']}.json").read_bytes() == saved
    c = restart(c)  # once the first has stopped, the next one starts
    assert c.get(f"/api/games/{view['id']}").json() == {**view, "events": []}


# ------------------------------------------------------------------ item 4: repeated requests
def parallel(c: TestClient, requests: int, send) -> list:
    """`send(client)` from `requests` threads at once (each its own client); the answers."""
    start = threading.Barrier(requests)
    answers = [None] * requests

    def one(i: int) -> None:
        mine = TestClient(c.app, base_url="http://localhost")
        start.wait()
        answers[i] = send(mine)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return answers


@pytest.mark.parametrize("route", ["move", "step"])
def test_ten_identical_requests_in_parallel_play_once(tmp_path, route):
    """Issue 28 item 4: a double click or a retry must not play at a later decision."""
    c = client(tmp_path)
    view = new_game(c, seed=2)
    if route == "move":
        view = play_on(c, view, decisions=0)
        body = {"action": greedy(view), "at": view["at"]}
    else:
        body = {"steps": 1, "at": view["at"]}
    answers = parallel(c, 10, lambda mine: mine.post(f"/api/games/{view['id']}/{route}", json=body))
    assert sorted(r.status_code for r in answers) == [200] + [409] * 9
    assert all("repeated or late" in r.json()["error"] for r in answers if r.status_code == 409)
    after = c.get(f"/api/games/{view['id']}").json()
    assert after["at"] == view["at"] + 1 and len(after["log"]) == len(view["log"]) + 1
    saved = json.loads((tmp_path / f"{view['id']}.json").read_text())
    assert len(saved["log"]) == view["at"] + 1


def test_a_repeated_rematch_answers_the_same_game(tmp_path):
    """Issue 28 item 4: five rematch requests at once start one new game."""
    c = client(tmp_path)
    view = play_on(c, new_game(c, bots=["threshold:350"], seed=6))
    answers = parallel(c, 5, lambda mine: mine.post(f"/api/games/{view['id']}/rematch"))
    assert {r.status_code for r in answers} == {201}
    (again,) = {r.json()["id"] for r in answers}
    assert saves(c) == {view["id"], again}


# ------------------------------------------------------------------ item 5: per-game locks
class Stalling(Policy):
    """A bot whose decisions wait until the test lets them go."""

    name = "stalling"

    def __init__(self, inside: threading.Event, release: threading.Event) -> None:
        self.inside, self.release = inside, release

    def act(self, game, rng) -> int:
        if not self.inside.is_set():  # the first decision waits (the old code: 3 s for all)
            self.inside.set()
            self.release.wait(3)
        return game.legal_actions()[0]


@pytest.mark.parametrize("work", ["a bot's decision", "a model load", "the first hint's solve"])
def test_heavy_work_on_one_game_does_not_hold_up_another(tmp_path, monkeypatch, work):
    """Issue 28 item 5: while one game's request is inside slow work, another game's
    request answers at once."""
    inside, release = threading.Event(), threading.Event()

    def make_policy(spec: str):
        if spec == "slow-load":
            inside.set()
            release.wait(3)
            return RandomBot()
        return Stalling(inside, release) if spec == "stalling" else real(spec)

    def solution(self, rules):
        inside.set()
        release.wait(3)
        raise RuntimeError("the test's stand-in for a solve")

    import fivethousand_rl.webplay.bots
    from fivethousand_rl.agents.optimal import OptimalBot

    real = fivethousand_rl.webplay.bots.make_policy
    monkeypatch.setattr(fivethousand_rl.webplay.bots, "make_policy", make_policy)
    monkeypatch.setattr(OptimalBot, "solution", solution)
    catalogue = Catalogue(tmp_path / "no-models")
    for key in ("stalling", "slow-load"):
        catalogue.bots[key] = Bot(key, key, "scripted", "a test's bot")
    c = client(tmp_path / "data", catalogue=catalogue)
    other = new_game(c, seed=5)
    if work == "a bot's decision":
        game = new_game(c, bots=["stalling"], seat=1, seed=1)  # the bot decides first
        slow = ("POST", f"/api/games/{game['id']}/step", {"steps": 1000})
    elif work == "a model load":
        slow = ("POST", "/api/games", {"bots": ["slow-load"]})
    else:
        game = play_on(c, new_game(c, seed=2), decisions=0)
        slow = ("GET", f"/api/games/{game['id']}/hint", None)

    def send_slow() -> None:
        mine = TestClient(c.app, base_url="http://localhost", raise_server_exceptions=False)
        mine.request(slow[0], slow[1], json=slow[2])

    thread = threading.Thread(target=send_slow)
    thread.start()
    try:
        assert inside.wait(10)
        began = time.monotonic()
        r = c.post(f"/api/games/{other['id']}/step", json={"steps": 1})
        took = time.monotonic() - began
        assert r.status_code == 200 and not release.is_set()
        assert took < 1.5, f"another game's request waited {took:.1f} s"
    finally:
        release.set()
        thread.join(10)


# ------------------------------------------------------------------ item 6: web hygiene
HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
}
ANSWERS = [  # (method, path, body, headers, status)
    ("GET", "/", None, {}, 200),
    ("GET", "/static/app.js", None, {}, 200),
    ("GET", "/api/bots", None, {}, 200),
    ("GET", "/api/games/nope", None, {}, 404),
    ("POST", "/api/games", {"bots": []}, {}, 422),
    ("POST", "/api/games", {"bots": ["smart"], "pad": "x" * 5000}, {}, 413),
    ("DELETE", "/api/bots", None, {}, 405),
    ("GET", "/api/bots", None, {"host": "evil.example"}, 400),
]


@pytest.mark.parametrize(("method", "path", "body", "headers", "status"), ANSWERS)
def test_security_headers_on_every_response(tmp_path, method, path, body, headers, status):
    """Issue 28 item 6: nosniff, a CSP that forbids framing, no referrer: on every answer."""
    r = client(tmp_path).request(method, path, json=body, headers=headers)
    assert r.status_code == status
    assert {k: r.headers.get(k) for k in HEADERS} == HEADERS
    csp = r.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "default-src 'self'" in csp
    assert "unsafe-inline" not in csp


def test_a_body_cut_off_by_a_disconnect_reaches_no_endpoint():
    """Issue 54: a client that sends part of a body and leaves: the request is dropped,
    not handed on as if the part were the whole body (a truncated move acted on)."""
    import asyncio

    from fivethousand_rl.webplay.app import BodyLimit

    reached, messages = (
        [],
        [
            {"type": "http.request", "body": b'{"bots": ["sm', "more_body": True},
            {"type": "http.disconnect"},
        ],
    )

    async def endpoint(scope, receive, send) -> None:
        reached.append(await receive())

    async def receive() -> dict:
        return messages.pop(0)

    async def send(message: dict) -> None:
        raise AssertionError(f"nothing is answered to a client that left: {message}")

    scope = {"type": "http", "method": "POST", "path": "/api/games", "headers": []}
    asyncio.run(BodyLimit(endpoint, limit=4096)(scope, receive, send))
    assert reached == [] and messages == []
    messages[:] = [{"type": "http.request", "body": b"{}", "more_body": False}]
    asyncio.run(BodyLimit(endpoint, limit=4096)(scope, receive, send))
    assert reached == [{"type": "http.request", "body": b"{}", "more_body": False}]


HOSTS = [  # (Host header, names added to the local ones, answered)
    ("localhost:8000", [], True),
    ("127.0.0.1:8000", [], True),
    ("[::1]:8000", [], True),
    ("localhost", [], True),
    ("evil.example", [], False),  # DNS rebinding: another site's name for this address
    ("evil.example:8000", [], False),
    ("localhost.evil.example", [], False),
    ("games.lan:8000", ["games.lan"], True),  # --allowed-host games.lan
    ("x.games.lan", ["*.games.lan"], True),
    ("games.lan.evil.example", ["games.lan"], False),
]


@pytest.mark.parametrize(("host", "more", "answered"), HOSTS)
def test_the_host_header_is_checked(tmp_path, host, more, answered):
    """Issue 28 item 6: only the names the server was started for are answered."""
    c = TestClient(create_app(tmp_path, allowed_hosts=[*LOCAL_HOSTS, *more]))
    r = c.get("/api/bots", headers={"host": host})
    assert r.status_code == (200 if answered else 400)
    if not answered:  # issue 42 item 8: the API's JSON error, not text/plain
        assert r.headers["content-type"] == "application/json"
        assert "Host header" in r.json()["error"]
    r = c.post("/api/games", json={"bots": ["smart"]}, headers={"host": host})
    assert r.status_code == (201 if answered else 400)
    assert bool(saves(c)) == answered  # a refused request creates nothing


def test_errors_never_show_the_servers_paths(tmp_path, monkeypatch):
    """Issue 28 item 6: a failed save, an unreadable save and a model that does not load
    are told without the server's absolute paths."""
    root = tmp_path / "models"
    (root / "checkpoints" / "broken").mkdir(parents=True)
    (root / "checkpoints" / "broken" / "value_net.npz").write_bytes(b"not a zip")
    data = tmp_path / "data"
    (data / ("A" * 43 + ".json")).mkdir(parents=True)  # a save that cannot be read
    c = client(data, catalogue=Catalogue(root))
    view = play_on(c, new_game(c, seed=2), decisions=0)

    def broken(web):
        raise OSError(errno.ENOSPC, "No space left on device", str(data / f"{web.id}.json"))

    monkeypatch.setattr(c.app.state.store, "save", broken)
    errors = [
        move(c, view, greedy(view)).json()["error"],
        c.post("/api/games", json={"bots": ["broken"]}).json()["error"],
        *(p["error"] for p in c.get("/api/problems").json()["problems"]),
    ]
    assert "No space left" in errors[0] and "checkpoints/broken/value_net.npz" in errors[1]
    assert len(errors) == 3
    for error in errors:
        assert str(tmp_path) not in error and "\n" not in error


# ------------------------------------------------------------------ the command line
@pytest.fixture
def no_serving(monkeypatch):
    """uvicorn's serving stubbed out: main returns once it would serve."""
    served = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: served.append(1))
    return served


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    ("host", "networked"), [("127.0.0.1", False), ("localhost", False), ("0.0.0.0", True)]
)
def test_serving_on_the_network_is_said(tmp_path, capsys, no_serving, host, networked):
    """Issue 28 item 6: a non-loopback --host says in one line that the games are then
    reachable from the network."""
    port = free_port()
    assert cli.main(["--host", host, "--port", str(port), "--data", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert no_serving and out[0].startswith(f"5000: open http://{cli.in_url(host)}:{port}/")
    assert ("reachable from the network" in "\n".join(out)) == networked
    assert len(out) == 1 + networked


def test_serving_leaves_the_process_own_log_handlers_open(tmp_path, no_serving):
    """uvicorn's default logging config (dictConfig) closed every handler the process
    had: absl's (imported with optax) held pytest's captured stderr, whose closing took
    the test run down in CI. The server starts without closing anyone else's handler."""
    other = logging.FileHandler(tmp_path / "another-library.log")
    try:
        assert cli.main(["--port", str(free_port()), "--data", str(tmp_path / "d")]) == 0
        assert no_serving and other.stream is not None and not other.stream.closed
    finally:
        other.close()


REFUSALS = [  # (what, extra arguments, words): one line, exit 2, nothing made
    ("port in use", ["--port", "BUSY"], "cannot listen on 127.0.0.1:BUSY: Address already in use"),
    ("folder in use", ["--data", "HELD"], "another server is using it"),
    ("bad port", ["--port", "0"], "--port must be 1..65535"),
    ("grace past expiry", ["--grace", "1e9"], "the grace must be"),
    ("bad host name", ["--allowed-host", "a*b"], "allowed host 'a*b'"),
    ("no work", ["--max-work", "0"], "--max-work and --max-work-per-address must be at least 1"),
]


@pytest.mark.parametrize(
    ("extra", "words"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS]
)
def test_start_up_refusals_are_one_line(tmp_path, capsys, no_serving, extra, words):
    """Issue 28 items 3 and 6: a folder in use or a port in use is one line, exit 2,
    without the "open http://" line and with no data folder made."""
    data, held = tmp_path / "new", tmp_path / "held"
    holder = create_app(held)  # another server's folder
    busy = socket.create_server(("127.0.0.1", 0))
    port = str(busy.getsockname()[1])
    args = ["--port", str(free_port()), "--data", str(data)]
    args += [{"BUSY": port, "HELD": str(held)}.get(a, a) for a in extra]
    try:
        assert cli.main(args) == 2
    finally:
        busy.close()
        holder.state.store.close()
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and words.replace("BUSY", port) in err
    assert "open http" not in out and not no_serving
    assert not data.exists()


def test_the_help_states_the_rule(capsys):
    """Issue 28 item 2: --help says how long games are kept and what is never deleted."""
    with pytest.raises(SystemExit) as done:
        cli.main(["--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for words in (
        "unused for 7 days",
        "unused for 30 days",
        "last 30 min is never deleted",  # the one duration formatter (issue 29 item 4)
        "--allowed-host",
        "--grace MINUTES",
        "fewer than 100 addresses",
    ):
        assert words in text


# ------------------------------------------------------------------ issue 42: the connections
def test_served_connections_send_at_once(tmp_path, monkeypatch):
    """Issue 42 item 4: the server's connections have Nagle's algorithm off (TCP_NODELAY):
    a kept-alive request waited 40 ms for it. Read on the server's side of an accepted
    connection, and on the socket the command line hands to uvicorn."""
    sock = server.listening_socket("127.0.0.1", 0)
    with sock, socket.create_connection(sock.getsockname()):
        accepted, _ = sock.accept()
        with accepted:
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            assert accepted.proto == socket.IPPROTO_TCP  # so asyncio sets it as well
    handed = []

    def run(self, sockets=None):
        handed.extend(
            (s.proto, s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)) for s in sockets
        )

    monkeypatch.setattr(uvicorn.Server, "run", run)
    assert cli.main(["--port", str(free_port()), "--data", str(tmp_path)]) == 0
    ((proto, nodelay),) = handed
    assert proto == socket.IPPROTO_TCP and nodelay


def test_stale_temporaries_are_removed_at_start(tmp_path):
    """Issue 42 item 8: a kill -9 mid-save leaves a save's temporary file; the next start
    removes it, and nothing else."""
    c = client(tmp_path)
    view = new_game(c, seed=2)
    stale = tmp_path / f".{view['id']}.json.k3j2h1.tmp"
    stale.write_text('{"half": ')
    other = tmp_path / "notes.tmp"
    other.write_text("not ours")
    c = restart(c)
    assert not stale.exists() and other.exists()
    assert c.get(f"/api/games/{view['id']}").status_code == 200
    assert c.get("/api/problems").json() == {"problems": []}


def test_idle_and_slow_header_connections_are_dropped(tmp_path):
    """Issue 42 item 8: a connection that sends no request, one that sends its headers a
    byte at a time, and an idle kept-alive one are closed after the head timeout (here
    0.5 s); a prompt request is answered."""
    from tests.test_webplay_stall import ask, served

    def closed(conn: socket.socket) -> bool:
        """True once the server closes `conn` (read until the end, 10 s at most)."""
        conn.settimeout(10)
        try:
            while conn.recv(4096):
                pass
        except TimeoutError:
            return False
        return True

    with served(create_app(tmp_path), head_timeout=0.5) as port:
        silent = socket.create_connection(("127.0.0.1", port))
        slow = socket.create_connection(("127.0.0.1", port))
        kept = socket.create_connection(("127.0.0.1", port))
        with silent, slow, kept:
            kept.sendall(b"GET /api/bots HTTP/1.1\r\nHost: localhost\r\n\r\n")
            assert kept.recv(4096).startswith(b"HTTP/1.1 200")
            for byte in b"GET /api/bots HTTP/1.1\r\nHost: loc":  # 3.4 s, past the deadline
                with contextlib.suppress(OSError):  # closed midway: the point
                    slow.send(bytes([byte]))
                time.sleep(0.1)
            assert closed(silent) and closed(slow) and closed(kept)
        assert ask(port, "GET", "/api/bots")[0] == 200
