"""Train the planner agent: a value network of turn-start positions, learned by fitted
value iteration from self-play, each turn planned exactly against it.

    python train_planner.py --preset planner_2p           # a preset from hyperparams/
    python train_planner.py --players 3 4 6 --iterations 200 --opponents smart turn-ev \\
        --opponent-share 0.5
    python train_planner.py --resume checkpoints/RUN   # continue an interrupted run
    python train_planner.py --resume RUN --iterations 120      # extend a finished run

Top to bottom: the command line (PlannerConfig and Args), the run's config and folder,
the training loop (iterate, log, evaluate, checkpoint), the end. The config and the run
machinery are train.py's (agents/training/config.py); the trainer and the evaluation
are in agents/training/value_iteration.py. A run's folder (checkpoints/NAME in the
current folder, or under --checkpoints) holds config.json, command.txt, TensorBoard logs
(tb/), the latest state (latest/: to resume bit for bit) and the best network
(best/value_net.npz). Installed, the same program is ``fivethousand train-planner``.
"""

from __future__ import annotations

import dataclasses
import pickle
import shlex
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import tyro

from fivethousand_rl.agents.base import atomic_write, duration
from fivethousand_rl.agents.neural import first_line
from fivethousand_rl.agents.training.config import (
    RULE_FIELDS,
    RUNS,
    PlannerConfig,
    find_run,
    open_run,
    parse_run_args,
    read_run_config,
    read_saved_state,
    record_run,
    save_json,
    stopped_by_write_error,
)
from fivethousand_rl.agents.training.progress import Reporter, play_command, rules_said, shown
from fivethousand_rl.agents.training.value_iteration import (
    ValueIteration,
    evaluate,
    exact_error,
    table_label,
)

SCRIPT = "python train_planner.py"  # how the command names itself when run as a script


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
    """The runs folder (default: checkpoints/ in the current folder)."""
    progress: bool = True
    """Show a progress bar."""


STATE_KEYS = ("trainer", "evals", "best_score", "wall_seconds", "eval_seconds")  # state.pkl


def prepare(args: Args, given: set[str]) -> tuple[PlannerConfig, Path, dict | None, dict | None]:
    """The run's config and folder (as train.py's), for --resume its saved state, and
    for --buffer-from the trainer state whose buffer it starts from; everything checked
    before any work or any write (ValueError: one line for the user)."""
    config, run_dir = open_run(args, given, RUNS)
    if args.resume:
        return config, run_dir, read_saved_state(run_dir, STATE_KEYS), None
    buffer = buffer_source(config, run_dir.parent)["trainer"] if config.buffer_from else None
    return config, run_dir, None, buffer


SAME_GAME = ("method", *RULE_FIELDS, "players", "eval_tables")


def buffer_source(config: PlannerConfig, runs: Path) -> dict:
    """The saved state of the run `config.buffer_from` names, checked to have met the
    positions of this run's game (same method, rules, table sizes and tables)."""
    try:
        source = find_run(config.buffer_from, runs)
    except ValueError:
        there = config.buffer_from
        raise ValueError(f"--buffer-from {there}: no run there (no config.json)") from None
    theirs = dataclasses.asdict(read_run_config(source, PlannerConfig))
    for key in SAME_GAME:
        if theirs[key] != getattr(config, key):
            raise ValueError(
                f"--buffer-from {config.buffer_from}: that run's {key} is {theirs[key]!r}, "
                f"this run's {getattr(config, key)!r}"
            )
    return read_saved_state(source, STATE_KEYS)


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
            for key in STATE_KEYS[1:]:  # what ``checkpoint`` saved of the run
                setattr(self, key, saved[key])
        elif buffer is not None:
            self.trainer.adopt_buffer(buffer)
        self.saved_iteration = self.trainer.iteration if saved is not None else None
        self.solution = None  # the exact 2-player solution: to log the value error, never a target
        if 2 in config.players:
            from fivethousand_rl.agents.optimal import two_player_solution

            self.solution = two_player_solution(config.rules, show_progress=False)
        self.clock = time.monotonic()

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
        record = dict(iteration=it, games=self.config.games_played(it), wall_seconds=self.elapsed())
        record.update(results=results, mean_win_rate=score, exact_error=error)
        self.evals.append(record)
        for label, r in results.items():
            writer.add_scalar(f"eval/win_rate/{label}", r["win_rate"], it)
        writer.add_scalar("eval/mean_win_rate", score, it)
        if best := score > self.best_score:
            self.best_score = score
            atomic_write(self.run_dir / "best" / "value_net.npz", self.trainer.net.save)
            save_json(self.run_dir / "best" / "eval.json", record)
        rates = ", ".join(f"{label} {r['win_rate']:.1%}" for label, r in results.items())
        say(f"iteration {it}: {rates}{', best' * best} ({duration(time.monotonic() - started)})")

    def checkpoint(self) -> None:
        latest = self.run_dir / "latest"
        atomic_write(latest / "value_net.npz", self.trainer.net.save)
        trainer = self.trainer.state_dict()
        self.elapsed()  # wall_seconds up to now
        state = {"trainer": trainer, **{key: getattr(self, key) for key in STATE_KEYS[1:]}}
        atomic_write(latest / "state.pkl", pickle.dumps(state))
        save_json(self.run_dir / "evals.json", self.evals)
        self.saved_iteration = self.trainer.iteration


def train(
    config: PlannerConfig, run_dir: Path, run: Run, args: Args, command: list[str], resume: str
) -> int:
    """Train the run to its end, to --stop-after or to Ctrl-C; `command`: as typed (its
    record in command.txt), `resume`: the command that resumes it."""
    from torch.utils.tensorboard import SummaryWriter

    record_run(run_dir, config, command)
    trainer = run.trainer
    writer = SummaryWriter(str(run_dir / "tb"), purge_step=trainer.iteration)
    reporter = Reporter(config.iterations, trainer.iteration, args.progress, "iterations")
    try:
        with reporter:
            while trainer.iteration < config.iterations:
                stats = trainer.iterate()
                it = trainer.iteration
                for key in ("loss", "positions", "seconds", "target_gap"):
                    if key in stats:  # target_gap: the exact-table method's
                        writer.add_scalar(f"train/{key}", stats[key], it)
                if run.solution is not None:
                    error = exact_error(trainer.net, run.solution)  # a yardstick only
                    writer.add_scalar("value/exact_mean_abs_error", error, it)
                reporter.update(it, f"training (loss {stats['loss']:.4f})")
                last = it == config.iterations
                if last or (config.eval_freq and it % config.eval_freq == 0):
                    reporter.update(it, "evaluating")
                    run.evaluate(writer, reporter.say)
                if last or it % config.checkpoint_freq == 0:
                    run.checkpoint()
                    if args.stop_after is not None and it >= args.stop_after and not last:
                        again = f"continue with: {resume}"
                        reporter.say(f"stopped at iteration {it} (checkpoint saved); {again}")
                        return 0
    except KeyboardInterrupt:
        if run.saved_iteration is None:  # nothing to resume from: leave no folder behind
            shutil.rmtree(run_dir, ignore_errors=True)
            print(f"interrupted before the first checkpoint: {shown(run_dir)} removed")
        else:
            kept = f"the checkpoint at iteration {run.saved_iteration}"
            print(f"interrupted; {kept} continues with: {resume}")
        return 130
    finally:
        writer.close()
    # The end: summary.json, and where the network is and how to play against it.
    it = run.trainer.iteration
    summary = dict(iterations=it, games=config.games_played(it), wall_seconds=run.wall_seconds)
    summary.update(eval_seconds=run.eval_seconds, best_mean_win_rate=run.best_score)
    summary["last_eval"] = run.evals[-1] if run.evals else None
    save_json(run_dir / "summary.json", summary)
    best = run_dir / "best" / "value_net.npz"
    print(
        f"done: {shown(run_dir)} trained to iteration {run.trainer.iteration} "
        f"({duration(run.wall_seconds)}, evaluations {duration(run.eval_seconds)})"
    )
    print(f"best network: {shown(best)} (mean win rate {run.best_score:.1%})")
    table = config.exact_table()
    print(f"play against it: {play_command(best, config.players[0], config.rules, table)}")
    return 0


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The command line's exit code; `prog`: the command as typed, for its usage and its
    record (default: this script's). While it runs, SIGTERM stops it as Ctrl-C does."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # SIGTERM raises KeyboardInterrupt, as Ctrl-C does (a background job ignores SIGINT).
    on_sigterm = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        return start_run(argv, prog)
    finally:
        signal.signal(signal.SIGTERM, on_sigterm)


def start_run(argv: list[str], prog: str | None) -> int:
    """Check everything, say what will happen, then train; or say why not, in one line."""
    try:
        args, given = parse_run_args(Args, argv, prog)
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
    each = {
        "self-play": f"{config.games_per_iteration} self-play games at {config.players} players",
        "exact-table": f"{config.games_per_iteration} games at the evaluation table "
        "(the exact-table method)",
        "best-response": "a fit to the exact best response at the evaluation table "
        "(the best-response method)",
    }[config.method]
    print(
        f"{what}: {config.iterations - start} iterations of {each} "
        f"({rules_said(config.rules)}); evaluation every {config.eval_freq} iterations "
        f"against {tables}",
        flush=True,
    )
    prog = prog or SCRIPT
    resume = f"{prog} --resume {shlex.quote(shown(run_dir))}"
    try:
        return train(config, run_dir, run, args, [*shlex.split(prog), *argv], resume)
    except OSError as e:  # a full disk (ENOSPC), mid-run
        print(f"error: {stopped_by_write_error(e, run_dir, resume)}", file=sys.stderr)
        return 1
