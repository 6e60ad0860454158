"""Does an exported planner (.onnx) play exactly as its value net (.npz)?

    python benchmarks/exported_planner_parity.py checkpoints/planner-2p/value_net.npz \
        [--decisions 10000] [--players 2 3 4]

Exports the value net to a temporary .onnx (agents.exporting), then plays seeded games at each
table size in turn (the planner in seat 0, smart, turn-ev and random in the others,
seats rotating by game) and asks both planners at every decision, whoever's it is: the
two must choose the same action. Reports the decisions checked, the disagreements
(with the two plans' value gap of the actions), the near-ties (decisions where the
float32 rounding of the two value functions, about 1e-7, could decide), the largest
difference of win probability between the two value functions over random positions,
and the time taken.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, before numpy loads BLAS
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fivethousand_rl.agents import make_policy  # noqa: E402
from fivethousand_rl.agents.planner import TIE, PlannerBot  # noqa: E402
from fivethousand_rl.envs.driver import play  # noqa: E402
from fivethousand_rl.envs.game import DECIDE, Game  # noqa: E402
from fivethousand_rl.envs.rules import Rules  # noqa: E402

OTHERS = ("smart", "turn-ev", "random")
NEAR = 1e-6  # a best action this close to the next (not tied) could flip in float32


def compare(a: PlannerBot, b: PlannerBot, sizes: Sequence[int], count: int, seed: int = 0) -> dict:
    """Both planners' choices at `count` decisions of real seeded games, table sizes in
    turn: `a` plays one seat (rotating), smart, turn-ev and random the others."""
    rules = a.rules or Rules()
    others = [make_policy(name) for name in OTHERS]
    rng = np.random.default_rng(seed)
    flips: list[float] = []
    tally = {"decisions": 0, "near_ties": 0}

    def check(game: Game) -> bool:
        """Ask both at a decision, whoever's it is; True (stop) once `count` are done."""
        if game.state.phase != DECIDE:
            return False
        mine, theirs = a.act(game, rng), b.act(game, rng)
        values = a.action_values(game)
        if mine != theirs:
            flips.append(values[mine] - values[theirs])
        ranked = sorted(values.values(), reverse=True)
        tally["near_ties"] += len(ranked) > 1 and TIE <= ranked[0] - ranked[1] < NEAR
        tally["decisions"] += 1
        return tally["decisions"] == count

    number = 0
    while tally["decisions"] < count:
        n = sizes[number % len(sizes)]
        seats = [others[(number + k) % len(others)] for k in range(n)]
        seats[number % n] = a
        game = Game(n, rules, seed=np.random.default_rng([seed, number]))
        play(game, seats, rng, until=check)
        number += 1
    return {**tally, "disagreements": len(flips), "value_gaps": flips}


def main(argv: list[str] | None = None) -> int:
    from fivethousand_rl.agents.exporting import export

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("value_net", help="a value net (.npz)")
    p.add_argument("--decisions", type=int, default=10_000)
    p.add_argument("--players", type=int, nargs="+", default=[2, 3, 4])
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        onnx_path = Path(tmp) / "planner.onnx"
        export(args.value_net, onnx_path)
        a, b = make_policy(args.value_net), make_policy(str(onnx_path))
        start = time.perf_counter()
        result = compare(a, b, args.players, args.decisions, args.seed)
        seconds = time.perf_counter() - start
        rules = a.rules or Rules()
        scores = np.r_[0, np.arange(rules.entry, rules.target, 100)]
        sampler = np.random.default_rng(args.seed)
        gap = 0.0  # the largest |P_npz - P_onnx| of the two value functions
        for n in args.players:
            positions = sampler.choice(scores, size=(10_000, n))
            gap = max(gap, float(np.abs(a.value_fn(positions) - b.value_fn(positions)).max()))
    gaps = result["value_gaps"]
    print(
        f"{result['decisions']:,} decisions at {args.players} players ({seconds:.1f} s): "
        f"{result['disagreements']} disagreement(s)"
        + (f", value gaps {min(gaps):.2e}..{max(gaps):.2e}" if gaps else "")
    )
    print(
        f"near-ties (best action within {NEAR:g} of the next, more than {TIE:g}): "
        f"{result['near_ties']}"
    )
    print(f"largest |P_npz - P_onnx| over 10,000 random positions per table size: {gap:.2e}")
    return 0 if result["disagreements"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
