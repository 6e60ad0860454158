"""The "bring your own agent" page's scripts run (issue 41 item 3): examples/cleanrl_ppo.py
trains at a small size from its command line and saves a network that loads without
pickle; examples/evaluate_own_agent.py makes it a player (``agents.from_function``) that
plays legal moves in a tournament, gets an exact exploitability (on a shrunken game,
as tests/test_best_response.py shrinks it) and a leaderboard row."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from fivethousand_rl.envs.driver import play
from fivethousand_rl.envs.game import Game
from fivethousand_rl.envs.rules import Rules

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SMALL = Rules(target=800, entry=300)  # 6 scores a player can start a turn with
TINY_RUN = ["--total-steps", "1024", "--num-envs", "16", "--num-steps", "32"]


@pytest.fixture(scope="module")
def examples():
    """The two example scripts, imported as modules."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        import cleanrl_ppo
        import evaluate_own_agent

        yield cleanrl_ppo, evaluate_own_agent
    finally:
        sys.path.remove(str(EXAMPLES))


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    """A network trained by the script as a user runs it (two updates of 16 games)."""
    out = tmp_path_factory.mktemp("own-agent") / "model.pt"
    command = [sys.executable, str(EXAMPLES / "cleanrl_ppo.py"), *TINY_RUN, "--seed", "3"]
    result = subprocess.run(
        [*command, "--out", str(out)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "step 1,024:" in result.stdout and out.is_file()
    return out


def test_the_saved_file_is_data_with_its_config(model, examples):
    saved = torch.load(model, weights_only=True)  # tensors and plain values: no pickle code
    assert saved["config"]["total_steps"] == 1024 and saved["config"]["seed"] == 3
    net = examples[0].load(str(model))
    assert net.obs_size == 3 * 2 + 41 and not net.training


def test_training_is_seeded(examples):
    cleanrl_ppo = examples[0]
    config = cleanrl_ppo.Config(total_steps=512, num_envs=8, num_steps=32, seed=5)
    first, second = (cleanrl_ppo.train(config).state_dict() for _ in range(2))
    assert all(torch.equal(first[key], second[key]) for key in first)


def test_the_agent_plays_legal_moves(model, examples):
    agent = examples[1].make_agent(str(model))
    game = play(Game(2, Rules(), seed=1), [agent, agent], np.random.default_rng(0))
    assert game.over  # one game by act(), seat by seat: an illegal action raises
    pairwise = examples[1].tournament(agent, games=8, seed=0)  # batched: decide() checks
    assert {pairwise[agent.name][bot]["games"] for bot in examples[1].OPPONENTS} == {8}


def test_exploitability_and_leaderboard_row(model, examples, capsys):
    evaluate = examples[1]
    from fivethousand_rl.agents.best_response import exploitability

    small = evaluate.make_agent(str(model), rules=SMALL)
    assert 0.0 < exploitability(small, rules=SMALL, show_progress=False) < 0.5
    evaluate.main(evaluate.Options(str(model), games=8, exploitability=False))
    printed = capsys.readouterr().out
    assert "against optimal:" in printed and "of 8 games" in printed
    rows = [line for line in printed.splitlines() if line.startswith("| `")]
    assert [row.split("|")[1].strip(" `") for row in rows][-1] == "my-ppo"
    assert {"`ppo-2p`", "`planner-2p`", "`optimal`"} <= {row.split("|")[1].strip() for row in rows}


def test_the_page_shows_what_its_commands_printed():
    """docs/getting-started/own-agent.md's figures are the output of the evaluation it
    names (kept in examples/my-ppo/evaluation.txt), for the model the training command
    it names made."""
    page = (ROOT / "docs" / "getting-started" / "own-agent.md").read_text()
    kept = ROOT / "examples" / "my-ppo"
    for block in (kept / "evaluation.txt").read_text().strip().split("\n\n"):
        assert block in page
    config = torch.load(kept / "model.pt", weights_only=True)["config"]
    steps, seed = config["total_steps"], config["seed"]
    assert f"--total-steps {steps} --seed {seed}" in page
    assert "evaluate_own_agent.py examples/my-ppo/model.pt --games 20000 --seed 0" in page
    assert (kept / "model.pt").stat().st_size < 1_000_000
