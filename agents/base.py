"""The policy interface (defined once, in ``envs.policy``, where the environments can
see it), and what every tool shares about its output: the path checks made before the
work, the one atomic write, and the one way a duration is shown."""

from __future__ import annotations

import contextlib
import os
import reprlib
import stat
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from fivethousand_rl.envs.policy import Policy

MODEL_SUFFIXES = (".zip", ".npz", ".onnx")  # a bot spec ending so names a model file
# The largest model file read, on disk and unpacked (the shipped ones are under 10 MB).
MAX_MODEL_BYTES = 256 << 20
# The largest settings or record file read (a run's config.json, summary.json, evals.json,
# command.txt, a preset's YAML, an exported bot's metadata): theirs are a few kB.
MAX_TEXT_BYTES = 16 << 20

__all__ = [
    "MODEL_SUFFIXES", "Policy", "atomic_write", "check_finite", "check_output_folder",
    "check_output_path", "check_model_file", "check_plot_path", "duration", "figure",
    "read_capped", "read_text_capped",
]  # fmt: skip


def read_capped(path: str | Path, limit: int) -> bytes:
    """The bytes of the file `path`; a ValueError saying why (for the caller to name the
    file) for what is not a plain file (a device such as /dev/zero, a FIFO that would
    block) or is longer than `limit` bytes, found before reading more than that. Every
    file a user hands a command is read so (OSError for a missing one)."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise ValueError("not a plain file")
    with open(path, "rb") as f:
        data = f.read(limit + 1)  # one byte more tells a file that is too long
    if len(data) > limit:
        raise ValueError(f"larger than {limit} bytes")
    return data


# A user's value quoted in an error message: a few items of each list, two levels, long
# texts cut in the middle, the whole cut at BRIEF_CHARS. Its work is bounded too, whatever
# the value (nested lists sharing their items, which a full repr would expand).
BRIEF_CHARS = 200
_BRIEF = reprlib.Repr()
_BRIEF.maxlevel = 2
_BRIEF.maxstring = _BRIEF.maxother = _BRIEF.maxlong = 80
_BRIEF.maxlist = _BRIEF.maxtuple = _BRIEF.maxdict = _BRIEF.maxset = 8


def brief_repr(value: object) -> str:
    """``repr(value)`` for an error message, at most BRIEF_CHARS characters (reprlib:
    "[1, 2, 3, 4, 5, 6, 7, 8, ...]", "'aaaa...aaaa'")."""
    shown = _BRIEF.repr(value)
    return shown if len(shown) <= BRIEF_CHARS else shown[: BRIEF_CHARS - 3] + "..."


def read_text_capped(path: str | Path, limit: int | None = None) -> str:
    """The UTF-8 text of the file `path`, read with a bound (``read_capped``; default
    ``MAX_TEXT_BYTES``)."""
    return read_capped(path, MAX_TEXT_BYTES if limit is None else limit).decode("utf-8")


def check_model_file(path: str | Path, limit: int | None = None) -> None:
    """ValueError (one line naming the file) for a model file that is not a plain file or
    is larger than `limit` bytes (default ``MAX_MODEL_BYTES``), on disk or unpacked (a zip
    archive's members by the sizes it states, which is all zipfile will unpack); a
    missing or damaged file is left to its loader to name."""
    limit = MAX_MODEL_BYTES if limit is None else limit
    try:
        info = os.stat(path)
    except OSError:
        return
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"cannot load {path}: not a plain file")
    if info.st_size > limit:
        raise ValueError(f"cannot load {path}: larger than {limit} bytes")
    try:
        with zipfile.ZipFile(path) as archive:
            check_unpacked(archive, limit)
    except (OSError, zipfile.BadZipFile):  # not an archive: its loader says what it is
        return
    except ValueError as e:
        raise ValueError(f"cannot load {path}: {e}") from None


def check_unpacked(archive: zipfile.ZipFile, limit: int = MAX_MODEL_BYTES) -> None:
    """ValueError (one line) unless the members of `archive` state at most `limit` bytes
    unpacked in all (all zipfile will unpack: a member is read no further than it says)."""
    unpacked = sum(info.file_size for info in archive.infolist())
    if unpacked > limit:
        raise ValueError(f"it unpacks to {unpacked} bytes, over {limit}")


def check_finite(name: str, array: object) -> None:
    """ValueError (one line naming `name`) if the numbers `array` (anything ``np.asarray``
    reads) hold a NaN or an infinity. Every loader of a network's weights calls it: such a
    network plays garbage, or fails in the middle of a game, without an error of its own."""
    values = np.asarray(array)
    if values.dtype.kind in "fc" and not np.isfinite(values).all():
        raise ValueError(f"its {name} are not all finite numbers (NaN or inf)")


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


@contextlib.contextmanager
def figure(path, **subplots):
    """``plt.subplots(**subplots)`` in a constrained layout, drawn without a display,
    saved to `path` (110 dpi, ``atomic_write``: a failed save, as on a full disk, leaves
    no partial picture and an older one as it was) and closed at the end of the block."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # The format by `path`'s own suffix: the name written aside ends in .tmp when it has none.
    kind = Path(path).suffix.lstrip(".").lower() or plt.rcParams["savefig.format"]
    fig, axes = plt.subplots(constrained_layout=True, **subplots)
    try:
        yield fig, axes
        atomic_write(path, lambda aside: fig.savefig(aside, format=kind, dpi=110))
    finally:
        plt.close(fig)


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


def atomic_write(path: str | Path, content: str | bytes | Callable[[str], object]) -> Path:
    """Write `path` so that no reader (and no crash) ever sees half of it: the content
    goes to a temporary file beside it, is flushed to disk, then renamed over `path`.

    `content` is the text or bytes to write, or a function that writes a file at the
    name it is given (``model.save``, ``np.savez``); that name ends with `path`'s own
    suffix, since such writers add theirs otherwise. The file gets the usual permissions
    (0o644, or those of the file it replaces); nothing is left behind on an error."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Hidden, and ending in .tmp unless a writer needs the real suffix: a reader that
    # lists the folder's *.json (the web store) never takes a crash's leftover for a file.
    suffix = f".tmp{path.suffix}" if callable(content) else ".tmp"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(fd)
    try:
        if callable(content):
            content(tmp)
        else:
            Path(tmp).write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())  # on disk before the rename makes it the file
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return path


DURATION_UNITS = ((86400, "day"), (3600, "h"), (60, "min"), (1, "s"))


def _in_unit(count: int, size: int, unit: str) -> str:
    return f"{count} {unit}{'s' * (size == 86400 and count != 1)}"  # "2 days", "2 h"


def duration(seconds: float) -> str:
    """`seconds` for people, in its largest unit and the next one when that is not zero:
    0.3 -> "<1 s", 7.4 -> "7 s", 125 -> "2 min 5 s", 1800 -> "30 min",
    3725 -> "1 h 2 min", 604800 -> "7 days"."""
    if seconds < 0.5:
        return "<1 s"
    left = max(round(seconds), 1)  # round(0.5) is 0
    i = next(i for i, (size, _) in enumerate(DURATION_UNITS) if left >= size)
    size, unit = DURATION_UNITS[i]
    shown = _in_unit(left // size, size, unit)
    if size > 1 and (part := left % size // DURATION_UNITS[i + 1][0]):
        shown += f" {_in_unit(part, *DURATION_UNITS[i + 1])}"  # the next unit down
    return shown


def program(name: str) -> str:
    """How the user runs the program `name` ("play", "train", "train-planner") from this
    process, for the commands a tool prints: ``fivethousand NAME`` under the installed
    command, else the clone's script ``python NAME.py``."""
    if Path(sys.argv[0]).name == "fivethousand":
        return f"fivethousand {name}"
    return f"python {name.replace('-', '_')}.py"
