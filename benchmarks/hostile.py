"""Builders of hostile files (issues 42 and 54), in one place for the tests and for
``benchmarks/attack.py``: model zips whose pickles run code or declare huge arrays,
zip bombs, YAML alias bombs, networks with NaN weights, and a child-process runner that
measures a command's peak resident memory. The library never imports this module.

Every payload here is harmless: code "run" from a file only creates a marker file."""

from __future__ import annotations

import base64
import io
import json
import os
import pickle
import shutil
import struct
import subprocess
import sys
import threading
import time
import zipfile
import zlib
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


MB = 1 << 20


def deflated_zeros(size: int) -> tuple[bytes, int]:
    """`size` zero bytes deflated (raw deflate, about 1,000 to 1) and their CRC-32: one
    compressed megabyte repeated, each copy ending in a full flush so that they chain."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    megabyte = packer.compress(bytes(MB)) + packer.flush(zlib.Z_FULL_FLUSH)
    whole, rest = divmod(size, MB)
    crc = 0
    for _ in range(whole):
        crc = zlib.crc32(bytes(MB), crc)
    tail = packer.compress(bytes(rest)) + packer.flush()
    return megabyte * whole + tail, zlib.crc32(bytes(rest), crc)


def zip_archive(members: dict[str, bytes | int]) -> bytes:
    """A zip archive of `members`, bytes stored as they are and an int N as N zero bytes
    deflated (a bomb), written by hand: zipfile would compress the gigabyte itself."""
    body, directory = b"", b""
    for name, content in members.items():
        if isinstance(content, int):
            (data, crc), method, size = deflated_zeros(content), 8, content
        else:
            data, crc, method, size = content, zlib.crc32(content), 0, len(content)
        fields = struct.pack("<HHHHIIIH", 0, method, 0, 0x21, crc, len(data), size, len(name))
        offset = len(body)
        body += b"PK\3\4" + struct.pack("<H", 20) + fields + b"\0\0" + name.encode() + data
        tail = struct.pack("<HHHII", 0, 0, 0, 0, offset)
        directory += b"PK\1\2" + struct.pack("<HH", 20, 20) + fields + b"\0\0" + tail
        directory += name.encode()
    end = struct.pack("<HHHHIIH", 0, 0, len(members), len(members), len(directory), len(body), 0)
    return body + directory + b"PK\5\6" + end


def replaced(archive: bytes, name: str, content: bytes | int) -> bytes:
    """`archive` (a zip) with its member `name` now `content` (as zip_archive takes it)."""
    with zipfile.ZipFile(io.BytesIO(archive)) as old:
        members = {info.filename: old.read(info) for info in old.infolist()}
    return zip_archive({**members, name: content})


def flat_bomb(size: int) -> bytes:
    """The shipped model.zip, its settings (`data`) `size` zero bytes deflated: about
    size/1000 (issue 54 item 3: 2.2 MB declaring 630 MB took export to 1.44 GB and
    train --resume to 1.47 GB)."""
    return replaced((SHIPPED_2P / "model.zip").read_bytes(), "data", size)


def nested_bomb(size: int) -> bytes:
    """The shipped model.zip, a record of its policy.pth (a zip: torch's format) `size`
    zero bytes deflated, which torch's loader allocates and inflates as the zip states;
    the outer zip's sizes say nothing of it (issue 54 item 3: 2.7 MB took evaluate to
    1.03 GB)."""
    shipped = (SHIPPED_2P / "model.zip").read_bytes()
    with zipfile.ZipFile(io.BytesIO(shipped)) as archive:
        policy = replaced(archive.read("policy.pth"), "archive/data/0", size)
    return replaced(shipped, "policy.pth", policy)


class StorageBomb:
    """Pickles as the standard pickle writes a tensor's storage (torch.storage's
    _load_from_bytes of a torch file), the file in torch's zip format with its one
    record (data/0) stated `size` bytes: torch's loader allocates and inflates it."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __reduce__(self):
        import torch

        saved = io.BytesIO()
        torch.save(torch.zeros(8, dtype=torch.uint8), saved)
        bomb = replaced(saved.getvalue(), "archive/data/0", self.size)
        return (torch.storage._load_from_bytes, (bomb,))


def resumable_state() -> bytes:
    """A state.pkl of the shipped 2-player run's shape that passes ``train --resume``'s
    checks of it (read_checkpoint), so that the resume goes on to load latest/model.zip."""
    from fivethousand_rl.agents.training.checkpoint import (
        CHECKPOINT_KEYS,
        MONITOR_FIELDS,
        STATE_KEYS,
    )

    n_envs = json.loads((SHIPPED_2P / "config.json").read_text())["n_envs"]
    state = dict.fromkeys(CHECKPOINT_KEYS)
    state |= {"state": dict.fromkeys(STATE_KEYS), "num_timesteps": 0, "env_states": [{}] * n_envs}
    state["monitor"] = {field: [[]] * n_envs for field in MONITOR_FIELDS}
    return pickle.dumps(state)


def shipped_config(folder: Path) -> None:
    """The shipped 2-player run's config.json in `folder`, but for the run it started
    from (init_from), which is not in the clone."""
    config = json.loads((SHIPPED_2P / "config.json").read_text())
    config.pop("init_from", None)
    (folder / "config.json").write_text(json.dumps(config))


def run_folder(folder: Path, model: Path | None = None, state: bytes | None = None) -> Path:
    """A training run as ``train.py --resume`` reads it: the shipped 2-player config and
    latest/model.zip (`model`, else the shipped one), and latest/state.pkl (`state`, else
    ``resumable_state``)."""
    (folder / "latest").mkdir(parents=True)
    shipped_config(folder)
    shutil.copy(model or SHIPPED_2P / "model.zip", folder / "latest" / "model.zip")
    (folder / "latest" / "state.pkl").write_bytes(resumable_state() if state is None else state)
    return folder


def ship_run(folder: Path, model: Path | None = None) -> Path:
    """A finished 2-player run (as tests/test_ship.py's) holding `model` (default shipped)."""
    (folder / "best").mkdir(parents=True)
    shutil.copy(model or SHIPPED_2P / "model.zip", folder / "best" / "model.zip")
    shipped_config(folder)
    (folder / "summary.json").write_text(json.dumps({"steps": 4096, "wall_seconds": 60}))
    (folder / "command.txt").write_text("python train.py --preset ppo_2p\n")
    return folder


# ------------------------------------------------------------------ non-finite weights
def nan_zip(folder: Path, value: float = float("nan")) -> Path:
    """The shipped 2-player model with its first policy weight set to `value`."""
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
