"""The README's Python examples run as written (training shortened)."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
# Every python block except the interface listing, which only shows a signature.
BLOCKS = [
    block
    for block in re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    if "class Policy(Protocol)" not in block
]


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index):
    code = BLOCKS[index].replace("total_timesteps=50_000", "total_timesteps=1_024")
    exec(compile(code, f"README block {index}", "exec"), {})


def test_the_readme_says_to_activate_the_environment_beside_the_two_commands():
    """Issue 28 item 10: every command is written `python ...`, which works only inside
    .venv; the set-up section must say so before any other command."""
    text = README.read_text()
    start = text.index("## Two commands")
    setup = text[start : text.index("\n## ", start + 1)]
    assert "source .venv/bin/activate" in setup
    assert text.index("source .venv/bin/activate") < text.index("python play.py")
