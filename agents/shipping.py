"""What ship.py makes of a training run (a MaskablePPO run of train.py, or a planner run
of train_planner.py): its history (stages, summaries, evaluations), its learning curve
(from each run's evals.json), the network to ship (the run's, or averaged), the timed
estimate and the evaluation tournaments, the model card, and the folder that holds
them, swapped in whole. Files are named as the user gives them: relative to the current
folder (from a clone's root, as the repository names them)."""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents import tournament as tour
from fivethousand_rl.agents import tournament_report as report
from fivethousand_rl.agents.base import MAX_MODEL_BYTES, duration, read_capped, read_text_capped
from fivethousand_rl.agents.exporting import LICENSE
from fivethousand_rl.agents.neural import first_line, load_sb3, read_data_pickle, read_obs_spec
from fivethousand_rl.agents.shipped import SHIPPED, shipped_folder
from fivethousand_rl.agents.training import progress
from fivethousand_rl.agents.value_net import ValueNet, average_nets
from fivethousand_rl.envs.rules import Rules

PILOT_GAMES = 10  # games per pairing timed to estimate the evaluation's duration
VALUE_NET = "value_net.npz"  # a planner run's network, in RUN/best/ and RUN/latest/
FILES = (("json", "json"), ("markdown", "md"), ("plot", "png"))  # evaluation outputs


class ShipError(ValueError):
    """An argument or input that cannot be shipped: reported in one line."""


MAX_NOTES_BYTES = 1 << 20  # a model card's notes are a page or two of Markdown
# Every card says what a user may do with the agent (issue 53): the project's licence.
LICENSE_SECTION = f"""## Licence

{LICENSE}, as the rest of fivethousand-rl (its `LICENSE` file): the model, this card and its
evaluations.
"""


def read_notes(path: str | Path, limit: int = MAX_NOTES_BYTES) -> str:
    """The text of the --notes file `path`; ShipError (one line) if it is not a plain
    file (a device as /dev/zero, a FIFO that would block), is longer than `limit` bytes
    (found reading at most one byte more), or is not UTF-8 text."""
    try:
        return read_text_capped(path, limit)
    except (OSError, ValueError) as e:  # UnicodeDecodeError is a ValueError
        why = getattr(e, "strerror", None) or e
        raise ShipError(f"cannot read --notes {path}: {why}") from None


# ------------------------------------------------------------- run history
def read_json(path: Path, kind: type = dict, what: str = "a JSON object"):
    """The JSON value in `path`, of this kind; ShipError naming the file otherwise."""
    try:
        value = json.loads(read_text_capped(path))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ShipError(f"cannot read {path}: {e}") from None
    if not isinstance(value, kind):
        raise ShipError(f"{path} is not {what}")
    return value


def stages(run: Path) -> list[dict]:
    """The training stages that made a PPO run's model, oldest first: a run started with
    --init-from RUN/{latest,best}/model.zip follows the stages of RUN."""
    out: list[dict] = []
    while run is not None and (run / "config.json").is_file() and len(out) < 20:
        config = read_json(run / "config.json")
        summary_file = run / "summary.json"
        summary = read_json(summary_file) if summary_file.is_file() else {}
        if not summary and (run / "latest" / "state.pkl").is_file():  # still in progress
            summary = read_state(
                run / "latest" / "state.pkl",
                lambda s: {"steps": s["num_timesteps"], "wall_seconds": s["state"]["wall_seconds"]},
            )
        out.insert(0, run_stage(run, config, summary))
        init_from = config.get("init_from")  # a path, or a shipped agent (no run of ours)
        run = Path(init_from).parent.parent if init_from and init_from not in SHIPPED else None
    for before, after in itertools.pairwise(out):  # steps counted on from the stage before
        after["offset"] = before["offset"] + before["summary"].get("steps", 0)
    return out


def run_stage(run: Path, config: dict, summary: dict) -> dict:
    """One stage of a run's history: its folder, config, summary, evaluations (evals.json),
    the commands that made it (command.txt) and the steps of the stages before it (offset)."""
    path, what = run / "evals.json", "a list of evaluations"
    evals = read_json(path, list, what) if path.is_file() else []
    if not all(isinstance(e, dict) for e in evals):
        raise ShipError(f"{path} is not {what}")
    path = run / "command.txt"
    try:
        commands = read_text_capped(path).strip().splitlines() if path.is_file() else []
    except (OSError, ValueError) as e:
        raise ShipError(f"cannot read {path}: {e}") from None
    return dict(run=run, config=config, summary=summary, offset=0, evals=evals, commands=commands)


def planner_stages(run: Path) -> list[dict]:
    """A planner run as the one stage of its history: config, commands, and a summary
    (summary.json, or for a run in progress or resumed past it its latest/state.pkl:
    whichever is further) with the number of iterations, games and wall-clock seconds,
    and the evaluations (evals.json)."""
    config = read_json(run / "config.json")
    cfg = planner_config(config, str(run / "config.json"))  # a removed method: refused
    summary_file, state_file = run / "summary.json", run / "latest" / "state.pkl"
    summary = read_json(summary_file) if summary_file.is_file() else {}
    if state_file.is_file():
        progress = read_state(
            state_file,
            lambda s: {
                "iterations": int(s["trainer"]["iteration"]),
                "games": cfg.games_played(int(s["trainer"]["iteration"])),
                "wall_seconds": float(s["wall_seconds"]),
                "eval_seconds": float(s.get("eval_seconds", 0.0)),
            },
        )
        # A run resumed past its end (--iterations N) has an older summary.json.
        if progress["iterations"] > summary.get("iterations", 0):
            summary = progress
    return [run_stage(run, config, summary)]


def read_state(state_file: Path, progress: Callable[[dict], dict]) -> dict:
    """How far a run in progress is, `progress` of its latest/state.pkl; ShipError
    naming the file if it cannot be read."""
    try:
        raw = read_capped(state_file, MAX_MODEL_BYTES)
        return progress(read_data_pickle(raw))  # data only: no code from the folder runs
    except Exception as e:  # a truncated, foreign or code-naming pickle fails in many ways
        raise ShipError(f"cannot read {state_file}: {e!r}") from None


def planner_config(config: dict, where: str = "the run"):
    """A planner run's config.json as its ``PlannerConfig`` (fields it does not know
    left out); ShipError (one line) if the run used a removed method."""
    from fivethousand_rl.agents.training.config import PlannerConfig, without_removed  # tyro: heavy

    try:
        values = without_removed(config, where)
    except ValueError as e:
        raise ShipError(str(e)) from None
    known = {f.name for f in dataclasses.fields(PlannerConfig)}
    return PlannerConfig(**{k: v for k, v in values.items() if k in known})


# ------------------------------------------------------------- averaging
def averaged_network(others: list[str], model: Path) -> ValueNet | None:
    """The model averaged with the nets `others` (--average-with), else None: the model as
    it is; ShipError (one line) if one does not load or fit."""
    if not others:
        return None
    try:
        return average_nets([ValueNet.load(path) for path in (model, *others)])
    except ValueError as e:
        raise ShipError(f"--average-with: {e}") from None


# ------------------------------------------------------------- the model, rewritten
def write_clean_model(
    model: Path, network: ValueNet | None, out: Path, config: dict, float16: bool = False
) -> None:
    """Write the model to ship at `out`, rebuilt from what the toolkit's own loaders read
    and checked, never copied: a pickle in a setting the loader replaces or never reads
    (a schedule, a class, a space), or an archive member it skips, would otherwise reach
    whoever loads the shipped file with SB3's or numpy's own loader, which runs it (issue
    54 item 5). A value net (.npz) is saved anew from its checked arrays and spec
    (`network`: the averaged one, if any); an SB3 checkpoint (.zip) is loaded by
    ``load_sb3`` (its classes and spaces given known values, its schedules those of the
    run's `config`, its weights and data read as data; never by SB3's own loader, even
    for a file named trusted, whose code would be saved again) and saved by SB3 from
    those objects. ShipError (one line) if it does not load so. `float16` (an SB3
    checkpoint's only): its weights rounded by ``round_to_float16`` first."""
    if float16 and model.suffix == ".npz":
        raise ShipError("--float16 rounds a MaskablePPO or imitation network: not a value net")
    try:
        if model.suffix == ".npz":
            (network or ValueNet.load(model)).save(out)
        else:
            spec = read_obs_spec(model)
            sb3 = load_sb3(model, spec, known=trained_schedules(config), device="cpu")
            if float16:
                round_to_float16(sb3.policy)
            sb3.save(out)
    except Exception as e:  # a refused pickle, a corrupt archive: SB3 fails in many ways
        raise ShipError(f"cannot ship {model}: {first_line(e)}") from None


FLOAT16_MAX = 65504.0  # the largest finite float16


def round_to_float16(module) -> None:
    """Round every parameter of the torch `module` to the nearest float16, in place (kept
    in their float32 tensors): each weight is then a float16 exactly, so the export bundle
    stores them in half the bytes without loss (``exporting.plain_network``). ShipError,
    changing nothing, if a weight is beyond float16's range."""
    import torch

    with torch.no_grad():
        params = list(module.parameters())
        largest = max((float(p.abs().max()) for p in params if p.numel()), default=0.0)
        if not largest <= FLOAT16_MAX:  # NaN too
            raise ShipError(f"a weight of {largest:g} is beyond float16's range (65504)")
        for p in params:
            p.copy_(p.to(torch.float16).to(p.dtype))


def trained_schedules(config: dict) -> dict:
    """The schedules a PPO run trained with, from the plain numbers of its config.json,
    for the settings SB3 saved as pickles (a model fine-tuned from the shipped file learns
    at the run's rates, not at none); {} where the config does not give them."""
    from fivethousand_rl.agents.training.config import LinearLearningRate

    rates = [config.get(key) for key in ("learning_rate", "final_learning_rate", "clip_range")]
    if not all(isinstance(r, int | float) and math.isfinite(r) and r > 0 for r in rates):
        return {}
    start, end, clip = (float(r) for r in rates)
    return {"learning_rate": LinearLearningRate(start, end), "clip_range": clip}


# ------------------------------------------------------------- learning curves
def _win_rate_lines(
    ax, rows: list[dict], x: str, rate: str, interval: Callable, prefix: str = ""
) -> list[str]:
    """A line of the win rates row[RATE + name] by row[x] for each name in the rows'
    keys, in order, with a band where every point has its 95% interval (`interval(row,
    name)`); the names."""
    names = sorted({k.removeprefix(rate) for r in rows for k in r if k.startswith(rate)})
    for name in names:
        points = [r for r in rows if r.get(rate + name) is not None]
        xs = [r[x] for r in points]
        ax.plot(xs, [r[rate + name] for r in points], marker="o", ms=3, label=prefix + name)
        bands = [interval(r, name) for r in points]
        if all(isinstance(b, list | tuple) and len(b) == 2 for b in bands):
            ax.fill_between(xs, [b[0] for b in bands], [b[1] for b in bands], alpha=0.2)
    return names


def ppo_curve(history: list[dict], path: Path) -> list[dict]:
    """Plot the evaluation win rates (with 95% intervals) of each stage in turn, its steps
    counted after those of the stages before; a row of eval/... values per step."""
    rows: dict[int, dict] = {}
    for stage in history:
        for e in stage["evals"]:
            row = rows.setdefault(stage["offset"] + e["steps"], {})
            row["eval/mean_win_rate"] = e["mean_win_rate"]
            for name, r in e["results"].items():
                row[f"eval/win_rate/{name}"] = r["win_rate"]
                row[f"eval/ci95_low/{name}"], row[f"eval/ci95_high/{name}"] = r["ci95"]
    # In single precision, as the shipped cards' curves were logged (TensorBoard scalars).
    curve = [
        {"steps": s, **{k: float(np.float32(v)) for k, v in sorted(rows[s].items())}}
        for s in sorted(rows)
    ]
    with report.figure(path, figsize=(8, 4.5)) as (_, ax):
        ci95 = lambda r, name: (r[f"eval/ci95_low/{name}"], r[f"eval/ci95_high/{name}"])  # noqa: E731
        _win_rate_lines(ax, curve, "steps", "eval/win_rate/", ci95, prefix="vs ")
        ax.set(xlabel="training steps (learner decisions)", ylabel="win rate (95% interval)")
        for stage in history[1:]:
            ax.axvline(stage["offset"], color="grey", ls="--", lw=1)
            ax.annotate(
                f" {stage['run'].name}", (stage["offset"], 0.02), xycoords=("data", "axes fraction")
            )
        ax.set_title(f"Learning curve: {' then '.join(h['run'].name for h in history)}")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:  # a run without evaluations has no lines
            ax.legend()
    return curve


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
    with report.figure(path, figsize=(8, 4.5)) as (_, ax):
        ci95 = lambda r, label: r.get(f"ci95/{label}")  # noqa: E731
        labels = _win_rate_lines(ax, rows, "iteration", "win_rate/", ci95)
        ax.set(xlabel="iteration", ylabel="win rate of the planner (95% interval)")
        ax.grid(alpha=0.3)
        errors = [r for r in rows if r.get("exact_error") is not None]
        if errors:
            right = ax.twinx()
            x, y = [r["iteration"] for r in errors], [r["exact_error"] for r in errors]
            label = "2-player value error vs the exact solver (yardstick)"
            right.plot(x, y, color="black", ls=":", label=label)
            right.set_ylabel("mean |V_net - V_exact| (2 players)")
            right.legend(loc="lower right")
        if labels:
            ax.legend(loc="upper left", title="table (the planner + these seats)")
        ax.set_title("Learning curve of the planner's value network")
    return rows


def imitation_curve(evals: list[dict], path: Path, teacher: str = "optimal") -> list[dict]:
    """Plot an imitation run's stages (train_policy.py): its win rate at the teacher's
    table (at 2 players, against optimal) after each stage, by the decisions seen so far
    (with 95% intervals from the number of games), and the teacher's own there when the
    run measured it. Returns the plotted rows."""
    rows = []
    for e in evals:
        games = max(int(e.get("games", 1)), 1)
        rate = float(e["win_rate"])
        half = 1.96 * math.sqrt(max(rate * (1 - rate), 1e-12) / games)
        rows.append({**e, "ci95": [rate - half, rate + half]})
    with report.figure(path, figsize=(8, 4.5)) as (_, ax):
        xs = [r["decisions"] for r in rows]
        ax.errorbar(
            xs, [r["win_rate"] for r in rows], marker="o", capsize=3,
            yerr=[[r["win_rate"] - r["ci95"][0] for r in rows],
                  [r["ci95"][1] - r["win_rate"] for r in rows]],
            label="the network",
        )  # fmt: skip
        for r in rows:
            ax.annotate(f" {r['stage']}", (r["decisions"], r["win_rate"]), fontsize=8)
        if rows and "teacher_win_rate" in rows[-1]:
            ax.axhline(rows[-1]["teacher_win_rate"], color="grey", ls="--", lw=1, label=teacher)
        ax.set_xlabel(f"decisions seen ({teacher}'s games, then the network's own)")
        ax.set_ylabel(f"win rate at {teacher}'s table (95% interval)")
        ax.set_title(f"Learning curve: imitation of {teacher} with data aggregation")
        ax.grid(alpha=0.3)
        ax.legend()
    return rows


def imitation_card(args: argparse.Namespace, inputs: dict, evaluations: list) -> str:
    """The model card of an imitation run (train_policy.py): the method, its stages, its
    training time, its evaluation, and at 2 players its exact exploitability; at more,
    the teacher (the table's planner) evaluated at the same table on the same seed."""
    from fivethousand_rl.agents.best_response import exploitability

    config, history = inputs["config"], inputs["history"][-1]
    summary, agent = history["summary"], shown(inputs["target"] / "model.zip")
    [(n, _, evaluation, command)] = evaluations  # the one table it was trained at
    teacher = config.get("teacher", "optimal")
    table = ", ".join(config.get("table") or (["optimal"] if n == 2 else opponents(n)))
    stages_lines = "".join(
        f"\n  - {e['stage']}: {e['decisions']:,} decisions, {e['win_rate']:.1%} at the table "
        f"over {e.get('games', 0):,} games ({teacher}: {e.get('teacher_win_rate', 0.5):.1%}), "
        f"at {e['seconds'] / 60:.1f} min"
        for e in history["evals"]
    )
    if n == 2:
        gap = exploitability(  # every turn start of the game: the longest step of shipping
            str(inputs["clean"]), Rules(hold=config["hold"]), workers=args.workers
        )
        checks = (
            "- exact exploitability (`agents.best_response.exploitability`, what its best "
            f"response\n  wins beyond one half, averaged over both seats): {gap:.4f}"
        )
        plays, labels = "as the exact solution does", "the exact solution"
    else:
        checks = teacher_text(args, teacher, n, Rules(hold=config["hold"]), evaluation)
        plays, labels = f"as {teacher} does at its table", f"{teacher}'s action values"
    return f"""# {args.name}

One network for {n}-player 5000 (hold rule `{config["hold"]}`) that plays {plays},
with no search at play time: a single feed-forward graph from the
observation and the legal mask to the action (`agents/networks.py`, the action-scoring
network of the PPO agents, layers {config["state_layers"]} / {config["scorer_layers"]}),
trained by imitation of `{teacher}` with data aggregation
(`agents/training/imitation.py`). Play it anywhere an agent is named
(`python evaluate.py {agent} {table.replace(",", "")} --players {n}`), or export it:
`python export.py {agent} -o bots/{args.name}.onnx`.

{LICENSE_SECTION}
## Training

- first {config["first_games"]:,} games of {teacher} at its table ({table} after its seat),
  its seats recorded ({config["first_deviation"]:.0%} of recorded decisions replaced by a
  random legal one), then {config["rounds"]} rounds of {config["round_games"]:,} games of
  the network in its seat, the network's decisions labelled by {labels}; the loss is the
  cross-entropy against the softmax of the action values at temperature
  {config["temperature"]} (a mistake weighed by what it costs)
- stages:{stages_lines}
- wall-clock time on this 2-core machine: {summary.get("wall_seconds", 0) / 60:.1f} min
{checks}
{float16_text(args)}{record_text(history["commands"], config, preset=n > 2)}
{evaluation_text(args, evaluation, command, "![evaluation](evaluation.png)")}
{inputs["notes"]}
"""


def teacher_text(
    args: argparse.Namespace, teacher: str, players: int, rules: Rules, evaluation: dict
) -> str:
    """The teacher's win rate at the agent's evaluation table, played now on the same
    seed and games, beside the agent's: the card's comparison."""
    others = opponents(players)
    specs = [teacher, *others]
    games, seatings, policies = report.tournament_games(specs, players, args.games, rules)
    command = (
        f"python evaluate.py {' '.join(specs)} --games {args.games} --players {players} "
        f"--seed {args.seed} --workers {args.workers} --hold {rules.hold}"
    )
    theirs = report.play_and_report(
        specs, games, seatings, policies, rules, args.seed, command,
        asked=args.games, workers=args.workers,
    )  # fmt: skip
    # Each evaluation lists its agents as given: the one evaluated first.
    rate, mine = theirs["agents"][0]["win_rate"], evaluation["agents"][0]["win_rate"]
    return f"""- the teacher at the same table, seed and number of games (`{command}`):
  {rate:.1%}; this network {mine:.1%}, {100 * (mine - rate):+.1f} points"""


# ------------------------------------------------------------- timing and evaluation
def opponents(players: int) -> list[str]:
    """The agent's opponents in the evaluation: with 2 players a round robin with optimal
    and the scripted bots; with more, the standard table of scripted bots."""
    if players == 2:
        return ["optimal", "smart", "turn-ev", "threshold:350"]
    return tour.standard_table(players)


def games_per_second(agents: list[str], players: int, rules: Rules, seed: int) -> float:
    """Games per second of this evaluation in one process, timed on PILOT_GAMES games of
    each pairing (the first game, which loads the models, is not counted)."""
    for spec in agents:  # the exact solver is solved (or loaded) once, untimed
        make_policy(spec).prepare(rules)
    pilot = -(-PILOT_GAMES // players) * players
    seatings = tour.schedule(len(agents), players, pilot)
    times: list[float] = []
    tick = lambda _: times.append(time.perf_counter())  # noqa: E731
    tour.run(agents, seatings, rules, seed, chunk_size=1, on_progress=tick)
    return (len(times) - 1) / max(times[-1] - times[0], 1e-9)


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


def shown(path: Path) -> str:
    """A path as the card shows it: a shipped agent's model by the agent's name (the
    name plays it anywhere), else relative to the current folder when inside it."""
    for name, model in SHIPPED.items():
        if path.resolve() == (shipped_folder(name) / model).resolve():
            return name
    return progress.shown(path)


def build(args: argparse.Namespace, inputs: dict, out: Path) -> bool:
    """Write the shipped agent into the empty folder `out`, named as if it were
    `inputs["target"]`: the model (a planner's value_net.npz, else model.zip), config.json,
    learning_curve.*, an evaluation at each table size the run was trained at (against
    ``opponents``, as evaluate.py would: STEM.json, .md and .png) and the model card;
    False if an evaluation failed (said in one line)."""
    run, history, sizes, final = inputs["run"], inputs["history"], inputs["sizes"], inputs["target"]
    model, hold = inputs["model"].name, inputs["config"]["hold"]
    shutil.copy(inputs["clean"], out / model)  # rebuilt by write_clean_model, checked
    shutil.copy(run / "config.json", out / "config.json")
    png = out / "learning_curve.png"  # from the runs' evals.json, either kind
    imitation = inputs["config"].get("method") == "imitation"  # a run of train_policy.py
    if inputs["planner"]:
        curve = planner_curve(history[-1]["evals"], png)
    elif imitation:
        curve = imitation_curve(
            history[-1]["evals"], png, inputs["config"].get("teacher", "optimal")
        )
    else:
        curve = ppo_curve(history, png)
    (out / "learning_curve.json").write_text(json.dumps(curve, indent=2))
    evaluations = []
    for n in sizes:
        stem = "evaluation" if len(sizes) == 1 else f"evaluation-{n}p"  # or one of several
        agent, others = shown(final / model), opponents(n)
        options = [*others, "--games", str(args.games), "--players", str(n)]
        options += ["--seed", str(args.seed), "--workers", str(args.workers), "--hold", hold]
        outputs = [f"--{flag} {shown(final / f'{stem}.{ext}')}" for flag, ext in FILES]
        command = " ".join(["python evaluate.py", agent, *options, *outputs])  # as on the card
        specs, rules = [shown(out / model), *others], Rules(hold=hold)
        tournament = report.tournament_games(specs, n, args.games, rules)
        # The model played is the one in `out`; it is named by the place it is moved to.
        options = {"asked": args.games, "workers": args.workers, "shown": [agent, *others]}
        try:
            evaluation = report.play_and_report(
                specs, *tournament, rules, args.seed, command, **options
            )
        except RuntimeError as e:  # a worker failed
            print(f"error: {e}", file=sys.stderr)
            return False
        (out / f"{stem}.json").write_text(json.dumps(evaluation, indent=2))
        (out / f"{stem}.md").write_text(report.markdown(evaluation))
        report.plot(evaluation, out / f"{stem}.png")
        evaluations.append((n, stem, evaluation, command))
    write_card = planner_card if inputs["planner"] else imitation_card if imitation else card
    (out / "MODEL_CARD.md").write_text(write_card(args, inputs, evaluations))
    return True


# ------------------------------------------------------------- model cards
def planner_card(args: argparse.Namespace, inputs: dict, evaluations: list) -> str:
    """The model card of a planner: the method, its training, its evaluations."""
    config, history, best = inputs["config"], inputs["history"][-1], inputs["best"] or {}
    summary, agent = history["summary"], shown(inputs["target"] / VALUE_NET)
    sizes = " and ".join(map(str, inputs["sizes"]))
    games = best.get("games", summary.get("games", 0))
    hours, evals_hours = (summary.get(k, 0) / 3600 for k in ("wall_seconds", "eval_seconds"))
    seconds, error = best.get("wall_seconds"), best.get("exact_error")
    reached = error_line = ""
    if isinstance(seconds, (int, float)):
        reached = f"; the {args.model} network was reached after {seconds / 60:.1f} min"
    if isinstance(error, (int, float)):
        error_line = (
            f"\n- 2-player value error against the exact solver (a yardstick, never a "
            f"training target): mean |V_net - V_exact| = {error:.4f}"
        )
    hidden = config.get("hidden") if inputs["network"] is None else list(inputs["network"].hidden)
    averaged = ""
    if args.average_with:  # what the shipped network averages
        nets = [f"the run's {args.model} network", *(f"`{path}`" for path in args.average_with)]
        together = "both" if len(nets) == 2 else f"all {len(nets)}"
        averaged = (
            f"\n- shipped as the average of {', '.join(nets[:-1])} and {nets[-1]}: one network "
            f"of {together} side by side, whose logits are the mean of theirs "
            "(`fivethousand_rl.agents.value_net.average_nets`, `--average-with` of ship.py)"
        )
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

{LICENSE_SECTION}
## Training

- iterations: {inputs["iteration"]:,} (the {args.model} network, shipped; the run went on to
  {summary.get("iterations", 0):,}), games: {games:,}{init_line(config)}
- wall-clock time on this 2-core machine: {hours:.2f} h for the whole run, of which
  {evals_hours:.2f} h evaluations{reached}{error_line}
- network: tanh hidden layers {hidden}, 8 outputs (a softmax over the seats present){averaged}
{record_text(history["commands"], config)}{tables}
{inputs["notes"]}
"""


def tables_text(config: dict, agent: str) -> str:
    """Which games the planner plays, and how to play it, for the card."""
    table = planner_config(config).exact_table()
    if table:
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


def method_text(config: dict) -> str:
    """How a planner run learned its values, in words (its config's method)."""
    cfg = planner_config(config)
    if not cfg.exact_table():
        return "learned by fitted value iteration from self-play"
    tables = ", ".join(f"({','.join(t)})" for t in cfg.tables)
    if cfg.method == "best-response":
        return (
            "fitted to the exact best response at a fixed table of scripted bots (the bots "
            f"after its seat, in turn order: {tables}; `fivethousand_rl.agents.best_response`): "
            "its targets "
            "are the exact values of every position after its own turn, where the planner "
            "reads it; the network reads the agent's seat, so its values hold at that "
            "table only"
        )
    return (
        "learned as a best response to the scripted bots of fixed tables (the bots after "
        f"its seat, in turn order: {tables}): fitted by value iteration over every turn "
        "start of games there, the bots' included: a bot's turn valued by its exact ends "
        "(every roll and its choices, fivethousand_rl.envs.turn_outcomes), the planner's by "
        "its exact "
        "plan; the network reads the agent's seat; so its values hold at those tables only"
    )


def init_line(config: dict) -> str:
    """The network a run started from, with that run's own training time if it says."""
    if not config.get("init"):
        return ""
    name = config["init"]  # a shipped agent, or a path from the current folder
    init = shipped_folder(name) / SHIPPED[name] if name in SHIPPED else Path(name)
    line = f"\n- started from the network `{config['init']}`"
    try:
        record = json.loads(read_text_capped(init.parent / "eval.json"))
        return line + (
            f" (iteration {record['iteration']} of its own run, {init.parent.parent.name}, "
            f"reached after {record['wall_seconds'] / 3600:.2f} h of that run)"
        )
    except (OSError, ValueError, KeyError, TypeError):  # no run's record beside it
        return line


def card(args: argparse.Namespace, inputs: dict, evaluations: list) -> str:
    """The model card: what the agent is, how it was trained, how it plays."""
    config, history = inputs["config"], inputs["history"]
    [(_, _, evaluation, command)] = evaluations  # a PPO model plays one table size
    agent, summary = shown(inputs["target"] / "model.zip"), history[-1]["summary"]
    best_eval = inputs["best"] or {}
    steps = history[-1]["offset"] + (best_eval.get("steps") or summary.get("steps") or 0)
    hours = sum(h["summary"].get("wall_seconds", 0) for h in history) / 3600
    stage_lines = "".join(
        f"\n  - `{shown(h['run'])}`: {h['summary'].get('steps', 0):,} steps, "
        f"{h['summary'].get('wall_seconds', 0) / 3600:.2f} h"
        + (f", starting from `{h['config']['init_from']}`" if h["config"].get("init_from") else "")
        for h in history
    )
    stages_text = f"\n- stages, in order:{stage_lines}" if len(history) > 1 else ""
    return f"""# {args.name}

A MaskablePPO agent for {config["players"]}-player 5000 (hold rule `{config["hold"]}`), trained by
reinforcement against scripted bots and its own snapshots. Play it anywhere an agent
is named: `python evaluate.py {agent} smart`, or as `{agent}` in the environment's
opponents.

{LICENSE_SECTION}
## Training

- steps: {steps:,} learner decisions in all (the {args.model} model; the last run so far:
  {summary.get("steps", 0):,}){stages_text}
- wall-clock time on this 2-core machine: {hours:.2f} h
- network: `agents/networks.py` (action-scoring policy on the "rich" observation)
{float16_text(args)}{record_text([c for h in history for c in h["commands"]], config)}
{evaluation_text(args, evaluation, command, "![evaluation](evaluation.png)")}
{inputs["notes"]}
"""


def float16_text(args: argparse.Namespace) -> str:
    """A card's line on ship --float16 (its own line), or nothing."""
    if not getattr(args, "float16", False):
        return ""
    return (
        "- weights rounded to float16 precision when shipped (`ship.py --float16`, "
        "`agents.shipping.round_to_float16`):\n  the evaluation plays the rounded network; "
        "its export bundle stores them as float16\n"
    )


def record_text(commands: list[str], config: dict, preset: bool = True) -> str:
    """The end of a card's training section (the commands that made the run, its
    configuration) and its learning curve, up to its evaluation."""
    preset_text = f" (preset `{config.get('preset') or 'none'}`)" if preset else ""
    return f"""- command(s), from the run's `command.txt`:

```
{chr(10).join(commands)}
```

- configuration: `config.json` beside this card{preset_text}.

![learning curve](learning_curve.png)

## Evaluation
"""


def evaluation_text(args: argparse.Namespace, evaluation: dict, command: str, picture: str) -> str:
    """One evaluation on a card: its games, its command, its tables, its picture."""
    return f"""{args.games:,} games per pairing, seats rotated, seed {args.seed}:

```
{command}
```

{report.markdown(evaluation)}
{picture}
"""
