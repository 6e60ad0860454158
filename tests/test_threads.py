"""One thread of numeric work per worker process (issue 28 item 7), asked from inside
each kind of worker: a tournament's spawned pool, the planner trainer's forked pool, an
SB3 subprocess environment and a Ray actor's set-up; and worker counts capped at the
CPUs (issue 28 item 11)."""

import functools
import multiprocessing
import os
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from fivethousand_rl.agents import ray_tools, threads
from fivethousand_rl.agents import tournament as tour
from fivethousand_rl.envs.rules import Rules

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A worker's own BLAS and OpenMP pools start as wide as its CPUs: on one CPU every
# worker would pass without any limit.
needs_cpus = pytest.mark.skipif(
    threads.usable_cpus() < 2, reason="one CPU: every pool has one thread anyway"
)


def thread_limits(*_task) -> dict:
    """What the process running this allows: each BLAS and OpenMP pool's threads, and
    torch's (None when torch is not loaded). Sent to workers as a task or a method."""
    pools = {f"{p['internal_api']} {p['filepath']}": p["num_threads"] for p in threadpool_info()}
    torch = sys.modules.get("torch")
    return {"pools": pools, "torch": torch.get_num_threads() if torch else None}


def fresh_defaults(monkeypatch) -> None:
    """Spawned workers start from this environment: no thread variables in it, so that
    their pools would take every CPU unless the worker limits them."""
    for name in threads.THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@contextmanager
def wide_parent() -> Iterator[None]:
    """This process's BLAS, OpenMP and torch pools two threads wide for the block (and
    torch loaded): what a forked worker inherits unless it limits itself."""
    import torch

    threads_before = torch.get_num_threads()
    with threadpool_limits(2):
        torch.set_num_threads(2)
        try:
            assert set(thread_limits()["pools"].values()) == {2}
            yield
        finally:
            torch.set_num_threads(threads_before)


def assert_one_thread(limits: dict, torch_loaded: bool) -> None:
    assert limits["pools"] and set(limits["pools"].values()) == {1}, limits
    assert (limits["torch"] is not None) == torch_loaded, limits
    assert limits["torch"] in (None, 1), limits


@needs_cpus
def test_a_tournament_worker_runs_one_thread(monkeypatch):
    """issue 28 item 7: the spawned pool's workers (evaluate.py --workers, ship.py)."""
    fresh_defaults(monkeypatch)
    initargs = (["smart"], Rules(), 0, 1000)
    [limits] = tour._in_processes(initargs, thread_limits, [0], workers=2)
    assert_one_thread(limits, torch_loaded=False)


@needs_cpus
def test_a_planner_trainer_worker_runs_one_thread():
    """issue 28 item 7: train_planner.py --workers N, a forked pool."""
    from fivethousand_rl.agents.training import value_iteration as vi
    from fivethousand_rl.agents.value_net import ValueNet

    cfg = vi.PlannerConfig(workers=2, eval_tables=["smart"])  # no bot to solve or load
    net = ValueNet.load(os.path.join(ROOT, "checkpoints/planner-2p/value_net.npz"))
    with wide_parent():
        every = vi._in_workers(cfg, net, thread_limits, [0, 1, 2, 3])
    for limits in every:
        assert_one_thread(limits, torch_loaded=True)


@needs_cpus
def test_a_subprocess_environment_runs_one_thread(monkeypatch):
    """issue 28 item 7: train.py's vec_env: subproc workers. Forked here (SB3 forks a
    server: each worker then imports torch, seconds)."""
    from stable_baselines3.common import vec_env

    from fivethousand_rl.agents.training.config import TrainConfig
    from fivethousand_rl.agents.training.model import make_vec_env

    forked = functools.partial(vec_env.SubprocVecEnv, start_method="fork")
    monkeypatch.setattr(vec_env, "SubprocVecEnv", forked)
    config = TrainConfig(vec_env="subproc", n_envs=1, n_steps=8, batch_size=8)
    config.validate()
    with wide_parent():
        vec = make_vec_env(config)
    try:
        # A function set as the environment's attribute is called there, without self.
        vec.set_attr("thread_limits", thread_limits)
        [limits] = vec.env_method("thread_limits")
    finally:
        vec.close()
    assert_one_thread(limits, torch_loaded=True)


def actor_limits(*_task) -> dict:
    """A Ray actor's set-up, without Ray (``fivethousand_rl.agents.ray_tools._Worker``), then
    ``thread_limits`` as its task."""
    actor = ray_tools._Worker(tour._init_worker, (["smart"], Rules(), 0, 1000), thread_limits)
    return actor.play(0)


@needs_cpus
def test_a_ray_actor_runs_one_thread():
    """issue 28 item 7: evaluate.py --ray's actors. Ray gives an actor of one CPU
    OMP_NUM_THREADS=1 only where the environment does not set it; the actor limits
    itself whatever it inherits. Forked, without Ray (its actors take seconds)."""
    with wide_parent(), ProcessPoolExecutor(1, multiprocessing.get_context("fork")) as pool:
        limits = pool.submit(actor_limits).result()
    assert_one_thread(limits, torch_loaded=True)


@pytest.mark.parametrize(
    ("asked", "cpus", "count", "note"),
    [
        (None, 2, 2, None),  # one per CPU
        (1, 2, 1, None),
        (2, 2, 2, None),
        (10_000, 2, 2, "10000 workers asked, 2 CPUs usable here: 2 workers"),
        (3, 1, 1, "3 workers asked, 1 CPU usable here: 1 worker"),
    ],
)
def test_workers_are_capped_at_the_cpus_with_a_note(monkeypatch, asked, cpus, count, note):
    """issue 28 item 11: evaluate.py --workers 10000 (and ship.py's evaluations)."""
    monkeypatch.setattr(tour, "usable_cpus", lambda: cpus)
    assert tour.worker_count(asked) == (count, note)


@pytest.mark.parametrize("affinity", [True, False], ids=["affinity", "no affinity call"])
def test_usable_cpus_are_the_affinity_else_the_machine(monkeypatch, affinity):
    """issue 28 item 11: a process allowed fewer CPUs than the machine has uses those."""
    if affinity:
        monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0}, raising=False)
        expected = 1
    else:
        monkeypatch.delattr(os, "sched_getaffinity", raising=False)
        expected = os.cpu_count()
    assert threads.usable_cpus() == expected
