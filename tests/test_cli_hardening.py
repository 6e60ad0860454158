"""Issue 28 items 8 and 11: the training, sweep and export commands refuse what they
cannot do (an unwritable runs folder, another script's preset, a file nested too deeply,
a wrong .npz) in one line before any work, train_planner.py takes --params, and
``python -m agents.optimal`` runs without runpy's warning. Issue 42 items 5, 6 and 8:
files read with a bound, rule values within the solver's memory, every argument checked
before long work, non-finite value nets and missing output parents refused."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from fivethousand_rl import demo, evaluate, export, play, ship, sweep, train, train_planner
from fivethousand_rl.agents import exporting, ray_tools, shipping, terminal
from fivethousand_rl.agents.shipped import shipped_folder
from fivethousand_rl.agents.training import checkpoint
from fivethousand_rl.agents.training.config import (
    PlannerConfig,
    TrainConfig,
    parse_run_args,
    read_config_json,
)
from fivethousand_rl.agents.value_net import KIND, ValueNet
from fivethousand_rl.envs.rules import MAX_TARGET, Rules, check_target_bound

ROOT = Path(__file__).resolve().parent.parent
SHIPPED_NET = shipped_folder("planner-2p") / "value_net.npz"
SCRIPTS = {"train.py": train.main, "train_planner.py": train_planner.main, "sweep.py": sweep.main}
# Small runs, so that a command which failed to refuse (the old code) ends quickly.
SMALL = {
    "train.py": ["--preset", "quick", "--no-progress", "--n-timesteps", "256", "--params"]
    + ["n_envs=2", "n_steps=128", "batch_size=128", "eval_freq=0", "checkpoint_freq=256"],
    "train_planner.py": ["--target", "1000", "--entry", "300", "--hidden", "8"]
    + ["--iterations", "1", "--games-per-iteration", "1", "--fit-steps", "1"]
    + ["--eval-freq", "0", "--eval-games", "2", "--eval-tables", "threshold:300", "--no-progress"],
    "sweep.py": ["--grid", "learning_rate=1e-4,1e-3", "--no-progress"],
}


def files(folder: Path) -> list[tuple[str, bytes]]:
    """Every file under `folder` with its bytes (to show that nothing was written)."""
    return [(str(p), p.read_bytes()) for p in sorted(folder.rglob("*")) if p.is_file()]


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err, err
    return err


# ------------------------------------------------------------ item 8: unwritable folders
@pytest.fixture
def deny_writes(monkeypatch):
    """Folders made unwritable as os.access sees them: chmod 0o500 does not stop root,
    whom the tests may run as. Returns a function that adds a folder."""
    denied: list[Path] = []
    access = os.access

    def patched(path, mode, **kwargs):
        named = isinstance(path, str | os.PathLike)  # not a file descriptor
        if mode & os.W_OK and named and Path(path).resolve() in denied:
            return False
        return access(path, mode, **kwargs)

    monkeypatch.setattr(os, "access", patched)
    return lambda folder: denied.append(Path(folder).resolve())


def saved_run(script: str, folder: Path) -> None:
    """A run (or sweep) folder as far as --resume first looks at it."""
    folder.mkdir(parents=True)
    if script == "sweep.py":
        (folder / "sweep.json").write_text("{}")
        return
    config = TrainConfig(run_name=folder.name) if script == "train.py" else PlannerConfig()
    (folder / "config.json").write_text(json.dumps(dataclasses.asdict(config)))


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("case", ["under a file", "read-only runs folder", "read-only resume"])
def test_an_unwritable_folder_is_refused_before_any_work(
    script, case, tmp_path, capsys, monkeypatch, deny_writes
):
    """Issue 28 item 8: these crashed with a traceback once they first wrote (sweep.py
    after starting Ray); now one line, exit 2, nothing written, Ray not started."""
    monkeypatch.setattr(ray_tools, "session", lambda *a, **k: pytest.fail("Ray started"))
    (tmp_path / "a-file").write_text("")
    runs = tmp_path / "runs"
    runs.mkdir()
    if case == "under a file":  # a folder that cannot be made, whoever runs the test
        argv = [*SMALL[script], "--checkpoints", str(tmp_path / "a-file" / "runs")]
        blocked = tmp_path / "a-file"
    elif case == "read-only runs folder":
        argv, blocked = [*SMALL[script], "--checkpoints", str(runs)], runs
        deny_writes(runs)
    else:
        blocked = runs / "sweeps" / "s" if script == "sweep.py" else runs / "r"
        saved_run(script, blocked)
        argv = ["--resume", str(blocked), "--checkpoints", str(runs)]
        deny_writes(blocked)
    before = files(tmp_path)
    assert SCRIPTS[script](argv) == 2
    assert f"{blocked} is not a writable folder" in one_line_error(capsys)
    assert files(tmp_path) == before


# ------------------------------------------------------------ item 11: presets and --params
@pytest.mark.parametrize(
    "script, preset, advice",
    [
        ("train.py", "planner_2p", "python train_planner.py --preset planner_2p"),
        ("train.py", "planner_multi", "python train_planner.py --preset planner_multi"),
        ("sweep.py", "planner_2p", "python train_planner.py --preset planner_2p"),
        ("train_planner.py", "quick", "python train.py --preset quick"),
        ("train_planner.py", "ppo_2p", "python train.py --preset ppo_2p"),
    ],
)
def test_a_preset_of_the_other_training_script_says_whose_it_is(
    script, preset, advice, tmp_path, capsys
):
    """Issue 28 item 11: train.py --preset planner_2p said "players must be an integer,
    got [2]"."""
    argv = ["--preset", preset, "--checkpoints", str(tmp_path)]
    argv += ["--grid", "learning_rate=1e-4,1e-3"] if script == "sweep.py" else []
    assert SCRIPTS[script](argv) == 2
    assert advice in one_line_error(capsys)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--params", "iterations=7"], {"iterations": 7}),
        (["--iterations", "5", "--params", "iterations=7"], {"iterations": 7}),  # last wins
        (
            ["--params", "learning_rate=1e-3", "epsilon=0.2"],
            {"learning_rate": 1e-3, "epsilon": 0.2},
        ),
        (
            ["--params", "hidden=[8, 4]", "opponents=[smart]"],
            {"hidden": [8, 4], "opponents": ["smart"]},
        ),
        (["--preset", "planner_2p", "--params", "fit_steps=9"], {"fit_steps": 9, "iterations": 60}),
    ],
)
def test_train_planner_takes_params_last(argv, expected, tmp_path):
    """Issue 28 item 11: train_planner.py had no --params (train.py's, shared)."""
    quick = ["--eval-tables", "threshold:300"]  # the default tables load a PPO model: seconds
    args, given = parse_run_args(
        train_planner.Args, [*argv, *quick, "--checkpoints", str(tmp_path)]
    )
    config = train_planner.prepare(args, given)[0]
    assert {key: getattr(config, key) for key in expected} == expected


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--params", "iterations"], "--params takes KEY=VALUE"),
        (["--params", "iterations=x"], "--params: iterations must be an integer, got 'x'"),
        (["--params", "iterations=1.5"], "--params: iterations must be an integer"),
        (["--params", "players=2"], "--params: players must be a list of integers"),
        (["--params", "colour=red"], "--params: unknown key 'colour'"),
        (["--params", "hidden=[8"], "the value is not a YAML scalar or list"),
        (["--params", "eval_freq=-1"], "eval_freq"),
    ],
)
def test_bad_planner_params_are_one_line_with_nothing_written(argv, message, tmp_path, capsys):
    """Issue 28 item 11: --params checked like every other planner setting."""
    assert train_planner.main([*argv, "--checkpoints", str(tmp_path)]) == 2
    assert message in one_line_error(capsys)
    assert not any(tmp_path.iterdir())


def test_resume_refuses_params(tmp_path, capsys):
    saved_run("train_planner.py", tmp_path / "r")
    assert train_planner.main(["--resume", str(tmp_path / "r"), "--params", "iterations=9"]) == 2
    assert "takes only" in one_line_error(capsys)


# ------------------------------------------------------------ item 11: python -m
@pytest.mark.parametrize(
    "module", ["fivethousand_rl.agents.optimal", "fivethousand_rl.agents.regret"]
)
def test_python_m_runs_without_runpy_warning(module):
    """Issue 28 item 11: `python -m agents.optimal` warned that agents.optimal was in
    sys.modules before it ran (agents imports it); now the command is its __main__."""
    result = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-m", module, "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert result.stdout.startswith("usage: ")


# ------------------------------------------------------------ item 11: deep JSON and YAML
DEEP = "[" * 100_000 + "]" * 100_000  # json.loads recurses once per bracket (in C: fast)
# PyYAML recurses twice per bracket, in Python, and slows down with the depth: 600 is
# past the recursion limit (1000 frames) and takes a fraction of a second.
DEEP_YAML = "[" * 600 + "]" * 600


def deep_sweep(tmp_path: Path) -> None:
    saved_run("sweep.py", tmp_path / "sweeps" / "s")
    (tmp_path / "sweeps" / "s" / "sweep.json").write_text(DEEP)
    assert sweep.main(["--resume", "s", "--checkpoints", str(tmp_path)]) == 2


def deep_config(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(DEEP)
    read_config_json(tmp_path / "config.json")


def deep_export_config(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(DEEP)
    exporting.run_config(tmp_path / "model.zip")


def deep_preset(tmp_path: Path) -> None:
    (tmp_path / "deep.yaml").write_text(DEEP_YAML)
    assert (
        train.main(["--preset", str(tmp_path / "deep.yaml"), "--checkpoints", str(tmp_path)]) == 2
    )


def deep_params(tmp_path: Path) -> None:
    assert train.main(["--params", f"opponents={DEEP_YAML}", "--checkpoints", str(tmp_path)]) == 2


@pytest.mark.parametrize(
    "load", [deep_sweep, deep_config, deep_export_config, deep_preset, deep_params]
)
def test_files_nested_too_deeply_are_one_line_errors(load, tmp_path, capsys):
    """Issue 28 item 11: json.loads and yaml.safe_load raise RecursionError on deep
    nesting; each loader now turns it into its one-line ValueError."""
    try:
        load(tmp_path)
    except ValueError as e:  # the library loaders raise; the commands print and exit 2
        assert "\n" not in str(e)
    else:
        one_line_error(capsys)


# ------------------------------------------------------------ item 11: one wording for a .npz
def write_npz(kind: str, path: Path) -> None:
    """A file named .npz that is not what it should be."""
    if kind == "text":
        path.write_text("not an archive")
    elif kind == "foreign zip":
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("notes.txt", "hello")
    elif kind == "foreign npz":
        np.savez(path, weights=np.zeros(3))
    elif kind == "unknown kind":
        np.savez(path, meta=np.array(json.dumps({"kind": "alien"})))
    elif kind == "empty value net":
        np.savez(path, meta=np.array(json.dumps({"kind": KIND})))


@pytest.mark.parametrize(
    "kind", ["missing", "text", "foreign zip", "foreign npz", "unknown kind", "empty value net"]
)
def test_export_and_evaluate_describe_a_wrong_npz_alike(kind, tmp_path, capsys):
    """Issue 28 item 11: export.py called every .npz that is no value net "a self-play
    snapshot"; now both commands say what the loader says, in the same line."""
    path = tmp_path / "bot.npz"
    write_npz(kind, path)
    before = files(tmp_path)
    assert export.main([str(path), "-o", str(tmp_path / "bot.onnx")]) == 2
    exported = one_line_error(capsys)
    assert evaluate.main([str(path), "smart", "--games", "2"]) == 2
    assert one_line_error(capsys) == exported
    assert "self-play snapshot, which cannot be exported" not in exported
    assert files(tmp_path) == before


# ============================================================ issue 42: items 5, 6 and 8
def not_a_plain_file(tmp_path: Path, kind: str) -> Path:
    """A file a command must refuse to read: a device, a FIFO (whose open would wait for
    a writer for ever), or a plain file past the limit (sparse: no disk used)."""
    if kind == "/dev/zero":
        return Path("/dev/zero")
    path = tmp_path / kind
    if kind == "fifo":
        os.mkfifo(path)
    else:
        with open(path, "wb") as f:
            f.truncate(8 << 20)  # over play.py's 4 MB and --notes' 1 MB
    return path


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo", "huge"])
@pytest.mark.parametrize("flag", ["--load", "--replay"])
def test_play_refuses_unbounded_files_in_one_line(flag, kind, tmp_path, capsys):
    """Issue 42 item 5: play.py --load /dev/zero used 17 GB in 15 s."""
    path = not_a_plain_file(tmp_path, kind)
    assert play.main([flag, str(path)], ask=lambda _: pytest.fail("asked")) == 2
    err = one_line_error(capsys)
    assert "not a plain file" in err or f"larger than {terminal.MAX_FILE_BYTES} bytes" in err


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo", "huge"])
def test_ship_notes_are_read_with_a_bound(kind, tmp_path):
    """Issue 42 item 5: ship.py RUN --notes /dev/zero took 2 GB in 1 s."""
    path = not_a_plain_file(tmp_path, kind)
    with pytest.raises(shipping.ShipError, match=f"cannot read --notes {path}: (not a|larger)"):
        shipping.read_notes(path)


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_ship_into_a_folder_where_nothing_can_be_made_is_one_line(capsys):
    """Issue 42 item 6: ship.py RUN --name x --out /proc: mkdtemp's traceback (os.access
    says /proc is writable to root)."""
    assert ship.main(["no-run", "--name", "x", "--out", "/proc"]) == 2
    assert "--out /proc is not writable" in one_line_error(capsys)


def test_a_target_past_the_solver_limit_is_refused_before_any_work(capsys):
    """Issue 42 item 5: evaluate.py optimal smart --target 200000 reached 11.7 GB."""
    argv = ["optimal", "smart", "--games", "10", "--target", "200000"]
    assert evaluate.main(argv) == 2
    assert f"target must be at most {MAX_TARGET}" in one_line_error(capsys)
    check_target_bound(Rules(target=MAX_TARGET, entry=50, fifty_rule=False))  # the limit is in


@pytest.mark.parametrize("script", ["train.py", "train_planner.py"])
def test_training_refuses_a_target_past_the_solver_limit(script, tmp_path, capsys):
    assert SCRIPTS[script](["--target", "20000", "--checkpoints", str(tmp_path)]) == 2
    assert f"target must be at most {MAX_TARGET}" in one_line_error(capsys)
    assert not any(tmp_path.iterdir())


def test_a_save_past_the_solver_limit_is_refused(tmp_path):
    """Issue 42 item 5: a save with target 200,000,000 loaded."""
    saved = tmp_path / "game.json"
    feed = iter([f"save {saved}", "quit", ""])  # "": leave without saving
    play.main(["--opponents", "smart", "--seed", "1"], ask=lambda _: next(feed), say=print)
    data = json.loads(saved.read_text())
    data["game"]["rules"]["target"] = 200_000_000
    saved.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=f"target must be at most {MAX_TARGET}"):
        terminal.load(str(saved), False, 0.0, input, print)


def test_a_nan_opponent_weight_is_one_line(tmp_path, capsys):
    """Issue 42 item 6: train.py --params "opponents=[smart@nan]" (nan <= 0 is False)."""
    for weight in ("nan", "inf"):
        argv = ["--params", f"opponents=[smart@{weight}]", "--checkpoints", str(tmp_path)]
        assert train.main(argv) == 2
        assert "opponent weight must be a positive number" in one_line_error(capsys)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--games", "0"], "--games must be at least 1"),
        (["--games", "-1"], "--games must be at least 1"),
        (["--workers", "0"], "--workers must be at least 1"),
        (["--seed", "-1"], "--seed must be at least 0"),
        (["--watch", "--delay", "nan"], "--delay must be 0 to 60 seconds"),
        (["--watch", "--max-turns", "0"], "--max-turns must be at least 1"),
    ],
)
def test_demo_checks_its_arguments_before_training(argv, message, monkeypatch, capsys):
    """Issue 42 item 6: demo.py --games 0 trained 1.5 min, then raised ValueError."""
    monkeypatch.setattr(demo, "train_and_evaluate", lambda *a: pytest.fail("trained"))
    assert demo.main(argv) == 2
    assert message in one_line_error(capsys)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_value_net_with_non_finite_weights_is_refused_at_load(bad, tmp_path, capsys):
    """Issue 42 item 8: a value net of NaN weights loaded, shipped and lost 20/20."""
    net = ValueNet.load(SHIPPED_NET)
    net.weights[0][0, 0] = bad
    path = net.save(tmp_path / "value_net.npz")
    with pytest.raises(ValueError, match="not all finite numbers"):
        ValueNet.load(path)
    assert evaluate.main([str(path), "smart", "--games", "2"]) == 2
    assert "not all finite numbers" in one_line_error(capsys)


def test_missing_output_parents_are_refused_not_made(tmp_path, capsys):
    """Issue 42 item 8: export.py -o /nonexistent/dir/x.onnx and train.py --checkpoints
    /nonexistent/x made folders from the filesystem root; one missing folder is still
    made (a run's checkpoints/, an export's new folder)."""
    missing = tmp_path / "nonexistent"
    assert export.main(["ppo-2p", "-o", str(missing / "dir" / "x.onnx")]) == 2
    assert f"folder {missing} does not exist" in one_line_error(capsys)
    assert train.main(["--checkpoints", str(missing / "x")]) == 2
    assert f"--checkpoints {missing / 'x'}: folder {missing} does not exist" in one_line_error(
        capsys
    )
    assert sweep.main(["--grid", "n_epochs=1,2", "--checkpoints", str(missing / "x")]) == 2
    assert f"--checkpoints {missing / 'x'}: folder {missing} does not exist" in one_line_error(
        capsys
    )
    assert not missing.exists()


def full_disk_after(monkeypatch, module, writes: int) -> None:
    """`module`'s atomic_write fails as a full disk does (ENOSPC) once `writes` state.pkl
    files have been written: the checkpoint after them fails half-way."""
    write = module.atomic_write
    done = []

    def patched(path, content):
        if Path(path).name == "state.pkl":
            if len(done) >= writes:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
            done.append(path)
        return write(path, content)

    monkeypatch.setattr(module, "atomic_write", patched)


@pytest.mark.parametrize("script", ["train.py", "train_planner.py"])
def test_a_full_disk_mid_run_keeps_the_last_checkpoint_and_resume_continues(
    script, tmp_path, monkeypatch, capsys
):
    """Issue 42 item 6: train.py --preset quick and train_planner.py on a full disk
    crashed with a traceback. Now one line, the last checkpoint whole, --resume goes on."""
    if script == "train.py":
        argv = [*SMALL[script][:4], "512", *SMALL[script][5:]]  # two checkpoints of 256
        module = checkpoint
    else:
        argv = [*SMALL[script], "--checkpoint-freq", "1"]
        argv[argv.index("--iterations") + 1] = "2"
        module = train_planner
    full_disk_after(monkeypatch, module, writes=1)
    assert SCRIPTS[script]([*argv, "--checkpoints", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("error: could not write") and "No space left on device" in err, err
    assert "its last checkpoint kept whole" in err and "--resume" in err
    (run_dir,) = tmp_path.iterdir()
    model = "model.zip" if module is checkpoint else "value_net.npz"
    assert sorted(p.name for p in (run_dir / "latest").iterdir()) == sorted([model, "state.pkl"])
    monkeypatch.undo()
    assert SCRIPTS[script](["--resume", str(run_dir), "--no-progress"]) == 0
    assert (run_dir / "summary.json").is_file()


def test_settings_and_record_files_are_read_with_a_bound(tmp_path, monkeypatch, capsys):
    """Issue 42 (deliver 4): a preset's YAML, a run's JSON records and an exported bot's
    metadata are read with a bound (agents.base.MAX_TEXT_BYTES): past it, one line."""
    from fivethousand_rl.agents import base
    from fivethousand_rl.agents.exported import ExportError, read_metadata

    preset = tmp_path / "mine.yaml"
    preset.write_text("n_envs: 2\n" + "# a long comment line\n" * 100)
    record = tmp_path / "evals.json"
    record.write_text(json.dumps([{"steps": i} for i in range(200)]))
    monkeypatch.setattr(base, "MAX_TEXT_BYTES", 1000)
    assert train.main(["--preset", str(preset), "--checkpoints", str(tmp_path / "runs")]) == 2
    assert f"cannot read preset {preset}: larger than 1000 bytes" in one_line_error(capsys)
    assert not (tmp_path / "runs").exists()
    with pytest.raises(shipping.ShipError, match=f"cannot read {record}: larger than 1000"):
        shipping.read_json(record, list)
    onnx = tmp_path / "bot.onnx"
    onnx.write_bytes(b"\0")
    (tmp_path / "bot.json").write_text(json.dumps({"padding": "x" * 2000}))
    with pytest.raises(ExportError, match="larger than 1000 bytes"):
        read_metadata(onnx)
