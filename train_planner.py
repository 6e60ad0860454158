"""Train the planner agent: a value network of turn-start positions, learned by fitted
value iteration from self-play, each turn planned exactly against it.

    python train_planner.py --preset planner_2p           # a preset from hyperparams/
    python train_planner.py --players 3 4 6 --iterations 200 --opponents smart turn-ev \\
        --opponent-share 0.5
    python train_planner.py --resume checkpoints/RUN   # continue an interrupted run
    python train_planner.py --resume RUN --iterations 120      # extend a finished run

Top to bottom: the command line (PlannerConfig and Args), the run's config and folder,
the training loop (iterate, log, evaluate, checkpoint), the end. The trainer, its
config and the evaluation are in agents/training/value_iteration.py. A run's folder
(checkpoints/NAME) holds config.json, command.txt, TensorBoard logs (tb/), the latest
state (latest/: to resume bit for bit) and the best network (best/value_net.npz).
"""

from __future__ import annotations

import contextlib
import dataclasses
import pickle
import shlex
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, get_type_hints

import tyro

from agents.base import check_output_folder
from agents.neural import first_line
from agents.training.checkpoint import atomic_write, find_run, read_config_json, save_json
from agents.training.config import (
    check_plain_name,
    is_preset_name,
    parse_params,
    read_preset,
    to_number,
)
from agents.training.progress import duration, shown
from agents.training.value_iteration import (
    PlannerConfig,
    ValueIteration,
    evaluate,
    exact_error,
    table_label,
    without_removed,
)

ROOT = Path(__file__).resolve().parent


# ============================================================== command line
@dataclass
class Args:
    """Train the planner agent (a value network + exact turn planning). A run starts from
    the defaults below, then a preset (--preset), then the flags, then --params. Ctrl-C
    stops, keeping the last checkpoint."""

    config: Annotated[PlannerConfig, tyro.conf.arg(name="")] = field(default_factory=PlannerConfig)
    params: list[str] = field(default_factory=list)
    """Any config key as KEY=VALUE (YAML values, lists as [a, b]), applied last."""
    resume: str | None = None
    """Continue the run in this folder (or of this name under --checkpoints), as it was
    configured: only --iterations, --stop-after, --workers and --no-progress may be
    given too."""
    stop_after: int | None = None
    """Stop once a checkpoint at or past this iteration is saved (to train in pieces)."""
    checkpoints: str | None = None
    """The runs folder (default: checkpoints/ beside this script)."""
    progress: bool = True
    """Show a progress bar."""


RESUME_FLAGS = {
    "--resume", "--iterations", "--stop-after", "--no-progress", "--checkpoints", "--workers"
}  # fmt: skip
TYPES = get_type_hints(PlannerConfig)


def parse_args(argv: list[str]) -> tuple[Args, set[str]]:
    """The command line (a preset's values become the defaults under the flags) and the
    flags given."""
    given = {arg.split("=", 1)[0] for arg in argv if arg.startswith("--")}
    cli = {"args": argv, "config": (tyro.conf.OmitArgPrefixes,)}
    args = tyro.cli(Args, **cli)
    if "--preset" in given:
        preset = load_preset(args.config.preset)
        args = tyro.cli(Args, **cli, default=Args(config=preset))
    return args, given


KINDS = {int: "an integer", float: "a number", str: "a string"}
KINDS.update({list[int]: "a list of integers", list[str]: "a list of names"})


def fits(value: Any, kind: Any) -> bool:
    """`value` (from YAML or JSON) is of the config type `kind` (ints pass as floats)."""
    if kind in (list[int], list[str]):
        return isinstance(value, list) and all(fits(v, kind.__args__[0]) for v in value)
    if isinstance(value, bool):
        return False
    return isinstance(value, kind) or (kind is float and isinstance(value, int))


def config_from(values: dict[str, Any], where: str) -> PlannerConfig:
    """A PlannerConfig from YAML or JSON values, or a one-line ValueError naming `where`
    and the key."""
    typed = {}
    for key, value in values.items():
        if key not in TYPES:
            raise ValueError(f"{where}: unknown key {key!r}; known: {', '.join(TYPES)}")
        if TYPES[key] in (int, float) and isinstance(value, str):  # YAML 1.1 reads 1e-3 as text
            with contextlib.suppress(ValueError):
                value = to_number(key, value, TYPES[key])
        if not fits(value, TYPES[key]):
            raise ValueError(f"{where}: {key} must be {KINDS[TYPES[key]]}, got {value!r}")
        typed[key] = value
    return PlannerConfig(**typed)


def load_preset(preset: str) -> PlannerConfig:
    path, values = read_preset(preset, "train_planner.py")
    where = f"preset {path}"  # a preset of before issue 29 may name the table method's settings
    return config_from(without_removed({**values, "preset": preset}, where), where)


def default_run_name(config: PlannerConfig) -> str:
    prefix = config.preset if is_preset_name(config.preset) else Path(config.preset).stem
    prefix = prefix or f"custom_planner_{'-'.join(map(str, config.players))}p"
    return f"{prefix}_{config.hold}_seed{config.seed}"


def prepare(args: Args, given: set[str]) -> tuple[PlannerConfig, Path, dict | None, dict | None]:
    """The run's config and folder, for --resume its saved state, and for --buffer-from
    the trainer state whose buffer it starts from; everything checked before any work or
    any write (ValueError: one line for the user)."""
    if args.stop_after is not None and args.stop_after < 1:
        raise ValueError(f"--stop-after must be positive, got {args.stop_after}")
    runs = Path(args.checkpoints) if args.checkpoints else ROOT / "checkpoints"
    if not args.resume:
        check_output_folder(runs, "--checkpoints")  # the run folder is made in it
        values = {**dataclasses.asdict(args.config), **parse_params(args.params)}
        config = config_from(values, "--params")  # the flags' values are typed already
        if "--run-name" in given or config.run_name:
            check_plain_name(config.run_name)
        config.validate()
        config.run_name = config.run_name or default_run_name(config)
        check_plain_name(config.run_name)
        buffer = buffer_source(config, runs)["trainer"] if config.buffer_from else None
        run_dir = runs / config.run_name
        if run_dir.exists():
            raise ValueError(
                f"{run_dir} exists: --resume {run_dir} to continue it, or pick another --run-name"
            )
        return config, run_dir, None, buffer
    if fixed := sorted(given - RESUME_FLAGS):
        raise ValueError(
            f"--resume continues a run as configured; it takes only --iterations, "
            f"--stop-after, --workers, --no-progress (not {fixed[0]})"
        )
    run_dir = find_run(args.resume, runs)
    check_output_folder(run_dir, "--resume")
    config = read_config(run_dir)
    if "--iterations" in given:
        config.iterations = args.config.iterations
    if "--workers" in given:  # the samples do not depend on it
        config.workers = args.config.workers
    config.validate(check_init=False)  # the saved state holds the weights
    return config, run_dir, read_state(run_dir), None


SAME_GAME = ("method", "hold", "target", "entry", "players", "eval_tables")


def buffer_source(config: PlannerConfig, runs: Path) -> dict:
    """The saved state of the run `config.buffer_from` names, checked to have met the
    positions of this run's game (same method, rules, table sizes and tables)."""
    try:
        source = find_run(config.buffer_from, runs)
    except ValueError:
        there = config.buffer_from
        raise ValueError(f"--buffer-from {there}: no run there (no config.json)") from None
    theirs = dataclasses.asdict(read_config(source))
    for key in SAME_GAME:
        if theirs[key] != getattr(config, key):
            raise ValueError(
                f"--buffer-from {config.buffer_from}: that run's {key} is {theirs[key]!r}, "
                f"this run's {getattr(config, key)!r}"
            )
    return read_state(source)


def read_config(run_dir: Path) -> PlannerConfig:
    """A run's config.json as its PlannerConfig (an older run's unused settings of the
    removed table method dropped, a run of that method refused: one-line ValueError)."""
    path = run_dir / "config.json"
    return config_from(without_removed(read_config_json(path), str(path)), str(path))


STATE_KEYS = ("trainer", "evals", "best_score", "wall_seconds", "eval_seconds")


def read_state(run_dir: Path) -> dict:
    """latest/state.pkl, checked to hold everything a resume restores."""
    path = run_dir / "latest" / "state.pkl"
    try:
        state = pickle.loads(path.read_bytes())
    except FileNotFoundError:
        raise ValueError(f"{run_dir} has no checkpoint to resume (latest/ is missing)") from None
    except Exception as e:  # unpickling garbage raises about anything
        raise ValueError(f"the checkpoint {path} is unreadable: {first_line(e)}") from None
    if not isinstance(state, dict) or any(key not in state for key in STATE_KEYS):
        raise ValueError(f"the checkpoint {path} is incomplete or not a planner checkpoint")
    return state


# ============================================================== training
def save_net(net, path: Path) -> None:
    """Save a network through a temporary file, then rename (never half written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    net.save(path.with_name(path.stem + ".tmp.npz")).replace(path)


class Run:
    """A run in progress: the trainer, its folder, what it has done (evaluations, the
    best score, time spent), TensorBoard and the progress bar."""

    def __init__(
        self, config: PlannerConfig, run_dir: Path, saved: dict | None, buffer: dict | None = None
    ) -> None:
        """`saved`: the run's own state, to resume; `buffer`: another run's trainer state
        whose buffer a new run starts from (--buffer-from)."""
        self.config, self.run_dir = config, run_dir
        self.trainer = ValueIteration(config, fresh=saved is None)
        self.evals: list[dict] = []
        self.best_score, self.wall_seconds, self.eval_seconds = -1.0, 0.0, 0.0
        if saved is not None:
            try:
                self.trainer.load_state_dict(saved["trainer"])
            except Exception as e:  # a damaged or foreign state: say so, in one line
                raise ValueError(
                    f"the checkpoint in {run_dir / 'latest'} does not fit this run: "
                    f"{type(e).__name__}: {first_line(e)}"
                ) from None
            self.evals, self.best_score = saved["evals"], saved["best_score"]
            self.wall_seconds, self.eval_seconds = saved["wall_seconds"], saved["eval_seconds"]
        elif buffer is not None:
            self.trainer.adopt_buffer(buffer)
        self.saved_iteration = self.trainer.iteration if saved is not None else None
        self.solution = self.yardstick()
        self.clock = time.monotonic()

    def yardstick(self):
        """The exact 2-player solution, to log the network's value error (never a target)."""
        if 2 not in self.config.players:
            return None
        from agents.optimal import two_player_solution

        return two_player_solution(self.config.rules, show_progress=False)

    def elapsed(self) -> float:
        """Wall-clock seconds of the whole run so far (every session)."""
        now = time.monotonic()
        self.wall_seconds += now - self.clock
        self.clock = now
        return self.wall_seconds

    def evaluate(self, writer, say) -> None:
        started = time.monotonic()
        results = evaluate(self.trainer.net, self.config)
        self.eval_seconds += time.monotonic() - started
        it = self.trainer.iteration
        score = sum(r["win_rate"] for r in results.values()) / len(results)
        error = exact_error(self.trainer.net, self.solution) if self.solution else None
        record = {
            "iteration": it,
            "games": it * self.config.games_per_iteration,
            "wall_seconds": self.elapsed(),
            "results": results,
            "mean_win_rate": score,
            "exact_error": error,
        }
        self.evals.append(record)
        for label, r in results.items():
            writer.add_scalar(f"eval/win_rate/{label}", r["win_rate"], it)
        writer.add_scalar("eval/mean_win_rate", score, it)
        best = score > self.best_score
        if best:
            self.best_score = score
            save_net(self.trainer.net, self.run_dir / "best" / "value_net.npz")
            save_json(self.run_dir / "best" / "eval.json", record)
        rates = ", ".join(f"{label} {r['win_rate']:.1%}" for label, r in results.items())
        say(f"iteration {it}: {rates}{', best' * best} ({duration(time.monotonic() - started)})")

    def checkpoint(self) -> None:
        latest = self.run_dir / "latest"
        save_net(self.trainer.net, latest / "value_net.npz")
        trainer = self.trainer.state_dict()
        self.elapsed()  # wall_seconds up to now
        state = {"trainer": trainer, **{key: getattr(self, key) for key in STATE_KEYS[1:]}}
        atomic_write(latest / "state.pkl", lambda tmp: Path(tmp).write_bytes(pickle.dumps(state)))
        save_json(self.run_dir / "evals.json", self.evals)
        self.saved_iteration = self.trainer.iteration


def train(config: PlannerConfig, run_dir: Path, run: Run, args: Args, argv: list[str]) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from torch.utils.tensorboard import SummaryWriter

    run_dir.mkdir(parents=True, exist_ok=True)
    save_json(run_dir / "config.json", dataclasses.asdict(config))
    with open(run_dir / "command.txt", "a") as f:
        f.write(shlex.join(["python", "train_planner.py", *argv]) + "\n")
    trainer = run.trainer
    writer = SummaryWriter(str(run_dir / "tb"), purge_step=trainer.iteration)
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("iterations"),
        TimeElapsedColumn(),
        disable=not args.progress,
    )
    say = bar.console.print if args.progress else print
    task = bar.add_task("training", total=config.iterations, completed=trainer.iteration)
    try:
        with bar:
            while trainer.iteration < config.iterations:
                stats = trainer.iterate()
                it = trainer.iteration
                for key in ("loss", "positions", "seconds", "target_gap"):
                    if key in stats:  # target_gap: the exact-table method's
                        writer.add_scalar(f"train/{key}", stats[key], it)
                if run.solution is not None:
                    error = exact_error(trainer.net, run.solution)  # a yardstick only
                    writer.add_scalar("value/exact_mean_abs_error", error, it)
                bar.update(task, completed=it, description=f"training (loss {stats['loss']:.4f})")
                last = it == config.iterations
                if last or (config.eval_freq and it % config.eval_freq == 0):
                    bar.update(task, description="evaluating")
                    run.evaluate(writer, say)
                if last or it % config.checkpoint_freq == 0:
                    run.checkpoint()
                    if args.stop_after is not None and it >= args.stop_after and not last:
                        say(
                            f"stopped at iteration {it} (checkpoint saved); continue with: "
                            f"python train_planner.py --resume {shlex.quote(shown(run_dir))}"
                        )
                        return 0
    except KeyboardInterrupt:
        if run.saved_iteration is None:  # nothing to resume from: leave no folder behind
            shutil.rmtree(run_dir, ignore_errors=True)
            print(f"interrupted before the first checkpoint: {shown(run_dir)} removed")
        else:
            print(
                f"interrupted; the checkpoint at iteration {run.saved_iteration} continues "
                f"with: python train_planner.py --resume {shlex.quote(shown(run_dir))}"
            )
        return 130
    finally:
        writer.close()
    finish(config, run_dir, run)
    return 0


def finish(config: PlannerConfig, run_dir: Path, run: Run) -> None:
    """summary.json, and where the network is and how to play against it."""
    summary = {
        "iterations": run.trainer.iteration,
        "games": run.trainer.iteration * config.games_per_iteration,
        "wall_seconds": run.wall_seconds,
        "eval_seconds": run.eval_seconds,
        "best_mean_win_rate": run.best_score,
        "last_eval": run.evals[-1] if run.evals else None,
    }
    save_json(run_dir / "summary.json", summary)
    best = shown(run_dir / "best" / "value_net.npz")
    print(
        f"done: {shown(run_dir)} trained to iteration {run.trainer.iteration} "
        f"({duration(run.wall_seconds)}, evaluations {duration(run.eval_seconds)})"
    )
    print(f"best network: {best} (mean win rate {run.best_score:.1%})")
    others = " ".join([shlex.quote(best)] * (config.players[0] - 1))
    print(f"play against it: python play.py --opponents {others}")


def interrupt(signum: int, frame: object) -> None:
    """SIGTERM stops a run as Ctrl-C does (a background job ignores SIGINT)."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args, given = parse_args(argv)
        config, run_dir, saved, buffer = prepare(args, given)
        if saved is not None and saved["trainer"]["iteration"] >= config.iterations:
            print(
                f"{shown(run_dir)} is already complete at iteration "
                f"{saved['trainer']['iteration']}: nothing done; to train it further: "
                f"--resume {shown(run_dir)} --iterations N"
            )
            return 0
        run = Run(config, run_dir, saved, buffer)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted before training started: nothing written", file=sys.stderr)
        return 130
    start = run.trainer.iteration
    what = f"resuming {shown(run_dir)} at iteration {start}" if start else f"run {shown(run_dir)}"
    tables = ", ".join(table_label(t) for t in config.tables)
    games = {
        "self-play": f"self-play games at {config.players} players",
        "exact-table": "games at the evaluation table (the exact-table method)",
    }[config.method]
    print(
        f"{what}: {config.iterations - start} iterations of {config.games_per_iteration} "
        f"{games}, hold {config.hold}; evaluation every {config.eval_freq} iterations "
        f"against {tables}",
        flush=True,
    )
    return train(config, run_dir, run, args, argv)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, interrupt)
    sys.exit(main())
