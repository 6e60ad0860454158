"""How the web app is served: uvicorn's h11 server with the limits a public address
needs (issues 42 and 54): a deadline for each request's head and body, connections
capped per client address and in all, a listening socket that answers at once
(TCP_NODELAY), and an event loop that stops accepting, and says so once in a while,
when file descriptors run out. ``python -m fivethousand_rl.webplay`` (``__main__``)
parses the command line and serves through ``make_server``."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import json
import logging
import math
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import uvicorn

from fivethousand_rl.webplay.games import client_key

HEAD_TIMEOUT = 10.0  # s: to send a whole request head, from connecting or the last answer
BODY_TIMEOUT = 5.0  # s: to send the rest of a request body, from the end of its head
KEEP_ALIVE = 5  # s: an idle kept-alive connection is closed after this (uvicorn's default)
MAX_CONNECTIONS_PER_ADDRESS = 64  # a browser opens about 6; an office behind one NAT, more
ACCEPT_BATCH = 128  # connections accepted at a time (the listen queue's length as well)
FD_RESERVE = 64  # file descriptors kept from connections for the app's files (saves, models)
LOG_INTERVAL = 10.0  # s: a warning that may come at every connection is said once per this
RESOURCE_ERRORS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
log = logging.getLogger("webplay")


class Throttled:
    """A warning said once per `interval` seconds at most, with the count of the times it
    came since it was last said: something a client can cause at every connection must
    not fill the log (a million tracebacks in 90 s, issue 54 item 2)."""

    def __init__(self, text: str, interval: float = LOG_INTERVAL) -> None:
        self.text, self.interval = text, interval
        self.said_at = -math.inf
        self.unsaid = 0  # times since it was last said

    def __call__(self, *args: object) -> None:
        self.unsaid += 1
        now = time.monotonic()
        if now - self.said_at >= self.interval:
            log.warning(self.text + " (%d since the last such line)", *args, self.unsaid)
            self.said_at, self.unsaid = now, 0


def say_accept_errors_seldom(loop: asyncio.AbstractEventLoop) -> None:
    """Have `loop` say that it cannot accept a connection (out of file descriptors or
    memory) once in a while (``Throttled``) instead of a traceback at each attempt (it
    tries again each second). Every other error goes to asyncio's own handler."""
    say = Throttled("cannot accept connections: %s; new ones wait until some close")

    def handler(loop: asyncio.AbstractEventLoop, context: dict) -> None:
        error = context.get("exception")
        if isinstance(error, OSError) and error.errno in RESOURCE_ERRORS:
            say(error.strerror)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)


class OutOnce:
    """A listening socket as asyncio's accept loop sees it: after an accept that failed
    for want of resources, the next one says there is nothing more to accept."""

    def __init__(self, listening: socket.socket) -> None:
        self.listening, self.out = listening, False

    def accept(self) -> tuple[socket.socket, object]:
        if self.out:
            raise BlockingIOError  # ends asyncio's accept loop
        try:
            return self.listening.accept()
        except OSError as e:
            self.out = e.errno in RESOURCE_ERRORS
            raise

    def __getattr__(self, name: str):  # fileno and the rest: the socket's
        return getattr(self.listening, name)


def stop_accepting_when_out(loop: asyncio.AbstractEventLoop) -> None:
    """Have `loop` stop its round of accepts at the first that fails for want of
    resources. Python 3.11's asyncio (CPython gh-151615, fixed in later versions) goes on
    to the end of the batch, each failed try reported and scheduling one more retry in
    1 s: the retries pile up, a batch more each round (a million tracebacks in 90 s in
    issue 54). Nor does a retry still pending when the server has closed its socket log
    a traceback (one per retry). A loop without these private methods (not a selector
    loop, another asyncio) is left as is."""
    accept = getattr(loop, "_accept_connection", None)
    start = getattr(loop, "_start_serving", None)
    if accept is None or start is None:
        return

    def accept_connections(protocol_factory, sock, *args, **kwargs) -> None:
        # A retry hands back the OutOnce it was scheduled with: a fresh one each round.
        listening = sock.listening if isinstance(sock, OutOnce) else sock
        accept(protocol_factory, OutOnce(listening), *args, **kwargs)

    def start_serving(protocol_factory, sock, *args, **kwargs) -> None:
        if sock.fileno() != -1:  # else a retry after the server closed: nothing to do
            start(protocol_factory, sock, *args, **kwargs)

    loop._accept_connection = accept_connections  # read by its _start_serving
    loop._start_serving = start_serving  # by asyncio.Server and the retries


def trusted_proxies(allowed: str | list[str]) -> Callable[[str], bool]:
    """Whether an address is one uvicorn takes X-Forwarded-For from (`allowed`: its
    forwarded_allow_ips, addresses and networks, or '*' for any)."""
    items = [i.strip() for i in allowed.split(",")] if isinstance(allowed, str) else allowed
    if "*" in items:
        return lambda host: True
    networks, names = [], set()
    for item in items:
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:  # a Unix socket's name, say
            names.add(item)

    def trusted(host: str) -> bool:
        with contextlib.suppress(ValueError):
            address = ipaddress.ip_address(host)
            return any(address in network for network in networks)
        return host in names

    return trusted


def default_max_connections() -> int:
    """Connections the server keeps open at once unless told: its open-file limit less
    FD_RESERVE, so that connections alone never leave it without a descriptor for a
    save (and asyncio without one to accept with)."""
    try:
        import resource
    except ImportError:  # Windows: no such limit on sockets
        return 1000
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1_000_000
    return max(1, soft - FD_RESERVE)


class Admission:
    """Which new connections are kept open: at most `total` in all and `per_address` from
    one client (``client_key``); one more is closed at once (said once in a while). A
    proxy's connections (`is_proxy` of its address) count in the total only: they carry
    many clients, whom the proxy bounds itself."""

    def __init__(self, total: int, per_address: int, is_proxy: Callable[[str], bool]) -> None:
        self.total, self.per_address, self.is_proxy = total, per_address, is_proxy
        self.open = 0
        self.by_client: dict[str, int] = {}
        self.full = Throttled("closed new connections at once: %d open (--max-connections)")
        self.crowd = Throttled(
            "closed new connections at once: %d open from %s (--max-connections-per-address)"
        )

    def admit(self, host: str) -> bool:
        """Whether a new connection from `host` is kept (then counted until ``leave``)."""
        if self.open >= self.total:
            self.full(self.open)
            return False
        if not self.is_proxy(host):
            key = client_key(host)
            held = self.by_client.get(key, 0)
            if held >= self.per_address:
                self.crowd(held, key)
                return False
            self.by_client[key] = held + 1
        self.open += 1
        return True

    def leave(self, host: str) -> None:
        """A connection ``admit`` kept, from `host`, has closed."""
        self.open -= 1
        if not self.is_proxy(host):
            key = client_key(host)
            held = self.by_client.pop(key) - 1
            if held:
                self.by_client[key] = held


def server_config(
    app,
    head_timeout: float = HEAD_TIMEOUT,
    body_timeout: float = BODY_TIMEOUT,
    per_address: int = MAX_CONNECTIONS_PER_ADDRESS,
    max_connections: int | None = None,
    forwarded_allow_ips: str | None = None,
) -> uvicorn.Config:
    """How uvicorn serves `app`: h11, with deadlines for what a client owes. uvicorn's
    own keep-alive timeout starts only after an answer, and any byte stops it, so a
    connection that never sent a request, sent its headers a byte at a time (issue 42
    item 8), or sent a head and one byte of its body (issue 54 item 2) was held for
    ever. Here one is closed `head_timeout` seconds after it opened or was last answered
    unless a whole request head has come, and `body_timeout` seconds after a head unless
    the whole body has come (with a 408 if nothing was answered yet): the body is at
    most MAX_BODY (4 KiB, webplay.app), so this is also a minimum rate (800 B/s at 5 s).
    At most `max_connections` (default ``default_max_connections()``) are kept open, of
    them `per_address` from one client, a proxy's not counted as one client's
    (``Admission``): a proxy is an address in `forwarded_allow_ips` (default
    $FORWARDED_ALLOW_IPS, else 127.0.0.1 and ::1), whose X-Forwarded-For uvicorn takes
    as the client's address."""
    import h11
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol

    from fivethousand_rl.webplay.app import SECURITY_HEADERS

    config = uvicorn.Config(
        # log_config=None: uvicorn's own config goes through logging.config.dictConfig,
        # which closes every handler the process already has (another library's, on any
        # stream); its loggers are left to the root logger main sets up instead.
        app,
        log_level="warning",
        log_config=None,
        http="h11",  # TimelyH11 below, once it knows the proxies' addresses
        timeout_keep_alive=KEEP_ALIVE,
        forwarded_allow_ips=forwarded_allow_ips,
        loop="asyncio",  # the loop whose failed accepts say_accept_errors_seldom knows
        # asyncio accepts up to `backlog` connections at a time before any is seen by
        # Admission: uvicorn's 2048 took every descriptor in one go (issue 54 item 2).
        backlog=ACCEPT_BATCH,
    )
    admission = Admission(
        default_max_connections() if max_connections is None else max_connections,
        per_address,
        trusted_proxies(config.forwarded_allow_ips if config.proxy_headers else []),
    )
    deadlines = {h11.IDLE: head_timeout, h11.SEND_BODY: body_timeout}

    class TimelyH11(H11Protocol):
        _timer: asyncio.TimerHandle | None = None
        _waiting_in: object = None  # the client's h11 state while it owes a head or a body
        _admitted: str | None = None  # the client's address, once counted by admission

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            host = self.client[0] if self.client else ""
            if not admission.admit(host):
                self.transport.close()
                return
            self._admitted = host
            self._watch()

        def _watch(self) -> None:
            """The deadline for what the client owes now: a head, the rest of a body, or
            nothing (the app has the whole request); started when that begins."""
            state = self.conn.their_state
            waiting_in = state if state in deadlines else None
            if waiting_in is self._waiting_in or self.transport.is_closing():
                return
            if self._timer is not None:
                self._timer.cancel()
            self._waiting_in, self._timer = waiting_in, None
            if waiting_in is not None:
                self._timer = self.loop.call_later(deadlines[waiting_in], self._too_slow)

        def _too_slow(self) -> None:
            if self.transport.is_closing():
                return
            if self._waiting_in is h11.SEND_BODY and self.conn.our_state is h11.SEND_RESPONSE:
                if self.cycle is not None:  # the app reads no more and answers no one
                    self.cycle.disconnected = True
                    self.cycle.message_event.set()
                self._refuse(408, b"Request Timeout", "the request body came too slowly")
            else:  # no head in time (nothing to answer), or the app answers already
                self.transport.close()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._watch()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._watch()  # the next request's head: its own deadline

        def connection_lost(self, exc: Exception | None) -> None:
            if self._timer is not None:
                self._timer.cancel()
            if self._admitted is not None:
                admission.leave(self._admitted)
                self._admitted = None
            super().connection_lost(exc)

        def send_400_response(self, msg: str) -> None:
            # A request h11 refuses before the app sees it (two Host headers, a bad
            # Content-Length): answered as the app answers, a JSON error with the
            # security headers, not uvicorn's bare text (issue 54 item 7).
            self._refuse(400, b"Bad Request", "invalid HTTP request")

        def _refuse(self, status: int, reason: bytes, error: str) -> None:
            """Answer `status` with the app's JSON `error` and security headers, and close."""
            body = json.dumps({"error": error}).encode()
            headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
            headers += [(b"content-length", str(len(body)).encode()), *SECURITY_HEADERS]
            for event in (
                h11.Response(status_code=status, headers=headers, reason=reason),
                h11.Data(data=body),
                h11.EndOfMessage(),
            ):
                self.transport.write(self.conn.send(event))
            self.transport.close()

    config.http = TimelyH11
    return config


def make_server(app, **settings) -> uvicorn.Server:
    """A uvicorn server of `app` as ``server_config(app, **settings)`` says, whose event
    loop gives up accepting for a while at the first failure for want of resources, and
    says so once in a while (``stop_accepting_when_out``, ``say_accept_errors_seldom``)."""
    import uvicorn

    class Server(uvicorn.Server):
        async def serve(self, sockets: list[socket.socket] | None = None) -> None:
            loop = asyncio.get_running_loop()
            say_accept_errors_seldom(loop)
            stop_accepting_when_out(loop)  # before the server starts accepting
            await super().serve(sockets)

    return Server(server_config(app, **settings))


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
