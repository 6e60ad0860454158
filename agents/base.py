"""The policy interface (defined once, in ``envs.policy``, where the environments can
see it) and the output-path checks that the command-line tools make before their work."""

from __future__ import annotations

import os
from pathlib import Path

from envs.policy import Policy

__all__ = ["Policy", "check_output_folder", "check_output_path", "check_plot_path"]


def check_output_path(path: str | Path, option: str) -> None:
    """Raise ValueError (one line) unless a file can be written at `path`: its folder
    exists and it is not itself a folder. Command-line tools call this before their
    work, so that a mistyped output path costs nothing."""
    target = Path(path)
    if str(path).strip() == "":
        raise ValueError(f"{option} needs a file name")
    if target.is_dir():
        raise ValueError(f"{option} {path} is a folder, not a file")
    folder = target.parent
    if not folder.is_dir():
        raise ValueError(f"{option} {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise ValueError(f"{option} {path}: not writable")


def check_output_folder(path: str | Path, option: str) -> None:
    """Raise ValueError (one line) unless files can be written in the folder `path`: it
    is a folder, or does not exist yet and its nearest existing parent is a writable
    folder (where it will be made). Checked before any work, like check_output_path."""
    existing = Path(path)
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent  # made with its parents when the first file is written
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"{option} {path}: {existing} is not a writable folder")


def check_plot_path(path: str | Path, option: str = "--plot") -> None:
    """check_output_path, and a picture format that matplotlib writes (by extension)."""
    check_output_path(path, option)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    formats = FigureCanvasAgg.get_supported_filetypes()
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in formats:
        raise ValueError(
            f"{option} {path}: unknown picture format {suffix!r} "
            f"(use one of: {', '.join(sorted(formats))})"
        )
