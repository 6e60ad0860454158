"""Sweep training settings on Ray Tune: a grid or a random search over any config
fields and seeds, each trial an ordinary train.py run, weak trials stopped early (ASHA)
on the evaluation win rate.

    python sweep.py --preset quick --grid learning_rate=1e-4,3e-4 --seeds 0 1
    python sweep.py --preset quick --sample learning_rate=loguniform:1e-5:1e-3 \\
        --sample ent_coef=uniform:0:0.02 --samples 8 --params n_timesteps=300000
    python sweep.py --resume sweep_quick          # continue an interrupted sweep
    python sweep.py ... --ray 10.0.0.5:6379       # on a cluster (default: a local Ray)

Top to bottom: the command line, the search space (checked before anything starts: a
bad key or value is refused in one line), one trial (a train.py run whose evaluations
are reported to Tune), the sweep, the results. A sweep's folder (checkpoints/sweeps/NAME
in the current folder, or under --checkpoints) holds sweep.json (what was asked), runs/
(one run folder per trial: config, TensorBoard logs, latest and best model; each can be
continued with ``train.py --resume``), tune/ (Ray Tune's own state) and the results:
results.csv, results.md and curves.png.

Ray is an optional extra: pip install -e '.[ray]'. Installed, the same program is
``fivethousand sweep``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import math
import os
import shlex
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import tyro

try:  # an optional extra: main() says how to install it when it is missing
    from ray import tune
    from ray.tune import Callback
except ImportError:
    tune, Callback = None, object

import fivethousand_rl
from fivethousand_rl.agents.base import (
    atomic_write,
    brief_repr,
    check_output_folder,
    duration,
    read_text_capped,
)
from fivethousand_rl.agents.training.config import (
    RUNS,
    TrainConfig,
    as_number,
    check_plain_name,
    check_resume_flags,
    check_runs_folder,
    is_preset_name,
    load_preset,
    load_yaml,
    make_config,
    new_run_config,
    read_run_config,
    with_params,
)

SCRIPT = "python sweep.py"  # how the command names itself when run as a script
LIBRARY = Path(fivethousand_rl.__file__).resolve().parent.parent  # the folder holding the package
METRIC = "mean_win_rate"  # train.py's evaluation score: the mean over its opponents
DISTRIBUTIONS = ("uniform", "loguniform", "randint", "choice")


# ============================================================== command line
@dataclass
class SweepArgs:
    """Sweep training settings on Ray Tune: every combination of --grid values and
    --seeds, times --samples draws of the --sample distributions; each trial is a
    train.py run from --preset with --params, stopped early by ASHA when its evaluation
    win rate falls behind."""

    preset: str = "quick"
    """The preset every trial starts from (a name from hyperparams/ or a .yaml file)."""
    params: list[str] = field(default_factory=list)
    """Settings fixed for every trial, as KEY=VALUE (as train.py --params)."""
    grid: list[str] = field(default_factory=list)
    """A setting to try at each of several values: KEY=V1,V2,... or KEY=[V1, V2] (YAML,
    for list values: opponents=[[smart], [smart, turn-ev]])."""
    sample: list[str] = field(default_factory=list)
    """A setting drawn at random: KEY=uniform:LOW:HIGH, loguniform:LOW:HIGH,
    randint:LOW:HIGH (both ends included) or choice:V1,V2,..."""
    samples: int = 1
    """Draws of the --sample settings for each combination of --grid values and seeds."""
    seeds: list[int] = field(default_factory=lambda: [0])
    """Training seeds: every setting is trained once per seed."""
    name: str = ""
    """The sweep's folder under checkpoints/sweeps/ (default: sweep_{preset})."""
    resume: str | None = None
    """Continue the sweep in this folder (or of this name): unfinished trials go on from
    their run's latest checkpoint; only --ray, --checkpoints and --no-progress may be
    given too."""
    checkpoints: str | None = None
    """The runs folder; sweeps go in its sweeps/ (default: checkpoints/ in the current
    folder)."""
    ray: str | None = None
    """Ray to run on: the head's HOST:PORT (or ray://HOST:PORT, or 'auto' for the
    cluster started on this machine); default: a private local Ray on this machine."""
    cpus: int | None = None
    """CPUs of the private local Ray (default: all of this machine's)."""
    cpus_per_trial: float = 1.0
    """CPUs reserved by each trial (train.py uses one torch thread by default)."""
    max_concurrent: int = 0
    """Most trials running at once (0: as many as the CPUs allow)."""
    asha: bool = True
    """Stop trials early with ASHA (on the evaluation win rate, by training steps)."""
    grace_period: int = 0
    """Steps every trial trains before ASHA may stop it (0: two evaluations' worth)."""
    reduction_factor: int = 2
    """ASHA's reduction factor: about 1/factor of the trials pass each rung."""
    sweep_seed: int = 0
    """Seed of the random draws of --sample (the trainings have their own: --seeds)."""
    progress: bool = True
    """Show a progress bar of the trials."""


# What a sweep is (saved in sweep.json, restored by --resume).
SWEEP_FLAGS = (
    "preset", "params", "grid", "sample", "samples", "seeds", "asha", "grace_period",
    "reduction_factor", "sweep_seed", "cpus_per_trial", "max_concurrent",
)  # fmt: skip
RESUME_FLAGS = ["--ray", "--checkpoints", "--cpus", "--no-progress"]  # what --resume takes


# ============================================================== the search space
def scalar(value):
    """A YAML value, with numbers YAML 1.1 leaves as text ("1e-4") made numbers."""
    if isinstance(value, list):
        return [scalar(v) for v in value]
    return as_number(value) if isinstance(value, str) else value


def parse_grid(item: str) -> tuple[str, list]:
    """ "lr=1e-4,3e-4" -> ("lr", [1e-4, 3e-4]); "opponents=[[smart], [turn-ev]]" (YAML)."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip() or not raw.strip():
        raise ValueError(f"--grid takes KEY=V1,V2,..., got {item!r}")
    try:
        if raw.lstrip().startswith("["):
            values = scalar(load_yaml(raw))
        else:
            values = [scalar(load_yaml(v)) for v in raw.split(",")]
    except ValueError as e:
        raise ValueError(f"--grid {brief_repr(item)}: the values are not YAML: {e}") from None
    if not isinstance(values, list) or not values:
        raise ValueError(f"--grid {item!r}: give at least one value")
    return key.strip(), values


def parse_sample(item: str) -> tuple[str, str, list]:
    """ "lr=loguniform:1e-5:1e-3" -> ("lr", "loguniform", [1e-5, 1e-3])."""
    key, sep, raw = item.partition("=")
    kind, _, rest = raw.partition(":")
    if not sep or not key.strip() or kind not in DISTRIBUTIONS or not rest:
        raise ValueError(
            f"--sample takes KEY=DIST:..., DIST one of {', '.join(DISTRIBUTIONS)}, got {item!r}"
        )
    try:
        args = [scalar(load_yaml(v)) for v in rest.split("," if kind == "choice" else ":")]
    except ValueError as e:
        raise ValueError(f"--sample {brief_repr(item)}: the values are not YAML: {e}") from None
    if kind != "choice":
        numbers = all(isinstance(a, int | float) and not isinstance(a, bool) for a in args)
        if len(args) != 2 or not numbers or not args[0] < args[1]:
            raise ValueError(f"--sample {item!r}: {kind} takes LOW:HIGH, two numbers, LOW < HIGH")
        if kind == "loguniform" and args[0] <= 0:
            raise ValueError(f"--sample {item!r}: loguniform needs LOW > 0")
        if kind == "randint" and not all(isinstance(a, int) for a in args):
            raise ValueError(f"--sample {item!r}: randint takes two integers")
    return key.strip(), kind, args


@dataclass
class Space:
    """What a sweep varies: grid values, distributions and seeds, over a base run."""

    preset: str
    params: list[str]
    grid: dict[str, list]
    sample: dict[str, tuple[str, list]]
    seeds: list[int]
    samples: int

    @property
    def varied(self) -> list[str]:
        """The settings that differ between trials, seed last."""
        return [*self.grid, *self.sample, *(["seed"] if len(self.seeds) > 1 else [])]

    @property
    def trials(self) -> int:
        return math.prod(len(v) for v in self.grid.values()) * len(self.seeds) * self.samples

    def check(self) -> TrainConfig:
        """Build and validate the config of every grid point, and of each distribution's
        ends (or choices), so that no trial fails on a bad value; the base config."""
        base = with_params(load_preset(self.preset), self.params)
        values = dataclasses.asdict(base)
        for point in itertools.product(*self.grid.values(), self.seeds):
            values.update(zip([*self.grid, "seed"], point, strict=True))
            for key, (_, ends) in self.sample.items():
                for end in ends:
                    make_config({**values, key: end, "run_name": "check"}).validate()
            make_config({**values, "run_name": "check"}).validate()
        return base

    def tune_space(self, tune) -> dict:
        """The param_space of Ray Tune."""
        space: dict = {key: tune.grid_search(values) for key, values in self.grid.items()}
        space["seed"] = tune.grid_search(self.seeds)
        for key, (kind, args) in self.sample.items():
            if kind == "randint":
                args = [args[0], args[1] + 1]  # Tune's high is excluded
            space[key] = tune.choice(args) if kind == "choice" else getattr(tune, kind)(*args)
        return space


def build_space(args: SweepArgs) -> Space:
    grid = dict(parse_grid(item) for item in args.grid)
    sample = {key: (kind, a) for key, kind, a in map(parse_sample, args.sample)}
    if "seed" in grid or "seed" in sample:
        raise ValueError("seeds are given with --seeds, not --grid or --sample")
    if overlap := sorted(set(grid) & set(sample)):
        raise ValueError(f"{overlap[0]} is both in --grid and in --sample")
    if len(set(args.seeds)) != len(args.seeds) or min(args.seeds, default=-1) < 0:
        raise ValueError(f"--seeds must be distinct, 0 or more, got {args.seeds}")
    if args.samples < 1:
        raise ValueError(f"--samples must be positive, got {args.samples}")
    if args.samples > 1 and not sample:
        raise ValueError("--samples draws the --sample settings: give at least one --sample")
    space = Space(args.preset, list(args.params), grid, sample, list(args.seeds), args.samples)
    if space.trials < 2:
        raise ValueError("nothing to sweep: give --grid, --sample or several --seeds")
    return space


def check_numbers(args: SweepArgs) -> None:
    if args.cpus_per_trial <= 0:
        raise ValueError(f"--cpus-per-trial must be positive, got {args.cpus_per_trial:g}")
    if args.cpus is not None and args.cpus < 1:
        raise ValueError(f"--cpus must be positive, got {args.cpus}")
    if args.max_concurrent < 0 or args.grace_period < 0:
        raise ValueError("--max-concurrent and --grace-period must be 0 or more")
    if args.reduction_factor < 2:
        raise ValueError(f"--reduction-factor must be 2 or more, got {args.reduction_factor}")


# ============================================================== one trial
def run_trial(space: dict, settings: dict) -> None:
    """One trial, in a Ray worker: a train.py run with the trial's values (or resuming
    its run after an interruption), each evaluation reported to Tune."""
    sys.path.insert(0, settings["library"])  # this project's packages, in a Ray worker
    from fivethousand_rl.agents.threads import one_thread_per_process
    from fivethousand_rl.agents.training import checkpoint, ppo

    one_thread_per_process()  # trials side by side; the run then sets torch_threads

    def report(steps: int, score: float, results: dict) -> None:
        rates = {f"win_rate/{name}": r["win_rate"] for name, r in results.items()}
        tune.report({"steps": steps, METRIC: score, **rates})

    runs = Path(settings["runs"])
    name = tune.get_context().get_trial_name()
    run_dir = runs / name
    summary = run_dir / "summary.json"
    if summary.exists():  # finished before the sweep was interrupted: report its end
        last = json.loads(read_text_capped(summary))["last_eval"]
        report(last["steps"], last["mean_win_rate"], last["results"])
        return
    values = [f"{key}={json.dumps(value)}" for key, value in space.items()]
    if (run_dir / "latest").is_dir():
        argv = ["--resume", str(run_dir)]
        config = read_run_config(run_dir)
        extra = checkpoint.read_checkpoint(run_dir, config)
    else:
        argv = ["--preset", settings["preset"], "--run-name", name]
        argv += ["--params", *settings["params"], *values]
        base = dataclasses.replace(load_preset(settings["preset"]), run_name=name)
        config, extra = new_run_config(base, [*settings["params"], *values], True), None
    argv += ["--checkpoints", str(runs), "--no-progress"]
    code = ppo.train(config, run_dir, extra, ["python", "train.py", *argv], None, False, report)
    if code != 0:
        raise RuntimeError(f"train.py {shlex.join(argv)} exited with code {code}")


# ============================================================== the sweep
def sweep_dir(args: SweepArgs) -> Path:
    """The sweep's folder: one to --resume, else a new one (not there yet), checked to be
    writable before Ray starts."""
    checkpoints = Path(args.checkpoints) if args.checkpoints else RUNS
    if args.checkpoints:  # a mistyped /nonexistent/x: refused, not made from the root
        check_runs_folder(checkpoints, "--checkpoints")
    if args.resume:
        given = Path(args.resume)
        folder = given if (given / "sweep.json").exists() else checkpoints / "sweeps" / given
        if not (folder / "sweep.json").is_file():
            raise ValueError(f"no sweep at {args.resume} (no sweep.json there or in sweeps/)")
    else:
        preset = args.preset if is_preset_name(args.preset) else Path(args.preset).stem
        name = args.name or f"sweep_{preset}"
        check_plain_name(name)
        folder = checkpoints / "sweeps" / name
        if folder.exists():
            raise ValueError(f"{folder} exists: --resume {folder} to continue it, or pick --name")
    check_output_folder(folder, "the sweep folder")
    return folder.resolve()


def trial_name(trial) -> str:
    """A plain folder name per trial: t000_seed0, t001_seed1, ... (Tune's counter)."""
    return f"t{int(trial.trial_id.rsplit('_', 1)[-1]):03d}_seed{trial.config.get('seed', 0)}"


def make_tuner(args: SweepArgs, space: Space, folder: Path, base: TrainConfig):
    from ray.tune.schedulers import ASHAScheduler
    from ray.tune.search import BasicVariantGenerator

    preset = space.preset if is_preset_name(space.preset) else str(Path(space.preset).resolve())
    settings = {"library": str(LIBRARY), "runs": str(folder / "runs"), "preset": preset}
    settings["params"] = space.params
    trainable = tune.with_resources(
        tune.with_parameters(run_trial, settings=settings), {"cpu": args.cpus_per_trial}
    )
    scheduler = None
    if args.asha:
        scheduler = ASHAScheduler(
            time_attr="steps",
            # Past the last evaluation: a run that reaches its end finishes by itself.
            max_t=base.n_timesteps + base.n_envs * base.n_steps + 1,
            grace_period=args.grace_period or max(1, 2 * base.eval_freq),
            reduction_factor=args.reduction_factor,
        )
    progress = TrialProgress(space.trials, show=args.progress)
    if args.resume:
        tuner = tune.Tuner.restore(
            str(folder / "tune"), trainable, resume_unfinished=True, resume_errored=True
        )
    else:
        tuner = tune.Tuner(
            trainable,
            param_space=space.tune_space(tune),
            tune_config=tune.TuneConfig(
                metric=METRIC,
                mode="max",
                scheduler=scheduler,
                num_samples=space.samples,
                max_concurrent_trials=args.max_concurrent or None,
                search_alg=BasicVariantGenerator(random_state=args.sweep_seed),
                trial_name_creator=trial_name,
                trial_dirname_creator=trial_name,
            ),
            run_config=tune.RunConfig(
                name="tune", storage_path=str(folder), callbacks=[progress], verbose=0
            ),
        )
    return tuner, progress


class TrialProgress(Callback):
    """A Tune callback in this process: a bar of the trials done and one line per
    evaluation (Tune's own tables are turned off)."""

    def __init__(self, total: int, show: bool) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        self.total, self.show = total, show
        columns = (BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        self.bar = Progress("trials", *columns, console=Console(stderr=True), disable=not show)
        self.task = self.bar.add_task("trials", total=total)

    def __reduce__(self):  # Tune saves its callbacks with the sweep: the bar is rebuilt
        return TrialProgress, (self.total, self.show)

    def on_trial_result(self, iteration, trials, trial, result, **info) -> None:
        self.bar.console.print(
            f"{trial}: step {result['steps']:,}, mean win rate {result[METRIC]:.1%}"
        )

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        self.bar.advance(self.task)

    def on_trial_error(self, iteration, trials, trial, **info) -> None:
        self.bar.console.print(f"{trial}: failed (its error.txt is under tune/)")
        self.bar.advance(self.task)


# ============================================================== results
def evaluations(run_dir: Path) -> list[dict]:
    """A run's evaluations (its evals.json: the record, whatever Tune heard of them)."""
    path = run_dir / "evals.json"
    return json.loads(read_text_capped(path)) if path.exists() else []


def results_rows(result_grid, varied: list[str], runs: Path) -> list[dict]:
    """One row per trial: its values, how far it got, its best and last evaluation."""
    rows = []
    for result in result_grid:
        name = Path(result.path).name
        evals = evaluations(runs / name)
        row = {"trial": name, **{k: result.config.get(k) for k in varied}}
        row.update(steps=0, best_win_rate=None, best_at_steps=None, last_win_rate=None)
        if evals:
            best, last = max(evals, key=lambda e: e[METRIC]), evals[-1]
            row.update(steps=last["steps"], best_win_rate=best[METRIC], best_at_steps=best["steps"])
            row["last_win_rate"] = last[METRIC]
        finished = (runs / name / "summary.json").exists()  # ASHA stops the others
        row["status"] = "error" if result.error else "finished" if finished else "stopped early"
        row["run"] = str(runs / name)
        rows.append(row)
    return sorted(rows, key=lambda r: (r["best_win_rate"] is None, -(r["best_win_rate"] or 0)))


def write_results(folder: Path, rows: list[dict], varied: list[str]) -> None:
    import csv

    columns = ["trial", *varied, "status", "steps", "best_win_rate", "best_at_steps"]
    columns += ["last_win_rate", "run"]

    def write_csv(aside: str) -> None:
        with open(aside, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)

    # Whole or not at all (a full disk): a resumed sweep rewrites them from its trials.
    atomic_write(folder / "results.csv", write_csv)
    atomic_write(folder / "results.md", markdown(rows, varied))


def cell(value) -> str:
    return "-" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)


def markdown(rows: list[dict], varied: list[str]) -> str:
    """The trials, best first; with several seeds, also each setting's mean over them."""
    head = ["trial", *varied, "status", "steps", "best win rate", "at steps", "last win rate"]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    lines += ["| " + " | ".join(trial_cells(r, varied)) + " |" for r in rows]
    settings = [k for k in varied if k != "seed"]
    if "seed" in varied and settings:
        lines += ["", "| " + " | ".join(settings) + " | seeds | mean best win rate |"]
        lines.append("|---" * (len(settings) + 2) + "|")
        groups: dict[tuple, list[float]] = {}
        for r in rows:
            key = tuple(json.dumps(r[k]) for k in settings)
            if r["best_win_rate"] is not None:
                groups.setdefault(key, []).append(r["best_win_rate"])
        for key, rates in sorted(groups.items(), key=lambda kv: -sum(kv[1]) / len(kv[1])):
            cells = [*(cell(json.loads(k)) for k in key), str(len(rates))]
            lines.append("| " + " | ".join([*cells, pct(sum(rates) / len(rates))]) + " |")
    return "\n".join(lines) + "\n"


def trial_cells(r: dict, varied: list[str]) -> list[str]:
    """One trial's row of the results tables, as text."""
    cells = [r["trial"], *(cell(r[k]) for k in varied), r["status"], steps(r["steps"])]
    return cells + [pct(r["best_win_rate"]), steps(r["best_at_steps"]), pct(r["last_win_rate"])]


def steps(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def plot_curves(rows: list[dict], path: Path) -> None:
    """Each trial's evaluation win rate against training steps."""
    from fivethousand_rl.agents.base import figure  # saved without a display

    with figure(path, figsize=(8, 5)) as (_, ax):
        for row in rows:
            if evals := evaluations(Path(row["run"])):
                steps, rates = [e["steps"] for e in evals], [e[METRIC] for e in evals]
                ax.plot(steps, rates, marker="o", ms=3, label=row["trial"])
        ax.set_xlabel("training steps")
        ax.set_ylabel("evaluation mean win rate")
        ax.set_title("sweep: each trial's evaluations (a line that stops early: ASHA)")
        if ax.lines:
            ax.legend(fontsize=7, ncol=2)


def print_results(rows: list[dict], varied: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    from fivethousand_rl.agents.tournament_report import (
        print_whole,  # a table wider than the terminal, uncut
    )

    table = Table(title="sweep results, best first")
    for col in ["trial", *varied, "status", "steps", "best", "at steps", "last"]:
        table.add_column(col, justify="left" if col in ("trial", "status") else "right")
    for r in rows:
        table.add_row(*trial_cells(r, varied))
    print_whole(Console(), table)


# ============================================================== main
def prepare(args: SweepArgs, given: frozenset[str]) -> tuple[SweepArgs, Space, Path, TrainConfig]:
    """The sweep's settings (for --resume: as saved), its space, folder and base config,
    everything checked before Ray starts or anything is written (ValueError)."""
    check_numbers(args)
    folder = sweep_dir(args)
    if args.resume:
        check_resume_flags(given, RESUME_FLAGS, "a sweep as it was asked")
        try:
            saved = json.loads(read_text_capped(folder / "sweep.json"))
            args = dataclasses.replace(args, **{k: saved[k] for k in SWEEP_FLAGS})
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as e:
            raise ValueError(f"cannot read {folder / 'sweep.json'}: {e!r}") from None
        check_numbers(args)
    space = build_space(args)
    return args, space, folder, space.check()


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The command line's exit code; `prog`: the command as typed, for its usage and its
    record (default: this script's)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    from fivethousand_rl.agents import ray_tools

    with contextlib.ExitStack() as ray_session:  # a Ray started here stops at the end
        try:
            given = frozenset(a.split("=", 1)[0] for a in argv if a.startswith("--"))
            args = tyro.cli(SweepArgs, args=argv, prog=prog)
            args, space, folder, base = prepare(args, given)
            ray_session.enter_context(ray_tools.session(args.ray, num_cpus=args.cpus))
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        cpus = ray_tools.cluster_cpus()
        return run_sweep(args, argv, space, folder, base, cpus, prog or SCRIPT)


def run_sweep(
    args: SweepArgs,
    argv: list[str],
    space: Space,
    folder: Path,
    base: TrainConfig,
    cpus: int,
    prog: str = SCRIPT,
) -> int:
    """Record the sweep (a new one; `prog` and `argv`: its command as typed), run it on
    the Ray joined, write and show the results; the exit code."""
    if not args.resume:
        folder.mkdir(parents=True)
        record = {k: getattr(args, k) for k in SWEEP_FLAGS}
        atomic_write(folder / "sweep.json", json.dumps(record, indent=2) + "\n")
        with open(folder / "command.txt", "a") as f:
            f.write(shlex.join([*shlex.split(prog), *argv]) + "\n")
    print(
        f"sweep {folder}: {space.trials} trials of {base.n_timesteps:,} steps "
        f"({', '.join(space.varied)} varied), {cpus} CPUs, "
        f"{'ASHA early stopping' if args.asha else 'no early stopping'}",
        flush=True,
    )
    tuner, progress = make_tuner(args, space, folder, base)
    started = time.monotonic()
    # Ctrl-C (or SIGTERM) stops here, not in Tune's loop, which would go on to report
    # the stopped trials as ended: each trial keeps its run's latest checkpoint.
    os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = "1"
    on_sigterm = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        with progress.bar:
            result_grid = tuner.fit()
    except KeyboardInterrupt:
        print(f"interrupted; continue with: {prog} --resume {folder}", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, on_sigterm)
    rows = results_rows(result_grid, space.varied, folder / "runs")
    write_results(folder, rows, space.varied)
    plot_curves(rows, folder / "curves.png")
    print_results(rows, space.varied)
    print(f"{len(rows)} trials in {duration(time.monotonic() - started)} on {cpus} CPUs")
    print(f"results: {folder / 'results.md'}, {folder / 'results.csv'}, {folder / 'curves.png'}")
    failed = sum(r["status"] == "error" for r in rows)
    return 1 if failed else 0
