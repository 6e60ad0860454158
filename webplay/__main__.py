"""``python -m fivethousand_rl.webplay [--host 127.0.0.1] [--port 8000] [--data DIR] ...``:
serve the page (``--help`` says how long games are kept and which Host names are answered)."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import uvicorn

from fivethousand_rl.agents.cache import CACHE_MAX_ENV, DEFAULT_CACHE_MAX_MB, cache_max_bytes
from fivethousand_rl.agents.rule_flags import (
    OneLineParser,
    non_negative_number,
    positive_whole_number,
)
from fivethousand_rl.webplay.games import (
    HOUR,
    MAX_WORK,
    MAX_WORK_PER_ADDRESS,
    MINUTE,
    SOLVE_CHOICES,
    Limits,
)

DEFAULT_DATA = Path.home() / ".local" / "share" / "fivethousand-rl" / "web"
WILDCARDS = ("", "0.0.0.0", "::")  # every address of the machine
LIMIT_FLAGS = [  # (a Limits field, its unit on the command line in seconds, metavar, help)
    ("max_games", 1, "N", "games kept in all"),
    ("per_address", 1, "N", "games kept per client address (an IPv6 /64 is one)"),
    ("keep_finished", HOUR, "HOURS", "a finished game is kept until unused this long"),
    ("keep_idle", HOUR, "HOURS", "an unfinished game is kept until unused this long"),
    ("grace", MINUTE, "MINUTES", "a game used this recently is never deleted to make room"),
]


def is_loopback(host: str) -> bool:
    """True if `host` is reached from this machine only (a name other than localhost may
    be any address: False)."""
    with contextlib.suppress(ValueError):
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    return False


def in_url(host: str) -> str:
    """`host` as a URL writes it: an IPv6 address in brackets; a wildcard as 127.0.0.1."""
    if host in WILDCARDS:
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


HEAD_TIMEOUT = 10.0  # s: to send a whole request head, from connecting or the last answer
KEEP_ALIVE = 5  # s: an idle kept-alive connection is closed after this (uvicorn's default)


def server_config(app, head_timeout: float = HEAD_TIMEOUT) -> uvicorn.Config:
    """How uvicorn serves `app`: h11, with a deadline for each request's head. uvicorn's
    own keep-alive timeout starts only after an answer, and any byte stops it, so a
    connection that never sent a request, or sent its headers a byte at a time, was held
    for ever (issue 42 item 8); here one is closed `head_timeout` seconds after it opened
    or was last answered unless a whole request head has come."""
    import h11
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol

    from fivethousand_rl.webplay.app import SECURITY_HEADERS

    class TimelyH11(H11Protocol):
        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._head_timer = self.loop.call_later(head_timeout, self._too_slow)

        def _too_slow(self) -> None:
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()  # no whole request head in time: dropped

        def _head_arrived(self) -> None:
            if self.conn.their_state is not h11.IDLE:
                self._head_timer.cancel()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._head_arrived()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._head_timer.cancel()
            if not self.transport.is_closing():  # the next request's head: the same deadline
                self._head_timer = self.loop.call_later(head_timeout, self._too_slow)
                self._head_arrived()  # a pipelined one has come already

        def connection_lost(self, exc: Exception | None) -> None:
            self._head_timer.cancel()
            super().connection_lost(exc)

        def send_400_response(self, msg: str) -> None:
            # A request h11 refuses before the app sees it (two Host headers, a bad
            # Content-Length): answered as the app answers, a JSON error with the
            # security headers, not uvicorn's bare text (issue 54 item 7).
            body = json.dumps({"error": "invalid HTTP request"}).encode()
            headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
            headers += [(b"content-length", str(len(body)).encode()), *SECURITY_HEADERS]
            for event in (
                h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                h11.Data(data=body),
                h11.EndOfMessage(),
            ):
                self.transport.write(self.conn.send(event))
            self.transport.close()

    # log_config=None: uvicorn's own config goes through logging.config.dictConfig, which
    # closes every handler the process already has (another library's, on any stream);
    # its loggers are left to the root logger main sets up instead.
    return uvicorn.Config(
        app, log_level="warning", log_config=None, http=TimelyH11, timeout_keep_alive=KEEP_ALIVE
    )


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket listening on `host`:`port` whose connections send each answer at once
    (TCP_NODELAY). asyncio turns Nagle's algorithm off only on sockets made as TCP ones
    (proto IPPROTO_TCP), which ``socket.create_server``'s are not (proto 0): without it, a
    kept-alive request waited about 40 ms (issue 42 item 4). OSError if it cannot listen."""
    family = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM)[0][0]
    made = socket.create_server((host, port), family=family)
    # The same socket, known as TCP: what it accepts is too (asyncio then sets the option).
    sock = socket.socket(made.family, made.type, socket.IPPROTO_TCP, fileno=made.detach())
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # inherited on Linux as well
    return sock


def main(argv: list[str] | None = None, prog: str = "python -m fivethousand_rl.webplay") -> int:
    """The server's command line (`prog`: the command as typed, for its usage); the exit
    code once the server stops."""
    defaults = Limits()
    p = OneLineParser(
        prog=prog,
        description="Play 5000 against the bots in a browser.",
        epilog=(
            f"Keeping games: {defaults.rule()} Host names: the server answers requests "
            "addressed to localhost, 127.0.0.1, [::1], the --host name and the "
            "--allowed-host names only (so that a page of another site cannot drive it)."
        ),
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: this machine only)"
    )
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help=f"saved games (default {DEFAULT_DATA})"
    )
    p.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another Host name clients use to reach the server, such as this machine's "
        "name or address on the network (repeatable; '*.example.com' a domain's names; "
        "'*' any, only behind a proxy that checks it)",
    )
    for name, unit, metavar, text in LIMIT_FLAGS:
        kind = int if unit == 1 else float
        p.add_argument(
            "--" + name.replace("_", "-"),
            type=positive_whole_number if unit == 1 else non_negative_number,
            default=kind(getattr(defaults, name) / unit),
            metavar=metavar,
            help=f"{text} (default %(default)g)",
        )
    p.add_argument(
        "--max-work",
        type=int,
        default=MAX_WORK,
        metavar="N",
        help="solves of new rules and planner builds running at once; a request for more "
        "gets a 503 (default %(default)s)",
    )
    p.add_argument(
        "--max-work-per-address",
        type=int,
        default=MAX_WORK_PER_ADDRESS,
        metavar="N",
        help="of those, for one client address; a request for more gets a 429 "
        "(default %(default)s)",
    )
    p.add_argument(
        "--solve",
        choices=SOLVE_CHOICES,
        default="any",
        help="which rules the server solves exactly for the optimal bot and 2-player hints "
        "when no solution is cached: "
        + "; ".join(f"{key}: {text}" for key, text in SOLVE_CHOICES.items()),
    )
    p.add_argument(
        "--cache-max-mb",
        type=non_negative_number,
        default=None,
        metavar="MB",
        help=f"size bound of the solver's disk cache, least recently used files deleted "
        f"past it (default ${CACHE_MAX_ENV}, else {DEFAULT_CACHE_MAX_MB})",
    )
    args = p.parse_args(argv)
    from fivethousand_rl.webplay.app import LOCAL_HOSTS, Work, check_hosts  # fastapi: after --help

    own = [] if args.host in WILDCARDS else [in_url(args.host)]
    try:
        if not 0 < args.port < 65536:
            raise ValueError("--port must be 1..65535")
        limits = Limits(**{name: getattr(args, name) * unit for name, unit, *_ in LIMIT_FLAGS})
        hosts = check_hosts([*LOCAL_HOSTS, *own, *args.allowed_host])
        work = Work(args.max_work, args.max_work_per_address, args.solve)
        if args.cache_max_mb is not None:  # finite and >= 0: non_negative_number
            os.environ[CACHE_MAX_ENV] = f"{args.cache_max_mb:g}"  # read by agents.cache
        cache_max_bytes()  # a bad $FIVETHOUSAND_CACHE_MAX_MB: said now, not at a solve
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # The port first: if it is taken, nothing is made (no data folder, no lock).
    try:
        sock = listening_socket(args.host, args.port)
    except OSError as e:
        why = (e.strerror or str(e)).partition(" (while attempting")[0]  # the address: said
        print(f"error: cannot listen on {args.host}:{args.port}: {why}", file=sys.stderr)
        return 2
    import uvicorn

    from fivethousand_rl.webplay.app import create_app

    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    try:
        app = create_app(args.data.expanduser(), limits=limits, allowed_hosts=hosts, work=work)
    except OSError as e:
        sock.close()
        print(f"error: cannot use the data folder {args.data}: {e.strerror}", file=sys.stderr)
        return 2
    print(f"5000: open http://{in_url(args.host)}:{args.port}/ (saved games in {args.data})")
    if not is_loopback(args.host):
        print(
            f"note: --host {args.host} makes the games reachable from the network: anyone "
            "who can reach this machine can start games and play any game whose link they "
            "have (name the host they reach it by with --allowed-host)"
        )
    try:  # Ctrl-C ends the server quietly, as uvicorn.run does
        with contextlib.suppress(KeyboardInterrupt):
            uvicorn.Server(server_config(app)).run(sockets=[sock])
    finally:
        sock.close()
        app.state.store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
