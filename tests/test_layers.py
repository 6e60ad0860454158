"""The layer contract beyond pyproject's import-linter contracts (issue 29 item 5): no
import circle anywhere in the library, and the top-level scripts, which import-linter
cannot name as a root (they are modules, not a package), checked by import-linter
through a throwaway package of links to them: a script imports the library, never
another script."""

import itertools
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(path.stem for path in ROOT.glob("*.py"))
LIB = ["envs", "agents", "webplay"]


def test_the_library_contract_names_every_script():
    """pyproject's "the library never imports a script" names each top-level script."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    named = [
        c["forbidden_modules"] for c in contracts["contracts"] if c.get("source_modules") == LIB
    ]
    assert [sorted(names) for names in named] == [SCRIPTS]


def test_no_import_circle_in_the_library():
    graph = grimp.build_graph(*LIB)
    modules = sorted(graph.modules)
    circles = [
        (a, b)
        for a, b in itertools.combinations(modules, 2)
        if graph.chain_exists(a, b) and graph.chain_exists(b, a)
    ]
    assert circles == []


def test_no_script_imports_another_script(tmp_path):
    package = tmp_path / "scripts"
    package.mkdir()
    (package / "__init__.py").touch()
    for script in SCRIPTS:
        (package / f"{script}.py").symlink_to(ROOT / f"{script}.py")
    config = tmp_path / "contracts.toml"
    config.write_text(
        '[tool.importlinter]\nroot_packages = ["scripts"]\ninclude_external_packages = true\n\n'
        "[[tool.importlinter.contracts]]\n"
        'name = "a script imports the library, never another script"\n'
        'type = "forbidden"\nsource_modules = ["scripts"]\n'
        f"forbidden_modules = {SCRIPTS!r}\n".replace("'", '"')
    )
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(lint), str(config)],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert "1 kept, 0 broken" in done.stdout
