"""An exported ONNX bot's evaluation beside its torch checkpoint's, in one run (issue 53):
the same tournament (``fivethousand_rl.agents.tournament``, batched, as evaluate.py
plays it) for the .onnx bot and for the .zip checkpoint it was exported from, each
against the same opponent with the same workers, timed in turns (the best of
--repeats for each).

    python benchmarks/onnx_evaluation.py                  # ppo-2p against smart, 4,000 games
    python benchmarks/onnx_evaluation.py --games 4000 --workers 1 --repeats 3

Target: the ONNX bot's games take no more than 1.5x the checkpoint's ("ratio_first": the
first tournament of each, as one evaluate.py run plays it, the opponent's tables made
beforehand; "ratio_best": the best of the repeats, once torch has seen every batch
shape). Loading is not timed (torch's import alone takes seconds).
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fivethousand_rl.agents import make_policy  # noqa: E402
from fivethousand_rl.agents.tournament import run, schedule  # noqa: E402
from fivethousand_rl.envs.rules import Rules  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TARGET_RATIO = 1.5


def timed(players: list, args: argparse.Namespace) -> tuple[float, list]:
    """Seconds of one tournament of `players` (made already), and its results."""
    start = time.perf_counter()
    results = run(players, schedule(2, 2, args.games), Rules(), args.seed, args.workers)
    return time.perf_counter() - start, results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(ROOT / "checkpoints" / "ppo-2p" / "model.zip"))
    p.add_argument("--onnx", help="its export (default: the .onnx beside --model)")
    p.add_argument("--opponent", default="smart")
    p.add_argument("--games", type=int, default=4000)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    onnx = args.onnx or str(Path(args.model).with_suffix(".onnx"))
    paths = {"torch": make_policy(args.model), "onnx": make_policy(onnx)}  # loading: not timed
    timed([make_policy(args.opponent)] * 2, argparse.Namespace(**{**vars(args), "games": 2}))
    times: dict[str, list[float]] = {kind: [] for kind in paths}
    results = {}
    for _ in range(args.repeats):  # in turns: a busy moment slows both
        for kind, model in paths.items():
            took, results[kind] = timed([model, make_policy(args.opponent)], args)
            times[kind].append(took)
    first = {kind: runs[0] for kind, runs in times.items()}
    best = {kind: min(runs) for kind, runs in times.items()}
    ratio = first["onnx"] / first["torch"]
    figures = {"games": args.games, "workers": args.workers, "repeats": args.repeats}
    figures |= {f"{kind}_first_seconds": round(t, 2) for kind, t in first.items()}
    figures |= {f"{kind}_best_seconds": round(t, 2) for kind, t in best.items()}
    figures |= {
        "ratio_first": round(ratio, 2),
        "ratio_best": round(best["onnx"] / best["torch"], 2),
    }
    figures |= {"target_ratio": TARGET_RATIO, "same_games": results["onnx"] == results["torch"]}
    print(json.dumps(figures))
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
