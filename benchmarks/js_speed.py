"""A decision's latency in the JavaScript port, beside onnxruntime-node and the Python
port, on one machine in one run (issue 55 item 4).

    python benchmarks/js_speed.py [--agents policy-2p ppo-2p ppo-4p] [--repeats 5]

Each agent is exported as a bundle (into a temporary folder) and the decisions of its
test vectors (those seen by the mover) are timed one at a time, encoding included:

- ``js``: ``ports/js/fivethousand.mjs`` in Node, ``bot.act(state)``: the observation,
  the legal mask, the network's forward pass (its own, in float64) and the choice;
- ``onnxruntime-node`` (pinned, ``ORT_VERSION``, installed by npm into a folder of the
  system's temporary directory, kept for the next run; its install script, which fetches
  GPU libraries, is skipped: the CPU build is in the package): the port's observation
  and mask, ``model.onnx`` run by an InferenceSession on one thread, the choice; left
  out, with the reason, where npm cannot install it;
- ``python``: ``ports/python/fivethousand_port.py``, ``Bundle.act(state)`` (numpy, and
  onnxruntime on one thread).

Each runs two passes over the decisions to warm up, then ``--repeats`` passes, timing
every decision: the median and the mean in ms, and decisions per ms (1 / median). Every
runtime's actions are checked against the vectors' (``agree``). The issue's target: a
policy-2p decision in at most 1 ms (median) in the JavaScript port. The last line is
one JSON object.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from fivethousand_rl import export  # noqa: E402

JS_PORT = ROOT / "ports" / "js" / "fivethousand.mjs"
PYTHON_PORT = ROOT / "ports" / "python" / "fivethousand_port.py"
ORT_VERSION = "1.31.1"
AGENTS = ("policy-2p", "ppo-2p", "ppo-4p")

# argv: the port's URL, the bundle, the repeats, onnxruntime-node's prefix (or "").
# Prints {"js": timing, "ort": timing or null, "node": version}.
DRIVER = r"""
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
const [portUrl, bundle, repeatsArg, ortPrefix] = process.argv.slice(1);
const repeats = Number(repeatsArg);
const port = await import(portUrl);
const bot = await port.loadBundle(bundle);
const cases = JSON.parse(readFileSync(`${bundle}/test_vectors.json`, "utf8")).vectors
  .filter((c) => c.seat === c.state.current);

async function timing(decide) {
  const ms = [];
  let agree = 0;
  for (let pass = 0; pass < 2 + repeats; pass++) {
    for (const c of cases) {
      const start = performance.now();
      const action = await decide(c.state);
      const took = performance.now() - start;
      if (pass < 2) continue; // warming up
      ms.push(took);
      if (pass === 2 && action === c.action) agree += 1;
    }
  }
  ms.sort((a, b) => a - b);
  const mean = ms.reduce((a, b) => a + b, 0) / ms.length;
  return { median_ms: ms[ms.length >> 1], mean_ms: mean, decisions: cases.length, agree };
}

const js = await timing((state) => bot.act(state));
let ort = null;
if (ortPrefix) {
  const runtime = createRequire(`${ortPrefix}/node_modules/`)("onnxruntime-node");
  const net = bot.meta.network;
  const session = await runtime.InferenceSession.create(`${bundle}/${net.file}`, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: "sequential",
  });
  const obs = new Float32Array(bot.size);
  ort = await timing(async (state) => {
    bot.observeInto(obs, state);
    const mask = port.legalMask(state, bot.rules);
    const input = new runtime.Tensor("float32", obs, [1, obs.length]);
    const logits = (await session.run({ [net.input]: input }))[net.output].data;
    let best = -1;
    for (let a = 0; a < logits.length; a++) {
      if (mask[a] && (best < 0 || logits[a] > logits[best])) best = a;
    }
    return best;
  });
}
console.log(JSON.stringify({ js, ort, node: process.version }));
"""


def install_onnxruntime_node(node: str) -> tuple[str | None, str]:
    """The prefix where onnxruntime-node ORT_VERSION is installed (installing it the
    first time), or None and why not."""
    npm = shutil.which("npm")
    if npm is None:
        return None, "npm is not installed"
    prefix = Path(tempfile.gettempdir()) / f"fivethousand-onnxruntime-node-{ORT_VERSION}"
    module = prefix / "node_modules" / "onnxruntime-node"
    if not module.is_dir():
        quiet = ["--no-save", "--no-package-lock", "--no-audit", "--no-fund", "--ignore-scripts"]
        package = f"onnxruntime-node@{ORT_VERSION}"
        install = [npm, "install", "--prefix", str(prefix), *quiet, package]
        done = subprocess.run(install, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["npm failed"])[-1]
            return None, f"npm could not install onnxruntime-node@{ORT_VERSION}: {last}"
    return str(prefix), f"onnxruntime-node {ORT_VERSION}"


def node_timings(node: str, bundle: Path, repeats: int, ort_prefix: str | None) -> dict:
    argv = [node, "--input-type=module", "-e", DRIVER, JS_PORT.as_uri(), str(bundle)]
    done = subprocess.run(
        [*argv, str(repeats), ort_prefix or ""], capture_output=True, text=True, timeout=1800
    )
    if done.returncode != 0:
        raise SystemExit(f"error: the Node driver failed on {bundle}: {done.stderr.strip()}")
    return json.loads(done.stdout)


def python_timing(bundle: Path, repeats: int) -> dict:
    """The Python port's Bundle.act, timed as the driver times the JavaScript port."""
    spec = importlib.util.spec_from_file_location("fivethousand_port", PYTHON_PORT)
    port = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(port)
    bot = port.Bundle(bundle)
    vectors = json.loads((bundle / "test_vectors.json").read_text())["vectors"]
    cases = [c for c in vectors if c["seat"] == c["state"]["current"]]
    ms, agree = [], 0
    for repeat in range(2 + repeats):
        for c in cases:
            start = time.perf_counter()
            action = bot.act(c["state"])
            took = (time.perf_counter() - start) * 1000
            if repeat >= 2:
                ms.append(took)
                agree += repeat == 2 and action == c["action"]
    return {
        "median_ms": statistics.median(ms),
        "mean_ms": statistics.fmean(ms),
        "decisions": len(cases),
        "agree": agree,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--agents", nargs="+", default=list(AGENTS), help="single-network agents")
    p.add_argument("--repeats", type=int, default=5, help="timed passes over the decisions")
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error(f"argument --repeats: must be 1 or more, not {args.repeats}")
    node = shutil.which("node")
    if node is None:
        p.error("node is not installed (apt install nodejs)")
    ort_prefix, ort_note = install_onnxruntime_node(node)
    print(f"onnxruntime-node: {ort_note}" if ort_prefix else f"left out: {ort_note}")
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for agent in args.agents:
            bundle = Path(folder) / agent
            with open(os.devnull, "w") as quiet:  # export's own line
                stdout, sys.stdout = sys.stdout, quiet
                try:
                    code = export.main([agent, "--out", str(bundle)])
                finally:
                    sys.stdout = stdout
            if code != 0:
                return code
            timed = node_timings(node, bundle, args.repeats, ort_prefix)
            node_version = timed.pop("node")
            timed = {"js": timed["js"], "onnxruntime-node": timed["ort"]}
            timed["python"] = python_timing(bundle, args.repeats)
            results[agent] = timed
            for runtime, t in timed.items():
                if t is None:
                    continue
                t["decisions_per_ms"] = 1 / t["median_ms"]
                print(
                    f"{agent:10} {runtime:17} median {t['median_ms']:.3f} ms  mean "
                    f"{t['mean_ms']:.3f} ms  {t['decisions_per_ms']:6.1f} decisions/ms  "
                    f"agree {t['agree']}/{t['decisions']}"
                )
    machine = {
        "cpu": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "node": node_version,
        "python": platform.python_version(),
        "onnxruntime-node": ORT_VERSION if ort_prefix else None,
    }
    print(json.dumps({"machine": machine, "repeats": args.repeats, "agents": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
