"""How fast ``Game.clone()`` copies a game, against ``copy.deepcopy`` in the same run.

    python benchmarks/clone_speed.py [--seconds 1.0]

Search copies the game at every node, so the copy's speed is a search's speed. Each
line times both copies of one game, on one core, best of five rounds: a fresh game
(deepcopy's best case: nothing drawn yet), a 2-player game in the middle of a turn (the
dice buffer full) and an 8-player one. Target (issue 41): clone at least 5x deepcopy,
and at least about 82,000 copies/s (a field-by-field copy on the issue's machine).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, before numpy loads BLAS
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import copy  # noqa: E402
import sys  # noqa: E402
import timeit  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fivethousand_rl.envs.game import DECIDE, Game  # noqa: E402


def per_second(copy_once: Callable[[], object], seconds: float) -> float:
    """Copies per second: the best of five rounds of about `seconds` / 5 each."""
    timer = timeit.Timer(copy_once)
    number, _ = timer.autorange()
    number = max(1, int(number * seconds / 5 / max(timer.timeit(number), 1e-9)))
    return number / min(timer.repeat(repeat=5, number=number))


def mid_turn(n_players: int, seed: int) -> Game:
    """A game played by random legal actions until a decision some steps in."""
    game, rng = Game(n_players, seed=seed), np.random.default_rng(seed)
    for step in range(10_000):
        if game.state.phase == DECIDE:
            if step > 40 and game.state.held:
                return game
            legal = game.legal_actions()
            game.act(legal[int(rng.integers(len(legal)))])
        elif game.over:
            game = Game(n_players, seed=seed + step)
        else:
            game.roll()
    raise RuntimeError("no decision in the middle of a turn came")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    args = parser.parse_args(argv)
    games = {
        "fresh game, 2 players": Game(2, seed=0),
        "2 players, mid-turn": mid_turn(2, 1),
        "8 players, mid-turn": mid_turn(8, 2),
    }
    print(f"{'game':<24}{'clone/s':>12}{'deepcopy/s':>13}{'ratio':>8}")
    ratios = []
    for name, game in games.items():
        fast = per_second(game.clone, args.seconds)
        slow = per_second(lambda game=game: copy.deepcopy(game), args.seconds)
        ratios.append(fast / slow)
        print(f"{name:<24}{fast:>12,.0f}{slow:>13,.0f}{fast / slow:>7.1f}x")
    print(f"smallest ratio: {min(ratios):.1f}x (target: at least 5x)")


if __name__ == "__main__":
    main()
