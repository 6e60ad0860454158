"""export.py and exported bots: parity with the SB3 policy, metadata checks, errors."""

import base64
import json
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import numpy as np
import pytest

from fivethousand_rl import export
from fivethousand_rl.agents import exporting, make_policy
from fivethousand_rl.agents.exported import MASKED_LOGIT, ExportedBot, ExportError, masked_choice
from fivethousand_rl.agents.neural import (
    NumpyScorer,
    read_obs_spec,
    read_settings,
    write_settings,
)
from fivethousand_rl.envs.encoding import ObsSpec
from fivethousand_rl.envs.game import ROLL, Game
from fivethousand_rl.envs.rules import Rules
from fivethousand_rl.envs.rules_text import describe_rules

ROOT = Path(__file__).resolve().parent.parent
SHIPPED_2P = ROOT / "checkpoints" / "ppo-2p" / "model.zip"
# A self-play snapshot, kept as test data since run state left checkpoints/ (issue 29 item 7).
SNAPSHOT_2P = ROOT / "tests" / "data" / "ppo_2p_free_seed1" / "snapshots" / "step7753728.npz"


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


def test_the_graph_scores_the_legal_actions_only(exported):
    """Issue 53 item 8: as the checkpoint's network does (about 3 rows of 64, so the ONNX
    bot plays as fast as its checkpoint: benchmarks/onnx_evaluation.py): the legal
    actions' logits are the checkpoint's, every other one MASKED_LOGIT; an observation
    with no legal row (a seat not to move) gives MASKED_LOGIT throughout."""
    bot = ExportedBot(exported)
    scorer = NumpyScorer.from_policy(make_policy(str(SHIPPED_2P)).model.policy)
    seen = [(bot.spec.encode(g, g.state.current), g.action_mask()) for g in sampled_states(2000)]
    obs, mask = (np.array(column) for column in zip(*seen, strict=True))
    logits = bot.session.run(None, {bot.input_name: obs})[0]
    expected = scorer.batch_logits(obs, mask)
    np.testing.assert_allclose(logits[mask], expected[mask], rtol=1e-5, atol=1e-5)
    assert (logits[~mask] == MASKED_LOGIT).all()
    no_row = obs[:2].copy()
    no_row[:, scorer.n_state :] = 0
    assert (bot.session.run(None, {bot.input_name: no_row})[0] == MASKED_LOGIT).all()


def test_metadata_records_the_spec_and_provenance(exported):
    """Issue 10: the exported bot carries its checkpoint's observation spec."""
    meta = json.loads(exported.with_suffix(".json").read_text())
    assert meta["obs_spec"] == ObsSpec("rich", 2, Rules()).to_dict()
    assert meta["obs_spec"] == read_obs_spec(SHIPPED_2P).to_dict()
    assert meta["format_version"] == 3 and meta["action_encoding_version"] == 1
    assert meta["kind"] == "ppo"
    assert meta["inputs"] == {"obs": ["batch", 2837]}
    assert meta["provenance"]["checkpoint_sha256"]
    assert meta["provenance"]["training_config"]["players"] == 2


# A folder of a machine: "/x/y" (not "a/b", nor "x/y" inside a word), a Windows drive.
LOCAL_PATH = re.compile(r"(?<![\w./-])/[\w.~-]+/|\b[A-Za-z]:[\\/]")


def local_paths(strings) -> list[str]:
    """The strings that name an absolute path, or this clone's or home folder."""
    mine = (str(ROOT), str(Path.home()))
    return [s for s in strings if LOCAL_PATH.search(s) or any(m in s for m in mine)]


def onnx_strings(message) -> list[str]:
    """Every string of an ONNX model: names, metadata, doc strings, attributes, in the
    graph, its subgraphs and functions (tensors' raw data aside)."""
    found = []
    for field, value in message.ListFields():
        for item in value if field.is_repeated else [value]:
            if field.message_type is not None:
                found += onnx_strings(item)
            elif isinstance(item, str):
                found.append(item)
            elif isinstance(item, bytes) and field.name != "raw_data":
                found.append(item.decode(errors="replace"))
    return found


def json_strings(value) -> list[str]:
    if isinstance(value, dict):
        return [*value, *(s for v in value.values() for s in json_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in json_strings(v)]
    return [value] if isinstance(value, str) else []


def test_the_pattern_finds_the_paths_torch_wrote():
    written = 'File "/work/main/fivethousand_rl/export.py", line 149, in forward'
    assert local_paths([written, "C:\\Users\\me\\run", "x /home/me/a"]) == [
        written,
        "C:\\Users\\me\\run",
        "x /home/me/a",
    ]
    assert local_paths(["checkpoints/ppo-2p/model.zip", "node_linear", "ratio 1/2"]) == []


def test_no_model_file_names_a_folder_of_the_machine_that_made_it(exported, tmp_path):
    """Issue 53 item 3: every .onnx under checkpoints/ and a fresh export of each kind
    (torch's writes its source files' paths into node metadata), their metadata too."""
    import gymnasium as gym
    import onnx
    from sb3_contrib import MaskablePPO

    planner = tmp_path / "planner-2p.onnx"
    assert export.main(["planner-2p", "-o", str(planner)]) == 0
    plain = tmp_path / "plain.zip"  # not an action-scoring network: torch's exporter writes it
    env = gym.make("FiveThousand-v0")
    MaskablePPO("MlpPolicy", env, n_steps=64, policy_kwargs={"net_arch": [8]}).save(plain)
    assert export.main([str(plain), "-o", str(plain.with_suffix(".onnx"))]) == 0
    graphs = [*(ROOT / "checkpoints").rglob("*.onnx"), exported, planner]
    graphs.append(plain.with_suffix(".onnx"))
    assert len(graphs) >= 6
    for graph in graphs:
        assert local_paths(onnx_strings(onnx.load(str(graph)))) == [], graph
        meta = json.loads(graph.with_suffix(".json").read_text())
        assert local_paths(json_strings(meta)) == [], graph


def test_the_shipped_checkpoints_name_today_s_module_and_no_local_folder():
    """Issue 53: their policy class pickled under fivethousand_rl.agents.networks, and no
    setting (plain, or a pickle's bytes, read without unpickling) names a local folder."""
    for checkpoint in sorted((ROOT / "checkpoints").glob("*/model.zip")):
        settings = read_settings(checkpoint)
        policy_class = settings["policy_class"]
        assert policy_class["__module__"] == "fivethousand_rl.agents.networks"
        module = base64.b64decode(policy_class[":serialized:"])
        assert b"fivethousand_rl.agents.networks" in module and b"\x0fagents." not in module
        pickles = [
            base64.b64decode(v[":serialized:"]).decode("latin-1")
            for v in settings.values()
            if isinstance(v, dict) and ":serialized:" in v
        ]
        assert local_paths([*json_strings(settings), *pickles]) == [], checkpoint


# The policy class as the shipped checkpoints pickled it before (agents.networks).
OLD_POLICY_CLASS = "gAWVKwAAAAAAAACMD2FnZW50cy5uZXR3b3Jrc5SME0FjdGlvblNjb3JpbmdQb2xpY3mUk5Qu"


def test_a_checkpoint_naming_the_old_module_still_plays(tmp_path):
    """The shipped checkpoints no longer exercise it: one saved before the one namespace
    (its policy class pickled as agents.networks) plays as today's."""
    old = tmp_path / "model.zip"
    old.write_bytes(SHIPPED_2P.read_bytes())
    settings = read_settings(old)
    settings["policy_class"] |= {":serialized:": OLD_POLICY_CLASS, "__module__": "agents.networks"}
    write_settings(old, settings)
    then, now = make_policy(str(old)), make_policy(str(SHIPPED_2P))
    rng = np.random.default_rng(0)
    for game in sampled_states(300):
        assert then.act(game, rng) == now.act(game, rng)


def test_the_export_names_the_project_s_licence(exported):
    """Issue 53 item 2: the metadata says the licence, the one pyproject.toml gives."""
    licence = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    assert json.loads(exported.with_suffix(".json").read_text())["license"] == licence


def test_exported_bot_runs_without_torch(exported):
    code = (
        "import sys, numpy as np\n"
        "from fivethousand_rl.agents.exported import ExportedBot\n"
        "from fivethousand_rl.envs.game import Game\n"
        f"bot = ExportedBot({str(exported)!r})\n"
        "g = Game(2, seed=0); g.roll([1, 1, 5, 2, 3])\n"
        "print(bot.act(g, np.random.default_rng(0)) in g.legal_actions())\n"
        "print('torch' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.stdout.split() == ["True", "False"], result.stderr


def test_exported_bot_plays_in_evaluate_env_and_play(exported, tmp_path):
    from fivethousand_rl import evaluate, play
    from fivethousand_rl.envs.gym_env import FiveThousandEnv

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


SPEC_2P = ObsSpec("rich", 2, Rules()).to_dict()
# Rows: (a change to the metadata, the game's players and hold, the refusal, refused on
# "load" or when seated in the "game"). Each is one line naming the bot.
BAD_METADATA = {
    "other players": ({}, 3, "free", "it was trained for 2 players, this game has 3", "game"),
    "other rules": ({}, 2, "all", "it was trained under these rules: exactly 5000 wins", "game"),
    "older observation": (
        {"obs_spec": {**SPEC_2P, "version": 1}},
        2,
        "free",
        "it reads observation version 1, this toolkit writes version 2",
        "game",
    ),
    "a spec for other players": (
        {"obs_spec": ObsSpec("rich", 3, Rules()).to_dict()},
        3,
        "free",
        "the graph takes 2837 inputs, its spec says 2891",
        "load",
    ),
    "unknown encoding": (
        {"obs_spec": {**SPEC_2P, "encoding": "rich9"}},
        2,
        "free",
        "unknown observation encoding 'rich9'",
        "load",
    ),
    "no spec": ({"obs_spec": None}, 2, "free", "its metadata's obs_spec: not an obse", "load"),
    "broken rules": (
        {"obs_spec": {**SPEC_2P, "rules": {"hold": "x"}}},
        2,
        "free",
        "not an observation spec",
        "load",
    ),
    "format 1": ({"format_version": 1}, 2, "free", "uses format_version 1", "load"),
    "actions 2": ({"action_encoding_version": 2}, 2, "free", "action_encoding_version 2", "load"),
    "format 4": ({"format_version": 4}, 2, "free", "reads 2 or 3: export it again", "load"),
    "unknown kind": ({"kind": "oracle"}, 2, "free", "unknown kind 'oracle'", "load"),
    "not ours": ({"format": "x"}, 2, "free", "is not the metadata of an exported 5000", "load"),
}


@pytest.mark.parametrize("case", BAD_METADATA)
def test_a_bot_for_another_game_or_version_is_refused_in_one_line(exported, tmp_path, case):
    change, players, hold, refusal, at = BAD_METADATA[case]
    meta = json.loads(exported.with_suffix(".json").read_text())
    bot = tmp_path / "bot.onnx"
    bot.write_bytes(exported.read_bytes())
    bot.with_suffix(".json").write_text(json.dumps({**meta, **change}))
    game = Game(players, Rules(hold=hold), seed=0)
    game.roll([1, 1, 5, 2, 3])
    with pytest.raises(ExportError) as err:
        make_policy(str(bot)).check_game(players, Rules(hold=hold))
    message = str(err.value)
    assert refusal in message and str(tmp_path / "bot.") in message and "\n" not in message
    if at == "game":  # seated without asking: refused too
        with pytest.raises(ExportError, match="cannot play this game"):
            make_policy(str(bot)).act(game, np.random.default_rng(0))


@pytest.mark.parametrize(
    "rules",
    [Rules(entry=300), Rules(bump=False), Rules(overshoot="lost"), Rules(fifty_rule=False)],
    ids=["V1", "V2", "V3", "V4"],
)
def test_an_exported_bot_refuses_every_house_rule_it_was_not_trained_under(exported, rules):
    """RULES.md V1-V4: the shipped agent's export reads the seeds' rules only."""
    bot = make_policy(str(exported))
    bot.check_game(2, Rules())
    with pytest.raises(ExportError, match="cannot play this game: it was trained under") as e:
        bot.check_game(2, rules)
    assert "\n" not in str(e.value) and describe_rules(rules) in str(e.value)


def test_an_export_of_format_version_2_still_plays_as_a_ppo_bot(exported, tmp_path):
    """Format 3 added the kind; a version 2 file (no kind) is a PPO bot, as it was."""
    meta = json.loads(exported.with_suffix(".json").read_text())
    del meta["kind"]
    bot = tmp_path / "old.onnx"
    bot.write_bytes(exported.read_bytes())
    bot.with_suffix(".json").write_text(json.dumps({**meta, "format_version": 2}))
    old, new = make_policy(str(bot)), make_policy(str(exported))
    assert isinstance(old, ExportedBot)
    game = Game(2, Rules(), seed=0)
    game.roll([1, 1, 5, 2, 3])
    rng = np.random.default_rng(0)
    assert old.act(game, rng) == new.act(game, rng)


def test_a_missing_or_corrupt_bot_is_refused(exported, tmp_path):
    meta = json.loads(exported.with_suffix(".json").read_text())
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
        lambda t: [SNAPSHOT_2P, "-o", t / "s.onnx"],
        "is a self-play snapshot, which cannot be exported; export its run's model",
    ),
    # Issue 28 item 11: a missing .npz is not called a snapshot (the loader's words).
    "a missing .npz": (lambda t: [t / "step5.npz"], "snapshot not found"),
    "an exported bot": (
        lambda t: [t / "bot.onnx"],
        "takes an SB3 checkpoint (.zip) or a value net (.npz)",
    ),
    "not an onnx output": (
        lambda t: [SHIPPED_2P, "-o", t / "new" / "bot.txt"],
        "the output must be a .onnx file",
    ),
    "an output folder": (lambda t: [SHIPPED_2P, "-o", t], "the output must be a .onnx file"),
    "an output under a file": (
        lambda t: [SHIPPED_2P, "-o", t / "a-file" / "new" / "bot.onnx"],
        "a-file is not a writable folder",
    ),
}


@pytest.mark.parametrize("case", BAD_PATHS)
def test_bad_paths_are_refused_in_one_line_before_any_work(case, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(exporting, "SB3Policy", not_loaded)
    (tmp_path / "a-file").write_text("")
    make_args, message = BAD_PATHS[case]
    before = sorted(tmp_path.rglob("*"))
    assert export.main([str(a) for a in make_args(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and err.count("\n") == 0, err
    assert sorted(tmp_path.rglob("*")) == before


def test_a_snapshot_is_refused_in_one_line_from_the_command_line(tmp_path):
    snapshot = SNAPSHOT_2P
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
        ("shipped", "[2]", "/model.zip) is not a JSON object"),
        ("no spec", None, "carries no observation spec (saved before models carried theirs)"),
    ],
)
def test_corrupt_checkpoints_and_configs_are_one_line(model, config, message, tmp_path, capsys):
    shipped = SHIPPED_2P.read_bytes()
    junk = tmp_path / "junk.zip"
    with zipfile.ZipFile(junk, "w") as z:
        z.writestr("data", "not a model")
    old = tmp_path / "old.zip"  # as saved before models carried their spec
    old.write_bytes(shipped)
    write_settings(old, {k: v for k, v in read_settings(old).items() if k != "obs_spec"})
    data = {
        "truncated": shipped[:5000],
        "zip of junk": junk.read_bytes(),
        "shipped": shipped,
        "no spec": old.read_bytes(),
    }
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


def test_an_export_lands_whole_or_not_at_all(tmp_path):
    """Issue 29 item 4: export.py writes through the one atomic write: the bot and its
    metadata appear only once both load back, with the usual permissions; a bot that
    fails its load-back check leaves the earlier export untouched and no debris."""
    out = tmp_path / "bot.onnx"

    def writer(content: bytes, kind: str):
        def write(tmp: Path) -> dict:
            tmp.write_bytes(content)
            return {"kind": kind}

        return write

    meta = exporting.write_aside(out, writer(b"onnx", "x"), lambda tmp: None)
    assert out.read_bytes() == b"onnx" and meta == {"kind": "x"}
    assert json.loads(exporting.metadata_path(out).read_text()) == {"kind": "x"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bot.json", "bot.onnx"]
    assert {p.stat().st_mode & 0o777 for p in tmp_path.iterdir()} == {0o644}

    def refuse(tmp):
        raise ExportError("does not load back")

    with pytest.raises(ExportError):
        exporting.write_aside(out, writer(b"broken", "y"), refuse)
    assert out.read_bytes() == b"onnx"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bot.json", "bot.onnx"]


@pytest.mark.parametrize("opset", [13, 15, 21])
def test_torch_s_exporter_writes_each_opset_with_the_default_s_logits(opset, tmp_path, capfd):
    """export --opset N (issue 55 item 7) for a network actor_graph does not write: the
    graph torch's exporter converts to opset N gives the default opset's logits, and the
    conversion's chatter stays off the terminal."""
    import gymnasium as gym
    import onnx
    from sb3_contrib import MaskablePPO

    plain = tmp_path / "plain.zip"
    env = gym.make("FiveThousand-v0")
    MaskablePPO("MlpPolicy", env, n_steps=64, policy_kwargs={"net_arch": [8]}, seed=0).save(plain)
    obs = np.random.default_rng(0).random((200, env.observation_space.shape[0]), np.float32)
    logits = {}
    for n in (opset, exporting.ONNX_OPSET):
        out = tmp_path / f"plain{n}.onnx"
        assert export.main([str(plain), "-o", str(out), "--opset", str(n)]) == 0
        assert onnx.load(str(out)).opset_import[0].version == n
        bot = ExportedBot(out)
        logits[n] = bot.session.run(None, {bot.input_name: obs})[0]
    np.testing.assert_allclose(logits[opset], logits[exporting.ONNX_OPSET], rtol=1e-6, atol=1e-6)
    assert "onnxscript" not in capfd.readouterr().err
