"""Export a trained model as a portable bot: ONNX model + metadata JSON.

    python export.py ppo-2p -o bots/ppo-2p.onnx           # a shipped agent, by name
    python export.py planner-2p -o bots/planner-2p.onnx
    python export.py checkpoints/RUN/best/model.zip       # a run's: RUN/best/model.onnx

A MaskablePPO checkpoint (.zip): the ONNX graph computes the actor's 64 action logits
from the observation vector; the metadata JSON beside it records the checkpoint's
observation spec (encoding, version, players, rules, named slices:
``envs.encoding.ObsSpec``), the action encoding's version and where the model came from.

A value network (.npz, ``agents.value_net``): the graph computes its 8 logits from the
turn-start features (built with the onnx package's helper, no torch); the metadata
records its feature spec (rules, seats), and the exported bot is the planner playing
against it. Both kinds play with onnxruntime and numpy only
(``agents.exported.load_exported``), anywhere an agent is named (``python evaluate.py
bots/ppo-2p.onnx smart``, ``python play.py --opponents bots/planner-2p.onnx``).
Installed, the same program is ``fivethousand export``.
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

from agents import make_policy
from agents.base import atomic_write, check_output_folder, read_text_capped
from agents.exported import (
    ACTION_ENCODING_VERSION,
    FORMAT,
    FORMAT_VERSION,
    VALUE_NET_ATTRIBUTE,
    ExportedBot,
    exported_planner,
    metadata_path,
)
from agents.neural import (
    OBS_SPEC_ATTRIBUTE,
    RUN_MODEL_FOLDERS,
    CheckpointError,
    SB3Policy,
    first_line,
)
from agents.shipped import SHIPPED, shipped_model
from agents.value_net import KIND, ValueNet, npz_kind

ONNX_OPSET = 17  # MatMul, Add, Tanh: any onnxruntime of the last years runs it


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
        config = json.loads(read_text_capped(path))
    except (OSError, ValueError, RecursionError) as e:  # ValueError: bad JSON, UTF-8, size
        raise CheckpointError(f"{path} (the config of {checkpoint}) is unreadable: {e}") from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{path} (the config of {checkpoint}) is not a JSON object")
    return config


def check_paths(checkpoint: Path, out: Path) -> None:
    """ValueError (CheckpointError for the checkpoint) unless `checkpoint` names an SB3
    checkpoint or a value net and `out` a .onnx file that can be written: checked
    before any exporting."""
    if checkpoint.suffix == ".npz" and npz_kind(checkpoint) != KIND:
        # Not a value net: the loader evaluate.py uses says what it is, in the same words
        # (missing, no archive, a foreign one); only a sound snapshot gets past it.
        make_policy(str(checkpoint))
        raise CheckpointError(
            f"{checkpoint} is a self-play snapshot, which cannot be exported; export its run's "
            "model instead (RUN/best/model.zip or RUN/latest/model.zip)"
        )
    if checkpoint.suffix not in (".zip", ".npz"):
        raise CheckpointError(
            f"export.py takes an SB3 checkpoint (.zip) or a value net (.npz), got {checkpoint}"
        )
    if out.suffix != ".onnx" or out.is_dir():
        raise CheckpointError(f"the output must be a .onnx file, got {out}")
    if not os.path.lexists(out.parent) and not os.path.lexists(out.parent.parent):
        # One missing folder is made when the export is written, never a chain of them
        # from the filesystem root for a mistyped path.
        raise ValueError(f"the output {out}: folder {out.parent.parent} does not exist")
    check_output_folder(out.parent, "the output folder")


def export(checkpoint: str | Path, out: str | Path) -> dict:
    """Export `checkpoint` to the ONNX file `out` (and its metadata JSON beside it, with
    the checkpoint's observation or feature spec); ValueError (CheckpointError for the
    checkpoint) for a checkpoint or output that does not fit."""
    checkpoint, out = Path(checkpoint), Path(out)
    check_paths(checkpoint, out)
    config = run_config(checkpoint)
    if checkpoint.suffix == ".npz":  # a value net: a planner bot
        try:
            net = ValueNet.load(checkpoint)
        except ValueError as e:
            raise CheckpointError(str(e)) from None

        def write_planner(tmp: Path) -> dict:
            import onnx

            onnx.save(value_net_graph(net), str(tmp))
            return {
                **header("planner", out),
                VALUE_NET_ATTRIBUTE: {"spec": net.spec.to_dict(), "hidden": list(net.hidden)},
                "inputs": {"features": ["batch", net.spec.size]},
                "outputs": {"logits": ["batch", net.spec.max_players]},
                "output": "softmax over the seats present (float64), seat 0 the player to move",
                "play": "plan each turn exactly against these win probabilities (agents.planner)",
                "provenance": provenance("value_net", checkpoint, config, onnx=onnx.__version__),
            }

        return write_aside(out, write_planner, exported_planner)
    import sb3_contrib
    import torch

    policy = SB3Policy(checkpoint)
    if policy.dict_obs:  # its network reads the mask as an input too
        raise CheckpointError(
            f"{checkpoint} reads dict observations (trained with dict_obs=True), which "
            "export.py does not write; play it as it is (.zip), or train on the plain vector"
        )
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

    def write(tmp: Path) -> dict:
        """The actor as a self-contained ONNX graph with a dynamic batch axis."""
        example = torch.zeros(2, policy.spec.size)  # batch 2: keeps the batch axis dynamic
        logging.getLogger("torch.onnx").setLevel(logging.ERROR)  # optional-op chatter
        with warnings.catch_warnings():  # the exporter's own deprecation chatter
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            torch.onnx.export(
                Actor().eval(),
                (example,),
                str(tmp),
                input_names=["obs"],
                output_names=["logits"],
                dynamic_shapes={"obs": {0: torch.export.Dim("batch", min=1)}},
                dynamo=True,
                external_data=False,  # one self-contained .onnx file
                verbose=False,
            )
        versions = {"torch": torch.__version__, "sb3_contrib": sb3_contrib.__version__}
        return {
            **header("ppo", out),
            OBS_SPEC_ATTRIBUTE: policy.spec.to_dict(),
            "action_encoding_version": ACTION_ENCODING_VERSION,
            "inputs": {"obs": ["batch", policy.spec.size]},
            "outputs": {"logits": ["batch", 64]},
            "masking": "replace illegal logits by -1e8; play the most probable action",
            "provenance": provenance("checkpoint", checkpoint, config, **versions),
        }

    return write_aside(out, write, ExportedBot)


def write_aside(out: Path, write, load) -> dict:
    """`write(tmp)` writes the bot at a temporary path and returns its metadata, written
    beside it; `load(tmp)` loads both back, or fails loudly now; then both are moved to
    `out` (``atomic_write``). A failure or Ctrl-C leaves no partial file."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.stem + ".partial.onnx")  # loaded back before it is `out`
    try:
        meta = write(tmp)
        metadata_path(tmp).write_text(json.dumps(meta, indent=2))
        load(tmp)
        atomic_write(out, tmp.read_bytes())
        atomic_write(metadata_path(out), metadata_path(tmp).read_bytes())
    finally:
        for leftover in (tmp, metadata_path(tmp)):
            leftover.unlink(missing_ok=True)
    return meta


def value_net_graph(net: ValueNet):
    """The network's forward pass as an ONNX graph: features (batch, size) float32 ->
    logits (batch, 8), tanh hidden layers, the same float32 weights."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits, x = [], [], "features"
    last = len(net.weights) - 1
    for i, (w, b) in enumerate(zip(net.weights, net.biases, strict=True)):
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes += [
            helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]),
            helper.make_node("Add", [f"m{i}", f"b{i}"], ["logits" if i == last else f"a{i}"]),
        ]
        if i < last:
            nodes.append(helper.make_node("Tanh", [f"a{i}"], [f"h{i}"]))
            x = f"h{i}"
    spec = net.spec
    graph = helper.make_graph(
        nodes,
        "fivethousand_value_net",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", spec.size])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", spec.max_players])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)], producer_name="export.py"
    )
    model.ir_version = 8  # readable by onnxruntime 1.14 and later
    onnx.checker.check_model(model)
    return model


def header(kind: str, out: Path) -> dict:
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "kind": kind, "name": out.stem}


def provenance(source: str, path: Path, config: dict, **versions: str) -> dict:
    """Where an export came from: the file and its hash, its training config, when, and
    the versions of the tools that made it."""
    return {
        source: str(path),
        f"{source}_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "training_config": config,
        "exported_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        **versions,
    }


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The command line's exit code; `prog`: the command as typed, for its usage
    (default: this script's)."""
    p = argparse.ArgumentParser(
        prog=prog,
        description="Export a MaskablePPO checkpoint or a planner's value net to ONNX.",
    )
    p.add_argument(
        "checkpoint",
        help=f"a shipped agent ({', '.join(SHIPPED)}), an SB3 checkpoint (.zip) or a value "
        "net (.npz)",
    )
    p.add_argument(
        "-o",
        "--out",
        help="output .onnx path (default: beside the checkpoint; for a shipped agent "
        "NAME.onnx in the current folder)",
    )
    args = p.parse_args(argv)
    try:
        if args.checkpoint in SHIPPED:  # its model file, wherever the package is
            checkpoint, default_out = shipped_model(args.checkpoint), Path(args.checkpoint)
        else:
            checkpoint = default_out = Path(args.checkpoint)
        out = Path(args.out) if args.out else default_out.with_suffix(".onnx")
        meta = export(checkpoint, out)
    except (CheckpointError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # the exporter or the disk: one line, not a traceback
        print(f"error: could not export {checkpoint}: {first_line(e)}", file=sys.stderr)
        return 1
    if meta["kind"] == "planner":
        spec = meta[VALUE_NET_ATTRIBUTE]["spec"]
        what = f"a planner for 2 to {spec['max_players']} players, value net features"
    else:
        spec = meta[OBS_SPEC_ATTRIBUTE]
        what = f"{spec['n_players']} players, {spec['encoding']} observation"
    print(f"exported {out} and {metadata_path(out)} ({what} v{spec['version']})")
    return 0
