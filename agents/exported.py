"""Exported bots: an ONNX model of a trained actor plus a metadata JSON, played with
onnxruntime and numpy alone (no torch).

The graph maps a batch of observations to the 64 action logits; the legal-action mask
is applied here, outside the graph, as MaskablePPO does in training: illegal logits
are replaced by -1e8, and the deterministic choice is the most probable action.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from agents.neural import OBS_SPEC_ATTRIBUTE, TrainedModel, first_line
from envs.encoding import ObsSpec
from envs.game import Game

FORMAT = "fivethousand-rl exported bot"
FORMAT_VERSION = 2  # 2: the game and observation are one "obs_spec" (envs.encoding.ObsSpec)
ACTION_ENCODING_VERSION = 1  # envs.rules: bits 0-4 hold sorted dice, bit 5 banks
MASKED_LOGIT = -1e8  # what sb3-contrib's MaskableCategorical puts on illegal actions


class ExportError(ValueError):
    """An exported bot that is missing, corrupt, or made for another game."""


def metadata_path(onnx_path: str | Path) -> Path:
    return Path(onnx_path).with_suffix(".json")


def read_metadata(onnx_path: str | Path) -> dict:
    path = metadata_path(onnx_path)
    if not Path(onnx_path).is_file():
        raise ExportError(f"exported bot not found: {onnx_path}")
    if not path.is_file():
        raise ExportError(f"exported bot {onnx_path} has no metadata file {path}")
    try:
        meta = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ExportError(f"metadata {path} is not valid JSON: {e}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ExportError(f"{path} is not the metadata of an exported 5000 bot")
    for key, ours in [
        ("format_version", FORMAT_VERSION),
        ("action_encoding_version", ACTION_ENCODING_VERSION),
    ]:
        if meta.get(key) != ours:
            raise ExportError(
                f"{onnx_path} uses {key} {meta.get(key)!r}, this version of the toolkit "
                f"reads {ours}: export it again from its checkpoint"
            )
    return meta


def masked_choice(logits: np.ndarray, mask: np.ndarray) -> int:
    """The most probable legal action (the first of equals), as MaskablePPO's mode."""
    masked = np.where(mask, logits, np.float32(MASKED_LOGIT)).astype(np.float32)
    probs = np.exp(masked - masked.max())
    return int(np.argmax(probs / probs.sum()))


class ExportedBot(TrainedModel):
    """Plays an exported .onnx bot; its .json metadata must sit beside it, with the
    observation spec it reads: it plays only the game of that spec."""

    error = ExportError

    def __init__(self, path: str | Path, threads: int = 1) -> None:
        self.path = Path(path)
        self.meta = read_metadata(self.path)
        try:
            self.spec = ObsSpec.from_dict(self.meta.get(OBS_SPEC_ATTRIBUTE))
        except ValueError as e:
            raise ExportError(f"{self.path}: its metadata's {OBS_SPEC_ATTRIBUTE}: {e}") from None
        try:
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            self.session = ort.InferenceSession(
                str(self.path), options, providers=["CPUExecutionProvider"]
            )
        except Exception as e:
            raise ExportError(f"could not load exported bot {self.path}: {first_line(e)}") from None
        graph_input = self.session.get_inputs()[0]
        self.input_name = graph_input.name
        if graph_input.shape[-1] != self.spec.size:
            raise ExportError(
                f"{self.path}: the graph takes {graph_input.shape[-1]} inputs, its spec "
                f"says {self.spec.size}"
            )
        self.name = self.path.stem  # bots/ppo-2p.onnx -> "ppo-2p", as the file is named now

    def logits(self, obs: np.ndarray) -> np.ndarray:
        return self.session.run(None, {self.input_name: obs[None].astype(np.float32)})[0][0]

    def act(self, game: Game, rng: np.random.Generator) -> int:
        self.check(game)
        obs = self.spec.encode(game, game.state.current)
        return masked_choice(self.logits(obs), game.legal()[1])
