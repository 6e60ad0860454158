"""The README works as written (issue 30): its Python examples run, every command line of
its ```bash blocks runs from the repository root (long runs shortened only by the
substitutions listed below, each with its reason), it stays within 250 lines, and its
relative links lead to files that exist."""

from __future__ import annotations

import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
MAX_LINES = 250

PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)
BASH_BLOCKS = re.findall(r"```bash\n(.*?)```", README, re.S)


@dataclass(frozen=True)
class Substitution:
    """Replace `old` (whole words of a command, or text of a Python block) by `new`."""

    old: str
    new: str
    why: str


# The Python examples run exactly as written: none needs shortening today (the
# environment example plays one game). A long one would be shortened here, e.g.
# total_timesteps=50_000 -> total_timesteps=1_024.
PYTHON_SUBSTITUTIONS: list[Substitution] = []

# The shell commands, shortened or kept out of the clone and the user's home. `{tmp}` is
# the test's temporary folder and `{port}` a free port.
COMMAND_SUBSTITUTIONS = [
    Substitution(
        "--agents planner-3p planner-multi optimal --games 20000",
        "--agents optimal turn-ev --games 30",
        "the planners play only the full game; two bots and 30 games show the report "
        "(before the rule for --games 20000, which would leave fewer games than seats)",
    ),
    Substitution(
        "--games 20000",
        "--games 2",
        "the shipped agents' evaluations play 20,000 games per table (minutes to hours); "
        "one round of seats shows that the command runs",
    ),
    Substitution(
        "--games 2000",
        "--games 10",
        "the quick start's tournament: a few seconds instead of minutes",
    ),
    Substitution(
        "--workers 2",
        "--workers 1",
        "the suite already runs one test process per CPU; a worker pool per command "
        "would only add its start-up time (results do not depend on the workers)",
    ),
    Substitution(
        "--preset quick",
        "--preset quick --n-timesteps 2048 --eval-episodes 10 --no-progress --checkpoints {tmp}",
        "one rollout of 2,048 steps instead of 150,000, a 30-game final evaluation, no "
        "progress bar in a log, and the run folder out of the clone's checkpoints/",
    ),
    Substitution(
        "--out docs/analysis.md",
        "--out {tmp}/analysis.md",
        "the house-rules report stays out of the clone's docs (it is committed as the "
        "command wrote it, with 20,000 games per rule set: 2 here)",
    ),
    Substitution(
        "fivethousand_rl.agents.best_response smart",
        "fivethousand_rl.agents.best_response smart --target 1000 --entry 300",
        "the exact best response to smart takes a minute or two at full size; a shrunken "
        "game (target 1000) runs the same code in seconds",
    ),
    Substitution(
        "--report docs/exploitability.md",
        "--report {tmp}/exploitability.md --target 1000 --entry 300",
        "the exploitability report stays out of the clone's docs, on a shrunken game",
    ),
    Substitution(
        "--report docs/table_3p.md",
        "--report {tmp}/table_3p.md --target 1000 --entry 300",
        "the exact best response at a 3-player table takes half an hour at full size "
        "(then cached); a shrunken game runs the same code in seconds",
    ),
    Substitution(
        "random threshold:350 turn-ev smart ppo-2p planner-2p optimal",
        "random threshold:350",
        "two agents instead of seven (the trained agents play only the full game, and each "
        "best response takes minutes there)",
    ),
    Substitution(
        "fivethousand serve",
        "fivethousand serve --port {port} --data {tmp}",
        "a free port (8000 may be taken by a server of yours or of another test) and the "
        "saved games in a temporary folder instead of the user's data folder",
    ),
]

# Lines that are not run here, and why.
NOT_RUN = {
    "make": "`make demo` and `make test` set up .venv and run everything: `make test` is "
    "what CI runs, and this test runs inside it",
    "source": "activating .venv is what running the tests with its Python already means",
    "pip install": "installing the wheel is covered by tests/test_package.py",
}

# How the installed `fivethousand` command starts (the script pip writes does the same);
# run through this Python so that the test needs no reinstall to see a new subcommand.
CLI = (
    "import sys; sys.argv[0] = 'fivethousand'; "
    "from fivethousand_rl.cli import main; sys.exit(main())"
)


def command_lines(block: str) -> list[str]:
    """The commands of a bash block: continuation lines joined, comments and blank lines
    dropped, whitespace normalized."""
    commands = []
    for line in block.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words:
            commands.append(shlex.join(words))
    return commands


COMMANDS = [command for block in BASH_BLOCKS for command in command_lines(block)]


def reason_not_run(command: str) -> str | None:
    words = shlex.split(command)
    if words[0] in ("make", "source"):
        return NOT_RUN[words[0]]
    if words[0] == "pip" or words[:3] == ["python", "-m", "pip"]:
        return NOT_RUN["pip install"]
    return None


RUN = [command for command in COMMANDS if reason_not_run(command) is None]


def substitute(text: str, substitutions: list[Substitution], whole_words: bool) -> str:
    for sub in substitutions:
        if whole_words:
            text = re.sub(rf"(?<!\S){re.escape(sub.old)}(?!\S)", sub.new, text)
        else:
            text = text.replace(sub.old, sub.new)
    return text


def argv_of(command: str) -> list[str]:
    """The command's arguments for subprocess, `python` and `fivethousand` run with this
    test's Python (the .venv one under `make test`)."""
    words = shlex.split(command)
    if words[0] == "python":
        return [sys.executable, *words[1:]]
    if words[0] == "fivethousand":
        return [sys.executable, "-c", CLI, *words[1:]]
    raise AssertionError(f"the README's command {command!r} is neither python nor fivethousand")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- the Python examples ---------------------------------------------------------------


@pytest.mark.parametrize("index", range(len(PYTHON_BLOCKS)))
def test_readme_python_example_runs(index):
    code = substitute(PYTHON_BLOCKS[index], PYTHON_SUBSTITUTIONS, whole_words=False)
    exec(compile(code, f"README python block {index}", "exec"), {})


# -- the shell commands ----------------------------------------------------------------


def test_every_readme_command_is_run_or_says_why_not():
    unknown = [
        c
        for c in COMMANDS
        if reason_not_run(c) is None and shlex.split(c)[0] not in ("python", "fivethousand")
    ]
    assert not unknown, f"README commands this test cannot run (give them a rule): {unknown}"
    assert RUN, "the README should have commands to run"


def test_every_substitution_applies_to_the_readme():
    """A substitution that matches nothing is stale: the README changed under it."""
    for sub in PYTHON_SUBSTITUTIONS:
        assert any(sub.old in block for block in PYTHON_BLOCKS), sub
    for sub in COMMAND_SUBSTITUTIONS:
        assert any(substitute(c, [sub], True) != c for c in COMMANDS), sub


def run_to_the_end(argv: list[str], stdin: str = "") -> subprocess.CompletedProcess:
    out = subprocess.run(argv, cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=300)
    output = f"{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    assert out.returncode == 0, f"exit code {out.returncode}\n{output}"
    return out


def serves_its_page(argv: list[str], port: int) -> None:
    """The server answers its page within a minute; then it is stopped."""
    server = subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, f"the server stopped:\n{server.communicate()[0]}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as page:
                    assert page.status == 200
                    return
            except OSError:
                assert time.monotonic() < deadline, "the server did not answer within 60 s"
                time.sleep(0.2)
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def short_id(command: str) -> str:
    """A test id under pytest's 100 characters: the flags every evaluation shares left out."""
    return re.sub(r" --(?:seed|workers) \d+", "", command.removeprefix("python "))


@pytest.mark.parametrize("command", RUN, ids=[short_id(c) for c in RUN])
def test_readme_command_runs(command, tmp_path):
    port = free_port()
    shortened = substitute(command, COMMAND_SUBSTITUTIONS, whole_words=True)
    shortened = shortened.replace("{tmp}", shlex.quote(str(tmp_path)))
    argv = argv_of(shortened.replace("{port}", str(port)))
    if command.startswith("fivethousand serve"):
        serves_its_page(argv, port)
    elif command.startswith("python play.py"):
        # Interactive: it starts when it shows the game and, with --hint, a hint at the
        # first decision; `quit` then leaves with exit code 0.
        out = run_to_the_end(argv, stdin="quit\n")
        assert "hint:" in out.stdout, out.stdout[-3000:]
    else:
        run_to_the_end(argv)


# -- the README itself -----------------------------------------------------------------


def test_the_readme_is_at_most_250_lines():
    assert len(README.splitlines()) <= MAX_LINES


def heading_anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_relative_link_of_the_readme_leads_somewhere():
    anchors = {heading_anchor(h) for h in re.findall(r"^#+ (.*)$", README, re.M)}
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", README):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        leads_somewhere = (ROOT / path).exists() if path else anchor in anchors
        if not leads_somewhere:
            broken.append(target)
    assert not broken, f"README links to nothing: {broken}"


def test_the_readme_says_to_activate_the_environment_before_any_command():
    """Issue 28 item 10: every command is written `python ...` (or `fivethousand ...`),
    which works only inside .venv; the set-up section must say so before any of them."""
    start = README.index("## Set up")
    setup = README[start : README.index("\n## ", start + 1)]
    assert "source .venv/bin/activate" in setup
    first_command = min(README.index(f"\n{program} ") for program in ("python", "fivethousand"))
    assert README.index("source .venv/bin/activate") < first_command


def test_the_readme_names_shipped_agents_not_their_files():
    """Issue 30: shipped agents are loaded by name; their files are an implementation
    detail of a clone."""
    assert not re.findall(r"checkpoints/[\w-]+/(?:model\.zip|value_net\.npz)", README)
