"""``python -m fivethousand_rl.webplay [--host 127.0.0.1] [--port 8000] [--data DIR] ...``:
serve the page (``--help`` says how long games are kept and which Host names are answered)."""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import sys
from pathlib import Path

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
from fivethousand_rl.webplay.server import (
    BODY_TIMEOUT,
    FD_RESERVE,
    HEAD_TIMEOUT,
    MAX_CONNECTIONS_PER_ADDRESS,
    default_max_connections,
    listening_socket,
    make_server,
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
    p.add_argument(
        "--max-connections",
        type=positive_whole_number,
        default=default_max_connections(),
        metavar="N",
        help="connections kept open at once; one more is closed at once (default "
        f"%(default)s: the open-file limit less {FD_RESERVE}, kept for the games' files)",
    )
    p.add_argument(
        "--max-connections-per-address",
        type=positive_whole_number,
        default=MAX_CONNECTIONS_PER_ADDRESS,
        metavar="N",
        help="connections one client address (an IPv6 /64 is one) keeps open; one more is "
        "closed at once; a proxy's (--forwarded-allow-ips) are not counted as one "
        "client's (default %(default)s)",
    )
    p.add_argument(
        "--forwarded-allow-ips",
        default=None,
        metavar="ADDRESSES",
        help="reverse proxies whose X-Forwarded-For header is taken as the client's "
        "address: comma-separated addresses or networks, '*' for any (default "
        "$FORWARDED_ALLOW_IPS, else 127.0.0.1,::1)",
    )
    p.add_argument(
        "--body-timeout",
        type=non_negative_number,
        default=BODY_TIMEOUT,
        metavar="SECONDS",
        help="a request body must arrive whole within this of its head, else the "
        f"connection is closed (a request head: within {HEAD_TIMEOUT:g} s of connecting or "
        "of the last answer) (default %(default)g)",
    )
    args = p.parse_args(argv)
    from fivethousand_rl.webplay.app import LOCAL_HOSTS, Work, check_hosts  # fastapi: after --help

    own = [] if args.host in WILDCARDS else [in_url(args.host)]
    try:
        if not 0 < args.port < 65536:
            raise ValueError("--port must be 1..65535")
        if not args.body_timeout > 0:
            raise ValueError("--body-timeout must be more than 0 seconds")
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
            server = make_server(
                app,
                body_timeout=args.body_timeout,
                per_address=args.max_connections_per_address,
                max_connections=args.max_connections,
                forwarded_allow_ips=args.forwarded_allow_ips,
            )
            server.run(sockets=[sock])
    finally:
        sock.close()
        app.state.store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
