"""ports/js as an npm package (issue 55 item 3): `npm pack` builds it, the tarball
installs offline into an empty Node project, and a program there plays a bundle's test
vectors through the package's documented API (its README's examples included); its
TypeScript declarations cover every export and type-check a program using them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
import tomllib
from pathlib import Path

import pytest

from fivethousand_rl import export

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "ports" / "js"
NODE = shutil.which("node")
NPM = shutil.which("npm")
# TypeScript (npm, pinned in the Makefile like axe-core) type-checks the declarations.
TSC = ROOT / "tests" / ".typescript" / "node_modules" / "typescript" / "bin" / "tsc"
pytestmark = pytest.mark.skipif(
    NODE is None or NPM is None, reason="node and npm are not installed (apt install npm)"
)
SHIPPED_FILES = {"fivethousand.mjs", "fivethousand.d.ts", "package.json", "README.md", "LICENSE"}


def run(*args: object, cwd: Path, timeout: int = 120) -> str:
    """A command's stdout, or a failure showing its output."""
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{args}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def tarball(tmp_path_factory) -> Path:
    """`npm pack ports/js`, into a folder of its own (nothing is written in ports/js)."""
    out = tmp_path_factory.mktemp("pack")
    (packed,) = json.loads(run(NPM, "pack", PACKAGE, "--pack-destination", out, "--json", cwd=out))
    return out / packed["filename"]


@pytest.fixture(scope="module")
def project(tarball: Path, tmp_path_factory) -> Path:
    """An empty Node project with the tarball installed, offline (no dependencies)."""
    folder = tmp_path_factory.mktemp("user-project")
    (folder / "package.json").write_text('{"name": "user", "private": true, "type": "module"}')
    quiet = ["--offline", "--no-audit", "--no-fund", "--no-package-lock"]
    run(NPM, "install", *quiet, tarball, cwd=folder)
    return folder


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bundles") / "policy-2p"
    assert export.main(["policy-2p", "--out", str(out)]) == 0
    return out


def test_npm_pack_builds_the_package_with_the_project_s_version_and_licence(tarball):
    with tarfile.open(tarball) as archive:
        names = {name.removeprefix("package/") for name in archive.getnames()}
        meta = json.load(archive.extractfile("package/package.json"))
        licence = archive.extractfile("package/LICENSE").read().decode()
    assert names == SHIPPED_FILES
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert meta["version"] == version and tarball.name == f"fivethousand-rl-{version}.tgz"
    assert meta["license"] == "MIT" and licence == (ROOT / "LICENSE").read_text()
    assert meta["type"] == "module" and "dependencies" not in meta
    assert meta["exports"]["."] == {"types": "./fivethousand.d.ts", "default": "./fivethousand.mjs"}


# Every decision of the bundle's vectors through the installed package by its name: the
# mover's action equals the vector's, and replay finds no difference.
PLAY_VECTORS = """
import { readFileSync } from "node:fs";
import { legalMask, loadBundle, replay } from "fivethousand-rl";
const folder = process.argv[2];
const bot = await loadBundle(folder);
const { vectors } = JSON.parse(readFileSync(`${folder}/test_vectors.json`, "utf8"));
let decisions = 0, same = 0;
for (const c of vectors) {
  if (c.seat !== c.state.current) continue;
  decisions += 1;
  const legal = legalMask(c.state, bot.rules).flatMap((ok, a) => (ok ? [a] : []));
  if (bot.act(c.state) === c.action && legal.join() === c.legal.join()) same += 1;
}
const { differences } = replay(bot);
const count = Object.fromEntries(Object.entries(differences).map(([k, v]) => [k, v.length]));
console.log(JSON.stringify({ decisions, same, differences: count }));
"""


def test_the_installed_package_plays_a_bundle_s_vectors(project, bundle):
    (project / "play.mjs").write_text(PLAY_VECTORS)
    out = json.loads(run(NODE, "play.mjs", bundle, cwd=project))
    assert out["decisions"] == out["same"] >= 900
    assert out["differences"] == {"observation": 0, "observation_bits": 0, "mask": 0, "action": 0}


def test_the_readme_s_examples_run_as_written(project, bundle):
    """Each JavaScript example of the package's README, with its bundle path pointed at a
    real bundle, runs in the user's project: a decision and a whole game."""
    readme = (project / "node_modules" / "fivethousand-rl" / "README.md").read_text()
    examples = re.findall(r"```js\n(.*?)```", readme, flags=re.S)
    assert len(examples) == 2
    outputs = []
    for i, code in enumerate(examples):
        assert '"bots/policy-2p"' in code
        code = code.replace('"bots/policy-2p"', json.dumps(str(bundle)))
        (project / f"example{i}.mjs").write_text(code + "\nconsole.log(typeof action);\n")
        outputs.append(run(NODE, f"example{i}.mjs", cwd=project))
    assert outputs[0].strip() == "number"  # the decision
    assert re.fullmatch(r"seat [01] wins\nundefined\n", outputs[1])  # the game, to its end


def exported_names(source: str) -> set[str]:
    return set(re.findall(r"^export (?:async )?(?:const|class|function) (\w+)", source, re.M))


def test_every_export_is_declared():
    declared = (PACKAGE / "fivethousand.d.ts").read_text()
    names = exported_names((PACKAGE / "fivethousand.mjs").read_text())
    missing = names - exported_names(declared)
    assert len(names) > 20 and not missing, f"declare {sorted(missing)} in fivethousand.d.ts"


# A TypeScript program of a user: the declarations resolve through the package's
# `exports`, type the API, and reject a position without scores.
CONSUMER = """
import {
  BANK_BIT, BundleError, legalMask, loadBundle, moves, newGame, rollDice, type Position,
} from "fivethousand-rl";

const position: Position = { scores: [0, 900], current: 0, turn_total: 0, roll: [1, 1, 4, 5, 6] };
export async function decide(folder: string): Promise<number> {
  try {
    const bot = await loadBundle(folder);
    const mask: boolean[] = legalMask(position, bot.rules);
    const banks: boolean = moves(position, bot.rules).some(
      (m) => m.bank !== null && m.action >= BANK_BIT,
    );
    const { state } = rollDice(newGame(2), [1, 5, 2, 3, 3], bot.rules);
    const logits: Float64Array = bot.logits(bot.observe(state));
    return mask.indexOf(true) + (banks ? 0 : 1) + logits.length + bot.act(position);
  } catch (e) {
    if (e instanceof BundleError) return -1;
    throw e;
  }
}
// @ts-expect-error: a position has scores
legalMask({ current: 0, turn_total: 0, roll: [1] }, {} as never);
"""


@pytest.mark.skipif(not TSC.is_file(), reason="typescript is not installed (make test does)")
def test_the_declarations_type_check_a_user_s_program(project):
    (project / "consumer.ts").write_text(CONSUMER)
    flags = ["--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext"]
    run(NODE, TSC, *flags, "--target", "es2022", "consumer.ts", cwd=project)
