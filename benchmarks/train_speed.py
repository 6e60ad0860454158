"""MaskablePPO training steps/s on the shipped 2-player preset, at equal network size:
the reference is the network scoring all 64 action rows (as before it scored only the
legal ones) on per-game environments; then legal rows only, per game and batched.

    python benchmarks/train_speed.py [--steps 16384] [--rounds 2]

Each setup trains a fresh model of hyperparams/ppo_2p.yaml (same network, batch size,
epochs and rollout size n_envs * n_steps) for `--steps` steps, no evaluation; setups
alternate for `--rounds` rounds so that a busy machine's noise falls on all of them.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fivethousand_rl.agents.training.config import load_preset  # noqa: E402
from fivethousand_rl.agents.training.model import make_model, make_vec_env  # noqa: E402

# (label, actor scores, vec_env, n_envs, n_steps): every rollout is 4,096 steps, as in
# the preset.
SETUPS = (
    ("every action scored, per game, 16 envs x 256 steps (before)", "all", "dummy", 16, 256),
    ("legal actions scored, per game, 16 envs x 256 steps (default)", "legal", "dummy", 16, 256),
    ("legal actions scored, batched, 16 envs x 256 steps", "legal", "batched", 16, 256),
    ("legal actions scored, batched, 256 envs x 16 steps", "legal", "batched", 256, 16),
)


def steps_per_second(scored: str, vec_env: str, n_envs: int, n_steps: int, steps: int) -> float:
    import torch

    from fivethousand_rl.agents.networks import ActionScoringNet

    scoring = ActionScoringNet.forward_actor
    if scored == "all":  # the same function, evaluated on every row
        ActionScoringNet.forward_actor = ActionScoringNet.score_every_action
    try:
        base = load_preset("ppo_2p")
        config = dataclasses.replace(base, vec_env=vec_env, n_envs=n_envs, n_steps=n_steps)
        config.validate()
        torch.set_num_threads(config.torch_threads)
        env = make_vec_env(config)
        model = make_model(config, env)
        start = time.perf_counter()
        model.learn(total_timesteps=steps)
        seconds = time.perf_counter() - start
        env.close()
        return model.num_timesteps / seconds
    finally:
        ActionScoringNet.forward_actor = scoring


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=16_384)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    speeds: dict[str, list[float]] = {label: [] for label, *_ in SETUPS}
    for r in range(args.rounds):
        for label, *setup in SETUPS:
            speeds[label].append(steps_per_second(*setup, args.steps))
            print(f"round {r + 1}: {label}: {speeds[label][-1]:,.0f} steps/s", flush=True)
    reference = statistics.median(speeds[SETUPS[0][0]])
    print("\n| setup | steps/s (median) | vs before |\n|---|---:|---:|")
    for label, values in speeds.items():
        median = statistics.median(values)
        print(f"| {label} | {median:,.0f} | {median / reference:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
