"""Trained SB3 models (MaskablePPO checkpoints, ``.zip``) behind the Policy interface."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from envs.encoding import encode, encode_rich, observation_size, rich_observation_size
from envs.game import Game
from envs.rules import Rules


class CheckpointError(ValueError):
    """A checkpoint that is missing, unreadable, or made for another game."""


def first_line(error: BaseException) -> str:
    """The first line of an exception's message (libraries raise long ones)."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


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
            raise CheckpointError(f"could not load checkpoint {path}: {first_line(e)}") from None
        shape = self.model.observation_space.shape
        if shape is None or len(shape) != 1:
            raise CheckpointError(f"checkpoint {path} does not take a flat observation vector")
        self.obs_size = shape[0]
        self.deterministic = deterministic
        # checkpoints/ppo-2p/model.zip -> "ppo-2p"; run/best/model.zip -> "run/best"
        parent = (
            path.parent.name
            if path.parent.name not in ("best", "latest")
            else (f"{path.parent.parent.name}/{path.parent.name}")
        )
        self.name = path.stem if path.stem != "model" else parent or path.stem
        self.path = path
        self._key = None

    def encoder(self, n_players: int, rules: Rules):
        """The observation encoding this checkpoint reads in such a game (told apart by
        size), or CheckpointError if it fits neither."""
        if self.obs_size == rich_observation_size(n_players, rules):
            return encode_rich
        if self.obs_size == observation_size(n_players):
            return encode
        raise CheckpointError(
            f"{self.path} was trained for {self.obs_size} observation values; "
            f"{n_players}-player games give {observation_size(n_players)} (compact) or "
            f"{rich_observation_size(n_players, rules)} (rich)"
        )

    def check_game(self, n_players: int, rules: Rules) -> None:
        """Raise CheckpointError unless this checkpoint can play such a game."""
        self.encoder(n_players, rules)

    def act(self, game: Game, rng: np.random.Generator) -> int:
        import torch

        key = (game.n_players, game.rules)
        if key != self._key:
            self._encode, self._key = self.encoder(*key), key
        obs = torch.as_tensor(self._encode(game, game.state.current)[None])
        mask = torch.as_tensor(game.legal()[1][None])
        policy = self.model.policy
        # What MaskablePPO.predict computes, without its batch-handling overhead: the
        # masked categorical distribution over the actor's logits, its mode or a sample.
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # one small observation: threads only add overhead
        try:
            with torch.no_grad():
                features = policy.extract_features(obs, policy.pi_features_extractor)
                logits = policy.action_net(policy.mlp_extractor.forward_actor(features))
                dist = policy.action_dist.proba_distribution(action_logits=logits)
                dist.apply_masking(mask)
                if not self.deterministic:
                    torch.manual_seed(int(rng.integers(2**31)))
                action = dist.get_actions(deterministic=self.deterministic)
        finally:
            torch.set_num_threads(threads)
        return int(action[0])


def load_snapshot(path: str | Path):
    """A self-play snapshot (``NumpyScorer`` weights, .npz) as a greedy policy."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"snapshot not found: {path}")
    from agents.networks import NumpyScorer

    try:
        return NumpyScorer.load(path)
    except Exception as e:
        raise CheckpointError(f"could not load snapshot {path}: {first_line(e)}") from None
