"""The installed command `fivethousand` (issue 30): one subcommand per program, each
with its own usage line; the list, the version and unknown subcommands; and the clone's
top-level scripts, which run the same programs. (The command installed from a wheel is
tests/test_package.py's.)"""

import subprocess
import sys
from pathlib import Path

import pytest

from fivethousand_rl import cli

ROOT = Path(__file__).resolve().parent.parent

# Every subcommand, and a word its --help says (that it is that program's help).
SUBCOMMANDS = {
    "play": "--opponents",
    "serve": "--port",
    "evaluate": "--games",
    "train": "--n-timesteps",
    "train-planner": "--iterations",
    "train-policy": "--rounds",
    "train-jax": "--num-envs",
    "export": "--out",
    "ship": "--name",
    "sweep": "--grid",
    "demo": "--watch",
    "regret": "--against",
    "optimal": "--plot",
    "best-response": "--players",
}


def run_cli(capsys, argv: list[str]) -> tuple[int, str, str]:
    """cli.main(argv) in this process: its exit code (a SystemExit's too), stdout, stderr."""
    try:
        code = cli.main(argv)
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def test_the_table_here_is_the_command_s():
    assert list(SUBCOMMANDS) == list(cli.SUBCOMMANDS)


@pytest.mark.parametrize("argv", [["--help"], ["-h"]])
def test_help_lists_every_subcommand_one_line_each(capsys, argv):
    code, out, _ = run_cli(capsys, argv)
    assert code == 0 and out.startswith("usage: fivethousand SUBCOMMAND")
    for name, (_, summary) in cli.SUBCOMMANDS.items():
        assert f"  {name} " in out and summary in out
    assert "--version" in out


def test_no_subcommand_shows_the_list_and_fails(capsys):
    code, out, err = run_cli(capsys, [])
    assert code == 2 and out == "" and "subcommands:" in err and "train-planner" in err


@pytest.mark.parametrize("name", ["trian", "--verbose", "Train"])
def test_an_unknown_subcommand_is_refused_in_one_line_naming_the_known_ones(capsys, name):
    code, out, err = run_cli(capsys, [name, "--help"])
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"fivethousand: unknown subcommand {name!r}")
    assert all(known in err for known in SUBCOMMANDS)


def test_version(capsys, monkeypatch):
    code, out, _ = run_cli(capsys, ["--version"])
    assert code == 0 and out.startswith("fivethousand ") and out.count("\n") == 1

    def not_installed(name):
        raise cli.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(cli.metadata, "version", not_installed)
    assert run_cli(capsys, ["--version"])[:2] == (0, "fivethousand unknown (not installed)\n")


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_each_subcommand_s_help_names_the_command_as_typed(capsys, name):
    code, out, _ = run_cli(capsys, [name, "--help"])
    assert code == 0
    assert f"fivethousand {name} [-h" in " ".join(out.split()), out[:300]
    assert SUBCOMMANDS[name] in out


def test_a_subcommand_s_errors_name_the_command_as_typed(capsys):
    code, _, err = run_cli(capsys, ["evaluate", "smart", "--games", "many"])
    assert code == 2 and err.startswith("error: argument --games")
    assert err.strip().endswith("(see fivethousand evaluate --help)") and err.count("\n") == 1


def test_the_list_imports_no_program():
    """`fivethousand --help` answers at once: no program module, no torch."""
    code = (
        "import sys; from fivethousand_rl import cli; cli.main(['--help']); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'agents', 'envs', 'webplay', 'fivethousand_rl')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines()[-1] == "['fivethousand_rl', 'fivethousand_rl.cli']"


@pytest.mark.parametrize("script", ["evaluate.py", "train_planner.py"])
def test_the_top_level_scripts_still_run(script):
    done = subprocess.run(
        [sys.executable, script, "--help"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"usage: {script} [-h" in " ".join(done.stdout.split())
