"""Trained SB3 models (MaskablePPO checkpoints, ``.zip``, and self-play snapshots,
``.npz``) behind the Policy interface.

A trained model plays only the game it was trained for: its run's ``config.json``
(beside ``checkpoints/NAME/model.zip``, or in the run folder above ``RUN/best/``,
``RUN/latest/`` and ``RUN/snapshots/``) names the player count and hold rule, and
``check_game`` refuses any other, as an exported bot's metadata does.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np

from envs.encoding import (
    ObsSpec,
    encode,
    encode_rich,
    observation_size,
    rich_observation_size,
)
from envs.game import Game
from envs.policy import Policy
from envs.rules import HOLD_VARIANTS, Rules

# Folders of a training run that hold models; the run's config.json is one level up.
RUN_MODEL_FOLDERS = ("best", "latest", "snapshots")


class CheckpointError(ValueError):
    """A checkpoint that is missing, unreadable, or made for another game."""


def first_line(error: BaseException) -> str:
    """The first line of an exception's message (libraries raise long ones)."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


OBS_SPEC_ATTRIBUTE = "obs_spec"  # saved by SB3 with the model's other attributes


def attach_obs_spec(model, spec: ObsSpec) -> None:
    """Make `model` (an SB3 algorithm) carry the observation spec it reads: SB3 saves
    a model's plain attributes in its zip, so every checkpoint written after this
    holds it, and loaders read it instead of guessing from sizes."""
    setattr(model, OBS_SPEC_ATTRIBUTE, spec.to_dict())


def run_config_path(model: str | Path) -> Path | None:
    """The config.json of the run a model file comes from, or None if there is none:
    beside the model (a shipped agent), else in the run folder above best/, latest/ or
    snapshots/."""
    model = Path(model)
    candidates = [model.parent / "config.json"]
    if model.parent.name in RUN_MODEL_FOLDERS:
        candidates.append(model.parent.parent / "config.json")
    return next((c for c in candidates if c.is_file()), None)


def trained_game(model: str | Path) -> tuple[int, Rules, Path] | None:
    """(players, rules, config file) a model was trained for, read from its run's
    config.json; None when no config.json goes with it (then nothing can be checked
    beyond the observation size). Raises CheckpointError for an unreadable config."""
    path = run_config_path(model)
    if path is None:
        return None
    try:
        config = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path} (the config of {model}) is unreadable: {e}") from None
    players = config.get("players") if isinstance(config, dict) else None
    hold = config.get("hold") if isinstance(config, dict) else None
    if type(players) is not int or not 2 <= players <= 8 or hold not in HOLD_VARIANTS:
        raise CheckpointError(
            f"{path} (the config of {model}) names no valid players (2..8) and hold rule "
            f"({'/'.join(HOLD_VARIANTS)})"
        )
    # Training configs name the hold rule only; a future one may name target or entry.
    extra = {k: config[k] for k in ("target", "entry") if k in config}
    try:
        rules = Rules(hold=hold, **extra)
    except ValueError as e:
        raise CheckpointError(f"{path} (the config of {model}): {e}") from None
    return players, rules, path


def describe_rules(rules: Rules) -> str:
    """"hold rule 'free'", plus target and entry when they are not the standard ones."""
    text = f"hold rule {rules.hold!r}"
    standard = Rules(hold=rules.hold)
    if (rules.target, rules.entry) != (standard.target, standard.entry):
        text += f", target {rules.target}, entry {rules.entry}"
    return text


def check_trained_game(
    model: Path, trained: tuple[int, Rules, Path] | None, n_players: int, rules: Rules
) -> None:
    """Raise CheckpointError if `trained` (from ``trained_game``) is another game."""
    if trained is None:
        return
    players, trained_rules, config = trained
    if (players, trained_rules) != (n_players, rules):
        raise CheckpointError(
            f"{model} was trained for {players}-player games with "
            f"{describe_rules(trained_rules)} ({config}); this game has {n_players} players "
            f"and {describe_rules(rules)}"
        )


def short_name(model: str | Path) -> str:
    """How tables show a model file: checkpoints/ppo-2p/model.zip -> "ppo-2p" (the
    shipped agent's folder), RUN/best/model.zip -> "RUN" (the run),
    RUN/snapshots/step800.npz -> "RUN@step800", other files by their stem."""
    model = Path(model)
    folder = model.parent.name
    if folder == "snapshots" and model.parent.parent.name:
        return f"{model.parent.parent.name}@{model.stem}"
    if folder in RUN_MODEL_FOLDERS and model.parent.parent.name:
        return model.parent.parent.name
    if model.stem == "model" and folder:
        return folder
    return model.stem


class SB3Policy(Policy):
    """Plays a MaskablePPO checkpoint: the observation of the seat to move, the legal
    actions as the mask, deterministic (greedy) unless `deterministic=False` (then the
    action is sampled with torch's generator, seeded from the caller's rng).

    With its run's config.json (see ``trained_game``) it plays only that player count
    and hold rule. A checkpoint with no config beside it (a bare ``.zip`` copied
    elsewhere) is checked only on its observation size, as before configs were read.
    """

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
        self.name = short_name(path)
        self.path = path
        self.trained = trained_game(path)
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
        """Raise CheckpointError unless this checkpoint can play such a game: the
        players and hold rule of its run's config, and its observation size."""
        check_trained_game(self.path, self.trained, n_players, rules)
        self.encoder(n_players, rules)

    def act(self, game: Game, rng: np.random.Generator) -> int:
        import torch

        key = (game.n_players, game.rules)
        if key != self._key:  # a new game: refuse one it was not trained for
            self.check_game(*key)
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


class Snapshot(Policy):
    """A self-play snapshot (``NumpyScorer`` weights, .npz) that knows its run's game:
    like SB3Policy, it refuses other player counts and hold rules when the run's
    config.json is there (RUN/snapshots/stepN.npz), and is checked only on its
    observation size when not. Everything else is the scorer's."""

    def __init__(self, scorer, path: Path) -> None:  # scorer: agents.networks.NumpyScorer
        self.scorer = scorer
        self.path = path
        self.name = short_name(path)
        self.trained = trained_game(path)
        self._key: tuple | None = None

    def __getattr__(self, attr: str):
        if attr == "scorer":  # not set yet (unpickling): no endless recursion
            raise AttributeError(attr)
        return getattr(self.scorer, attr)  # weights, config, logits...: the scorer's

    def check_game(self, n_players: int, rules: Rules) -> None:
        """Raise CheckpointError unless this snapshot can play such a game."""
        check_trained_game(self.path, self.trained, n_players, rules)
        try:
            self.scorer.check_game(n_players, rules)
        except ValueError as e:
            raise CheckpointError(f"{self.path}: {e}") from None

    def act(self, game: Game, rng: np.random.Generator) -> int:
        key = (game.n_players, game.rules)
        if key != self._key:  # a new game: refuse one it was not trained for
            self.check_game(*key)
            self._key = key
        return self.scorer.act(game, rng)


def load_snapshot(path: str | Path) -> Snapshot:
    """A self-play snapshot (.npz) as a greedy policy, named after its run."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"snapshot not found: {path}")
    from agents.networks import NumpyScorer  # imports torch: only when needed

    try:
        scorer = NumpyScorer.load(path)
    except Exception as e:
        raise CheckpointError(f"could not load snapshot {path}: {first_line(e)}") from None
    return Snapshot(scorer, path)
