"""Export a trained checkpoint as a portable bot: ONNX model + metadata JSON.

    python export.py checkpoints/ppo-2p/model.zip [-o bots/ppo-2p.onnx]

The ONNX graph computes the actor's 64 action logits from the observation vector; the
metadata JSON beside it records the checkpoint's observation spec (encoding, version,
players, rules, named slices: ``envs.encoding.ObsSpec``), the action encoding's version
and where the model came from. Play it with
onnxruntime and numpy only (``agents.exported.ExportedBot``), anywhere an agent is
named (``python evaluate.py bots/ppo-2p.onnx smart``, ``python play.py --opponents
bots/ppo-2p.onnx``).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import logging
import os
import sys
import warnings
from pathlib import Path

from agents.exported import (
    ACTION_ENCODING_VERSION,
    FORMAT,
    FORMAT_VERSION,
    ExportedBot,
    metadata_path,
)
from agents.neural import (
    OBS_SPEC_ATTRIBUTE,
    RUN_MODEL_FOLDERS,
    CheckpointError,
    SB3Policy,
    first_line,
)


def run_config(checkpoint: Path) -> dict:
    """The config.json of the checkpoint's run (beside it, or above RUN/best/ and
    RUN/latest/), recorded as provenance; {} if there is none."""
    folders = [checkpoint.parent]
    if checkpoint.parent.name in RUN_MODEL_FOLDERS:
        folders.append(checkpoint.parent.parent)
    path = next((f / "config.json" for f in folders if (f / "config.json").is_file()), None)
    if path is None:
        return {}
    try:
        config = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path} (the config of {checkpoint}) is unreadable: {e}") from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{path} (the config of {checkpoint}) is not a JSON object")
    return config


def check_paths(checkpoint: Path, out: Path) -> None:
    """CheckpointError unless `checkpoint` names an SB3 checkpoint and `out` a .onnx
    file that can be written: checked before any loading or exporting."""
    if checkpoint.suffix == ".npz":
        raise CheckpointError(
            f"{checkpoint} is a self-play snapshot, which cannot be exported; export its run's "
            "model instead (RUN/best/model.zip or RUN/latest/model.zip)"
        )
    if checkpoint.suffix != ".zip":
        raise CheckpointError(f"export.py takes an SB3 checkpoint (.zip), got {checkpoint}")
    if out.suffix != ".onnx" or out.is_dir():
        raise CheckpointError(f"the output must be a .onnx file, got {out}")
    folder = out.parent
    while not folder.exists():  # made when the export is written: it must be possible
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise CheckpointError(f"cannot write {out}: {folder} is not a writable folder")


def export(checkpoint: str | Path, out: str | Path) -> dict:
    """Export `checkpoint` to the ONNX file `out` (and its metadata JSON beside it, with
    the checkpoint's observation spec); CheckpointError for a checkpoint or output
    that does not fit."""
    import torch

    checkpoint, out = Path(checkpoint), Path(out)
    check_paths(checkpoint, out)
    config = run_config(checkpoint)
    policy = SB3Policy(checkpoint)
    sb3_policy = policy.model.policy.eval()

    class Actor(torch.nn.Module):
        """Observation -> action logits: the part of the policy that chooses."""

        def __init__(self) -> None:
            super().__init__()
            self.policy = sb3_policy

        def forward(self, obs: torch.Tensor) -> torch.Tensor:
            p = self.policy
            features = p.extract_features(obs, p.pi_features_extractor)
            return p.action_net(p.mlp_extractor.forward_actor(features))

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.stem + ".partial.onnx")  # moved into place once complete
    try:
        write_onnx(Actor().eval(), policy.spec.size, tmp)
        meta = metadata(checkpoint, out, policy.spec.to_dict(), config)
        metadata_path(tmp).write_text(json.dumps(meta, indent=2))
        ExportedBot(tmp)  # loads back, or fails loudly now
        tmp.replace(out)
        metadata_path(tmp).replace(metadata_path(out))
    finally:  # a failure or Ctrl-C leaves no partial file
        for leftover in (tmp, metadata_path(tmp)):
            leftover.unlink(missing_ok=True)
    return meta


def write_onnx(actor, obs_size: int, path: Path) -> None:
    """The actor as a self-contained ONNX graph with a dynamic batch axis."""
    import torch

    example = torch.zeros(2, obs_size)  # batch 2: keeps the batch axis dynamic
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)  # optional-op chatter
    with warnings.catch_warnings():  # the exporter's own deprecation chatter
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(
            actor,
            (example,),
            str(path),
            input_names=["obs"],
            output_names=["logits"],
            dynamic_shapes={"obs": {0: torch.export.Dim("batch", min=1)}},
            dynamo=True,
            external_data=False,  # one self-contained .onnx file
            verbose=False,
        )


def metadata(checkpoint: Path, out: Path, spec: dict, config: dict) -> dict:
    """The metadata JSON of an exported bot: the observation spec (game and
    observation), the action encoding, the provenance."""
    import sb3_contrib
    import torch

    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "name": out.stem,
        OBS_SPEC_ATTRIBUTE: spec,
        "action_encoding_version": ACTION_ENCODING_VERSION,
        "inputs": {"obs": ["batch", spec["size"]]},
        "outputs": {"logits": ["batch", 64]},
        "masking": "replace illegal logits by -1e8; play the most probable action",
        "provenance": {
            "checkpoint": str(checkpoint),
            "checkpoint_sha256": hashlib.sha256(checkpoint.read_bytes()).hexdigest(),
            "training_config": config,
            "exported_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "torch": torch.__version__,
            "sb3_contrib": sb3_contrib.__version__,
        },
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Export a MaskablePPO checkpoint to ONNX.")
    p.add_argument("checkpoint", help="an SB3 checkpoint (.zip)")
    p.add_argument("-o", "--out", help="output .onnx path (default: beside the checkpoint)")
    args = p.parse_args(argv)
    checkpoint = Path(args.checkpoint)
    out = Path(args.out) if args.out else checkpoint.with_suffix(".onnx")
    try:
        meta = export(checkpoint, out)
    except (CheckpointError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # the exporter or the disk: one line, not a traceback
        print(f"error: could not export {checkpoint}: {first_line(e)}", file=sys.stderr)
        return 1
    spec = meta[OBS_SPEC_ATTRIBUTE]
    print(
        f"exported {out} and {metadata_path(out)} "
        f"({spec['n_players']} players, {spec['encoding']} observation v{spec['version']})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
