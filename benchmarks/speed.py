"""Speed of the engine and of FiveThousand-v0, as ratios to a reference measured in the
same run (issue targets: env >= 1.5x Blackjack-v1 steps/s; engine >= 1,000 games/s).

    python benchmarks/speed.py [--seconds 3] [--json out.json]

Everything runs in this one process, so it measures one core.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import gymnasium as gym
import numpy as np
from rich.console import Console
from rich.table import Table

import envs  # noqa: F401 - registers FiveThousand-v0
from agents import make_policy
from envs.game import ROLL, Game


def env_steps_per_second(env_id: str, seconds: float, masked: bool, **kwargs) -> float:
    """Steps/s of `env_id` made with gymnasium.make, playing random (legal) actions."""
    env = gym.make(env_id, **kwargs)
    env.reset(seed=0)
    env.action_space.seed(0)
    rng = np.random.default_rng(0)
    masks = env.unwrapped.action_masks if masked else None
    steps = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(1000):
            if masks is not None:
                legal = np.flatnonzero(masks())
                action = legal[rng.integers(len(legal))]
            else:
                action = env.action_space.sample()
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()
        steps += 1000
        now = time.perf_counter()
        if now >= deadline:
            return steps / (now - start)


def engine_games_per_second(seconds: float, bot: str = "threshold:350") -> float:
    """Whole games/s of the raw engine, `bot` against itself, two players."""
    players = [make_policy(bot), make_policy(bot)]
    rng = np.random.default_rng(0)
    games = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        game = Game(2, seed=games)
        state = game.state
        while state.phase != "over":
            if state.phase == ROLL:
                game.roll()
            else:
                game.act(players[state.current].act(game, rng))
        games += 1
    return games / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    console = Console()
    with console.status("measuring Blackjack-v1 (reference)..."):
        blackjack = env_steps_per_second("Blackjack-v1", args.seconds, masked=False)
    with console.status("measuring FiveThousand-v0..."):
        ours = env_steps_per_second(
            "FiveThousand-v0", args.seconds, masked=True, opponents="random"
        )
    with console.status("measuring the engine..."):
        engine = engine_games_per_second(args.seconds)
    results = {
        "blackjack_steps_per_s": blackjack,
        "fivethousand_steps_per_s": ours,
        "env_ratio_to_blackjack": ours / blackjack,
        "engine_games_per_s": engine,
        "machine": platform.processor() or platform.machine(),
        "python": platform.python_version(),
    }
    table = Table(title="5000-RL speed (one core)")
    for col in ("measure", "value", "target", "met"):
        table.add_column(col)
    table.add_row("Blackjack-v1 steps/s (reference)", f"{blackjack:,.0f}", "", "")
    table.add_row("FiveThousand-v0 steps/s", f"{ours:,.0f}", "", "")
    ratio_ok = ours / blackjack >= 1.5
    table.add_row(
        "FiveThousand-v0 / Blackjack-v1",
        f"{ours / blackjack:.2f}x",
        ">= 1.5x",
        "yes" if ratio_ok else "NO",
    )
    engine_ok = engine >= 1000
    table.add_row(
        "engine games/s, threshold:350 x2",
        f"{engine:,.0f}",
        ">= 1,000",
        "yes" if engine_ok else "NO",
    )
    console.print(table)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
