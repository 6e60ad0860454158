"""Speed of the game in JAX beside the numpy vector environment, in the same run.

    python benchmarks/jax_speed.py [--batches 4096 65536] [--seconds 5] [--scan 8]

Two JAX measures, each with ``--scan`` steps ``lax.scan``-ned in one ``jax.jit`` call
(compilation and a first call excluded), 2 players, random legal actions:

- ``jax_steps_per_s``, pgx's measure: the game vmapped over the batch in self-play,
  every seat's decision one step (``decide`` then ``resolve``: the rolls between
  decisions inside it), a game that ends dealt anew in the same step.
- ``jax_learner_steps_per_s``: ``fivethousand_rl.envs.jax_env.LearnerEnv``, one learner against the
  ``random`` JAX bot, a step being one learner decision with the opponent's turns in
  between: the quantity the numpy side measures, and what PPO in JAX steps.

numpy: ``gym.make_vec(..., vectorization_mode="vector_entry_point")`` with
``agents.batched.BatchedRandomBot`` (``benchmarks/vector_speed.py``; one core). XLA may
use every core of the machine ("cpus" in the output).

On a GPU (``jax.devices()`` says so) the JAX self-play measure also runs
``--gpu-batches`` (until one does not fit), and the output names the device. Issue 45's
targets: on CPU at least the numpy speed at 4,096 games; on one H200-class GPU at least
50 M steps/s.

The two kinds of step differ: a self-play step is one decision of one seat, while a
numpy (or learner env) step is one learner decision plus the opponent's whole turn. The
last line is one JSON object: the three rates by batch size, ``jax_over_numpy``
(self-play JAX over numpy, the comparison the issue's target names) and
``jax_learner_over_numpy`` (the like-for-like one), at each CPU batch.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.vector_speed import vector_steps_per_second  # noqa: E402
from fivethousand_rl.agents.jax_bots import jax_bot, random_action  # noqa: E402
from fivethousand_rl.envs.jax_env import FiveThousandJax, LearnerEnv, State  # noqa: E402


def selfplay_steps_per_second(batch: int, seconds: float, scan: int, seed: int = 0) -> float:
    """Steps/s of the game in self-play (2 players, random legal actions), `batch`
    games: each step ``decide`` then ``resolve`` (what ``step`` does for a legal
    action), a game that the decision ends dealt anew (``new_game``) before the dice
    roll, so one loop of rolls serves both (``init`` for every lane at every step, as
    pgx's ``auto_reset`` does it, costs about a third of the speed)."""
    game = FiveThousandJax(2)

    def step_or_restart(state: State, action, key) -> State:
        after = game.decide(state, action)
        ended = after.terminated | after.truncated
        dealt = jax.tree.map(lambda new, old: jnp.where(ended, new, old), game.new_game(), after)
        return game.resolve(dealt, key)

    return _rate(game.init, step_or_restart, batch, seconds, scan, seed)


def learner_steps_per_second(batch: int, seconds: float, scan: int, seed: int = 0) -> float:
    """Learner steps/s of ``LearnerEnv`` (2 players, random vs random), `batch` games."""
    game = FiveThousandJax(2)
    env = LearnerEnv(game, jax_bot("random", game))
    return _rate(env.reset, env.step, batch, seconds, scan, seed)


def _rate(reset, step, batch: int, seconds: float, scan: int, seed: int) -> float:
    """Steps/s of `step` vmapped over `batch` lanes, random legal actions, `scan` steps
    per jitted call."""

    def one(carry, _):
        state, key = carry
        key, k_act, k_env = jax.random.split(key, 3)
        acts = jax.vmap(random_action)(state, jax.random.split(k_act, batch))
        state = jax.vmap(step)(state, acts, jax.random.split(k_env, batch))
        return (state, key), None

    @jax.jit
    def run(carry):
        return jax.lax.scan(one, carry, None, length=scan)[0]

    key = jax.random.key(seed)
    state = jax.jit(jax.vmap(reset))(jax.random.split(key, batch))
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
    parser.add_argument("--scan", type=int, default=8, help="steps per jitted call")
    args = parser.parse_args(argv)
    if min(args.batches + args.gpu_batches) < 1 or args.scan < 1:
        parser.error("batches and --scan must be positive")
    if not (math.isfinite(args.seconds) and args.seconds > 0):
        parser.error(f"--seconds must be a positive number, got {args.seconds}")
    console = Console(stderr=True)
    device = jax.devices()[0]
    on_gpu = device.platform == "gpu"
    out: dict = {
        "jax_steps_per_s": {},
        "jax_learner_steps_per_s": {},
        "numpy_steps_per_s": {},
        "jax_over_numpy": {},
        "jax_learner_over_numpy": {},
        "device": device.device_kind if on_gpu else "cpu",
        "jax": jax.__version__,
        "cpus": os.cpu_count(),
        "cpu": platform.processor() or platform.machine(),
        "players": 2,
        "actions": "random legal",
    }
    for batch in args.batches:
        with console.status(f"numpy vector env, {batch:,} games..."):
            numpy_rate = vector_steps_per_second("random", batch, args.seconds)
        with console.status(f"JAX self-play, {batch:,} games..."):
            jax_rate = selfplay_steps_per_second(batch, args.seconds, args.scan)
        with console.status(f"JAX learner env, {batch:,} games..."):
            learner_rate = learner_steps_per_second(batch, args.seconds, args.scan)
        out["numpy_steps_per_s"][str(batch)] = round(numpy_rate)
        out["jax_steps_per_s"][str(batch)] = round(jax_rate)
        out["jax_learner_steps_per_s"][str(batch)] = round(learner_rate)
        out["jax_over_numpy"][str(batch)] = round(jax_rate / numpy_rate, 2)
        out["jax_learner_over_numpy"][str(batch)] = round(learner_rate / numpy_rate, 3)
        console.print(
            f"{batch:>9,} games: JAX self-play {jax_rate:>12,.0f} steps/s, JAX learner env "
            f"{learner_rate:>10,.0f}, numpy vector env {numpy_rate:>10,.0f} "
            f"(self-play {jax_rate / numpy_rate:.2f}x numpy)"
        )
    if on_gpu:
        for batch in args.gpu_batches:
            try:
                with console.status(f"JAX on {device.device_kind}, {batch:,} games..."):
                    rate = selfplay_steps_per_second(batch, args.seconds, args.scan)
            except Exception as e:  # out of memory ends the sweep
                console.print(f"{batch:,} games do not fit: {str(e).splitlines()[0]}")
                break
            out["jax_steps_per_s"][f"gpu:{batch}"] = round(rate)
            console.print(f"{batch:>9,} games on {device.device_kind}: {rate:,.0f} steps/s")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
