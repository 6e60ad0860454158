"""RunCallback: everything periodic in a training run (self-play snapshots, evaluations
with the best model kept, checkpoints, the progress shown), and the evaluation itself,
played as a tournament (fivethousand_rl.agents.tournament)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import HParam

from fivethousand_rl.agents import Policy, make_policy
from fivethousand_rl.agents.base import atomic_write, duration
from fivethousand_rl.agents.neural import NumpyScorer
from fivethousand_rl.agents.tournament import seat_record
from fivethousand_rl.agents.training.checkpoint import RunState, save_checkpoint
from fivethousand_rl.agents.training.config import TrainConfig, save_json
from fivethousand_rl.agents.training.progress import Clock, Reporter

# Told of each evaluation: (steps, mean win rate, results per opponent); sweep.py
# reports them to Ray Tune.
EvalHook = Callable[[int, float, dict], None]


class StopTraining(Exception):
    """Raised by the callback to stop a run early at a checkpoint (--stop-after)."""


def evaluate(policy: Policy, config: TrainConfig) -> dict[str, dict]:
    """Win rate of `policy` against each evaluation opponent, copies of which take the
    other seats; the policy's seat rotates game by game. Same seeds every time."""
    # SeedSequence([S + (10_007 << 32), g]) is SeedSequence([S, 10_007, g]): the games
    # training evaluated before it played through the tournament, to the last die.
    seed = config.seed + (10_007 << 32)
    others = config.players - 1
    return {
        name: seat_record(
            policy,
            [make_policy(name)] * others,
            config.rules,
            seed,
            config.eval_episodes,
            max_turns=config.max_turns,
        )
        for name in config.eval_pool
    }


class RunCallback(BaseCallback):
    """Snapshots, evaluations and checkpoints at the start of rollouts (the previous
    rollout trained on: a clean point to save), the progress shown after each step.
    `state` is what a resumed run restores; `saved_steps` the step of the latest
    checkpoint on disk (None: none yet)."""

    def __init__(
        self,
        config: TrainConfig,
        run_dir: Path,
        state: RunState,
        reporter: Reporter,
        stop_after: int | None = None,
        saved_steps: int | None = None,
        on_eval: EvalHook | None = None,
    ) -> None:
        super().__init__()
        self.config, self.run_dir, self.state = config, run_dir, state
        self.on_eval = on_eval
        self.unreported: tuple[int, float, dict] | None = None  # an evaluation for on_eval
        self.reporter, self.stop_after, self.saved_steps = reporter, stop_after, saved_steps
        self.stopped = False
        self.estimated = False  # the speed measured after the first rollout was said
        self.episodes: list[dict] = []  # infos of the games finished in this rollout

    def _on_training_start(self) -> None:
        self.wall_start = time.time()
        self.clock = Clock(self.config, self.num_timesteps, time.monotonic())
        hparams = {
            k: (v if isinstance(v, int | float | str | bool) else str(v))
            for k, v in dataclasses.asdict(self.config).items()
        }
        metrics = {f"eval/win_rate/{o}": 0.0 for o in self.config.eval_pool}
        self.logger.record(
            "hparams", HParam(hparams, metrics), exclude=("stdout", "log", "json", "csv")
        )

    def _on_step(self) -> bool:
        infos, dones = self.locals["infos"], self.locals["dones"]
        self.episodes += [info for info, done in zip(infos, dones, strict=True) if done]
        self.reporter.update(self.num_timesteps)
        return True

    def _on_rollout_end(self) -> None:
        if self.episodes:
            infos, self.episodes = self.episodes, []
            won = np.mean([i["winner"] == i["learner_seat"] for i in infos])
            self.logger.record("game/learner_win_rate", won)
            self.logger.record("game/length_turns", np.mean([i["turns"] for i in infos]))
            turns = sum(i["learner_turns"] for i in infos)
            busts = sum(i["learner_busts"] for i in infos)
            self.logger.record("game/bust_rate", busts / max(turns, 1))

    def _on_rollout_start(self) -> None:
        entropy_loss = self.logger.name_to_value.get("train/entropy_loss")
        if entropy_loss is not None:
            self.logger.record("train/policy_entropy", -entropy_loss)
        steps, state, config = self.num_timesteps, self.state, self.config
        if steps == self.clock.start_steps:
            return
        if not self.estimated:  # one rollout and its update done: a measured speed
            self.estimated = True
            speed = self.clock.speed(steps, time.monotonic())
            trained = steps - self.clock.start_steps
            self.reporter.say(
                f"speed: {speed:,.0f} steps/s over the first {trained:,} steps; " + self.left()
            )
        if config.self_play_weight > 0 and steps >= state.next_snapshot:
            state.next_snapshot += config.snapshot_freq
            self.add_snapshot(steps)
        if config.eval_freq and steps >= state.next_eval:
            state.next_eval += config.eval_freq
            self.evaluate(steps)
        if steps >= state.next_checkpoint:
            state.next_checkpoint += config.checkpoint_freq
            self.checkpoint()
            if self.stop_after is not None and steps >= self.stop_after:
                self.stopped = True
                self.report_eval()
                raise StopTraining
        self.report_eval()
        self.reporter.update(steps, "training", self.left())

    def _on_training_end(self) -> None:
        if self.stopped:
            return
        steps, state = self.num_timesteps, self.state
        if self.config.eval_freq:
            self.evaluate(steps, final=True)
            # Extending the finished run (--resume --n-timesteps) must not evaluate this
            # step again: move on as an uninterrupted run would.
            while state.next_eval <= steps:
                state.next_eval += self.config.eval_freq
        self.checkpoint()
        self.report_eval()
        self.reporter.update(steps, "done", "")

    def left(self) -> str:
        return self.clock.left(self.num_timesteps, self.state.next_eval, time.monotonic())

    def add_snapshot(self, steps: int) -> None:
        path = self.run_dir / "snapshots" / f"step{steps}.npz"
        path.parent.mkdir(exist_ok=True)
        NumpyScorer.from_policy(self.model.policy, name=f"snapshot@{steps}").save(path)
        self.state.snapshots = (self.state.snapshots + [str(path)])[-self.config.max_snapshots :]
        self.training_env.env_method("set_opponent_pool", self.state.opponent_pool(self.config))

    def evaluate(self, steps: int, final: bool = False) -> None:
        state, config = self.state, self.config
        games = config.eval_episodes * len(config.eval_pool)
        what = "final evaluation" if final else "evaluating"
        self.reporter.update(steps, f"{what}: {games:,} games")
        started = time.monotonic()
        results = evaluate(NumpyScorer.from_policy(self.model.policy, name="learner"), config)
        for name, r in results.items():
            self.logger.record(f"eval/win_rate/{name}", r["win_rate"])
            self.logger.record(f"eval/ci95_low/{name}", r["ci95"][0])
            self.logger.record(f"eval/ci95_high/{name}", r["ci95"][1])
        score = float(np.mean([r["win_rate"] for r in results.values()]))
        self.logger.record("eval/mean_win_rate", score)
        state.evals.append({"steps": steps, "results": results, "mean_win_rate": score})
        if best := score > state.best_score:
            state.best_score = score
            atomic_write(self.run_dir / "best" / "model.zip", self.model.save)
            save_json(self.run_dir / "best" / "eval.json", state.evals[-1])
        self.logger.dump(steps)
        seconds = time.monotonic() - started
        self.clock.evaluated(seconds)
        rates = ", ".join(f"{name} {r['win_rate']:.1%}" for name, r in results.items())
        line = f"step {steps:,}: mean win rate {score:.1%} ({rates}){', best' * best}; "
        line += f"{games:,} games in {duration(seconds)}"
        self.reporter.say(line + ("" if final else f"; {self.left()}"))
        self.unreported = (steps, score, results)

    def report_eval(self) -> None:
        """Tell `on_eval` of the latest evaluation, once the checkpoint after it is
        saved (a sweep may stop the run as soon as it hears)."""
        if self.on_eval and self.unreported:
            self.on_eval(*self.unreported)
        self.unreported = None

    def checkpoint(self) -> None:
        self.state.wall_seconds += time.time() - self.wall_start
        self.wall_start = time.time()
        save_checkpoint(self.model, self.run_dir, self.state)
        self.saved_steps = self.num_timesteps
