"""``python -m webplay [--host 127.0.0.1] [--port 8000] [--data DIR] ...``: serve the page
(``--help`` says how long games are kept and which Host names are answered)."""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import logging
import socket
import sys
from pathlib import Path

from webplay.games import HOUR, MINUTE, Limits

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


def main(argv: list[str] | None = None, prog: str = "python -m webplay") -> int:
    """The server's command line (`prog`: the command as typed, for its usage); the exit
    code once the server stops."""
    defaults = Limits()
    p = argparse.ArgumentParser(
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
            type=kind,
            default=kind(getattr(defaults, name) / unit),
            metavar=metavar,
            help=f"{text} (default %(default)g)",
        )
    args = p.parse_args(argv)
    from webplay.app import LOCAL_HOSTS, check_hosts  # fastapi: after --help

    own = [] if args.host in WILDCARDS else [in_url(args.host)]
    try:
        if not 0 < args.port < 65536:
            raise ValueError("--port must be 1..65535")
        limits = Limits(**{name: getattr(args, name) * unit for name, unit, *_ in LIMIT_FLAGS})
        hosts = check_hosts([*LOCAL_HOSTS, *own, *args.allowed_host])
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # The port first: if it is taken, nothing is made (no data folder, no lock).
    try:
        family = socket.getaddrinfo(args.host or None, args.port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.create_server((args.host, args.port), family=family)
    except OSError as e:
        why = (e.strerror or str(e)).partition(" (while attempting")[0]  # the address: said
        print(f"error: cannot listen on {args.host}:{args.port}: {why}", file=sys.stderr)
        return 2
    import uvicorn

    from webplay.app import create_app

    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    try:
        app = create_app(args.data.expanduser(), limits=limits, allowed_hosts=hosts)
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
            uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    finally:
        sock.close()
        app.state.store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
