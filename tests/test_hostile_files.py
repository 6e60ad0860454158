"""Issue 54 (deliver 3): no small file a user hands a command blows up memory. Each
hostile file goes through the real command line in a child process whose peak resident
memory is measured (VmHWM): it is refused in one line, exit 2, well under 500 MB."""

from __future__ import annotations

import pickle
import shutil
import time
from pathlib import Path

import pytest

from benchmarks.hostile import (
    MB,
    RSS_LIMIT,
    SHIPPED_2P,
    ObjectArrayBomb,
    StorageBomb,
    alias_bomb,
    flat_bomb,
    model_with_last_obs,
    nested_bomb,
    object_array_pickle,
    replaced,
    run_folder,
    run_measured,
    ship_run,
    zip_archive,
)
from fivethousand_rl import sweep
from fivethousand_rl.agents.base import BRIEF_CHARS, brief_repr
from fivethousand_rl.agents.training.config import (
    MAX_YAML_BYTES,
    TrainConfig,
    load_yaml,
    make_config,
    parse_params,
)

FLAT = 630 * MB  # the flat bomb: `data` stated 630 MB, 0.6 MB on disk
NESTED = 1 << 30  # a torch record of policy.pth stated 1 GB, 1 MB on disk
BOMBS = {"flat": lambda: flat_bomb(FLAT), "nested": lambda: nested_bomb(NESTED)}


def refused_in_one_line(args: list[str], folder: Path) -> str:
    """The stderr of `python ARGS` run from the clone in a child process, checked to be a
    one-line refusal (exit 2, no traceback) at a peak RSS under RSS_LIMIT."""
    m = run_measured(args, folder)
    print(f"{args[0]}: peak RSS {m.peak >> 20} MB {m.why_killed}")
    assert m.code == 2, m.why_killed or m.err
    assert len(m.err.strip().splitlines()) == 1 and "Traceback" not in m.err, m.err
    assert m.peak < RSS_LIMIT, f"peak RSS {m.peak >> 20} MB"
    return m.err


def shared_lists(levels: int = 9) -> list:
    """The value the alias bomb stands for, as PyYAML built it: lists sharing their items."""
    value: list = ["lol"] * 9
    for _ in range(levels):
        value = [value] * 9
    return value


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
    err = refused_in_one_line([*args, "--checkpoints", str(tmp_path / "runs")], tmp_path)
    assert "YAML anchors and aliases (&, *) are not accepted" in err
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
@pytest.mark.parametrize("how", ["ndarray", "reconstruct", "state"])
@pytest.mark.parametrize("dtype", ["O", "f8"])
def test_the_data_unpickler_refuses_object_arrays_and_sizes_past_the_bound(how, dtype):
    """Issue 54 item 3: numpy's pickle steps allocate the shape and dtype a pickle
    declares; each is checked first (ForbiddenPickle, nothing allocated)."""
    from fivethousand_rl.agents.neural import ForbiddenPickle, read_data_pickle

    raw = pickle.dumps(ObjectArrayBomb(how, dtype), protocol=4)
    assert len(raw) < 200
    with pytest.raises(ForbiddenPickle):
        read_data_pickle(raw)


def test_the_data_unpickler_refuses_a_dtype_whose_state_was_changed():
    """A BUILD can set a plain dtype's flags to say it holds objects (numpy would then
    read its bytes as pointers): a dtype must have the state numpy gives it."""
    import numpy as np

    from fivethousand_rl.agents.neural import ForbiddenPickle, read_data_pickle

    raw = pickle.dumps(np.zeros(1, dtype="V8"), protocol=4)
    assert read_data_pickle(raw).dtype == np.dtype("V8")
    flags = b"K\x08K\x01K\x00t"  # the dtype state's end: size 8, alignment 1, flags 0
    assert raw.count(flags) == 1
    with pytest.raises(ForbiddenPickle, match="objects or a changed dtype"):
        read_data_pickle(raw.replace(flags, b"K\x08K\x01K?t"))  # flags 63: holds objects


def test_an_object_array_bomb_in_a_model_zip_is_refused_in_one_line(tmp_path):
    """Issue 54 item 3: a 133-byte pickled object array as a model's _last_obs took
    evaluate to 2.37 GB and a MemoryError traceback."""
    path = model_with_last_obs(tmp_path, object_array_pickle())
    err = refused_in_one_line(["evaluate.py", str(path), "random", "--games", "2"], tmp_path)
    assert "_last_obs" in err and "an array" in err, err


def test_an_object_array_bomb_in_state_pkl_is_refused_on_resume(tmp_path):
    """Issue 54 item 3: the same pickle in a run's latest/state.pkl took train --resume
    to 2.1 GB; it is refused in one line before the run is touched."""
    state = pickle.dumps({"run": ObjectArrayBomb("reconstruct")}, protocol=4)
    run = run_folder(tmp_path / "run", state=state)
    before = sorted(p.name for p in run.rglob("*"))
    args = ["train.py", "--resume", str(run), "--n-timesteps", "512"]
    err = refused_in_one_line(args, tmp_path)
    assert "state.pkl is a pickle of more than data (an array declared" in err, err
    assert sorted(p.name for p in run.rglob("*")) == before


# ---------------------------------- item 3: archives bounded, nested ones too
def model_command(entry: str, model: bytes, tmp_path: Path) -> list[str]:
    """The command line of `entry` given the model file `model`, where it takes one (in
    a run folder of the shipped agent's config for train --resume and ship)."""
    path = tmp_path / "model.zip"
    path.write_bytes(model)
    assert path.stat().st_size < 3 * MB
    run = tmp_path / "run"
    if entry in ("resume", "ship"):
        (run_folder if entry == "resume" else ship_run)(run, path)
    return {
        "evaluate": ["evaluate.py", str(path), "random", "--games", "2"],
        "play": ["play.py", "--opponents", str(path)],
        "export": ["export.py", str(path), "-o", str(tmp_path / "bot.onnx")],
        "init-from": ["train.py", "--preset", "quick", "--no-progress", "--init-from", str(path)]
        + ["--checkpoints", str(tmp_path / "runs")],
        "resume": ["train.py", "--resume", str(run), "--n-timesteps", "512"],
        "ship": ["ship.py", str(run), "--name", "new", "--out", str(tmp_path / "out")],
    }[entry]


@pytest.mark.parametrize("entry", ["evaluate", "play", "export", "init-from", "resume", "ship"])
@pytest.mark.parametrize("bomb", BOMBS)
def test_a_zip_bomb_model_is_refused_in_one_line_by_every_command(bomb, entry, tmp_path):
    """Issue 54 item 3: the flat bomb (`data` stated 630 MB) took export to 1.44 GB and
    train --resume to 1.47 GB; the nested one (a deflated record inside policy.pth)
    took the loaders to 1.03 GB. Every command reads model archives through the same
    bounded reading: refused in one line, what the sizes say checked before inflating."""
    (tmp_path / "out").mkdir()
    err = refused_in_one_line(model_command(entry, BOMBS[bomb](), tmp_path), tmp_path)
    assert "unpacks to" in err and f"over {256 * MB}" in err, err
    assert bomb == "flat" or "policy.pth" in err, err
    assert not (tmp_path / "runs").exists() and not (tmp_path / "bot.onnx").exists()
    assert not list((tmp_path / "out").iterdir())


@pytest.mark.parametrize("entry", ["resume", "ship"])
def test_a_tensor_storage_bomb_in_state_pkl_is_refused_in_one_line(entry, tmp_path):
    """Issue 54 item 3: a tensor's storage in state.pkl (as the torch RNG state is saved)
    is a torch file of its own; its record sizes are checked before torch allocates
    them (it reached 1.2 GB): refused in one line by train --resume and by ship, which
    reads how far a run in progress (no summary.json) is from it."""
    (tmp_path / "out").mkdir()
    run = run_folder(tmp_path / "run", state=pickle.dumps({"torch_rng": StorageBomb(NESTED)}))
    assert (run / "latest" / "state.pkl").stat().st_size < 2 * MB
    args = ["train.py", "--resume", str(run), "--n-timesteps", "512"]
    if entry == "ship":
        (run / "best").mkdir()
        shutil.copy(SHIPPED_2P / "model.zip", run / "best" / "model.zip")
        args = ["ship.py", str(run), "--name", "new", "--out", str(tmp_path / "out")]
    err = refused_in_one_line(args, tmp_path)
    assert "a tensor's storage unpacks to" in err and f"over {256 * MB}" in err, err
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
