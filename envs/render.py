"""Pictures of a game: text (``"ansi"``/``"human"`` render modes, the CLI) and an RGB
array (``"rgb_array"``, e.g. for video recording)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from envs.game import DECIDE, OVER, BankOutcome, Event, Game, Moved, Rolled, format_dice


def bank_text(outcome: BankOutcome, names: Sequence[str]) -> str:
    """What banking did (or would do), past tense: "Ann banked 300, now 1200"."""
    return f"{names[outcome.banker]} {bank_clause(outcome, names)}"


def bank_clause(outcome: BankOutcome, names: Sequence[str]) -> str:
    """``bank_text`` without its subject: "banked 300, now 1200"."""
    o, total = outcome, outcome.total
    if not o.allowed:
        return f"could not bank {total}: it {o.why_not}"
    if o.lost:
        return f"banked {total}: overshoot, the points are lost ({lost_reason(o, names)})"
    if o.overshoot:
        to, now = names[o.gift_to], o.scores[o.gift_to]
        head = f"banked {total}: overshoot, gift of {total} to {to}"
        return head + (f", who won with exactly {now}" if o.winner == o.gift_to else f", now {now}")
    if o.winner == o.banker:
        return f"banked {total} and won with exactly {o.scores[o.banker]}"
    bumps = " and ".join(names[p] for p in o.bumped)
    return f"banked {total}, now {o.scores[o.banker]}" + (
        f", which bumped {bumps} to 0" if bumps else ""
    )


def lost_reason(outcome: BankOutcome, names: Sequence[str]) -> str:
    """Why an overshoot's points go to nobody (R9), the seats named."""
    if outcome.lost_candidate is None:
        return outcome.lost_why
    return outcome.lost_why.replace("them", names[outcome.lost_candidate])


def event_text(event: Event, names: Sequence[str]) -> str:
    """One event of the game in words, seats named by `names`."""
    who = names[event.seat]
    if isinstance(event, Rolled):
        text = f"{who} rolled {format_dice(event.dice)}"
        if event.bust:
            text += ": bust" + (f", lost {event.turn_total}" if event.turn_total else "")
        return text
    assert isinstance(event, Moved)
    move = event.move
    if move.bank is not None:
        return bank_text(move.bank, names)
    return f"{who} held {format_dice(move.held)}, turn total {move.turn_total}"


def plural(count: int, noun: str) -> str:
    """``1 turn``, ``2 turns``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def count_dice(count: int) -> str:
    """``1 die``, ``3 dice``."""
    return "1 die" if count == 1 else f"{count} dice"


def _names(game: Game, names: Sequence[str] | None) -> list[str]:
    return list(names) if names else [f"player {i}" for i in range(game.n_players)]


def headline(game: Game, names: Sequence[str] | None = None) -> str:
    """Whose turn it is, or who won: the first line of ``render_text``."""
    s, names = game.state, _names(game, names)
    if s.phase == OVER:
        return f"Game over after {plural(s.turns, 'turn')}: {names[s.winner]} won."
    return (
        f"Turn {s.turns + 1}: {names[s.current]} to play, turn total {s.turn_total}, "
        f"{count_dice(s.dice_left)} in play"
    )


def board_text(game: Game, names: Sequence[str] | None = None) -> str:
    """The scores, the dice held this turn, the pending roll and the last event: the
    rest of ``render_text``."""
    s, names = game.state, _names(game, names)
    width = max(len(n) for n in names)
    lines = []
    for i, score in enumerate(s.scores):
        marker = ">" if i == s.current and s.phase != OVER else " "
        note = "" if score else "  (not entered)"
        lines.append(f" {marker} {names[i]:<{width}} {score:>5}{note}")
    if s.held:
        lines.append("   held this turn: " + "  ".join(format_dice(h) for h in s.held))
    if s.phase == DECIDE:
        lines.append("   roll: " + format_dice(s.roll))
    if game.last_event is not None:
        lines.append("   last: " + event_text(game.last_event, names))
    return "\n".join(lines) + "\n"


def render_text(game: Game, names: Sequence[str] | None = None) -> str:
    """The game as text: ``headline`` then ``board_text``."""
    return headline(game, names) + "\n" + board_text(game, names)


# Pip positions on a 3x3 grid for each face.
_PIPS = {
    1: [(1, 1)],
    2: [(0, 0), (2, 2)],
    3: [(0, 0), (1, 1), (2, 2)],
    4: [(0, 0), (0, 2), (2, 0), (2, 2)],
    5: [(0, 0), (0, 2), (1, 1), (2, 0), (2, 2)],
    6: [(0, 0), (0, 2), (1, 0), (1, 2), (2, 0), (2, 2)],
}
_DIE, _GAP, _BAR = 48, 10, 14


def _draw_die(img: np.ndarray, top: int, left: int, face: int, color) -> None:
    img[top : top + _DIE, left : left + _DIE] = (40, 40, 40)
    img[top + 2 : top + _DIE - 2, left + 2 : left + _DIE - 2] = color
    cell = _DIE // 3
    for row, col in _PIPS[face]:
        y, x = top + row * cell + cell // 2, left + col * cell + cell // 2
        img[y - 4 : y + 4, x - 4 : x + 4] = (20, 20, 20)


def render_rgb(game: Game) -> np.ndarray:
    """A picture of the game (H x W x 3 uint8): the roll, the dice held this turn, and a
    bar per player (banked score dark, the mover's turn total light)."""
    s = game.state
    n = len(s.scores)
    width = 5 * (_DIE + _GAP) + _GAP
    height = 2 * (_DIE + _GAP) + _GAP + n * (_BAR + 6) + _GAP
    img = np.full((height, width, 3), 255, dtype=np.uint8)
    for i, face in enumerate(s.roll or ()):
        _draw_die(img, _GAP, _GAP + i * (_DIE + _GAP), face, (250, 250, 250))
    held = [d for hold in s.held for d in hold][-5:]
    for i, face in enumerate(held):
        _draw_die(img, 2 * _GAP + _DIE, _GAP + i * (_DIE + _GAP), face, (200, 200, 200))
    top = 2 * (_DIE + _GAP) + _GAP
    span = width - 2 * _GAP
    target = game.rules.target
    for p, score in enumerate(s.scores):
        y = top + p * (_BAR + 6)
        img[y : y + _BAR, _GAP : _GAP + span] = (230, 230, 230)
        banked = int(span * min(score / target, 1.0))
        mover = p == s.current and s.phase != OVER
        color = (200, 60, 60) if p == s.winner else (60, 90, 200) if mover else (90, 90, 90)
        img[y : y + _BAR, _GAP : _GAP + banked] = color
        if mover:
            extra = int(span * min((score + s.turn_total) / target, 1.0))
            img[y : y + _BAR, _GAP + banked : _GAP + extra] = (150, 180, 250)
    return img
