"""What the user sees while a run trains: the time left (Clock), the
progress bar and its lines (Reporter), and the plan said before the work starts."""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Sequence
from pathlib import Path

from fivethousand_rl.agents.base import duration, program
from fivethousand_rl.agents.rule_flags import house_rules, rule_flags
from fivethousand_rl.agents.training.config import TrainConfig
from fivethousand_rl.envs.rules import DEFAULT_RULES, Rules


def shown(path: Path) -> str:
    """A path as the user would type it: relative to the current folder when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def plan(config: TrainConfig, run_dir: Path, steps: int, no_flags: bool) -> list[str]:
    """What the run is about to do, said before it starts."""
    what = f"resuming {shown(run_dir)} at step {steps:,}" if steps else f"run {shown(run_dir)}"
    opponents = ", ".join(config.opponents)
    if config.self_play_weight:
        opponents += f" and self-play snapshots (weight {config.self_play_weight:g})"
    lines = [
        f"{what}: {config.n_timesteps - steps:,} steps to train ({config.n_timesteps:,} in all)"
        f" of {config.players}-player 5000 ({rules_said(config.rules)}), {config.n_envs}"
        f" environments, against {opponents}"
    ]
    if config.eval_freq:
        lines.append(
            f"evaluation every {config.eval_freq:,} steps and at the end: "
            f"{config.eval_episodes:,} games against each of {', '.join(config.eval_pool)}; "
            f"resumable checkpoint every {config.checkpoint_freq:,} steps"
        )
    if no_flags:
        lines.append(
            f"no flags: the default settings ({program('train')} --help lists them); "
            "--preset quick trains a small agent in a few minutes; Ctrl-C stops"
        )
    return lines


def resume_command(run_dir: Path, name: str = "train") -> str:
    return f"{program(name)} --resume {shlex.quote(shown(run_dir))}"


def interrupted(steps: int, saved: int | None, run_dir: Path) -> str:
    """Ctrl-C: what is kept (a new run with no checkpoint yet is removed)."""
    if saved is None:
        return (
            f"interrupted at step {steps:,}, before the first checkpoint: nothing kept "
            f"({shown(run_dir)} removed)"
        )
    kept = f"the checkpoint at step {saved:,} continues with: {resume_command(run_dir)}"
    return f"interrupted at step {steps:,}; {kept}"


def finished(config: TrainConfig, run_dir: Path, steps: int, evals: list, seconds: float) -> list:
    """What the user is told at the end: where the model is, how to play against it."""
    lines = [f"done: {shown(run_dir)} trained to step {steps:,} ({duration(seconds)})"]
    model = run_dir / "latest" / "model.zip"
    if evals:
        best = max(evals, key=lambda e: e["mean_win_rate"])  # the first best
        model = run_dir / "best" / "model.zip"
        rate, step = best["mean_win_rate"], best["steps"]
        lines.append(f"best model: {shown(model)} (mean win rate {rate:.1%} at step {step:,})")
    else:
        lines.append(f"model: {shown(model)}")
    return [*lines, f"play against it: {play_command(model, config.players, config.rules)}"]


def play_command(model: Path, players: int, rules: Rules, table: Sequence[str] = ()) -> str:
    """The command that plays against a trained `model` (in every other seat of a
    `players`-player game) under the rules it was trained for: the only ones it plays.
    A network of one `table` (the bots after its seat) plays only there: the human
    then takes the first bot's place."""
    seats = [shown(model), *table[1:]] if table else [shown(model)] * (players - 1)
    return shlex.join([*shlex.split(program("play")), "--opponents", *seats, *rule_flags(rules)])


def rules_said(rules: Rules) -> str:
    """The rules of a run in a few words: the hold rule, and any house rules."""
    house = house_rules(dataclasses.replace(rules, hold=DEFAULT_RULES.hold))
    return f"hold {rules.hold}" + "".join(f", {words}" for words in house)


class Clock:
    """The time a run has left, honestly: the training speed measured in this session
    with evaluations left out, plus the evaluations still due, each as long as the last
    one took (before the first one, only their number is known, and said)."""

    def __init__(self, config: TrainConfig, start_steps: int, now: float) -> None:
        self.total, self.eval_freq, self.start = config.n_timesteps, config.eval_freq, now
        self.rollout, self.start_steps = config.n_envs * config.n_steps, start_steps
        self.eval_total = 0.0  # seconds spent evaluating in this session
        self.eval_last: float | None = None

    def evaluated(self, seconds: float) -> None:
        self.eval_total += seconds
        self.eval_last = seconds

    def evals_left(self, steps: int, next_eval: int) -> int:
        """Evaluations still to come, as the callback does them: at each rollout start
        (every `rollout` steps, while training goes on) once the due step is reached,
        then the final one."""
        if not self.eval_freq:
            return 0
        count, due, at = 1, next_eval, steps
        while True:
            if at < due:  # jump to the first rollout start at or past the due step
                at += -(-(due - at) // self.rollout) * self.rollout
            if at >= self.total:
                return count
            count, due, at = count + 1, due + self.eval_freq, at + self.rollout

    def speed(self, steps: int, now: float) -> float | None:
        """Training steps per second in this session (None before any)."""
        seconds = now - self.start - self.eval_total
        trained = steps - self.start_steps
        return trained / seconds if trained > 0 and seconds > 0 else None

    def left(self, steps: int, next_eval: int, now: float) -> str:
        """ "about 2 min 5 s left", "+ 3 evaluations" while their length is unknown."""
        speed = self.speed(steps, now)
        if speed is None:
            return "time left: after the first rollout"
        seconds = max(self.total - steps, 0) / speed
        evals = self.evals_left(steps, next_eval)
        if self.eval_last is not None:
            seconds += evals * self.eval_last
        elif evals:
            return f"about {duration(seconds)} left + {evals} evaluation{'s' * (evals > 1)}"
        return f"about {duration(seconds)} left"


class Reporter:
    """What the user sees while a run trains: a progress bar over the run's steps (or
    iterations: `unit`; none with --no-progress) whose label says what is going on and
    how long is left, and a line for each evaluation."""

    def __init__(self, total: int, steps: int, show_bar: bool, unit: str = "steps") -> None:
        self.total, self.bar = total, None
        if show_bar:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn(f"{{task.completed:,.0f}}/{{task.total:,.0f}} {unit}"),
                TimeElapsedColumn(),
                TextColumn("{task.fields[left]}"),
            )
            self.task = self.bar.add_task("training", total=total, completed=steps, left="")

    def __enter__(self) -> Reporter:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def say(self, line: str) -> None:
        if self.bar is not None:
            self.bar.console.print(line, markup=False, highlight=False, soft_wrap=True)
        else:
            print(line, flush=True)

    def update(self, steps: int, doing: str | None = None, left: str | None = None) -> None:
        if self.bar is None:
            return
        # None (description or left): keep the current one; never "2,048/1,000".
        kept = {} if left is None else {"left": left}
        self.bar.update(self.task, completed=min(steps, self.total), description=doing, **kept)
