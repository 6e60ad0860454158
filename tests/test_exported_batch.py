"""An exported ONNX bot decides for a batch of games with one run of its graph (issue 53):
the same action in every decision as the graph run on that decision alone. (Its speed
beside the torch checkpoint's: benchmarks/onnx_evaluation.py.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.exported import ExportedBot, masked_choice
from fivethousand_rl.envs.batch import play_games
from fivethousand_rl.envs.rules import Rules

ONNX_2P = Path(__file__).resolve().parent.parent / "checkpoints" / "ppo-2p" / "model.onnx"


class Recording(ExportedBot):
    """The bot, keeping every batch it was asked about, its answers and its graph's runs."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.batches: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.graph_rows = 0
        real_run = self.session.run

        def run(outputs, feed):
            self.graph_rows += len(feed[self.input_name])
            return real_run(outputs, feed)

        self.session = type("Session", (), {"run": staticmethod(run)})()

    def choose(self, obs, mask, rng):
        actions = super().choose(obs, mask, rng)
        self.batches.append((obs.copy(), mask.copy(), actions.copy()))
        return actions


def test_batched_choices_are_the_graphs_on_each_decision_alone():
    """40 games against smart, batched: every decision's action is what the graph, run
    on that one observation, and MaskablePPO's masking choose; the graph ran once per
    batch."""
    bot = Recording(ONNX_2P)
    play_games(40, [bot, make_policy("smart")], Rules(), np.random.default_rng(0))
    alone = make_policy(str(ONNX_2P)).session
    rows = 0
    for obs, mask, actions in bot.batches:
        for o, m, action in zip(obs, mask, actions, strict=True):
            logits = alone.run(None, {"obs": o[None]})[0][0]
            assert action == masked_choice(logits, m)
        rows += len(obs)
    assert len(bot.batches) > 20 and rows > 1000 and bot.graph_rows == rows
