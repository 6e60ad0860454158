"""The layer contract beyond what `lint-imports` checks of pyproject's contracts (issue 29
item 5, issue 30): no import circle anywhere in the packages, and the contract that keeps
the programs apart (a program imports the library, never another program) names every
program of fivethousand_rl/, each of which a top-level script of the same name runs."""

import ast
import itertools
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ["fivethousand_rl"]
# The programs: the modules of fivethousand_rl/ but its dispatcher (cli), which runs them.
PROGRAMS = sorted(
    path.stem
    for path in (ROOT / "fivethousand_rl").glob("*.py")
    if path.stem not in ("__init__", "cli")
)


def test_the_independence_contract_names_every_program():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    named = [c["modules"] for c in contracts["contracts"] if c["type"] == "independence"]
    assert [sorted(modules) for modules in named] == [
        [f"fivethousand_rl.{program}" for program in PROGRAMS]
    ]


def test_each_top_level_script_runs_its_program_and_nothing_else():
    """A clone's `python X.py` is the program fivethousand_rl/X.py: the script imports
    its main, and nothing but sys."""
    scripts = sorted(path.stem for path in ROOT.glob("*.py"))
    assert scripts == PROGRAMS
    for script in scripts:
        tree = ast.parse((ROOT / f"{script}.py").read_text())
        imports = [
            (node.module, [alias.name for alias in node.names])
            if isinstance(node, ast.ImportFrom)
            else [alias.name for alias in node.names]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
        ]
        assert imports == [["sys"], (f"fivethousand_rl.{script}", ["main"])], script


def test_no_import_circle_in_the_packages():
    graph = grimp.build_graph(*PACKAGES)
    modules = sorted(graph.modules)
    circles = [
        (a, b)
        for a, b in itertools.combinations(modules, 2)
        if graph.chain_exists(a, b) and graph.chain_exists(b, a)
    ]
    assert circles == []
