"""The standing check of issues 42 and 54 (hardening): every case a tester tried,
replayed against a running server (``python -m fivethousand_rl.webplay`` on a free
loopback port, a temporary data folder and solver cache, small limits) and against the
command lines, one line per case:

    held   <case>: <what was checked, the figure measured>
    broke  <case>: <what happened>

    python benchmarks/attack.py [--size small|full] [--only PREFIX ...]

Exit status 0 if every case held, 1 otherwise. ``--size small`` (``make test`` runs it
through tests/test_attack.py) takes fewer connections, games and smaller targets;
``full`` the issues' sizes (1,100 stalled connections under a 1,024 descriptor limit,
10 games at target 5000 asking hints at once, 336 tables, 10 kill -9 cycles). Hostile
files come from ``benchmarks/hostile.py`` (the tests build theirs there too). Clients
use loopback addresses of their own (127.0.0.1 the others, 127.0.0.2 the attacker,
127.0.0.3 set-up requests) so that per-address limits tell them apart.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import io
import json
import os
import pickle
import random
import resource
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import hostile  # noqa: E402

# Child processes import the package from this tree (the one the script checks).
OWN_TREE = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
OWN_TREE_ENV = {**os.environ, **OWN_TREE}
OTHERS, ATTACKER, SETUP = "127.0.0.1", "127.0.0.2", "127.0.0.3"
BANK_BIT = 32


@dataclass(frozen=True)
class Size:
    stalled: int  # stalled-body connections (issue 54 item 2)
    nofile: int  # the server's descriptor limit meanwhile
    slow_heads: int  # slow-header connections (issue 42 item 8)
    hint_games: int  # games from one address asking a hint at once (issue 54 item 1)
    hint_target: int  # their rules' target (a real solve)
    queued: int  # requests queued on a game stalled in a solve (issue 42 item 1)
    tables: int  # distinct tables asked a hint (issue 42 item 2)
    cache_hints: int  # 2-player hints of new rules against a disk-cache bound (item 3)
    cache_mb: float
    kept_alive: int  # requests on one kept-alive connection (item 4)
    pairs: int  # concurrent move pairs
    kills: int  # kill -9 cycles during writes
    nested_bytes: int  # what the nested and flat zip bombs unpack to
    flat_bytes: int
    every_command: bool  # every hostile zip through every command (else one of them)
    pass_and_play_http: bool  # the length bound reached through the server (else in-process)
    # Latency bounds: the issues' at the full size; the small one runs beside other tests
    # in `make test`, so it leaves a busy machine room (and a kernel SYN retry, 1 s).
    p99_ms: float  # others' requests during an attack
    during_s: float  # a request of another address during a stall


SIZES = {
    "small": Size(
        stalled=300,
        nofile=256,
        slow_heads=10,
        hint_games=6,
        hint_target=4000,
        queued=20,
        tables=6,
        cache_hints=4,
        cache_mb=3,
        kept_alive=50,
        pairs=4,
        kills=2,
        nested_bytes=300 << 20,  # past the 256 MB model bound, and past 500 MB once loaded
        flat_bytes=300 << 20,
        every_command=False,
        pass_and_play_http=False,
        p99_ms=500,
        during_s=3.5,
    ),
    "full": Size(  # the issues' sizes
        stalled=1100,
        nofile=1024,
        slow_heads=50,
        hint_games=10,
        hint_target=5000,
        queued=60,
        tables=336,
        cache_hints=20,
        cache_mb=20,
        kept_alive=300,
        pairs=40,
        kills=10,
        nested_bytes=1 << 30,
        flat_bytes=630 << 20,
        every_command=True,
        pass_and_play_http=True,
        p99_ms=100,
        during_s=1,
    ),
}


# --------------------------------------------------------------------------- reporting
class Report:
    def __init__(self) -> None:
        self.broke: list[str] = []
        self.count = 0

    def line(self, ok: bool, case: str, text: str) -> None:
        self.count += 1
        if not ok:
            self.broke.append(case)
        print(f"{'held ' if ok else 'broke'}  {case}: {' '.join(text.split())}", flush=True)

    @contextlib.contextmanager
    def case(self, case: str) -> Iterator[None]:
        """A case whose check raised is broke, with the exception in one line."""
        try:
            yield
        except Exception as e:  # the check itself failed: say what, go on with the rest
            self.line(False, case, f"{type(e).__name__}: {e}"[:300])


def one_line_refusal(code: int | None, err: str, code_wanted: int = 2) -> tuple[bool, str]:
    """Whether a command refused in one line (`code_wanted`, no traceback) and how it did."""
    lines = err.strip().splitlines()
    ok = code == code_wanted and len(lines) == 1 and "Traceback" not in err
    said = lines[-1][:160] if lines else "(nothing on stderr)"
    return ok, f"exit {code}, {len(lines)} line(s) on stderr: {said}"


def in_process(main: Callable[[list[str]], int], argv: list[str], **kwargs) -> tuple[int, str]:
    """(exit status, stderr) of a program's main run in this process."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv, **kwargs)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    return code, err.getvalue()


# ----------------------------------------------------------------------------- server
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_status(pid: int, field: str) -> int:
    """A /proc/PID/status size field (VmRSS, VmHWM) in bytes; 0 once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            line = next(line for line in status if line.startswith(field + ":"))
        return int(line.split()[1]) * 1024
    except (OSError, StopIteration):
        return 0


class Server:
    """The server's command line in a process of its own, run from `root` (its bots/
    folder), its data in root/data, its solver cache in root/cache, its log root/NAME.log."""

    def __init__(self, root: Path, *flags: str, nofile: int | None = None, name: str = "server"):
        self.root, self.flags, self.nofile = root, flags, nofile
        root.mkdir(parents=True, exist_ok=True)
        self.data, self.cache, self.log = root / "data", root / "cache", root / f"{name}.log"
        self.proc: subprocess.Popen | None = None
        self.port = 0

    def start(self) -> Server:
        self.port = free_port()
        limit = self.nofile

        def limited() -> None:
            if limit is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "fivethousand_rl.webplay", "--port", str(self.port)]
                + ["--data", str(self.data), *self.flags],
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **OWN_TREE, "FIVETHOUSAND_CACHE": str(self.cache)},
                preexec_fn=limited,
            )
        ends = time.monotonic() + 60
        while time.monotonic() < ends:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited ({self.proc.returncode}): {self.tail()}")
            with contextlib.suppress(OSError):
                if ask(self.port, "GET", "/api/bots", timeout=2)[0] == 200:
                    return self
            time.sleep(0.1)
        raise RuntimeError("the server did not answer within 60 s")

    def tail(self) -> str:
        return self.log.read_bytes()[-300:].decode(errors="replace").replace("\n", " | ")

    def stop(self, kill: bool = False) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL if kill else signal.SIGINT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def peak(self) -> int:
        return proc_status(self.proc.pid, "VmHWM") if self.proc else 0

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def connection(port: int, source: str = OTHERS, timeout: float = 30) -> http.client.HTTPConnection:
    return http.client.HTTPConnection(
        "127.0.0.1", port, timeout=timeout, source_address=(source, 0)
    )


def ask(
    port: int,
    method: str,
    path: str,
    body: dict | None = None,
    source: str = OTHERS,
    timeout: float = 60,
    conn: http.client.HTTPConnection | None = None,
) -> tuple[int, dict, float]:
    """One request (on `conn`, else a connection of its own): status, JSON answer, seconds."""
    own = conn is None
    conn = conn or connection(port, source, timeout)
    began = time.monotonic()
    try:
        data = json.dumps(body) if body is not None else None
        headers = {"host": "localhost"}
        if data is not None:
            headers["content-type"] = "application/json"
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        raw = response.read()
        took = time.monotonic() - began
        try:
            answer = json.loads(raw) if raw else {}
        except ValueError:
            answer = {"raw": raw[:200].decode(errors="replace")}
        return response.status, answer, took
    finally:
        if own:
            conn.close()


def new_game(port: int, source: str, **body) -> dict:
    status, view, _ = ask(port, "POST", "/api/games", {"bots": ["smart"], **body}, source)
    if status != 201:
        raise RuntimeError(f"a new game got {status}: {view}")
    return view


def until_your_move(port: int, view: dict, source: str) -> dict:
    """Steps the game until a person's decision (or its end)."""
    while view["status"] == "wait":
        status, view, _ = ask(
            port, "POST", f"/api/games/{view['id']}/step", {"steps": 1000}, source
        )
        if status != 200:
            raise RuntimeError(f"a step got {status}: {view}")
    return view


def never_banking(mask: list[int]) -> int:
    """The legal action holding the fewest dice without banking (a turn that never
    ends but by a bust), else the first legal one."""
    legal = [a for a, ok in enumerate(mask) if ok]
    keep = [a for a in legal if not a & BANK_BIT] or legal
    return min(keep, key=lambda a: (bin(a).count("1"), a))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def raw_exchange(port: int, head: bytes, timeout: float = 10) -> bytes:
    """Send `head` on a connection of its own and read until the server closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout) as sock:
        sock.sendall(head)
        answer = b""
        with contextlib.suppress(TimeoutError, ConnectionResetError):
            while chunk := sock.recv(65536):
                answer += chunk
    return answer


def security_headers_missing(headers: dict[str, str]) -> list[str]:
    from fivethousand_rl.webplay.app import SECURITY_HEADERS

    lower = {k.lower(): v for k, v in headers.items()}
    return [n.decode() for n, v in SECURITY_HEADERS if lower.get(n.decode()) != v.decode()]


def parse_raw(answer: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode(errors="replace").split("\r\n")
    status = int(lines[0].split()[1]) if lines and len(lines[0].split()) > 1 else 0
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return status, headers, body


# ========================================================================= server cases
def server_basics(r: Report, size: Size, work: Path) -> None:
    """Issue 42: Nagle, Host checks, security headers, body limit, concurrent moves, slow
    heads, stale temporary files; issue 54 item 7's bad heads and item 4's NaN bot."""
    root = work / "basics"
    (root / "bots").mkdir(parents=True)
    (root / "data").mkdir()
    with r.case("54.4-server-nan-onnx"):
        hostile.nan_onnx(root / "bots", name="nan.onnx")
        shutil.copy(hostile.SHIPPED_ONNX, root / "bots" / "good.onnx")
        shutil.copy(hostile.SHIPPED_ONNX.with_suffix(".json"), root / "bots" / "good.json")
    stale = root / "data" / ".abcdefghijklmnopqrstuvwxyz.json.1234.tmp"
    stale.write_text("{}")
    server = Server(root, "--per-address", "50").start()
    port = server.port
    slow: list[socket.socket] = []
    try:
        with r.case("42.8-stale-tmp"):
            r.line(
                not stale.exists(),
                "42.8-stale-tmp",
                "a .ID.json.*.tmp left by a kill -9 "
                + ("removed at start" if not stale.exists() else "still there after start"),
            )
        with r.case("54.4-server-nan-onnx"):
            keys = [b["key"] for b in ask(port, "GET", "/api/bots")[1]["bots"]]
            ok = "nan.onnx" not in keys and "good.onnx" in keys
            r.line(
                ok,
                "54.4-server-nan-onnx",
                f"a NaN .onnx in bots/ {'left out of' if ok else 'listed in'} /api/bots at "
                f"start-up (good.onnx {'listed' if 'good.onnx' in keys else 'missing'})",
            )
        # Slow heads, opened now and checked at the end (after HEAD_TIMEOUT).
        opened = time.monotonic()
        for _ in range(size.slow_heads):
            sock = socket.create_connection(("127.0.0.1", port), 5)
            sock.sendall(b"GET /api/bots HTTP/1.1\r\nHost: loc")
            slow.append(sock)
        with r.case("42.4-nagle"):
            conn = connection(port)
            took = [ask(port, "GET", "/api/bots", conn=conn)[2] for _ in range(size.kept_alive)]
            conn.close()
            median = statistics.median(took) * 1000
            r.line(
                median < 20,
                "42.4-nagle",
                f"{size.kept_alive} requests on one kept-alive "
                f"connection: median {median:.2f} ms, p99 {percentile(took, 0.99) * 1000:.2f} ms "
                "(Nagle's delay would be about 40 ms)",
            )
        with r.case("42.8-security-headers"):
            conn = connection(port)
            missing = []
            for path in ["/", "/api/bots", "/api/games/nope" + "x" * 30]:
                conn.request("GET", path, headers={"host": "localhost"})
                response = conn.getresponse()
                response.read()
                missing += [
                    f"{path}: {m}" for m in security_headers_missing(dict(response.getheaders()))
                ]
            conn.close()
            r.line(
                not missing,
                "42.8-security-headers",
                "/, /api/bots and a 404 carry the security headers"
                if not missing
                else f"missing: {missing}",
            )
        with r.case("42.8-host-check"):
            conn = connection(port)
            conn.request("GET", "/api/bots", headers={"host": "evil.example"})
            response = conn.getresponse()
            body = response.read()
            conn.close()
            ok = (
                response.status == 400
                and response.getheader("content-type", "").startswith("application/json")
                and "error" in json.loads(body or b"{}")
            )
            r.line(
                ok,
                "42.8-host-check",
                f"Host: evil.example -> {response.status} "
                f"{response.getheader('content-type')} {body[:80]!r}",
            )
        with r.case("42.5-body-limit"):
            body = json.dumps({"bots": ["smart"]}) + " " * 5000
            conn = connection(port)
            conn.request(
                "POST",
                "/api/games",
                body=body,
                headers={"host": "localhost", "content-type": "application/json"},
            )
            response = conn.getresponse()
            answer = response.read()
            conn.close()
            ok = response.status == 413 and "error" in json.loads(answer or b"{}")
            r.line(
                ok,
                "42.5-body-limit",
                f"a {len(body)}-byte body -> {response.status} {answer[:80]!r}",
            )
        for case, head in [
            (
                "54.6-duplicate-host",
                b"GET /api/bots HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n",
            ),
            (
                "54.6-bad-content-length",
                b"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n",
            ),
        ]:
            with r.case(case):
                status, headers, body = parse_raw(raw_exchange(port, head))
                missing = security_headers_missing(headers)
                try:
                    is_json = "error" in json.loads(body)
                except ValueError:
                    is_json = False
                ok = status == 400 and is_json and not missing
                r.line(
                    ok,
                    case,
                    f"-> {status}, JSON {'yes' if is_json else 'no'} ({body[:60]!r}), "
                    f"security headers {'all' if not missing else 'missing ' + ', '.join(missing)}",
                )
        with r.case("42.8-concurrent-moves"):
            outcomes: dict[tuple, int] = {}
            for i in range(size.pairs):
                view = until_your_move(port, new_game(port, SETUP, seed=i), SETUP)
                if view["status"] != "you":
                    continue
                move = {"action": never_banking(view["mask"]), "at": view["at"]}
                path = f"/api/games/{view['id']}/move"
                key = tuple(sorted(at_once([(port, "POST", path, move, SETUP)] * 2)))
                outcomes[key] = outcomes.get(key, 0) + 1
                ask(port, "DELETE", f"/api/games/{view['id']}", source=SETUP)
            ok = set(outcomes) == {(200, 409)}
            r.line(
                ok,
                "42.8-concurrent-moves",
                f"{sum(outcomes.values())} pairs of the same move "
                f"at once: {', '.join(f'{k} x{n}' for k, n in outcomes.items())}",
            )
        with r.case("42.8-slow-heads"):
            from fivethousand_rl.webplay.server import HEAD_TIMEOUT

            closed = dropped_within(slow, opened + HEAD_TIMEOUT + 10)
            took = time.monotonic() - opened
            r.line(
                closed == len(slow),
                "42.8-slow-heads",
                f"{closed} of {len(slow)} connections "
                f"sending half a head dropped within {took:.1f} s "
                f"(head deadline {HEAD_TIMEOUT:g} s)",
            )
    finally:
        for sock in slow:
            sock.close()
        server.stop()


def at_once(requests: list[tuple]) -> list[int]:
    """The statuses of `requests` (``ask``'s arguments) sent at once, each on its own thread."""
    statuses: list[int] = []
    threads = [
        threading.Thread(target=lambda args=args: statuses.append(ask(*args)[0]))
        for args in requests
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return statuses


def dropped_within(
    socks: list[socket.socket], deadline: float, watch: Callable[[], None] | None = None
) -> int:
    """How many of `socks` the server closed before `deadline` (monotonic)."""
    open_ = {s.fileno(): s for s in socks}
    poller = select.poll()  # not select(): descriptors past 1,024 (the full size's 1,100)
    for fd in open_:
        poller.register(fd, select.POLLIN)
    closed = 0
    while open_ and time.monotonic() < deadline:
        if watch is not None:
            watch()
        for fd, _ in poller.poll(500):
            try:
                data = open_[fd].recv(65536)
            except OSError:
                data = b""
            if not data:  # closed by the server (an answer before it is fine)
                poller.unregister(fd)
                del open_[fd]
                closed += 1
    return closed


def stalled_bodies(r: Report, size: Size, work: Path) -> None:
    """Issue 54 item 2: stalled request bodies past the server's descriptor limit, from a
    trusted proxy's address (counted in the total only: the descriptors run out) and from
    one client's (capped per address: the others are served meanwhile)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < size.stalled + 200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, size.stalled + 400), hard))
    for case, source, other in (
        ("54.2-stalled-bodies", OTHERS, ATTACKER),
        ("54.2-stalled-bodies-one-address", ATTACKER, OTHERS),
    ):
        stall_from(r, size, work / case, case, source, other)


def stall_from(r: Report, size: Size, root: Path, case: str, source: str, other: str) -> None:
    """`size.stalled` connections from `source` that send a head and one body byte; a
    request from `other` during the stall (it must be answered when `source` is capped)
    and after the stalled ones are dropped (within 1 s)."""
    server = Server(root, nofile=size.nofile, name="stall").start()
    socks: list[socket.socket] = []
    too_much_log = 16 << 20
    capped = source != OTHERS  # OTHERS is the server's trusted proxy address
    try:
        opened = time.monotonic()
        head = (
            b"POST /api/games HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100\r\n\r\n{"
        )
        for _ in range(size.stalled):
            sock = socket.create_connection(("127.0.0.1", server.port), 10, (source, 0))
            with contextlib.suppress(OSError):  # closed at once past the cap
                sock.sendall(head)
            socks.append(sock)
        during = probe(server.port, other)

        def watch() -> None:
            if server.log.stat().st_size > too_much_log:
                raise LogFlood

        wait = 40.0
        try:
            closed = dropped_within(socks, opened + wait, watch)
        except LogFlood:
            closed = -1
        took = time.monotonic() - opened
        after = probe(server.port, other)
        log_size = server.log.stat().st_size
        ok = closed == len(socks) and after < 1 and log_size < (256 << 10)
        ok = ok and (during < size.during_s or not capped)
        dropped = "log past 16 MB, stopped" if closed < 0 else f"{closed} of {len(socks)} dropped"
        r.line(
            ok,
            case,
            f"{len(socks)} connections from {source} stalled after one body byte (server "
            f"limit {size.nofile} descriptors): {dropped} in {took:.1f} s; another address's "
            f"request {fmt_s(during)} during, {fmt_s(after)} after; log {log_size >> 10} kB",
        )
    finally:
        for sock in socks:
            sock.close()
        server.stop(kill=True)


class LogFlood(Exception):
    pass


def probe(port: int, source: str = ATTACKER) -> float:
    """Seconds `GET /api/bots` takes from `source` (inf: no answer in 5 s)."""
    try:
        status, _, took = ask(port, "GET", "/api/bots", source=source, timeout=5)
    except OSError:
        return float("inf")
    return took if status == 200 else float("inf")


def fmt_s(seconds: float) -> str:
    return "no answer in 5 s" if seconds == float("inf") else f"{seconds * 1000:.0f} ms"


def solve_limits(r: Report, size: Size, work: Path) -> None:
    """Issue 54 item 1: hints of one address at once, their solution gone from every cache."""
    from fivethousand_rl.agents.cache import MAX_IN_MEMORY

    case = "54.1-solve-limits"
    root = work / "solves"
    rules = {"target": size.hint_target, "entry": 350}
    server = Server(
        root,
        "--cache-max-mb",
        "0",
        "--max-work",
        "2",
        "--max-work-per-address",
        "1",
        "--per-address",
        "50",
        name="solves",
    ).start()
    port = server.port
    try:
        first = until_your_move(port, new_game(port, SETUP, seed=1, **rules), SETUP)
        status, answer, alone = ask(port, "GET", f"/api/games/{first['id']}/hint", source=SETUP)
        if status != 200 or not answer.get("available"):
            raise RuntimeError(f"the first hint got {status}: {answer}")
        # Other rules solved after it push its solution out of the solver's memory.
        for i in range(MAX_IN_MEMORY + 1):
            other = until_your_move(
                port, new_game(port, SETUP, seed=2, target=1000, entry=400 + 50 * i), SETUP
            )
            ask(port, "GET", f"/api/games/{other['id']}/hint", source=SETUP)
        games = [
            until_your_move(port, new_game(port, ATTACKER, seed=10 + i, **rules), ATTACKER)
            for i in range(size.hint_games)
        ]
        bystander = new_game(port, OTHERS, seed=5)
        answers: list[tuple[int, float]] = []
        views: list[float] = []
        done = threading.Event()

        def hint(gid: str) -> None:
            try:
                status, _, took = ask(
                    port, "GET", f"/api/games/{gid}/hint", source=ATTACKER, timeout=600
                )
            except OSError:
                status, took = 0, float("inf")
            answers.append((status, took))

        def watch() -> None:
            while not done.is_set():
                views.append(ask(port, "GET", f"/api/games/{bystander['id']}", source=OTHERS)[2])
                time.sleep(0.02)

        watcher = threading.Thread(target=watch)
        watcher.start()
        threads = [
            threading.Thread(target=hint, args=(g["id"],)) for g in games if g["status"] == "you"
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        done.set()
        watcher.join()
        served = [took for status, took in answers if status == 200]
        refused = [took for status, took in answers if status in (429, 503)]
        other = [status for status, _ in answers if status not in (200, 429, 503)]
        slowest = max(served, default=0.0)
        bound = 2.5 * alone + 1  # one solve at a time (others wait for it or are refused)
        p99 = percentile(views, 0.99) * 1000
        ok = not other and slowest <= bound and max(refused, default=0) < 1
        ok = ok and p99 < size.p99_ms
        r.line(
            ok,
            case,
            f"{len(answers)} games of one address asked a hint at once (target "
            f"{size.hint_target}, cache off; one solve alone {alone:.2f} s): {len(served)} "
            f"answered, slowest {slowest:.2f} s (bound {bound:.2f} s), {len(refused)} refused "
            f"(slowest {max(refused, default=0):.2f} s), other statuses {other}; "
            f"others' views p99 {p99:.0f} ms over {len(views)}; server peak RSS "
            f"{server.peak() >> 20} MB",
        )
    finally:
        server.stop(kill=True)


def stalled_game(r: Report, size: Size, work: Path) -> None:
    """Issue 42 item 1: a game in a real solve, requests queued on it; others answer."""
    case = "42.1-stalled-game"
    server = Server(
        work / "stalled", "--cache-max-mb", "0", "--per-address", "50", name="stalled"
    ).start()
    port = server.port
    try:
        slow = until_your_move(
            port,
            new_game(port, ATTACKER, seed=3, target=size.hint_target, entry=800, bump=False),
            ATTACKER,
        )
        other = new_game(port, OTHERS, seed=4)
        statuses: list[int] = []

        def send(path: str) -> None:
            with contextlib.suppress(OSError):
                statuses.append(ask(port, "GET", path, source=ATTACKER)[0])

        threads = [threading.Thread(target=send, args=(f"/api/games/{slow['id']}/hint",))]
        threads[0].start()
        time.sleep(0.05)
        for _ in range(size.queued):
            threads.append(threading.Thread(target=send, args=(f"/api/games/{slow['id']}",)))
            threads[-1].start()
        took = []
        while threads[0].is_alive() and len(took) < 400:
            for path in ["/api/bots", f"/api/games/{other['id']}"]:
                status, _, seconds = ask(port, "GET", path, source=OTHERS)
                took.append(seconds if status == 200 else float("inf"))
        for t in threads:
            t.join(120)
        p99 = percentile(took, 0.99) * 1000
        bad = [s for s in statuses if s not in (200, 429)]
        ok = p99 < size.p99_ms and not bad and len(took) >= 10
        r.line(
            ok,
            case,
            f"a game in a real solve (target {size.hint_target}, entry 800), "
            f"{size.queued} requests queued on it: {len(took)} requests of others, p99 "
            f"{p99:.0f} ms, max {max(took, default=0) * 1000:.0f} ms; queued answers "
            f"{sorted(set(statuses))}",
        )
    finally:
        server.stop(kill=True)


def memory_and_cache(r: Report, size: Size, work: Path) -> None:
    """Issue 42 items 2 and 3: hints at many tables (RSS bound), new rules (disk bound)."""
    import itertools

    root = work / "memory"
    server = Server(
        root, "--cache-max-mb", f"{size.cache_mb:g}", "--per-address", "50", name="memory"
    ).start()
    port = server.port
    try:
        with r.case("42.2-memory"):
            bots = [
                b["key"]
                for b in ask(port, "GET", "/api/bots")[1]["bots"]
                if b["kind"] == "scripted"
            ]
            # Seats in order, and house rules (entry) for 3 and 4 players: each a table of
            # its own (2 players: the standard rules, one solve).
            tables = [([bot], 500) for bot in bots]
            tables += [
                (list(seats), entry)
                for entry in (500, 350, 400, 450, 550, 600)
                for k in (2, 3)
                for seats in itertools.product(bots, repeat=k)
            ]
            random.Random(0).shuffle(tables)
            asked, answered, before = 0, 0, proc_status(server.proc.pid, "VmRSS")
            for i, (table, entry) in enumerate(tables[: size.tables]):
                view = new_game(port, SETUP, seed=i, bots=table, entry=entry)
                view = until_your_move(port, view, SETUP)
                if view["status"] == "you":
                    status, _, _ = ask(port, "GET", f"/api/games/{view['id']}/hint", source=SETUP)
                    asked, answered = asked + 1, answered + (status == 200)
                ask(port, "DELETE", f"/api/games/{view['id']}", source=SETUP)
            peak = server.peak()
            r.line(
                peak < 600 << 20 and answered == asked,
                "42.2-memory",
                f"hints at {asked} distinct tables of {len(bots)} scripted bots and house "
                f"rules ({answered} answered): server RSS {before >> 20} -> peak "
                f"{peak >> 20} MB (bound 600 MB)",
            )
        with r.case("42.3-disk-cache"):
            seen: dict[str, int] = {}  # every solution file written, by name
            answered = 0
            for i in range(size.cache_hints):
                view = until_your_move(
                    port, new_game(port, SETUP, seed=i, target=3000, entry=600 + 50 * i), SETUP
                )
                status, answer, _ = ask(port, "GET", f"/api/games/{view['id']}/hint", source=SETUP)
                answered += status == 200 and answer.get("available", False)
                ask(port, "DELETE", f"/api/games/{view['id']}", source=SETUP)
                seen.update((p.name, p.stat().st_size) for p in server.cache.glob("*.npz"))
            files = [p.stat().st_size for p in server.cache.glob("*.npz")]
            total, largest = sum(files), max(files, default=0)
            bound = size.cache_mb * (1 << 20)
            r.line(
                total <= bound + largest and answered == size.cache_hints,
                "42.3-disk-cache",
                f"{answered} of {size.cache_hints} hints of new 2-player rules answered, "
                f"{sum(seen.values()) / (1 << 20):.1f} MB of solutions written: the solver "
                f"cache holds {total / (1 << 20):.1f} MB in {len(files)} files (bound "
                f"{size.cache_mb:g} MB, plus the file just written)",
            )
    finally:
        server.stop(kill=True)


def kill_during_writes(r: Report, size: Size, work: Path) -> None:
    """Issue 42: kill -9 during a burst of moves loses no acknowledged move."""
    case = "42.8-kill-9"
    server = Server(work / "kills", "--per-address", "50", name="kills")
    acked: dict[str, int] = {}
    lost, checked = [], 0
    try:
        for cycle in range(size.kills):
            port = server.start().port
            for gid in list(acked):  # every acknowledged move survived the last kill
                status, view, _ = ask(port, "GET", f"/api/games/{gid}", source=SETUP)
                checked += 1
                if status != 200 or view["at"] < acked[gid]:
                    lost.append((gid[:6], acked[gid], status, view.get("at")))
                if status != 200 or view["status"] == "over":
                    del acked[gid]
            while len(acked) < 3:
                view = new_game(port, SETUP, seed=cycle * 10 + len(acked))
                acked[view["id"]] = view["at"]
            stop = threading.Event()

            def burst(gid: str, port: int = port, stop: threading.Event = stop) -> None:
                with contextlib.suppress(OSError, http.client.HTTPException, KeyError):
                    view = ask(port, "GET", f"/api/games/{gid}", source=SETUP)[1]
                    while not stop.is_set() and view["status"] != "over":
                        if view["status"] == "wait":
                            status, answer, _ = ask(
                                port, "POST", f"/api/games/{gid}/step", {"steps": 1}, SETUP
                            )
                        else:
                            move = {"action": never_banking(view["mask"]), "at": view["at"]}
                            status, answer, _ = ask(
                                port, "POST", f"/api/games/{gid}/move", move, SETUP
                            )
                        if status == 200:
                            view = answer
                            acked[gid] = max(acked[gid], view["at"])

            threads = [threading.Thread(target=burst, args=(gid,)) for gid in list(acked)]
            for t in threads:
                t.start()
            time.sleep(random.Random(cycle).uniform(0.3, 1.0))
            server.stop(kill=True)
            stop.set()
            for t in threads:
                t.join(10)
        port = server.start().port
        for gid in list(acked):
            status, view, _ = ask(port, "GET", f"/api/games/{gid}", source=SETUP)
            checked += 1
            if status != 200 or view["at"] < acked[gid]:
                lost.append((gid[:6], acked[gid], status, view.get("at")))
        leftovers = [p.name for p in server.data.glob(".*.tmp")]
        r.line(
            not lost and not leftovers,
            case,
            f"{size.kills} kill -9 during bursts of moves: "
            f"{checked} game checks, lost acknowledged moves {lost or 'none'}, "
            f"temporary files left {leftovers or 'none'}",
        )
    finally:
        server.stop(kill=True)


def pass_and_play_bound(r: Report, size: Size, work: Path) -> None:
    """Issue 54 item 7: a pass-and-play game nobody ever banks in ends, bounded."""
    from fivethousand_rl.webplay.games import MAX_SAVE_BYTES

    case = "54.6-pass-and-play-bound"
    began = time.monotonic()
    moves, limit, status = 0, 200_000, ""
    if size.pass_and_play_http:
        with Server(work / "pnp", name="pnp") as server:
            port = server.port
            view = new_game(port, SETUP, bots=[], humans=[0, 1], seed=7)
            while moves < limit and view["status"] != "over" and time.monotonic() - began < 300:
                if view["status"] == "wait":
                    code, view, _ = ask(
                        port, "POST", f"/api/games/{view['id']}/step", {"steps": 1000}, SETUP
                    )
                else:
                    move = {"action": never_banking(view["mask"]), "at": view["at"]}
                    code, view, _ = ask(port, "POST", f"/api/games/{view['id']}/move", move, SETUP)
                    moves += 1
                if code != 200:
                    status = f"a request got {code}: {view}"
                    break
            saved = (server.data / f"{view['id']}.json").stat().st_size
            over, end = view.get("status") == "over", view.get("end") or ""
    else:  # the server's own game object, driven in this process (no HTTP: seconds)
        from fivethousand_rl.envs.rules import Rules
        from fivethousand_rl.webplay.bots import Catalogue
        from fivethousand_rl.webplay.games import WebGame

        catalogue = Catalogue(work)
        web = WebGame.new([], 0, Rules(), seed=7, humans=[0, 1])
        while moves < limit and not web.over and time.monotonic() - began < 120:
            if web.to_play() is None:
                web.advance(catalogue, 1000)
            else:
                web.act(never_banking(list(web.game.action_mask())))
                moves += 1
        saved = len(json.dumps(web.to_dict()))
        over, end = web.over, web.end() or ""
    ok = over and saved < MAX_SAVE_BYTES and not status
    r.line(
        ok,
        case,
        f"a pass-and-play game nobody banks in: {'over' if over else 'not over'} "
        f"after {moves} moves in {time.monotonic() - began:.1f} s, save {saved >> 10} kB "
        f"(saves over {MAX_SAVE_BYTES >> 20} MiB are skipped at restart) {status} {end}",
    )


# ======================================================================= command cases
def cli_bombs(r: Report, size: Size, work: Path) -> None:
    """Issue 54 items 3 and 4: small files that blow up memory, through the commands,
    each in a child process whose peak RSS is measured."""
    folder = work / "bombs"
    folder.mkdir()

    def check(case: str, args: list[str], what: str, cwd: Path = hostile.ROOT) -> None:
        with r.case(case):
            m = hostile.run_measured(
                args, folder, timeout=120, kill_above=1 << 30, env=OWN_TREE, cwd=cwd
            )
            ok, said = one_line_refusal(m.code, m.err)
            ok = ok and m.peak < hostile.RSS_LIMIT
            r.line(ok, case, f"{what}: peak RSS {m.peak >> 20} MB {m.why_killed}; {said}")

    (folder / "obj").mkdir()
    obj_zip = hostile.model_with_last_obs(folder / "obj", hostile.object_array_pickle())
    check(
        "54.3-object-array-zip-evaluate",
        ["evaluate.py", str(obj_zip), "random", "--games", "2"],
        "a 133-byte object-array pickle as a model's _last_obs, evaluate",
    )
    if size.every_command:
        check(
            "54.3-object-array-zip-play",
            ["play.py", "--opponents", str(obj_zip)],
            "the same model, play --opponents",
        )
    run = hostile.run_folder(
        folder / "obj_run",
        state=pickle.dumps({"run": hostile.ObjectArrayBomb("reconstruct")}, protocol=4),
    )
    check(
        "54.3-object-array-state-resume",
        ["train.py", "--resume", str(run), "--n-timesteps", "512"],
        "the same pickle in a run's state.pkl, train --resume",
    )
    nested = folder / "nested.zip"
    nested.write_bytes(hostile.nested_bomb(size.nested_bytes))
    check(
        "54.3-nested-bomb-evaluate",
        ["evaluate.py", str(nested), "random", "--games", "2"],
        f"a {nested.stat().st_size >> 20} MB model whose policy.pth unpacks to "
        f"{size.nested_bytes >> 20} MB, evaluate",
    )
    flat = folder / "flat.zip"
    flat.write_bytes(hostile.flat_bomb(size.flat_bytes))
    check(
        "54.3-flat-bomb-export",
        ["export.py", str(flat), "-o", str(folder / "flat.onnx")],
        f"a {flat.stat().st_size >> 20} MB model whose data unpacks to "
        f"{size.flat_bytes >> 20} MB, export",
    )
    run = hostile.run_folder(folder / "flat_run", model=flat)
    check(
        "54.3-flat-bomb-resume",
        ["train.py", "--resume", str(run), "--n-timesteps", "512"],
        "the same model as a run's latest, train --resume",
    )
    preset = folder / "bomb.yaml"
    preset.write_text(f"n_steps: {hostile.alias_bomb()}\n")
    scripts = ["train.py", "train_planner.py"] if size.every_command else ["train.py"]
    for script in scripts:
        name = script.removesuffix(".py")
        runs = ["--checkpoints", str(folder / "runs")]
        check(
            f"54.3-yaml-alias-preset-{name}",
            [script, "--preset", str(preset), *runs],
            f"a {preset.stat().st_size}-byte YAML alias bomb as --preset, {script}",
        )
        check(
            f"54.3-yaml-alias-params-{name}",
            [script, "--params", f"n_steps={hostile.alias_bomb()}", *runs],
            f"the alias bomb as --params, {script}",
        )
    # Issue 42 item 5: unbounded reads and sizes.
    check("42.5-play-load-dev-zero", ["play.py", "--load", "/dev/zero"], "play --load /dev/zero")
    run = hostile.ship_run(folder / "ship_run")
    check(
        "42.5-ship-notes-dev-zero",
        ["ship.py", str(run), "--name", "x", "--out", str(folder), "--notes", "/dev/zero"],
        "ship --notes /dev/zero",
    )
    check(
        "42.5-evaluate-target",
        ["evaluate.py", "optimal", "smart", "--games", "10", "--target", "200000"],
        "evaluate optimal smart --target 200000",
    )
    demo = folder / "demo"
    demo.mkdir()
    check(
        "42.6-demo-games-0",
        [str(hostile.ROOT / "demo.py"), "--games", "0"],
        "demo --games 0 (refused before training)",
        cwd=demo,
    )


def cli_code(r: Report, size: Size, work: Path) -> None:
    """Issue 42 item 7 and issue 54 item 5: model files and state.pkl never run code."""
    from fivethousand_rl import evaluate, export, play, ship, train

    folder = work / "code"
    folder.mkdir()
    marker = folder / "ran_code_from_the_file"
    cases = list(hostile.REFUSED) if size.every_command else ["data kept as a pickle"]
    from fivethousand_rl.agents import make_policy

    for i, case in enumerate(hostile.REFUSED):
        label = f"42.7-make-policy-{case.replace(' ', '-')}"
        with r.case(label):
            sub = folder / f"model{i}"
            sub.mkdir()
            path, named = hostile.refused_file(sub, marker, case)
            try:
                make_policy(str(path))
                refused = "loaded"
            except Exception as e:  # what the loader says, checked below
                refused = str(e)
            ok = named in refused and "\n" not in refused and not marker.exists()
            r.line(ok, label, f"make_policy: {refused[:120]}; code ran: {marker.exists()}")
    for case in cases:
        run = folder / f"run-{case.replace(' ', '-')}"
        (run / "best").mkdir(parents=True)
        path, named = hostile.refused_file(run / "best", marker, case)
        config = json.loads((hostile.SHIPPED_2P / "config.json").read_text())
        config.pop("init_from", None)
        (run / "config.json").write_text(json.dumps(config))
        out = folder / "out"
        out.mkdir(exist_ok=True)
        commands = {
            "evaluate": (evaluate.main, [str(path), "random", "--games", "2"], {}),
            "play": (play.main, ["--opponents", str(path)], {"ask": lambda _: "q"}),
            "export": (export.main, [str(path), "-o", str(folder / "bot.onnx")], {}),
            "train": (
                train.main,
                ["--opponents", str(path), "--checkpoints", str(folder / "runs")],
                {},
            ),
            "ship": (ship.main, [str(run), "--name", "new", "--out", str(out)], {}),
        }
        for name, (main, argv, kwargs) in commands.items():
            label = f"42.7-{name}-{case.replace(' ', '-')}"
            with r.case(label):
                code, err = in_process(main, argv, **kwargs)
                ok, said = one_line_refusal(code, err)
                ok = ok and named in err and not marker.exists()
                r.line(ok, label, f"{said}; code ran: {marker.exists()}")
    with r.case("42.7-state-pkl-resume"):
        run = hostile.run_folder(
            folder / "state_run", state=pickle.dumps({"monitor": hostile.Payload(marker)})
        )
        code, err = in_process(train.main, ["--resume", str(run), "--n-timesteps", "512"])
        ok, said = one_line_refusal(code, err)
        ok = ok and "state.pkl" in err and not marker.exists()
        r.line(
            ok,
            "42.7-state-pkl-resume",
            f"a payload in state.pkl, train --resume: {said}; code ran: {marker.exists()}",
        )
    with r.case("54.5-ship-rewrites"):
        run = hostile.ship_run(folder / "ship_run")
        hostile.code_settings_file(run / "best", marker)
        stock_load(run / "best" / "model.zip")  # fails once the payload has run
        if not marker.exists():
            raise RuntimeError("the hostile model's payload did not run in stock MaskablePPO.load")
        marker.unlink()
        out = folder / "shipped"
        out.mkdir()
        code, err = in_process(
            ship.main,
            [str(run), "--name", "x", "--out", str(out), "--games", "2", "--workers", "1"],
        )
        shipped = out / "x" / "model.zip"
        ran_in_ship = marker.exists()
        loaded = "not shipped"
        if shipped.exists():
            loaded = "loaded" if stock_load(shipped) else "failed"
        ok = shipped.exists() and not marker.exists()
        r.line(
            ok,
            "54.5-ship-rewrites",
            f"ship of a model whose pickled settings hold code: exit "
            f"{code}; code ran in ship: {ran_in_ship}; the shipped model.zip in stock "
            f"MaskablePPO.load: {loaded}; code ran there: {marker.exists() and not ran_in_ship}"
            + (f" ({err.strip().splitlines()[-1][:100]})" if code and err.strip() else ""),
        )


def stock_load(path: Path) -> bool:
    """Whether stock ``MaskablePPO.load`` (which unpickles whatever the file holds) loads
    `path`, in a child process."""
    code = "import sys; from sb3_contrib import MaskablePPO; MaskablePPO.load(sys.argv[1])"
    child = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, timeout=120
    )
    return child.returncode == 0


def cli_small(r: Report, size: Size, work: Path) -> None:
    """Issue 54 items 4 and 7 and issue 42 items 6 and 8, in this process."""
    from fivethousand_rl import evaluate, export, ship, train

    folder = work / "small"
    folder.mkdir()
    nan = hostile.nan_zip(folder)
    checks = [
        ("54.4-nan-zip-evaluate", evaluate.main, [str(nan), "random", "--games", "2"], "finite"),
        ("54.4-nan-zip-export", export.main, [str(nan), "-o", str(folder / "nan.onnx")], "finite"),
        (
            "54.4-nan-zip-init-from",
            train.main,
            [
                "--preset",
                "quick",
                "--no-progress",
                "--n-timesteps",
                "256",
                "--init-from",
                str(nan),
                "--checkpoints",
                str(folder / "runs"),
            ],
            "finite",
        ),
        (
            "54.4-nan-onnx-evaluate",
            evaluate.main,
            [str(hostile.nan_onnx(folder)), "random", "--games", "2"],
            "finite",
        ),
        (
            "42.8-nan-value-net",
            evaluate.main,
            [str(hostile.nan_value_net(folder)), "random", "--games", "2"],
            "finite",
        ),
        ("54.6-games-nan", evaluate.main, ["random", "random", "--games", "nan"], "--games"),
        (
            "54.6-opponent-weight-empty",
            train.main,
            ["--opponents", "smart@", "--checkpoints", str(folder / "runs")],
            "weight",
        ),
        (
            "42.6-opponent-weight-nan",
            train.main,
            ["--params", "opponents=[smart@nan]", "--checkpoints", str(folder / "runs")],
            "weight",
        ),
        (
            "42.6-ship-out-proc",
            ship.main,
            [str(hostile.ship_run(folder / "run")), "--name", "x", "--out", "/proc"],
            "/proc",
        ),
        (
            "42.8-export-missing-parent",
            export.main,
            [str(hostile.SHIPPED_2P / "model.zip"), "-o", "/nonexistent-attack/dir/x.onnx"],
            "nonexistent",
        ),
        (
            "42.8-train-missing-parent",
            train.main,
            ["--preset", "quick", "--checkpoints", "/nonexistent-attack/x"],
            "nonexistent",
        ),
    ]
    for case, main, argv, named in checks:
        with r.case(case):
            code, err = in_process(main, argv)
            ok, said = one_line_refusal(code, err)
            ok = ok and named in err
            if case.endswith("missing-parent"):
                ok = ok and not Path("/nonexistent-attack").exists()
            if case == "54.4-nan-zip-export":
                ok = ok and not (folder / "nan.onnx").exists()
            r.line(ok, case, said)
    with r.case("54.6-full-disk"):
        out = folder / "full"
        out.mkdir()
        (out / "old.json").write_text('{"kept": true}')
        child = subprocess.run(
            [sys.executable, "-c", FULL_DISK, str(out)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=hostile.ROOT,
        )
        left = sorted(p.name for p in out.iterdir())
        empty = [p.name for p in out.iterdir() if p.stat().st_size == 0]
        refusals = [ln for ln in child.stderr.splitlines() if ln.startswith("error:")]
        ok = (
            child.returncode == 1
            and left == ["old.json"]
            and not empty
            and (out / "old.json").read_text() == '{"kept": true}'
            and "Traceback" not in child.stderr
        )
        r.line(
            ok,
            "54.6-full-disk",
            f"evaluate's 4 outputs onto a full disk: exit "
            f"{child.returncode}, {len(refusals)} one-line errors, files left {left}, "
            f"zero-byte {empty or 'none'}",
        )


# evaluate's outputs onto a full disk (hostile.full_disk_open), in a child process.
FULL_DISK = """import builtins, io, os, sys
from benchmarks.hostile import full_disk_open
from fivethousand_rl import evaluate
argv = ["random", "smart", "--games", "4", "--per-game"]
outputs = {"--json": "old.json", "--csv": "r.csv", "--markdown": "r.md", "--plot": "r.png"}
for flag, name in outputs.items():
    argv += [flag, os.path.join(sys.argv[1], name)]
builtins.open = io.open = full_disk_open(builtins.open)
sys.exit(evaluate.main(argv))
"""

CASES: dict[str, Callable[[Report, Size, Path], None]] = {
    "server": server_basics,
    "stall": stalled_bodies,
    "solves": solve_limits,
    "stalled-game": stalled_game,
    "memory": memory_and_cache,
    "kills": kill_during_writes,
    "pass-and-play": pass_and_play_bound,
    "bombs": cli_bombs,
    "code": cli_code,
    "small": cli_small,
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", choices=SIZES, default="small")
    p.add_argument("--only", nargs="+", choices=CASES, help="these groups of cases only")
    args = p.parse_args(argv)
    size = SIZES[args.size]
    report = Report()
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="attack-") as tmp:
        for name, run in CASES.items():
            if args.only and name not in args.only:
                continue
            started = time.monotonic()
            with report.case(name):
                run(report, size, Path(tmp))
            print(f"({name}: {time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
    print(
        f"{report.count - len(report.broke)} of {report.count} cases held in "
        f"{time.monotonic() - began:.0f} s",
        file=sys.stderr,
    )
    return 1 if report.broke else 0


if __name__ == "__main__":
    sys.exit(main())
