"""export.py and exported bots: parity with the SB3 policy, metadata checks, errors."""

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import export
from agents import make_policy
from agents.exported import ExportedBot, ExportError, masked_choice
from envs.game import ROLL, Game
from envs.rules import Rules

ROOT = Path(__file__).resolve().parent.parent
SHIPPED_2P = ROOT / "checkpoints" / "ppo-2p" / "model.zip"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("bots") / "ppo-2p.onnx"
    assert export.main([str(SHIPPED_2P), "-o", str(out)]) == 0
    return out


def sampled_states(n_states: int, seed: int = 0):
    """Decision states from real games between a mix of bots (the agent included)."""
    drivers = [make_policy(name) for name in ("smart", "turn-ev", "random", "threshold:350")]
    drivers.append(make_policy(str(SHIPPED_2P)))
    rng = np.random.default_rng(seed)
    game_number = 0
    while True:
        game = Game(2, Rules(), seed=np.random.default_rng([seed, game_number]))
        seats = [drivers[game_number % 5], drivers[(game_number // 5) % 5]]
        game_number += 1
        while not game.over and game.state.turns < 500:
            if game.state.phase == ROLL:
                game.roll()
                continue
            yield game
            n_states -= 1
            if n_states == 0:
                return
            game.act(seats[game.state.current].act(game, rng))


def test_exported_bot_picks_exactly_the_sb3_action_on_10000_states(exported):
    sb3 = make_policy(str(SHIPPED_2P))
    bot = ExportedBot(exported)
    rng = np.random.default_rng(0)
    checked = 0
    for game in sampled_states(10_000):
        assert bot.act(game, rng) == sb3.act(game, rng)
        checked += 1
    assert checked == 10_000


def test_metadata_records_the_game_and_provenance(exported):
    meta = json.loads(exported.with_suffix(".json").read_text())
    assert meta["n_players"] == 2 and meta["rules"] == Rules().to_dict()
    assert meta["obs_encoding"] == "rich" and meta["action_encoding_version"] == 1
    assert meta["provenance"]["checkpoint_sha256"]
    assert meta["provenance"]["training_config"]["players"] == 2


def test_exported_bot_runs_without_torch(exported):
    code = (
        "import sys, numpy as np\n"
        "from agents.exported import ExportedBot\n"
        "from envs.game import Game\n"
        f"bot = ExportedBot({str(exported)!r})\n"
        "g = Game(2, seed=0); g.roll([1, 1, 5, 2, 3])\n"
        "print(bot.act(g, np.random.default_rng(0)) in g.legal_actions())\n"
        "print('torch' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.stdout.split() == ["True", "False"], result.stderr


def test_exported_bot_plays_in_evaluate_env_and_play(exported, tmp_path):
    import evaluate
    import play
    from envs.gym_env import FiveThousandEnv

    assert (
        evaluate.main([str(exported), "smart", "--games", "20", "--json", str(tmp_path / "e.json")])
        == 0
    )
    env = FiveThousandEnv(opponents=str(exported))
    env.reset(seed=0)
    lines = []
    answers = iter(["b", "r"] * 1500)
    assert (
        play.main(
            ["--opponents", str(exported), "--seed", "4"],
            ask=lambda _: next(answers),
            say=lines.append,
        )
        == 0
    )
    assert lines[-1].startswith("Game over")


def test_wrong_game_or_version_is_refused(exported, tmp_path):
    with pytest.raises(ExportError, match="plays 2-player games"):
        ExportedBot(exported).check_game(3, Rules())
    with pytest.raises(ExportError, match="plays 2-player games"):
        ExportedBot(exported).check_game(2, Rules(hold="all"))
    meta = json.loads(exported.with_suffix(".json").read_text())
    broken_rules = tmp_path / "rules.onnx"
    broken_rules.write_bytes(exported.read_bytes())
    broken_rules.with_suffix(".json").write_text(json.dumps({**meta, "rules": {"hold": "x"}}))
    with pytest.raises(ExportError, match="bad rules or players"):
        make_policy(str(broken_rules))
    for key, value, message in [
        ("obs_version", 99, "uses obs_version 99"),
        ("action_encoding_version", 2, "uses action_encoding_version 2"),
        ("format", "something else", "is not the metadata of an exported 5000 bot"),
    ]:
        copy = tmp_path / f"{key}.onnx"
        copy.write_bytes(exported.read_bytes())
        copy.with_suffix(".json").write_text(json.dumps({**meta, key: value}))
        with pytest.raises(ExportError, match=message):
            make_policy(str(copy))
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(b"not onnx")
    corrupt.with_suffix(".json").write_text(json.dumps(meta))
    with pytest.raises(ExportError, match="could not load exported bot"):
        make_policy(str(corrupt))
    with pytest.raises(ExportError, match="exported bot not found"):
        make_policy(str(tmp_path / "none.onnx"))
    lonely = tmp_path / "lonely.onnx"
    lonely.write_bytes(exported.read_bytes())
    with pytest.raises(ExportError, match="has no metadata file"):
        make_policy(str(lonely))


def test_export_errors_are_one_line(tmp_path):
    result = subprocess.run(
        [sys.executable, str(ROOT / "export.py"), str(tmp_path / "x.zip")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 2 and "checkpoint not found" in result.stderr
    assert result.stderr.strip().count("\n") == 0


def not_loaded(*_args, **_kwargs):
    raise AssertionError("bad paths must be refused before the checkpoint is loaded")


# Each case: (a function of tmp_path giving export's arguments, the error). All are
# refused before the checkpoint is loaded, and nothing is written.
BAD_PATHS = {
    "a self-play snapshot (issue 9, item 6)": (
        lambda t: [t / "step5.npz"],
        "is a self-play snapshot, which cannot be exported; export its run's model",
    ),
    "an exported bot": (lambda t: [t / "bot.onnx"], "takes an SB3 checkpoint (.zip)"),
    "not an onnx output": (
        lambda t: [SHIPPED_2P, "-o", t / "new" / "bot.txt"],
        "the output must be a .onnx file",
    ),
    "an output folder": (lambda t: [SHIPPED_2P, "-o", t], "the output must be a .onnx file"),
    "an output under a file": (
        lambda t: [SHIPPED_2P, "-o", t / "a-file" / "new" / "bot.onnx"],
        "a-file is not a writable folder",
    ),
    "no such number of players": (
        lambda t: [SHIPPED_2P, "-o", t / "new" / "bot.onnx", "--players", "0"],
        "--players must be 2..8, got 0",
    ),
}


@pytest.mark.parametrize("case", BAD_PATHS)
def test_bad_paths_are_refused_in_one_line_before_any_work(case, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(export, "SB3Policy", not_loaded)
    (tmp_path / "a-file").write_text("")
    make_args, message = BAD_PATHS[case]
    before = sorted(tmp_path.rglob("*"))
    assert export.main([str(a) for a in make_args(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and err.count("\n") == 0, err
    assert sorted(tmp_path.rglob("*")) == before


def test_a_snapshot_is_refused_in_one_line_from_the_command_line(tmp_path):
    snapshot = next((ROOT / "checkpoints").glob("*/snapshots/*.npz"))
    result = subprocess.run(
        [sys.executable, str(ROOT / "export.py"), str(snapshot)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0, result.stderr
    assert "is a self-play snapshot" in result.stderr
    assert not snapshot.with_suffix(".onnx").exists()


def bad_checkpoint(folder: Path, model: bytes, config: str | None = None) -> Path:
    folder.mkdir()
    (folder / "model.zip").write_bytes(model)
    if config is not None:
        (folder / "config.json").write_text(config)
    return folder / "model.zip"


@pytest.mark.parametrize(
    "model, config, message",
    [
        (b"", None, "not a zip file"),
        ("truncated", None, "not a zip file"),
        ("zip of junk", None, "could not load checkpoint"),
        ("shipped", '{"players": 2, "ho', "config.json (the config of"),
        ("shipped", "[2]", "names no valid players"),
        ("shipped", '{"players": 2, "hold": "some"}', "names no valid players"),
    ],
)
def test_corrupt_checkpoints_and_configs_are_one_line(model, config, message, tmp_path, capsys):
    shipped = SHIPPED_2P.read_bytes()
    junk = tmp_path / "junk.zip"
    with zipfile.ZipFile(junk, "w") as z:
        z.writestr("data", "not a model")
    data = {"truncated": shipped[:5000], "zip of junk": junk.read_bytes(), "shipped": shipped}
    checkpoint = bad_checkpoint(tmp_path / "run", data.get(model, model), config)
    assert export.main([str(checkpoint), "-o", str(tmp_path / "out" / "bot.onnx")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and err.count("\n") == 0, err
    assert not (tmp_path / "out").exists()


def test_masked_choice_never_picks_an_illegal_action():
    rng = np.random.default_rng(0)
    for _ in range(1000):
        logits = rng.normal(size=64).astype(np.float32) * 100
        mask = rng.random(64) < 0.2
        mask[rng.integers(64)] = True
        assert mask[masked_choice(logits, mask)]
