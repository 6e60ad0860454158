"""``fivethousand export`` (``python export.py`` in a clone): a shipped agent, an SB3
checkpoint (.zip) or a value net (.npz) as an ONNX bot and its metadata (``-o
FILE.onnx``), or a single-network agent as a bundle folder (``--out DIR``). The writing
is ``fivethousand_rl.agents.exporting``'s (docs/export.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

from fivethousand_rl.agents.exported import VALUE_NET_ATTRIBUTE, metadata_path
from fivethousand_rl.agents.exporting import (
    DEFAULT_VECTORS,
    ONNX_OPSET,
    OPSETS,
    RUNTIME_FILES,
    export,
    export_bundle,
)
from fivethousand_rl.agents.neural import OBS_SPEC_ATTRIBUTE, CheckpointError, first_line
from fivethousand_rl.agents.rule_flags import OneLineParser, positive_whole_number
from fivethousand_rl.agents.shipped import (
    CHECKPOINT_MODULES,
    SHIPPED,
    importable,
    needs_extra,
    shipped_model,
)


def missing_install(prog: str, checkpoint: Path) -> str | None:
    """The one line saying what exporting `checkpoint` needs and is missing here, with
    the narrowest install (`prog`: the command as typed), or None: onnx for any graph, the
    training extra for a checkpoint (.zip: torch, sb3-contrib, onnxscript)."""
    if checkpoint.suffix == ".zip":
        missing = next((m for m in (*CHECKPOINT_MODULES, "onnxscript") if not importable(m)), None)
        if missing is not None:
            return needs_extra(prog, missing)
    if not importable("onnx"):
        return f"{prog} needs onnx: pip install onnx"
    return None


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The command line's exit code; `prog`: the command as typed, for its usage
    (default: this script's)."""
    p = OneLineParser(
        prog=prog,
        description="Export a MaskablePPO checkpoint or a planner's value net to ONNX, or a "
        "single-network agent to a self-contained bundle folder (--out DIR).",
    )
    p.add_argument(
        "checkpoint",
        help=f"a shipped agent ({', '.join(SHIPPED)}), an SB3 checkpoint (.zip) or a value "
        "net (.npz); for --out DIR also an exported PPO bot (.onnx, its .json beside it)",
    )
    p.add_argument(
        "-o",
        dest="onnx",
        metavar="FILE.onnx",
        help="output .onnx path (default: beside the checkpoint; for a shipped agent "
        "NAME.onnx in the current folder)",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        help="write a bundle folder: the graph, its weights, every rule, the observation and "
        "action layouts, the turn-EV table and test vectors (docs/export.md); a path "
        "ending in .onnx: as -o",
    )
    p.add_argument(
        "--vectors",
        type=positive_whole_number,
        default=DEFAULT_VECTORS,
        help=f"test vectors a bundle holds, at least (default {DEFAULT_VECTORS})",
    )
    p.add_argument("--seed", type=int, default=0, help="the test vectors' games' seed, >= 0")
    p.add_argument(
        "--runtime",
        action="store_true",
        help=f"with --out DIR: only what playing needs (bundle.json, {', '.join(RUNTIME_FILES)}; "
        "no ONNX graph, no test vectors)",
    )
    p.add_argument(
        "--opset",
        type=int,
        default=ONNX_OPSET,
        help=f"the ONNX opset of the graph, {OPSETS.start} to {OPSETS.stop - 1} "
        f"(default {ONNX_OPSET}; docs/export.md says which runtimes run which)",
    )
    args = p.parse_args(argv)
    if args.onnx and args.out:
        p.error("give either -o FILE.onnx or --out DIR, not both")
    if args.opset not in OPSETS:  # refused before any work
        p.error(f"argument --opset: must be {OPSETS.start} to {OPSETS.stop - 1}, not {args.opset}")
    if args.seed < 0:  # refused before the export's work, not by numpy after it
        p.error(f"argument --seed: must be 0 or more, not {args.seed}")
    bundle_dir = args.out if args.out and not args.out.endswith(".onnx") else None
    if args.runtime and bundle_dir is None:
        p.error("--runtime writes a bundle folder: give --out DIR")
    try:
        default_out = Path(args.checkpoint)  # for a shipped agent: NAME.onnx in this folder
        checkpoint = shipped_model(args.checkpoint) if args.checkpoint in SHIPPED else default_out
        name = default_out.name if default_out.is_absolute() else str(default_out)
        missing = missing_install(p.prog, checkpoint)
        if missing is not None:
            raise ValueError(missing)
        if bundle_dir is not None:
            bundle = export_bundle(
                checkpoint, bundle_dir, name, args.vectors, args.seed, args.runtime, args.opset
            )
            obs, vectors = bundle["observation"], bundle["test_vectors"]
            what = "runtime only" if vectors is None else f"{vectors['count']} test vectors"
            print(
                f"exported the bundle {bundle_dir} ({bundle['players']} players, "
                f"{obs['encoding']} observation v{obs['version']}, {what})"
            )
            return 0
        out = Path(args.onnx or args.out or default_out.with_suffix(".onnx"))
        meta = export(checkpoint, out, args.opset)
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
