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
