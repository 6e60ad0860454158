"""The bots a web player may choose: a fixed list built on the server, so that clients
name bots by key and never send a file path.

Scripted bots and ``optimal`` by name; the project's shipped agents by name
(``fivethousand_rl.agents.shipped``, wherever the package is installed); from the server's folder
(``root``, the current one by default), agents shipped there (``checkpoints/NAME/``
holding a ``model.zip`` or ``value_net.npz``, as ``ship.py`` writes them) and exported
bots (``bots/*.onnx``, and the ``model.onnx`` of a folder ``checkpoints/NAME/`` or
``bots/NAME/``, a bundle: named NAME, as tournaments name it; one whose weights are
not all finite is left out, in one line of the log). Each is built by
``fivethousand_rl.agents.make_policy``, once, the first time a game needs it, and
shared by every game (policies keep no per-game state).
What is made per table or rules (hint planners, solves) is kept while recently used,
within a bound on count and bytes (``fivethousand_rl.agents.cache.LRU``).
Heavy one-time work (a model load, a solve) holds up only the requests that need it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.cache import LRU, MB
from fivethousand_rl.agents.exported import check_onnx_weights
from fivethousand_rl.agents.neural import short_name
from fivethousand_rl.agents.shipped import EXPORTED, shipped_models
from fivethousand_rl.envs.i18n import N_, _
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.rules import Rules

ROOT = Path(__file__).resolve().parents[1]
log = logging.getLogger("webplay")
T = TypeVar("T")
# What a catalogue keeps made per table or rules, at most (a hint planner's caches grow
# to tens of MB as it is used: fivethousand_rl.agents.planner).
MAX_KEPT = 32
MAX_KEPT_BYTES = 256 * MB
_MISSING = object()


def _kept_for_good(key: Hashable) -> bool:
    """Whether ``once`` keeps `key`'s value for good: the bots (a fixed list)."""
    return isinstance(key, tuple) and key[:1] == ("policy",)


SCRIPTED = (  # key, what it is (in English: translated where listed)
    ("smart", N_("endgame-aware heuristic")),
    ("turn-ev", N_("maximizes the expected points of each turn")),
    ("threshold:350", N_("banks once the turn total reaches 350")),
    ("random", N_("random legal moves")),
    ("optimal", N_("maximizes its win probability (exact with 2 players)")),
)
# What a trained bot is, by its file's suffix and where it was found.
SHIPPED_ABOUT = {
    ".npz": N_("trained planner, shipped with the package"),
    ".zip": N_("trained PPO agent, shipped with the package"),
}
SERVER_ABOUT = {".npz": N_("trained planner, shipped"), ".zip": N_("trained PPO agent, shipped")}
EXPORTED_ABOUT = N_("exported bot (ONNX)")


def _model_kind(path: Path) -> str:
    """ ".npz" for a planner's value net, ".zip" for a PPO model (anything else)."""
    return ".npz" if path.suffix == ".npz" else ".zip"


def _weights_fine(path: Path) -> bool:
    """Whether the exported bot `path` may be listed: not if its weights hold a NaN or an
    infinity, or its file is no ONNX model (logged once, at start-up). Checked here, a
    millisecond a file, because such a bot would fail every step of its games."""
    try:
        check_onnx_weights(path)
    except (OSError, ValueError) as e:
        log.warning("left out the exported bot %s: %s", path, e)
        return False
    return True


@dataclass
class Bot:
    """One entry of the list: `key` is what clients send, `spec` what make_policy takes."""

    key: str
    spec: str
    kind: str  # "scripted", "solver", "shipped" or "exported"
    about: str  # in English (a msgid: ``to_list`` translates it)


class Catalogue:
    """The bots of this server, by key; ``policy(key)`` builds one the first time."""

    def __init__(
        self, root: Path | None = None, max_kept: int = MAX_KEPT, max_bytes: int = MAX_KEPT_BYTES
    ) -> None:
        # Models of the server's own are found under it (error messages show paths from it).
        self.root = Path.cwd() if root is None else root
        self.bots: dict[str, Bot] = {}
        for key, about in SCRIPTED:
            kind = "solver" if key == "optimal" else "scripted"
            self.bots[key] = Bot(key, key, kind, about)
        for path in shipped_models():
            key = path.parent.name
            self.bots[key] = Bot(key, key, "shipped", SHIPPED_ABOUT[_model_kind(path)])
        for path in sorted((self.root / "checkpoints").glob("*/*")):
            if path.name in ("model.zip", "value_net.npz") and path.is_file():
                key = path.parent.name
                about = SERVER_ABOUT[_model_kind(path)]
                self.bots.setdefault(key, Bot(key, str(path), "shipped", about))
        # Exported bots: a folder holding model.onnx (a bundle, export.py --out; an
        # agent shipped with its export) by the folder's name, as tables name it
        # (short_name); a file of bots/ by its file name (the key earlier saves hold).
        folders = [*(self.root / "checkpoints").glob(f"*/{EXPORTED}")]
        folders += (self.root / "bots").glob(f"*/{EXPORTED}")
        exported = [(short_name(path), path) for path in sorted(folders) if path.is_file()]
        exported += [(path.name, path) for path in sorted((self.root / "bots").glob("*.onnx"))]
        for key, path in exported:
            if key not in self.bots and _weights_fine(path):
                self.bots[key] = Bot(key, str(path), "exported", EXPORTED_ABOUT)
        self._lock = threading.Lock()  # guards the three below, held for a lookup only
        # The bots themselves are kept for good (the list is fixed); what is made per
        # table or rules (hint planners, prepared solves) is kept while recently used,
        # at most `max_kept` entries and about `max_bytes` (fivethousand_rl.agents.cache.LRU).
        self._made: dict[Hashable, object] = {}
        self._kept = LRU(max_kept, max_bytes)
        self._making: dict[Hashable, threading.Lock] = {}

    def __contains__(self, key: object) -> bool:
        return key in self.bots

    def to_list(self) -> list[dict]:
        """The bots as /api/bots lists them, what each is in the language in use."""
        return [{"key": b.key, "kind": b.kind, "about": _(b.about)} for b in self.bots.values()]

    def once(self, key: Hashable, make: Callable[[], T]) -> T:
        """What `make()` returns for `key`, made by the first caller and shared. A caller
        waits only for the key it asks for: one bot's model load or a solve does not hold
        up games that do not need it. A failure is not kept (the next caller tries)."""
        with self._lock:
            known = self._known(key)
            if known is not _MISSING:
                return known
            lock = self._making.setdefault(key, threading.Lock())
        with lock:
            try:
                with self._lock:
                    known = self._known(key)
                if known is _MISSING:
                    known = make()
                    with self._lock:
                        if _kept_for_good(key):
                            self._made[key] = known
                        else:
                            self._kept.put(key, known)
                return known
            finally:
                with self._lock:  # a later caller finds the value, or makes it again
                    self._making.pop(key, None)

    def _known(self, key: Hashable) -> object:
        """The value kept for `key`, or _MISSING (lock held)."""
        return self._made[key] if key in self._made else self._kept.get(key, _MISSING)

    def made(self, key: Hashable) -> object | None:
        """What ``once`` has made for `key`, or None if nothing yet (never waits)."""
        with self._lock:
            known = self._known(key)
        return None if known is _MISSING else known

    def kept(self) -> LRU:
        """What ``once`` keeps per table or rules (for tests and monitoring)."""
        return self._kept

    def policy(self, key: str) -> Policy:
        """The policy of `key` (built once); ValueError (one line) if it cannot load."""
        bot = self.bots[key]

        def build() -> Policy:
            policy = make_policy(bot.spec)
            if bot.kind == "solver":
                # The solver's progress bar is for terminals, not a server's log.
                policy.show_progress = False
            return policy

        return self.once(("policy", key), build)

    def prepared(self, key: str, n_players: int, rules: Rules) -> Policy:
        """The policy of `key`, checked for such a game (ValueError if it can't play it)
        and prepared for `rules` (a solve, once)."""
        policy = self.policy(key)
        policy.check_game(n_players, rules)
        self.once(("prepare", key, rules), lambda: policy.prepare(rules))
        return policy
