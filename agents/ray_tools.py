"""Ray, for work that outgrows one machine: connecting to a cluster (or starting a local
one) for tournaments (``evaluate.py --ray``) and sweeps (``sweep.py``).

Ray is an optional extra (``pip install -e '.[ray]'``): this module imports it only
inside its functions, and nothing else in the package imports it, so the rest of the
toolkit works without it.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable, Iterator, Sequence
from urllib.parse import urlsplit

from fivethousand_rl.agents.threads import one_thread_per_process

LOCAL = "local"  # the --ray value that starts a private Ray instance on this machine
CONNECT_TIMEOUT_S = 5.0  # ray.init itself may wait a minute on an address nobody answers


def require_ray():
    """The ray module, or a one-line ValueError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ValueError(
            "Ray is not installed: pip install -e '.[ray]' (or use local workers)"
        ) from None
    return ray


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Fail fast, in one line, when `address` is not HOST:PORT or ray://HOST:PORT, or when
    nothing answers there (Ray would retry for a minute and then print pages)."""
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        port = parts.port
    except ValueError:
        port = None
    if not parts.hostname or port is None:
        raise ValueError(
            f"--ray {address!r}: give HOST:PORT (the head's address, e.g. 10.0.0.5:6379), "
            f"ray://HOST:PORT, 'auto' (the cluster started on this machine) or nothing "
            f"(a local Ray)"
        )
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout).close()
    except OSError as e:
        raise ValueError(
            f"cannot reach a Ray cluster at {address}: {e.strerror or e} (is `ray start "
            f"--head` running there, and the port open?)"
        ) from None


def connect(address: str | None = None, num_cpus: int | None = None):
    """Start or join Ray and return the ray module. `address` None or "local": a
    private local instance with `num_cpus` CPUs (all of this machine's when None);
    "auto": the cluster already started on this machine (``ray start --head``);
    otherwise the head's HOST:PORT or ray://HOST:PORT. Joining a running Ray in this
    process again is a no-op. Errors: ValueError, one line."""
    ray = require_ray()
    if ray.is_initialized():
        return ray
    quiet = {"log_to_driver": False, "configure_logging": False}  # Ray's logs: not on ours
    try:
        if address in (None, LOCAL):
            # Ray starts its workers at nice 15: beside any other work on the machine (a
            # training, a test suite) they crawl (torch took 38 s to import, 2 s at 0).
            os.environ.setdefault("RAY_worker_niceness", "0")
            # Workers must import this checkout (installed in editable mode); the working
            # directory makes relative checkpoint paths mean the same there.
            env = {"env_vars": {"PYTHONPATH": os.getcwd()}}
            ray.init(num_cpus=num_cpus, include_dashboard=False, runtime_env=env, **quiet)
        else:
            if address != "auto":
                check_reachable(address)
            ray.init(address=address, **quiet)
    except ConnectionError as e:
        raise ValueError(f"cannot join Ray at {address}: {str(e).splitlines()[0]}") from None
    return ray


@contextlib.contextmanager
def session(address: str | None = None, num_cpus: int | None = None) -> Iterator:
    """``connect`` for a with block: a Ray this call started (or a cluster it joined)
    is left again at the block's end; one this process had joined already stays."""
    ray = require_ray()
    joined = ray.is_initialized()
    if joined and address not in (None, LOCAL, "auto"):
        check_reachable(address)  # connect would not look at it: say now that it is wrong
    ray = connect(address, num_cpus)
    try:
        yield ray
    finally:
        if not joined:
            ray.shutdown()


def cluster_cpus() -> int:
    """CPUs of the Ray cluster this process is connected to."""
    import ray

    return max(1, int(ray.cluster_resources().get("CPU", 1)))


class _Worker:
    """One actor: `init(*initargs)` once (a tournament's agents, checkpoints loaded once
    per actor, as a local worker process does), then `play(task)` per task."""

    def __init__(self, init: Callable, initargs: tuple, play: Callable) -> None:
        one_thread_per_process()  # it holds one CPU (num_cpus=1): one thread
        init(*initargs)
        self._play = play

    def play(self, task):
        return self._play(task)


def _cause(error: Exception) -> str:
    """One line for an error raised on a Ray worker: its original exception."""
    cause = getattr(error, "cause", None)  # a task's error; an actor's set-up has none
    if cause is not None:
        text = str(cause).strip()
        return f"{type(cause).__name__}: {text.splitlines()[0]}" if text else type(cause).__name__
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__


def map_on_actors(
    init: Callable, initargs: tuple, play: Callable, tasks: Sequence, actors: int | None = None
) -> Iterator:
    """`play(task)` for every task, on Ray actors (each set up once by `init(*initargs)`,
    one CPU each), yielding the results as tasks finish, in no fixed order. `actors`:
    how many (at most one per task and per CPU of the cluster, where more would wait
    for ever); None: one per CPU. Needs ``connect`` first. A task or an actor's set-up
    that fails on Ray: RuntimeError, one line."""
    import ray
    from ray.util import ActorPool

    count = min(actors or cluster_cpus(), cluster_cpus(), len(tasks))
    if count < 1:
        return
    worker = ray.remote(num_cpus=1)(_Worker)
    handles = [worker.remote(init, initargs, play) for _ in range(count)]
    try:
        pool = ActorPool(handles)
        yield from pool.map_unordered(lambda actor, task: actor.play.remote(task), tasks)
    except ray.exceptions.RayError as e:  # Ray's message holds the worker's traceback
        raise RuntimeError(f"a Ray worker failed: {_cause(e)}") from None
    finally:  # free their CPUs now (and stop them if the caller gave up early)
        for actor in handles:
            ray.kill(actor)
