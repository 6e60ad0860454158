"""PPO in JAX (agents/training/jax_ppo.py, train_jax.py; issue 45 item 5): a tiny run
trains, stops, resumes to exactly the state of an unbroken run, and exports a bot that
the toolkit plays choosing as the JAX network does; bad settings are refused in one
line. One small config, compiled once for the whole file."""

import json
import sys

import pytest

pytest.importorskip("jax")
pytest.importorskip("optax")
pytest.importorskip("onnx")

import jax  # noqa: E402
import numpy as np  # noqa: E402

from fivethousand_rl import train_jax  # noqa: E402
from fivethousand_rl.agents.exported import MASKED_LOGIT, ExportedBot  # noqa: E402
from fivethousand_rl.agents.training import jax_ppo  # noqa: E402
from fivethousand_rl.envs.batch import ROLL_ID  # noqa: E402
from fivethousand_rl.envs.encoding import ObsSpec  # noqa: E402
from fivethousand_rl.envs.rules import Rules  # noqa: E402

TINY = [
    "--num-envs", "64", "--num-steps", "16", "--total-steps", "2048",
    "--update-epochs", "2", "--num-minibatches", "4", "--chunk-updates", "1",
    "--actor-layers", "32", "--critic-layers", "32", "--opponents", "self", "random",
    "--network", "mlp", "--activation", "tanh",
]  # fmt: skip


def tiny_config() -> jax_ppo.JaxPPOConfig:
    return jax_ppo.JaxPPOConfig(
        num_envs=64,
        num_steps=16,
        total_steps=2048,
        update_epochs=2,
        num_minibatches=4,
        chunk_updates=1,
        actor_layers=[32],
        critic_layers=[32],
        opponents=["self", "random"],
        network="mlp",
        activation="tanh",
    )


def test_a_tiny_run_stops_resumes_exactly_and_exports_what_it_plays(tmp_path, capsys):
    args = [*TINY, "--checkpoints", str(tmp_path), "--run-name", "run"]
    assert train_jax.main([*args, "--stop-after", "1"]) == 0
    folder = tmp_path / "run"
    history = json.loads((folder / "history.json").read_text())
    assert [r["update"] for r in history] == [1]
    assert (folder / "model.onnx").is_file() and (folder / "checkpoint.npz").is_file()
    assert not json.loads((folder / "summary.json").read_text())["complete"]

    assert train_jax.main(["--resume", str(folder)]) == 0
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["complete"] and summary["updates"] == 2 and summary["steps"] == 2048
    out = capsys.readouterr().out
    assert "steps/s" in out and "win: self" in out and "(resumed)" in out

    config = tiny_config()
    trainer = jax_ppo.make_train(config)
    resumed, meta = jax_ppo.load_checkpoint(folder / "checkpoint.npz", trainer)
    assert meta["update"] == 2 and len(meta["history"]) == 2
    unbroken, history, complete = jax_ppo.train(config, tmp_path / "straight.npz", say=print)
    assert complete and [r["update"] for r in history] == [1, 2]
    same = jax.tree_util.tree_map(np.array_equal, resumed.params, unbroken.params)
    assert all(jax.tree_util.tree_leaves(same))  # the resumed run is the unbroken one

    # Training moved the network: not the initial weights any more, and PPO measured a
    # change of policy (its approximate KL) in every update.
    first = trainer.init(jax.random.PRNGKey(config.seed)).params
    moved = jax.tree_util.tree_map(lambda a, b: not np.allclose(a, b), first, unbroken.params)
    assert all(jax.tree_util.tree_leaves(moved))
    assert all(r["approx_kl"] > 0 for r in history)

    # The export: the project's "ppo" metadata and the JAX network's greedy choices.
    meta = json.loads((folder / "model.json").read_text())
    assert meta["kind"] == "ppo" and meta["obs_spec"] == ObsSpec("compact", 2, Rules()).to_dict()
    assert meta["provenance"]["training_config"]["num_envs"] == 64
    bot = ExportedBot(folder / "model.onnx")
    states = resumed.env_state
    obs, mask = np.asarray(states.observation), np.asarray(states.legal_action_mask)
    rng = np.random.default_rng(0)
    obs = np.concatenate([obs, obs + rng.normal(0, 0.3, obs.shape).astype(np.float32)])
    mask = np.concatenate([mask, mask])
    choices = bot.choose(obs, mask, rng)
    greedy = jax_ppo.greedy_policy(resumed.params, trainer.actor)(obs, mask)
    assert np.array_equal(choices, greedy) and mask[np.arange(len(mask)), greedy].all()
    logits = bot.session.run(None, {bot.input_name: obs})[0]
    jax_logits = trainer.actor.every_logit(resumed.params, obs)
    np.testing.assert_allclose(logits, np.asarray(jax_logits), rtol=1e-5, atol=1e-5)


def test_the_action_scoring_actor_trains_and_exports_what_it_plays(tmp_path):
    """--network action-scoring: the actor reads the rich observation of the JAX game
    (envs.encoding's rich spec in the export), scores the legal rows in training as the
    exported graph does, and the exported bot chooses as the JAX network."""
    args = [*TINY, "--network", "action-scoring", "--activation", "relu"]  # the last wins
    args += ["--state-layers", "16", "--scorer-layers", "16", "16"]
    assert train_jax.main([*args, "--checkpoints", str(tmp_path), "--run-name", "scorer"]) == 0
    folder = tmp_path / "scorer"
    meta = json.loads((folder / "model.json").read_text())
    assert meta["obs_spec"] == ObsSpec("rich", 2, Rules()).to_dict()
    recorded = json.loads((folder / "config.json").read_text())
    assert recorded.pop("method") == "jax_ppo"
    config = jax_ppo.JaxPPOConfig.from_dict(recorded)
    trainer = jax_ppo.make_train(config)
    runner, _ = jax_ppo.load_checkpoint(folder / "checkpoint.npz", trainer)
    assert set(runner.params) == {"state", "action_in", "state_in", "scorer", "critic"}
    obs = np.asarray(runner.env_state.observation)
    mask = np.asarray(runner.env_state.legal_action_mask)
    actor = trainer.actor
    every = np.asarray(actor.every_logit(runner.params, obs))
    legal_only = np.asarray(actor.logits(runner.params, obs))
    np.testing.assert_allclose(legal_only[mask], every[mask], rtol=1e-5, atol=1e-6)
    assert (legal_only[~mask] == 0).all()  # not scored: masked anyway
    bot = ExportedBot(folder / "model.onnx")
    logits = bot.session.run(None, {bot.input_name: obs})[0]
    np.testing.assert_allclose(logits[mask], every[mask], rtol=1e-5, atol=1e-5)
    assert (logits[~mask] == MASKED_LOGIT).all()  # the graph scores the legal rows only
    greedy = jax_ppo.greedy_policy(runner.params, actor)(obs, mask)
    assert np.array_equal(bot.choose(obs, mask, None), greedy)

    # The most crowded roll there is (11 holds of 1 1 1 5 5, and banks where R8 allows):
    # every legal action is still scored in training.
    game = trainer.game
    crowded = game.from_arrays([1000, 0], 0, 0, 5, ROLL_ID[(1, 1, 1, 5, 5)])
    legal = np.asarray(crowded.legal_action_mask)
    assert legal[:32].sum() == 11 and legal[32:].sum() > 0 and actor.max_legal == 22
    rich = np.asarray(crowded.observation)[None]
    scored = np.asarray(actor.logits(runner.params, rich))[0]
    every = np.asarray(actor.every_logit(runner.params, rich))[0]
    np.testing.assert_allclose(scored[legal], every[legal], rtol=1e-5)
    exported = bot.session.run(None, {bot.input_name: rich})[0][0]  # and by the export
    np.testing.assert_allclose(exported[legal], every[legal], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--num-minibatches", "3"], "multiple of num_minibatches"),
        (["--opponents", "nobody"], "unknown JAX bot"),
        (["--opponents", "self@0"], "opponent weight must be a positive number"),
        (["--activation", "sigmoid"], "activation"),
        (["--actor-layers", "0"], "actor_layers"),
        (["--network", "cnn"], "network"),
        (["--scorer-layers", "0"], "scorer_layers"),
        (["--stop-after", "-1"], "--stop-after"),
        (["--resume", "no/such/run"], "--resume"),
    ],
)
def test_bad_settings_are_refused_in_one_line(tmp_path, capsys, argv, says):
    assert train_jax.main([*argv, "--checkpoints", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and says in err
    assert not any(tmp_path.iterdir())  # refused before any folder is made


def test_lanes_are_shared_out_by_weight():
    names, lanes = jax_ppo.lane_opponents(["self@3", "turn-ev"], 10)
    assert names == ["self", "turn-ev"] and np.bincount(lanes).tolist() == [8, 2]
    with pytest.raises(ValueError, match="each of 2 one"):
        jax_ppo.lane_opponents(["self@100", "random"], 4)


def test_without_the_jax_extra_the_program_says_so_in_one_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "optax", None)
    monkeypatch.delitem(sys.modules, "fivethousand_rl.agents.training.jax_ppo")
    assert train_jax.main(["--help"], prog="fivethousand train-jax") == 2
    err = capsys.readouterr().err
    assert err == "error: fivethousand train-jax needs optax: pip install 'fivethousand-rl[jax]'\n"


def test_the_seeds_report_measures_each_run_exactly(tmp_path, capsys):
    """benchmarks/jax_ppo_seeds.py (issue 45 item 5's report) on a tiny run of a
    shrunken game (V5: target 1000): each run's speed from its summary, games against
    optimal, its exact exploitability, the mean; a folder that is no run: one line."""
    from benchmarks import jax_ppo_seeds
    from fivethousand_rl.agents.best_response import exploitability

    small = ["--target", "1000", "--entry", "300", "--checkpoints", str(tmp_path)]
    assert train_jax.main([*TINY, *small, "--seed", "3", "--run-name", "s3"]) == 0
    capsys.readouterr()
    runs = [tmp_path / "s3"] * 2  # one run twice: two rows, and their mean
    plot = tmp_path / "seeds.png"
    assert jax_ppo_seeds.main([*map(str, runs), "--games", "20", "--plot", str(plot)]) == 0
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    rows, mean = report["rows"], report["mean"]
    assert [row["seed"] for row in rows] == [3, 3] and plot.stat().st_size > 0
    for run, row in zip(runs, rows, strict=True):
        summary = json.loads((run / "summary.json").read_text())
        assert row["steps"] == summary["steps"] == 2048 and row["games"] == 20
        assert row["steps_per_s"] == pytest.approx(summary["steps_per_s"], abs=0.05)
        assert row["steps_per_s"] == jax_ppo.training_speed(
            json.loads((run / "history.json").read_text())
        )
        rules = Rules(target=1000, entry=300)
        assert row["exploitability"] == exploitability(
            str(run / "model.onnx"), rules=rules, show_progress=False
        )
    assert mean["exploitability"] == pytest.approx(sum(r["exploitability"] for r in rows) / 2)
    assert jax_ppo_seeds.main([str(tmp_path), "--games", "20"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "not a train_jax run" in err
    (runs[0] / "model.onnx").write_bytes(b"not a model")  # a corrupt model: one line
    assert jax_ppo_seeds.main([str(runs[0]), "--games", "20"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {runs[0]}: ") and err.count("\n") == 1
    (runs[0] / "history.json").write_text("{")  # a corrupt record: one line
    assert jax_ppo_seeds.main([str(runs[0]), "--games", "20"]) == 2
    assert "history.json cannot be read" in capsys.readouterr().err
