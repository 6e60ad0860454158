"""Exported bots: an ONNX model plus a metadata JSON, played with onnxruntime and numpy
alone (no torch). Two kinds, as the metadata's "kind" says (``load_exported``):

- "ppo" (``ExportedBot``): the graph maps a batch of observations to the 64 action
  logits of a trained actor; the legal-action mask is applied here, as MaskablePPO
  applies it (``masked_choices``), for many games at once too (``act_batch``).
- "planner": the graph is a value network (``fivethousand_rl.agents.value_net``): a batch of
  turn-start features to 8 logits, one per seat; the softmax over the seats present is
  taken here, in float64, as ``ValueNet`` does, and a ``PlannerBot`` plans each turn
  exactly against it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from fivethousand_rl.agents.base import MAX_MODEL_BYTES, check_finite, read_capped, read_text_capped
from fivethousand_rl.agents.neural import OBS_SPEC_ATTRIBUTE, TrainedModel, first_line
from fivethousand_rl.agents.planner import PlannerBot
from fivethousand_rl.agents.value_net import FeatureSpec, ValueNet, planner_for
from fivethousand_rl.envs.encoding import ObsSpec

FORMAT = "fivethousand-rl exported bot"
# 2: the game and observation are one "obs_spec" (envs.encoding.ObsSpec); 3: a "kind",
# "ppo" or "planner" (a version 2 file is a PPO bot, and still reads as one).
FORMAT_VERSION = 3
READ_VERSIONS = (2, 3)
KINDS = ("ppo", "planner")
VALUE_NET_ATTRIBUTE = "value_net"  # a planner's metadata: its network's FeatureSpec
ACTION_ENCODING_VERSION = 1  # fivethousand_rl.envs.rules: bits 0-4 hold sorted dice, bit 5 banks
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
        meta = json.loads(read_text_capped(path))
    except json.JSONDecodeError as e:
        raise ExportError(f"metadata {path} is not valid JSON: {e}") from None
    except (OSError, ValueError) as e:  # not a plain file, too big, not UTF-8
        raise ExportError(f"cannot read metadata {path}: {e}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ExportError(f"{path} is not the metadata of an exported 5000 bot")
    version = meta.get("format_version")
    if version not in READ_VERSIONS:
        raise ExportError(
            f"{onnx_path} uses format_version {version!r}, this version of the toolkit "
            f"reads {' or '.join(map(str, READ_VERSIONS))}: export it again from its checkpoint"
        )
    if version == 2:
        meta = {**meta, "kind": "ppo"}  # written before there were exported planners
    if meta.get("kind") not in KINDS:
        raise ExportError(f"{onnx_path}: unknown kind {meta.get('kind')!r}, not {KINDS}")
    if meta["kind"] == "ppo" and meta.get("action_encoding_version") != ACTION_ENCODING_VERSION:
        raise ExportError(
            f"{onnx_path} uses action_encoding_version {meta.get('action_encoding_version')!r}, "
            f"this version of the toolkit reads {ACTION_ENCODING_VERSION}: export it again "
            "from its checkpoint"
        )
    return meta


def _varint(buf: memoryview, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[i]
        value |= (byte & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if byte < 0x80:
            return value, i


def _fields(buf: memoryview) -> Iterator[tuple[int, int, int | memoryview]]:
    """The (field number, wire type, value) of a protobuf message, as its wire format
    writes them: a varint's value, or the bytes of the others."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        wire = key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire in (1, 5):
            value, i = buf[i : i + (8 if wire == 1 else 4)], i + (8 if wire == 1 else 4)
        elif wire == 2:
            size, i = _varint(buf, i)
            value, i = buf[i : i + size], i + size
        else:
            raise ValueError(f"it is not an ONNX model (a protobuf field of wire type {wire})")
        if i > len(buf):
            raise ValueError("it is not an ONNX model (a protobuf message is cut short)")
        yield key >> 3, wire, value


# onnx.proto's field numbers: ModelProto.graph; GraphProto.node, .initializer and
# .sparse_initializer; NodeProto.attribute; AttributeProto.t, .g, .graphs, .tensors;
# SparseTensorProto.values.
MODEL_GRAPH, GRAPH_NODE, GRAPH_INITIALIZER, GRAPH_SPARSE_INITIALIZER = 7, 1, 5, 15
NODE_ATTRIBUTE, ATTRIBUTE_TENSOR, ATTRIBUTE_GRAPH, ATTRIBUTE_GRAPHS = 5, 5, 6, 10
ATTRIBUTE_TENSORS, SPARSE_VALUES = 11, 1
# TensorProto's fields, and its floating types by data_type: (numpy type of raw_data, of
# the repeated field that holds the values otherwise, that field's number).
TENSOR_DATA_TYPE, TENSOR_NAME, TENSOR_RAW, TENSOR_LOCATION = 2, 8, 9, 14
FLOAT_TENSORS = {1: ("<f4", "<f4", 4), 10: ("<f2", "int32", 5), 11: ("<f8", "<f8", 10)}
BFLOAT16 = 16


def _graph_tensors(graph: memoryview) -> Iterator[memoryview]:
    """Every TensorProto a graph holds: its initializers, sparse ones included, and its
    nodes' constant attributes (Constant nodes), with those of its subgraphs."""
    for field, _, value in _fields(graph):
        if field == GRAPH_INITIALIZER:
            yield value
        elif field == GRAPH_SPARSE_INITIALIZER:
            yield from (v for f, _, v in _fields(value) if f == SPARSE_VALUES)
        elif field == GRAPH_NODE:
            for attribute in (v for f, _, v in _fields(value) if f == NODE_ATTRIBUTE):
                for f, _, v in _fields(attribute):
                    if f in (ATTRIBUTE_TENSOR, ATTRIBUTE_TENSORS):
                        yield v
                    elif f in (ATTRIBUTE_GRAPH, ATTRIBUTE_GRAPHS):
                        yield from _graph_tensors(v)


def _tensor_values(tensor: memoryview) -> tuple[str, np.ndarray | None]:
    """The name of a TensorProto and its numbers as floats (None for a tensor of no
    floating type, whose numbers are all finite)."""
    fields = list(_fields(tensor))
    single = {f: v for f, _, v in fields}
    name = bytes(single.get(TENSOR_NAME, b"")).decode("utf-8", "replace")[:100]
    if single.get(TENSOR_LOCATION) == 1:  # EXTERNAL: onnxruntime would read another file
        raise ValueError(f"its tensor {name!r} is stored in another file")
    data_type = single.get(TENSOR_DATA_TYPE)
    if TENSOR_RAW in single and data_type == BFLOAT16:  # the high half of a float32
        bits = np.frombuffer(single[TENSOR_RAW], "<u2").astype(np.uint32) << 16
        return name, bits.view(np.float32)
    if data_type not in FLOAT_TENSORS:
        return name, None
    raw_type, listed_type, listed = FLOAT_TENSORS[data_type]
    if TENSOR_RAW in single:
        return name, np.frombuffer(single[TENSOR_RAW], raw_type)
    parts = []  # the repeated field, packed (wire type 2) or one number per field
    for f, wire, v in fields:
        if f != listed:
            continue
        if listed_type == "int32":  # float16 bit patterns, as varints
            words = [v] if wire == 0 else _varints(v)
            parts.append(np.array(words, np.uint32).astype(np.uint16).view(np.float16))
        else:
            parts.append(np.frombuffer(v, listed_type))
    return name, np.concatenate(parts) if parts else None


def _varints(buf: memoryview) -> list[int]:
    values, i = [], 0
    while i < len(buf):
        value, i = _varint(buf, i)
        values.append(value)
    return values


def check_onnx_weights(path: Path) -> None:
    """ValueError (one line) if a tensor of the ONNX model at `path` (an initializer or a
    constant, in any graph) holds a NaN or an infinity (``check_finite``), or lives in
    another file. The protobuf is read here, field by field, as onnxruntime reads it:
    the light install has no ``onnx`` package, and running the graph once would not
    see every weight (a NaN behind a Relu, or in a row no probe reaches)."""
    try:
        model = memoryview(read_capped(path, MAX_MODEL_BYTES))
        graphs = [v for f, wire, v in _fields(model) if f == MODEL_GRAPH and wire == 2]
        tensors = [t for graph in graphs for t in _graph_tensors(graph)]
    except IndexError:
        raise ValueError("it is not an ONNX model (a protobuf message is cut short)") from None
    for tensor in tensors:
        name, values = _tensor_values(tensor)
        if values is not None:
            check_finite(f"weights ({name})", values)


def onnx_session(path: Path, threads: int = 1):
    """An onnxruntime session on the CPU, its weights checked first (``check_onnx_weights``),
    or ExportError (one line)."""
    try:
        check_onnx_weights(path)
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as e:
        raise ExportError(f"could not load exported bot {path}: {first_line(e)}") from None


class PicklesSession:
    """For the standard ``pickle`` (onnxruntime's sessions do not pickle): a `session`
    made by ``onnx_session`` is saved as the file it was read from (onnxruntime keeps
    its path), that file's SHA-256 and its thread count, and read back from the same
    file, or ExportError (one line) if the file is gone or has changed since."""

    def __getstate__(self) -> dict:
        path = Path(self.session._model_path).resolve()
        threads = self.session.get_session_options().intra_op_num_threads
        saved = {"path": str(path), "sha256": sha256(path.read_bytes()), "threads": threads}
        return {**self.__dict__, "session": saved}

    def __setstate__(self, state: dict) -> None:
        saved = state["session"]
        path = Path(saved["path"])
        if not path.is_file() or sha256(path.read_bytes()) != saved["sha256"]:
            why = "changed since it was pickled" if path.is_file() else "is gone"
            raise ExportError(f"cannot unpickle the exported bot: {path} {why}")
        self.__dict__.update(state, session=onnx_session(path, saved["threads"]))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load_exported(path: str | Path, threads: int = 1) -> ExportedBot | PlannerBot:
    """An exported bot of either kind, as its metadata says."""
    if read_metadata(path)["kind"] == "planner":
        return exported_planner(path, threads)
    return ExportedBot(path, threads)


def masked_choices(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per row of `logits` and `mask` (m, 64), the most probable legal action (the first
    of equals), as MaskablePPO's mode: a float32 softmax with illegal logits masked.
    ExportError if a legal action's logit is not finite."""
    if not np.isfinite(logits[np.asarray(mask, dtype=bool)]).all():
        # NaN would argmax to action 0, legal or not: say what is wrong instead
        raise ExportError("the network's outputs are not finite numbers (NaN or infinite)")
    masked = np.where(mask, logits, np.float32(MASKED_LOGIT)).astype(np.float32)
    probs = np.exp(masked - masked.max(axis=-1, keepdims=True))
    return np.argmax(probs / probs.sum(axis=-1, keepdims=True), axis=-1)


def masked_choice(logits: np.ndarray, mask: np.ndarray) -> int:
    """``masked_choices`` for one decision (64 logits, its mask)."""
    return int(masked_choices(logits[None], mask[None])[0])


class ExportedBot(PicklesSession, TrainedModel):
    """Plays an exported .onnx bot; its .json metadata must sit beside it, with the
    observation spec it reads: it plays only the game of that spec."""

    error = ExportError

    def __init__(self, path: str | Path, threads: int = 1) -> None:
        self.path = Path(path)
        self.meta = read_metadata(self.path)
        if self.meta["kind"] != "ppo":
            raise ExportError(f"{self.path} is an exported {self.meta['kind']}, not a PPO bot")
        try:
            self.spec = ObsSpec.from_dict(self.meta.get(OBS_SPEC_ATTRIBUTE))
        except ValueError as e:
            raise ExportError(f"{self.path}: its metadata's {OBS_SPEC_ATTRIBUTE}: {e}") from None
        self.session = onnx_session(self.path, threads)
        graph_input = self.session.get_inputs()[0]
        self.input_name = graph_input.name
        if graph_input.shape[-1] != self.spec.size:
            raise ExportError(
                f"{self.path}: the graph takes {graph_input.shape[-1]} inputs, its spec "
                f"says {self.spec.size}"
            )
        self.name = self.path.stem  # bots/ppo-2p.onnx -> "ppo-2p", as the file is named now

    def choose(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The graph's logits, masked as MaskablePPO masks them: the most probable action
        of each row (``act`` and ``act_batch`` are ``TrainedModel``'s; `rng` is unused),
        one run of the graph for the whole batch (an action-scoring graph scores the
        legal actions only, as the checkpoint's torch network does)."""
        return masked_choices(self.session.run(None, {self.input_name: obs})[0], mask)


class OnnxValueNet(PicklesSession):
    """A value network run by onnxruntime: the ``ValueFn`` of an exported planner,
    computed as ``fivethousand_rl.agents.value_net.ValueNet`` computes it (features in float32, the
    graph's logits, then a float64 softmax over the seats present)."""

    def __init__(self, session, spec) -> None:  # spec: fivethousand_rl.agents.value_net.FeatureSpec
        self.session, self.spec = session, spec
        self.input_name = session.get_inputs()[0].name

    def logits(self, x: np.ndarray) -> np.ndarray:
        return self.session.run(None, {self.input_name: x})[0]

    __call__ = ValueNet.__call__  # the features, this graph's logits, the softmax


def exported_planner(path: str | Path, threads: int = 1) -> PlannerBot:
    """The planner of an exported value network: it plays the tables and rules of its
    network's feature spec only, named as the file is (bots/planner-2p.onnx ->
    "planner-2p")."""
    path = Path(path)
    meta = read_metadata(path)
    try:
        spec = FeatureSpec.from_dict(meta[VALUE_NET_ATTRIBUTE]["spec"])
    except (KeyError, TypeError, ValueError) as e:
        why = first_line(e)
        raise ExportError(f"{path}: its metadata's {VALUE_NET_ATTRIBUTE}: {why}") from None
    session = onnx_session(path, threads)
    inputs, outputs = session.get_inputs()[0].shape[-1], session.get_outputs()[0].shape[-1]
    if inputs != spec.size or outputs != spec.max_players:
        raise ExportError(
            f"{path}: the graph maps {inputs} inputs to {outputs} outputs, its spec "
            f"says {spec.size} to {spec.max_players}"
        )
    return planner_for(OnnxValueNet(session, spec), spec, path.stem)
