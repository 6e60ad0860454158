"""The bots a web player may choose: a fixed list built on the server, so that clients
name bots by key and never send a file path.

Scripted bots and ``optimal`` by name; shipped agents from ``checkpoints/*/`` (a
``model.zip`` or ``value_net.npz`` in a folder of its own, as ``ship.py`` writes them);
exported bots from ``bots/*.onnx``. Each is built by ``agents.make_policy``, once, the
first time a game needs it, and shared by every game (policies keep no per-game state).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from agents import make_policy
from envs.policy import Policy

ROOT = Path(__file__).resolve().parents[1]

SCRIPTED = (
    ("smart", "endgame-aware heuristic"),
    ("turn-ev", "maximizes the expected points of each turn"),
    ("threshold:350", "banks once the turn total reaches 350"),
    ("random", "random legal moves"),
    ("optimal", "maximizes its win probability (exact with 2 players)"),
)


@dataclass
class Bot:
    """One entry of the list: `key` is what clients send, `spec` what make_policy takes."""

    key: str
    spec: str
    kind: str  # "scripted", "solver", "shipped" or "exported"
    about: str
    _policy: Policy | None = field(default=None, repr=False)


class Catalogue:
    """The bots of this server, by key; ``policy(key)`` builds one the first time."""

    def __init__(self, root: Path = ROOT) -> None:
        self.bots: dict[str, Bot] = {}
        for key, about in SCRIPTED:
            kind = "solver" if key == "optimal" else "scripted"
            self.bots[key] = Bot(key, key, kind, about)
        for path in sorted((root / "checkpoints").glob("*/*")):
            if path.name in ("model.zip", "value_net.npz") and path.is_file():
                what = "trained planner" if path.suffix == ".npz" else "trained PPO agent"
                key = path.parent.name
                self.bots.setdefault(key, Bot(key, str(path), "shipped", f"{what}, shipped"))
        for path in sorted((root / "bots").glob("*.onnx")):
            key = path.name
            self.bots.setdefault(key, Bot(key, str(path), "exported", "exported bot (ONNX)"))
        self._lock = threading.Lock()

    def __contains__(self, key: object) -> bool:
        return key in self.bots

    def to_list(self) -> list[dict]:
        return [{"key": b.key, "kind": b.kind, "about": b.about} for b in self.bots.values()]

    def policy(self, key: str) -> Policy:
        """The policy of `key` (built once); ValueError (one line) if it cannot load."""
        bot = self.bots[key]
        with self._lock:
            if bot._policy is None:
                bot._policy = make_policy(bot.spec)
                if bot.kind == "solver":
                    # The solver's progress bar is for terminals, not a server's log.
                    bot._policy.show_progress = False
            return bot._policy
