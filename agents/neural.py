"""Trained SB3 models (MaskablePPO checkpoints, ``.zip``) behind the Policy interface."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from envs.encoding import encode, observation_size
from envs.game import Game


class CheckpointError(ValueError):
    """A checkpoint that is missing, unreadable, or made for another game."""


class SB3Policy:
    """Plays a MaskablePPO checkpoint: the observation of the seat to move, the legal
    actions as the mask, deterministic (greedy) unless `deterministic=False` (then the
    action is sampled with torch's generator, seeded from the caller's rng)."""

    def __init__(self, path: str | Path, deterministic: bool = True) -> None:
        path = Path(path)
        if not path.is_file():
            raise CheckpointError(f"checkpoint not found: {path}")
        if not zipfile.is_zipfile(path):
            raise CheckpointError(f"not an SB3 checkpoint (not a zip file): {path}")
        try:
            from sb3_contrib import MaskablePPO

            self.model = MaskablePPO.load(path, device="cpu")
        except Exception as e:  # corrupt archives fail in many ways inside SB3
            first_line = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise CheckpointError(f"could not load checkpoint {path}: {first_line}") from None
        shape = self.model.observation_space.shape
        if shape is None or len(shape) != 1:
            raise CheckpointError(f"checkpoint {path} does not take a flat observation vector")
        self.obs_size = shape[0]
        self.deterministic = deterministic
        self.name = path.stem
        self.path = path

    def act(self, game: Game, rng: np.random.Generator) -> int:
        if observation_size(game.n_players) != self.obs_size:
            raise CheckpointError(
                f"checkpoint {self.path} takes {self.obs_size} observation values, "
                f"a {game.n_players}-player game gives {observation_size(game.n_players)}"
            )
        seat = game.state.current
        obs = encode(game, seat)
        mask = game.legal()[1]
        if not self.deterministic:
            import torch

            torch.manual_seed(int(rng.integers(2**31)))
        action, _ = self.model.predict(obs, action_masks=mask, deterministic=self.deterministic)
        return int(action)
