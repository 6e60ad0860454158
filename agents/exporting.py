"""Writing exported bots and bundles (the command line: ``fivethousand export``).

``export``: a MaskablePPO checkpoint (.zip) as an ONNX graph of the actor's 64 action
logits, or a value network (.npz) as a graph of its 8 logits, with the metadata JSON
beside it (``agents.exported`` reads both back). ``export_bundle``: a folder another
runtime needs nothing else from (issue 44). No file written here names a folder of the
exporting machine (``without_local_metadata``, relative provenance paths).
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import shutil
import warnings
from pathlib import Path

import numpy as np

from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.base import atomic_write, check_output_folder, read_text_capped
from fivethousand_rl.agents.exported import (
    ACTION_ENCODING_VERSION,
    FORMAT,
    FORMAT_VERSION,
    MASKED_LOGIT,
    VALUE_NET_ATTRIBUTE,
    ExportedBot,
    exported_planner,
    masked_choice,
    metadata_path,
    read_metadata,
    sha256,
)
from fivethousand_rl.agents.neural import (
    OBS_SPEC_ATTRIBUTE,
    RUN_MODEL_FOLDERS,
    CheckpointError,
    NumpyScorer,
    SB3Policy,
)
from fivethousand_rl.agents.value_net import KIND, ValueNet, npz_kind
from fivethousand_rl.envs.i18n import N_
from fivethousand_rl.envs.rules import NUM_ACTIONS

ONNX_OPSET = 17  # any onnxruntime of the last years runs it
# The opsets `export --opset` writes (docs/export.md, "Runtimes"): from 13, where Squeeze
# takes its axes as an input as the hand-built graphs give them, to 21; every operator the
# graphs use means the same throughout (tests check each opset's actions on the vectors).
OPSETS = range(13, 22)
ONNX_ACTIVATIONS = {"tanh": "Tanh", "relu": "Relu"}
LICENSE = "MIT"  # the project's (pyproject.toml), written into every export and bundle


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


def check_opset(opset: int) -> None:
    """ValueError, in one line, unless `opset` is one of OPSETS."""
    if opset not in OPSETS:
        raise ValueError(
            f"the ONNX opset must be {OPSETS.start} to {OPSETS.stop - 1}, not {opset} "
            f"(default {ONNX_OPSET})"
        )


def export(checkpoint: str | Path, out: str | Path, opset: int = ONNX_OPSET) -> dict:
    """Export `checkpoint` to the ONNX file `out` (and its metadata JSON beside it, with
    the checkpoint's observation or feature spec), an ONNX graph of `opset` (OPSETS);
    ValueError (CheckpointError for the checkpoint) for a checkpoint, output or opset
    that does not fit."""
    checkpoint, out = Path(checkpoint), Path(out)
    check_opset(opset)
    check_paths(checkpoint, out)
    config = run_config(checkpoint)
    if checkpoint.suffix == ".npz":  # a value net: a planner bot
        try:
            net = ValueNet.load(checkpoint)
        except ValueError as e:
            raise CheckpointError(str(e)) from None

        def write_planner(tmp: Path) -> dict:
            import onnx

            onnx.save(value_net_graph(net, opset), str(tmp))
            return {
                **header("planner", out),
                "license": LICENSE,
                VALUE_NET_ATTRIBUTE: {"spec": net.spec.to_dict(), "hidden": list(net.hidden)},
                "inputs": {"features": ["batch", net.spec.size]},
                "outputs": {"logits": ["batch", net.spec.max_players]},
                "output": "softmax over the seats present (float64), seat 0 the player to move",
                "play": "plan each turn exactly against these win probabilities "
                "(fivethousand_rl.agents.planner)",
                "provenance": provenance("value_net", checkpoint, config, onnx=onnx.__version__),
            }

        return write_aside(out, write_planner, exported_planner)
    import onnx
    import sb3_contrib
    import torch
    from stable_baselines3.common.torch_layers import FlattenExtractor

    from fivethousand_rl.agents.networks import ActionScoringNet

    policy = SB3Policy(checkpoint)
    if policy.dict_obs:  # its network reads the mask as an input too
        raise CheckpointError(
            f"{checkpoint} reads dict observations (trained with dict_obs=True), which "
            "export.py does not write; play it as it is (.zip), or train on the plain vector"
        )
    sb3_policy = policy.model.policy.eval()
    versions = {"torch": torch.__version__, "sb3_contrib": sb3_contrib.__version__}

    def write(tmp: Path) -> dict:
        """The actor as a self-contained ONNX graph with a dynamic batch axis."""
        if isinstance(sb3_policy.mlp_extractor, ActionScoringNet) and isinstance(
            sb3_policy.pi_features_extractor, FlattenExtractor
        ):
            scorer = NumpyScorer.from_policy(sb3_policy)  # its float32 weights, as float64
            w = scorer.weights
            network = {
                "state": [(weight.T, bias) for weight, bias in scorer.state_layers],
                "state_in": [(w["state_in.weight"].T, None)],
                "action_in": [(w["action_in.weight"].T, w["action_in.bias"])],
                "scorer": [(weight.T, bias) for weight, bias in scorer.scorer_layers],
            }
            graph = actor_graph(
                network, scorer.activation, policy.spec.size, scorer.n_state, "export.py", opset
            )
            onnx.save(graph, str(tmp))
        else:
            torch_export(sb3_policy, policy.spec.size, tmp, opset)
        return ppo_metadata(
            out, policy.spec, provenance("checkpoint", checkpoint, config, **versions)
        )

    return write_aside(out, write, ExportedBot)


def ppo_metadata(out: Path, spec, provenance: dict) -> dict:
    """The metadata of an exported "ppo" bot of `out` reading `spec` (torch's or JAX's)."""
    return {
        **header("ppo", out),
        "license": LICENSE,
        OBS_SPEC_ATTRIBUTE: spec.to_dict(),
        "action_encoding_version": ACTION_ENCODING_VERSION,
        "inputs": {"obs": ["batch", spec.size]},
        "outputs": {"logits": ["batch", 64]},
        "masking": "replace illegal logits by -1e8; play the most probable action",
        "provenance": provenance,
    }


def torch_export(sb3_policy, obs_size: int, tmp: Path, opset: int = ONNX_OPSET) -> None:
    """An SB3 policy's actor (observation -> its 64 logits, every action scored) as the
    ONNX graph torch's exporter writes at `tmp`, with a dynamic batch axis: for the
    networks ``actor_graph`` does not write."""
    import torch

    class Actor(torch.nn.Module):
        """Observation -> action logits: the part of the policy that chooses."""

        def __init__(self) -> None:
            super().__init__()
            self.policy = sb3_policy

        def forward(self, obs: torch.Tensor) -> torch.Tensor:
            p = self.policy
            features = p.extract_features(obs, p.pi_features_extractor)
            return p.action_net(p.mlp_extractor.forward_actor(features))

    example = torch.zeros(2, obs_size)  # batch 2: keeps the batch axis dynamic
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)  # optional-op chatter
    logging.getLogger("onnxscript").setLevel(logging.ERROR)  # "converted with onnx's C API"
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
            opset_version=opset,
            external_data=False,  # one self-contained .onnx file
            verbose=False,
        )
    without_local_metadata(tmp)


def without_local_metadata(onnx_path: Path) -> None:
    """Rewrite the graph at `onnx_path` without the metadata and doc strings torch's
    exporter writes on its model, graphs, nodes and values (``pkg.torch.onnx.stack_trace``
    names the exporting machine's source files): nothing that runs the graph reads them."""
    import onnx

    def strip(message) -> None:
        for field, value in message.ListFields():
            if field.name in ("metadata_props", "doc_string"):
                message.ClearField(field.name)
            elif field.message_type is not None:  # one message, or a repeated field of them
                for item in value if field.is_repeated else [value]:
                    strip(item)

    model = onnx.load(str(onnx_path))
    strip(model)
    onnx.save(model, str(onnx_path))


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


class GraphBuilder:
    """An ONNX graph written node by node (onnx.helper): the value networks' and the
    hand-built actors' (``actor_graph``), float32 weights and int64 constants as
    initializers."""

    def __init__(self, opset: int = ONNX_OPSET) -> None:
        self.nodes, self.inits = [], []  # onnx NodeProtos, TensorProtos
        self.opset = opset  # every operator used means the same from 13 on (OPSETS)

    def const(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], output: str) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, [output]))
        return output

    def dense(
        self, layers: list, x: str, prefix: str, activation: str, last_activation: bool, out: str
    ) -> str:
        """`layers` ((weight (in, out), bias or None) each) applied to `x`, `activation`
        ("relu" or "tanh") between them and after the last if `last_activation`; the
        result is named `out`."""
        for i, (w, b) in enumerate(layers):
            last = i == len(layers) - 1
            named = out if last and not last_activation else f"{prefix}_a{i}"
            weight = self.const(f"{prefix}_w{i}", np.asarray(w, np.float32))
            x = self.node("MatMul", [x, weight], named if b is None else f"{prefix}_m{i}")
            if b is not None:
                bias = self.const(f"{prefix}_b{i}", np.asarray(b, np.float32))
                x = self.node("Add", [x, bias], named)
            if not last or last_activation:
                x = self.node(ONNX_ACTIVATIONS[activation], [x], out if last else f"{prefix}_h{i}")
        return x

    def model(self, name: str, inputs: dict, outputs: dict, producer: str):
        """The checked model of the nodes so far: `inputs` and `outputs` by name, each
        a float32 tensor of the shape given."""
        import onnx
        from onnx import TensorProto, helper

        def values(shapes: dict) -> list:
            return [
                helper.make_tensor_value_info(k, TensorProto.FLOAT, v) for k, v in shapes.items()
            ]

        graph = helper.make_graph(self.nodes, name, values(inputs), values(outputs), self.inits)
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", self.opset)], producer_name=producer
        )
        # IR 8: readable by onnxruntime 1.14 and later; a newer opset needs a newer IR
        model.ir_version = max(8, helper.find_min_ir_version_for(model.opset_import))
        onnx.checker.check_model(model, full_check=True)
        return model


def value_net_graph(net: ValueNet, opset: int = ONNX_OPSET):
    """The network's forward pass as an ONNX graph of `opset`: features (batch, size)
    float32 -> logits (batch, 8), tanh hidden layers, the same float32 weights."""
    g = GraphBuilder(opset)
    layers = list(zip(net.weights, net.biases, strict=True))
    g.dense(layers, "features", "value", "tanh", False, "logits")
    shapes = ({"features": ["batch", net.spec.size]}, {"logits": ["batch", net.spec.max_players]})
    return g.model("fivethousand_value_net", *shapes, "export.py")


def actor_graph(
    network: dict,
    activation: str,
    obs_size: int,
    n_state: int | None,
    producer: str,
    opset: int = ONNX_OPSET,
):
    """An actor as an ONNX graph: obs (batch, obs_size) float32 -> logits (batch, 64),
    the layers of `network` ((weight (in, out), bias or None) each) with `activation`
    between them. A plain MLP (`n_state` None): network["actor"] on the observation.
    The action-scoring actor (``agents.networks.ActionScoringNet``, JAX's too): the
    state part (the first `n_state` entries) through "state" then "state_in"; each legal
    action's row (its LEGAL column set) through "action_in", plus its state's share,
    the activation, then "scorer". As in training, only the legal rows are scored
    (about 3 of 64: a fraction of the work); every other logit is MASKED_LOGIT, what
    masking makes it anyway. An ONNX graph of `opset` (OPSETS)."""
    from fivethousand_rl.envs.encoding import ACTION_FEATURES, Col

    g = GraphBuilder(opset)
    shapes = ({"obs": ["batch", obs_size]}, {"logits": ["batch", NUM_ACTIONS]})
    if n_state is None:
        g.dense(network["actor"], "obs", "actor", activation, False, "logits")
        return g.model("fivethousand_actor", *shapes, producer)

    def ints(name: str, *values: int) -> str:
        return g.const(name, np.array(values, np.int64))

    axis1, axis2 = ints("axis1", 1), ints("axis2", 2)
    state = g.node("Slice", ["obs", ints("zero", 0), ints("n_state", n_state), axis1], "state")
    flat = g.node("Slice", ["obs", "n_state", ints("obs_end", obs_size), axis1], "flat_rows")
    rows = g.node("Reshape", [flat, ints("rows_shape", -1, NUM_ACTIONS, ACTION_FEATURES)], "rows")
    legal_at = [ints("legal_at", Col.LEGAL), ints("legal_end", Col.LEGAL + 1), axis2]
    legal = g.node("Squeeze", [g.node("Slice", [rows, *legal_at], "legal3"), axis2], "legal")
    # (k, 2): (observation, action) of each legal row, in order
    where = g.node("Transpose", [g.node("NonZero", [legal], "nonzero")], "where")
    owner = g.node("Slice", [where, "zero", ints("one", 1), axis1], "owner")  # (k, 1)
    embedding = g.dense(network["state"], state, "state", activation, True, "embedding")
    shares = g.dense(network["state_in"], embedding, "state_in", activation, False, "shares")
    share = g.node("GatherND", [shares, owner], "share")
    picked = g.node("GatherND", [rows, where], "picked")
    scored = g.dense(network["action_in"], picked, "action_in", activation, False, "action_part")
    joined = g.node("Add", [scored, share], "joined_in")
    joined = g.node(ONNX_ACTIVATIONS[activation], [joined], "joined")
    scores = g.dense(network["scorer"], joined, "scorer", activation, False, "scores")
    scores = g.node("Squeeze", [scores, axis1], "legal_logits")
    # MASKED_LOGIT where LEGAL is 0, 0 where it is 1 (overwritten by the scores)
    absent = g.node("Add", [legal, g.const("minus_one", np.array(-1, np.float32))], "absent")
    scale = g.const("masked_scale", np.array(-MASKED_LOGIT, np.float32))
    base = g.node("Mul", [absent, scale], "masked")
    g.node("ScatterND", [base, where, scores], "logits")
    return g.model("fivethousand_actor", *shapes, producer)


def header(kind: str, out: Path) -> dict:
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "kind": kind, "name": out.stem}


def provenance(source: str, path: Path | None, config: dict, **versions: str) -> dict:
    """Where an export came from: the file and its hash (none without `path`), its
    training config, when, and the versions of the tools that made it."""
    origin = (
        {} if path is None else {source: shown(path), f"{source}_sha256": sha256(path.read_bytes())}
    )
    return {
        **origin,
        "training_config": config,
        "exported_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        **versions,
    }


def shown(path: Path) -> str:
    """`path` as provenance records it, never with the exporting machine's folders:
    relative to the current folder when inside it (a shipped agent named in a clone:
    checkpoints/NAME/model.zip), else its folder and file."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return Path(*Path(path).resolve().parts[-2:]).as_posix()


# ------------------------------------------------------------------------ bundles
BUNDLE_FORMAT = "fivethousand-rl bot bundle"
BUNDLE_VERSION = 1
BUNDLE_FILE = "bundle.json"
MODEL_FILE = "model.onnx"  # with model.json beside it: the toolkit plays it as it is
WEIGHTS_FILE = "weights.bin"
TURN_EV_FILE = "turn_ev.f64"
VECTORS_FILE = "test_vectors.json"
MESSAGES_FILE = "messages.json"  # the texts of the bundle's web page (ports/web), translated
MESSAGES_FORMAT = "fivethousand-rl page messages"
# What playing needs (with bundle.json): a runtime bundle (``export --runtime``) holds only
# these; a full one adds the ONNX graph and the test vectors, for checking a port.
RUNTIME_FILES = (WEIGHTS_FILE, TURN_EV_FILE, MESSAGES_FILE)
DEFAULT_VECTORS = 1000
# Number.MAX_SAFE_INTEGER: the largest integer that a JSON reader keeping numbers as
# float64 (JavaScript's) reads exactly; bundle.json holds none beyond it.
SAFE_INTEGER = 2**53 - 1
# The ONNX operators the bundle's plain network layout describes (ONNX semantics, batch
# axis first): what the reference ports' forward passes implement.
PLAIN_OPS = ("Add", "Flatten", "GatherND", "Gemm", "Identity", "MatMul", "Mul", "NonZero")
PLAIN_OPS += ("Relu", "Reshape", "ScatterND", "Sigmoid", "Slice", "Squeeze", "Tanh")
PLAIN_OPS += ("Transpose", "Unsqueeze")
# The bots the test vectors' games are played against, by table size (optimal: 2 only).
VECTOR_OPPONENTS = {2: ("optimal", "smart", "turn-ev")}
OTHER_OPPONENTS = ("smart", "turn-ev")

SLICE_MEANINGS = {
    "scores": "banked scores / target, one per seat: the observer first, then the others "
    "in turn order after it",
    "entered": "1 if that seat's banked score is above 0 (same seat order)",
    "to_move": "one-hot: whose turn it is, relative to the observer (index 0: the observer)",
    "turn_total": "min(turn total before this decision / target, 2): capped at 2",
    "need_after_bank": "max((target - the mover's banked score - turn total) / target, -1): "
    "clipped at -1 (the mover's score, whoever observes)",
    "ends_in_50": "1 if turn total % score_step != 0 (under the 50 rule: it ends in 50)",
    "dice_in_roll": "number of dice in the roll / 5 (0 when no decision is due)",
    "some_action_banks": "1 if some legal action banks (0 when no decision is due)",
    "roll_one_hot": "the roll sorted ascending: 6 entries per die position, entry face-1 "
    "set; positions past the roll's dice all 0",
    "face_counts": "count of each face 1..6 in the roll / 5 (float32 sums of 0.2, the same "
    "as count / 5 rounded once)",
    "score_one_hot": "per seat (same order), one-hot of banked score // score_step over "
    "target // score_step + 1 bins",
    "actions": "64 rows of action_row.size columns, in action order: the consequences of "
    "each legal action for the mover (all 0 for an illegal action, and for every seat "
    "but the mover)",
}
COLUMN_WIDTHS = {"DICE_LEFT_AT": 5, "NEED_AT": 21}  # the one-hot groups; 1 column otherwise
COLUMN_MEANINGS = {
    "LEGAL": "1: the action is legal",
    "BANKS": "1: it banks",
    "TURN_TOTAL": "turn total after the hold / target, not capped (unlike the turn_total slice)",
    "DICE_LEFT_AT": "one-hot over 5 columns: dice the next roll would have, 1..5 (5 after "
    "hot dice); banking rows too: the dice their hold leaves",
    "POINTS": "points of the held dice / 1000 (at most 4.4: five 1s)",
    "NEED": "need = target - mover's score - turn total after the hold; max(need / target, "
    "-1): clipped at -1 (it never exceeds 1)",
    "NEED_AT": "one-hot over 21 columns of need // 50 when 0 <= need <= 1000",
    "NEED_OVER_1000": "1: need > 1000",
    "OVERSHOOT": "1: need < 0",
    "MAY_BANK": "1: the turn total after the hold may be banked (R8); 1 in every banking row",
    "WINS": "banking: 1 if the mover wins",
    "BUMPS": "banking without overshoot or win: 1 if another seat is bumped to 0",
    "GIFTS": "banking with overshoot: 1 if the total is given to an opponent",
    "GIFT_WINS": "banking with a gift: 1 if that gift makes its receiver win",
    "POINTS_LOST": "banking with overshoot: 1 if nobody may receive the total",
    "OWN_SCORE_AFTER": "mover's banked score / target; banking: the score after it (1 on "
    "a win; unchanged on an overshoot)",
    "TURN_EV": "banking: min(total / 1000, 5); rolling: min(turn_ev / 1000, 5) with "
    "turn_ev the table's float64 value for (entered, total, dice left), divided in float64",
    "ENDS_IN_50": "1 if the turn total after the hold % score_step != 0 (0 in every banking row)",
}
RULE_MEANINGS = {
    "hold": "'free': hold any scoring set of the roll; 'all': hold every scoring die (the "
    "roll's best-scoring reading), so the only choice is bank or roll (R5)",
    "target": "the exact score that wins (V5)",
    "entry": "the turn total a player with 0 points needs to bank (V1)",
    "bump": "banking onto another seat's score sends that seat to 0 (R9, V2)",
    "overshoot": "'gift': a bank past the target gives the turn total to the lowest "
    "entered other seat if it does not take them past the target, else it is lost; "
    "'lost': always lost (R9, V3)",
    "fifty_rule": "a turn total ending in 50 may not be banked (R8, V4)",
}


# The texts of the page that plays a bundle in a browser (ports/web/play.mjs), as
# msgids of the project's catalogues (envs/locale), translated there for the web app or
# the terminal, or (N_) for the page alone: a plural one is (singular, plural).
PAGE_MESSAGES: tuple[str | tuple[str, str], ...] = (
    "5000 - dice against the bots",
    "New game",
    "Roll",
    "Bank",
    "dice",
    "you",
    "{bot} (seat {seat})",
    # on the scoreboard, by a seat another's bank sent to 0 or gave its total to (R9)
    N_("bumped to 0 by {who}"),
    N_("gift of {points} from {who}"),
    "entered",
    "not entered",
    "+{points} this turn",
    "Rules: {rules}.",
    "exactly {target} wins",
    "{entry} to enter",
    "bumps",
    "no bumps",
    "overshoot gift",
    "overshoot lost",
    "the 50 rule",
    "no 50 rule",
    "hold free",
    "hold all",
    ", ",
    "{first} and {last}",
    "Turn {turn}: your move. Click dice to hold them, then roll or bank.",
    "Turn {turn}: you roll...",
    "Turn {turn}: {name} is playing...",
    ("Game over after {n} turn: you win.", "Game over after {n} turns: you win."),
    ("Game over after {n} turn: {name} won.", "Game over after {n} turns: {name} won."),
    "You won!",
    "{name} won.",
    (
        "turn total {total} · {n} die in play · held this turn:",
        "turn total {total} · {n} dice in play · held this turn:",
    ),
    "nothing yet",
    "die showing {face}",
    "die {position} showing {face}",
    "die {position} showing {face} (does not score)",
    "A {face} does not score here: it cannot be held.",
    "Click the dice to hold (keys 1-5), then Roll or Bank.",
    "Under the hold rule 'all' every scoring die is held.",
    "That hold is not allowed: every die held must score.",
    "Holding these makes {total}; {why}.",
    "Holding these makes {total}.",
    "can't bank {total}: it {why}",
    "nothing to bank",
    "ends in 50",
    "is under the {entry} needed to enter",
    "{who} rolled {dice}",
    "{who} rolled {dice}: bust, lost {points}",
    "{who} rolled {dice}: bust",
    "{who} held {dice}, turn total {total}",
    "{bank} (held {dice})",
    "{who} banked {total}, now {score}",
    "{who} banked {total}, now {score}, which bumped {bumped} to 0",
    "{who} banked {total} and won with exactly {score}",
    "{who} banked {total}: overshoot, gift of {total} to {to}, now {now}",
    "{who} banked {total}: overshoot, gift of {total} to {to}, who won with exactly {now}",
    "{who} banked {total}: overshoot, the points are lost ({why})",
    "overshoots are lost under these rules",
    "nobody else has {entry} or more",
    "it would take {who} past {target}",
    "Free software under the MIT licence",
)


def page_messages() -> dict:
    """messages.json: the page's texts (``PAGE_MESSAGES``) in each language of the
    project, from its gettext catalogues (``envs.i18n.catalogue_json``): a msgid to its
    translation, a plural one to its forms by CLDR category (``Intl.PluralRules`` picks
    one). English is the msgids themselves; a text a catalogue lacks stays English."""
    from fivethousand_rl.envs import i18n

    keys = [m if isinstance(m, str) else m[0] for m in PAGE_MESSAGES]
    languages = {}
    for lang, name in i18n.LANGUAGES.items():
        catalogue = i18n.catalogue_json(lang)["messages"]
        own = {k: catalogue[k] for k in keys if k in catalogue}
        languages[lang] = {"name": name, "messages": own}
    return {
        "format": MESSAGES_FORMAT,
        "source_language": i18n.SOURCE_LANGUAGE,
        "msgids": [list(m) if isinstance(m, tuple) else m for m in PAGE_MESSAGES],
        "placeholders": "{name} is filled in, numbers written as the language writes them",
        "plurals": "a plural text is its forms by CLDR plural category (one, few, many, "
        "other), chosen with the language's plural rules",
        "languages": languages,
    }


# What the page says when it cannot play (ports/web/boot.js, which holds them translated
# as ``page_error_messages`` gives them): they must show where no bundle, no messages.json
# and no module script could be loaded, so the page carries them, not the bundle.
PAGE_ERRORS = (
    N_(
        "This page does not run from a file: serve its folder over HTTP, for example "
        "with {command} in {folder}, and open {url}"
    ),
    N_(
        "This browser is too old for this page: use a recent version of Firefox, Chrome, "
        "Edge or Safari."
    ),
    N_("The bot's file {file} is missing: export the bundle again."),
    N_(
        "The bot's file {file} is damaged (it does not match bundle.json): export the bundle again."
    ),
    N_(
        "The page's scripts could not be loaded: keep its folders web and js side by "
        "side, as in ports/."
    ),
)


def page_error_messages() -> dict:
    """The page's error texts (``PAGE_ERRORS``) by language, from the catalogues: what
    ports/web/boot.js holds (a test keeps them equal). English is the msgids."""
    from fivethousand_rl.envs import i18n

    languages = {}
    for lang in i18n.LANGUAGES:
        catalogue = i18n.catalogue_json(lang)["messages"]
        languages[lang] = {k: catalogue.get(k, k) for k in PAGE_ERRORS}
    return languages


class BundleRefused(CheckpointError):
    """An agent that a bundle cannot hold (one line)."""


def _relative(value: object) -> object:
    """`value` with every absolute path in its strings replaced by its last part: a
    bundle records where it came from without the exporting machine's folders."""
    if isinstance(value, dict):
        return {k: _relative(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_relative(v) for v in value]
    if isinstance(value, str) and (os.path.isabs(value) or value[1:3] in (":\\", ":/")):
        return Path(value.replace("\\", "/")).name
    return value


def git_commit() -> str | None:
    """The project's commit when it runs from a git clone, else None."""
    import subprocess

    root = Path(__file__).resolve().parent.parent
    command = ["git", "-C", str(root), "rev-parse", "HEAD"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and len(commit) == 40 else None


def toolkit_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("fivethousand-rl")
    except metadata.PackageNotFoundError:
        return None


def float16_exact(array: np.ndarray) -> bool:
    """Whether every float32 number of `array` is a float16 exactly (in range, its
    precision; NaN never): then it is stored as float16 without loss."""
    with np.errstate(over="ignore"):  # beyond float16's range: inf, unequal
        return np.array_equal(array, array.astype(np.float16).astype(np.float32))


def plain_network(onnx_path: Path) -> tuple[dict, bytes]:
    """The graph at `onnx_path` as plain data: its nodes (ONNX operators and attributes)
    and tensors, float weights as offsets into one little-endian buffer (returned),
    integer constants inline. A float tensor is stored as float16 when each of its
    numbers is a float16 exactly (``float16_exact``: the weights of a network shipped
    with ``ship --float16``), else as float32, at an offset that is a multiple of its
    size. BundleRefused for an operator outside PLAIN_OPS."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(onnx_path))
    graph = model.graph
    unknown = sorted({n.op_type for n in graph.node} - set(PLAIN_OPS))
    if unknown:
        raise BundleRefused(
            f"the network uses ONNX operators {', '.join(unknown)}, which the bundle's plain "
            f"layout does not describe (it takes {', '.join(PLAIN_OPS)})"
        )
    # The constants read only as a Slice's starts or ends (inputs 1, 2): ONNX clamps those
    # to the dimension, so torch's "to the end" (2**63 - 1) may become SAFE_INTEGER.
    uses: dict[str, set[bool]] = {}
    for n in graph.node:
        for i, name in enumerate(n.input):
            uses.setdefault(name, set()).add(n.op_type == "Slice" and i in (1, 2))
    tensors, buffer = {}, bytearray()
    for init in graph.initializer:
        name, array = init.name, numpy_helper.to_array(init)
        shape = list(array.shape)
        if array.dtype == np.float32:
            dtype, stored = ("float16", "<f2") if float16_exact(array) else ("float32", "<f4")
            buffer += bytes(-len(buffer) % np.dtype(stored).itemsize)  # aligned: typed arrays
            tensors[name] = dict(dtype=dtype, shape=shape, offset=len(buffer), count=array.size)
            buffer += array.astype(stored).tobytes()
        elif array.dtype.kind in "iu":
            values = array.ravel().tolist()
            if any(abs(v) > SAFE_INTEGER for v in values):
                if uses.get(name) != {True}:
                    raise BundleRefused(
                        f"the network's integer constant {name} holds "
                        f"{max(values, key=abs)}, beyond the 2**53 - 1 a JSON reader "
                        "(JavaScript's) holds exactly"
                    )
                values = [max(-SAFE_INTEGER, min(v, SAFE_INTEGER)) for v in values]
            tensors[name] = dict(dtype="int64", shape=shape, values=values)
        else:
            raise BundleRefused(f"the network holds a {array.dtype} tensor {name}")

    def attribute(a) -> object:
        value = helper.get_attribute_value(a)
        if isinstance(value, bytes):
            return value.decode()
        if isinstance(value, list | tuple):
            return [v.decode() if isinstance(v, bytes) else v for v in value]
        return value

    nodes = [
        {
            "op": n.op_type,
            "inputs": list(n.input),
            "outputs": list(n.output),
            "attributes": {a.name: attribute(a) for a in n.attribute},
        }
        for n in graph.node
    ]
    for n in nodes:
        for name, value in n["attributes"].items():
            if any(type(v) is int and abs(v) > SAFE_INTEGER for v in np.ravel(value).tolist()):
                raise BundleRefused(
                    f"the network's {n['op']} attribute {name} holds an integer beyond the "
                    "2**53 - 1 a JSON reader (JavaScript's) holds exactly"
                )
    opset = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    ends = {"input": graph.input[0].name, "output": graph.output[0].name}
    return {**ends, "opset": opset, "nodes": nodes, "tensors": tensors}, bytes(buffer)


def observation_layout(spec) -> dict:
    """The observation's named slices (offset, size, meaning) and the action row's
    columns, from the spec the model reads."""
    from fivethousand_rl.envs.encoding import ACTION_FEATURES, Col

    slices = [
        {"name": name, "offset": s.start, "size": s.stop - s.start, "meaning": SLICE_MEANINGS[name]}
        for name, s in spec.slices.items()
    ]
    columns = [
        dict(
            name=c.name,
            index=int(c),
            size=COLUMN_WIDTHS.get(c.name, 1),
            meaning=COLUMN_MEANINGS[c.name],
        )
        for c in Col
    ]
    return {
        "encoding": spec.encoding,
        "version": spec.version,
        "size": spec.size,
        "dtype": "float32",
        "n_players": spec.n_players,
        "seat_order": "the observer first, then the other seats in turn order after it",
        "rounding": "each entry computed in float64 (integers, the turn-EV table's float64 "
        "values) and rounded once to float32, to nearest",
        "slices": slices,
        "action_row": {"size": ACTION_FEATURES, "columns": columns},
    }


def rules_section(rules) -> dict:
    """Every rule field (envs.rules.Rules), what each means, and the scoring (R2)."""
    from dataclasses import asdict

    from fivethousand_rl.envs.rules import SINGLE_VALUE, STRAIGHT_VALUE, STRAIGHTS, TRIPLE_VALUE

    return {
        **asdict(rules),
        "score_step": rules.score_step,
        "meanings": RULE_MEANINGS,
        "scoring": {
            "triple": {str(f): v for f, v in TRIPLE_VALUE.items()},
            "single": {str(f): v for f, v in SINGLE_VALUE.items()},
            "straight": STRAIGHT_VALUE,
            "straights": [list(s) for s in STRAIGHTS],
            "rule": "a held set scores only if every die in it scores: five distinct faces "
            "forming a straight score 'straight'; otherwise per face, 3 or more of a "
            "kind score triple[face] * 2**(count - 3), 1 or 2 of a face score "
            "single[face] each (faces without a single value cannot be held alone)",
        },
        "can_bank": "total > 0, not (fifty_rule and total % 100 == 50), and (banked score "
        "> 0 or total >= entry)",
        "bank": "new = banked + total. new <= target: the banker gets new; if new < target "
        "and bump, every other seat at exactly new drops to 0; new == target wins. new > "
        "target (overshoot): the banker keeps the score; under 'gift' the receiver is the "
        "other seat with the lowest score among those with score >= entry, ties to the "
        "first in turn order after the banker; if there is one and score + total <= "
        "target they get the total (exactly target: they win), else the total is lost",
        "hot_dice": "holding every die of the roll gives 5 dice again",
    }


def actions_section() -> dict:
    return {
        "count": 64,
        "hold_bits": "bits 0-4: the positions held in the roll sorted ascending (bit i "
        "is the i-th smallest die)",
        "bank_bit": 32,
        "bank": "with bit 5 (32) the player banks after holding, without it rolls the dice left",
        "equal_faces": "among equal faces only the leftmost copies may be held: each "
        "distinct held set has one action",
        "legal": "a hold is legal when its held set scores (rules.scoring) and, under hold "
        "'all', it is the roll's best-scoring hold (ties: lowest bits); its roll action "
        "(bits) is always legal, its bank action (bits | 32) when can_bank(mover's "
        "score, turn total + held points)",
        "choose": "replace illegal logits by -1e8 and play the most probable action "
        "(a float32 softmax's argmax; the first of equals)",
    }


def turn_ev_section(rules) -> tuple[dict, bytes]:
    from fivethousand_rl.envs.solver import STEP, turn_ev_table

    table = turn_ev_table(rules)
    data = np.ascontiguousarray(table.value, dtype="<f8").tobytes()
    return {
        "file": TURN_EV_FILE,
        "dtype": "float64",
        "byte_order": "little",
        "shape": list(table.value.shape),
        "cap": table.cap,
        "step": STEP,
        "index": f"value[entered][min(total, {table.cap}) // {STEP}][dice] at flat "
        f"offset (entered * {table.value.shape[1]} + min(total, {table.cap}) // {STEP}) "
        f"* {table.value.shape[2]} + dice",
        "entered": "1 if the mover's banked score is above 0, else 0",
        "total": "the turn total after the hold (a multiple of 50)",
        "dice": "the dice the next roll would have, 1..5 (index 0 unused)",
        "meaning": "expected points the rest of the turn banks under points-maximizing play, "
        "before rolling `dice` dice with `total` held "
        "(fivethousand_rl.envs.solver.solve_turn_ev); it "
        "ignores the scores",
        "used_by": "observation action column TURN_EV of a rolling action",
        "sha256": sha256(data),
    }, data


def _hot_holds() -> dict[int, tuple[int, ...]]:
    """Points -> five dice that all score together (their best hold holds them all):
    holds after which five dice are rolled again (hot dice, R6)."""
    from fivethousand_rl.envs.rules import NUM_DICE, ROLL_INFO

    out: dict[int, tuple[int, ...]] = {}
    for dice, info in sorted(ROLL_INFO.items()):
        if len(dice) == NUM_DICE and info.best is not None and len(info.best.dice) == NUM_DICE:
            out.setdefault(info.best.points, dice)
    return out


def hot_holds_making(total: int) -> list[tuple[int, ...]] | None:
    """This turn's holds (five dice each) that make the turn total `total` with five
    dice to roll next, or None where they cannot (50 to 250): the `held` of a built
    state, which the engine checks against its turn total (R6)."""
    holds = _hot_holds()
    last = {0: 0}  # a total -> the points of the last hold of one way to make it
    for t in range(50, total + 1, 50):
        ways = [v for v in holds if t - v in last]
        if ways:
            last[t] = max(ways)
    if total not in last:
        return None
    out = []
    while total:
        out.append(holds[last[total]])
        total -= last[total]
    return out[::-1]


def first_bank(rules) -> int:
    """The smallest turn total a player with 0 points may bank: the entry, made bankable
    (R8, V1, V4)."""
    from fivethousand_rl.envs.rules import can_bank

    return next(t for t in range(rules.entry, rules.target + 1, 50) if can_bank(0, t, rules))


def edge_positions(n_players: int, rules) -> list[tuple[str, object]]:
    """Decisions built to take the observation to the edges that whole games seldom or
    never reach (docs/export.md, "The test vectors"): (what it shows, GameState), the
    mover turning round the table. A position the rules rule out is left out (no gift
    under overshoot 'lost', no bump without bump)."""
    from fivethousand_rl.envs.game import DECIDE, GameState, state_problem
    from fivethousand_rl.envs.solver import turn_ev_table

    target, step, n = rules.target, rules.score_step, n_players
    first, top = first_bank(rules), target - step  # top: the highest score short of winning
    gift = target - first  # banked by `top` onto a seat at `first`: an overshoot gift
    wanted = [  # (what it shows, banked scores from the mover on, turn total, roll)
        (f"five {f}s: roll_one_hot, face_counts 1, hot dice", [0] + [top] * (n - 1), 0, (f,) * 5)
        for f in range(1, 7)
    ]
    # (what, banked scores from the mover on, the turn total after holding the roll's
    # only scoring die: a 1 after the turn total less 100, or a 5 after less 50)
    after = [
        ("turn total over twice the target: caps, clips, points lost", [first], 2 * target + 200),
        ("turn total over the turn-EV table's cap", [first], turn_ev_table(rules).cap + 100),
        ("a bank that wins: need 0", [target - 100], 100),
        ("need 1000 after the hold", [target - 1100], 100),
        ("a first bank of exactly the entry", [0], first),
    ]
    if rules.bump:
        after.append(("a bank that bumps", [first, first + 100], 100))
    if rules.overshoot == "gift":
        after.append(("an overshoot gift that wins", [top, first], gift))
        after.append(("an overshoot gift", [top, first], gift - 100))
    for what, seen, total in after:
        made = [(total - 100, (1, 2, 3, 4, 6)), (total - 50, (2, 3, 3, 4, 5))]
        before, roll = next(
            ((t, r) for t, r in made if t >= 0 and hot_holds_making(t) is not None), made[0]
        )
        wanted.append((what, seen, before, roll))
    out = []
    for what, seen, total, roll in wanted:
        mover = len(out) % n
        scores = [0] * n
        for k, score in enumerate(seen[:n]):
            scores[(mover + k) % n] = score
        held = hot_holds_making(total) if total >= 0 else None
        if held is None:
            continue
        state = GameState(
            scores=scores, current=mover, turn_total=total, roll=roll, held=held, phase=DECIDE
        )
        if not state_problem(state, rules):
            out.append((what, state))
    return out


def observation_edges(spec) -> dict[str, dict]:
    """The edge values each observation field takes somewhere under the spec's rules,
    as (label -> test of the field's values, one row per vector): a slice by its name,
    an action column as "actions.NAME" over the legal rows (all 42 columns each). What
    the test vectors' coverage counts (``vector_coverage``)."""
    from fivethousand_rl.envs.encoding import Col

    rules = spec.rules
    target, step = rules.target, rules.score_step

    def equals(value: float):
        return lambda x: (x == np.float32(value)).any(axis=1)

    def column(j: int, value: float = 1.0):
        return lambda x: x[:, j] == np.float32(value)

    def binary(j: int) -> dict:
        return {"0": column(j, 0.0), "1": column(j)}

    edges = {
        "scores": {"0": equals(0), f"{target - step}/{target}": equals((target - step) / target)},
        "entered": {"0": equals(0), "1": equals(1)},
        "to_move": {"1 at the observer (the mover)": column(0)},
        "turn_total": {"0": equals(0), "2 (capped)": equals(2)},
        "need_after_bank": {"1": equals(1), "-1 (clipped)": equals(-1)},
        "ends_in_50": {"0": equals(0)} | ({"1": equals(1)} if rules.fifty_rule else {}),
        "dice_in_roll": {f"{d}/5": equals(d / 5) for d in range(1, 6)},
        "some_action_banks": {"0": equals(0), "1": equals(1)},
        "roll_one_hot": {
            f"die {i + 1} shows {face}": column(6 * i + face - 1)
            for i in range(5)
            for face in range(1, 7)
        },
        "face_counts": {f"five {face}s": column(face - 1) for face in range(1, 7)},
    }
    if spec.encoding == "compact":
        return edges
    bins = target // step + 1
    seats = range(spec.n_players)
    edges["score_one_hot"] = {
        "score 0": lambda x: x[:, [k * bins for k in seats]].any(axis=1),
        f"score {target - step}": lambda x: x[:, [k * bins + bins - 2 for k in seats]].any(axis=1),
    }
    first = first_bank(rules)
    points = max(_hot_holds()) / 1000
    banks = lambda x: x[:, Col.BANKS] == 1  # noqa: E731
    rows = {
        "LEGAL": {"1": column(Col.LEGAL)},
        "BANKS": binary(Col.BANKS),
        "TURN_TOTAL": {"above 2 (no cap)": lambda x: x[:, Col.TURN_TOTAL] > 2},
        "DICE_LEFT_AT": {
            f"{d} dice left" + (" (hot dice)" if d == 5 else ""): column(Col.DICE_LEFT_AT + d - 1)
            for d in range(1, 6)
        },
        "POINTS": {f"{points:g} (five 1s)": column(Col.POINTS, points)},
        "NEED": {"-1 (clipped)": column(Col.NEED, -1)},
        "NEED_AT": {f"need {50 * k}": column(Col.NEED_AT + k) for k in range(21)},
        "NEED_OVER_1000": binary(Col.NEED_OVER_1000),
        "OVERSHOOT": binary(Col.OVERSHOOT),
        "MAY_BANK": binary(Col.MAY_BANK)
        | {  # a first bank: the score after it is the turn total
            f"1 banking exactly {first} to enter": lambda x: (
                banks(x)
                & (x[:, Col.TURN_TOTAL] == np.float32(first / target))
                & (x[:, Col.OWN_SCORE_AFTER] == x[:, Col.TURN_TOTAL])
            )
        },
        "WINS": binary(Col.WINS),
        "BUMPS": binary(Col.BUMPS) if rules.bump else {"0": column(Col.BUMPS, 0.0)},
        "GIFTS": binary(Col.GIFTS),
        "GIFT_WINS": binary(Col.GIFT_WINS),
        "POINTS_LOST": binary(Col.POINTS_LOST),
        "OWN_SCORE_AFTER": {
            "0": column(Col.OWN_SCORE_AFTER, 0.0),
            "1 (a win)": column(Col.OWN_SCORE_AFTER),
        },
        "TURN_EV": {
            "5 (capped), rolling": lambda x: ~banks(x) & (x[:, Col.TURN_EV] == 5),
            "5 (capped), banking": lambda x: banks(x) & (x[:, Col.TURN_EV] == 5),
        },
        "ENDS_IN_50": binary(Col.ENDS_IN_50)
        if rules.fifty_rule
        else {"0": column(Col.ENDS_IN_50, 0.0)},
    }
    if rules.overshoot != "gift":
        rows["GIFTS"], rows["GIFT_WINS"] = (
            {"0": column(Col.GIFTS, 0.0)},
            {"0": column(Col.GIFT_WINS, 0.0)},
        )
    return edges | {f"actions.{name}": tests for name, tests in rows.items()}


def vector_coverage(spec, observations: np.ndarray) -> dict:
    """Per observation field (``observation_edges``), the least and largest value the
    `observations` (one per row) give it and how many vectors (action columns: legal
    rows) reach each of its edges: the coverage table of the test vectors."""
    from fivethousand_rl.envs.encoding import ACTION_FEATURES, Col

    rows = np.zeros((0, ACTION_FEATURES), np.float32)
    if spec.encoding == "rich":
        rows = observations[:, spec.slices["actions"]].reshape(-1, ACTION_FEATURES)
        rows = rows[rows[:, Col.LEGAL] == 1]
    out = {}
    for name, tests in observation_edges(spec).items():
        if name.startswith("actions."):
            values, at = rows, Col[name.removeprefix("actions.")]
            seen = rows[:, at : at + COLUMN_WIDTHS.get(at.name, 1)]
        else:
            values = seen = observations[:, spec.slices[name]]
        out[name] = {
            "min": float(seen.min()),
            "max": float(seen.max()),
            "edges": {label: int(test(values).sum()) for label, test in tests.items()},
        }
    return out


def play_test_vectors(bot: ExportedBot, count: int, seed: int) -> dict:
    """Decisions built to reach the observation's edges (``edge_positions``), then at
    least `count` decisions of real games (whole games) between the bot and the
    opponents of its table size, every decision of either seat: the state, the
    observation of the player to move, its legal actions and the bot's action there;
    with the coverage table of their observations (``vector_coverage``)."""
    from fivethousand_rl.envs.game import DECIDE, Game

    spec = bot.spec
    names = VECTOR_OPPONENTS.get(spec.n_players, OTHER_OPPONENTS)
    opponents = [make_policy(name) for name in names]
    rng = np.random.default_rng(seed)
    games, vectors, observations = [], [], []

    def record(game: Game, source: dict) -> int:
        """The vector of the pending decision (`source`: where it comes from); the bot's action."""
        seat = game.state.current
        obs = spec.encode(game, seat)
        mask = game.action_mask()
        logits = bot.session.run(None, {bot.input_name: obs[None]})[0][0]
        action = masked_choice(logits, mask)
        legal = np.sort(logits[mask])[::-1]
        nonzero = np.flatnonzero(obs)
        observations.append(obs)
        vectors.append(
            {
                **source,
                "seat": seat,
                "state": game.state.to_dict(),
                "obs": {"index": nonzero.tolist(), "value": obs[nonzero].astype(float).tolist()},
                "obs_sha256": sha256(obs.astype("<f4").tobytes()),
                "legal": np.flatnonzero(mask).tolist(),
                "action": action,
                "margin": float(legal[0] - legal[1]) if len(legal) > 1 else None,
            }
        )
        return action

    for what, state in edge_positions(spec.n_players, spec.rules):
        game = Game(spec.n_players, spec.rules)
        game.state = state
        record(game, {"game": None, "built": what})
    built = len(vectors)
    while len(vectors) - built < count:
        g = len(games)
        opponent, bot_seat = g % len(names), g % spec.n_players
        game = Game(spec.n_players, spec.rules, seed=np.random.default_rng([seed, g]))
        games.append({"opponent": names[opponent], "bot_seat": bot_seat, "dice_seed": [seed, g]})
        while not game.over and game.state.turns < 1000:
            if game.state.phase != DECIDE:
                game.roll()
                continue
            action = record(game, {"game": g})
            if game.state.current != bot_seat:
                action = opponents[opponent].act(game, rng)
            game.act(action)
    return {
        "count": len(vectors),
        "built": built,
        "seed": seed,
        "games": games,
        "coverage": {
            "meaning": "per observation field (an action column as actions.NAME, over the "
            "legal rows): its min and max over the vectors, and how many vectors (legal "
            "rows) reach each of its edge values",
            "fields": vector_coverage(spec, np.array(observations)),
        },
        "fields": {
            "game": "the game of `games` the decision comes from; null for a built one",
            "built": "a built decision only: the edges of the observation it reaches",
            "state": "the game state before the decision "
            "(fivethousand_rl.envs.game.GameState.to_dict): "
            "banked scores by seat, the seat to move, the turn total before this roll, "
            "dice_left (the roll's size), the sorted roll, this turn's earlier holds, phase "
            "('decide'), winner (null), turns completed",
            "seat": "the observer: the seat to move",
            "obs": "the observation's non-zero entries: indices, and values (exact float32 "
            "values written as decimals)",
            "obs_sha256": "SHA-256 of the whole observation as little-endian float32",
            "legal": "the legal actions, ascending (the mask's true entries)",
            "action": "the bot's action (the game went on with the seated player's)",
            "margin": "the best legal logit minus the second (null: one legal action): how "
            "close the choice was",
        },
        "vectors": vectors,
    }


def check_bundle_paths(checkpoint: Path, out: Path, name: str) -> None:
    """CheckpointError (BundleRefused for a planner) or ValueError, in one line, unless
    `checkpoint` is a single network from observation to action and `out` a folder a
    bundle may be written to: checked before any work."""
    planner = checkpoint.suffix == ".npz" and npz_kind(checkpoint) == KIND
    if checkpoint.suffix == ".onnx":  # an exported bot: bundled as it is, without torch
        planner = read_metadata(checkpoint)["kind"] == "planner"
    if planner:
        raise BundleRefused(
            f"{name} is a planner: it plans each turn in Python around its value network, "
            "so it is not one network from observation to action, which a bundle holds "
            "(export its value network with -o FILE.onnx)"
        )
    if checkpoint.suffix not in (".zip", ".onnx"):
        check_paths(checkpoint, out / MODEL_FILE)  # the words of the .onnx export
    if os.path.lexists(out) and not out.is_dir():
        raise ValueError(f"the bundle folder {out} is a file")
    if out.is_dir() and any(out.iterdir()) and not (out / BUNDLE_FILE).is_file():
        raise ValueError(f"the bundle folder {out} is not empty and holds no bundle")
    if not os.path.lexists(out.parent) and not os.path.lexists(out.parent.parent):
        raise ValueError(f"the bundle folder {out}: folder {out.parent.parent} does not exist")
    check_output_folder(out.parent, "the bundle folder")


def export_bundle(
    checkpoint: str | Path,
    out: str | Path,
    name: str | None = None,
    vectors: int = DEFAULT_VECTORS,
    seed: int = 0,
    runtime: bool = False,
    opset: int = ONNX_OPSET,
) -> dict:
    """Write the bundle folder `out` for the single-network agent `checkpoint` (named
    `name`: a shipped agent's name, else the checkpoint's file name) and return its
    bundle.json; its graph of ONNX `opset`. `runtime`: only what playing needs
    (RUNTIME_FILES; no graph, no test vectors). It is written beside `out` and takes its
    place only once whole (an earlier bundle there is replaced)."""
    checkpoint, out = Path(checkpoint), Path(out)
    name = name or checkpoint.name
    check_opset(opset)
    check_bundle_paths(checkpoint, out, name)
    if vectors < 1:
        raise ValueError(f"the test vectors must be at least 1, got {vectors}")
    tmp = out.with_name(f".{out.name}.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        if checkpoint.suffix == ".onnx":  # exported already: its graph as it is
            meta = read_metadata(checkpoint)
            shutil.copyfile(checkpoint, tmp / MODEL_FILE)
            without_local_metadata(tmp / MODEL_FILE)  # one exported before they were dropped
        else:
            meta = export(checkpoint, tmp / MODEL_FILE, opset)
        meta["provenance"] = made = _relative(meta.get("provenance") or {})  # model.json's too
        metadata_path(tmp / MODEL_FILE).write_text(json.dumps(meta, indent=2))
        bot = ExportedBot(tmp / MODEL_FILE)
        network, weights = plain_network(tmp / MODEL_FILE)
        table, table_bytes = turn_ev_section(bot.spec.rules)
        (tmp / WEIGHTS_FILE).write_bytes(weights)
        (tmp / TURN_EV_FILE).write_bytes(table_bytes)
        if runtime:  # the graph was needed for its plain layout only
            for made_here in (tmp / MODEL_FILE, metadata_path(tmp / MODEL_FILE)):
                made_here.unlink()
        else:
            cases = play_test_vectors(bot, vectors, seed)
            (tmp / VECTORS_FILE).write_text(json.dumps(cases, separators=(",", ":")))
        messages = page_messages()
        (tmp / MESSAGES_FILE).write_text(json.dumps(messages, ensure_ascii=False))
        files = {  # every file written so far: all but bundle.json
            f.name: {"sha256": sha256(f.read_bytes()), "bytes": f.stat().st_size}
            for f in sorted(tmp.iterdir())
        }
        bundle = {
            "format": BUNDLE_FORMAT,
            "format_version": BUNDLE_VERSION,
            "name": name,
            "license": LICENSE,
            "players": bot.spec.n_players,
            "rules": rules_section(bot.spec.rules),
            "observation": observation_layout(bot.spec),
            "actions": actions_section(),
            "contents": "runtime" if runtime else "full",
            "runtime_files": list(RUNTIME_FILES),
            "network": {
                "file": None if runtime else MODEL_FILE,
                "input": network["input"],
                "input_shape": ["batch", bot.spec.size],
                "output": network["output"],
                "output_shape": ["batch", 64],
                "opset": network["opset"],
                "plain": {
                    "weights": WEIGHTS_FILE,
                    "byte_order": "little",
                    "semantics": "ONNX operators, batch axis first; float tensors at "
                    "byte offset `offset` of the weights file, `count` numbers of the "
                    "tensor's `dtype` in C order: float32, or float16 where each of its "
                    "numbers is a float16 exactly (half the bytes), read as the float32 it "
                    "equals; every tensor is float32 to the graph",
                    "nodes": network["nodes"],
                    "tensors": network["tensors"],
                },
            },
            "tables": {"turn_ev": table},
            "test_vectors": None
            if runtime
            else {"file": VECTORS_FILE, "count": cases["count"], "seed": seed},
            "messages": {"file": MESSAGES_FILE, "languages": list(messages["languages"])},
            "files": files,
            "provenance": {
                "agent": name,
                "kind": meta["kind"],
                "checkpoint_sha256": made.get("checkpoint_sha256"),
                "toolkit": "fivethousand-rl",
                "toolkit_version": toolkit_version(),
                "git_commit": git_commit(),
                "exported_at": made.get("exported_at"),
                "bundled_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                "versions": {k: made[k] for k in ("torch", "sb3_contrib") if k in made}
                | {k: _version(k) for k in ("onnx", "onnxruntime", "numpy")},
                "training_config": made.get("training_config", {}),
            },
        }
        (tmp / BUNDLE_FILE).write_text(json.dumps(bundle, indent=1))
        _put_in_place(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return bundle


def _version(module: str) -> str | None:
    try:
        return __import__(module).__version__
    except ImportError:
        return None


def _put_in_place(tmp: Path, out: Path) -> None:
    """Move the finished folder `tmp` to `out`, replacing an earlier bundle there."""
    old = out.with_name(f".{out.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    swap_in(tmp, out, old)
    shutil.rmtree(old, ignore_errors=True)


def swap_in(built: Path, target: Path, aside: Path) -> None:
    """Move the complete folder `built` to `target`; a folder already there is first
    moved to `aside` (same file system: renames, no copies) and put back on failure."""
    replaced = target.exists()
    if replaced:
        target.rename(aside)
    try:
        built.rename(target)
    except OSError:
        if replaced:
            aside.rename(target)
        raise
