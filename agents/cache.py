"""Bounds on what the project keeps: in memory (``LRU``, ``remember``) and in the
solver's disk cache (``bound_disk``).

Solutions, best responses and planners are kept so that the next game under the same
rules starts at once; a server asked for hundreds of house rules or tables must still
not keep them all. In memory an ``LRU`` holds at most a count of entries and an estimate
of their bytes (``nbytes``: the numpy arrays they reach, which is where the weight is).
On disk the cache folder holds at most ``cache_max_bytes()`` of our own files: reading
a file marks it used (its modification time), and after a write the least recently used
of our files go first. Files of other names in the folder are never touched.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterator
from pathlib import Path
from types import FunctionType, MethodType, ModuleType

import numpy as np

MB = 1 << 20

# ------------------------------------------------------------------ in memory


def nbytes(obj: object, limit: int = 200_000) -> int:
    """An estimate of the memory `obj` holds: the bytes of every numpy array it reaches
    (through containers, object attributes, bound methods and closures), plus the size of
    each other object met. Each object counts once; the walk stops after `limit` objects
    (an estimate, not an audit: big things are arrays, and those are found early)."""
    seen: set[int] = set()
    stack = [obj]
    total = 0
    while stack and len(seen) < limit:
        item = stack.pop()
        if id(item) in seen or isinstance(item, (type, ModuleType)):
            continue
        seen.add(id(item))
        if isinstance(item, np.ndarray):
            total += item.nbytes if item.base is None else 0  # a view owns no data
            if item.base is not None:
                stack.append(item.base)
            continue
        with contextlib.suppress(TypeError):  # some extension objects do not say
            total += sys.getsizeof(item)
        if isinstance(item, (str, bytes, int, float, bool, type(None))):
            continue
        if isinstance(item, dict):
            stack.extend(v for v in item.values() if not isinstance(v, (int, float, str)))
            stack.extend(k for k in item if not isinstance(k, (int, float, str)))
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(v for v in item if not isinstance(v, (int, float, str)))
        elif isinstance(item, MethodType):
            stack += [item.__self__, item.__func__]
        elif isinstance(item, FunctionType):
            stack.extend(cell.cell_contents for cell in item.__closure__ or () if _filled(cell))
        else:
            stack.extend(getattr(item, "__dict__", {}).values())
            for slot in getattr(type(item), "__slots__", ()):
                if hasattr(item, slot):
                    stack.append(getattr(item, slot))
    return total


def _filled(cell: object) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
    except ValueError:
        return False
    return True


class LRU:
    """A thread-safe mapping that keeps at most `max_count` entries and about `max_bytes`
    of them (``nbytes`` of each, measured again at every insertion, since planners grow
    as they are used), dropping the least recently used first. The newest entry is kept
    even alone over `max_bytes` (a cache that cannot hold its one value is no cache).
    Reading an entry (``get``, ``[key]``) makes it the most recently used, and every
    `measure_every` reads the bytes are measured again too (entries that grow while
    in use, such as planners' caches, are bounded without waiting for a new entry)."""

    def __init__(
        self, max_count: int, max_bytes: int | None = None, measure_every: int = 32
    ) -> None:
        if max_count < 1:
            raise ValueError(f"an LRU keeps at least 1 entry, not {max_count}")
        self.max_count = max_count
        self.max_bytes = max_bytes
        self.measure_every = measure_every
        self._entries: OrderedDict[Hashable, object] = OrderedDict()
        self._sizes: dict[Hashable, int] = {}
        self._reads = 0
        self._lock = threading.Lock()

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Hashable]:
        with self._lock:
            return iter(list(self._entries))

    def __getitem__(self, key: Hashable) -> object:
        with self._lock:
            value = self._entries[key]
            self._entries.move_to_end(key)
            return value

    def get(self, key: Hashable, default: object = None) -> object:
        with self._lock:
            if key not in self._entries:
                return default
            self._entries.move_to_end(key)
            value = self._entries[key]
            self._reads += 1
            if self.max_bytes is not None and self._reads % self.measure_every == 0:
                self._shrink()
            return value

    def __setitem__(self, key: Hashable, value: object) -> None:
        self.put(key, value)

    def put(self, key: Hashable, value: object) -> None:
        """Keep `value` as the most recently used, then drop the oldest past the bounds."""
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = value
            self._shrink()

    def _shrink(self) -> None:
        """Measure the entries, then drop the oldest past the bounds (lock held)."""
        if self.max_bytes is not None:
            for k, v in self._entries.items():
                self._sizes[k] = nbytes(v)
        while len(self._entries) > 1 and (
            len(self._entries) > self.max_count
            or (self.max_bytes is not None and self._total() > self.max_bytes)
        ):
            oldest = next(iter(self._entries))
            del self._entries[oldest]
            self._sizes.pop(oldest, None)

    def pop(self, key: Hashable, default: object = None) -> object:
        with self._lock:
            self._sizes.pop(key, None)
            return self._entries.pop(key, default)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._sizes.clear()

    def _total(self) -> int:
        return sum(self._sizes.get(k, 0) for k in self._entries)

    def bytes_kept(self) -> int:
        """The estimated bytes of the entries kept (measured now)."""
        with self._lock:
            return sum(nbytes(v) for v in self._entries.values())

    def __getstate__(self) -> dict:
        """Pickled empty (its entries are only what was worth keeping here)."""
        return {k: getattr(self, k) for k in ("max_count", "max_bytes", "measure_every")}

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)


# The solutions kept in memory by default, the most recently used last. A full-size
# solution takes about 50 MB.
MAX_IN_MEMORY = 4


def remember(memory: dict | LRU, key: Hashable, value: object) -> None:
    """Put `value` in `memory` as the most recently used: an ``LRU`` keeps its own
    bounds; a plain dict keeps at most ``MAX_IN_MEMORY`` entries."""
    if isinstance(memory, LRU):
        memory.put(key, value)
        return
    memory.pop(key, None)
    memory[key] = value
    while len(memory) > MAX_IN_MEMORY:
        del memory[next(iter(memory))]


# ------------------------------------------------------------------ on disk
CACHE_MAX_ENV = "FIVETHOUSAND_CACHE_MAX_MB"
DEFAULT_CACHE_MAX_MB = 500
# Our files only (agents.optimal and agents.best_response name them so): nothing else in
# the folder is ever deleted, whatever its age or size.
OUR_FILES = re.compile(
    r"(optimal-2p-(free|all)-\d+-\d+-[0-9a-f]{16}|best-response-\d+p-[0-9a-f]{16})\.npz"
)


def cache_max_bytes() -> int:
    """The size bound of the disk cache: $FIVETHOUSAND_CACHE_MAX_MB (megabytes, 0 keeps
    only the file just written), else ``DEFAULT_CACHE_MAX_MB``. ValueError (one line) if
    the variable is not a number of megabytes."""
    text = os.environ.get(CACHE_MAX_ENV, "").strip()
    if not text:
        return DEFAULT_CACHE_MAX_MB * MB
    try:
        mb = float(text)
    except ValueError:
        mb = float("nan")
    if not (mb >= 0 and mb != float("inf")):
        raise ValueError(f"{CACHE_MAX_ENV}={text!r}: expected a number of megabytes (0 or more)")
    return int(mb * MB)


def is_ours(path: Path) -> bool:
    """Whether `path` is a cache file this project writes (by its name)."""
    return OUR_FILES.fullmatch(path.name) is not None


def touch(path: Path) -> None:
    """Mark a cache file as just used (its modification time), for ``bound_disk``."""
    with contextlib.suppress(OSError):  # a read-only cache still reads
        os.utime(path)


def bound_disk(folder: Path, keep: Path | None = None, max_bytes: int | None = None) -> list[Path]:
    """Delete the least recently used of our cache files in `folder` (``is_ours``;
    oldest modification time first) until they total at most `max_bytes` (None:
    ``cache_max_bytes()``), never `keep` (the file just written). Processes writing the
    same folder take turns (a lock file in it). Returns the files deleted."""
    from filelock import FileLock, Timeout

    limit = cache_max_bytes() if max_bytes is None else max_bytes
    removed: list[Path] = []
    try:
        with FileLock(str(folder / ".evict.lock"), timeout=30):
            files = []
            for path in folder.iterdir():
                if not is_ours(path) or not path.is_file() or path.is_symlink():
                    continue
                try:
                    stat = path.stat()
                except OSError:  # gone meanwhile
                    continue
                files.append((stat.st_mtime, path.name, path, stat.st_size))
            total = sum(size for *_, size in files)
            for _, _, path, size in sorted(files):
                if total <= limit:
                    break
                if keep is not None and path.name == keep.name:
                    continue
                with contextlib.suppress(FileNotFoundError):  # another process's
                    path.unlink()
                total -= size
                removed.append(path)
    except (Timeout, OSError) as e:  # the cache works, unbounded this once
        print(f"could not bound the cache in {folder}: {e}", file=sys.stderr)
    return removed
