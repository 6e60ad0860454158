"""Planner agents (issue 11, item 4): a value net's planner named anywhere an agent is
named (make_policy, evaluate.py, play.py, environment opponents), told apart from a PPO
self-play snapshot by what the .npz says it is; exported to ONNX and played with numpy
and onnxruntime alone, choosing exactly the .npz planner's actions."""

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from benchmarks.exported_planner_parity import compare
from fivethousand_rl import export
from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.exported import ExportedBot, ExportError, OnnxValueNet, load_exported
from fivethousand_rl.agents.planner import PlannerBot
from fivethousand_rl.agents.value_net import FeatureSpec, ValueNet, agent_name, npz_kind
from fivethousand_rl.envs.game import Game
from fivethousand_rl.envs.rules import Rules

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT_2P = ROOT / "tests" / "data" / "ppo_2p_free_seed1" / "snapshots" / "step7753728.npz"
SMALL = Rules(target=2000, entry=300)  # a shrunken game: small nets, quick plans


def random_net(rules: Rules = SMALL, hidden=(32, 32), seed: int = 0, players: int = 8, table=()):
    """An untrained value net with numpy weights (no torch): any values, as a net may
    have, so near-ties are as likely as in a trained one."""
    spec = FeatureSpec(rules, max_players=players, table=tuple(table))
    rng = np.random.default_rng(seed)
    sizes = [spec.size, *hidden, spec.max_players]
    weights = [rng.normal(0, a**-0.5, size=(a, b)) for a, b in zip(sizes, sizes[1:], strict=False)]
    biases = [rng.normal(0, 0.1, size=b) for b in sizes[1:]]
    return ValueNet(spec, weights, biases)


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> Path:
    """A value net as shipped: checkpoints/planner-small/value_net.npz."""
    folder = tmp_path_factory.mktemp("checkpoints") / "planner-small"
    folder.mkdir()
    return random_net(SMALL).save(folder / "value_net.npz")


@pytest.fixture(scope="module")
def exported(shipped, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bots") / "planner-small.onnx"
    assert export.main([str(shipped), "-o", str(out)]) == 0
    return out


# ------------------------------------------------------------- the .npz agent
@pytest.mark.parametrize(
    "path, name",
    [
        ("checkpoints/planner-2p/value_net.npz", "planner-2p"),
        ("checkpoints/planner_2p_free_seed0/best/value_net.npz", "planner_2p_free_seed0"),
        ("checkpoints/planner_2p_free_seed0/latest/value_net.npz", "planner_2p_free_seed0"),
        ("nets/mine.npz", "mine"),
    ],
)
def test_a_planner_is_named_as_tables_show_it(path, name):
    assert agent_name(path) == name


def test_make_policy_gives_the_nets_planner(shipped):
    bot = make_policy(str(shipped))
    assert isinstance(bot, PlannerBot) and bot.name == "planner-small"
    assert bot.players == tuple(range(2, 9)) and bot.rules == SMALL
    game = Game(3, SMALL, seed=0)
    game.roll([1, 5, 2, 3, 4])
    assert bot.act(game, np.random.default_rng(0)) in game.legal_actions()


def test_a_ppo_snapshot_is_still_a_snapshot():
    assert npz_kind(SNAPSHOT_2P) is None
    bot = make_policy(str(SNAPSHOT_2P))
    assert type(bot).__name__ == "Snapshot" and bot.name == "ppo_2p_free_seed1@step7753728"


def foreign_npz(tmp_path: Path, case: str) -> Path:
    path = tmp_path / f"{case.replace(' ', '_')}.npz"
    if case == "another kind":
        np.savez(path, meta=np.array(json.dumps({"kind": "someone-elses-net"})))
    elif case == "no meta, no config":
        np.savez(path, weights=np.zeros(3))
    elif case == "meta not JSON":
        np.savez(path, meta=np.array("{not json"))
    elif case == "truncated value net":
        random_net(SMALL).save(path)
        path.write_bytes(path.read_bytes()[:300])
    elif case == "value net missing a layer":
        random_net(SMALL).save(path)
        with zipfile.ZipFile(path) as z:
            kept = {n: z.read(n) for n in z.namelist() if n != "w1.npy"}
        with zipfile.ZipFile(path, "w") as z:
            for n, data in kept.items():
                z.writestr(n, data)
    elif case == "not a zip":
        path.write_bytes(b"hello")
    return path


@pytest.mark.parametrize(
    "case, message",
    [
        ("another kind", "is an .npz of kind 'someone-elses-net', neither a value net nor"),
        ("no meta, no config", "could not load checkpoint"),
        ("meta not JSON", "cannot read"),
        ("truncated value net", "neither a value net nor a self-play snapshot (no .npz"),
        ("value net missing a layer", "cannot load a value net"),
        ("not a zip", "neither a value net nor a self-play snapshot (no .npz"),
    ],
)
def test_a_corrupt_or_foreign_npz_is_refused_in_one_line(tmp_path, case, message):
    path = foreign_npz(tmp_path, case)
    with pytest.raises(ValueError) as err:
        make_policy(str(path))
    assert message in str(err.value) and "\n" not in str(err.value), str(err.value)


@pytest.mark.parametrize(
    "players, rules, refusal",
    [
        (3, Rules(target=2000, entry=300, hold="all"), "values games under these rules only: "),
        (2, Rules(), "values games under these rules only: "),
        (5, SMALL, "values games of 2 to 4 players, not 5"),
    ],
)
def test_tables_and_rules_the_net_cannot_value_are_refused(tmp_path, players, rules, refusal):
    path = random_net(SMALL, players=4).save(tmp_path / "value_net.npz")
    with pytest.raises(ValueError) as err:
        make_policy(str(path)).check_game(players, rules)
    assert refusal in str(err.value) and "\n" not in str(err.value)
    for n in (2, 3, 4):
        make_policy(str(path)).check_game(n, SMALL)


def test_a_planner_plays_in_evaluate_as_an_opponent_and_in_play(shipped, tmp_path):
    from fivethousand_rl import evaluate, play
    from fivethousand_rl.envs.gym_env import FiveThousandEnv

    (tmp_path / "planner-x").mkdir()
    full = random_net(Rules(), hidden=(8,)).save(tmp_path / "planner-x" / "value_net.npz")
    summary = tmp_path / "e.json"
    assert evaluate.main([str(full), "smart", "--games", "4", "--json", str(summary)]) == 0
    names = [a["agent"] for a in json.loads(summary.read_text())["agents"]]
    assert names == ["planner-x", "smart"]
    env = FiveThousandEnv(n_players=3, opponents=[str(full), "smart"])
    env.reset(seed=0)
    assert [p.name for p in env.opponents] == ["planner-x", "smart"]
    done, steps = False, 0
    while not done:  # the learner always takes its first legal action
        _, _, done, truncated, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
        done, steps = done or truncated, steps + 1
    assert steps > 1
    lines = []
    answers = iter(["b", "r"] * 1500)
    code = play.main(
        ["--opponents", str(full), "--seed", "4"], ask=lambda _: next(answers), say=lines.append
    )
    assert code == 0 and lines[-1].startswith("Game over")


# ------------------------------------------------------------------ exported
def test_export_writes_a_planner_graph_and_its_metadata(shipped, exported):
    meta = json.loads(exported.with_suffix(".json").read_text())
    spec = FeatureSpec(SMALL)
    assert meta["kind"] == "planner" and meta["format_version"] == 3
    assert meta["value_net"] == {"spec": spec.to_dict(), "hidden": [32, 32]}
    assert meta["inputs"] == {"features": ["batch", spec.size]}
    assert meta["outputs"] == {"logits": ["batch", 8]}
    # Where it came from, without the exporting machine's folders (outside the current
    # folder: the model's folder and file).
    assert meta["provenance"]["value_net"] == f"{shipped.parent.name}/{shipped.name}"
    bot = make_policy(str(exported))
    assert isinstance(bot, PlannerBot) and isinstance(bot.value_fn, OnnxValueNet)
    assert bot.name == "planner-small" and bot.rules == SMALL


def test_exported_values_are_the_nets_to_float32_rounding(shipped, exported):
    net, onnx_net = ValueNet.load(shipped), load_exported(exported).value_fn
    rng = np.random.default_rng(1)
    scores = np.r_[0, np.arange(SMALL.entry, SMALL.target, 100)]
    for n in range(2, 9):
        positions = rng.choice(scores, size=(500, n))
        assert np.abs(net(positions) - onnx_net(positions)).max() < 1e-6


# Issue 11: exported bots reproduce the checkpoint's decisions on >= 10,000 positions:
# measured by benchmarks/exported_planner_parity.py (on a random 423-128-128-8 net: 10,000
# decisions at 2, 3 and 4 players, no disagreement, 12 near-ties 1e-12 to 1e-6 apart; a
# minute and more under pytest on a busy 2-core machine). Here fewer, in seconds.
PARITY_DECISIONS = 1000


def test_the_exported_planner_chooses_the_nets_actions(tmp_path):
    """Full rules, 2 and 3 players, every decision of real seeded games (the planner
    and scripted bots seated): the .onnx planner chooses the .npz planner's action."""
    (tmp_path / "planner-full").mkdir()
    path = tmp_path / "planner-full" / "value_net.npz"
    net = random_net(Rules(), hidden=(64, 64), seed=3).save(path)
    onnx_path = tmp_path / "planner-full.onnx"
    assert export.main([str(net), "-o", str(onnx_path)]) == 0
    npz, onnx = make_policy(str(net)), make_policy(str(onnx_path))
    result = compare(npz, onnx, [2, 3], PARITY_DECISIONS)
    assert result["decisions"] == PARITY_DECISIONS
    assert result["disagreements"] == 0, result["value_gaps"]


def test_an_exported_table_net_chooses_the_nets_actions(tmp_path):
    """A network of one table (it reads the agent's seat: FeatureSpec version 2) exports
    with its table, plays that table size only, and its .onnx planner chooses the .npz
    planner's actions; hints never come from it."""
    from fivethousand_rl.agents.value_net import shipped_planner

    (tmp_path / "planner-table").mkdir()
    path = tmp_path / "planner-table" / "value_net.npz"
    table = ("smart", "turn-ev", "threshold:350")
    net = random_net(Rules(), hidden=(64, 64), seed=5, table=table).save(path)
    onnx_path = tmp_path / "planner-table.onnx"
    assert export.main([str(net), "-o", str(onnx_path)]) == 0
    npz, onnx = make_policy(str(net)), make_policy(str(onnx_path))
    assert onnx.value_fn.spec.table == table
    result = compare(npz, onnx, [4], PARITY_DECISIONS)
    assert result["decisions"] == PARITY_DECISIONS
    assert result["disagreements"] == 0, result["value_gaps"]
    with pytest.raises(ValueError, match="values games of 4 players, not 3"):
        onnx.check_game(3, Rules())
    assert shipped_planner(4, Rules(), folder=tmp_path) is None


def test_the_shipped_multi_player_planner_exports_and_gives_the_hints_of_big_tables(tmp_path):
    """planner-multi (issue 11, items 4 and 5): its exported bot chooses its actions at
    3, 4 and 6 players, and it is the source of hints at every table of 3 to 8 players
    under the default rules (an estimate; 2 players keep the exact solver)."""
    from fivethousand_rl.agents.value_net import shipped_planner

    net = ROOT / "checkpoints" / "planner-multi" / "value_net.npz"
    onnx_path = tmp_path / "planner-multi.onnx"
    assert export.main([str(net), "-o", str(onnx_path)]) == 0
    result = compare(make_policy(str(net)), make_policy(str(onnx_path)), [3, 4, 6], 600)
    assert result["decisions"] == 600 and result["disagreements"] == 0, result["value_gaps"]
    for n in range(3, 9):
        assert shipped_planner(n, Rules()).name == "planner-multi"
    assert shipped_planner(3, Rules(hold="all")) is None  # trained under R5 "free" only


@pytest.mark.parametrize(
    "name, table, other_size",
    [
        ("planner-3p", ("smart", "turn-ev"), 4),
        ("planner-4p", ("smart", "turn-ev", "threshold:350"), 3),
        ("planner-6p", ("smart", "turn-ev", "smart", "turn-ev", "threshold:350"), 4),
    ],
)
def test_the_shipped_table_planners_export_and_play_their_table_only(
    tmp_path, name, table, other_size
):
    """planner-3p, planner-4p and planner-6p (issue 11, item 4): nets of one standard
    table (the first two made from averages with planner-multi's); the exported bot chooses
    their actions, they play games of their table's size only, and hints never come
    from them."""
    from fivethousand_rl.agents.value_net import ValueNet, shipped_planner

    players = len(table) + 1
    net = ROOT / "checkpoints" / name / "value_net.npz"
    assert ValueNet.load(net).spec.table == table
    onnx_path = tmp_path / f"{name}.onnx"
    assert export.main([str(net), "-o", str(onnx_path)]) == 0
    result = compare(make_policy(str(net)), make_policy(str(onnx_path)), [players], 600)
    assert result["decisions"] == 600 and result["disagreements"] == 0, result["value_gaps"]
    with pytest.raises(ValueError, match=f"values games of {players} players, not {other_size}"):
        make_policy(str(net)).check_game(other_size, Rules())
    assert shipped_planner(players, Rules()).name == "planner-multi"


def test_the_exported_planner_chooses_the_nets_actions_in_a_small_game(shipped, exported):
    result = compare(make_policy(str(shipped)), make_policy(str(exported)), [2, 4, 8], 3000)
    assert result["decisions"] == 3000 and result["disagreements"] == 0, result["value_gaps"]


def test_the_exported_planner_runs_without_torch(exported):
    code = (
        "import sys, numpy as np\n"
        "from fivethousand_rl.agents import make_policy\n"
        "from fivethousand_rl.envs.game import Game\n"
        "from fivethousand_rl.envs.rules import Rules\n"
        f"bot = make_policy({str(exported)!r})\n"
        "g = Game(4, Rules(target=2000, entry=300), seed=0); g.roll([1, 1, 5, 2, 3])\n"
        "print(bot.act(g, np.random.default_rng(0)) in g.legal_actions())\n"
        "print('torch' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.stdout.split() == ["True", "False"], result.stderr


def rewrite_metadata(exported: Path, tmp_path: Path, change: dict) -> Path:
    bot = tmp_path / "bot.onnx"
    bot.write_bytes(exported.read_bytes())
    meta = json.loads(exported.with_suffix(".json").read_text())
    bot.with_suffix(".json").write_text(json.dumps({**meta, **change}))
    return bot


@pytest.mark.parametrize(
    "change, message",
    [
        ({"kind": "mystery"}, "unknown kind 'mystery'"),
        ({"value_net": None}, "its metadata's value_net"),
        ({"value_net": {"spec": {"version": 99}}}, "value-net features version 99"),
        (
            {"value_net": {"spec": FeatureSpec(SMALL, max_players=4).to_dict()}},
            "the graph maps 183 inputs to 8 outputs, its spec says 91 to 4",
        ),
        (
            {"value_net": {"spec": FeatureSpec(Rules()).to_dict()}},
            "the graph maps 183 inputs to 8 outputs, its spec says 423 to 8",
        ),
    ],
)
def test_a_broken_planner_export_is_refused_in_one_line(exported, tmp_path, change, message):
    bot = rewrite_metadata(exported, tmp_path, change)
    with pytest.raises(ExportError) as err:
        make_policy(str(bot))
    assert message in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_a_planner_export_is_no_ppo_bot(exported):
    with pytest.raises(ExportError, match="is an exported planner, not a PPO bot"):
        ExportedBot(exported)


def test_exporting_a_planner_needs_a_value_net(tmp_path, capsys):
    snapshot_like = foreign_npz(tmp_path, "no meta, no config")
    assert export.main([str(snapshot_like), "-o", str(tmp_path / "x.onnx")]) == 2
    # Issue 28 item 11: the loader's own words, the same line evaluate.py gives this file.
    assert "could not load checkpoint" in capsys.readouterr().err
    broken = foreign_npz(tmp_path, "value net missing a layer")
    assert export.main([str(broken), "-o", str(tmp_path / "y.onnx")]) == 2
    err = capsys.readouterr().err.strip()
    assert "cannot load a value net" in err and err.count("\n") == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([snapshot_like.name, broken.name])
