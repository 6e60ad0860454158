"""PPO in JAX, several seeds of one budget, measured as the shipped agents are (issue 45).

    python train_jax.py --seed S --run-name jax_ppo_2p_seedS  # S = 0, 1, 2
    python benchmarks/jax_ppo_seeds.py checkpoints/jax_ppo_2p_seed{0,1,2} --games 20000 \\
        --plot docs/jax_ppo_seeds.png

For each run folder (what ``train_jax.py`` wrote: ``summary.json``, ``history.json``,
``model.onnx``): its training speed (learner decisions/s over its chunks, compiling and
checkpoints excluded: ``jax_ppo.training_speed``), its exported bot's win rate against
``optimal`` over ``--games`` games with the seats rotated (``fivethousand_rl.agents.tournament``, as
``evaluate.py RUN/model.onnx optimal`` plays them) and its exact exploitability
(``fivethousand_rl.agents.best_response``: what a best response wins beyond one half, as ``python -m
fivethousand_rl.agents.best_response`` computes it). Then the mean and the spread over the runs.
``--plot`` draws each run's win rate in its training games against its first bot
opponent (``turn-ev`` by default) as it trained, its final figures in the legend.

The last line is one JSON object: the rows and their mean.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fivethousand_rl.agents import make_policy  # noqa: E402
from fivethousand_rl.agents.base import figure  # noqa: E402
from fivethousand_rl.agents.best_response import exploitability  # noqa: E402
from fivethousand_rl.agents.tournament import run, schedule, wilson_interval  # noqa: E402
from fivethousand_rl.agents.training.jax_ppo import training_speed  # noqa: E402
from fivethousand_rl.envs.rules import Rules  # noqa: E402

RUN_FILES = ("summary.json", "history.json", "config.json", "model.onnx")


def check_run(folder: Path) -> None:
    """ValueError (one line) unless `folder` holds a finished train_jax run."""
    if missing := [name for name in RUN_FILES if not (folder / name).is_file()]:
        raise ValueError(f"{folder} is not a train_jax run: no {', '.join(missing)}")
    for name in ("summary.json", "history.json"):  # read by measure and plot
        try:
            json.loads((folder / name).read_text())
        except (OSError, ValueError) as e:
            raise ValueError(f"{folder}/{name} cannot be read: {e}") from None
    try:
        players = json.loads((folder / "config.json").read_text())["n_players"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{folder}/config.json cannot be read: {e}") from None
    if players != 2:
        raise ValueError(f"{folder}: {players} players; the exact measures need 2")


def measure(folder: Path, games: int, seed: int, workers: int) -> dict:
    """One run's row: training speed and budget, win rate against optimal, exploitability."""
    summary = json.loads((folder / "summary.json").read_text())
    config = json.loads((folder / "config.json").read_text())
    rules = Rules(**{f.name: config[f.name] for f in dataclasses.fields(Rules)})
    bot = make_policy(str(folder / "model.onnx"))
    results = run([bot, "optimal"], schedule(2, 2, games), rules, seed, workers)
    wins = sum(r.agents[r.winner_seat] == 0 for r in results if r.winner_seat is not None)
    low, high = wilson_interval(wins, len(results))
    return {
        "run": folder.name,
        "seed": config["seed"],
        "steps": summary["steps"],
        "complete": summary["complete"],
        "train_seconds": summary["seconds"],
        "steps_per_s": training_speed(json.loads((folder / "history.json").read_text())),
        "games": len(results),
        "win_rate_vs_optimal": wins / len(results),
        "ci95": [low, high],
        "exploitability": exploitability(bot, rules=rules, workers=workers),
    }


def mean_row(rows: list[dict]) -> dict:
    """The mean of each figure over the runs, and its standard deviation."""
    out = {}
    for key in ("steps_per_s", "win_rate_vs_optimal", "exploitability", "train_seconds"):
        values = [row[key] for row in rows]
        out[key] = statistics.fmean(values)
        out[f"{key}_sd"] = statistics.stdev(values) if len(values) > 1 else 0.0
    return out


def plot(folders: list[Path], rows: list[dict], path: Path) -> None:
    """Each run's training win rate against turn-ev, and its final figures in the legend."""
    with figure(path, figsize=(7.5, 4)) as (fig, ax):
        for folder, row in zip(folders, rows, strict=True):
            history = json.loads((folder / "history.json").read_text())
            bots = [name for name in history[-1]["win_rate"] if name != "self"] or ["self"]
            points = [
                (h["steps"] / 1e6, 100 * h["win_rate"][bots[0]])
                for h in history
                if h["win_rate"].get(bots[0]) is not None  # a chunk where none ended
            ]
            ax.plot(
                *zip(*points, strict=True),
                label=(
                    f"seed {row['seed']} against {bots[0]}; in the end "
                    f"{100 * row['win_rate_vs_optimal']:.1f}% against optimal, "
                    f"exploitability {row['exploitability']:.3f}"
                ),
            )
        ax.axhline(50, color="grey", lw=0.8, ls=":")
        ax.set_xlabel("learner decisions (millions)")
        ax.set_ylabel("win rate in its training games (%)")
        ax.set_title("PPO in JAX, 2 players: each run's training lanes against a bot")
        ax.legend(fontsize=8, loc="lower right")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="train_jax run folders")
    parser.add_argument("--games", type=int, default=20_000, help="against optimal, per run")
    parser.add_argument("--seed", type=int, default=0, help="the tournaments' seed")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--plot", type=Path, help="write the learning curves (PNG)")
    args = parser.parse_args(argv)
    try:
        if args.games < 2 or args.games % 2:
            raise ValueError(f"--games must be a positive even number, got {args.games}")
        if args.workers < 1:
            raise ValueError(f"--workers must be at least 1, got {args.workers}")
        for folder in args.runs:
            check_run(folder)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    rows = []
    for folder in args.runs:
        try:
            row = measure(folder, args.games, args.seed, args.workers)
        except (OSError, ValueError, KeyError) as e:  # a model or file that cannot be read
            print(f"error: {folder}: {str(e).splitlines()[0]}", file=sys.stderr)
            return 2
        rows.append(row)
        print(
            f"{row['run']}: {row['steps']:,} decisions at {row['steps_per_s']:,.0f}/s; "
            f"against optimal {100 * row['win_rate_vs_optimal']:.2f}% "
            f"({100 * row['ci95'][0]:.1f}% - {100 * row['ci95'][1]:.1f}%) of {row['games']:,} "
            f"games; exploitability {row['exploitability']:.4f}",
            flush=True,
        )
    mean = mean_row(rows)
    print(
        f"mean of {len(rows)}: {mean['steps_per_s']:,.0f} decisions/s, against optimal "
        f"{100 * mean['win_rate_vs_optimal']:.2f}% "
        f"(sd {100 * mean['win_rate_vs_optimal_sd']:.2f}), "
        f"exploitability {mean['exploitability']:.4f} (sd {mean['exploitability_sd']:.4f})"
    )
    if args.plot:
        plot(args.runs, rows, args.plot)
    print(json.dumps({"rows": rows, "mean": mean}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
