"""Plain-text picture of a game, for ``render_mode="ansi"``/``"human"`` and the CLI."""

from __future__ import annotations

from collections.abc import Sequence

from envs.game import DECIDE, OVER, Game


def render_text(game: Game, names: Sequence[str] | None = None) -> str:
    s = game.state
    names = list(names) if names else [f"player {i}" for i in range(len(s.scores))]
    width = max(len(n) for n in names)
    lines = []
    if s.phase == OVER:
        lines.append(f"Game over after {s.turns} turns: {names[s.winner]} wins.")
    else:
        lines.append(
            f"Turn {s.turns + 1}: {names[s.current]} to play, turn total {s.turn_total}, "
            f"{s.dice_left} dice in play"
        )
    for i, score in enumerate(s.scores):
        marker = ">" if i == s.current and s.phase != OVER else " "
        note = "" if score else "  (not entered)"
        lines.append(f" {marker} {names[i]:<{width}} {score:>5}{note}")
    if s.held:
        lines.append("   held this turn: " + "  ".join(str(list(h)) for h in s.held))
    if s.phase == DECIDE:
        lines.append("   roll: " + " ".join(str(d) for d in s.roll))
    if s.last_event:
        lines.append("   last: " + s.last_event)
    return "\n".join(lines) + "\n"
