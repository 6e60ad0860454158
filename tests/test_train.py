"""train.py: a run end to end, exact resume, checkpoints as players, clear errors."""

import json
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import evaluate
import train
from agents import make_policy
from agents.neural import SB3Policy
from envs.game import ROLL, Game

ROOT = Path(__file__).resolve().parent.parent

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

    from agents.networks import NumpyScorer
    from envs.encoding import encode_rich

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
        (["--params", "lr=0.1"], "unknown config key 'lr'"),
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
        (["--params", "eval_freq=-5"], "eval_freq and self_play_weight must be >= 0"),
        (["--init-from", "no/such/model.zip"], "checkpoint not found: no/such/model.zip"),
        (["--init-from", "model.onnx"], "init_from must be a MaskablePPO checkpoint (.zip)"),
    ],
)
def test_bad_arguments_are_one_clear_line(args, message, capsys, tmp_path):
    assert train.main([*args, "--checkpoints", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and err.count("\n") == 0


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
    config = train.build_config(train.parse_args(["--preset", "quick"]))
    assert config.players == 2 and config.run_name == "quick_free_seed0"
    for preset in ("ppo_2p", "ppo_4p", "ppo_2p_tune"):
        assert train.build_config(train.parse_args(["--preset", preset])).self_play_weight > 0
    # The second stage starts from the first stage's committed model.
    tune = train.build_config(train.parse_args(["--preset", "ppo_2p_tune"]))
    assert train.init_path(tune).is_file() and tune.ent_coef == 0


def test_ship_makes_a_model_card(trained_run, tmp_path):
    import ship

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
    import ship  # a model card tells both stages, steps counted on from the first

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
