"""Speed of the engine, FiveThousand-v0, tournaments and the exact solver, on one core.

    python benchmarks/speed.py [--seconds 3] [--json out.json]

Targets: FiveThousand-v0 >= 1.5x the steps/s of Gymnasium's Blackjack-v1 measured in
the same run; raw engine >= 1,000 games/s (threshold:350 x2); scripted bot against
scripted bot >= 1,000 games/s; optimal against smart >= 300 games/s; the exact
2-player solve <= 10 s; an exported bot's decision <= 1 ms (median; the SB3 checkpoint
it came from is timed beside it). Everything runs in this one process, so it measures one core;
Blackjack-v1's figure is also a yardstick of the machine's speed.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # export.py lives there
import fivethousand_rl.envs  # noqa: E402, F401 - registers FiveThousand-v0
from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.optimal import two_player_solution
from fivethousand_rl.agents.tournament import play_game
from fivethousand_rl.envs.driver import play
from fivethousand_rl.envs.game import DECIDE, Game
from fivethousand_rl.envs.rules import Rules
from fivethousand_rl.envs.solver import solve_two_player


def env_steps_per_second(env_id: str, seconds: float, masked: bool, **kwargs) -> float:
    """Steps/s of `env_id` made with gymnasium.make, playing random (legal) actions."""
    env = gym.make(env_id, **kwargs)
    env.reset(seed=0)
    env.action_space.seed(0)
    rng = np.random.default_rng(0)
    masks = env.unwrapped.action_masks if masked else None

    def thousand_steps(_: int) -> None:
        for _ in range(1000):
            if masks is not None:
                legal = np.flatnonzero(masks())
                action = legal[rng.integers(len(legal))]
            else:
                action = env.action_space.sample()
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()

    return 1000 * per_second(seconds, thousand_steps)


def per_second(seconds: float, one: Callable[[int], object]) -> float:
    """How many times per second `one(0)`, `one(1)`, ... run, over `seconds`."""
    count = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        one(count)
        count += 1
    return count / (time.perf_counter() - start)


def engine_games_per_second(seconds: float, names=("threshold:350", "threshold:350")) -> float:
    """Whole games/s of the raw engine (``envs.driver.play``, one game at a time), two
    players: the bots `names`."""
    players = [make_policy(name) for name in names]
    for player in players:
        player.prepare(Rules())  # the optimal solution: solved or loaded before timing
    rng = np.random.default_rng(0)
    return per_second(seconds, lambda games: play(Game(2, seed=games), players, rng))


def tournament_games_per_second(a: str, b: str, seconds: float) -> float:
    """Games/s of `a` against `b` through the tournament runner, seats alternating."""
    pa, pb = make_policy(a), make_policy(b)
    seats = [[pa, pb], [pb, pa]]
    return per_second(seconds, lambda games: play_game(seats[games % 2], Rules(), [0, games]))


def decision_latency(policy, states: list[Game], rng) -> float:
    """Median seconds per decision of `policy` over `states`."""
    times = []
    for game in states:
        start = time.perf_counter()
        policy.act(game, rng)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def sample_states(n: int) -> list[Game]:
    """Copies of decision states from smart-vs-turn-ev games."""
    states: list[Game] = []

    def keep(game: Game) -> bool:  # `play`'s stop test, asked before every step
        if game.state.phase == DECIDE:
            states.append(game.clone())
        return len(states) >= n

    bots = [make_policy(name) for name in ("smart", "turn-ev")]
    rng = np.random.default_rng(0)
    g = 0
    while len(states) < n:
        play(Game(2, seed=g), bots, rng, until=keep)
        g += 1
    return states


def exported_latency(checkpoint: Path, n_states: int = 2000) -> tuple[float, float]:
    """(exported bot, SB3 checkpoint) median decision latency, seconds."""
    import tempfile

    from fivethousand_rl.agents.exported import ExportedBot
    from fivethousand_rl.agents.exporting import export

    states = sample_states(n_states)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        onnx_path = Path(tmp) / "bot.onnx"
        export(checkpoint, onnx_path)
        exported = decision_latency(ExportedBot(onnx_path), states, rng)
    sb3 = decision_latency(make_policy(str(checkpoint)), states, rng)
    return exported, sb3


def print_targets(
    console: Console, title: str, rows: list[tuple[str, float, tuple[str, float] | None]]
) -> None:
    """Print `rows` (measure, value, target: None or (">=" or "<=", bound)) as a table
    that says whether each target is met."""
    table = Table(title=title)
    for column in ("measure", "value", "target", "met"):
        table.add_column(column)
    for name, value, target in rows:
        shown = f"{value:.3g}" if value < 100 else f"{value:,.0f}"
        if target is None:
            table.add_row(name, shown, "", "")
            continue
        sign, bound = target
        met = value >= bound if sign == ">=" else value <= bound
        table.add_row(name, shown, f"{sign} {bound:,}", "yes" if met else "NO")
    console.print(table)


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
    two_player_solution(Rules())  # load (or solve and cache) before timing optimal play
    pairings = [("smart", "turn-ev"), ("smart", "threshold:350"), ("optimal", "smart")]
    games = {}
    for a, b in pairings:
        with console.status(f"measuring {a} vs {b}..."):
            games[f"{a} vs {b}"] = tournament_games_per_second(a, b, args.seconds)
    with console.status("solving the 2-player game from scratch..."):
        start = time.perf_counter()
        solve_two_player(Rules())
        solve = time.perf_counter() - start
    shipped = Path(__file__).resolve().parent.parent / "checkpoints" / "ppo-2p" / "model.zip"
    with console.status("timing the exported bot's decisions..."):
        exported, sb3 = exported_latency(shipped)
    rows = [
        ("Blackjack-v1 steps/s (reference)", blackjack, None),
        ("FiveThousand-v0 steps/s", ours, None),
        ("FiveThousand-v0 / Blackjack-v1", ours / blackjack, (">=", 1.5)),
        ("engine games/s, threshold:350 x2", engine, (">=", 1000)),
        ("smart vs turn-ev games/s", games["smart vs turn-ev"], (">=", 1000)),
        ("smart vs threshold:350 games/s", games["smart vs threshold:350"], (">=", 1000)),
        ("optimal vs smart games/s", games["optimal vs smart"], (">=", 300)),
        ("exact 2-player solve, seconds", solve, ("<=", 10)),
        ("SB3 checkpoint decision, median ms (reference)", sb3 * 1000, None),
        ("exported bot decision, median ms", exported * 1000, ("<=", 1)),
    ]
    print_targets(console, "5000-RL speed (one core)", rows)
    results = {name: value for name, value, _ in rows}
    results["machine"] = platform.processor() or platform.machine()
    results["python"] = platform.python_version()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
