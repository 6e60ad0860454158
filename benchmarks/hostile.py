"""Builders of hostile files (issues 42 and 54), in one place for the tests and for
``benchmarks/attack.py``: model zips whose pickles run code or declare huge arrays,
zip bombs, YAML alias bombs, networks with NaN weights, and a child-process runner that
measures a command's peak resident memory. The library never imports this module.

Every payload here is harmless: code "run" from a file only creates a marker file."""

from __future__ import annotations

import base64
import json
import os
import pickle
import shutil
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHIPPED_2P = ROOT / "checkpoints" / "ppo-2p"
SHIPPED_ONNX = SHIPPED_2P / "model.onnx"
SHIPPED_VALUE_NET = ROOT / "checkpoints" / "planner-2p" / "value_net.npz"
RSS_LIMIT = 500 << 20  # bytes: what a refused hostile file may take a command to (issue 54)


# ------------------------------------------------------------------------------ YAML
def alias_bomb(levels: int = 9) -> str:
    """About 400 bytes of YAML whose value, walked (a repr, a copy), is 9**9 strings:
    each list holds the one before nine times, by alias."""
    parts = ["&a [" + ",".join(['"lol"'] * 9) + "]"]
    for i in range(1, levels):
        parts.append(f"&{chr(97 + i)} [" + ",".join([f"*{chr(96 + i)}"] * 9) + "]")
    return "[" + ", ".join(parts) + "]"


# ------------------------------------------------------------------- code in pickles
class Payload:
    """Unpickled, it creates `marker` (what a hostile file could do instead)."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def serialized(marker: Path, plain: dict | None = None) -> dict:
    """An SB3 ":serialized:" setting holding the payload, beside `plain`'s readable fields."""
    return {
        **(plain or {}),
        ":serialized:": base64.b64encode(pickle.dumps(Payload(marker))).decode(),
    }


def crafted(
    folder: Path, marker: Path, settings: dict, member: str | None = None, name: str = "model.zip"
) -> Path:
    """The shipped 2-player model with `settings` changed in its data (None: removed) and
    torch `member` (if given) replaced by the payload's pickle."""
    path = folder / name
    with zipfile.ZipFile(SHIPPED_2P / "model.zip") as old, zipfile.ZipFile(path, "w") as new:
        for info in old.infolist():
            raw = old.read(info)
            if info.filename == "data":
                data = {**json.loads(raw), **settings}
                raw = json.dumps({k: v for k, v in data.items() if v is not None}).encode()
            elif info.filename == member:
                raw = pickle.dumps(Payload(marker), protocol=2)  # torch's own protocol
            new.writestr(info, raw)
    return path


# The settings whose pickles are code (classes, schedules, spaces): given known values.
CODE_SETTINGS = ("policy_class", "observation_space", "action_space", "learning_rate")
CODE_SETTINGS += ("lr_schedule", "clip_range", "rollout_buffer_class")

# Pickles with no safe replacement, refused: (settings, torch member, what the refusal names).
REFUSED = {
    "data kept as a pickle": ({"_last_obs": "payload"}, None, "_last_obs"),
    "an unknown pickled setting": ({"extra": "payload"}, None, "extra"),
    "pickled policy_kwargs": ({"policy_kwargs": "payload"}, None, "policy_kwargs"),
    "a foreign policy class": ({"policy_class": {"__module__": "os"}}, None, "policy class"),
    "a pickle as weights": ({}, "policy.pth", "policy.pth"),
    "a pickle as torch variables": ({}, "pytorch_variables.pth", "pytorch_variables.pth"),
}


def refused_file(folder: Path, marker: Path, case: str) -> tuple[Path, str]:
    """A model of REFUSED's `case` (its payload creates `marker`) and the name its refusal says."""
    settings, member, named = REFUSED[case]
    changes = {
        key: serialized(marker, value if isinstance(value, dict) else None)
        for key, value in settings.items()
    }
    return crafted(folder, marker, changes, member), named


def code_settings_file(folder: Path, marker: Path, name: str = "model.zip") -> Path:
    """The shipped model with every pickled class, schedule and space holding the payload
    (their readable fields kept): what a loader replaces by known values (issue 54 item 6:
    ``ship`` copied these through to stock ``MaskablePPO.load``)."""
    original = json.loads(zipfile.ZipFile(SHIPPED_2P / "model.zip").read("data"))
    changes = {key: serialized(marker, original[key]) for key in CODE_SETTINGS}
    return crafted(folder, marker, changes, name=name)


# -------------------------------------------------------------------- memory bombs
DECLARED = 40_000_000  # items: 320 MB of object pointers, past MAX_MODEL_BYTES (256 MB)


class ObjectArrayBomb:
    """Pickles as numpy's own steps building an array of `DECLARED` items (None each, as
    numpy fills an object array): about 130 bytes standing for gigabytes."""

    def __init__(self, how: str, dtype: str = "O") -> None:
        self.how, self.dtype = how, dtype

    def __reduce__(self):
        import numpy as np

        if self.how == "ndarray":  # numpy.ndarray((N,), dtype) called directly
            return (np.ndarray, ((DECLARED,), np.dtype(self.dtype)))
        reconstruct = np.ndarray.__reduce__(np.zeros(0))[0]
        if self.how == "reconstruct":  # the empty array numpy starts from, declared large
            return (reconstruct, (np.ndarray, (DECLARED,), np.dtype(self.dtype)))
        state = (1, (DECLARED,), np.dtype(self.dtype), False, [None])  # BUILD: its state
        return (reconstruct, (np.ndarray, (0,), b"b"), state)


def model_with_last_obs(folder: Path, pickled: bytes) -> Path:
    """The shipped 2-player model.zip with `pickled` as its `_last_obs` setting."""
    path = folder / "model.zip"
    with zipfile.ZipFile(SHIPPED_2P / "model.zip") as old, zipfile.ZipFile(path, "w") as new:
        for info in old.infolist():
            raw = old.read(info)
            if info.filename == "data":
                data = json.loads(raw)
                data["_last_obs"] = {":serialized:": base64.b64encode(pickled).decode()}
                raw = json.dumps(data).encode()
            new.writestr(info, raw)
    return path


def object_array_pickle() -> bytes:
    """The issue's 133-byte pickle of a numpy object array declared 320 MB."""
    return pickle.dumps(ObjectArrayBomb("reconstruct"), protocol=4)


def _deflated(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


class _Storage:
    """Stands for a torch storage in the hand-made pickle below."""


class _Tensor:
    def __init__(self, items: int) -> None:
        self.items = items

    def __reduce__(self):
        import collections

        import torch

        size = (self.items,)
        return (
            torch._utils._rebuild_tensor_v2,
            (_Storage(), 0, size, (1,), False, collections.OrderedDict()),
        )


def torch_bomb_member(size: int) -> bytes:
    """A torch file (a zip, as torch.save writes) holding one float tensor of `size`
    bytes of zeros, its storage deflated: a few MB that torch unpacks to `size`."""
    import io

    import torch

    items = size // 4

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            if isinstance(obj, _Storage):
                return ("storage", torch.FloatStorage, "0", "cpu", items)
            return None

    data = io.BytesIO()
    Pickler(data, protocol=2).dump({"mlp_extractor.state_net.0.weight": _Tensor(items)})
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/data.pkl", data.getvalue())
        archive.writestr("archive/byteorder", "little")
        zinfo = _deflated("archive/data/0")
        with archive.open(zinfo, "w", force_zip64=True) as out:
            chunk = b"\0" * (1 << 20)
            for start in range(0, items * 4, len(chunk)):
                out.write(chunk[: min(len(chunk), items * 4 - start)])
        archive.writestr("archive/version", "3\n")
    return raw.getvalue()


def nested_bomb(folder: Path, size: int) -> Path:
    """The shipped model with its policy.pth a torch file whose storage (deflated inside
    it) unpacks to `size` bytes: the outer zip's sizes say nothing of it (issue 54 item 3:
    2.7 MB took evaluate to 1.03 GB)."""
    path = folder / "model.zip"
    inner = torch_bomb_member(size)
    with zipfile.ZipFile(SHIPPED_2P / "model.zip") as old, zipfile.ZipFile(path, "w") as new:
        for info in old.infolist():
            new.writestr(info, inner if info.filename == "policy.pth" else old.read(info))
    return path


def flat_bomb(folder: Path, size: int, name: str = "model.zip") -> Path:
    """The shipped model with its `data` member (JSON) padded with spaces to `size`
    bytes, deflated: about size/1000 on disk (issue 54 item 3: 2.2 MB declaring 630 MB
    took export to 1.44 GB and train --resume to 1.47 GB)."""
    path = folder / name
    with zipfile.ZipFile(SHIPPED_2P / "model.zip") as old, zipfile.ZipFile(path, "w") as new:
        for info in old.infolist():
            if info.filename == "data":
                with new.open(_deflated("data"), "w", force_zip64=True) as out:
                    out.write(old.read(info))
                    chunk = b" " * (1 << 20)
                    left = size - info.file_size
                    while left > 0:
                        out.write(chunk[: min(left, len(chunk))])
                        left -= len(chunk)
            else:
                new.writestr(info, old.read(info))
    return path


def resumable_state() -> bytes:
    """A state.pkl of the shipped 2-player run's shape that passes ``train --resume``'s
    checks of it (read_checkpoint), so that the resume goes on to load latest/model.zip."""
    from fivethousand_rl.agents.training.checkpoint import MONITOR_FIELDS, STATE_KEYS

    n_envs = json.loads((SHIPPED_2P / "config.json").read_text())["n_envs"]
    return pickle.dumps(
        {
            "state": dict.fromkeys(STATE_KEYS),
            "num_timesteps": 0,
            "torch_rng": None,
            "numpy_rng": None,
            "python_rng": None,
            "env_states": [{}] * n_envs,
            "monitor": {name: [[]] * n_envs for name in MONITOR_FIELDS},
        }
    )


def run_folder(folder: Path, model: Path | None = None, state: bytes | None = None) -> Path:
    """A training run as ``train.py --resume`` reads it: the shipped 2-player config and
    latest/model.zip (`model`, else the shipped one), and latest/state.pkl (`state`, else
    ``resumable_state``)."""
    (folder / "latest").mkdir(parents=True)
    shutil.copy(SHIPPED_2P / "config.json", folder / "config.json")
    shutil.copy(model or SHIPPED_2P / "model.zip", folder / "latest" / "model.zip")
    (folder / "latest" / "state.pkl").write_bytes(resumable_state() if state is None else state)
    return folder


# ------------------------------------------------------------------ non-finite weights
def nan_zip(folder: Path, value: float = float("nan")) -> Path:
    """The shipped 2-player model with its first policy weight set to `value`."""
    import io

    import torch

    path = folder / "nan.zip"
    with zipfile.ZipFile(SHIPPED_2P / "model.zip") as old, zipfile.ZipFile(path, "w") as new:
        for info in old.infolist():
            raw = old.read(info)
            if info.filename == "policy.pth":
                weights = torch.load(io.BytesIO(raw), weights_only=True)
                first = next(iter(weights))
                weights[first].view(-1)[0] = value
                buffer = io.BytesIO()
                torch.save(weights, buffer)
                raw = buffer.getvalue()
            new.writestr(info, raw)
    return path


def nan_onnx(folder: Path, edit=None, name: str = "bad.onnx") -> Path:
    """The shipped ppo-2p's .onnx and its metadata, copied, with `edit(model)` applied
    (default: a NaN in its first float initializer)."""
    import onnx

    model = onnx.load(str(SHIPPED_ONNX))
    (edit or nan_raw_initializer)(model)
    path = folder / name
    onnx.save(model, str(path))
    shutil.copy(SHIPPED_ONNX.with_suffix(".json"), path.with_suffix(".json"))
    return path


def nan_raw_initializer(model) -> None:
    import numpy as np
    from onnx import numpy_helper

    first = next(t for t in model.graph.initializer if t.data_type == 1)  # a float one
    values = numpy_helper.to_array(first).copy()
    values.flat[0] = np.nan
    first.CopyFrom(numpy_helper.from_array(values, first.name))


def nan_value_net(folder: Path) -> Path:
    """The shipped 2-player value net with all its weights NaN (issue 42 item 8)."""
    import numpy as np

    with np.load(SHIPPED_VALUE_NET, allow_pickle=False) as saved:
        arrays = {
            key: np.full_like(a, np.nan) if a.dtype.kind == "f" else a for key, a in saved.items()
        }
    path = folder / "value_net.npz"
    np.savez(path, **arrays)
    return path


# ------------------------------------------------------------------------- a full disk
def full_disk_open(real_open: Callable) -> Callable:
    """An `open` (given the real one) under which every file opened for writing is made,
    but writing to it fails with ENOSPC, as on a full disk (the file is created, its
    content is not); reading is as before."""
    import errno
    import io

    class Full(io.RawIOBase):
        def __init__(self, file) -> None:
            self.file = file

        def writable(self) -> bool:
            return True

        def write(self, data) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def close(self) -> None:
            self.file.close()
            super().close()

    def opened(file, mode="r", *args, **kwargs):
        if not any(c in mode for c in "wax+") or "r" in mode:
            return real_open(file, mode, *args, **kwargs)
        made = real_open(file, "wb")
        return Full(made) if "b" in mode else io.TextIOWrapper(Full(made))

    return opened


# ------------------------------------------------------ a command's peak memory, measured
# Runs a script as python SCRIPT ARGS would, then writes the process's peak resident
# memory since its exec (VmHWM; getrusage's ru_maxrss would count the forked parent's
# memory from before the exec) to the file given first.
MEASURED = """import runpy, sys
out, sys.argv = sys.argv[1], sys.argv[2:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    open(out, "w").write(peak.split()[1])
"""


@dataclass
class Measured:
    code: int | None  # None: killed (past the time or memory allowed)
    err: str
    peak: int  # bytes
    why_killed: str = ""


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            line = next(line for line in status if line.startswith("VmHWM:"))
        return int(line.split()[1]) * 1024
    except (OSError, StopIteration):
        return 0


def run_measured(
    args: list[str],
    folder: Path,
    timeout: float = 60,
    kill_above: int = 1500 << 20,
    env: dict | None = None,
    cwd: Path = ROOT,
) -> Measured:
    """`python ARGS` run from `cwd` (the clone): its exit status, stderr and peak RSS.
    A child past `timeout` seconds or `kill_above` bytes of memory is killed (a broken
    loader would otherwise take gigabytes of a shared machine)."""
    peak_path = folder / f"peak_kb_{time.monotonic_ns()}.txt"
    child = subprocess.Popen(
        [sys.executable, "-c", MEASURED, str(peak_path), *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    seen, why = [0], []

    def watch() -> None:
        ends = time.monotonic() + timeout
        while child.poll() is None:
            seen[0] = max(seen[0], _rss(child.pid))
            if seen[0] > kill_above or time.monotonic() > ends:
                why.append(
                    f"killed at {seen[0] >> 20} MB"
                    if seen[0] > kill_above
                    else f"still running after {timeout:g} s"
                )
                child.kill()
                return
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    err = child.communicate()[1]
    watcher.join()
    try:
        peak = int(peak_path.read_text()) * 1024
        peak_path.unlink()
    except (OSError, ValueError):
        peak = seen[0]
    return Measured(None if why else child.returncode, err, max(peak, seen[0]), "".join(why))
