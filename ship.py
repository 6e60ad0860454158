"""Package a training run as a shipped agent: model, config, learning curve, evaluation
and a model card, in checkpoints/NAME/.

    python ship.py checkpoints/ppo_2p_free_seed0 --name my-ppo --games 20000 --workers 2
    python ship.py runs/planner_2p_free_seed0 --name planner-2p --force   # a rebuild

(The shipped agents' runs keep only their record in checkpoints/, no model: each card and
checkpoints/README.md give the commands that rebuild the agent.)

Two kinds of run: a MaskablePPO run of train.py (RUN/best/model.zip: the agent is
model.zip) and a planner run of train_planner.py (RUN/latest/value_net.npz: the agent
is value_net.npz, played by the exact turn planner; its learning curve comes from the
run's evals.json, and it is evaluated at each table size it was trained at).

Every argument is checked before anything is written; the new folder is built aside
(checkpoints/.NAME.shipping-*/NAME/) and moved into place only once complete, so a
failure or Ctrl-C leaves checkpoints/NAME as it was. An existing shipped agent is
replaced only with --force. Before the evaluation, a few timed games give its expected
duration.

The evaluation is a tournament run by evaluate.py (the command is recorded in the card):
with 2 players a round robin of the agent, optimal and the scripted bots, so the card
shows what optimal wins against each bot beside what the agent wins; with more players,
the agent at the standard table of scripted bots (agents.tournament.standard_table:
smart, turn-ev and threshold:350), seats rotated.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import pickle
import re
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import evaluate
from agents import make_policy
from agents import tournament as tour
from agents.value_net import ValueNet, average_nets
from envs.rules import HOLD_VARIANTS, Rules

ROOT = Path(__file__).resolve().parent
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # one plain folder name, not hidden
PILOT_GAMES = 10  # games per pairing timed to estimate the evaluation's duration
SHIPPED_FILES = ("MODEL_CARD.md", "model.zip", "value_net.npz")  # a shipped agent's files
VALUE_NET = "value_net.npz"  # a planner run's network, in RUN/best/ and RUN/latest/
FILES = (("json", "json"), ("markdown", "md"), ("plot", "png"))  # evaluation outputs


class ShipError(ValueError):
    """An argument or input that cannot be shipped: reported in one line."""


def read_json(path: Path):
    """The JSON value in `path`, or ShipError naming the file."""
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ShipError(f"cannot read {path}: {e}") from None


def read_json_object(path: Path) -> dict:
    """A JSON object from `path`, or ShipError naming the file."""
    value = read_json(path)
    if not isinstance(value, dict):
        raise ShipError(f"{path} is not a JSON object")
    return value


def stages(run: Path) -> list[dict]:
    """The training stages that made `run`'s model, oldest first: a run started with
    --init-from RUN/{latest,best}/model.zip follows the stages of RUN."""
    out: list[dict] = []
    while run is not None and (run / "config.json").is_file() and len(out) < 20:
        config = read_json_object(run / "config.json")
        summary_file = run / "summary.json"
        summary = read_json_object(summary_file) if summary_file.is_file() else {}
        if not summary and (run / "latest" / "state.pkl").is_file():  # still in progress
            summary = _progress(run / "latest" / "state.pkl")
        out.insert(0, {"run": run, "config": config, "summary": summary, "commands": commands(run)})
        init_from = config.get("init_from")  # relative to the repository, or absolute
        run = (ROOT / str(init_from)).parent.parent if init_from else None
    offset = 0
    for stage in out:  # steps of each stage counted after those of the stages before
        stage["offset"] = offset
        offset += stage["summary"].get("steps", 0)
    return out


def commands(run: Path) -> list[str]:
    """The commands that made `run`, from its command.txt ([] without one)."""
    path = run / "command.txt"
    return path.read_text().strip().splitlines() if path.is_file() else []


def _progress(state_file: Path) -> dict:
    """Steps and wall-clock seconds so far of a run in progress, from its state.pkl."""
    try:
        extra = pickle.loads(state_file.read_bytes())
        return {"steps": extra["num_timesteps"], "wall_seconds": extra["state"]["wall_seconds"]}
    except Exception as e:  # a truncated or foreign pickle fails in many ways
        raise ShipError(f"cannot read {state_file}: {e!r}") from None


def learning_curve(runs: list[tuple[Path, int]], path: Path) -> list[dict]:
    """Plot the evaluation win rates (with 95% intervals) logged to TensorBoard by each
    (run folder, steps before it) in turn."""
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
    with evaluate.figure(path, figsize=(8, 4.5)) as (_, ax):
        for tag in sorted(t for t in series if t.startswith("eval/win_rate/")):
            name = tag.removeprefix("eval/win_rate/")
            steps = sorted(series[tag])
            ax.plot(steps, [series[tag][s] for s in steps], marker="o", ms=3, label=f"vs {name}")
            low = series.get(f"eval/ci95_low/{name}", {})
            high = series.get(f"eval/ci95_high/{name}", {})
            if low and high:
                ax.fill_between(steps, [low[s] for s in steps], [high[s] for s in steps], alpha=0.2)
        ax.set_xlabel("training steps (learner decisions)")
        ax.set_ylabel("win rate (95% interval)")
        for run_dir, offset in runs[1:]:
            ax.axvline(offset, color="grey", ls="--", lw=1)
            ax.annotate(f" {run_dir.name}", (offset, 0.02), xycoords=("data", "axes fraction"))
        ax.set_title(f"Learning curve: {' then '.join(r.name for r, _ in runs)}")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:  # a run without evaluations has no lines
            ax.legend()
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


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Package a training run as a shipped agent (model, card, evaluation).",
        epilog="The default 20,000 games per pairing measure win rates to about ±0.7% "
        "(95%) and take tens of minutes on 2 cores; --games 2000 is ten times quicker "
        "(±2.2%). The expected duration is shown before the evaluation starts.",
    )
    p.add_argument("run", help="run folder (checkpoints/...)")
    p.add_argument("--name", required=True, help="agent name: the folder OUT/NAME")
    p.add_argument(
        "--model",
        default="best",
        choices=["best", "latest"],
        help="which model of the run (default %(default)s)",
    )
    p.add_argument(
        "--games", type=int, default=20000, help="games per pairing (default %(default)s)"
    )
    p.add_argument(
        "--workers", type=int, default=2, help="evaluation processes (default %(default)s)"
    )
    p.add_argument("--seed", type=int, default=0, help="evaluation seed (default %(default)s)")
    p.add_argument("--notes", help="a Markdown file of notes (what was tried) for the card")
    p.add_argument(
        "--average-with",
        action="append",
        default=[],
        metavar="NET",
        help="planner runs: ship the average of the run's network and this value net "
        "(.npz; repeatable) as one network (agents.value_net.average_nets)",
    )
    p.add_argument(
        "--out",
        default=str(ROOT / "checkpoints"),
        help="an existing folder where NAME/ is made (default: checkpoints/)",
    )
    p.add_argument(
        "--force", action="store_true", help="replace an existing shipped agent OUT/NAME"
    )
    return p.parse_args(argv)


def check_args(args: argparse.Namespace) -> dict:
    """Everything shipping needs, read and checked before anything is written: the run,
    its config and stages, the notes, the target folder; ShipError if anything is off."""
    for flag, value in (("games", args.games), ("workers", args.workers)):
        if value < 1:
            raise ShipError(f"--{flag} must be positive, got {value}")
    if args.seed < 0:
        raise ShipError(f"--seed must be 0 or more, got {args.seed}")
    if not NAME.fullmatch(args.name) or args.name in (".", ".."):
        raise ShipError(
            f"--name must be a plain folder name (letters, digits, . _ -), got {args.name!r}"
        )
    root = Path(args.out).resolve()
    if not root.is_dir():
        raise ShipError(f"--out {args.out} is not an existing folder")
    if not os.access(root, os.W_OK | os.X_OK):
        raise ShipError(f"--out {args.out} is not writable")
    run = Path(args.run).resolve()
    planner = (run / "latest" / VALUE_NET).is_file()  # a run of train_planner.py
    model = run / args.model / (VALUE_NET if planner else "model.zip")
    if not model.is_file() or not (run / "config.json").is_file():
        # A folder with neither model (a run record whose state left the tree, issue 29
        # item 7) may have been a planner run: name both.
        wanted = model if planner else f"{model} nor {run / 'latest' / VALUE_NET}"
        raise ShipError(f"{run} is not a finished training run (no {wanted})")
    history = planner_stages(run) if planner else stages(run)
    config = history[-1]["config"]
    sizes = config.get("players") if planner else [config.get("players")]
    if (
        not isinstance(sizes, list)
        or not sizes
        or any(n not in range(2, 9) for n in sizes)
        or config.get("hold") not in HOLD_VARIANTS
    ):
        raise ShipError(f"{run / 'config.json'} names no valid players (2..8) and hold rule")
    if planner and Rules(hold=config["hold"]) != planner_rules(config):
        raise ShipError(
            f"{run} was trained under {planner_rules(config)}: ship.py evaluates the "
            "standard game (target 5000, entry 500) only"
        )
    if args.average_with and not planner:
        raise ShipError("--average-with averages value nets: a planner run's only")
    iteration, best = 0, None  # a PPO run's best/eval.json is read by its card
    if planner:  # the iteration of its model: of best/eval.json, else the run's last
        best = best_record(run, args.model)
        last = history[-1]["summary"].get("iterations", 0)
        iteration = int(best.get("iteration", 0) if best is not None else last)
    network = averaged_network(args.average_with, model)
    notes = ""
    if args.notes:
        try:
            notes = Path(args.notes).read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise ShipError(f"cannot read --notes {args.notes}: {e}") from None
    target = root / args.name
    for h in history:  # shipping must never replace the runs it reads
        if target == h["run"].resolve() or target in h["run"].resolve().parents:
            raise ShipError(f"{target} holds the run {h['run']}; choose another --name or --out")
    if target.is_symlink() or target.exists() and not target.is_dir():
        raise ShipError(f"{target} exists and is not a folder; choose another --name")
    if target.is_dir() and any(target.iterdir()):
        if not any((target / f).is_file() for f in SHIPPED_FILES) or (target / "latest").exists():
            raise ShipError(f"{target} exists and is not a shipped agent; choose another --name")
        if not args.force:
            raise ShipError(f"{target} is already a shipped agent: give --force to replace it")
    return {
        "run": run,
        "model": model,
        "network": network,  # the averaged value net to ship, or None: the model as it is
        "iteration": iteration,  # the iteration of the run's model
        "best": best,  # a planner run's best/eval.json when its best model is shipped
        "config": config,
        "history": history,
        "notes": notes,
        "root": root,
        "target": target,
        "planner": planner,
        "sizes": list(dict.fromkeys(sizes)),
    }


# ------------------------------------------------------------- planner runs
def best_record(run: Path, model: str) -> dict | None:
    """The run's best/eval.json when `model` is "best" and the run has one, else None."""
    path = run / "best" / "eval.json"
    return read_json_object(path) if model == "best" and path.is_file() else None


def averaged_network(others: list[str], model: Path) -> ValueNet | None:
    """The network to ship when it is not the run's model as it is, else None: the model
    averaged with the nets `others` (--average-with); ShipError (one line) if one does
    not load or fit."""
    if not others:
        return None
    try:
        return average_nets([ValueNet.load(path) for path in (model, *others)])
    except ValueError as e:
        raise ShipError(f"--average-with: {e}") from None


def planner_rules(config: dict) -> Rules:
    """The rules a planner run was trained under, or ShipError (one line)."""
    try:
        return Rules(
            hold=config.get("hold", "free"),
            target=config.get("target", 5000),
            entry=config.get("entry", 500),
        )
    except (TypeError, ValueError) as e:
        raise ShipError(f"the run's config.json names no valid rules: {e}") from None


def planner_stages(run: Path) -> list[dict]:
    """A planner run as the one stage of its history: config, commands, and a summary
    (summary.json, or for a run in progress or resumed past it its latest/state.pkl:
    whichever is further) with the number of iterations, games and wall-clock seconds,
    and the evaluations (evals.json)."""
    config = read_json_object(run / "config.json")
    planner_config(config, str(run / "config.json"))  # a run of a removed method: refused
    summary_file, state_file = run / "summary.json", run / "latest" / "state.pkl"
    summary = read_json_object(summary_file) if summary_file.is_file() else {}
    if state_file.is_file():
        progress = _planner_progress(state_file, config)
        # A run resumed past its end (--iterations N) has an older summary.json.
        if progress["iterations"] > summary.get("iterations", 0):
            summary = progress
    evals_file = run / "evals.json"
    evals = read_json(evals_file) if evals_file.is_file() else []
    if not isinstance(evals, list) or not all(isinstance(e, dict) for e in evals):
        raise ShipError(f"{evals_file} is not a list of evaluations")
    return [
        {
            "run": run,
            "config": config,
            "summary": summary,
            "evals": evals,
            "commands": commands(run),
            "offset": 0,
        }
    ]


def _planner_progress(state_file: Path, config: dict) -> dict:
    """Iterations, games and wall-clock seconds so far of a planner run in progress."""
    try:
        state = pickle.loads(state_file.read_bytes())
        iterations = int(state["trainer"]["iteration"])
        seconds = float(state["wall_seconds"])
    except Exception as e:  # a truncated or foreign pickle fails in many ways
        raise ShipError(f"cannot read {state_file}: {e!r}") from None
    return {
        "iterations": iterations,
        "games": iterations * int(config.get("games_per_iteration", 0)),
        "wall_seconds": seconds,
        "eval_seconds": float(state.get("eval_seconds", 0.0)),
    }


def planner_curve(evals: list[dict], path: Path) -> list[dict]:
    """Plot the evaluations of a planner run by iteration: win rate at each evaluation
    table (95% intervals), and, where measured, the 2-player value error against the
    exact solver (a yardstick the network never trains on). Returns the plotted data."""
    rows = []
    for e in evals:
        row = {k: e.get(k) for k in ("iteration", "games", "wall_seconds", "exact_error")}
        for label, r in (e.get("results") or {}).items():
            row[f"win_rate/{label}"] = r.get("win_rate")
            row[f"ci95/{label}"] = r.get("ci95")
        rows.append(row)
    with evaluate.figure(path, figsize=(8, 4.5)) as (_, ax):
        labels = sorted({k.removeprefix("win_rate/") for r in rows for k in r if "win_rate/" in k})
        for label in labels:
            points = [r for r in rows if r.get(f"win_rate/{label}") is not None]
            x = [r["iteration"] for r in points]
            ax.plot(x, [r[f"win_rate/{label}"] for r in points], marker="o", ms=3, label=label)
            bands = [r.get(f"ci95/{label}") for r in points]
            if all(isinstance(b, list) and len(b) == 2 for b in bands):
                ax.fill_between(x, [b[0] for b in bands], [b[1] for b in bands], alpha=0.2)
        ax.set_xlabel("iteration")
        ax.set_ylabel("win rate of the planner (95% interval)")
        ax.grid(alpha=0.3)
        errors = [r for r in rows if r.get("exact_error") is not None]
        if errors:
            right = ax.twinx()
            right.plot(
                [r["iteration"] for r in errors],
                [r["exact_error"] for r in errors],
                color="black",
                ls=":",
                label="2-player value error vs the exact solver (yardstick)",
            )
            right.set_ylabel("mean |V_net - V_exact| (2 players)")
            right.legend(loc="lower right")
        if labels:
            ax.legend(loc="upper left", title="table (the planner + these seats)")
        ax.set_title("Learning curve of the planner's value network")
    return rows


def opponents(players: int) -> list[str]:
    """The agent's opponents in the evaluation: with 2 players a round robin with optimal
    and the scripted bots; with more, the standard table of scripted bots."""
    if players == 2:
        return ["optimal", "smart", "turn-ev", "threshold:350"]
    return tour.standard_table(players)


def check_agent(model: Path, players: int, rules: Rules) -> None:
    """ShipError unless the model loads and plays this game (before any work)."""
    try:
        make_policy(str(model)).check_game(players, rules)
    except ValueError as e:
        raise ShipError(str(e)) from None


def games_per_second(agents: list[str], players: int, rules: Rules, seed: int) -> float:
    """Games per second of this evaluation in one process, timed on PILOT_GAMES games of
    each pairing (the first game, which loads the models, is not counted)."""
    for spec in agents:  # the exact solver is solved (or loaded) once, untimed
        make_policy(spec).prepare(rules)
    pilot = -(-PILOT_GAMES // players) * players
    seatings = tour.schedule(len(agents), players, pilot)
    times: list[float] = []
    tour.run(
        agents,
        seatings,
        rules,
        seed,
        chunk_size=1,
        on_progress=lambda _: times.append(time.perf_counter()),
    )
    return (len(times) - 1) / max(times[-1] - times[0], 1e-9)


def duration(seconds: float) -> str:
    """A rough duration in words."""
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def announce(args: argparse.Namespace, agents: list[str], players: int, rules: Rules) -> None:
    """Say how many games the evaluation plays and, when it is not quick, about how long
    it will take: in one process, as timed now, and with the workers if each gets a core
    of its own (on a busy machine the truth lies between)."""
    pairings = math.comb(len(agents), players)
    games = -(-args.games // players) * players
    total = pairings * games
    line = f"evaluation: {pairings} pairing(s) x {games:,} games = {total:,} games"
    if total > 2 * pairings * PILOT_GAMES:
        rate = games_per_second(agents, players, rules, args.seed)
        workers = tour.worker_count(args.workers)[0]  # as the evaluation will run them
        alone = total / rate
        parallel = f"{duration(alone / workers)} with {workers} workers, " if workers > 1 else ""
        line += (
            f"; about {parallel}{duration(alone)} in one process "
            f"({rate:,.0f} games/s timed; --games sets the count)"
        )
    print(line, flush=True)


def relabel(value, old: str, new: str):
    """`value` (JSON data) with the string `old` replaced by `new` everywhere."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [relabel(v, old, new) for v in value]
    if isinstance(value, dict):
        return {relabel(k, old, new): relabel(v, old, new) for k, v in value.items()}
    return value


def build(args: argparse.Namespace, inputs: dict, out: Path) -> bool:
    """Write the shipped agent into the empty folder `out`, named as if it were
    `inputs["target"]`: the model (a planner's value_net.npz, else model.zip), config.json,
    learning_curve.*, an evaluation at each table size the run was trained at, and the
    model card; False if an evaluation failed."""
    run, history, sizes = inputs["run"], inputs["history"], inputs["sizes"]
    model, png = inputs["model"].name, out / "learning_curve.png"
    if inputs["network"] is None:
        shutil.copy(inputs["model"], out / model)
    else:
        inputs["network"].save(out / model)
    shutil.copy(run / "config.json", out / "config.json")
    runs = [(h["run"], h["offset"]) for h in history]
    curve = (
        planner_curve(history[-1]["evals"], png) if inputs["planner"] else learning_curve(runs, png)
    )
    (out / "learning_curve.json").write_text(json.dumps(curve, indent=2))
    evaluations = []
    for n in sizes:
        stem = "evaluation" if len(sizes) == 1 else f"evaluation-{n}p"  # or one of several
        done = evaluation_files(args, inputs, out, n, stem)
        if done is None:
            return False
        evaluations.append((n, stem, *done))
    write_card = planner_card if inputs["planner"] else card
    (out / "MODEL_CARD.md").write_text(write_card(args, inputs, evaluations))
    return True


def evaluation_files(
    args: argparse.Namespace, inputs: dict, out: Path, players: int, stem: str
) -> tuple[dict, str] | None:
    """Evaluate the model built in `out` at a table of `players` (evaluate.py, the
    opponents of ``opponents``) and write out/STEM.json, .md and .png, the agent named by
    its target; (the evaluation, its command) or None if it failed."""
    model, final, hold = inputs["model"].name, inputs["target"], inputs["config"]["hold"]
    agent, building = _shown(final / model), _shown(out / model)
    options = [*opponents(players), "--games", str(args.games), "--players", str(players)]
    options += ["--seed", str(args.seed), "--workers", str(args.workers), "--hold", hold]
    summary = out.parent / f"{stem}.json"  # beside `out`: not shipped
    if evaluate.main([building, *options, "--json", str(summary)]):
        return None
    # The evaluation played the model in `out`: name it by the place it is moved to.
    evaluation = relabel(json.loads(summary.read_text()), building, agent)
    outputs = [f"--{flag} {_shown(final / f'{stem}.{ext}')}" for flag, ext in FILES]
    command = " ".join(["python evaluate.py", agent, *options, *outputs])
    evaluation["command"] = command  # as a reader of the card would type it
    (out / f"{stem}.json").write_text(json.dumps(evaluation, indent=2))
    (out / f"{stem}.md").write_text(evaluate.markdown(evaluation))
    evaluate.plot(evaluation, str(out / f"{stem}.png"))
    return evaluation, command


def planner_card(args: argparse.Namespace, inputs: dict, evaluations: list) -> str:
    """The model card of a planner: the method, its training, its evaluations."""
    config, history, best = inputs["config"], inputs["history"][-1], inputs["best"] or {}
    summary = history["summary"]
    agent = _shown(inputs["target"] / VALUE_NET)
    sizes = " and ".join(map(str, inputs["sizes"]))
    iterations = inputs["iteration"]
    games = best.get("games", summary.get("games", 0))
    hours = summary.get("wall_seconds", 0) / 3600
    evals_hours = summary.get("eval_seconds", 0) / 3600
    reached = (
        f"; the {args.model} network was reached after {best['wall_seconds'] / 60:.1f} min"
        if isinstance(best.get("wall_seconds"), (int, float))
        else ""
    )
    error = best.get("exact_error")
    error_line = (
        f"\n- 2-player value error against the exact solver (a yardstick, never a "
        f"training target): mean |V_net - V_exact| = {error:.4f}"
        if isinstance(error, (int, float))
        else ""
    )
    hidden = config.get("hidden") if inputs["network"] is None else list(inputs["network"].hidden)
    averaged = averaged_line(args)
    tables = "".join(
        f"\n### {n} players\n\n"
        + evaluation_text(args, evaluation, command, f"![evaluation at {n} players]({stem}.png)")
        for n, stem, evaluation, command in evaluations
    )
    return f"""# {args.name}

A planner agent for 5000 (hold rule `{config["hold"]}`, trained at {sizes} players): a
value network of turn-start positions (`agents/value_net.py`: each player's chance of
winning from the banked scores) {method_text(config)}, and
an exact planner of each turn against it (`agents/planner.py`). {tables_text(config, agent)}
export it with
`python export.py {agent} -o bots/{args.name}.onnx`.

## Training

- iterations: {iterations:,} (the {args.model} network, shipped; the run went on to
  {summary.get("iterations", 0):,}), games: {games:,}{init_line(config)}
- wall-clock time on this 2-core machine: {hours:.2f} h for the whole run, of which
  {evals_hours:.2f} h evaluations{reached}{error_line}
- network: tanh hidden layers {hidden}, 8 outputs (a softmax over the seats present){averaged}
- command(s), from the run's `command.txt`:

```
{chr(10).join(history["commands"])}
```

- configuration: `config.json` beside this card (preset `{config.get("preset") or "none"}`).

![learning curve](learning_curve.png)

## Evaluation
{tables}
{inputs["notes"]}
"""


def tables_text(config: dict, agent: str) -> str:
    """Which games the planner plays, and how to play it, for the card."""
    if config.get("method") == "exact-table":
        table = planner_config(config).exact_table()
        n = len(table) + 1
        return (
            f"Its network plays {n}-player games only: it reads its seat at the table it "
            f"learned. Play it anywhere an agent is named, at that table: `python evaluate.py "
            f"{agent} {' '.join(table)} --players {n}`, `python play.py --opponents {agent} "
            f"{' '.join(table[1:])}` (you take a bot's place), or as `{agent}` in the "
            "environment's opponents;"
        )
    return (
        "Its network accepts tables of 2 to 8 players; its values were fitted only at the "
        f"sizes above. Play it anywhere an agent is named: `python evaluate.py {agent} smart`, "
        f"`python play.py --opponents {agent}`, or as `{agent}` in the environment's opponents;"
    )


def averaged_line(args: argparse.Namespace) -> str:
    """What the shipped network averages (--average-with), for the card."""
    if not args.average_with:
        return ""
    nets = [f"the run's {args.model} network", *(f"`{path}`" for path in args.average_with)]
    listed = ", ".join(nets[:-1]) + " and " + nets[-1]
    together = "both" if len(nets) == 2 else f"all {len(nets)}"
    return (
        f"\n- shipped as the average of {listed}: one network of {together} "
        "side by side, whose logits are the mean of theirs "
        "(`agents.value_net.average_nets`, `--average-with` of ship.py)"
    )


def planner_config(config: dict, where: str = "the run"):
    """A planner run's config.json as its ``PlannerConfig`` (fields it does not know
    left out); ShipError (one line) if the run used a removed method."""
    # torch-free, but heavy
    from agents.training.value_iteration import PlannerConfig, without_removed

    try:
        values = without_removed(config, where)
    except ValueError as e:
        raise ShipError(str(e)) from None
    known = {f.name for f in dataclasses.fields(PlannerConfig)}
    return PlannerConfig(**{k: v for k, v in values.items() if k in known})


def method_text(config: dict) -> str:
    """How a planner run learned its values, in words (its config's method)."""
    if config.get("method") != "exact-table":
        return "learned by fitted value iteration from self-play"
    tables = ", ".join(f"({','.join(t)})" for t in planner_config(config).tables)
    return (
        "learned as a best response to the scripted bots of fixed tables (the bots after "
        f"its seat, in turn order: {tables}): fitted by value iteration over every turn "
        "start of games there, the bots' included: a bot's turn valued by its exact ends "
        "(every roll and its choices, envs.turn_outcomes), the planner's by its exact "
        "plan; the network reads the agent's seat; so its values hold at those tables only"
    )


def init_line(config: dict) -> str:
    """The network a run started from, with that run's own training time if it says."""
    if not config.get("init"):
        return ""
    init = ROOT / config["init"]
    line = f"\n- started from the network `{config['init']}`"
    try:
        record = json.loads((init.parent / "eval.json").read_text())
        return line + (
            f" (iteration {record['iteration']} of its own run, {init.parent.parent.name}, "
            f"reached after {record['wall_seconds'] / 3600:.2f} h of that run)"
        )
    except (OSError, ValueError, KeyError, TypeError):  # no run's record beside it
        return line


def card(args: argparse.Namespace, inputs: dict, evaluations: list) -> str:
    """The model card: what the agent is, how it was trained, how it plays."""
    run, config, history = inputs["run"], inputs["config"], inputs["history"]
    [(_, _, evaluation, command)] = evaluations  # a PPO model plays one table size
    agent = _shown(inputs["target"] / "model.zip")
    players = config["players"]
    summary = history[-1]["summary"]
    best_eval = best_record(run, args.model) or {}
    steps = history[-1]["offset"] + (best_eval.get("steps") or summary.get("steps") or 0)
    train_commands = [c for h in history for c in h["commands"]]
    hours = sum(h["summary"].get("wall_seconds", 0) for h in history) / 3600
    stage_lines = "".join(
        f"\n  - `{_shown(h['run'])}`: {h['summary'].get('steps', 0):,} steps, "
        f"{h['summary'].get('wall_seconds', 0) / 3600:.2f} h"
        + (f", starting from `{h['config']['init_from']}`" if h["config"].get("init_from") else "")
        for h in history
    )
    stages_text = f"\n- stages, in order:{stage_lines}" if len(history) > 1 else ""
    return f"""# {args.name}

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

{evaluation_text(args, evaluation, command, "![evaluation](evaluation.png)")}
{inputs["notes"]}
"""


def evaluation_text(args: argparse.Namespace, evaluation: dict, command: str, picture: str) -> str:
    """One evaluation on a card: its games, its command, its tables, its picture."""
    return f"""{args.games:,} games per pairing, seats rotated, seed {args.seed}:

```
{command}
```

{evaluate.markdown(evaluation)}
{picture}
"""


def swap_in(built: Path, target: Path, aside: Path) -> None:
    """Move the complete folder `built` to `target`; an agent already there is first
    moved to `aside` (same file system: renames, no copies) and put back on failure."""
    replaced = target.exists()
    if replaced:
        target.rename(aside)
    try:
        built.rename(target)
    except OSError:
        if replaced:
            aside.rename(target)
        raise


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        inputs = check_args(args)
        rules = Rules(hold=inputs["config"]["hold"])
        for players in inputs["sizes"]:
            check_agent(inputs["model"], players, rules)
    except ShipError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    os.chdir(ROOT)  # agents are named relative to the repository, as the card shows them
    with tempfile.TemporaryDirectory() as pilot:  # timed with the network to be shipped
        model = inputs["model"]
        if inputs["network"] is not None:
            model = inputs["network"].save(Path(pilot) / VALUE_NET)
        for players in inputs["sizes"]:
            announce(args, [str(model), *opponents(players)], players, rules)
    # Built aside in the same folder (renames are then atomic), under the final name so
    # that the agent is called the same in the evaluation as once shipped.
    staging = Path(tempfile.mkdtemp(prefix=f".{args.name}.shipping-", dir=inputs["root"]))
    try:
        built = staging / args.name
        built.mkdir()
        try:
            if not build(args, inputs, built):
                print(f"error: evaluation failed; {inputs['target']} unchanged", file=sys.stderr)
                return 1
        except (OSError, ValueError) as e:  # the disk, or an unreadable run file
            print(f"error: could not ship: {e}; {inputs['target']} is unchanged", file=sys.stderr)
            return 1
        swap_in(built, inputs["target"], staging / "replaced")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    print(f"shipped {inputs['target']}")
    return 0


if __name__ == "__main__":
    # A terminated ship (kill, a closed session) still removes its unfinished folder.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    sys.exit(main())
