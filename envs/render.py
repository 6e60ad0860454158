"""Pictures of a game: text (``"ansi"``/``"human"`` render modes, the CLI) and an RGB
array (``"rgb_array"``, e.g. for video recording)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from fivethousand_rl.envs.game import (
    DECIDE,
    OVER,
    BankOutcome,
    Event,
    Game,
    Moved,
    Rolled,
    format_dice,
)
from fivethousand_rl.envs.i18n import _, ngettext
from fivethousand_rl.envs.rules import BANK_BIT


def bank_text(outcome: BankOutcome, names: Sequence[str]) -> str:
    """What banking did (or would do), past tense, in the language in use: "Ann banked
    300, now 1200"."""
    o = outcome
    said = {"who": names[o.banker], "total": o.total, "score": o.scores[o.banker]}
    if not o.allowed:
        return _("{who} could not bank {total}: it {why}", **said, why=refusal(o.why_not))
    if o.lost:
        why = lost_reason(o, names)
        return _("{who} banked {total}: overshoot, the points are lost ({why})", **said, why=why)
    if o.overshoot:
        said.update(to=names[o.gift_to], now=o.scores[o.gift_to])
        if o.winner == o.gift_to:
            return _(
                "{who} banked {total}: overshoot, gift of {total} to {to}, who won with "
                "exactly {now}",
                **said,
            )
        return _("{who} banked {total}: overshoot, gift of {total} to {to}, now {now}", **said)
    if o.winner == o.banker:
        return _("{who} banked {total} and won with exactly {score}", **said)
    if o.bumped:
        said["bumped"] = join_words([names[p] for p in o.bumped])
        return _("{who} banked {total}, now {score}, which bumped {bumped} to 0", **said)
    return _("{who} banked {total}, now {score}", **said)


def join_words(parts: Sequence[str]) -> str:
    """Parts said as a list: "A", "A and B", "A, B and C"."""
    if len(parts) < 2:
        return "".join(parts)
    return _("{first} and {last}", first=_(", ").join(parts[:-1]), last=parts[-1])


# The engine says in English why a bank is refused (``Move.why_no_bank``,
# ``BankOutcome.why_not``: its few reasons joined by " and ") and why an overshoot is
# lost (``BankOutcome.lost_why``); these are their texts for a player.
_ENTRY_REASON = re.compile(r"is under the (\d+) needed to enter")
_PAST_REASON = re.compile(r"it would take (.+) past (\d+)")
_ENTERED_REASON = re.compile(r"nobody else has (\d+) or more")


def refusal(why: str) -> str:
    """Why a bank is refused (the engine's reason), as a player reads it after "it":
    "ends in 50", "is under the 500 needed to enter", both, or "nothing to bank"."""
    parts = []
    for part in why.split(" and "):
        if part == "nothing to bank":
            parts.append(_("nothing to bank"))
        elif part == "ends in 50":
            parts.append(_("ends in 50"))
        elif match := _ENTRY_REASON.fullmatch(part):
            parts.append(_("is under the {entry} needed to enter", entry=int(match[1])))
        else:  # a reason this table does not know: as the engine says it
            parts.append(part)
    return join_words(parts)


def lost_reason(outcome: BankOutcome, names: Sequence[str]) -> str:
    """Why an overshoot's points go to nobody (R9), the seats named."""
    why = outcome.lost_why
    if why == "overshoots are lost under these rules":
        return _("overshoots are lost under these rules")
    if match := _ENTERED_REASON.fullmatch(why):
        return _("nobody else has {entry} or more", entry=int(match[1]))
    if (match := _PAST_REASON.fullmatch(why)) and outcome.lost_candidate is not None:
        who = names[outcome.lost_candidate]
        return _("it would take {who} past {target}", who=who, target=int(match[2]))
    return why


def event_text(event: Event, names: Sequence[str]) -> str:
    """One event of the game in words, seats named by `names`."""
    who = names[event.seat]
    if isinstance(event, Rolled):
        said = {"who": who, "dice": format_dice(event.dice)}
        if not event.bust:
            return _("{who} rolled {dice}", **said)
        if event.turn_total:
            return _("{who} rolled {dice}: bust, lost {points}", **said, points=event.turn_total)
        return _("{who} rolled {dice}: bust", **said)
    assert isinstance(event, Moved)
    move, dice = event.move, format_dice(event.move.held)
    if move.bank is not None:  # the dice of the turn's last hold, set aside as it banked
        return _("{bank} (held {dice})", bank=bank_text(move.bank, names), dice=dice)
    return _("{who} held {dice}, turn total {total}", who=who, dice=dice, total=move.turn_total)


def action_text(action: int, roll: Sequence[int], advice: bool = False) -> str:
    """A choice as a player reads it: "hold [1 5] and bank", "hold [1 5] and roll"
    ("... and roll on" as `advice`). ``envs.rules.describe_action`` is its English for
    programs (error messages, logs)."""
    dice = tuple(sorted(roll))
    held = format_dice([d for i, d in enumerate(dice) if action >> i & 1])
    if action & BANK_BIT:
        return _("hold {dice} and bank", dice=held)
    if advice:
        return _("hold {dice} and roll on", dice=held)
    return _("hold {dice} and roll", dice=held)


def plural(count: int, noun: str) -> str:
    """``1 turn``, ``2 turns`` (English, for programs' messages)."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def count_dice(count: int) -> str:
    """``1 die``, ``3 dice``, in the language in use."""
    return ngettext("{n} die", "{n} dice", count)


def _names(game: Game, names: Sequence[str] | None) -> list[str]:
    return list(names) if names else [_("player {seat}", seat=i) for i in range(game.n_players)]


def headline(game: Game, names: Sequence[str] | None = None) -> str:
    """Whose turn it is, or who won: the first line of ``render_text``."""
    s, names = game.state, _names(game, names)
    if s.phase == OVER:
        return ngettext(
            "Game over after {n} turn: {winner} won.",
            "Game over after {n} turns: {winner} won.",
            s.turns,
            winner=names[s.winner],
        )
    return ngettext(
        "Turn {turn}: {who} to play, turn total {total}, {n} die in play",
        "Turn {turn}: {who} to play, turn total {total}, {n} dice in play",
        s.dice_left,
        turn=s.turns + 1,
        who=names[s.current],
        total=s.turn_total,
    )


def cut_off_text(turns: int) -> str:
    """Why a game that reached the turn limit (R11) ended: no one won."""
    return ngettext(
        "the game was cut off after {n} turn, the longest a game may last: no one won",
        "the game was cut off after {n} turns, the longest a game may last: no one won",
        turns,
    )


def board_text(game: Game, names: Sequence[str] | None = None) -> str:
    """The scores, the dice held this turn, the pending roll and the last event: the
    rest of ``render_text``."""
    s, names = game.state, _names(game, names)
    width = max(len(n) for n in names)
    lines = []
    for i, score in enumerate(s.scores):
        marker = ">" if i == s.current and s.phase != OVER else " "
        note = "" if score else "  " + _("(not entered)")
        lines.append(f" {marker} {names[i]:<{width}} {score:>5}{note}")
    if s.held:
        held = "  ".join(format_dice(h) for h in s.held)
        lines.append("   " + _("held this turn: {dice}", dice=held))
    if s.phase == DECIDE:
        lines.append("   " + _("roll: {dice}", dice=format_dice(s.roll)))
    if game.last_event is not None:
        lines.append("   " + _("last: {event}", event=event_text(game.last_event, names)))
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
