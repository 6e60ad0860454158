"""Trained SB3 models (MaskablePPO checkpoints, ``.zip``, and self-play snapshots,
``.npz``, run by ``NumpyScorer``, the network's actor in numpy) behind the Policy
interface. Nothing here imports torch until a checkpoint (.zip) is loaded.

A trained model carries the observation spec it reads (``fivethousand_rl.envs.encoding.ObsSpec``:
encoding, version, players, rules and named slices), saved with it by training
(``attach_obs_spec``), and ``check_game`` refuses in one line any game whose
observations are not the ones it reads. A MaskablePPO checkpoint saved by a user's own
loop on ``FiveThousand-v0`` carries none: its spec is read from the observation space
saved with it (``infer_obs_spec``: the encoding and the player count, under the default
rules, which an observation space cannot show), and anything else is refused in one
line naming the fix. A model of this project's own network (``agents.networks``) saved
before models carried their spec is refused until ``migrate_checkpoint`` gives it one:
it may read an older version of the rich observation (see checkpoints/README.md).

Trust: SB3 saves part of a checkpoint's settings (``.zip``) with cloudpickle, which
would run any code the file holds; ``SB3Policy`` loads one without unpickling any of
them (``load_sb3``: the classes, schedules and spaces given known values, a
``policy_kwargs`` read when it holds only plain values and the classes SB3 users put
there, the weights read with torch's ``weights_only``), and refuses in one line a file
holding a pickle it cannot replace safely, naming the opt-in for a file its user trusts
(``trusted=True``, ``FIVETHOUSAND_TRUSTED_MODELS``: SB3's own loader). A snapshot
``.npz`` is read as arrays and JSON, without pickle (``allow_pickle=False``), as are
value nets (``agents.value_net``) and exported ``.onnx`` bots.

Every model here, and the exported bots (``fivethousand_rl.agents.exported``), also decides for many
games at once (``act_batch``, the batched side of ``envs.batch``): the observations of
the players to move written from the arrays (``envs.vector_env.observe_batch``, the same
bits as ``ObsSpec.encode``), one forward pass per chunk of ``BATCH_ROWS`` games
(``batch_actions``), and the same choice per row as ``act``, which is the same code run
on a batch of one.
"""

from __future__ import annotations

import base64
import importlib
import io
import json
import pickle
import re
import zipfile
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from fivethousand_rl.agents.base import (
    MAX_MODEL_BYTES,
    atomic_write,
    check_finite,
    check_unpacked,
    read_capped,
)
from fivethousand_rl.envs.batch import BatchGames
from fivethousand_rl.envs.encoding import ACTION_FEATURES, ENCODINGS, OBS_LOW, ObsSpec, encode_rich
from fivethousand_rl.envs.game import MAX_PLAYERS, MIN_PLAYERS, Game
from fivethousand_rl.envs.i18n import _
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import NUM_ACTIONS, Rules
from fivethousand_rl.envs.vector_env import observe_batch

# Folders of a training run that hold models; the run's config.json is one level up.
RUN_MODEL_FOLDERS = ("best", "latest", "snapshots")
OBS_SPEC_ATTRIBUTE = "obs_spec"  # saved by SB3 with the model's other attributes
# The archive member of each kind of model file that holds its settings, spec included.
SETTINGS_MEMBER = {".zip": "data", ".npz": "config.npy"}
# Games per forward pass of act_batch: large passes, bounded memory (a rich observation
# of two players is ~2,800 float32, so a chunk's observations are ~46 MB).
BATCH_ROWS = 4096


class CheckpointError(ValueError):
    """A checkpoint that is missing, unreadable, or made for another game."""


def first_line(error: BaseException) -> str:
    """The first line of an exception's message (libraries raise long ones)."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def attach_obs_spec(model, spec: ObsSpec) -> None:
    """Make `model` (an SB3 algorithm) carry the observation spec it reads: SB3 saves
    a model's plain attributes in its zip, so every checkpoint written after this
    holds it. Its policy gets it too, for the snapshots made from it
    (``NumpyScorer.from_policy``); call this again after ``MaskablePPO.load``, which
    restores the model's attribute but builds a new policy."""
    setattr(model, OBS_SPEC_ATTRIBUTE, spec.to_dict())
    setattr(model.policy, OBS_SPEC_ATTRIBUTE, spec.to_dict())


# A model's choice for a batch of decisions: (observations (m, size) float32, legal
# masks (m, 64) bool, the caller's generator) -> one action per row.
Choose = Callable[[np.ndarray, np.ndarray, np.random.Generator], np.ndarray]


def batch_actions(
    games: BatchGames,
    idx: np.ndarray,
    spec: ObsSpec,
    choose: Choose,
    rng: np.random.Generator,
    rows: int = BATCH_ROWS,
) -> np.ndarray:
    """The batched side of a model (``act_batch``): the actions `choose` takes in the
    games `idx` of `games` (each with a decision due for ``games.current``), `rows` games
    at a time, shown the observations of the player to move (``observe_batch`` under
    `spec`: what ``spec.encode`` writes) and the legal masks. `spec` must be the games'
    own (the caller checks the model against them first)."""
    idx = np.asarray(idx, dtype=np.int64)
    actions = np.empty(idx.size, dtype=np.int64)
    for start in range(0, idx.size, rows):
        chunk = idx[start : start + rows]
        mask = games.legal_mask(chunk)
        obs = observe_batch(games, chunk, games.current[chunk], mask, spec)
        actions[start : start + chunk.size] = choose(obs, mask, rng)
    return actions


def spec_problem(spec: ObsSpec | None, n_players: int, rules: Rules) -> str:
    """Why a model reading `spec` cannot play a game of `n_players` under `rules`
    with the observations this toolkit writes, or ""."""
    if spec is None:
        return "it carries no observation spec"
    return spec.mismatch(ObsSpec(spec.encoding, n_players, rules))


# ------------------------------------------------ model archives, read with a bound
# A zip archive states each member's unpacked size: zipfile never unpacks a member past
# it, and torch's loader allocates each record of a torch file (a zip too, inside a
# checkpoint: policy.pth) at that size before inflating it. So every model archive is
# opened here, its stated sizes checked against MAX_MODEL_BYTES before anything is
# inflated, the torch files inside it too, and each member read with a hard cap.
def open_model_archive(source: str | Path | bytes, limit: int = MAX_MODEL_BYTES) -> zipfile.ZipFile:
    """The model archive `source` (a file, read with ``read_capped``, or its bytes) opened
    from memory once ``check_unpacked`` passes; ValueError (one line) otherwise, or
    zipfile.BadZipFile for what is no zip archive. Read its members with ``read_member``."""
    raw = source if isinstance(source, bytes) else read_capped(source, limit)
    archive = zipfile.ZipFile(io.BytesIO(raw))
    try:
        check_unpacked(archive, limit)
    except ValueError:
        archive.close()
        raise
    return archive


def read_member(archive: zipfile.ZipFile, name: str, limit: int = MAX_MODEL_BYTES) -> bytes:
    """The member `name` of `archive`, read with a hard cap of `limit` bytes whatever its
    stated size; a torch file (.pth) checked by ``check_torch_file`` too. ValueError
    (one line, naming the member) past either bound."""
    with archive.open(name) as member:
        raw = member.read(limit + 1)
    if len(raw) > limit:
        raise ValueError(f"its {name} unpacks to more than {limit} bytes")
    if name.endswith(".pth"):
        check_torch_file(raw, f"its {name}", limit)
    return raw


TORCH_ZIP_MAGIC = b"PK\x03\x04"  # how torch.load tells its zip format from the legacy one


def check_torch_file(raw: bytes, what: str, limit: int = MAX_MODEL_BYTES) -> None:
    """ValueError (one line, starting with `what`) if ``torch.load`` of `raw` would
    allocate more than `limit` bytes. Torch's zip format keeps each storage as a record
    (data/N) that its loader allocates at the size the zip directory states (and refuses
    unless the pickle declares that size): those stated sizes are checked, and an
    archive zipfile cannot read is refused, since torch's reader might. The legacy
    format (a storage pickled with the standard pickle) allocates what its pickle
    declares but touches only the bytes the file holds, after checking that the file
    declares the same size: at most len(raw)."""
    if not raw.startswith(TORCH_ZIP_MAGIC):
        return
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            check_unpacked(archive, limit)
    except zipfile.BadZipFile as e:
        raise ValueError(f"{what} is a damaged torch file ({first_line(e)})") from None
    except ValueError as e:
        raise ValueError(f"{what} {str(e).removeprefix('it ')}") from None


# ------------------------------------------------------------ the saved settings
def _decode(suffix: str, raw: bytes) -> dict:
    if suffix == ".zip":
        return json.loads(raw)
    return json.loads(str(np.lib.format.read_array(io.BytesIO(raw), allow_pickle=False)))


def _encode(suffix: str, settings: dict) -> bytes:
    if suffix == ".zip":
        return json.dumps(settings, indent=4).encode()  # as SB3 writes it
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.array(json.dumps(settings)))  # as np.savez
    return buffer.getvalue()


def read_settings(path: Path) -> dict:
    """The settings saved in a checkpoint (SB3's "data") or snapshot (its config),
    read without loading the network; CheckpointError (one line) if there are none."""
    member = SETTINGS_MEMBER.get(path.suffix)
    if member is None:
        raise CheckpointError(f"not a checkpoint (.zip) or snapshot (.npz): {path}")
    kind = "snapshot" if path.suffix == ".npz" else "checkpoint"
    if not path.is_file():
        raise CheckpointError(f"{kind} not found: {path}")
    if not zipfile.is_zipfile(path):
        an = "a self-play" if kind == "snapshot" else "an SB3"
        raise CheckpointError(f"not {an} {kind} (not a zip file): {path}")
    try:
        with open_model_archive(path) as archive:
            settings = _decode(path.suffix, read_member(archive, member))
    except Exception as e:  # a missing member, bad JSON, a bad array: all one answer
        raise CheckpointError(f"could not load checkpoint {path}: {first_line(e)}") from None
    if not isinstance(settings, dict):
        raise CheckpointError(f"could not load checkpoint {path}: its {member} is no object")
    return settings


def network_fits(settings: dict, spec: ObsSpec) -> bool:
    """Whether the network saved with `settings` reads observations of `spec`: an SB3
    model's input size, a snapshot's state part."""
    if "n_state" in settings:  # a snapshot (NumpyScorer config)
        return spec.encoding == "rich" and settings["n_state"] == spec.slices["actions"].start
    shape = settings.get("observation_space", {}).get("_shape")
    return shape == [spec.size]


def read_obs_spec(path: Path) -> ObsSpec:
    """The observation spec saved in a checkpoint or snapshot, read without loading
    the network (for a checkpoint saved by a user's own loop, which carries none, the
    one its observation space shows: ``infer_obs_spec``); CheckpointError (one line) if
    it has none that can be told (saying how to add one), a broken one, or one its
    network does not read."""
    settings = read_settings(path)
    saved = settings.get(OBS_SPEC_ATTRIBUTE)
    if saved is None and path.suffix == ".zip" and not _own_network(settings):
        return infer_obs_spec(path, settings)
    if saved is None:
        raise CheckpointError(
            f"{path} carries no observation spec (saved before models carried theirs): "
            "add it with fivethousand_rl.agents.neural.migrate_checkpoint, "
            "see checkpoints/README.md"
        )
    try:
        spec = ObsSpec.from_dict(saved)
    except ValueError as e:
        raise CheckpointError(f"{path}: {e}") from None
    if not network_fits(settings, spec):
        raise CheckpointError(f"{path}: its network does not read what its spec says")
    return spec


# The module of this project's own network: its checkpoints carry their spec, or were
# saved before models carried one (and may read the rich observation's version 1).
OWN_NETWORK_MODULE = "fivethousand_rl.agents.networks"
# Its name in checkpoints saved before everything moved under one namespace (1.x).
OWN_NETWORK_MODULES = (OWN_NETWORK_MODULE, "agents.networks")


def _own_network(settings: dict) -> bool:
    """Whether a checkpoint's policy is this project's network, read from the plain
    fields SB3 writes beside the pickled class (its ``__module__``), not unpickled."""
    policy_class = settings.get("policy_class")
    return isinstance(policy_class, dict) and policy_class.get("__module__") in OWN_NETWORK_MODULES


_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf"
# A Box in the repr of a gymnasium Dict space: Box(low, high, (size,), dtype).
_DICT_ENTRY = r"'{key}': Box\(({number}), ({number}), \((\d+),\), (\w+)\)"


def _bound(text: object) -> float | None:
    """The one value of an SB3-saved Box bound (numpy's repr of an array, shortened
    with '...' when long; or a scalar), None unless every entry is that value."""
    values = {float(x) for x in re.findall(_NUMBER, str(text))}
    return values.pop() if len(values) == 1 else None


def _observation_box(settings: dict) -> tuple[str, tuple | None]:
    """(what the checkpoint's observation space is, in words; (size, low, high, dtype)
    of its observation vector, or None if it has no single one), read from the plain
    fields of SB3's JSON (the shape, bounds and a Dict space's repr), never from the
    space's pickle. A Dict space is the environment's ``dict_obs``: the vector is its
    "observation" entry, beside an "action_mask"."""
    space = settings.get("observation_space")
    if not isinstance(space, dict):
        return "no observation space", None
    kind = str(space.get(":type:", ""))
    if kind.endswith(".Box'>"):
        shape = space.get("_shape")
        if not (isinstance(shape, list) and len(shape) == 1 and isinstance(shape[0], int)):
            return f"a Box of shape {shape}", None
        box = (shape[0], _bound(space.get("low")), _bound(space.get("high")), space.get("dtype"))
        return f"Box(shape ({shape[0]},))", box
    if kind.endswith(".Dict'>"):
        entries = str(space.get("spaces", ""))
        found = re.search(_DICT_ENTRY.format(key="observation", number=_NUMBER), entries)
        if found is None or "'action_mask': Box(0, 1, (64,)" not in entries:
            return f"Dict({entries[:80]})", None
        low, high, size, dtype = found.groups()
        box = (int(size), float(low), float(high), dtype)
        return f"Dict(observation: Box(shape ({size},)))", box
    return kind.removeprefix("<class '").removesuffix("'>") or "an unknown space", None


def infer_obs_spec(path: Path, settings: dict) -> ObsSpec:
    """The observation spec of a checkpoint that carries none (a model saved by a user's
    own loop on ``FiveThousand-v0``), told by its observation space: a float32 Box
    (or a ``dict_obs`` Dict's "observation") whose size and bounds are those of one
    encoding for one player count (compact: size 3N + 41, bounds [-1, 2]; rich: bounds
    [-1, 5], its size also growing with the score grid) under the default rules.

    The rules cannot be told from an observation space (the compact size never changes
    with them): the default rules are assumed, and ``check_game`` refuses any other
    game, saying so. CheckpointError (one line, naming the fix) for a space that is no
    observation of this game under the default rules."""
    described, box = _observation_box(settings)
    fix = (
        f"if it reads this game's observations, save the spec with it: "
        f"fivethousand_rl.agents.neural.migrate_checkpoint({str(path)!r}, "
        "ObsSpec(encoding, n_players, rules))"
    )
    if box is None:
        raise CheckpointError(
            f"{path} carries no observation spec and its {described} is no "
            f"FiveThousand-v0 observation; {fix}"
        )
    size, low, high, dtype = box
    fits = [
        spec
        for spec in (
            ObsSpec(encoding, n, Rules())
            for encoding in ENCODINGS
            for n in range(MIN_PLAYERS, MAX_PLAYERS + 1)
        )
        if (spec.size, spec.high) == (size, high) and low == OBS_LOW and dtype == "float32"
    ]
    if len(fits) != 1:
        bounds = f"[{low}, {high}]" if low is not None and high is not None else "uneven bounds"
        raise CheckpointError(
            f"{path} carries no observation spec and its {described} ({dtype}, {bounds}) is "
            f"no FiveThousand-v0 observation under the default rules; {fix}"
        )
    return fits[0]


# ------------------------------------------------ loading a checkpoint without its code
# SB3 writes the settings it cannot put in JSON as cloudpickle (":serialized:"), which
# would run any code a file holds. None is ever unpickled here: the code (classes,
# schedules, spaces) is given known values, read from the plain JSON beside each pickle;
# the data (the last observations, the episode buffers) is read by an unpickler that
# builds only numpy arrays and deques; any other pickled setting refuses the file.
SERIALIZED = ":serialized:"
# Pickled settings whose value training recomputes or never reads when playing.
PLAY_VALUES = {"learning_rate": 0.0, "lr_schedule": 0.0, "clip_range": 0.2}
PLAY_VALUES |= {"clip_range_vf": None, "rollout_buffer_class": None}  # SB3 picks it by space
DATA_SETTINGS = ("_last_obs", "_last_episode_starts", "_last_original_obs")
DATA_SETTINGS += ("ep_info_buffer", "ep_success_buffer")
# The only globals a data setting's pickle may name: numpy arrays and scalars, deques,
# ordered dicts (a dict observation's arrays).
DATA_GLOBALS = {
    (module, name)
    for module in ("numpy.core.multiarray", "numpy._core.multiarray")
    for name in ("_reconstruct", "scalar")
} | {("numpy", "ndarray"), ("numpy", "dtype"), ("collections", "deque")}
DATA_GLOBALS |= {("collections", "OrderedDict")}
DATA_GLOBALS |= {(f"numpy.{core}.numeric", "_frombuffer") for core in ("core", "_core")}
POLICY_MODULES = {*OWN_NETWORK_MODULES, "sb3_contrib.common.maskable.policies"}


# Torch tensors (a run's saved generator state): rebuilt as torch's weights_only loader
# rebuilds them, their storage read by it too (torch's own hook would read it unchecked).
TENSOR_GLOBALS = {("torch._utils", "_rebuild_tensor_v2"), ("torch.storage", "_load_from_bytes")}


def _storage_from_bytes(raw: bytes):
    import torch

    check_torch_file(raw, "a tensor's storage")
    return torch.load(io.BytesIO(raw), weights_only=True)


class ForbiddenPickle(pickle.UnpicklingError):
    """A pickle that names more than data (``read_data_pickle``): nothing was called."""


# numpy's own pickle steps would build what a pickle declares: an object array (2.4 GB
# of None from 133 bytes), any shape, a dtype whose flags a BUILD forged. Here a dtype is
# a _PickledDtype until checked, and an array is checked before numpy allocates it.
class _PickledDtype:
    """What the pickle says of a dtype (``numpy.dtype(code, ...)`` and its BUILD state),
    made a numpy dtype only by ``plain_dtype``."""

    def __init__(self, code: object, *_: object) -> None:
        self.code, self.state = code, None

    def __setstate__(self, state: object) -> None:
        self.state = state


def plain_dtype(spec: object) -> np.dtype:
    """The numpy dtype a pickle's `spec` names, if it is a plain one (numbers, booleans,
    texts, raw bytes) with the state numpy itself gives it; else ForbiddenPickle."""
    if not isinstance(spec, _PickledDtype) or not isinstance(spec.code, str):
        raise ForbiddenPickle("an array without a plain dtype")
    try:
        dtype = np.dtype(spec.code)
        if isinstance(spec.state, tuple) and len(spec.state) > 1 and spec.state[1] in ("<", ">"):
            dtype = dtype.newbyteorder(spec.state[1])
    except (TypeError, ValueError):
        raise ForbiddenPickle(f"an array of dtype {spec.code[:20]!r}") from None
    plain = not dtype.hasobject and dtype.fields is None and dtype.subdtype is None
    if not plain or spec.state not in (None, dtype.__reduce__()[2]):
        raise ForbiddenPickle(f"an array of {dtype} (objects or a changed dtype)")
    return dtype


def _checked_size(shape: object, dtype: np.dtype) -> tuple[int, ...]:
    """`shape` if it is one whose array of `dtype` fits in MAX_MODEL_BYTES."""
    if not isinstance(shape, tuple) or not all(type(n) is int and n >= 0 for n in shape):
        raise ForbiddenPickle("an array with a bad shape")
    size = dtype.itemsize
    for n in shape:
        size *= n
    if size > MAX_MODEL_BYTES:
        raise ForbiddenPickle(f"an array of {size} bytes (more than {MAX_MODEL_BYTES})")
    return shape


class _PickledArray(np.ndarray):
    """An array being unpickled: its state (shape, dtype, bytes) checked before numpy
    fills it; made a plain ndarray by ``_plain_values`` once the pickle is read."""

    def __setstate__(self, state: object) -> None:
        if not isinstance(state, tuple) or len(state) != 5:
            raise ForbiddenPickle("an array with a bad state")
        version, shape, spec, fortran, raw = state
        dtype = plain_dtype(spec)
        super().__setstate__((version, _checked_size(shape, dtype), dtype, fortran, raw))


def _ndarray(*_: object) -> None:
    raise ForbiddenPickle("it calls numpy.ndarray")  # which would allocate any shape


def _reconstruct(subtype: object, shape: object, code: object) -> _PickledArray:
    if subtype is not _ndarray or shape != (0,):  # numpy pickles an empty array, then fills it
        raise ForbiddenPickle("an array declared with a size")
    return _PickledArray((0,), "b")


def _scalar(spec: object, raw: object = None) -> object:
    dtype = plain_dtype(spec)
    if not isinstance(raw, bytes) or len(raw) != dtype.itemsize:
        raise ForbiddenPickle("a numpy scalar with bad bytes")
    return np.frombuffer(raw, dtype)[0]


def _frombuffer(buf: object, spec: object, shape: object, order: object) -> np.ndarray:
    dtype = plain_dtype(spec)
    return np.frombuffer(buf, dtype).reshape(_checked_size(shape, dtype), order=order)


NUMPY_STEPS = {"_reconstruct": _reconstruct, "scalar": _scalar, "_frombuffer": _frombuffer}
NUMPY_STEPS |= {"dtype": _PickledDtype, "ndarray": _ndarray}


def _plain_values(value: object, seen: dict[int, object]) -> object:
    """`value` with each _PickledArray a plain ndarray and each _PickledDtype a dtype, in
    the containers a data pickle may hold (lists, dicts, deques changed in place)."""
    if id(value) in seen:  # one object met twice stays one
        return seen[id(value)]
    if isinstance(value, _PickledArray):
        seen[id(value)] = value = value.view(np.ndarray)
    elif isinstance(value, _PickledDtype):
        seen[id(value)] = value = plain_dtype(value)
    elif isinstance(value, list | deque):
        seen[id(value)] = value
        for i, item in enumerate(value):
            value[i] = _plain_values(item, seen)
    elif isinstance(value, dict):
        seen[id(value)] = value
        for key, item in value.items():
            value[key] = _plain_values(item, seen)
    elif isinstance(value, tuple):
        seen[id(value)] = value = tuple(_plain_values(item, seen) for item in value)
    return value


class _DataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) == ("torch.storage", "_load_from_bytes"):
            return _storage_from_bytes
        if (module, name) not in DATA_GLOBALS | TENSOR_GLOBALS:
            raise ForbiddenPickle(f"it names {module}.{name}")
        if module.startswith("numpy") and name in NUMPY_STEPS:
            return NUMPY_STEPS[name]
        return super().find_class(module, name)


def read_data_pickle(raw: bytes) -> object:
    """Unpickle `raw` building data only: Python's plain types, numpy arrays and scalars
    of plain dtypes, deques, ordered dicts and torch tensors (``DATA_GLOBALS``,
    ``TENSOR_GLOBALS``); a pickle naming anything else, an object array or an array
    declared larger than MAX_MODEL_BYTES raises ``ForbiddenPickle`` before anything it
    names is called or allocated."""
    return _plain_values(_DataUnpickler(io.BytesIO(raw)).load(), {})


def _read_data(key: str, value: dict):
    try:
        return read_data_pickle(base64.b64decode(value[SERIALIZED]))
    except Exception as e:
        raise ValueError(f"its {key} is a pickle of more than data ({first_line(e)})") from None


class UntrustedPickle(ValueError):
    """A pickled setting that names code this loader gives no known value: only SB3's own
    loader, for a file its user trusts (``SB3Policy(..., trusted=True)``), loads it."""


# The classes SB3 users put in policy_kwargs, by module and the class they extend: torch
# activations, torch optimizers (and SB3's RMSpropTFLike), SB3's feature extractors.
# Each is a class of a library installed here, never code from the file.
KWARGS_CLASS_FAMILIES = (
    ("torch.nn.modules.activation", "torch.nn", "Module"),
    ("torch.optim.", "torch.optim", "Optimizer"),  # a prefix: torch.optim.adam, ...
    ("stable_baselines3.common.sb2_compat.rmsprop_tf_like", "torch.optim", "Optimizer"),
    (
        "stable_baselines3.common.torch_layers",
        "stable_baselines3.common.torch_layers",
        "BaseFeaturesExtractor",
    ),
)
# The opcodes that call what the pickle names (or hand it to a hook): a policy_kwargs
# pickle of the classes above names them by reference and calls nothing, so none of
# these may appear in one. Every other opcode builds plain values.
CALLING_OPCODES = {"REDUCE", "BUILD", "INST", "OBJ", "NEWOBJ", "NEWOBJ_EX", "PERSID"}
CALLING_OPCODES |= {"BINPERSID", "EXT1", "EXT2", "EXT4", "NEXT_BUFFER", "READONLY_BUFFER"}
# What APPEND(S), ADDITEMS and SETITEM(S) would call on an object that is not a list,
# set or dict: no class handed out may have them.
_CONTAINER_METHODS = ("append", "extend", "add")
_CLASS_IN_REPR = re.compile(r"<class '([\w.]+)'>")


def policy_kwargs_class(module: str, name: str) -> type | None:
    """The class `module`.`name` if it is one of ``KWARGS_CLASS_FAMILIES`` (defined in that
    module, which must be one of the families' and already imported: nothing is
    imported for a name read from a file), else None."""
    import sys

    import stable_baselines3.common.sb2_compat.rmsprop_tf_like  # noqa: F401 (a family's)
    import torch  # noqa: F401 (imports torch.nn and every torch.optim module)

    for prefix, base_module, base_name in KWARGS_CLASS_FAMILIES:
        if not (module == prefix or (prefix.endswith(".") and module.startswith(prefix))):
            continue
        found = getattr(sys.modules.get(module), name, None) if name.isidentifier() else None
        base = getattr(sys.modules[base_module], base_name)
        if (
            isinstance(found, type)
            and issubclass(found, base)
            and found.__module__ == module
            and not any(hasattr(found, method) for method in _CONTAINER_METHODS)
            and not hasattr(type(found), "__setitem__")
        ):
            return found
    return None


class _PolicyKwargsUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        found = policy_kwargs_class(module, name)
        if found is None:
            raise ForbiddenPickle(f"names {module}.{name}")
        return found


def read_policy_kwargs(raw: bytes) -> object:
    """Unpickle a policy_kwargs pickle (as SB3 writes it with cloudpickle) that holds plain
    values and the classes of ``KWARGS_CLASS_FAMILIES`` only: those are looked up, never
    called (none of ``CALLING_OPCODES`` may appear). ``ForbiddenPickle`` ("names
    module.class", "calls what it names (OPCODE)") for anything else: nothing runs."""
    import pickletools

    for opcode, _arg, _pos in pickletools.genops(raw):
        if opcode.name in CALLING_OPCODES:
            raise ForbiddenPickle(f"calls what it names ({opcode.name})")
    return _PolicyKwargsUnpickler(io.BytesIO(raw)).load()


def _refused_class(value: dict) -> str | None:
    """The first class that SB3 shows beside a policy_kwargs pickle (its readable fields,
    a repr per key) that is none of ``KWARGS_CLASS_FAMILIES``, with its key; or None."""
    for key, shown in value.items():
        for dotted in [] if key.startswith(":") else _CLASS_IN_REPR.findall(str(shown)):
            module, _, name = dotted.rpartition(".")
            if policy_kwargs_class(module, name) is None:
                return f"names {dotted} ({key})"
    return None


def _read_policy_kwargs(value: dict) -> object:
    """``read_policy_kwargs`` of a checkpoint's setting; UntrustedPickle (one line) naming
    the class it refuses as SB3 shows it beside the pickle (a class pickled by value,
    defined in the user's script, is named there only), else what the unpickler refused."""
    try:
        return read_policy_kwargs(base64.b64decode(value[SERIALIZED]))
    except Exception as e:
        refused = _refused_class(value) or first_line(e)
        raise UntrustedPickle(
            f"its policy_kwargs {refused}: code that loading would run from the file"
        ) from None


def _serialized(settings: dict) -> dict[str, dict]:
    return {k: v for k, v in settings.items() if isinstance(v, dict) and SERIALIZED in v}


def known_settings(settings: dict, spec: ObsSpec, known: dict | None = None) -> dict:
    """A value for every pickled setting of a checkpoint (SB3's ``custom_objects``, which
    SB3 then never unpickles): the policy class and the spaces from the plain JSON and
    `spec`, `known` (training's own values, when resuming) or ``PLAY_VALUES`` for the
    schedules, the data read as data, a pickled policy_kwargs read when it holds plain
    values and the classes SB3 users put there (``read_policy_kwargs``). UntrustedPickle
    (one line) for a pickled setting that names other code (an unknown policy class, a
    class of the user's own in policy_kwargs, an unknown setting); ValueError for data
    that is more than data or spaces that are not this game's."""
    from gymnasium import spaces
    from sb3_contrib.common.maskable.policies import (
        MaskableActorCriticPolicy,
        MaskableMultiInputActorCriticPolicy,
    )

    described, box = _observation_box(settings)
    if box is None:
        raise ValueError(f"its {described} is no FiveThousand-v0 observation")
    vector = spaces.Box(OBS_LOW, spec.high, shape=(spec.size,), dtype=np.float32)
    dict_obs = described.startswith("Dict(")
    mask = spaces.Box(0, 1, shape=(NUM_ACTIONS,), dtype=np.int8)
    observation = spaces.Dict({"observation": vector, "action_mask": mask}) if dict_obs else vector
    values: dict = {"observation_space": observation, "action_space": spaces.Discrete(NUM_ACTIONS)}
    for key, value in _serialized(settings).items():
        kind = str(value.get(":type:", "?")).removeprefix("<class '").removesuffix("'>")
        if key == "policy_class":
            module = value.get("__module__")
            if module not in POLICY_MODULES:
                raise UntrustedPickle(
                    f"its policy class (of module {module}) is none of this project's"
                )
            if module in OWN_NETWORK_MODULES:  # by name, as the pickle would (no import circle)
                values[key] = importlib.import_module(OWN_NETWORK_MODULE).ActionScoringPolicy
            elif dict_obs:
                values[key] = MaskableMultiInputActorCriticPolicy
            else:
                values[key] = MaskableActorCriticPolicy
        elif key == "action_space":
            if not kind.endswith(".Discrete") or str(value.get("n")) != str(NUM_ACTIONS):
                raise ValueError(f"its action space ({kind}) is not Discrete({NUM_ACTIONS})")
        elif key in (known or {}):
            values[key] = known[key]
        elif key in PLAY_VALUES:
            values[key] = PLAY_VALUES[key]
        elif key in DATA_SETTINGS:
            values[key] = _read_data(key, value)
        elif key == "policy_kwargs":
            values[key] = _read_policy_kwargs(value)
        elif key != "observation_space":
            raise UntrustedPickle(f"its {key} is a pickle ({kind}) that has no safe replacement")
    return values


def _tensors(value: object, key: str = "") -> Iterator[tuple[str, object]]:
    """The tensors in `value` (what torch's ``weights_only`` loader built: tensors in
    dicts, lists and tuples), each with its key path."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _tensors(v, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from _tensors(v, f"{key}.{i}" if key else str(i))
    elif hasattr(value, "is_floating_point"):
        yield key, value


def check_weights(archive: zipfile.ZipFile) -> None:
    """Read every torch member (``.pth``) of an SB3 archive (opened by
    ``open_model_archive``) with its bound (``read_member``), then with torch's
    ``weights_only`` loader, which builds tensors and plain containers only: ValueError
    (one line) for one past the bound, one that names anything else, or one whose
    numbers are not all finite (``check_finite``: the optimizer's moments too, which
    would make training from it diverge). SB3 reads them again (2.9 with weights_only
    too)."""
    import torch

    for name in archive.namelist():
        if name.endswith(".pth"):
            raw = read_member(archive, name)  # its size refused in its own words
            try:
                loaded = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
            except Exception as e:
                raise ValueError(f"its {name} is not plain weights ({first_line(e)})") from None
            for key, tensor in _tensors(loaded):
                if tensor.is_floating_point():  # as float32: numpy has no bfloat16
                    check_finite(f"{name} weights ({key})", tensor.detach().float().numpy())


def load_sb3(
    source: Path | bytes,
    spec: ObsSpec,
    env=None,
    known: dict | None = None,
    trusted: bool = False,
    **kwargs,
):
    """``MaskablePPO.load`` of a checkpoint (a path or its bytes) without running any code
    it holds: its weights checked by ``check_weights``, its pickled settings given by
    ``known_settings`` (`known`: training's own values). ValueError (one line, without
    the path) if the file holds a pickle that cannot be replaced safely (UntrustedPickle
    if it names code). `trusted`: the file's user trusts it; its pickles are loaded by
    SB3's own loader (cloudpickle), which runs whatever code they hold."""
    from sb3_contrib import MaskablePPO

    raw = source if isinstance(source, bytes) else read_capped(source, MAX_MODEL_BYTES)
    with open_model_archive(raw) as archive:  # then SB3 reads the same bytes, checked
        settings = json.loads(read_member(archive, "data"))
        if not isinstance(settings, dict):
            raise ValueError("its data is no object")
        check_weights(archive)
    custom_objects = {} if trusted else known_settings(settings, spec, known)
    return MaskablePPO.load(io.BytesIO(raw), env=env, custom_objects=custom_objects, **kwargs)


def write_settings(path: Path, settings: dict) -> None:
    """Replace the settings of a checkpoint or snapshot: every other member of the
    archive is copied byte for byte (names, order, dates, compression), and the file is
    written aside and then renamed over the old one (``atomic_write``, which keeps the
    file's mode), so a reader never sees half of it."""

    def copy(aside: str) -> None:
        with zipfile.ZipFile(path) as old, zipfile.ZipFile(aside, "w") as new:
            for info in old.infolist():
                same = info.filename != SETTINGS_MEMBER[path.suffix]
                new.writestr(info, old.read(info) if same else _encode(path.suffix, settings))

    atomic_write(path, copy)


def migrate_checkpoint(path: str | Path, spec: ObsSpec) -> bool:
    """Give a checkpoint (.zip) or snapshot (.npz) saved before models carried their
    observation spec the `spec` it reads (added last to its settings; nothing else
    changes, see ``write_settings``). Returns whether the file changed (False: it
    carries `spec` already); CheckpointError if it carries another spec or its network
    does not read such observations."""
    path = Path(path)
    settings = read_settings(path)
    saved = settings.get(OBS_SPEC_ATTRIBUTE)
    if saved == spec.to_dict():
        return False
    if saved is not None:
        raise CheckpointError(f"{path} already carries another observation spec: {saved}")
    if not network_fits(settings, spec):
        raise CheckpointError(f"{path}: its network does not read {spec.size}-value {spec}")
    write_settings(path, {**settings, OBS_SPEC_ATTRIBUTE: spec.to_dict()})
    return True


class TrainedModel(Policy):
    """A trained network that plays only the game its observation spec describes: `spec`
    (and `path`, its file) are set by the subclass; refusals are `error`s naming the file
    (a network with none, ``NumpyScorer``: its name).

    A subclass gives its network's ``choose(obs, mask, rng)``: one action per row of
    observations (float32, as ``spec.encode`` writes them) and legal masks (bool,
    (m, 64)). ``act`` runs it on a batch of one, ``act_batch`` on many games at once:
    the same code, so the same decisions."""

    path: Path | None = None
    spec: ObsSpec
    error: type[ValueError] = CheckpointError
    _checked: tuple | None = None  # the (players, rules) last checked

    def check_game(self, n_players: int, rules: Rules) -> None:
        """Raise `error` (one line) unless this model reads such a game's observations."""
        why = spec_problem(self.spec, n_players, rules)
        if why:
            bot = self.path or self.name
            raise self.error(_("{bot} cannot play this game: {why}", bot=bot, why=why))

    def check(self, game: Game) -> None:
        """check_game once per kind of game: one seated without asking is refused too."""
        key = (game.n_players, game.rules)
        if key != self._checked:
            self.check_game(*key)
            self._checked = key

    def choose(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def act(self, game: Game, rng: np.random.Generator) -> int:
        """The choice of the player to move, from their observation."""
        self.check(game)
        obs = self.spec.encode(game, game.state.current)[None]
        return int(self.choose(obs, game.legal()[1][None], rng)[0])

    def act_batch(self, games: BatchGames, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``act`` for the games `idx` at once (``batch_actions``)."""
        self.check_game(games.n_players, games.rules)
        return batch_actions(games, idx, self.spec, self.choose, rng)


# ------------------------------------------- the actor of fivethousand_rl.agents.networks, in numpy
class NumpyScorer(TrainedModel):
    """The actor of an ``agents.networks.ActionScoringPolicy`` with numpy: same logits,
    legal rows only. Self-play opponents and evaluation use it (no torch on the hot
    path), and it is the reference for exported bots.

    Deterministic play takes the best legal logit (the first on ties, as torch's
    argmax); otherwise it samples from the softmax over legal actions with `rng`, one
    ``rng.random()`` per decision. Its config holds the network's shape and the
    observation spec it reads ("obs_spec"), saved with the weights; it plays only the
    game of that spec (``act_batch`` refuses any other; ``act`` trusts its caller).
    """

    # Parameter names, as in the torch module, that the actor needs.
    KEYS = ("state_net", "action_in", "state_in", "scorer")
    error = ValueError  # a network in memory, not a file's

    def __init__(self, weights: dict[str, np.ndarray], config: dict, name: str = "scorer") -> None:
        self.config = {k: list(v) if isinstance(v, tuple) else v for k, v in config.items()}
        self.n_state = int(config["n_state"])
        self.activation = config.get("activation", "relu")
        w = {
            k.removeprefix("mlp_extractor."): np.asarray(v, dtype=np.float64)
            for k, v in weights.items()
        }
        self.weights = {k: v for k, v in w.items() if k.split(".")[0] in self.KEYS}
        self.state_layers = _linear_layers(self.weights, "state_net")
        self.scorer_layers = _linear_layers(self.weights, "scorer")
        self.name = name
        self.deterministic = True
        saved = config.get(OBS_SPEC_ATTRIBUTE)
        self.spec = None if saved is None else ObsSpec.from_dict(saved)

    @classmethod
    def from_policy(cls, policy, name: str = "scorer", spec: ObsSpec | None = None) -> NumpyScorer:
        """The actor of `policy` (an ActionScoringPolicy), reading `spec` (default: the
        spec attached to the policy by ``attach_obs_spec``, if any)."""
        weights = {k: v.detach().cpu().numpy() for k, v in policy.state_dict().items()}
        config = dict(policy.net_config)
        saved = spec.to_dict() if spec is not None else getattr(policy, OBS_SPEC_ATTRIBUTE, None)
        if saved is not None:
            config[OBS_SPEC_ATTRIBUTE] = saved
        return cls(weights, config, name)

    def save(self, path: str | Path) -> None:
        """Weights and config (observation spec included) in one .npz; ValueError for a
        scorer with no spec, which no loader would take."""
        if self.spec is None:
            raise ValueError(
                f"{self.name} carries no observation spec: attach one to its model "
                "(fivethousand_rl.agents.neural.attach_obs_spec) or pass spec= to from_policy"
            )
        np.savez(path, config=np.array(json.dumps(self.config)), **self.weights)

    @classmethod
    def load(cls, path: str | Path, name: str | None = None) -> NumpyScorer:
        with np.load(path, allow_pickle=False) as data:
            config = json.loads(str(data["config"]))
            weights = {k: data[k] for k in data.files if k != "config"}
        for key, array in weights.items():
            check_finite(f"weights ({key})", array)
        return cls(weights, config, name or Path(path).stem)

    def _act_fn(self, x: np.ndarray) -> np.ndarray:
        return np.maximum(x, 0.0) if self.activation == "relu" else np.tanh(x)

    def batch_logits(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """(m, 64) float64 logits of m observations (rich rows): the legal actions'
        (`mask`, (m, 64)), -inf for the others, which are not scored."""
        h = obs[:, : self.n_state].astype(np.float64)
        for w, b in self.state_layers:
            h = self._act_fn(h @ w.T + b)
        w = self.weights
        # The state's share of the scorer's first layer, once per observation.
        state = h @ w["state_in.weight"].T
        r, a = np.nonzero(mask)
        rows = obs[:, self.n_state :].reshape(len(obs), NUM_ACTIONS, ACTION_FEATURES)[r, a]
        x = rows @ w["action_in.weight"].T + w["action_in.bias"] + state[r]
        for w_, b in self.scorer_layers:
            x = self._act_fn(x) @ w_.T + b
        logits = np.full(mask.shape, -np.inf)
        logits[r, a] = x[:, 0]
        return logits

    def logits(self, obs: np.ndarray, legal) -> np.ndarray:
        """Logits of the `legal` actions for one observation."""
        legal = list(legal)
        mask = np.zeros((1, NUM_ACTIONS), dtype=bool)
        mask[0, legal] = True
        return self.batch_logits(obs[None], mask)[0, legal]

    def choose(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One action per observation: the best legal logit (the first of equals), or a
        draw from the softmax over the legal actions, one ``rng.random()`` per row in
        order, read off the cumulative probabilities as ``Generator.choice`` does."""
        logits = self.batch_logits(obs, mask)
        if self.deterministic:
            return logits.argmax(axis=1)
        p = np.exp(logits - logits.max(axis=1, keepdims=True))  # 0 for illegal actions
        cdf = np.cumsum(p / p.sum(axis=1, keepdims=True), axis=1)
        cdf /= cdf[:, -1:]
        # The first action whose cumulative probability passes the draw (always a legal
        # one: an illegal action adds nothing to the sum).
        return (cdf <= rng.random(len(obs))[:, None]).sum(axis=1)

    def act(self, game: Game, rng: np.random.Generator) -> int:
        obs = encode_rich(game, game.state.current)  # unchecked: the hot path of training
        return int(self.choose(obs[None], game.legal()[1][None], rng)[0])


def _linear_layers(
    weights: dict[str, np.ndarray], prefix: str
) -> list[tuple[np.ndarray, np.ndarray]]:
    """(weight, bias) of the Linear layers of a torch Sequential, in order."""
    indices = sorted({int(k.split(".")[1]) for k in weights if k.startswith(prefix + ".")})
    return [(weights[f"{prefix}.{i}.weight"], weights[f"{prefix}.{i}.bias"]) for i in indices]


# ------------------------------------------------------------------ players
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


# The opt-in of commands (and their worker processes, which inherit it) for model files
# whose pickled code their user trusts: FIVETHOUSAND_TRUSTED_MODELS=PATH[:PATH...].
TRUSTED_MODELS_VARIABLE = "FIVETHOUSAND_TRUSTED_MODELS"


def trusted_by_environment(path: Path) -> bool:
    """Whether `path` is one of the model files that ``TRUSTED_MODELS_VARIABLE`` names
    (paths separated as in PATH, compared once resolved)."""
    import os

    named = os.environ.get(TRUSTED_MODELS_VARIABLE, "").split(os.pathsep)
    return path.resolve() in {Path(entry).resolve() for entry in named if entry.strip()}


class SB3Policy(TrainedModel):
    """Plays a MaskablePPO checkpoint: the observation of the seat to move, the legal
    actions as the mask, deterministic (greedy) unless `deterministic=False` (then the
    action is sampled with torch's generator, seeded from the caller's rng once per
    decision, and once per chunk of games in ``act_batch``). Loading the checkpoint runs
    none of its code (``load_sb3``): a file with a pickle that cannot be replaced safely
    is refused in one line, naming the opt-in when the pickle is code: `trusted=True`
    (default: whether ``TRUSTED_MODELS_VARIABLE`` names the file) loads it with SB3's
    own loader, running its code, for a file its user trusts."""

    def __init__(
        self, path: str | Path, deterministic: bool = True, trusted: bool | None = None
    ) -> None:
        self.path = Path(path)
        self.spec = read_obs_spec(self.path)
        # A spec told by the observation space (a user's own loop): the rules assumed.
        self.spec_assumed = OBS_SPEC_ATTRIBUTE not in read_settings(self.path)
        self.trusted = trusted_by_environment(self.path) if trusted is None else trusted
        try:
            from gymnasium import spaces

            self.model = load_sb3(self.path, self.spec, trusted=self.trusted, device="cpu")
        except UntrustedPickle as e:
            raise CheckpointError(
                f"could not load checkpoint {path}: {e}; if you trust this file, let SB3's "
                f"own loader run that code: {TRUSTED_MODELS_VARIABLE}={path} for the "
                "commands, SB3Policy(path, trusted=True) in Python"
            ) from None
        except Exception as e:  # corrupt archives fail in many ways inside SB3
            raise CheckpointError(f"could not load checkpoint {path}: {first_line(e)}") from None
        # Trained with dict_obs: the network reads {"observation", "action_mask"}.
        self.dict_obs = isinstance(self.model.observation_space, spaces.Dict)
        self.deterministic = deterministic
        self.name = short_name(path)

    def check_game(self, n_players: int, rules: Rules) -> None:
        """``TrainedModel.check_game``; for a spec told by the observation space, the
        refusal says which rules were assumed and how to give the right ones."""
        try:
            super().check_game(n_players, rules)
        except CheckpointError as e:
            if not self.spec_assumed:
                raise
            raise CheckpointError(
                f"{e} (it carries no spec: {self.spec.n_players} players and the default rules "
                "were assumed from its observation space; if it was trained under others, "
                "save its spec with fivethousand_rl.agents.neural.migrate_checkpoint)"
            ) from None

    def choose(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """What MaskablePPO.predict computes, without its batch-handling overhead: the
        masked categorical distribution over the actor's logits, its mode or a sample."""
        import torch

        policy = self.model.policy
        seen = torch.as_tensor(obs)
        if self.dict_obs:
            seen = {"observation": seen, "action_mask": torch.as_tensor(mask, dtype=torch.float32)}
        with one_torch_thread(), torch.no_grad():
            features = policy.extract_features(seen, policy.pi_features_extractor)
            logits = policy.action_net(policy.mlp_extractor.forward_actor(features))
            if self.deterministic:
                return masked_mode(logits, torch.as_tensor(mask)).numpy()
            dist = policy.action_dist.proba_distribution(action_logits=logits)
            dist.apply_masking(torch.as_tensor(mask))
            torch.manual_seed(int(rng.integers(2**31)))
            return dist.get_actions(deterministic=False).numpy()

    def __getstate__(self) -> dict:
        """For the standard ``pickle`` (subprocess workers, Ray): the model travels as
        its SB3 archive's bytes (``model.save``), since a checkpoint's learning-rate
        schedule may be a local function, which only cloudpickle can write. Unpickling
        loads that archive as loading the checkpoint did (``load_sb3``: none of its code
        runs)."""
        state = self.__dict__.copy()
        archive = io.BytesIO()
        self.model.save(archive)
        state["model"] = archive.getvalue()
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        try:
            trusted = state.get("trusted", False)  # as the original was loaded
            self.model = load_sb3(state["model"], self.spec, trusted=trusted, device="cpu")
        except Exception as e:
            problem = first_line(e)
            raise CheckpointError(f"could not load checkpoint {self.path}: {problem}") from None


def masked_mode(logits, mask):
    """The mode of sb3-contrib's masked categorical distribution over `logits` (torch
    tensors, (m, 64), the mask bool): the same operations in the same order as
    ``MaskableCategorical`` (normalize, mask with -1e8, normalize, softmax, argmax), so
    the same bits and the same action, without building the distribution objects, which
    cost more than the network here."""
    import torch

    normalized = logits - logits.logsumexp(dim=-1, keepdim=True)
    masked = torch.where(mask, normalized, torch.tensor(-1e8, dtype=logits.dtype))
    masked = masked - masked.logsumexp(dim=-1, keepdim=True)
    return torch.argmax(torch.softmax(masked, dim=-1), dim=1)


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Run torch on one thread for a while, then give back the thread count it had: a
    decision's forward pass is small (threads only add overhead), and parallel play
    runs one worker per core."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


class Snapshot(TrainedModel):
    """A self-play snapshot (``NumpyScorer`` weights, .npz) that knows its file: it
    plays only the game of its spec. Everything else is the scorer's."""

    def __init__(self, scorer: NumpyScorer, path: Path) -> None:
        self.scorer = scorer
        self.path = path
        self.spec = scorer.spec
        self.name = short_name(path)

    def __getattr__(self, attr: str):
        if attr == "scorer":  # not set yet (unpickling): no endless recursion
            raise AttributeError(attr)
        return getattr(self.scorer, attr)  # weights, config, logits...: the scorer's

    def choose(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return self.scorer.choose(obs, mask, rng)


def load_snapshot(path: str | Path) -> Snapshot:
    """A self-play snapshot (.npz) as a greedy policy, named after its run."""
    path = Path(path)
    read_obs_spec(path)  # none, or a broken one: refused before the weights are read
    try:
        scorer = NumpyScorer.load(path)
    except Exception as e:
        raise CheckpointError(f"could not load snapshot {path}: {first_line(e)}") from None
    return Snapshot(scorer, path)
