"""The documentation site says what the project ships (issue 30): every shipped agent has
its row, with the figures of its evaluation files, and its model card as a page; commands
name the shipped agents, not their files; and the Python examples of the pages run.

What a build checks by itself (broken links and anchors, pages missing from the
navigation, bad API references) is left to `mkdocs build --strict`, which `make test`
runs.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fivethousand_rl.agents.shipped import SHIPPED

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
CHECKPOINTS = ROOT / "checkpoints"
AGENTS_PAGE = DOCS / "agents.md"


class _ConfigLoader(yaml.SafeLoader):
    """mkdocs.yml as plain data: its `!relative` tag read as the string it holds."""


_ConfigLoader.add_constructor("!relative", lambda loader, node: loader.construct_scalar(node))


def nav_files() -> list[str]:
    """Every page of the site's navigation (paths under docs/)."""

    def walk(entry) -> list[str]:
        if isinstance(entry, str):
            return [entry]
        if isinstance(entry, list):
            return [page for item in entry for page in walk(item)]
        return [page for value in entry.values() for page in walk(value)]

    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=_ConfigLoader)
    return walk(config["nav"])


def agents_table() -> dict[str, list[tuple[str, str, str]]]:
    """The shipped agents' table of docs/agents.md: each agent's (win rate, interval,
    games) rows; a row with an empty first cell goes on with the agent above it."""
    lines = AGENTS_PAGE.read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| agent | kind |"))
    rows: dict[str, list[tuple[str, str, str]]] = {}
    agent = ""
    for line in lines[header + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        agent = cells[0].strip("`") or agent
        rows.setdefault(agent, []).append((cells[3], cells[4], cells[5]))
    return rows


def percent(x: float) -> str:
    return f"{100 * x:.1f}%"


def measured(name: str) -> list[tuple[str, str, str]]:
    """The figures of `name`'s evaluation files, as the table shows them: against
    `optimal` for a 2-player agent, else the agent's own line at each table."""
    figures = []
    for path in sorted((CHECKPOINTS / name).glob("evaluation*.json")):
        evaluation = json.loads(path.read_text())
        if evaluation["players"] == 2:
            pair = evaluation["pairwise"][name]["optimal"]
            games, rate, (low, high) = pair["games"], pair["win_rate"], pair["ci95"]
        else:
            [line] = [a for a in evaluation["agents"] if a["agent"] == name]
            games, rate = line["games"], line["win_rate"]
            low, high = line["ci95_low"], line["ci95_high"]
        figures.append((percent(rate), f"{percent(low)} - {percent(high)}", f"{games:,}"))
    return figures


def test_every_shipped_agent_has_a_row_a_card_and_a_page():
    rows, nav, text = agents_table(), nav_files(), AGENTS_PAGE.read_text()
    assert list(rows) == list(SHIPPED), "one row per shipped agent, in the order of SHIPPED"
    for name in SHIPPED:
        assert (CHECKPOINTS / name / "MODEL_CARD.md").is_file(), name
        assert f"agents/{name}.md" in nav, f"{name}'s card is not in the site's navigation"
        assert f"](agents/{name}.md)" in text, f"docs/agents.md does not link {name}'s card"


@pytest.mark.parametrize("name", SHIPPED)
def test_the_agents_table_shows_the_evaluation_files(name):
    assert sorted(agents_table()[name]) == sorted(measured(name))


# A command that plays, exports or measures a shipped agent, naming its file instead.
_SHIPPED_FILE = re.compile(
    r"\b(?:evaluate|play|export|regret)(?:\.py)?\b[^`\n]*?"
    rf"checkpoints/(?:{'|'.join(map(re.escape, SHIPPED))})/(?:model\.zip|value_net\.npz)"
)
PAGES = sorted(DOCS.rglob("*.md")) + [CHECKPOINTS / "README.md"]
CARDS = [CHECKPOINTS / name / "MODEL_CARD.md" for name in SHIPPED]


@pytest.mark.parametrize("page", PAGES + CARDS, ids=lambda p: str(p.relative_to(ROOT)))
def test_commands_name_the_shipped_agents(page):
    found = _SHIPPED_FILE.findall(page.read_text())
    assert not found, f"name the agent instead of its file: {found}"


# ------------------------------------------------------------ the examples run as written
# Blocks that are not programs, by a line they contain, and why.
NOT_RUN = {
    "class Policy(Protocol):": "the interface's outline, not a program",
    'migrate_checkpoint("model.zip"': "needs a model.zip saved by the reader's own training",
    'net = load("model.pt")': "needs the model.pt examples/cleanrl_ppo.py saves (test_own_agent)",
}
# Pages whose blocks build on each other: they run as one program.
ONE_PROGRAM = {"getting-started/game-developer.md"}
# What a page's examples expect to find in the folder they run in, made by a command run
# there first: the game-developer page's step 1, the exported bot its code loads.
EXPORT = [sys.executable, str(ROOT / "export.py"), "ppo-2p", "-o", "bots/ppo-2p.onnx"]
SET_UP = {"getting-started/game-developer.md": EXPORT}


def examples() -> list[tuple[str, str, str]]:
    """(page, its name in the test's id, code) of every Python example to run."""
    out = []
    for page in sorted(DOCS.rglob("*.md")):
        name = page.relative_to(DOCS).as_posix()
        blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
        blocks = [b for b in blocks if not any(line in b for line in NOT_RUN)]
        if name in ONE_PROGRAM and blocks:
            blocks = ["\n".join(blocks)]
        out += [(name, f"{name}[{i}]", block) for i, block in enumerate(blocks)]
    return out


@pytest.mark.parametrize("page, where, code", examples(), ids=[w for _, w, _ in examples()])
def test_the_python_examples_run(page, where, code, tmp_path):
    if page in SET_UP:
        subprocess.run(SET_UP[page], cwd=tmp_path, check=True, capture_output=True, timeout=300)
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, f"{where}:\n{result.stderr[-2000:]}"
