"""The reference ports of the export bundle (issue 44 item 3): ports/python (numpy and
onnxruntime only, run where the project cannot be imported) and ports/js (an ES module
without dependencies, under Node) replay every test vector of a bundle exactly, and
refuse a missing or corrupt bundle file in one line."""

import ast
import base64
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fivethousand_rl import export
from fivethousand_rl.agents import exporting
from fivethousand_rl.envs.encoding import ObsSpec
from fivethousand_rl.envs.game import DECIDE, Game
from fivethousand_rl.envs.rules import Rules
from tests.helpers import load_python_port

ROOT = Path(__file__).resolve().parent.parent
PYTHON_PORT = ROOT / "ports" / "python" / "fivethousand_port.py"
JS_PORT = ROOT / "ports" / "js" / "fivethousand.mjs"
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed (apt install nodejs)")

# The project's own top-level modules and packages: the Python port may import none.
PROJECT = sorted(
    {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    | {p.stem for p in ROOT.glob("*.py")}
)
# Runs the port with the project out of reach: no project folder on sys.path, the
# editable install's finder gone, and every project name refused outright.
ISOLATED = """
import runpy, sys
port, root, blocked = sys.argv[1], sys.argv[2], set(sys.argv[3].split(","))
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__.lower()]
sys.path[:] = [p for p in sys.path if p and not (p.startswith(root) and "site-packages" not in p)]
class NoProject:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ImportError(f"the port imported {name}, from the project")
sys.meta_path.insert(0, NoProject())
sys.argv = [port, *sys.argv[4:]]
runpy.run_path(port, run_name="__main__")
"""


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bundles") / "ppo-2p"
    assert export.main(["ppo-2p", "--out", str(out)]) == 0
    return out


def python_port(bundle: Path, cwd: Path) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-I", "-c", ISOLATED, str(PYTHON_PORT), str(ROOT), ",".join(PROJECT)]
    return subprocess.run(
        [*argv, str(bundle)], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def js_port(bundle: Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [NODE, str(JS_PORT), str(bundle)], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def vectors(bundle: Path) -> int:
    return json.loads((bundle / "bundle.json").read_text())["test_vectors"]["count"]


def test_the_python_port_replays_every_vector_exactly_without_the_project(bundle, tmp_path):
    done = python_port(bundle, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["vectors"] == vectors(bundle) >= 1000
    assert result["differences"] == {"observation": 0, "mask": 0, "action": 0}


def test_the_python_port_imports_only_numpy_onnxruntime_and_the_standard_library():
    tree = ast.parse(PYTHON_PORT.read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module)])
        if alias.name
    }
    assert imported - sys.stdlib_module_names <= {"numpy", "onnxruntime"}, imported


@needs_node
def test_the_js_port_replays_every_vector_under_node(bundle, tmp_path):
    done = js_port(bundle, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["vectors"] == vectors(bundle) >= 1000
    # mask and action exactly; the observation to float32 precision (and, as it happens,
    # bit for bit: its arithmetic is the toolkit's, rounded to float32 the same way)
    assert result["differences"] == {
        "observation": 0,
        "observation_bits": 0,
        "mask": 0,
        "action": 0,
    }


@pytest.fixture(scope="module")
def float16_bundle(tmp_path_factory) -> Path:
    """policy-2p's bundle: shipped with float16 weights (ship --float16), stored so."""
    out = tmp_path_factory.mktemp("bundles") / "policy-2p"
    assert export.main(["policy-2p", "--out", str(out)]) == 0
    return out


def test_both_ports_replay_a_float16_bundle_s_vectors(float16_bundle, tmp_path):
    """Issue 55 item 2: the weights stored as float16, read back as the float32 graph's
    initializers exactly, so every vector replays bit for bit in both ports (the JS
    port's own forward pass), and the Python port's numpy forward pass on the runtime
    bundle (no graph) takes every vector's action."""
    plain = json.loads((float16_bundle / "bundle.json").read_text())["network"]["plain"]
    assert {t["dtype"] for t in plain["tensors"].values()} >= {"float16"}
    for run in [python_port] + ([js_port] if NODE else []):
        done = run(float16_bundle, tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        result = json.loads(done.stdout)
        assert result["vectors"] == vectors(float16_bundle) >= 1000
        assert set(result["differences"].values()) == {0}, result["differences"]
    runtime = tmp_path / "runtime"
    assert export.main(["policy-2p", "--out", str(runtime), "--runtime"]) == 0
    port = load_python_port().Bundle(runtime)
    assert port.session is None
    cases = json.loads((float16_bundle / "test_vectors.json").read_text())["vectors"]
    assert [port.act(c["state"]) for c in cases] == [c["action"] for c in cases]


@needs_node
def test_the_js_port_reads_every_float16_exactly():
    """fromHalf (Node 20 has no Float16Array) against numpy on all 65,536 bit patterns,
    as float64 bits: subnormals, signed zeros, infinities; NaN as NaN."""
    script = (
        f"const {{ fromHalf }} = await import({json.dumps(JS_PORT.as_uri())});\n"
        "const out = new Float64Array(65536).map((_, bits) => fromHalf(bits));\n"
        "process.stdout.write(Buffer.from(out.buffer).toString('base64'));\n"
    )
    done = subprocess.run(
        [NODE, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    got = np.frombuffer(base64.b64decode(done.stdout), "<f8")
    want = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float64)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan) and nan.sum() == 2 * 1023
    assert got[~nan].tobytes() == want[~nan].tobytes()


def test_the_js_port_has_no_dependencies():
    source = re.sub(r"^\s*//.*$", "", JS_PORT.read_text(), flags=re.M)  # not the comments
    # import ... from "x", import "x", import("x"); not a call like Uint32Array.from("...")
    imports = re.findall(r"""(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)["']([^"']+)["']""", source)
    assert imports and all(name.startswith("node:") for name in imports), imports


def break_bundle(bundle: Path, folder: Path, how: str) -> Path:
    """A copy of `bundle` broken as `how` says."""
    copy = folder / "broken"
    shutil.copytree(bundle, copy)
    if how == "no weights":
        (copy / "weights.bin").unlink()
    elif how == "corrupt table":
        data = bytearray((copy / "turn_ev.f64").read_bytes())
        data[100] ^= 1
        (copy / "turn_ev.f64").write_bytes(bytes(data))
    elif how == "truncated model":
        (copy / "model.onnx").write_bytes((copy / "model.onnx").read_bytes()[:999])
    elif how == "bundle.json not JSON":
        (copy / "bundle.json").write_text('{"format": ')
    elif how == "no bundle.json":
        (copy / "bundle.json").unlink()
    elif how == "another format":
        (copy / "bundle.json").write_text('{"format": "something else"}')
    elif how == "no such folder":
        shutil.rmtree(copy)
    return copy


BROKEN = {
    "no weights": "weights.bin is missing",
    "corrupt table": "turn_ev.f64 does not match its SHA-256",
    "truncated model": "model.onnx does not match its SHA-256",
    "bundle.json not JSON": "bundle.json is unreadable",
    "no bundle.json": "bundle.json is missing",
    "another format": "is not a 5000 bot bundle",
    "no such folder": "",
}


@pytest.mark.parametrize("port", ["python", pytest.param("js", marks=needs_node)])
@pytest.mark.parametrize("how", BROKEN)
def test_a_missing_or_corrupt_file_is_one_line(port, how, bundle, tmp_path):
    broken = break_bundle(bundle, tmp_path, how)
    done = (python_port if port == "python" else js_port)(broken, tmp_path)
    err = done.stderr.strip()
    assert done.returncode == 2 and done.stdout == "", done.stdout + err
    assert err.startswith("error: ") and "\n" not in err and BROKEN[how] in err, err


# ------------------------------------------------------------------ house rules
# The ports read the rules from bundle.json: under each house rule (and other table
# sizes) their observations and masks are the toolkit's. The network is not run: these
# bundles carry ppo-2p's graph with the rules, layouts and table of another game.
HOUSE_RULES = {
    "hold all, 3 players": (Rules(hold="all"), 3),
    "no bump, overshoot lost, 4 players": (Rules(bump=False, overshoot="lost"), 4),
    "no 50 rule, entry 350, target 3000": (Rules(fifty_rule=False, entry=350, target=3000), 2),
    "gifts among 5": (Rules(target=2000, entry=300), 5),
}


def house_bundle(bundle: Path, folder: Path, rules: Rules, n: int) -> Path:
    copy = folder / "house"
    shutil.copytree(bundle, copy)
    meta = json.loads((copy / "bundle.json").read_text())
    table, data = exporting.turn_ev_section(rules)
    (copy / table["file"]).write_bytes(data)
    meta["files"][table["file"]] = {"sha256": table["sha256"], "bytes": len(data)}
    meta["tables"]["turn_ev"] = table
    meta["rules"] = exporting.rules_section(rules)
    meta["observation"] = exporting.observation_layout(ObsSpec("rich", n, rules))
    (copy / "bundle.json").write_text(json.dumps(meta))
    return copy


def house_cases(rules: Rules, n: int, count: int = 400) -> list[dict]:
    """Decisions of random games (random play reaches bumps, gifts and overshoots),
    each seen by the mover and every fifth one by another seat too."""
    spec, rng, out = ObsSpec("rich", n, rules), np.random.default_rng(n), []
    g = 0
    while len(out) < count:
        game, g = Game(n, rules, seed=g), g + 1
        while not game.over and len(out) < count:
            if game.state.phase != DECIDE:
                game.roll()
                continue
            seats = [game.state.current] + (
                [(game.state.current + 1) % n] if len(out) % 5 == 0 else []
            )
            for seat in seats:
                obs = spec.encode(game, seat).astype("<f4").tobytes()
                out.append(
                    {
                        "state": game.state.to_dict(),
                        "seat": seat,
                        "obs_sha256": exporting.sha256(obs),
                        "legal": game.legal_actions(),
                    }
                )
            legal = game.legal_actions()
            banks = [a for a in legal if a >= 32]
            # lean to banking, so scores climb to the bumps, gifts and overshoots
            game.act(int(rng.choice(banks if banks and rng.random() < 0.6 else legal)))
    return out


JS_HOUSE = """
import { readFileSync } from "node:fs";
import { createHash } from "node:crypto";
const [port, bundle, cases] = process.argv.slice(1);
const { loadBundle, legalMask } = await import(port);
const bot = await loadBundle(bundle);
const out = JSON.parse(readFileSync(cases, "utf8")).map((c) => {
  const obs = bot.observe(c.state, c.seat);
  const sha = createHash("sha256").update(Buffer.from(obs.buffer)).digest("hex");
  const legal = legalMask(c.state, bot.rules).flatMap((ok, a) => (ok ? [a] : []));
  return { obs_sha256: sha, legal };
});
console.log(JSON.stringify(out));
"""


@pytest.mark.parametrize("house", HOUSE_RULES)
def test_the_ports_follow_the_bundle_s_rules(house, bundle, tmp_path):
    rules, n = HOUSE_RULES[house]
    folder = house_bundle(bundle, tmp_path, rules, n)
    cases = house_cases(rules, n)
    module = load_python_port()
    port = module.Bundle(folder)
    for case in cases:
        obs = port.observe(case["state"], case["seat"])
        assert exporting.sha256(obs.astype("<f4").tobytes()) == case["obs_sha256"], case
        assert (
            np.flatnonzero(module.legal_mask(case["state"], port.rules)).tolist() == case["legal"]
        )
    if NODE is None:
        return
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    done = subprocess.run(
        [
            NODE,
            "--input-type=module",
            "-e",
            JS_HOUSE,
            JS_PORT.as_uri(),
            str(folder),
            str(tmp_path / "cases.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert [g["legal"] for g in got] == [c["legal"] for c in cases]
    assert [g["obs_sha256"] for g in got] == [c["obs_sha256"] for c in cases]


# ------------------------------------------------------------------ the forward pass
# ports/js prepares the graph once (issue 55 item 4): a MatMul with the bias Add and the
# Relu that alone read it becomes one fused loop. On a small graph of every arithmetic
# operator, fusable and not (a2 is read twice: its Relu stays a node of its own), its
# output is numpy's in float64 on the same float32 weights, call after call.
JS_FORWARD = """
const [port, graph] = process.argv.slice(1);
const { Network } = await import(port);
const { plain, weights, obs } = JSON.parse(graph);
const net = new Network(plain, Float32Array.from(weights).buffer, "x", "out");
const fused = net.steps.map((s) => s.output);
const out = obs.map((o) => Array.from(net.run(Float32Array.from(o))));
console.log(JSON.stringify({ fused, out }));
"""


def small_graph(rng: np.random.Generator) -> tuple[dict, np.ndarray, dict]:
    shapes = {"w1": (6, 5), "b1": (5,), "w2": (5, 4), "b2": (1, 4), "w3": (3, 4), "c3": (3,)}
    arrays = {k: rng.normal(size=s).astype(np.float32) for k, s in shapes.items()}
    tensors, offset = {}, 0
    for name, a in arrays.items():
        tensors[name] = {"dtype": "float32", "shape": list(a.shape), "offset": offset}
        tensors[name]["count"] = a.size
        offset += 4 * a.size
    nodes = [
        ("MatMul", ["x", "w1"], "m1", {}),
        ("Add", ["b1", "m1"], "a1", {}),  # the bias first: fused all the same
        ("Relu", ["a1"], "h1", {}),
        ("MatMul", ["h1", "w2"], "m2", {}),
        ("Add", ["m2", "b2"], "a2", {}),
        ("Relu", ["a2"], "r2", {}),
        ("Tanh", ["a2"], "t2", {}),
        ("Mul", ["r2", "t2"], "p2", {}),
        ("Gemm", ["p2", "w3", "c3"], "g3", {"transB": 1, "alpha": 0.5, "beta": 2.0}),
        ("Sigmoid", ["g3"], "out", {}),
    ]
    plain = {
        "weights": "weights.bin",
        "tensors": tensors,
        "nodes": [
            {"op": op, "inputs": ins, "outputs": [out], "attributes": at}
            for op, ins, out, at in nodes
        ],
    }
    weights = np.concatenate([a.ravel() for a in arrays.values()])
    return plain, weights, {k: a.astype(np.float64) for k, a in arrays.items()}


@needs_node
def test_the_js_forward_pass_fuses_and_matches_numpy_in_float64(tmp_path):
    rng = np.random.default_rng(55)
    plain, weights, w = small_graph(rng)
    obs = rng.normal(size=(3, 6)).astype(np.float32)
    obs[1, [0, 3]] = 0  # skipped zeros
    graph = json.dumps({"plain": plain, "weights": weights.tolist(), "obs": obs.tolist()})
    done = subprocess.run(
        [NODE, "--input-type=module", "-e", JS_FORWARD, JS_PORT.as_uri(), graph],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["fused"] == ["h1", "a2", "r2", "t2", "p2", "g3", "out"]
    x = obs.astype(np.float64)
    h1 = np.maximum(x @ w["w1"] + w["b1"], 0)
    a2 = h1 @ w["w2"] + w["b2"]
    p2 = np.maximum(a2, 0) * np.tanh(a2)
    out = 1 / (1 + np.exp(-(0.5 * (p2 @ w["w3"].T) + 2.0 * w["c3"])))
    np.testing.assert_allclose(np.array(got["out"]), out, rtol=1e-12, atol=1e-15)
