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
