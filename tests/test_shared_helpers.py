"""The one-of-each helpers every layer shares (issue 29 item 4): the atomic write, the
duration shown to people, the player-count bound (R11) and the turn-order rotation."""

import os
import stat
import sys

import numpy as np
import pytest

from fivethousand_rl.agents.base import atomic_write, duration, program
from fivethousand_rl.envs.game import MAX_PLAYERS, MIN_PLAYERS, check_players, in_turn_order


@pytest.mark.parametrize(
    "seconds, text",
    [
        (0.0, "<1 s"),
        (0.3, "<1 s"),
        (0.5, "1 s"),
        (7.4, "7 s"),
        (59.6, "1 min"),
        (125, "2 min 5 s"),
        (1800, "30 min"),
        (3725, "1 h 2 min"),
        (3600 * 5, "5 h"),
        (86400, "1 day"),
        (86400 + 60, "1 day"),
        (2 * 86400 + 3600, "2 days 1 h"),
        (7 * 86400, "7 days"),
        (7 * 86400 + 3 * 3600 + 59, "7 days 3 h"),
    ],
)
def test_duration(seconds, text):
    assert duration(seconds) == text


def test_atomic_write_text_bytes_and_writer(tmp_path):
    atomic_write(tmp_path / "a.json", '{"x": 1}')
    atomic_write(tmp_path / "sub" / "b.bin", b"\x00\x01")
    # a writer that adds its own suffix (np.savez) is given a name that already ends in it
    atomic_write(tmp_path / "c.npz", lambda name: np.savez(name, x=np.arange(3)))
    assert (tmp_path / "a.json").read_text() == '{"x": 1}'
    assert (tmp_path / "sub" / "b.bin").read_bytes() == b"\x00\x01"
    assert np.load(tmp_path / "c.npz")["x"].tolist() == [0, 1, 2]
    assert sorted(os.listdir(tmp_path)) == ["a.json", "c.npz", "sub"]  # nothing left aside
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o644


def test_atomic_write_keeps_the_replaced_files_mode(tmp_path):
    path = tmp_path / "private.json"
    path.write_text("old")
    path.chmod(0o600)
    atomic_write(path, "new")
    assert path.read_text() == "new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_atomic_write_failure_leaves_the_old_file_and_no_debris(tmp_path):
    path = tmp_path / "model.zip"
    path.write_bytes(b"old")

    def half_then_fail(name):
        with open(name, "wb") as f:
            f.write(b"half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(path, half_then_fail)
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["model.zip"]


@pytest.mark.parametrize("n", range(MIN_PLAYERS, MAX_PLAYERS + 1))
def test_check_players_accepts_every_table_size_of_r11(n):
    assert check_players(n) == n
    assert check_players(np.int64(n)) == n


@pytest.mark.parametrize("bad", [0, 1, MAX_PLAYERS + 1, -2, True, 2.0, "3", None])
def test_check_players_refuses_in_one_line(bad):
    with pytest.raises(ValueError, match=r"^players must be 2\.\.8, got ") as info:
        check_players(bad, "players")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "scores, first, order",
    [
        ([500, 0], 0, (500, 0)),
        ([500, 0], 1, (0, 500)),
        ([100, 200, 300, 400], 2, (300, 400, 100, 200)),
        ((100, 200, 300), 3 - 1, (300, 100, 200)),
    ],
)
def test_in_turn_order_puts_the_mover_first_then_playing_order(scores, first, order):
    assert in_turn_order(scores, first) == order


@pytest.mark.parametrize(
    ("argv0", "name", "shown"),
    [
        ("train.py", "train", "python train.py"),
        ("/x/.venv/bin/fivethousand", "train", "fivethousand train"),
        ("train_planner.py", "train-planner", "python train_planner.py"),
        ("/usr/local/bin/fivethousand", "train-planner", "fivethousand train-planner"),
        ("-c", "play", "python play.py"),
    ],
)
def test_a_printed_command_names_the_program_as_the_user_runs_it(argv0, name, shown, monkeypatch):
    """Issue 30: a wheel has no train.py; under the installed command, the commands a
    tool prints (resume, play against it) are `fivethousand ...`."""
    monkeypatch.setattr(sys, "argv", [argv0])
    assert program(name) == shown
