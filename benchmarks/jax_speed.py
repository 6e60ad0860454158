"""Speed of the game in JAX beside the numpy vector environment, in the same run.

    python benchmarks/jax_speed.py [--batches 4096 65536] [--seconds 5] [--gpu-batches ...]

One quantity on both sides: learner steps per second of ``FiveThousand-v0`` played by
many games at once, 2 players, a random legal learner against the ``random`` bot (a
step is one learner decision, the opponent's turns in between, as in
``benchmarks/vector_speed.py``). numpy: ``gym.make_vec(..., vectorization_mode=
"vector_entry_point")`` with ``agents.batched.BatchedRandomBot`` (one core). JAX:
``envs.jax_env.LearnerEnv`` with ``agents.jax_bots``' random bot on both sides, its step
vmapped over the batch and ``lax.scan``-ned ``--scan`` times in one ``jax.jit`` call
(compilation and a first call excluded). XLA may use every core of the machine ("cpus"
in the output); numpy uses one.

On a GPU (``jax.devices()`` says so) the JAX side also runs ``--gpu-batches`` (up to
the largest that fits), and the output names the device. Issue 45's targets: on CPU at
least the numpy speed at 4,096 games; on one H200-class GPU at least 50 M steps/s.

The last line is one JSON object with ``jax_steps_per_s`` and ``numpy_steps_per_s`` (by
batch size, same run) and ``jax_over_numpy`` (their ratio at each CPU batch).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import jax
from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from agents.jax_bots import jax_bot, random_action  # noqa: E402
from benchmarks.vector_speed import vector_steps_per_second  # noqa: E402
from envs.jax_env import FiveThousandJax, LearnerEnv  # noqa: E402


def jax_steps_per_second(batch: int, seconds: float, scan: int, seed: int = 0) -> float:
    """Learner steps/s of ``LearnerEnv`` (2 players, random vs random), `batch` games."""
    game = FiveThousandJax(2)
    env = LearnerEnv(game, jax_bot("random", game))

    def one(carry, _):
        state, key = carry
        key, k_act, k_env = jax.random.split(key, 3)
        acts = jax.vmap(random_action)(state, jax.random.split(k_act, batch))
        state = jax.vmap(env.step)(state, acts, jax.random.split(k_env, batch))
        return (state, key), None

    @jax.jit
    def run(carry):
        return jax.lax.scan(one, carry, None, length=scan)[0]

    key = jax.random.key(seed)
    state = jax.jit(jax.vmap(env.reset))(jax.random.split(key, batch))
    carry = jax.block_until_ready(run((state, key)))  # compile, then one warm call
    carry = jax.block_until_ready(run(carry))
    calls, start = 0, time.perf_counter()
    while True:
        carry = jax.block_until_ready(run(carry))
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return calls * scan * batch / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[4096, 65536])
    parser.add_argument("--gpu-batches", type=int, nargs="+", default=[65536, 262144, 1048576])
    parser.add_argument("--seconds", type=float, default=5.0, help="time per measure")
    parser.add_argument("--scan", type=int, default=32, help="steps per jitted call")
    args = parser.parse_args(argv)
    if min(args.batches + args.gpu_batches) < 1 or args.seconds <= 0 or args.scan < 1:
        parser.error("batches, --seconds and --scan must be positive")
    console = Console(stderr=True)
    device = jax.devices()[0]
    on_gpu = device.platform == "gpu"
    out: dict = {
        "jax_steps_per_s": {},
        "numpy_steps_per_s": {},
        "jax_over_numpy": {},
        "device": device.device_kind if on_gpu else "cpu",
        "jax": jax.__version__,
        "cpus": os.cpu_count(),
        "cpu": platform.processor() or platform.machine(),
        "players": 2,
        "opponent": "random",
    }
    for batch in args.batches:
        with console.status(f"numpy vector env, {batch:,} games..."):
            numpy_rate = vector_steps_per_second("random", batch, args.seconds)
        with console.status(f"JAX, {batch:,} games..."):
            jax_rate = jax_steps_per_second(batch, args.seconds, args.scan)
        out["numpy_steps_per_s"][str(batch)] = round(numpy_rate)
        out["jax_steps_per_s"][str(batch)] = round(jax_rate)
        out["jax_over_numpy"][str(batch)] = round(jax_rate / numpy_rate, 2)
        console.print(
            f"{batch:>9,} games: JAX {jax_rate:>13,.0f} steps/s, numpy {numpy_rate:>11,.0f} "
            f"steps/s ({jax_rate / numpy_rate:.2f}x)"
        )
    if on_gpu:
        for batch in args.gpu_batches:
            try:
                with console.status(f"JAX on {device.device_kind}, {batch:,} games..."):
                    rate = jax_steps_per_second(batch, args.seconds, args.scan)
            except Exception as e:  # out of memory ends the sweep
                console.print(f"{batch:,} games do not fit: {str(e).splitlines()[0]}")
                break
            out["jax_steps_per_s"][str(batch)] = round(rate)
            console.print(f"{batch:>9,} games on {device.device_kind}: {rate:,.0f} steps/s")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
