"""Loading a model never runs code from the file (issue 42, item 7): a checkpoint whose
pickled settings (SB3's ":serialized:" fields) and torch members would create a file
when unpickled is either loaded with known values in their place, playing as the
untouched model does, or refused in one line, through make_policy and every command
that takes a model."""

import base64
import json
import pickle
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from benchmarks.hostile import (
    REFUSED,
    SHIPPED_2P,
    Payload,
    code_settings_file,
    refused_file,
    serialized,
)
from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.neural import CheckpointError, SB3Policy
from fivethousand_rl.envs.game import Game


@pytest.fixture
def marker(tmp_path) -> Path:
    return tmp_path / "ran_code_from_the_file"


def test_the_payload_is_live(marker):
    """The payload does create its file when unpickled (so its absence below means
    something), as SB3 would unpickle it: cloudpickle.loads of the base64."""
    import cloudpickle

    cloudpickle.loads(base64.b64decode(serialized(marker)[":serialized:"]))
    assert marker.exists()


def first_move(policy) -> int:
    game = Game(2, seed=0)
    game.roll([1, 5, 5, 2, 3])
    return policy.act(game, np.random.default_rng(0))


def test_pickled_code_settings_are_replaced_and_the_model_plays_the_same(tmp_path, marker):
    """Every pickled class, schedule and space holds the payload (its readable fields,
    which the loader reads, left as they were): the model loads, none of it runs, and it
    plays the same actions as the shipped file; so does its pickled copy."""
    path = code_settings_file(tmp_path, marker)
    policy = make_policy(str(path))
    shipped = make_policy(str(SHIPPED_2P / "model.zip"))
    assert first_move(policy) == first_move(shipped)
    copy = pickle.loads(pickle.dumps(policy))
    assert first_move(copy) == first_move(shipped)
    assert not marker.exists()


@pytest.mark.parametrize("case", REFUSED)
def test_a_pickle_with_no_safe_replacement_is_refused_in_one_line(tmp_path, marker, case):
    path, named = refused_file(tmp_path, marker, case)
    with pytest.raises(CheckpointError) as refusal:
        make_policy(str(path))
    message = str(refusal.value)
    assert "\n" not in message and named in message and str(path) in message
    assert not marker.exists()


def test_a_pickled_policy_loads_its_archive_safely_too(tmp_path, marker):
    """SB3Policy travels as its archive's bytes (subprocess workers): unpickling such a
    copy whose bytes hold a payload refuses it, running nothing."""
    path, _ = refused_file(tmp_path, marker, "data kept as a pickle")
    state = make_policy(str(SHIPPED_2P / "model.zip")).__getstate__()
    state["model"] = path.read_bytes()
    with pytest.raises(CheckpointError, match="_last_obs"):
        SB3Policy.__new__(SB3Policy).__setstate__(state)
    assert not marker.exists()


def test_every_command_that_takes_a_model_runs_none_of_its_code(tmp_path, marker, capsys):
    """evaluate.py, play.py --opponents, export.py, train.py --opponents and ship.py each
    refuse the hostile file in one line (exit 2), creating nothing."""
    from fivethousand_rl import evaluate, export, play, ship, train

    run = tmp_path / "run"
    (run / "best").mkdir(parents=True)
    path, _ = refused_file(run / "best", marker, "data kept as a pickle")
    config = json.loads((SHIPPED_2P / "config.json").read_text())
    config.pop("init_from", None)
    (run / "config.json").write_text(json.dumps(config))
    out = tmp_path / "out"
    out.mkdir()
    commands = {
        "evaluate": lambda: evaluate.main([str(path), "random", "--games", "2"]),
        "play": lambda: play.main(["--opponents", str(path)], ask=lambda _: "q"),
        "export": lambda: export.main([str(path), "-o", str(tmp_path / "bot.onnx")]),
        "train": lambda: train.main(
            ["--opponents", str(path), "--checkpoints", str(tmp_path / "runs")]
        ),
        "ship": lambda: ship.main([str(run), "--name", "new", "--out", str(out)]),
    }
    for name, command in commands.items():
        code = command()
        err = capsys.readouterr().err.strip()
        assert code == 2, name
        assert "_last_obs" in err and len(err.splitlines()) == 1, (name, err)
    assert not marker.exists()
    assert not (tmp_path / "bot.onnx").exists() and not (out / "new").exists()
    shutil.rmtree(run)


def test_a_run_whose_state_pkl_would_run_code_is_refused_on_resume(tmp_path, marker, capsys):
    """train.py --resume reads latest/state.pkl (a pickle) only once it is checked to
    name nothing but data (issue 42, item 7): a payload is refused in one line,
    and the run's own state.pkl resumes (tests/test_train.py resumes it exactly)."""
    from fivethousand_rl import ship, train
    from fivethousand_rl.agents.neural import read_data_pickle

    tiny = ["--preset", "quick", "--no-progress", "--params", "n_envs=2", "n_steps=128"]
    tiny += ["batch_size=128", "eval_freq=256", "eval_episodes=2", "checkpoint_freq=256"]
    tiny += ["eval_opponents=[smart]", "opponents=[smart]", "torch_threads=1"]
    tiny += ["state_layers=[8]", "scorer_layers=[8]", "critic_layers=[8]"]
    assert train.main(["--n-timesteps", "256", *tiny, "--checkpoints", str(tmp_path)]) == 0
    run = tmp_path / "quick_free_seed0"
    state = run / "latest" / "state.pkl"
    saved = pickle.loads(state.read_bytes())
    assert read_data_pickle(state.read_bytes()).keys() == saved.keys()
    capsys.readouterr()
    state.write_bytes(pickle.dumps({**saved, "monitor": Payload(marker)}))
    assert train.main(["--resume", str(run), "--n-timesteps", "512"]) == 2
    err = capsys.readouterr().err.strip()
    assert "state.pkl" in err and "it names io.open" in err and len(err.splitlines()) == 1
    assert not marker.exists()
    out = tmp_path / "out"
    out.mkdir()
    (run / "summary.json").unlink()  # a run in progress: ship reads how far from state.pkl
    assert ship.main([str(run), "--name", "new", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "state.pkl" in err and "io.open" in err and len(err.splitlines()) == 1
    assert not marker.exists() and not (out / "new").exists()


def test_model_files_that_are_no_plain_file_or_too_big_are_refused_unread(tmp_path, monkeypatch):
    """Issue 42 (deliver 4): a FIFO named as a model would block its reader, a device
    never ends, and an archive may unpack to far more than its size: each is refused in
    one line naming the file, before any loader reads it."""
    import os

    from fivethousand_rl.agents import base

    fifo = tmp_path / "model.zip"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a plain file") as e:
        make_policy(str(fifo))
    assert str(fifo) in str(e.value) and "\n" not in str(e.value)
    shipped = SHIPPED_2P / "model.zip"
    size = shipped.stat().st_size
    monkeypatch.setattr(base, "MAX_MODEL_BYTES", size - 1)
    with pytest.raises(ValueError, match=f"larger than {size - 1} bytes"):
        make_policy(str(shipped))
    bomb = tmp_path / "bomb.zip"  # 4 MB of zeros that take a few kB on disk
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("data", b"\0" * (4 << 20))
    assert bomb.stat().st_size < size - 1
    with pytest.raises(ValueError, match=f"it unpacks to {4 << 20} bytes, over {size - 1}"):
        make_policy(str(bomb))
    monkeypatch.setattr(base, "MAX_MODEL_BYTES", size)
    assert make_policy(str(shipped)).name  # at the bound: loads
