"""The web server over real connections: kept-alive latency against a bare uvicorn.run()
of the same app, and the load of clients playing whole games (issue 42 item 4).

    python benchmarks/webplay_load.py [--requests 300] [--clients 4 16] [--seconds 20]
                                      [--queued 60]

Each server runs in a process of its own on 127.0.0.1 (a free port, a temporary data
folder): ``ours`` is ``python -m fivethousand_rl.webplay`` itself (its command line, its socket);
``bare`` is ``uvicorn.run(create_app(...))``; ``proto0`` serves the app on a socket
from ``socket.create_server`` as the server did before (asyncio leaves Nagle's algorithm
on). Kept-alive latency: one connection, ``GET /api/bots`` `--requests` times, the
median and 99th percentile in ms (target: ours within 2x of bare). Load: N client
processes, each on one kept-alive connection, play whole games against ``smart``
(new game, steps and greedy moves, then DELETE) for `--seconds`; all requests counted
(requests/s, median and 99th percentile ms). A stalled game (issue 42 item 1): ``ours``
with the 2-player solve of the rules ``entry=800`` stood in for by a 15 s wait (the real
one takes 6-35 s and writes its table to the solver cache); its hint is asked, `--queued`
requests for that game wait, and meanwhile ``GET /api/bots`` and another game's view
are timed (target: p99 under 100 ms).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import multiprocessing
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET_RATIO = 2.0
SERVERS = ("ours", "bare", "proto0")
STALL_S = 15.0


def serve(kind: str, port: int, data: str) -> None:
    """Run the server `kind` (in this process, until killed)."""
    if kind == "stall":
        from fivethousand_rl.agents.optimal import OptimalBot

        real = OptimalBot.prepare

        def slow(self, rules):
            if rules.entry != 800:
                return real(self, rules)
            time.sleep(STALL_S)
            raise ValueError("the benchmark's stand-in for a long solve")

        OptimalBot.prepare = slow
        kind = "ours"
    if kind == "ours":
        from fivethousand_rl.webplay.__main__ import main

        main(["--port", str(port), "--data", data, "--per-address", "1000"])
        return
    import uvicorn

    from fivethousand_rl.webplay.app import create_app
    from fivethousand_rl.webplay.games import Limits

    app = create_app(data, limits=Limits(per_address=1000))
    if kind == "bare":
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
    else:
        sock = socket.create_server(("127.0.0.1", port))
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running(kind: str) -> Iterator[tuple[subprocess.Popen, int]]:
    """The server `kind` (a process, a temporary data folder) for the block: (its
    process, its port)."""
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", kind, "--port", str(port), "--data", data],
            stdout=subprocess.DEVNULL,
        )
        try:
            for _ in range(600):  # a minute to start
                with contextlib.suppress(OSError):
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                time.sleep(0.1)
            else:
                raise RuntimeError(f"the {kind} server did not start")
            yield proc, port
        finally:
            proc.terminate()
            proc.wait(30)


class Client:
    """One kept-alive connection; each request's time in ms is kept."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.times: list[float] = []

    def ask(self, method: str, path: str, body: dict | None = None) -> dict:
        headers = {"host": "localhost"}
        data = None
        if body is not None:
            data, headers["content-type"] = json.dumps(body), "application/json"
        began = time.perf_counter()
        self.conn.request(method, path, body=data, headers=headers)
        r = self.conn.getresponse()
        raw = r.read()
        self.times.append((time.perf_counter() - began) * 1000)
        if r.status >= 400:
            raise RuntimeError(f"{method} {path}: {r.status} {raw[:200]!r}")
        return json.loads(raw) if raw else {}


def kept_alive(port: int, requests: int) -> list[float]:
    client = Client(port)
    for _ in range(requests + 5):
        client.ask("GET", "/api/bots")
    return client.times[5:]  # the connection's first requests: left out


def play(port: int, seconds: float, seed: int) -> list[float]:
    """Whole games against smart for `seconds`; every request's ms."""
    client = Client(port)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        view = client.ask("POST", "/api/games", {"bots": ["smart"], "seed": seed})
        seed += 1000
        while view["status"] != "over" and time.monotonic() < end:
            gid = view["id"]
            if view["status"] == "wait":
                view = client.ask("POST", f"/api/games/{gid}/step", {"steps": 1, "at": view["at"]})
                continue
            banks = [m for m in view["moves"] if m["banks"]]
            best = max(banks or view["moves"], key=lambda m: m["turn_total"])["action"]
            view = client.ask("POST", f"/api/games/{gid}/move", {"action": best, "at": view["at"]})
        client.ask("DELETE", f"/api/games/{view['id']}")
    return client.times


def stalled(port: int, queued: int, requests: int) -> list[float]:
    """The ms of `requests` other requests while a game's hint is stuck in a solve and
    `queued` requests wait for that game."""
    import threading

    client = Client(port)
    other = client.ask("POST", "/api/games", {"bots": ["smart"], "seed": 1})
    view = client.ask("POST", "/api/games", {"bots": ["smart"], "seed": 3, "entry": 800})
    while view["status"] == "wait":
        view = client.ask("POST", f"/api/games/{view['id']}/step", {"steps": 1000})

    def send(path: str) -> None:
        with contextlib.suppress(RuntimeError):  # a 429: the game's queue is full
            Client(port).ask("GET", path)

    threads = [threading.Thread(target=send, args=(f"/api/games/{view['id']}/hint",))]
    threads[0].start()
    time.sleep(1.0)  # the hint is in its solve
    for _ in range(queued):
        threads.append(threading.Thread(target=send, args=(f"/api/games/{view['id']}",)))
        threads[-1].start()
    time.sleep(1.0)  # they wait
    timed = Client(port)
    for i in range(requests):
        timed.ask("GET", "/api/bots" if i % 2 else f"/api/games/{other['id']}")
    for t in threads:
        t.join(STALL_S * 2)
    return timed.times


def figures(times: list[float]) -> tuple[float, float]:
    return statistics.median(times), statistics.quantiles(times, n=100)[-1]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=300, help="kept-alive requests per server")
    p.add_argument("--clients", type=int, nargs="+", default=[4, 16])
    p.add_argument("--seconds", type=float, default=20.0, help="each load run's length")
    p.add_argument("--queued", type=int, default=60, help="requests queued on the stalled game")
    p.add_argument("--serve", choices=[*SERVERS, "stall"], help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    p.add_argument("--data", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve:
        serve(args.serve, args.port, args.data)
        return 0
    medians = {}
    print("| server | kept-alive requests | median ms | p99 ms |")
    print("|---|---:|---:|---:|")
    for kind in SERVERS:
        with running(kind) as (_, port):
            median, p99 = figures(kept_alive(port, args.requests))
        medians[kind] = median
        print(f"| {kind} | {args.requests} | {median:.2f} | {p99:.2f} |")
    ratio = medians["ours"] / medians["bare"]
    ok = "met" if ratio <= TARGET_RATIO else "NOT met"
    print(f"\nours / bare (median): {ratio:.2f} (target <= {TARGET_RATIO:g}: {ok})\n")
    print("| clients | seconds | requests | requests/s | median ms | p99 ms |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in args.clients:
        with running("ours") as (_, port), multiprocessing.Pool(n) as pool:
            jobs = [(port, args.seconds, seed) for seed in range(n)]
            began = time.monotonic()
            runs = pool.starmap(play, jobs)
            took = time.monotonic() - began
        times = [t for run in runs for t in run]
        median, p99 = figures(times)
        rate = len(times) / took
        print(f"| {n} | {args.seconds:g} | {len(times)} | {rate:.0f} | {median:.1f} | {p99:.1f} |")
    with running("stall") as (_, port):
        times = stalled(port, args.queued, 200)
    median, p99 = figures(times)
    print(f"\nA game stalled in a solve, {args.queued} requests queued on it: /api/bots and")
    print(f"another game's view, {len(times)} requests: median {median:.1f} ms, p99 {p99:.1f} ms")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
