"""One slow game must not stall the others (issue 42 item 1): the app served by uvicorn
on loopback (a thread of this process, stopped by the test), a hint's solve stood in for
by a wait the test ends, and a crowd of requests queued on that game. The other games
and the bot list still answer, the crowd past the game's queue gets a 429, and further
expensive work from the same address a 429 at once."""

import contextlib
import http.client
import json
import threading
import time
from collections.abc import Iterator

import pytest

pytest.importorskip("fastapi", reason="the web app needs fastapi (dev extras)")

import uvicorn  # noqa: E402

from fivethousand_rl.agents.optimal import OptimalBot  # noqa: E402
from fivethousand_rl.webplay.__main__ import HEAD_TIMEOUT, listening_socket, server_config  # noqa: E402
from fivethousand_rl.webplay.app import create_app  # noqa: E402
from fivethousand_rl.webplay.games import MAX_WAITING  # noqa: E402

QUEUED = 60  # requests sent to the slow game at once (the scenario)
PROMPT = 3.0  # s: a generous bound for "answers promptly" on a loaded 2-core machine


@contextlib.contextmanager
def served(app, head_timeout: float = HEAD_TIMEOUT) -> Iterator[int]:
    """`app` served as the command line serves it (its socket, its uvicorn settings) on a
    loopback port (yielded) until the block ends."""
    sock = listening_socket("127.0.0.1", 0)
    server = uvicorn.Server(server_config(app, head_timeout))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.started, "the test server did not start"
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def ask(port: int, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    """One request on a connection of its own: the status and the JSON answer."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        data = json.dumps(body) if body is not None else None
        headers = {"content-type": "application/json"} if body is not None else {}
        conn.request(method, path, body=data, headers={"host": "localhost", **headers})
        r = conn.getresponse()
        raw = r.read()
        return r.status, json.loads(raw) if raw else {}
    finally:
        conn.close()


def until_your_move(port: int, view: dict) -> dict:
    while view["status"] == "wait":
        view = ask(port, "POST", f"/api/games/{view['id']}/step", {"steps": 1000})[1]
    return view


def test_a_slow_game_stalls_no_other(tmp_path, monkeypatch):
    """Issue 42 item 1: while one game's hint solves and 60 requests queue on that game,
    /api/bots and another game's view answer promptly; the queue is bounded (429), and
    the same address's next solve is refused at once (429), not queued."""
    inside, release = threading.Event(), threading.Event()
    real = OptimalBot.prepare

    def slow_prepare(self, rules):
        if rules.entry != 800:
            return real(self, rules)
        inside.set()
        release.wait(20)
        raise ValueError("the test's stand-in for a long solve")

    monkeypatch.setattr(OptimalBot, "prepare", slow_prepare)
    app = create_app(tmp_path)
    with served(app) as port:
        new = {"bots": ["smart"], "seed": 3}
        slow = until_your_move(port, ask(port, "POST", "/api/games", {**new, "entry": 800})[1])
        other = ask(port, "POST", "/api/games", new)[1]
        answers: dict[str, list] = {"hint": [], "queued": []}

        def send(kind: str, path: str) -> None:
            answers[kind].append(ask(port, "GET", path))

        threads = [threading.Thread(target=send, args=("hint", f"/api/games/{slow['id']}/hint"))]
        threads[0].start()
        try:
            assert inside.wait(10)
            for _ in range(QUEUED):
                threads.append(
                    threading.Thread(target=send, args=("queued", f"/api/games/{slow['id']}"))
                )
                threads[-1].start()
            time.sleep(0.5)  # let them reach the server and queue
            took = []
            for path in ["/api/bots", f"/api/games/{other['id']}"] * 10:
                began = time.monotonic()
                status, _ = ask(port, "GET", path)
                took.append(time.monotonic() - began)
                assert status == 200
            assert max(took) < PROMPT, f"answers took up to {max(took):.2f} s"
            # Expensive work of the same address while its solve runs: refused at once.
            status, body = ask(port, "POST", "/api/games", {"bots": ["optimal"], "entry": 750})
            assert status == 429 and "try again" in body["error"]
            assert not release.is_set()
        finally:
            release.set()
            for t in threads:
                t.join(30)
    (hint,) = answers["hint"]
    assert hint[0] == 200 and hint[1]["available"] is False
    statuses = [s for s, _ in answers["queued"]]
    assert len(statuses) == QUEUED and set(statuses) <= {200, 429}
    assert statuses.count(200) >= MAX_WAITING and 429 in statuses
    refused = next(b for s, b in answers["queued"] if s == 429)
    assert "wait for this game" in refused["error"]
