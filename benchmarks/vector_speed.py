"""Speed of the batched engine: the vector environment and whole batched games, on one core.

    python benchmarks/vector_speed.py [--seconds 3] [--num-envs 4096] [--json out.json]

Targets (issue 12): the vector environment with 4,096 games, random legal learner
actions, >= 30x the steps/s of Gymnasium's Blackjack-v1 (one env via gym.make, measured
in the same run) with threshold:350 opponents and >= 15x with optimal opponents; whole
games of scripted bots, every seat batched, >= 20,000 games/s. A vector step counts as
num_envs steps (one decision of each game, with the opponents' turns in between, as in
FiveThousand-v0). The per-game figures of the same games are measured beside them.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import fivethousand_rl.envs  # noqa: E402, F401 - registers FiveThousand-v0
from benchmarks.speed import (  # noqa: E402
    engine_games_per_second,
    env_steps_per_second,
    per_second,
    print_targets,
)
from fivethousand_rl.agents import make_policy  # noqa: E402
from fivethousand_rl.agents.batched import BatchedRandomBot  # noqa: E402
from fivethousand_rl.envs.batch import play_games  # noqa: E402
from fivethousand_rl.envs.rules import Rules  # noqa: E402

MATCHES = (
    ("threshold:350", "threshold:350"),
    ("smart", "turn-ev"),
    ("smart", "threshold:350"),
    ("optimal", "smart"),
)


def vector_steps_per_second(opponent: str, num_envs: int, seconds: float) -> float:
    """Game steps/s of the vector env (num_envs per step), random legal learner actions."""
    bot = make_policy(opponent)
    bot.prepare(Rules())  # the optimal solution: solved or loaded before timing
    env = gym.make_vec(
        "FiveThousand-v0", num_envs=num_envs, vectorization_mode="vector_entry_point", opponents=bot
    )
    env.reset(seed=0)
    learner, rng = BatchedRandomBot(), np.random.default_rng(0)
    games, rows = env.unwrapped.games, np.arange(num_envs)
    for _ in range(5):  # warm up (tables are built on first use)
        env.step(learner.act_batch(games, rows, rng))
    return num_envs * per_second(seconds, lambda _: env.step(learner.act_batch(games, rows, rng)))


def batched_games_per_second(names: tuple[str, str], seconds: float, width: int) -> float:
    """Whole games/s, every seat batched, `width` games at a time (2 players)."""
    bots = [make_policy(n) for n in names]
    play_games(width, bots, Rules(), np.random.default_rng(0), width=width)  # warm up
    n = 4 * width
    return n * per_second(
        seconds, lambda i: play_games(n, bots, Rules(), np.random.default_rng(i * n), width=width)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measure")
    parser.add_argument("--num-envs", type=int, default=4096, help="games per vector env")
    parser.add_argument("--width", type=int, default=4096, help="games at a time, batched games")
    parser.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    args = parser.parse_args()
    console = Console()
    rows = []  # (measure, value, target)
    with console.status("Blackjack-v1 (reference)..."):
        blackjack = env_steps_per_second("Blackjack-v1", args.seconds, masked=False)
    rows.append(("Blackjack-v1 steps/s (reference, gym.make)", blackjack, None))
    for opponent, target in (("threshold:350", 30), ("optimal", 15)):
        with console.status(f"vector env, {opponent} opponents..."):
            rate = vector_steps_per_second(opponent, args.num_envs, args.seconds)
        rows.append((f"vector env ({args.num_envs} games), {opponent}: steps/s", rate, None))
        rows.append((f"  / Blackjack-v1 ({opponent}), x", rate / blackjack, (">=", target)))
    for names in MATCHES:
        label = " vs ".join(names)
        with console.status(f"batched games, {label}..."):
            batched = batched_games_per_second(names, args.seconds, args.width)
        with console.status(f"per-game games, {label}..."):
            single = engine_games_per_second(args.seconds, names)
        target = (">=", 20_000) if "optimal" not in names else None
        rows.append((f"batched games/s, {label}", batched, target))
        rows.append((f"  per-game games/s, {label} (reference)", single, None))
    title = f"batched 5000, one core ({platform.machine()}, Python {platform.python_version()})"
    print_targets(console, title, rows)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                [{"measure": n, "value": v, "target": t and t[1]} for n, v, t in rows], indent=2
            )
        )


if __name__ == "__main__":
    main()
