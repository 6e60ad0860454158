"""Issue 54 item 7, the smaller points: numeric flags refused in one line naming the flag
(no usage block); outputs on a full disk whole or absent."""

from __future__ import annotations

import builtins
import io
import json
import socket

import pytest

from benchmarks.hostile import full_disk_open
from fivethousand_rl import demo, evaluate, export, ship
from fivethousand_rl.webplay import __main__ as server
from tests.helpers import raw_error_answer

BAD_NUMBERS = ["nan", "inf", "-1", "1e309"]


def refusal(main, argv: list[str], capsys) -> str:
    """The one line `main` prints refusing `argv` (exit 2, by argparse or by its checks)."""
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "usage" not in err, err
    return err


@pytest.mark.parametrize("value", BAD_NUMBERS)
@pytest.mark.parametrize("flag", ["--games", "--players", "--seed", "--workers", "--max-turns"])
def test_evaluate_refuses_a_bad_number_in_one_line_naming_the_flag(flag, value, capsys):
    err = refusal(evaluate.main, ["random", "random", flag, value], capsys)
    assert flag in err


# The other programs' numeric flags, each with the arguments it needs to get that far.
OTHER_NUMBERS = [
    (export.main, ["ppo-2p", "--out", "bundle"], "--vectors"),
    (export.main, ["ppo-2p", "--out", "bundle"], "--seed"),
    (ship.main, ["run", "--name", "x"], "--games"),
    (ship.main, ["run", "--name", "x"], "--workers"),
    (ship.main, ["run", "--name", "x"], "--seed"),
    (demo.main, [], "--games"),
    (demo.main, [], "--workers"),
    (demo.main, [], "--seed"),
    (demo.main, ["--watch"], "--seed"),
    (demo.main, ["--watch"], "--delay"),
    (demo.main, ["--watch"], "--max-turns"),
]


@pytest.mark.parametrize("value", BAD_NUMBERS)
@pytest.mark.parametrize(
    "main, before, flag",
    OTHER_NUMBERS,
    ids=[f"{m.__module__.rsplit('.')[-1]} {' '.join([*b[-1:], f])}" for m, b, f in OTHER_NUMBERS],
)
def test_export_ship_and_demo_refuse_a_bad_number_in_one_line(
    main, before, flag, value, tmp_path, monkeypatch, capsys
):
    """The same one-line parser as evaluate's, before any work (a refusal that came
    after it would find no run, no training extra, or write a bundle)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(demo, "train_and_evaluate", lambda *a: pytest.fail("trained"))
    err = refusal(main, [*before, flag, value], capsys)
    assert flag in err and err.startswith("error: "), err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", BAD_NUMBERS)
@pytest.mark.parametrize("flag", ["--target", "--entry"])
def test_the_rule_flags_refuse_a_bad_number_in_one_line(flag, value, capsys):
    err = refusal(evaluate.main, ["random", "random", flag, value], capsys)
    assert flag.strip("-") in err  # argparse names the flag, Rules the field


@pytest.mark.parametrize("value", BAD_NUMBERS)
@pytest.mark.parametrize(
    "flag",
    ["--port", "--max-games", "--per-address", "--keep-idle", "--grace", "--cache-max-mb"]
    + ["--max-work", "--max-work-per-address"],
)
def test_the_server_refuses_a_bad_number_in_one_line_naming_the_flag(flag, value, capsys):
    port = [] if flag == "--port" else ["--port", "1"]  # refused before it listens
    assert flag in refusal(server.main, [*port, flag, value], capsys)


@pytest.mark.parametrize(
    "spec", ["smart@", "smart@x", "smart@nan", "smart@inf", "smart@0", "smart@-1"]
)
def test_an_opponent_weight_that_is_empty_or_not_a_positive_number_is_refused(spec):
    from fivethousand_rl.agents.training.config import parse_opponents

    with pytest.raises(ValueError, match="opponent weight") as refused:
        parse_opponents([spec])
    assert "\n" not in str(refused.value)
    assert parse_opponents(["smart@2", "turn-ev"]) == [("smart", 2.0), ("turn-ev", 1.0)]


def full_disk(monkeypatch) -> None:
    """Every file opened for writing from now on is made, but writing to it fails with
    ENOSPC, as on a full disk (hostile.full_disk_open)."""
    opened = full_disk_open(builtins.open)
    monkeypatch.setattr(builtins, "open", opened)
    monkeypatch.setattr(io, "open", opened)


def test_evaluate_outputs_on_a_full_disk_leave_no_file_and_say_it_in_one_line(
    tmp_path, monkeypatch, capsys
):
    """Issue 54 item 7: a full disk left zero-byte outputs; now each output is whole or
    absent, an older one is kept as it was, and each failure is one line (exit 1)."""
    (tmp_path / "old.json").write_text('{"kept": true}')
    outputs = {"--json": "old.json", "--csv": "r.csv", "--markdown": "r.md", "--plot": "r.png"}
    argv = ["random", "smart", "--games", "4", "--per-game"]
    argv += [arg for flag, name in outputs.items() for arg in (flag, str(tmp_path / name))]
    full_disk(monkeypatch)
    assert evaluate.main(argv) == 1
    monkeypatch.undo()
    err = capsys.readouterr().err
    refusals = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(refusals) == len(outputs) and "Traceback" not in err, err
    assert all(line.endswith("No space left on device") for line in refusals), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json"]  # no temporary left
    assert (tmp_path / "old.json").read_text() == '{"kept": true}'


@pytest.mark.parametrize("old", [b"the older picture", None])
def test_a_plot_saved_onto_a_full_disk_leaves_no_partial_file(old, tmp_path, monkeypatch):
    """Issue 54 item 7: ``figure`` (every plot of the tools: ship's curves and evaluations,
    sweep, the solver's and the equilibrium's pictures) saved in place, so a full disk
    left a zero-byte picture; now a failed save raises and leaves the older file as it
    was, or none, and no temporary."""
    import matplotlib.pyplot as plt

    from fivethousand_rl.agents.base import figure

    path = tmp_path / "curve.png"
    if old is not None:
        path.write_bytes(old)
    with pytest.raises(OSError, match="No space left"), figure(path) as (_, ax):
        ax.plot([0, 1], [1, 0])
        full_disk(monkeypatch)  # once matplotlib is set up: its font cache is written too
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == ([path.name] if old else [])
    assert old is None or path.read_bytes() == old
    assert plt.get_fignums() == []  # closed all the same
    with figure(tmp_path / "no_suffix") as (_, ax):  # the format is still the name's (png)
        ax.plot([0, 1], [1, 0])
    assert (tmp_path / "no_suffix").read_bytes().startswith(b"\x89PNG")


def test_sweep_results_on_a_full_disk_keep_the_older_ones(tmp_path, monkeypatch):
    """Issue 54 item 7: sweep's results.csv and results.md were written in place (a full
    disk left them empty); now each is whole or the older one is kept, no temporary."""
    from fivethousand_rl import sweep

    rows = [{"trial": "0", "lr": 1e-4, "status": "done", "steps": 10, "run": "r"}]
    rows[0] |= {"best_win_rate": 0.5, "best_at_steps": 10, "last_win_rate": 0.4}
    sweep.write_results(tmp_path, rows, ["lr"])
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert sorted(before) == ["results.csv", "results.md"] and all(before.values())
    full_disk(monkeypatch)
    with pytest.raises(OSError, match="No space left"):
        sweep.write_results(tmp_path, [*rows, {**rows[0], "trial": "1"}], ["lr"])
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


@pytest.mark.parametrize(
    "head",
    [
        b"GET /api/bots HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n",
        b"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n",
        b"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\n"
        b"Content-Length: 2\r\n\r\n",
    ],
    ids=["two Host headers", "Content-Length not a number", "two Content-Lengths"],
)
def test_a_request_the_http_parser_refuses_gets_the_security_headers(head, tmp_path):
    """Issue 54 item 7: h11 refuses these before the app sees them, and uvicorn answered
    a bare text 400; now it is the app's JSON error with the security headers."""
    pytest.importorskip("fastapi", reason="the web app needs fastapi (dev extras)")
    from fivethousand_rl.webplay.app import create_app
    from tests.test_webplay_stall import served

    app = create_app(tmp_path)
    try:
        with served(app) as port, socket.create_connection(("127.0.0.1", port), 10) as sock:
            sock.sendall(head)
            answer = b""
            while chunk := sock.recv(65536):  # the server closes the connection after it
                answer += chunk
    finally:
        app.state.store.close()
    assert raw_error_answer(answer, 400) == {"error": "invalid HTTP request"}


def test_a_terminal_save_and_log_on_a_full_disk_leave_the_older_ones_whole(tmp_path, monkeypatch):
    """Issue 54 item 7: play's save (and its game log) written over an older one on a
    full disk: the write fails (OSError, which play reports in one line) and the older
    file is as it was, not emptied."""
    from fivethousand_rl.agents import terminal
    from fivethousand_rl.envs.game import Game

    session = terminal.Session(Game(2, seed=0), ["you", "smart"], 0, 0)
    for write, name in ((terminal.save, "g.json"), (terminal.write_log, "g.log.json")):
        path = tmp_path / name
        write(session, str(path))
        older = path.read_bytes()
        full_disk(monkeypatch)
        with pytest.raises(OSError, match="No space left"):
            write(session, str(path))
        monkeypatch.undo()
        assert path.read_bytes() == older and json.loads(older)
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            {name, "g.json"}
        )  # no temporary left beside it
