"""export.py AGENT --out DIR (issue 44 item 2): a self-contained bundle folder, what its
bundle.json says, its test vectors against the toolkit, its provenance, and refusals.
Issue 55: the runtime bundle (--runtime) that both ports play from, and --opset N."""

import json
import os
import re
import tomllib
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from fivethousand_rl import export
from fivethousand_rl.agents import exporting, make_policy
from fivethousand_rl.agents.exported import ExportedBot
from fivethousand_rl.envs.encoding import ObsSpec
from fivethousand_rl.envs.game import Game, GameState
from fivethousand_rl.envs.rules import Rules
from fivethousand_rl.envs.solver import turn_ev_table
from tests.helpers import load_python_port

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bundles") / "ppo-2p"
    assert export.main(["ppo-2p", "--out", str(out)]) == 0
    return out


def read(bundle: Path, name: str = "bundle.json") -> dict:
    return json.loads((bundle / name).read_text())


def test_the_bundle_holds_its_files_with_their_hashes(bundle):
    meta = read(bundle)
    assert meta["format"] == exporting.BUNDLE_FORMAT and meta["format_version"] == 1
    names = {"model.onnx", "model.json", "weights.bin", "turn_ev.f64", "test_vectors.json"}
    names.add("messages.json")  # the texts of the page of ports/web, translated
    assert set(meta["files"]) == names
    assert {p.name for p in bundle.iterdir()} == names | {"bundle.json"}
    for name, info in meta["files"].items():
        assert exporting.sha256((bundle / name).read_bytes()) == info["sha256"]
        assert (bundle / name).stat().st_size == info["bytes"]
    assert not list(bundle.parent.glob(".*"))  # no partial folder left beside it


def test_the_bundle_names_the_project_s_licence(bundle):
    """Issue 53 item 2: bundle.json and the model's metadata say the licence, the one
    pyproject.toml gives the package."""
    licence = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    assert read(bundle)["license"] == licence == read(bundle, "model.json")["license"]


def test_every_rule_field_and_the_scoring_are_recorded(bundle):
    rules = read(bundle)["rules"]
    for name, value in asdict(Rules()).items():
        assert rules[name] == value and name in rules["meanings"]
    assert rules["score_step"] == 100
    assert rules["scoring"]["triple"]["1"] == 1100 and rules["scoring"]["straight"] == 1500


def test_the_observation_layout_is_the_spec_s(bundle):
    layout = read(bundle)["observation"]
    spec = ObsSpec("rich", 2, Rules())
    assert layout["size"] == spec.size == 2837 and layout["encoding"] == "rich"
    slices = {s["name"]: (s["offset"], s["offset"] + s["size"]) for s in layout["slices"]}
    assert slices == {name: (s.start, s.stop) for name, s in spec.slices.items()}
    assert all(s["meaning"] for s in layout["slices"])
    columns = layout["action_row"]["columns"]
    assert layout["action_row"]["size"] == sum(c["size"] for c in columns) == 42
    assert [c["index"] for c in columns] == sorted(c["index"] for c in columns)


def test_the_turn_ev_table_is_the_solver_s_with_its_index(bundle):
    table = read(bundle)["tables"]["turn_ev"]
    value = np.frombuffer((bundle / table["file"]).read_bytes(), dtype="<f8")
    solved = turn_ev_table(Rules())
    assert value.reshape(table["shape"]).tobytes() == solved.value.astype("<f8").tobytes()
    assert "min(total, 40000) // 50" in table["index"] and table["cap"] == solved.cap
    entered, total, dice = 1, 1250, 3
    flat = (entered * table["shape"][1] + min(total, table["cap"]) // table["step"]) * 6 + dice
    assert value[flat] == solved.roll_value(True, total, dice)


def test_the_actions_and_the_network_are_described(bundle):
    meta = read(bundle)
    assert meta["actions"]["count"] == 64 and meta["actions"]["bank_bit"] == 32
    net = meta["network"]
    assert net["input"] == "obs" and net["output"] == "logits" and net["file"] == "model.onnx"
    plain = net["plain"]
    assert {n["op"] for n in plain["nodes"]} <= set(exporting.PLAIN_OPS)
    floats = [t for t in plain["tensors"].values() if t["dtype"] in FLOAT_SIZES]
    ends = [t["offset"] + t["count"] * FLOAT_SIZES[t["dtype"]] for t in floats]
    assert max(ends) == (bundle / "weights.bin").stat().st_size
    assert all(t["offset"] % FLOAT_SIZES[t["dtype"]] == 0 for t in floats)  # typed arrays


FLOAT_SIZES = {"float32": 4, "float16": 2}


def float_tensors(network: dict, weights: bytes) -> dict[str, np.ndarray]:
    """The plain network's float tensors read from `weights`, as float32."""
    return {
        name: np.frombuffer(weights, f"<f{FLOAT_SIZES[t['dtype']]}", t["count"], t["offset"])
        .astype(np.float32)
        .reshape(t["shape"])
        for name, t in network["tensors"].items()
        if t["dtype"] in FLOAT_SIZES
    }


def rebuild(state: dict, rules: Rules) -> Game:
    game = Game(len(state["scores"]), rules)
    game.state = GameState.from_dict(state, rules)
    return game


def test_the_test_vectors_are_the_toolkit_s_on_real_games(bundle):
    """At least 1,000 decisions of games against optimal, smart and turn-ev: each state
    rebuilt gives the recorded observation and mask, and the exported bot's action."""
    cases = read(bundle, "test_vectors.json")
    assert cases["count"] == len(cases["vectors"]) >= 1000
    assert {g["opponent"] for g in cases["games"]} == {"optimal", "smart", "turn-ev"}
    spec, rules = ObsSpec("rich", 2, Rules()), Rules()
    bot = ExportedBot(bundle / "model.onnx")
    rng = np.random.default_rng(0)
    for case in cases["vectors"]:
        game = rebuild(case["state"], rules)
        obs = spec.encode(game, case["seat"])
        want = np.zeros(spec.size, dtype=np.float32)
        want[case["obs"]["index"]] = case["obs"]["value"]
        assert obs.tobytes() == want.tobytes()
        assert exporting.sha256(obs.astype("<f4").tobytes()) == case["obs_sha256"]
        assert np.flatnonzero(game.action_mask()).tolist() == case["legal"]
        assert bot.act(game, rng) == case["action"]


def absolute_paths(value: object) -> list[str]:
    if isinstance(value, dict):
        return [p for v in value.values() for p in absolute_paths(v)]
    if isinstance(value, list):
        return [p for v in value for p in absolute_paths(v)]
    if isinstance(value, str) and (os.path.isabs(value) or re.match(r"^[A-Za-z]:[\\/]", value)):
        return [value]
    return []


def test_provenance_names_no_local_path(bundle):
    meta = read(bundle)
    provenance = meta["provenance"]
    assert provenance["agent"] == "ppo-2p" and provenance["toolkit"] == "fivethousand-rl"
    assert provenance["checkpoint_sha256"] and provenance["exported_at"]
    assert provenance["git_commit"] is None or re.fullmatch(
        r"[0-9a-f]{40}", provenance["git_commit"]
    )
    for name in ("bundle.json", "model.json"):
        text = (bundle / name).read_text()
        assert absolute_paths(json.loads(text)) == [] and str(ROOT) not in text
        assert str(Path.home()) not in text


def test_the_toolkit_plays_the_bundle_s_model(bundle):
    bot = make_policy(str(bundle / "model.onnx"))
    game = Game(2, seed=3)
    game.roll()
    assert bot.act(game, np.random.default_rng(0)) in game.legal_actions()


def test_relative_drops_absolute_folders():
    config = {"init_from": "/home/me/run/model.zip", "runs": ["C:\\runs\\a.zip", "rel/b.zip"]}
    assert exporting._relative(config) == {"init_from": "model.zip", "runs": ["a.zip", "rel/b.zip"]}


def not_loaded(*_args, **_kwargs):
    raise AssertionError("a refused bundle must be refused before the checkpoint is loaded")


@pytest.mark.parametrize("agent", ["planner-2p", "planner-multi"])
def test_a_planner_is_refused_in_one_line(agent, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(exporting, "SB3Policy", not_loaded)
    assert export.main([agent, "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {agent} is a planner") and "\n" not in err, err
    assert "-o FILE.onnx" in err and list(tmp_path.iterdir()) == []


BAD_FOLDERS = {
    "a file": (lambda t: t / "a-file", "is a file"),
    "a folder of other things": (lambda t: t / "other", "is not empty and holds no bundle"),
    "two folders missing": (lambda t: t / "x" / "y" / "b", "does not exist"),
    "an exported bot without metadata": (lambda t: t / "b", "has no metadata file"),
    "another kind of file": (lambda t: t / "b", "takes an SB3 checkpoint (.zip) or a value net"),
}


@pytest.mark.parametrize("case", BAD_FOLDERS)
def test_bad_bundle_paths_are_refused_before_any_work(case, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(exporting, "SB3Policy", not_loaded)
    (tmp_path / "a-file").write_text("")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    (tmp_path / "bot.onnx").write_text("")
    (tmp_path / "bot.pt").write_text("")
    before = sorted(tmp_path.rglob("*"))
    where, message = BAD_FOLDERS[case]
    agents = {
        "an exported bot without metadata": tmp_path / "bot.onnx",
        "another kind of file": tmp_path / "bot.pt",
    }
    agent = str(agents.get(case, "ppo-2p"))
    assert export.main([agent, "--out", str(where(tmp_path))]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err, err
    assert sorted(tmp_path.rglob("*")) == before


def test_out_ending_in_onnx_and_o_export_one_file(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(export, "export", lambda c, o, n: calls.append(Path(o)) or {"kind": "x"})
    monkeypatch.setattr(export, "export_bundle", not_loaded)
    with pytest.raises(KeyError):  # the fake metadata lacks a spec: only the call matters
        export.main(["ppo-2p", "--out", str(tmp_path / "bot.onnx")])
    with pytest.raises(KeyError):
        export.main(["ppo-2p", "-o", str(tmp_path / "other.onnx")])
    assert calls == [tmp_path / "bot.onnx", tmp_path / "other.onnx"]


def test_o_and_out_together_are_refused(capsys):
    with pytest.raises(SystemExit):
        export.main(["ppo-2p", "-o", "a.onnx", "--out", "b"])
    assert "not both" in capsys.readouterr().err


def test_a_network_of_other_operators_is_refused(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Softmax", ["obs"], ["logits"])],
        "g",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 64])],
    )
    onnx.save(helper.make_model(graph), str(tmp_path / "m.onnx"))
    with pytest.raises(exporting.BundleRefused, match="operators Softmax, which the bundle"):
        exporting.plain_network(tmp_path / "m.onnx")


def test_a_new_bundle_replaces_an_old_one_whole(tmp_path):
    out, new = tmp_path / "b", tmp_path / ".b.partial"
    out.mkdir()
    (out / "bundle.json").write_text("old")
    (out / "stale.bin").write_text("old")
    new.mkdir()
    (new / "bundle.json").write_text("new")
    exporting._put_in_place(new, out)
    assert [p.name for p in out.iterdir()] == ["bundle.json"]
    assert (out / "bundle.json").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]


def test_an_exported_bot_is_bundled_as_it_is_without_torch(bundle, tmp_path, monkeypatch):
    """The light install's shipped agents are their .onnx exports: bundled from the graph
    and its metadata, nothing exported again; the same network gives the same vectors."""
    monkeypatch.setattr(exporting, "SB3Policy", not_loaded)
    monkeypatch.setattr(exporting, "export", not_loaded)
    out = tmp_path / "again"
    assert export.main([str(bundle / "model.onnx"), "--out", str(out), "--vectors", "50"]) == 0
    assert (out / "model.onnx").read_bytes() == (bundle / "model.onnx").read_bytes()
    first, again = read(bundle, "test_vectors.json"), read(out, "test_vectors.json")
    assert again["vectors"] == first["vectors"][: len(again["vectors"])]
    meta = read(out)
    assert (
        meta["provenance"]["checkpoint_sha256"] == read(bundle)["provenance"]["checkpoint_sha256"]
    )
    assert absolute_paths(meta) == [] and absolute_paths(read(out, "model.json")) == []


def test_an_older_export_is_bundled_without_its_local_metadata(bundle, tmp_path):
    """Issue 53 item 3: an export made before torch's node metadata was dropped (its
    stack traces name the exporting machine's files) is bundled without it."""
    import onnx

    old = onnx.load(str(bundle / "model.onnx"))
    trace = 'File "/home/me/fivethousand_rl/export.py", line 149, in forward'
    old.graph.node[0].metadata_props.add(key="pkg.torch.onnx.stack_trace", value=trace)
    old.graph.node[0].doc_string = trace
    onnx.save(old, str(tmp_path / "old.onnx"))
    (tmp_path / "old.json").write_bytes((bundle / "model.json").read_bytes())
    out = tmp_path / "b"
    assert export.main([str(tmp_path / "old.onnx"), "--out", str(out), "--vectors", "10"]) == 0
    assert b"/home/me" not in (out / "model.onnx").read_bytes()
    assert (out / "model.onnx").read_bytes() == (bundle / "model.onnx").read_bytes()


def test_an_exported_planner_is_refused_as_a_planner(tmp_path, capsys):
    assert export.main(["planner-2p", "-o", str(tmp_path / "p.onnx")]) == 0
    capsys.readouterr()
    assert export.main([str(tmp_path / "p.onnx"), "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip()
    assert "is a planner" in err and "\n" not in err and not (tmp_path / "b").exists()


# ------------------------------------------------ issue 55 item 6: what a porter can trust
def numbers(value: object) -> list:
    """Every number in a parsed JSON value."""
    if isinstance(value, dict):
        return [x for v in value.values() for x in numbers(v)]
    if isinstance(value, list):
        return [x for v in value for x in numbers(v)]
    return [value] if isinstance(value, int | float) and not isinstance(value, bool) else []


def test_every_number_in_the_bundle_reads_exactly_in_javascript(bundle):
    """No integer in a JSON file of the bundle (the plain network's constants among them)
    lies beyond 2**53 - 1, where a JavaScript number stops holding integers exactly, and
    no NaN or Infinity, which JSON.parse refuses; the weights are finite float32."""

    def refuse(constant: str):
        raise AssertionError(f"a {constant} in the bundle's JSON")

    for path in sorted(bundle.glob("*.json")):
        values = numbers(json.loads(path.read_text(), parse_constant=refuse))
        unsafe = [x for x in values if isinstance(x, int) and abs(x) > 2**53 - 1]
        assert unsafe == [], (path.name, unsafe[:3])
    weights = float_tensors(read(bundle)["network"]["plain"], (bundle / "weights.bin").read_bytes())
    assert all(np.isfinite(a).all() for a in weights.values())


def float_graph(tmp_path: Path, arrays: dict[str, np.ndarray]) -> Path:
    """obs (1, 2) -> obs + each of `arrays` (float32, added in turn) -> logits."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    names, nodes = ["obs"], []
    for name in arrays:
        nodes.append(helper.make_node("Add", [names[-1], name], [f"sum_{name}"]))
        names.append(f"sum_{name}")
    nodes.append(helper.make_node("Identity", [names[-1]], ["logits"]))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, [1, 2])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.asarray(a, np.float32), k) for k, a in arrays.items()],
    )
    path = tmp_path / "floats.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_a_tensor_is_stored_as_float16_only_when_every_number_is_one_exactly(tmp_path):
    """Issue 55 item 2: float16 storage loses nothing. One number that is no float16 (a
    float32's extra precision, beyond float16's range, a NaN) keeps its tensor float32;
    each tensor reads back exactly, aligned for a typed array of its type."""
    exact = np.array([[0.5, -(2.0**-24)], [65504.0, -0.0]], np.float32)  # subnormal, max
    arrays = {
        "exact": exact,
        "odd": np.array([3.0], np.float32),  # an odd count before a float32 tensor
        "precise": exact + np.array([[2.0**-12, 0], [0, 0]], np.float32),
        "large": np.array([1e8, 1.0], np.float32),
        "nan": np.array([np.nan, 1.0], np.float32),
    }
    network, weights = exporting.plain_network(float_graph(tmp_path, arrays))
    dtypes = {name: network["tensors"][name]["dtype"] for name in arrays}
    assert dtypes == {
        "exact": "float16",
        "odd": "float16",
        "precise": "float32",
        "large": "float32",
        "nan": "float32",
    }
    read_back = float_tensors(network, weights)
    for name, a in arrays.items():
        assert read_back[name].tobytes() == a.tobytes(), name  # bit for bit: -0.0, NaN
    assert network["tensors"]["precise"]["offset"] % 4 == 0
    assert len(weights) == 2 * 4 + 2 + 2 + 4 * 4 + 2 * 4 + 2 * 4  # one pad of 2 bytes


def graph_with(tmp_path: Path, node: str, constant: list[int]) -> Path:
    """obs (2, 6) -> one `node` ("Slice": columns 2 to the end, `constant` its ends;
    "Reshape": `constant` its shape) -> logits, saved as an ONNX file."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    ints = (
        {"starts": [2], "ends": constant, "axes": [1]} if node == "Slice" else {"shape": constant}
    )
    inits = [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in ints.items()]
    graph = helper.make_graph(
        [helper.make_node(node, ["obs", *ints], ["logits"])],
        "g",
        [helper.make_tensor_value_info("obs", TensorProto.FLOAT, [2, 6])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, None)],
        inits,
    )
    path = tmp_path / f"{node}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_a_slice_to_the_end_is_written_with_a_bound_javascript_holds(tmp_path):
    """torch's exporter writes "to the end" as 2**63 - 1, which JSON.parse reads as 2**63:
    the plain network holds 2**53 - 1 instead (ONNX clamps a Slice's ends to the
    dimension), and the graph rebuilt from the plain constants computes the same."""
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    path = graph_with(tmp_path, "Slice", [2**63 - 1])
    network, _ = exporting.plain_network(path)
    assert network["tensors"]["ends"]["values"] == [2**53 - 1]
    plain = onnx.load(str(path))
    for init in plain.graph.initializer:
        values = np.array(network["tensors"][init.name]["values"], np.int64)
        init.CopyFrom(numpy_helper.from_array(values, init.name))
    obs = np.arange(12, dtype=np.float32).reshape(2, 6)

    def run(model: bytes) -> np.ndarray:
        return ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(
            None, {"obs": obs}
        )[0]

    assert run(plain.SerializeToString()).tobytes() == run(path.read_bytes()).tobytes()
    assert run(path.read_bytes()).tolist() == obs[:, 2:].tolist()


def test_an_unsafe_integer_that_is_no_slice_bound_is_refused(tmp_path):
    with pytest.raises(exporting.BundleRefused, match=r"holds 9223372036854775807, beyond"):
        exporting.plain_network(graph_with(tmp_path, "Reshape", [2**63 - 1, 3]))


def observations(cases: dict, size: int) -> np.ndarray:
    """The vectors' observations, one per row."""
    obs = np.zeros((len(cases["vectors"]), size), np.float32)
    for i, case in enumerate(cases["vectors"]):
        obs[i, case["obs"]["index"]] = case["obs"]["value"]
    return obs


def test_the_vectors_take_every_observation_field_to_its_edges(bundle):
    """Positions built for them (first: caps, clips, gifts that win, bumps, hot dice, the
    entry) and real games take every field to each of its edges; the coverage table in
    test_vectors.json says so, as the vectors themselves do."""
    from fivethousand_rl.envs.encoding import Col

    cases, spec = read(bundle, "test_vectors.json"), ObsSpec("rich", 2, Rules())
    fields = cases["coverage"]["fields"]
    assert set(fields) == set(spec.slices) - {"actions"} | {f"actions.{c.name}" for c in Col}
    missed = {name: [e for e, hits in f["edges"].items() if not hits] for name, f in fields.items()}
    assert not any(missed.values()), missed
    built = [case for case in cases["vectors"] if case["game"] is None]
    assert 0 < len(built) == cases["built"] and cases["vectors"][: len(built)] == built
    obs = observations(cases, spec.size)
    assert fields == exporting.vector_coverage(spec, obs)
    rows = obs[:, spec.slices["actions"]].reshape(len(obs), 64, -1)
    assert (rows[..., Col.GIFT_WINS] == 1).sum() == fields["actions.GIFT_WINS"]["edges"]["1"] > 0
    assert obs[:, spec.slices["turn_total"]].max() == fields["turn_total"]["max"] == 2  # capped
    assert obs[:, spec.slices["need_after_bank"]].min() == -1  # clipped
    assert rows[..., Col.NEED].min() == -1 and rows[..., Col.TURN_TOTAL].max() > 2
    assert rows[..., Col.TURN_EV].max() == 5


# The edges that whole games reach on their own (common values); the built positions
# must reach every other one that the rules allow.
PLAYED_EDGES = {"ends_in_50", "dice_in_roll", "some_action_banks", "actions.ENDS_IN_50"}


@pytest.mark.parametrize(
    ("rules", "n"),
    [
        (Rules(), 2),
        (Rules(hold="all"), 3),
        (Rules(bump=False, overshoot="lost"), 4),
        (Rules(fifty_rule=False, entry=350, target=3000), 6),
        (Rules(target=2000, entry=300), 5),
    ],
    ids=str,
)
def test_the_built_positions_reach_the_rare_edges_under_house_rules(rules, n):
    spec, edges = ObsSpec("rich", n, rules), []
    for _, state in exporting.edge_positions(n, rules):
        game = Game(n, rules)
        game.state = GameState.from_dict(state.to_dict(), rules)  # a valid state (R1-R12)
        edges.append(spec.encode(game, state.current))
    coverage = exporting.vector_coverage(spec, np.array(edges))
    missed = {
        (name, edge)
        for name, field in coverage.items()
        for edge, hits in field["edges"].items()
        if not hits and name not in PLAYED_EDGES
    }
    common = {("actions.NEED_AT", f"need {50 * k}") for k in range(1, 20)}
    common |= {("actions.DICE_LEFT_AT", f"{d} dice left") for d in range(1, 5)}
    common.add(("actions.MAY_BANK", "0"))
    assert missed <= common, missed - common


# ------------------------------------------------------------------ issue 55 items 2 and 7
ROOT_PORTS = ROOT / "ports"


@pytest.fixture(scope="module")
def runtime_bundle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bundles") / "ppo-2p-runtime"
    assert export.main(["ppo-2p", "--out", str(out), "--runtime"]) == 0
    return out


def test_a_runtime_bundle_holds_only_what_playing_needs(bundle, runtime_bundle):
    meta, full = read(runtime_bundle), read(bundle)
    wanted = set(exporting.RUNTIME_FILES)
    assert {p.name for p in runtime_bundle.iterdir()} == wanted | {"bundle.json"}
    assert set(meta["files"]) == wanted
    assert (meta["contents"], full["contents"]) == ("runtime", "full")
    assert meta["runtime_files"] == full["runtime_files"] == list(exporting.RUNTIME_FILES)
    assert meta["network"]["file"] is None and meta["test_vectors"] is None
    for name in wanted:  # the very files of the full bundle
        assert meta["files"][name]["sha256"] == full["files"][name]["sha256"]
        assert (runtime_bundle / name).read_bytes() == (bundle / name).read_bytes()
    assert meta["network"]["plain"] == full["network"]["plain"]


def test_both_ports_play_the_full_bundle_s_vectors_from_the_runtime_bundle(
    bundle, runtime_bundle, tmp_path
):
    """The Python port runs the plain network with numpy (no graph to give onnxruntime),
    the JS port its own forward pass: each takes the full bundle's action in every
    vector. Neither has test vectors to replay there, and says so in one line."""
    import shutil
    import subprocess

    cases = read(bundle, "test_vectors.json")["vectors"]
    port = load_python_port().Bundle(runtime_bundle)
    assert port.session is None
    assert [port.act(c["state"]) for c in cases] == [c["action"] for c in cases]
    with pytest.raises(ValueError, match="a runtime bundle, without test vectors"):
        load_python_port().replay(port)
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node on PATH")
    js = (ROOT_PORTS / "js" / "fivethousand.mjs").as_uri()
    script = tmp_path / "act.mjs"
    script.write_text(
        f"import {{ loadBundle }} from {json.dumps(js)};\n"
        f"const bot = await loadBundle({json.dumps(str(runtime_bundle))});\n"
        f"const cases = JSON.parse(await (await import('node:fs/promises')).readFile("
        f"{json.dumps(str(bundle / 'test_vectors.json'))}, 'utf8')).vectors;\n"
        "console.log(JSON.stringify(cases.map((c) => bot.act(c.state))));\n"
    )
    done = subprocess.run([node, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [c["action"] for c in cases]
    replayed = subprocess.run(
        [node, str(ROOT_PORTS / "js" / "fivethousand.mjs"), str(runtime_bundle)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert replayed.returncode == 2
    assert replayed.stderr == "error: a runtime bundle, without test vectors to replay\n"


def test_policy_2p_s_runtime_bundle_is_under_a_megabyte_and_half_one_gzipped(tmp_path):
    """Issue 55 item 2's target (docs/export.md gives the measured sizes): policy-2p was
    shipped with float16 weights (ship --float16), which its bundle stores in half the
    bytes; each file gzipped as a web server sends it."""
    import gzip

    out = tmp_path / "policy-2p"
    assert export.main(["policy-2p", "--out", str(out), "--runtime"]) == 0
    files = [f.read_bytes() for f in out.iterdir()]
    assert sum(map(len, files)) <= 1_000_000
    assert sum(len(gzip.compress(f)) for f in files) <= 500_000
    weights = read(out)["network"]["plain"]["tensors"]
    assert {t["dtype"] for name, t in weights.items() if "_w" in name} == {"float16"}


def test_ship_s_float16_rounding_makes_every_weight_a_float16(tmp_path):
    """ship --float16 (agents.shipping.round_to_float16): each weight becomes the nearest
    float16, so the bundle stores every one as float16; a weight beyond float16's range
    is refused in one line and nothing changes."""
    import torch

    from fivethousand_rl.agents.shipping import ShipError, round_to_float16

    layer = torch.nn.Linear(3, 2)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[0.1, 1 / 3, -7e-6], [2.0, 1e-3, 60000.0]]))
    before = layer.weight.detach().clone()
    round_to_float16(layer)
    after = layer.weight.detach()
    assert torch.equal(after, before.half().float()) and not torch.equal(after, before)
    assert all(exporting.float16_exact(p.detach().numpy()) for p in layer.parameters())
    with torch.no_grad():
        layer.bias[0] = 1e5
    kept = [p.detach().clone() for p in layer.parameters()]
    with pytest.raises(ShipError, match=r"^a weight of 100000 is beyond float16's range"):
        round_to_float16(layer)
    assert all(torch.equal(a, b) for a, b in zip(kept, layer.parameters(), strict=True))


@pytest.mark.parametrize("opset", [13, 15, 16, 21])
def test_each_opset_s_graph_takes_the_default_graph_s_actions(bundle, opset, tmp_path):
    """export --opset N: onnxruntime runs the graph, whose actions on every vector are
    the default opset's (the bundle's), its logits equal to float32 rounding."""
    from fivethousand_rl.agents.exported import masked_choice

    assert export.main(["ppo-2p", "-o", str(tmp_path / "bot.onnx"), "--opset", str(opset)]) == 0
    graphs = {
        n: ExportedBot(p)
        for n, p in ((opset, tmp_path / "bot.onnx"), (None, bundle / "model.onnx"))
    }
    assert graphs[opset].session.get_modelmeta() is not None
    import onnx

    assert onnx.load(str(tmp_path / "bot.onnx")).opset_import[0].version == opset
    cases = read(bundle, "test_vectors.json")["vectors"]
    size = read(bundle)["observation"]["size"]
    obs = np.zeros((len(cases), size), np.float32)
    masks = np.zeros((len(cases), 64), bool)
    for i, c in enumerate(cases):
        obs[i, c["obs"]["index"]] = c["obs"]["value"]
        masks[i, c["legal"]] = True
    logits = {n: b.session.run(None, {b.input_name: obs})[0] for n, b in graphs.items()}
    np.testing.assert_allclose(logits[opset], logits[None], rtol=1e-5, atol=1e-4)
    actions = [masked_choice(row, mask) for row, mask in zip(logits[opset], masks, strict=True)]
    assert actions == [c["action"] for c in cases]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--opset", "12"], "argument --opset: must be 13 to 21, not 12"),
        (["--opset", "22", "--out", "x"], "argument --opset: must be 13 to 21, not 22"),
        (["--runtime"], "--runtime writes a bundle folder: give --out DIR"),
        (["--runtime", "-o", "x.onnx"], "--runtime writes a bundle folder: give --out DIR"),
    ],
)
def test_a_bad_opset_or_runtime_is_refused_in_one_line(argv, said, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit:
        export.main(["ppo-2p", *argv])
    err = capsys.readouterr().err
    assert exit.value.code == 2 and said in err and err.count("\n") == 1
    assert not list(tmp_path.iterdir())
    with pytest.raises(ValueError, match="the ONNX opset must be 13 to 21, not 12"):
        exporting.export("ppo-2p.zip", tmp_path / "a.onnx", opset=12)
