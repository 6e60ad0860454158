"""Issue 54 (deliver 3): no small file a user hands a command blows up memory. Each
hostile file goes through the real command line in a child process whose peak resident
memory is measured (VmHWM): it is refused in one line, exit 2, well under 500 MB."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from fivethousand_rl import sweep
from fivethousand_rl.agents.base import BRIEF_CHARS, brief_repr
from fivethousand_rl.agents.training.config import (
    MAX_YAML_BYTES,
    TrainConfig,
    load_yaml,
    make_config,
    parse_params,
)

ROOT = Path(__file__).resolve().parent.parent
RSS_LIMIT = 500 << 20


def alias_bomb(levels: int = 9) -> str:
    """About 400 bytes of YAML whose value, walked (a repr, a copy), is 9**9 strings:
    each list holds the one before nine times, by alias."""
    parts = ["&a [" + ",".join(['"lol"'] * 9) + "]"]
    for i in range(1, levels):
        parts.append(f"&{chr(97 + i)} [" + ",".join([f"*{chr(96 + i)}"] * 9) + "]")
    return "[" + ", ".join(parts) + "]"


def shared_lists(levels: int = 9) -> list:
    """The value the alias bomb stands for, as PyYAML built it: lists sharing their items."""
    value: list = ["lol"] * 9
    for _ in range(levels):
        value = [value] * 9
    return value


# Runs a script as python SCRIPT ARGS would, then writes the process's peak resident
# memory since its exec (VmHWM; getrusage's ru_maxrss would count the forked test
# process's memory from before the exec) to the file given first.
MEASURED = """import runpy, sys
out, sys.argv = sys.argv[1], sys.argv[2:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    open(out, "w").write(peak.split()[1])
"""


def run_measured(args: list[str], tmp_path: Path, timeout: float = 60) -> tuple[int, str, int]:
    """(exit status, stderr, peak RSS in bytes) of `python ARGS` run from the clone; a
    child past `timeout` seconds is killed and the test fails."""
    peak_path = tmp_path / "peak_kb.txt"
    try:
        done = subprocess.run(
            [sys.executable, "-c", MEASURED, str(peak_path), *args],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{args} still running after {timeout} s")
    return done.returncode, done.stderr, int(peak_path.read_text()) * 1024


@pytest.mark.parametrize("script", ["train.py", "train_planner.py"])
@pytest.mark.parametrize("way", ["--preset", "--params"])
def test_a_yaml_alias_bomb_is_refused_in_one_line_without_growing(script, way, tmp_path):
    """Issue 54 item 4: a 400-byte alias bomb as a preset or a --params value grew to
    3 GB (the error message's repr walked it) and died with a MemoryError traceback."""
    if way == "--preset":
        preset = tmp_path / "bomb.yaml"
        preset.write_text(f"n_steps: {alias_bomb()}\n")
        assert preset.stat().st_size < 450
        args = [script, "--preset", str(preset)]
    else:
        args = [script, "--params", f"n_steps={alias_bomb()}"]
    code, err, peak = run_measured([*args, "--checkpoints", str(tmp_path / "runs")], tmp_path)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "YAML anchors and aliases (&, *) are not accepted" in err
    assert peak < RSS_LIMIT, f"peak RSS {peak >> 20} MB"
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    "text", ["&a 1", "[&a 1, *a]", "a: &x {b: 1}\nc: *x", "base: &b {x: 1}\nmine:\n  <<: *b"]
)
def test_every_anchor_or_alias_is_refused(text):
    """A lone anchor too (and a merge key, which needs an alias): the loader refuses
    the whole notation, not only the aliases it would expand."""
    with pytest.raises(ValueError, match=r"^YAML anchors and aliases \(&, \*\) are not accepted$"):
        load_yaml(text)


def test_yaml_documents_are_bounded_and_errors_are_one_line():
    """PyYAML reads 1 MB of YAML in about 12 s and 340 MB: a document past MAX_YAML_BYTES
    is refused before it is parsed; bad YAML and deep nesting are one line each."""
    assert load_yaml("n_steps: 128\nopponents: [smart, turn-ev]") == {
        "n_steps": 128,
        "opponents": ["smart", "turn-ev"],
    }
    big = "# " + "x" * MAX_YAML_BYTES
    started = time.monotonic()
    with pytest.raises(ValueError, match=f"^YAML larger than {MAX_YAML_BYTES} bytes$"):
        load_yaml(big)
    assert time.monotonic() - started < 1
    for bad in ["[8", "a: b: c", "[" * 10_000]:
        with pytest.raises(ValueError) as caught:
            load_yaml(bad)
        assert "\n" not in str(caught.value) and str(caught.value)


def test_sweep_grid_and_sample_values_go_through_the_same_loader():
    """sweep --grid / --sample values are YAML too: an alias bomb is refused in one line."""
    with pytest.raises(ValueError, match="--grid .*: the values are not YAML: YAML anchors"):
        sweep.parse_grid(f"n_steps={alias_bomb()}")
    with pytest.raises(ValueError, match="--sample .*: the values are not YAML: YAML anchors"):
        sweep.parse_sample("n_steps=choice:&a [1],*a")
    assert sweep.parse_grid("learning_rate=1e-4,3e-4") == ("learning_rate", [1e-4, 3e-4])


def test_error_messages_quote_user_values_briefly():
    """No error message repr()s a user's value whole: a value of lists sharing their
    items (what the alias bomb stood for) and a 1 MB text are quoted in BRIEF_CHARS."""
    started = time.monotonic()
    for value in [shared_lists(), "x" * (1 << 20)]:
        with pytest.raises(ValueError) as caught:
            make_config({"n_steps": value}, TrainConfig, "preset p.yaml")
        assert len(str(caught.value)) < BRIEF_CHARS + 100, str(caught.value)[:300]
        with pytest.raises(ValueError) as caught:
            make_config({"opponents": value}, TrainConfig)
        assert len(str(caught.value)) < BRIEF_CHARS + 100
    with pytest.raises(ValueError) as caught:
        parse_params(["n_steps" + "=" * 100_000])
    assert len(str(caught.value)) < BRIEF_CHARS + 100
    assert time.monotonic() - started < 1
    assert brief_repr(["smart", "turn-ev"]) == "['smart', 'turn-ev']"  # short ones as repr


# ------------------------------------------------ item 3: pickled arrays bounded
SHIPPED_2P = ROOT / "checkpoints" / "ppo-2p"
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


@pytest.mark.parametrize("how", ["ndarray", "reconstruct", "state"])
@pytest.mark.parametrize("dtype", ["O", "f8"])
def test_the_data_unpickler_refuses_object_arrays_and_sizes_past_the_bound(how, dtype):
    """Issue 54 item 3: numpy's pickle steps allocate the shape and dtype a pickle
    declares; each is checked first (ForbiddenPickle, nothing allocated)."""
    import pickle

    from fivethousand_rl.agents.neural import ForbiddenPickle, read_data_pickle

    raw = pickle.dumps(ObjectArrayBomb(how, dtype), protocol=4)
    assert len(raw) < 200
    with pytest.raises(ForbiddenPickle):
        read_data_pickle(raw)


def test_the_data_unpickler_refuses_a_dtype_whose_state_was_changed():
    """A BUILD can set a plain dtype's flags to say it holds objects (numpy would then
    read its bytes as pointers): a dtype must have the state numpy gives it."""
    import pickle

    import numpy as np

    from fivethousand_rl.agents.neural import ForbiddenPickle, read_data_pickle

    raw = pickle.dumps(np.zeros(1, dtype="V8"), protocol=4)
    assert read_data_pickle(raw).dtype == np.dtype("V8")
    flags = b"K\x08K\x01K\x00t"  # the dtype state's end: size 8, alignment 1, flags 0
    assert raw.count(flags) == 1
    with pytest.raises(ForbiddenPickle, match="objects or a changed dtype"):
        read_data_pickle(raw.replace(flags, b"K\x08K\x01K?t"))  # flags 63: holds objects


def model_with_last_obs(folder: Path, pickled: bytes) -> Path:
    """The shipped 2-player model.zip with `pickled` as its `_last_obs` setting."""
    import base64
    import json
    import zipfile

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


def test_an_object_array_bomb_in_a_model_zip_is_refused_in_one_line(tmp_path):
    """Issue 54 item 3: a 133-byte pickled object array as a model's _last_obs took
    evaluate to 2.37 GB and a MemoryError traceback."""
    import pickle

    pickled = pickle.dumps(ObjectArrayBomb("reconstruct"), protocol=4)
    path = model_with_last_obs(tmp_path, pickled)
    code, err, peak = run_measured(["evaluate.py", str(path), "random", "--games", "2"], tmp_path)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "_last_obs" in err and "an array" in err, err
    assert peak < RSS_LIMIT, f"peak RSS {peak >> 20} MB"


def test_an_object_array_bomb_in_state_pkl_is_refused_on_resume(tmp_path):
    """Issue 54 item 3: the same pickle in a run's latest/state.pkl took train --resume
    to 2.1 GB; it is refused in one line before the run is touched."""
    import pickle
    import shutil

    run = tmp_path / "run"
    (run / "latest").mkdir(parents=True)
    shutil.copy(SHIPPED_2P / "config.json", run / "config.json")
    shutil.copy(SHIPPED_2P / "model.zip", run / "latest" / "model.zip")
    state = pickle.dumps({"run": ObjectArrayBomb("reconstruct")}, protocol=4)
    (run / "latest" / "state.pkl").write_bytes(state)
    before = sorted(p.name for p in run.rglob("*"))
    code, err, peak = run_measured(
        ["train.py", "--resume", str(run), "--n-timesteps", "512"], tmp_path
    )
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "state.pkl is a pickle of more than data (an array declared" in err, err
    assert peak < RSS_LIMIT, f"peak RSS {peak >> 20} MB"
    assert sorted(p.name for p in run.rglob("*")) == before


# ---------------------------------- item 3: archives bounded, nested ones too
MB = 1 << 20
FLAT = 630 * MB  # the flat bomb: `data` stated 630 MB, 0.6 MB on disk
NESTED = 1 << 30  # a torch record of policy.pth stated 1 GB, 1 MB on disk


def deflated_zeros(size: int) -> tuple[bytes, int]:
    """`size` zero bytes deflated (raw deflate, about 1,000 to 1) and their CRC-32: one
    compressed megabyte repeated, each copy ending in a full flush so that they chain."""
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    megabyte = packer.compress(bytes(MB)) + packer.flush(zlib.Z_FULL_FLUSH)
    whole, rest = divmod(size, MB)
    crc = 0
    for _ in range(whole):
        crc = zlib.crc32(bytes(MB), crc)
    return megabyte * whole + packer.compress(bytes(rest)) + packer.flush(), zlib.crc32(
        bytes(rest), crc
    )


def zip_archive(members: dict[str, bytes | int]) -> bytes:
    """A zip archive of `members`, bytes stored as they are and an int N as N zero bytes
    deflated (a bomb), written by hand: zipfile would compress the gigabyte itself."""
    import struct
    import zlib

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
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(archive)) as old:
        members = {info.filename: old.read(info) for info in old.infolist()}
    return zip_archive({**members, name: content})


def flat_bomb() -> bytes:
    """The shipped model.zip, its settings (`data`) 630 MB of zeros deflated."""
    return replaced((SHIPPED_2P / "model.zip").read_bytes(), "data", FLAT)


def nested_bomb() -> bytes:
    """The shipped model.zip, a record of its policy.pth (a zip: torch's format) 1 GB of
    zeros deflated, which torch's loader allocates and inflates as the zip states."""
    import zipfile

    shipped = (SHIPPED_2P / "model.zip").read_bytes()
    with zipfile.ZipFile(SHIPPED_2P / "model.zip") as archive:
        policy = replaced(archive.read("policy.pth"), "archive/data/0", NESTED)
    return replaced(shipped, "policy.pth", policy)


BOMBS = {"flat": flat_bomb, "nested": nested_bomb}


def checkpoint_state(n_envs: int) -> bytes:
    """A state.pkl that read_checkpoint takes for a run of `n_envs` environments (what
    resume reads before the model)."""
    import pickle

    from fivethousand_rl.agents.training.checkpoint import (
        CHECKPOINT_KEYS,
        MONITOR_FIELDS,
        STATE_KEYS,
    )

    state = {key: None for key in CHECKPOINT_KEYS}
    state |= {"state": dict.fromkeys(STATE_KEYS), "num_timesteps": 0, "env_states": [{}] * n_envs}
    state["monitor"] = {field: [None] * n_envs for field in MONITOR_FIELDS}
    return pickle.dumps(state)


def model_command(entry: str, model: bytes, tmp_path: Path) -> list[str]:
    """The command line of `entry` given the model file `model`, where it takes one."""
    import json

    runs, out = tmp_path / "runs", tmp_path / "out"
    path = tmp_path / "model.zip"
    if entry in ("resume", "ship"):  # a run folder of the shipped agent's config
        path = tmp_path / "run" / ("latest" if entry == "resume" else "best") / "model.zip"
        path.parent.mkdir(parents=True)
        config = json.loads((SHIPPED_2P / "config.json").read_text())
        config.pop("init_from", None)
        (path.parent.parent / "config.json").write_text(json.dumps(config))
        if entry == "resume":
            (path.parent / "state.pkl").write_bytes(checkpoint_state(config["n_envs"]))
    path.write_bytes(model)
    assert path.stat().st_size < 3 * MB
    return {
        "evaluate": ["evaluate.py", str(path), "random", "--games", "2"],
        "play": ["play.py", "--opponents", str(path)],
        "export": ["export.py", str(path), "-o", str(tmp_path / "bot.onnx")],
        "init-from": ["train.py", "--preset", "quick", "--no-progress", "--init-from", str(path)]
        + ["--checkpoints", str(runs)],
        "resume": ["train.py", "--resume", str(path.parent.parent), "--n-timesteps", "512"],
        "ship": ["ship.py", str(path.parent.parent), "--name", "new", "--out", str(out)],
    }[entry]


@pytest.mark.parametrize("entry", ["evaluate", "play", "export", "init-from", "resume", "ship"])
@pytest.mark.parametrize("bomb", BOMBS)
def test_a_zip_bomb_model_is_refused_in_one_line_by_every_command(bomb, entry, tmp_path):
    """Issue 54 item 3: the flat bomb (`data` stated 630 MB) took export to 1.44 GB and
    train --resume to 1.47 GB; the nested one (a deflated record inside policy.pth)
    took the loaders to 1.03 GB. Every command reads model archives through the same
    bounded reading: refused in one line, what the sizes say checked before inflating."""
    (tmp_path / "out").mkdir()
    args = model_command(entry, BOMBS[bomb](), tmp_path)
    code, err, peak = run_measured(args, tmp_path)
    print(f"{bomb} bomb, {entry}: peak RSS {peak >> 20} MB")
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "unpacks to" in err and f"over {256 * MB}" in err, err
    assert bomb == "flat" or "policy.pth" in err, err
    assert peak < RSS_LIMIT, f"peak RSS {peak >> 20} MB"
    assert not (tmp_path / "runs").exists() and not (tmp_path / "bot.onnx").exists()
    assert not list((tmp_path / "out").iterdir())


class StorageBomb:
    """Pickles as the standard pickle writes a tensor's storage (torch.storage's
    _load_from_bytes of a torch file), the file in torch's zip format with its one
    record (data/0) stated 1 GB: torch's loader allocates and inflates it at that size."""

    def __reduce__(self):
        import io

        import torch

        saved = io.BytesIO()
        torch.save(torch.zeros(8, dtype=torch.uint8), saved)
        return (
            torch.storage._load_from_bytes,
            (replaced(saved.getvalue(), "archive/data/0", NESTED),),
        )


@pytest.mark.parametrize("entry", ["resume", "ship"])
def test_a_tensor_storage_bomb_in_state_pkl_is_refused_in_one_line(entry, tmp_path):
    """Issue 54 item 3: a tensor's storage in state.pkl (as the torch RNG state is saved)
    is a torch file of its own; its record sizes are checked before torch allocates
    them (it reached 1.2 GB): refused in one line by train --resume and by ship, which
    reads how far a run in progress is from it."""
    import pickle

    (tmp_path / "out").mkdir()
    args = model_command(entry, (SHIPPED_2P / "model.zip").read_bytes(), tmp_path)
    run = tmp_path / "run"
    (run / "latest").mkdir(exist_ok=True)
    (run / "latest" / "state.pkl").write_bytes(pickle.dumps({"torch_rng": StorageBomb()}))
    assert (run / "latest" / "state.pkl").stat().st_size < 2 * MB
    code, err, peak = run_measured(args, tmp_path)
    print(f"storage bomb in state.pkl, {entry}: peak RSS {peak >> 20} MB")
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "a tensor's storage unpacks to" in err and f"over {256 * MB}" in err, err
    assert peak < RSS_LIMIT, f"peak RSS {peak >> 20} MB"
    assert not list((tmp_path / "out").iterdir())


def test_model_archives_are_read_with_a_bound_whatever_they_state():
    """The one bounded reading (agents.neural): the stated sizes of an archive, and of a
    torch file inside it, checked before anything is inflated; each member read with a
    hard cap; a torch file zipfile cannot read refused, since torch's reader might."""
    import io

    import torch

    from fivethousand_rl.agents.neural import check_torch_file, open_model_archive, read_member

    archive = zip_archive({"data": b"{}", "big": 4 * MB})
    with pytest.raises(ValueError, match=f"^it unpacks to {4 * MB + 2} bytes, over {4 * MB}$"):
        open_model_archive(archive, limit=4 * MB)
    with open_model_archive(archive, limit=5 * MB) as opened:
        assert read_member(opened, "data") == b"{}"
        with pytest.raises(ValueError, match=f"^its big unpacks to more than {MB} bytes$"):
            read_member(opened, "big", limit=MB)
    saved = io.BytesIO()
    torch.save({"w": torch.ones(3)}, saved)
    inner = replaced(saved.getvalue(), "archive/data/0", 2 * MB)
    outer = zip_archive({"data": b"{}", "policy.pth": inner})
    with open_model_archive(outer) as opened:
        with pytest.raises(
            ValueError, match=r"^its policy.pth unpacks to \d+ bytes, over 1048576$"
        ):
            read_member(opened, "policy.pth", limit=MB)
        assert read_member(opened, "data", limit=MB) == b"{}"
    check_torch_file(saved.getvalue(), "w")  # torch's own files pass
    legacy = io.BytesIO()
    torch.save({"w": torch.ones(3)}, legacy, _use_new_zipfile_serialization=False)
    check_torch_file(legacy.getvalue(), "w")  # no zip: bounded by its length (docstring)
    with pytest.raises(ValueError, match=r"^w is a damaged torch file \("):
        check_torch_file(saved.getvalue()[:-30], "w")  # torch's test: a zip, by its start


def test_init_from_loads_the_bytes_it_checked(tmp_path):
    """train --init-from reads the checkpoint once, bounded, and gives SB3 those same
    bytes: the new model holds the shipped model's weights."""
    from fivethousand_rl import train
    from fivethousand_rl.agents.neural import load_sb3
    from fivethousand_rl.agents.training.config import new_run_config, parse_run_args
    from fivethousand_rl.agents.training.model import make_model, make_vec_env

    shipped = SHIPPED_2P / "model.zip"
    argv = ["--preset", "ppo_2p_tune", "--init-from", str(shipped), "--params", "n_envs=1"]
    args, _ = parse_run_args(train.Args, [*argv, "n_steps=64", "batch_size=64"])
    config = new_run_config(args.config, args.params, name_given=False)
    model = make_model(config, make_vec_env(config))
    weights = load_sb3(shipped, config.obs_spec, device="cpu").policy.state_dict()
    assert weights.keys() == model.policy.state_dict().keys()
    for key, tensor in model.policy.state_dict().items():
        assert (tensor == weights[key]).all(), key
