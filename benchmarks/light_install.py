"""The light install (issue 44 item 4): its size and time, beside the full one.

    python benchmarks/light_install.py                # pip install fivethousand-rl
    python benchmarks/light_install.py --extra train  # with the training extra, to compare

Builds the wheel from the clone's files (what git lists), makes an empty virtual
environment (without pip: this Python's pip installs into it), installs the wheel with
its dependencies from the package index that pip is configured with (pip's cache is
reused, as a user's second install would), and prints one JSON line: the seconds the
install took, the size of the environment's site-packages (the bytes of its files,
compiled bytecode included) and its largest packages. tests/test_light_install.py uses
the same functions for the environment it plays in.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTION = "fivethousand-rl"
PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]


def run(*args: object, cwd: Path, timeout: float = 600) -> str:
    """Run a command; its stdout, or RuntimeError with the end of its output."""
    result = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
    if result.returncode != 0:
        raise RuntimeError(f"{args}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result.stdout


def project_files(root: Path = ROOT) -> list[str]:
    """The files a clean clone holds: those git tracks, and new ones it does not ignore."""
    listed = run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=root)
    return [name for name in listed.split("\0") if name and (root / name).exists()]


def copy_source(folder: Path, root: Path = ROOT) -> Path:
    """A copy of the clone's files in `folder` (built there, the clone stays clean); the
    links (fivethousand_rl/envs -> ../envs, ...) stay links."""
    for name in project_files(root):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, folder / name, follow_symlinks=False)
    return folder


def build_wheel(source: Path, dist: Path) -> Path:
    """The wheel of `source`, built by this environment's setuptools into `dist`."""
    run(*PIP, "wheel", "--no-deps", "--no-build-isolation", "-w", dist, source, cwd=source)
    (wheel,) = dist.glob("fivethousand_rl-*.whl")
    return wheel


def make_venv(folder: Path) -> Path:
    """An empty virtual environment at `folder` (no pip in it); its python."""
    run(sys.executable, "-m", "venv", "--without-pip", folder, cwd=folder.parent)
    return folder / "bin" / "python"


def site_packages(python: Path) -> Path:
    """The site-packages folder of the environment of `python`."""
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Path(run(python, "-c", where, cwd=python.parent).strip())


def install(python: Path, wheel: Path, extras: tuple[str, ...] = ()) -> float:
    """Install `wheel` (with `extras`) and its dependencies into the environment of
    `python`, by this environment's pip; the seconds it took."""
    target = f"{DISTRIBUTION}[{','.join(extras)}] @ {wheel.as_uri()}" if extras else wheel
    start = time.perf_counter()
    run(*PIP, "--python", python, "install", target, cwd=wheel.parent)
    return time.perf_counter() - start


def tree_bytes(folder: Path) -> int:
    """The bytes of the files under `folder` (links not followed)."""
    return sum(
        (Path(top) / name).lstat().st_size for top, _, names in os.walk(folder) for name in names
    )


def largest(site: Path, count: int = 8) -> dict[str, float]:
    """The `count` largest top-level entries of `site`, in MB."""
    sizes = {p.name: tree_bytes(p) if p.is_dir() else p.lstat().st_size for p in site.iterdir()}
    top = sorted(sizes.items(), key=lambda item: -item[1])[:count]
    return {name: round(size / 1e6, 1) for name, size in top}


def measure(work: Path, extras: tuple[str, ...] = ()) -> dict:
    """Build, make an environment under `work`, install, measure: the figures, and the
    environment's python (``python``) for whoever uses it next."""
    wheel = build_wheel(copy_source(work / "source"), work / "dist")
    python = make_venv(work / "env")
    seconds = install(python, wheel, extras)
    site = site_packages(python)
    return {
        "extras": list(extras),
        "install_seconds": round(seconds, 1),
        "site_packages_mb": round(tree_bytes(site) / 1e6, 1),
        "largest_mb": largest(site),
        "python": str(python),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--extra", action="append", default=[], help="an extra to install too")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        figures = measure(Path(work), tuple(args.extra))
    figures.pop("python")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
