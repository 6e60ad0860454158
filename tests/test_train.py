"""train.py: a run end to end, exact resume, checkpoints as players, clear errors."""

import dataclasses
import json
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from fivethousand_rl import evaluate, train
from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.neural import SB3Policy
from fivethousand_rl.agents.training import callback, checkpoint, progress
from fivethousand_rl.agents.training.config import (
    PRESETS,
    TrainConfig,
    init_path,
    new_run_config,
    parse_run_args,
    read_run_config,
)
from fivethousand_rl.envs.game import ROLL, Game

ROOT = Path(__file__).resolve().parent.parent


def build_config(argv: list[str]) -> TrainConfig:
    """The config train.py makes of `argv` for a new run (its folder not checked)."""
    args, given = parse_run_args(train.Args, argv)
    return new_run_config(args.config, args.params, name_given="--run-name" in given)


TINY = [
    "--preset",
    "quick",
    "--no-progress",
    "--params",
    "n_envs=2",
    "n_steps=128",
    "batch_size=128",
    "eval_freq=256",
    "eval_episodes=10",
    "checkpoint_freq=256",
    "eval_opponents=[smart]",
    "opponents=[smart, turn-ev@0.5]",
    "torch_threads=1",
    "state_layers=[32, 16]",
    "scorer_layers=[16, 16]",
    "critic_layers=[32]",
]


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """One tiny run (768 steps), trained as a subprocess like a user would."""
    checkpoints = tmp_path_factory.mktemp("runs")
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "train.py"),
            "--n-timesteps",
            "768",
            "--checkpoints",
            str(checkpoints),
            *TINY,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return checkpoints / "quick_free_seed0"


def test_a_run_folder_has_everything(trained_run):
    for name in [
        "config.json",
        "command.txt",
        "evals.json",
        "summary.json",
        "latest/model.zip",
        "latest/state.pkl",
        "best/model.zip",
        "best/eval.json",
    ]:
        assert (trained_run / name).is_file(), name
    config = json.loads((trained_run / "config.json").read_text())
    assert config["seed"] == 0 and config["n_timesteps"] == 768 and config["n_envs"] == 2
    assert "train.py" in (trained_run / "command.txt").read_text()
    evals = json.loads((trained_run / "evals.json").read_text())
    assert [e["steps"] for e in evals] == [256, 512, 768]
    assert 0 <= evals[-1]["results"]["smart"]["win_rate"] <= 1
    assert list((trained_run / "tb").rglob("events.out.tfevents*"))
    summary = json.loads((trained_run / "summary.json").read_text())
    assert summary["steps"] == 768 and summary["wall_seconds"] > 0


def test_checkpoints_play_only_legal_actions(trained_run):
    for path in (trained_run / "best" / "model.zip", trained_run / "latest" / "model.zip"):
        policy = make_policy(str(path))
        assert isinstance(policy, SB3Policy)
        rng = np.random.default_rng(0)
        for seed in range(5):
            game = Game(2, seed=seed)
            while not game.over and game.state.turns < 300:
                if game.state.phase == ROLL:
                    game.roll()
                else:
                    action = policy.act(game, rng)
                    assert action in game.legal_actions()
                    game.act(action)


def test_checkpoint_is_evaluated_by_evaluate_py(trained_run, tmp_path):
    out = tmp_path / "e.json"
    best = str(trained_run / "best" / "model.zip")
    assert evaluate.main([best, "random", "--games", "20", "--json", str(out)]) == 0
    summary = json.loads(out.read_text())
    assert summary["agents"][0]["games"] == 20


def test_numpy_scorer_matches_the_torch_policy(trained_run):
    """Self-play snapshots and evaluation use the numpy copy of the actor: same logits."""
    from sb3_contrib import MaskablePPO

    from fivethousand_rl.agents.neural import NumpyScorer
    from fivethousand_rl.envs.encoding import encode_rich

    model = MaskablePPO.load(trained_run / "latest" / "model.zip", device="cpu")
    scorer = NumpyScorer.from_policy(model.policy)
    bot, rng = make_policy("smart"), np.random.default_rng(1)
    checked = 0
    for seed in range(20):
        game = Game(2, seed=seed)
        while not game.over and checked < 400:
            if game.state.phase == ROLL:
                game.roll()
                continue
            obs = encode_rich(game, game.state.current)
            legal = list(game.legal()[0])
            with torch.no_grad():
                logits = model.policy.mlp_extractor.forward_actor(torch.as_tensor(obs[None]))
            assert np.allclose(logits[0].numpy()[legal], scorer.logits(obs, legal), atol=1e-4)
            checked += 1
            game.act(bot.act(game, rng))
    assert checked == 400


def test_resume_gives_the_same_result_as_an_uninterrupted_run(tmp_path):
    args = [
        "--n-timesteps",
        "768",
        *TINY,
        "self_play_weight=1",
        "snapshot_freq=256",
        "learning_rate=0.001",
    ]
    assert train.main([*args, "--checkpoints", str(tmp_path / "a")]) == 0
    assert train.main([*args, "--checkpoints", str(tmp_path / "b"), "--stop-after", "256"]) == 0
    run_b = tmp_path / "b" / "quick_free_seed0"
    assert json.loads((run_b / "evals.json").read_text())[-1]["steps"] == 256
    # The stopped run moves (as in a clone elsewhere); its snapshots are found in it.
    (tmp_path / "moved").mkdir()
    run_b = Path(shutil.move(run_b, tmp_path / "moved" / "quick_free_seed0"))
    assert train.main(["--resume", str(run_b), "--no-progress"]) == 0

    from sb3_contrib import MaskablePPO

    a = MaskablePPO.load(tmp_path / "a" / "quick_free_seed0" / "latest" / "model.zip")
    b = MaskablePPO.load(run_b / "latest" / "model.zip")
    assert a.num_timesteps == b.num_timesteps == 768
    for key, value in a.policy.state_dict().items():
        assert torch.equal(value, b.policy.state_dict()[key]), key
    evals_a = json.loads((tmp_path / "a" / "quick_free_seed0" / "evals.json").read_text())
    evals_b = json.loads((run_b / "evals.json").read_text())
    assert evals_a == evals_b
    # Extending a finished run evaluates each step once, as one longer run would.
    run_a = tmp_path / "a" / "quick_free_seed0"
    assert train.main(["--resume", str(run_a), "--n-timesteps", "1024", "--no-progress"]) == 0
    steps = [e["steps"] for e in json.loads((run_a / "evals.json").read_text())]
    assert steps == [256, 512, 768, 1024]
    # The snapshots joined the opponent pool in both runs at the same steps.
    # Snapshots joined the pool at the start of the rollouts after 256 and 512 steps.
    assert sorted(p.name for p in (run_b / "snapshots").iterdir()) == ["step256.npz", "step512.npz"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--preset", "nope"], "unknown preset 'nope'; known: "),
        (["--params", "lr=0.1"], "unknown key 'lr'"),
        (["--params", "n_envs"], "--params takes KEY=VALUE"),
        (["--opponents", "grandmaster"], "unknown bot 'grandmaster'"),
        (["--opponents", "smart@x"], "bad opponent weight"),
        (["--players", "9"], "players must be 2..8"),
        (["--params", "n_envs=3", "n_steps=100", "batch_size=64"], "multiple of batch_size"),
        (["--resume", "no/such/run"], "no run to resume at no/such/run"),
        (["--resume", "x", "--seed", "3"], "--resume continues a run as configured"),
        (["--params", "eval_opponents=[nosuchbot]"], "unknown bot 'nosuchbot'"),
        (["--params", "activation=sigmoid"], "activation must be relu or tanh"),
        (["--params", "state_layers=[]"], "state_layers must be a non-empty list"),
        (["--params", "max_snapshots=0"], "max_snapshots must be positive"),
        (["--params", "eval_freq=-5"], "eval_freq must be >= 0"),
        (["--init-from", "no/such/model.zip"], "checkpoint not found: no/such/model.zip"),
        (["--init-from", "model.onnx"], "init_from must be a MaskablePPO checkpoint (.zip)"),
        # Issue 9 item 6: every value is checked before any work (these were tracebacks).
        (["--params", "learning_rate=-1"], "learning_rate must be >= 0, got -1.0"),
        (["--params", "final_learning_rate=-1e-5"], "final_learning_rate must be >= 0"),
        (["--params", "learning_rate=nan"], "learning_rate must be a finite number"),
        (["--params", "learning_rate=abc"], "learning_rate must be a number, got 'abc'"),
        (["--params", "gamma=1.5"], "gamma must be between 0 and 1"),
        (["--params", "gae_lambda=-0.1"], "gae_lambda must be between 0 and 1"),
        (["--params", "clip_range=0"], "clip_range must be positive"),
        (["--params", "max_grad_norm=-1"], "max_grad_norm must be positive"),
        (["--params", "ent_coef=-0.01"], "ent_coef must be >= 0"),
        (["--params", "vf_coef=-1"], "vf_coef must be >= 0"),
        (["--params", "max_turns=0"], "max_turns must be positive"),
        (["--params", "torch_threads=0"], "torch_threads must be positive"),
        (["--params", "n_envs=[1]"], "n_envs must be an integer, got [1]"),
        (["--params", "n_envs=true"], "n_envs must be an integer, got True"),
        (["--params", "n_steps=1.5"], "n_steps must be an integer, got 1.5"),
        (["--params", "opponents=[1, 2]"], "opponents must be a list of names"),
        (["--params", "hold=[free]"], "hold must be a string"),
        (["--params", "opponents=[smart"], "the value is not a YAML scalar or list"),
        (["--seed", "-1"], "seed must be 0..4294967295, got -1"),
        (["--seed", "4294967296"], "seed must be 0..4294967295"),
        (["--n-timesteps", "inf"], "n_timesteps must be an integer, got inf"),
        (["--n-timesteps", "nan"], "n_timesteps must be an integer, got nan"),
        (["--n-timesteps", "1000.5"], "n_timesteps must be an integer"),
        (["--stop-after", "inf"], "--stop-after must be an integer"),
        (["--stop-after", "0"], "--stop-after must be positive"),
        # Issue 9 item 8: a run stays in its runs folder; presets come from hyperparams/.
        (["--preset", "../hyperparams/quick"], "unknown preset '../hyperparams/quick': a preset"),
        (["--preset", "hyperparams/quick"], "unknown preset 'hyperparams/quick': a preset"),
        (["--preset", ""], "unknown preset ''"),
        (["--preset", "no/such.yaml"], "unknown preset 'no/such.yaml'"),
        (["--run-name", "../../x"], "run name must be a plain folder name"),
        (["--run-name", "a/b"], "run name must be a plain folder name"),
        (["--run-name", "a\\b"], "run name must be a plain folder name"),
        (["--run-name", ".."], "run name must be a plain folder name"),
        (["--run-name", ".hidden"], "run name must be a plain folder name"),
        (["--run-name", ""], "at most 100 characters), got ''"),
        (["--run-name=-x"], "run name must be a plain folder name"),
        (["--run-name", "x" * 101], "run name must be a plain folder name"),
        (["--params", "run_name=../x"], "run name must be a plain folder name"),
        (["--params", "run_name=/tmp/x"], "run name must be a plain folder name"),
    ],
)
def test_bad_arguments_are_one_clear_line(args, message, capsys, tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    assert train.main([*args, "--checkpoints", str(runs)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and err.count("\n") == 0
    assert [p.name for p in tmp_path.rglob("*")] == ["runs"]  # nothing written, anywhere


def test_a_refused_start_leaves_no_folder(tmp_path, capsys):
    assert train.main(["--params", "activation=sigmoid", "--checkpoints", str(tmp_path)]) == 2
    assert not any(tmp_path.iterdir())


def test_existing_run_and_corrupt_checkpoint_are_refused(trained_run, tmp_path, capsys):
    import shutil

    assert (
        train.main(["--n-timesteps", "768", *TINY, "--checkpoints", str(trained_run.parent)]) == 2
    )
    assert "exists: --resume" in capsys.readouterr().err
    broken = tmp_path / "broken"
    shutil.copytree(trained_run, broken)
    (broken / "latest" / "state.pkl").write_bytes(b"garbage")
    assert train.main(["--resume", str(broken), "--n-timesteps", "1024"]) == 2
    err = capsys.readouterr().err.strip()
    assert "checkpoint" in err and "unreadable" in err and err.count("\n") == 0
    (broken / "latest" / "state.pkl").write_bytes(pickle.dumps({"state": {}}))
    assert train.main(["--resume", str(broken)]) == 2
    assert "state.pkl is incomplete" in capsys.readouterr().err
    shutil.rmtree(broken / "latest")
    assert train.main(["--resume", str(broken)]) == 2
    assert "has no checkpoint to resume" in capsys.readouterr().err


def test_missing_and_corrupt_model_files_are_one_line(tmp_path):
    with pytest.raises(ValueError, match="checkpoint not found"):
        make_policy(str(tmp_path / "none.zip"))
    bad = tmp_path / "bad.zip"
    bad.write_bytes(pickle.dumps("x"))
    with pytest.raises(ValueError, match="not an SB3 checkpoint"):
        make_policy(str(bad))
    with pytest.raises(ValueError, match="snapshot not found"):
        make_policy(str(tmp_path / "none.npz"))


def test_quick_preset_is_valid():
    config = build_config(["--preset", "quick"])
    assert config.players == 2 and config.run_name == "quick_free_seed0"
    # The second stage starts from the first stage's final model, which is no longer in
    # the tree (issue 29 item 7): the rebuild gives it with --init-from; the shipped
    # ppo-2p (same game) stands in for it here.
    first = ["--init-from", str(ROOT / "checkpoints" / "ppo-2p" / "model.zip")]
    for preset, extra in (("ppo_2p", []), ("ppo_4p", []), ("ppo_2p_tune", first)):
        config = build_config(["--preset", preset, *extra])
        assert config.self_play_weight > 0
    tune = build_config(["--preset", "ppo_2p_tune", *first])
    assert init_path(tune).is_file() and tune.ent_coef == 0
    preset = parse_run_args(train.Args, ["--preset", "ppo_2p_tune"])[0].config
    assert preset.init_from.endswith("ppo_2p_free_seed1/latest/model.zip")


def test_ship_makes_a_model_card(trained_run, tmp_path):
    from fivethousand_rl import ship

    assert (
        ship.main(
            [
                str(trained_run),
                "--name",
                "tiny",
                "--games",
                "10",
                "--workers",
                "1",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    out = tmp_path / "tiny"
    card = (out / "MODEL_CARD.md").read_text()
    for name in (
        "model.zip",
        "config.json",
        "learning_curve.png",
        "evaluation.json",
        "evaluation.png",
    ):
        assert (out / name).is_file(), name
    assert "python evaluate.py" in card and "--games 10" in card
    assert "learner decisions" in card and "train.py" in card
    curve = json.loads((out / "learning_curve.json").read_text())
    assert [point["steps"] for point in curve] == [256, 512, 768]
    assert ship.main([str(tmp_path / "nothing"), "--name", "x", "--out", str(tmp_path)]) == 2


def test_init_from_starts_a_new_run_with_the_trained_weights(trained_run, tmp_path, capsys):
    source = trained_run / "latest" / "model.zip"
    start = ["--init-from", str(source), "--checkpoints", str(tmp_path)]
    frozen = ["learning_rate=0", "final_learning_rate=0"]  # extends TINY's --params
    args = ["--n-timesteps", "256", *TINY, *frozen, "--run-name", "tuned", *start]
    assert train.main(args) == 0
    from sb3_contrib import MaskablePPO

    before = MaskablePPO.load(source).policy.state_dict()
    after = MaskablePPO.load(tmp_path / "tuned" / "latest" / "model.zip")
    assert after.num_timesteps == 256  # a new run: its own step counter
    for key, value in after.policy.state_dict().items():  # learning rate 0: unchanged
        assert torch.equal(value, before[key]), key
    config = json.loads((tmp_path / "tuned" / "config.json").read_text())
    assert config["init_from"] == str(source)
    from fivethousand_rl import (
        ship,  # a model card tells both stages, steps counted on from the first
    )

    history = ship.stages(tmp_path / "tuned")
    assert [h["run"] for h in history] == [trained_run, tmp_path / "tuned"]
    assert [h["offset"] for h in history] == [0, 768]
    assert "--init-from" in history[1]["commands"][0]
    # A network of another shape is refused in one line, before any folder is made.
    other = ["--n-timesteps", "256", *TINY, "critic_layers=[8]", "--run-name", "other", *start]
    assert train.main(other) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: cannot start from {source}") and err.count("\n") == 0
    assert not (tmp_path / "other").exists()


# ---------------------------------------------------------------- issue 9
def folder_hash(folder: Path) -> dict[str, str]:
    """Every file under `folder` (relative name -> content hash): what a command changed."""
    import hashlib

    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_a_preset_is_a_name_from_hyperparams_or_a_yaml_file(tmp_path, capsys):
    """Issue 9 item 8: a preset file elsewhere is allowed, but the run it names is a
    plain folder in the runs folder; an odd file name asks for --run-name."""
    own = tmp_path / "mine.yaml"
    own.write_text("n_timesteps: 5000\n")
    config = build_config(["--preset", str(own)])
    assert (config.run_name, config.n_timesteps) == ("mine_free_seed0", 5000)
    assert config.preset == str(own)
    quick = build_config(["--preset", str(PRESETS / "quick.yaml")])
    assert quick.run_name == "quick_free_seed0"
    odd = tmp_path / ".odd.yaml"
    odd.write_text("n_timesteps: 5000\n")
    assert train.main(["--preset", str(odd), "--checkpoints", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "give one with --run-name" in err and err.count("\n") == 0
    config = build_config(["--preset", str(odd), "--run-name", "odd"])
    assert config.run_name == "odd"


@pytest.fixture()
def run_copy(trained_run, tmp_path):
    """A copy of the tiny run's config and checkpoint, to damage."""
    run = tmp_path / "run"
    (run / "latest").mkdir(parents=True)
    shutil.copy(trained_run / "config.json", run)
    for name in ("model.zip", "state.pkl"):
        shutil.copy(trained_run / "latest" / name, run / "latest")
    return run


def damage_state(run: Path, change) -> None:
    path = run / "latest" / "state.pkl"
    extra = pickle.loads(path.read_bytes())
    change(extra)
    path.write_bytes(pickle.dumps(extra))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda run: (run / "config.json").write_text("[1, 2]"), "config.json must hold a JSON"),
        (lambda run: (run / "config.json").write_text('"x"'), "not a string"),
        (
            lambda run: (run / "config.json").write_text((run / "config.json").read_text()[:40]),
            "config.json is unreadable",
        ),
        (
            lambda run: (run / "config.json").write_text('{"n_envs": "two"}'),
            "config.json: n_envs must be an integer",
        ),
        (
            lambda run: (run / "config.json").write_text('{"learning_rate": -1}'),
            "learning_rate must be >= 0",
        ),
        (lambda run: (run / "config.json").write_text('{"lr": 1}'), "unknown key 'lr'"),
        (lambda run: (run / "latest" / "state.pkl").write_bytes(pickle.dumps([1])), "holds no"),
        *[
            (lambda run, k=key: damage_state(run, lambda e: e.pop(k)), f"incomplete (no {key})")
            for key in checkpoint.CHECKPOINT_KEYS
        ],
        *[
            (
                lambda run, k=key: damage_state(run, lambda e: e["state"].pop(k)),
                f"incomplete (no state.{key})",
            )
            for key in checkpoint.STATE_KEYS
        ],
        (lambda run: damage_state(run, lambda e: e.update(num_timesteps=-1)), "step count is -1"),
        (lambda run: damage_state(run, lambda e: e.update(state=[])), "run state is not a mapping"),
        (
            lambda run: damage_state(run, lambda e: e["env_states"].pop()),
            "env_states is not one entry per environment",
        ),
        (
            lambda run: damage_state(run, lambda e: e["monitor"].pop("rewards")),
            "monitor is not rewards",
        ),
        (
            lambda run: damage_state(run, lambda e: e.update(torch_rng="x")),
            "state.pkl does not fit this run",
        ),
        (
            lambda run: damage_state(run, lambda e: e["env_states"][0].clear()),
            "state.pkl does not fit this run",
        ),
    ],
)
def test_a_damaged_run_is_refused_in_one_line_naming_the_file(run_copy, damage, message, capsys):
    """Issue 9 item 6: a config.json that is a list, truncated or wrong, and a state.pkl
    missing anything resume needs, are refused in one line (they were tracebacks), and
    nothing in the run changes."""
    damage(run_copy)
    before = folder_hash(run_copy)
    assert train.main(["--resume", str(run_copy), "--n-timesteps", "1024", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and err.count("\n") == 0, err
    assert str(run_copy) in err  # which run, which file
    assert folder_hash(run_copy) == before


@pytest.mark.parametrize("extra_args", [[], ["--n-timesteps", "512"], ["--stop-after", "9e6"]])
def test_resuming_a_finished_run_changes_nothing(trained_run, tmp_path, capsys, extra_args):
    """Issue 9 item 9: `--resume` of a finished run (then the shipped ppo-2p's, whose
    state left the tree in issue 29 item 7: now the tiny finished run) rewrote its
    config.json and appended to command.txt. A resume that adds no steps leaves every
    byte as it was and says how to go on, in one line."""
    run = Path(shutil.copytree(trained_run, tmp_path / "run"))
    before = folder_hash(run)
    assert train.main(["--resume", str(run), *extra_args]) == 0
    out = capsys.readouterr().out.strip()
    assert folder_hash(run) == before
    assert out.count("\n") == 0 and "already complete at step 768" in out
    assert f"python train.py --resume {run} --n-timesteps N" in out


def test_a_run_says_what_it_will_do_and_how_long_it_takes(tmp_path, capsys):
    """Issue 9 item 14: the plan before the work, a measured time left after the first
    rollout, a line per evaluation, and where the model is at the end (not a JSON dump)."""
    args = ["--n-timesteps", "768", *TINY, "--checkpoints", str(tmp_path)]
    assert train.main(args) == 0
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    assert lines[0].startswith(f"run {tmp_path / 'quick_free_seed0'}: 768 steps to train")
    assert "evaluation every 256 steps and at the end: 10 games against each of smart" in lines[1]
    assert lines[2].startswith("speed: ") and "steps/s over the first 256 steps; about " in lines[2]
    assert lines[2].endswith("left + 3 evaluations")
    assert [line.split(":")[0] for line in lines[3:6]] == ["step 256", "step 512", "step 768"]
    assert "left" in lines[4] and "left" not in lines[5]  # none after the final one
    assert lines[6].startswith("done: ") and "trained to step 768" in lines[6]
    assert lines[7].startswith(f"best model: {tmp_path / 'quick_free_seed0' / 'best'}")
    assert lines[8].startswith("play against it: python play.py --opponents ")
    assert "{" not in out


def test_no_flags_says_what_it_does_before_starting(monkeypatch, capsys, tmp_path):
    """Issue 9 item 14: `python train.py` alone starts the default run; it says so first,
    with the steps, the evaluations, and the quicker preset (the training is stubbed)."""
    monkeypatch.setattr(train.ppo, "train", lambda *args: 0)
    monkeypatch.chdir(tmp_path)  # the default runs folder, checkpoints/ here, is empty
    assert train.main([]) == 0
    out = capsys.readouterr().out
    assert "run checkpoints/custom_2p_free_seed0: 1,000,000 steps" in out
    assert "evaluation every 100,000 steps" in out
    assert "no flags: the default settings" in out and "--preset quick" in out


def test_help_shows_every_config_field_with_its_default(capsys):
    """Issue 9 item 14, issue 10 item 5: --help is made from TrainConfig, the one
    definition: every field is a flag with its docstring and its default."""
    with pytest.raises(SystemExit):
        parse_run_args(train.Args, ["--help"])
    out = " ".join(capsys.readouterr().out.replace("│", " ").split())
    for f in dataclasses.fields(TrainConfig):
        default = getattr(TrainConfig(), f.name)
        shown = " ".join(map(str, default)) if isinstance(default, list) else str(default)
        flag = f"--{f.name.replace('_', '-')}"
        if isinstance(default, bool):  # a switch (V2, V4): --bump, --no-bump
            assert f"{flag}, --no-{flag[2:]} " in out, f.name
        else:
            assert f"{flag} " in out, f.name
        assert f"(default: {shown})" in out, f.name
    assert "Adam step size, decayed linearly" in out  # the field's docstring
    for flag in ("--resume", "--stop-after", "--checkpoints", "--no-progress", "--params"):
        assert flag in out
    assert "--self-play FLOAT" in out  # the short spelling of --self-play-weight


def test_flags_presets_and_params_stack_in_order(tmp_path):
    """Defaults, then the preset, then the flags, then --params; numbers as typed."""
    args = ["--preset", "quick", "--n-timesteps", "2e4", "--seed", "3", "--self-play", "0.5"]
    config = build_config([*args, "--params", "seed=4"])
    assert (config.n_timesteps, config.seed, config.self_play_weight) == (20_000, 4, 0.5)
    assert config.eval_freq == 50_000 and config.n_steps == 128  # quick.yaml
    assert config.run_name == "quick_free_seed4" and config.n_envs == 16
    assert build_config(["--opponents", "smart", "random"]).opponents == [
        "smart",
        "random",
    ]


@pytest.mark.parametrize(
    ("steps", "next_eval", "expected"),
    [
        (0, 256, 3),  # at 256, 512 (rollout starts), then the final one at 768
        (256, 512, 2),
        (512, 768, 1),  # 768 is the end: only the final evaluation
        (256, 300, 2),  # due at 300: done at the rollout start at 512
    ],
)
def test_the_clock_counts_the_evaluations_to_come(steps, next_eval, expected):
    config = TrainConfig(n_timesteps=768, n_envs=2, n_steps=128, eval_freq=256)
    assert progress.Clock(config, 0, 0.0).evals_left(steps, next_eval) == expected


def test_the_clock_adds_evaluations_once_one_was_timed():
    """Time left = training at the measured speed (evaluations excluded) + the evaluations
    still due at the last one's duration; before any, their number is said instead."""
    config = TrainConfig(n_timesteps=10_000, n_envs=10, n_steps=100, eval_freq=5_000)
    clock = progress.Clock(config, 0, now=100.0)
    assert clock.left(0, 5_000, now=100.0) == "time left: after the first rollout"
    assert clock.left(1_000, 5_000, now=110.0) == "about 1 min 30 s left + 2 evaluations"
    clock.evaluated(30.0)  # at 5,000 steps, after 50 s of training
    assert clock.speed(5_000, now=180.0) == 100.0
    assert clock.left(5_000, 10_000, now=180.0) == "about 1 min 20 s left"  # 50 s + 30 s


@pytest.mark.parametrize(
    ("eval_freq", "kept"),
    [
        (256, False),  # Ctrl-C in the first evaluation, before the first checkpoint
        (512, True),  # in the evaluation at 512, after the checkpoint at 256
    ],
)
def test_ctrl_c_says_what_is_kept(tmp_path, capsys, monkeypatch, eval_freq, kept):
    """Issue 9 item 14 (a long run is stopped with Ctrl-C): one line instead of a
    traceback; a run with a checkpoint can be resumed, one without leaves no folder that
    would block the same command."""

    def interrupt(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(callback, "evaluate", interrupt)
    args = ["--n-timesteps", "768", *TINY, f"eval_freq={eval_freq}", "--checkpoints", str(tmp_path)]
    assert train.main(args) == 130
    last = capsys.readouterr().out.strip().splitlines()[-1]
    run = tmp_path / "quick_free_seed0"
    assert run.exists() == kept
    if kept:
        assert last == (
            f"interrupted at step {eval_freq:,}; the checkpoint at step 256 continues with: "
            f"python train.py --resume {run}"
        )
    else:
        assert last.startswith("interrupted at step 256, before the first checkpoint")


def test_one_torch_thread_by_default():
    """Issue 9 item 10: on a 2-core machine a second torch thread made a 16k-step quick
    run's training 2 to 20 times slower when the cores were busy (other processes), for
    about 20% faster (1.7 s) when idle: one thread is the default that holds up."""
    assert TrainConfig().torch_threads == 1


# ---------------------------------------------------------------- issue 10 item 5
def test_evaluation_plays_the_games_it_played_before_the_tournament():
    """Evaluation goes through agents.tournament; with 2 players it plays the very games
    its own seating loop played before (seat g % 2, seeds [seed, 10007, g])."""
    from fivethousand_rl.agents.tournament import play_game

    config = TrainConfig(players=2, seed=5, eval_episodes=12, eval_opponents=["smart"])
    learner, opponent = make_policy("turn-ev"), make_policy("smart")
    wins = turns = 0
    for g in range(12):
        seats = [opponent, opponent]
        seats[g % 2] = learner
        winner, n = play_game(seats, config.rules, [5, 10_007, g], config.max_turns)
        wins, turns = wins + (winner == g % 2), turns + n
    result = callback.evaluate(learner, config)["smart"]
    assert (result["win_rate"], result["mean_turns"]) == (wins / 12, turns / 12)
    assert result["games"] == 12 and result["ci95"][0] <= wins / 12 <= result["ci95"][1]
    three = TrainConfig(players=3, eval_episodes=7)  # not whole rotations: cut to 7 games
    assert callback.evaluate(learner, three)["smart"]["games"] == 7


def test_monitor_state_is_the_one_place_that_reads_sb3_private_fields():
    """Resume restores SB3 Monitor's episode bookkeeping through checkpoint.monitor_state
    alone; if SB3 renames these attributes, this fails (not a silent wrong resume)."""
    from fivethousand_rl.agents.training.model import make_vec_env

    config = TrainConfig(n_envs=2, opponents=["smart"])
    vec = make_vec_env(config)
    vec.reset()
    for _ in range(5):
        masks = np.stack(vec.env_method("action_masks"))
        vec.step(np.array([int(np.flatnonzero(m)[0]) for m in masks]))
    saved = checkpoint.monitor_state(vec)
    assert set(saved) == set(checkpoint.MONITOR_FIELDS)
    assert all(len(values) == 2 for values in saved.values())
    assert all(hasattr(vec.envs[0], key) for key in checkpoint.MONITOR_FIELDS)
    other = make_vec_env(config)
    other.reset()
    assert checkpoint.monitor_state(other, saved) == saved
    vec.close()
    other.close()


@pytest.mark.parametrize(
    "name", ["ppo_2p_free_seed1", "ppo_2p_tune_free_seed1", "ppo_4p_free_seed0"]
)
def test_the_committed_run_records_still_read(name, tmp_path, capsys):
    """The shipped PPO agents' runs keep their record in the tree (config.json, command,
    evaluations; their training state left in issue 29 item 7): the config still reads
    as the run it was, and resuming it is refused in one line, changing nothing."""
    run = Path(shutil.copytree(ROOT / "checkpoints" / name, tmp_path / name))
    config = read_run_config(run)
    assert config.run_name == name and config.obs_spec.n_players == config.players
    before = folder_hash(run)
    assert train.main(["--resume", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "has no checkpoint to resume" in err and err.count("\n") == 0, err
    assert folder_hash(run) == before
