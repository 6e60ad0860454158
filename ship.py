"""Package a training run as a shipped agent: model, config, learning curve, evaluation
and a model card, in checkpoints/NAME/.

    python ship.py checkpoints/ppo_2p_tune_free_seed1 --name ppo-2p --games 20000 --workers 2

The evaluation is a tournament run by evaluate.py (the command is recorded in the card):
with 2 players a round robin of the agent, optimal and the scripted bots, so the card
shows what optimal wins against each bot beside what the agent wins; with more players,
the agent at one table with smart, turn-ev and threshold:350 (smart again for the seats
past four), seats rotated.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

import evaluate

ROOT = Path(__file__).resolve().parent


def stages(run: Path) -> list[dict]:
    """The training stages that made `run`'s model, oldest first: a run started with
    --init-from RUN/{latest,best}/model.zip follows the stages of RUN."""
    out: list[dict] = []
    while run is not None and (run / "config.json").is_file() and len(out) < 20:
        config = json.loads((run / "config.json").read_text())
        summary_file = run / "summary.json"
        summary = json.loads(summary_file.read_text()) if summary_file.is_file() else {}
        if not summary and (run / "latest" / "state.pkl").is_file():  # still in progress
            import pickle

            extra = pickle.loads((run / "latest" / "state.pkl").read_bytes())
            summary = {
                "steps": extra["num_timesteps"],
                "wall_seconds": extra["state"]["wall_seconds"],
            }
        commands = run / "command.txt"
        out.insert(
            0,
            {
                "run": run,
                "config": config,
                "summary": summary,
                "commands": commands.read_text().strip().splitlines() if commands.is_file() else [],
            },
        )
        parent = Path(config["init_from"]) if config.get("init_from") else None
        if parent is not None and not parent.is_absolute():
            parent = ROOT / parent
        run = parent.parent.parent if parent is not None else None
    offset = 0
    for stage in out:  # steps of each stage counted after those of the stages before
        stage["offset"] = offset
        offset += stage["summary"].get("steps", 0)
    return out


def learning_curve(runs: list[tuple[Path, int]], path: Path) -> list[dict]:
    """Plot the evaluation win rates (with 95% intervals) logged to TensorBoard by each
    (run folder, steps before it) in turn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    series: dict[str, dict[int, float]] = {}
    for run_dir, offset in runs:
        for events in sorted((run_dir / "tb").rglob("events.out.tfevents*")):
            acc = EventAccumulator(str(events), size_guidance={"scalars": 0})
            acc.Reload()
            for tag in acc.Tags()["scalars"]:
                if tag.startswith("eval/"):
                    for e in acc.Scalars(tag):
                        series.setdefault(tag, {})[offset + e.step] = e.value
    fig, ax = plt.subplots(figsize=(8, 4.5), constrained_layout=True)
    for tag in sorted(t for t in series if t.startswith("eval/win_rate/")):
        name = tag.removeprefix("eval/win_rate/")
        steps = sorted(series[tag])
        ax.plot(steps, [series[tag][s] for s in steps], marker="o", ms=3, label=f"vs {name}")
        low, high = (
            series.get(f"eval/ci95_low/{name}", {}),
            series.get(f"eval/ci95_high/{name}", {}),
        )
        if low and high:
            ax.fill_between(steps, [low[s] for s in steps], [high[s] for s in steps], alpha=0.2)
    ax.set_xlabel("training steps (learner decisions)")
    ax.set_ylabel("win rate (95% interval)")
    for run_dir, offset in runs[1:]:
        ax.axvline(offset, color="grey", ls="--", lw=1)
        ax.annotate(f" {run_dir.name}", (offset, 0.02), xycoords=("data", "axes fraction"))
    ax.set_title(f"Learning curve: {' then '.join(r.name for r, _ in runs)}")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [
        {"steps": s, **{t: series[t][s] for t in series if s in series[t]}}
        for s in sorted({s for t in series.values() for s in t})
    ]


def _shown(path: Path) -> str:
    """A path as the card shows it: relative to the repository when inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Package a training run as a shipped agent.")
    p.add_argument("run", help="run folder (checkpoints/...)")
    p.add_argument("--name", required=True, help="agent name: the folder checkpoints/NAME")
    p.add_argument("--model", default="best", choices=["best", "latest"], help="which model")
    p.add_argument("--games", type=int, default=20000, help="games per pairing")
    p.add_argument("--workers", type=int, default=2, help="evaluation worker processes")
    p.add_argument("--seed", type=int, default=0, help="evaluation seed")
    p.add_argument("--notes", help="a Markdown file of notes (what was tried) for the card")
    p.add_argument("--out", default=str(ROOT / "checkpoints"), help="where NAME/ is made")
    args = p.parse_args(argv)
    run = Path(args.run).resolve()
    notes_file = Path(args.notes).resolve() if args.notes else None
    os.chdir(ROOT)  # agents are named relative to the repository, as the card shows them
    model = run / args.model / "model.zip"
    if not model.is_file() or not (run / "config.json").is_file():
        print(f"error: {run} is not a finished training run (no {model})", file=sys.stderr)
        return 2
    config = json.loads((run / "config.json").read_text())
    out = Path(args.out).resolve() / args.name
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(model, out / "model.zip")
    shutil.copy(run / "config.json", out / "config.json")
    history = stages(run)
    curve = learning_curve([(h["run"], h["offset"]) for h in history], out / "learning_curve.png")
    (out / "learning_curve.json").write_text(json.dumps(curve, indent=2))

    agent = _shown(out / "model.zip")
    players = config["players"]
    if players == 2:
        agents = [agent, "optimal", "smart", "turn-ev", "threshold:350"]
    else:  # one table: the agent and scripted bots, smart repeated past 4 players
        bots = ["smart", "turn-ev", "threshold:350"] + ["smart"] * max(0, players - 4)
        agents = [agent, *bots[: players - 1]]
    eval_args = [
        *agents,
        "--games",
        str(args.games),
        "--players",
        str(players),
        "--seed",
        str(args.seed),
        "--workers",
        str(args.workers),
        "--hold",
        config["hold"],
        "--json",
        str(out / "evaluation.json"),
        "--markdown",
        str(out / "evaluation.md"),
        "--plot",
        str(out / "evaluation.png"),
    ]
    if evaluate.main(eval_args) != 0:
        return 1
    command = "python evaluate.py " + " ".join(
        _shown(Path(a)) if a.startswith(str(out)) else a for a in eval_args
    )
    evaluation = json.loads((out / "evaluation.json").read_text())
    evaluation["command"] = command  # as a reader of the card would type it
    (out / "evaluation.json").write_text(json.dumps(evaluation, indent=2))
    summary = history[-1]["summary"]
    best_eval = {}
    if args.model == "best" and (run / "best" / "eval.json").is_file():
        best_eval = json.loads((run / "best" / "eval.json").read_text())
    steps = history[-1]["offset"] + (best_eval.get("steps") or summary.get("steps") or 0)
    train_commands = [c for h in history for c in h["commands"]]
    notes = notes_file.read_text() if notes_file else ""
    hours = sum(h["summary"].get("wall_seconds", 0) for h in history) / 3600
    stage_lines = "".join(
        f"\n  - `{_shown(h['run'])}`: {h['summary'].get('steps', 0):,} steps, "
        f"{h['summary'].get('wall_seconds', 0) / 3600:.2f} h"
        + (f", starting from `{h['config']['init_from']}`" if h["config"].get("init_from") else "")
        for h in history
    )
    stages_text = f"\n- stages, in order:{stage_lines}" if len(history) > 1 else ""
    card = f"""# {args.name}

A MaskablePPO agent for {players}-player 5000 (hold rule `{config["hold"]}`), trained by
reinforcement against scripted bots and its own snapshots. Play it anywhere an agent
is named: `python evaluate.py {agent} smart`, or as `{agent}` in the environment's
opponents.

## Training

- steps: {steps:,} learner decisions in all (the {args.model} model; the last run so far:
  {summary.get("steps", 0):,}){stages_text}
- wall-clock time on this 2-core machine: {hours:.2f} h
- network: `agents/networks.py` (action-scoring policy on the "rich" observation)
- command(s), from the run's `command.txt`:

```
{chr(10).join(train_commands)}
```

- configuration: `config.json` beside this card (preset `{config.get("preset") or "none"}`).

![learning curve](learning_curve.png)

## Evaluation

{args.games:,} games per pairing, seats rotated, seed {args.seed}:

```
{command}
```

{(out / "evaluation.md").read_text()}
![evaluation](evaluation.png)

{notes}
"""
    (out / "MODEL_CARD.md").write_text(card)
    print(f"shipped {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
