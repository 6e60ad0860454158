"""Threads and CPUs of parallel work: worker processes (tournament pools, the planner
trainer's pool, SB3's subprocess environments, Ray actors and sweep trials) each run one
thread of numeric work, since their parallelism is the workers themselves; and how many
CPUs this process may use, for capping worker counts.

Why: numpy's BLAS (OpenBLAS) and torch each start a pool of threads as wide as the
machine in every process. N workers on N cores then run N times N busy threads, and the
small matrix products of a game spin and wait on each other: two planner workers on 2
cores played 27 times slower than one (issue 28 item 7).
"""

from __future__ import annotations

import os
import sys

from threadpoolctl import threadpool_limits

# Read by OpenMP (torch's pool), OpenBLAS and MKL when they load: libraries this process
# loads after the call, and those of its child processes.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def one_thread_per_process() -> None:
    """Limit this process to one thread of numeric work: the BLAS and OpenMP pools
    already loaded (threadpoolctl), torch's if torch is loaded (importing it is left to
    the processes that need it), and, through the environment, the ones loaded later.
    For worker processes only, in their initializer: it lasts for the process's life."""
    for name in THREAD_VARIABLES:
        os.environ[name] = "1"
    threadpool_limits(1)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity where the system says (a container
    or ``taskset`` may allow fewer than the machine has), else the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity call
        return os.cpu_count() or 1
