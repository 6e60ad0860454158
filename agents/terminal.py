"""The game at the terminal (``fivethousand play``): a session of one or more people at
the keyboard against bots, its prompts and commands, its saves and game logs, and their
replay. Input and output are functions (``ask``, ``say``), so that tests and other front
ends drive it; the command line is fivethousand_rl/play.py.

At each decision a person types a choice number from the list, or a command
(``COMMAND_HELP``: ``help`` lists them).
"""

from __future__ import annotations

import errno
import json
import os
import re
import shlex
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from fivethousand_rl.agents import make_policy, opens_file_or_code
from fivethousand_rl.agents.base import atomic_write, read_text_capped
from fivethousand_rl.agents.hints import hint, hint_policy, is_exact
from fivethousand_rl.agents.rule_flags import describe_rules, house_rules
from fivethousand_rl.envs import driver
from fivethousand_rl.envs.game import (
    BankOutcome,
    Game,
    Moved,
    Rolled,
    format_dice,
    is_int,
    rng_state_problem,
)
from fivethousand_rl.envs.game_log import apply_event, check_fields, log_entry, one_line, replay_log
from fivethousand_rl.envs.i18n import N_, _, ngettext, percent, pgettext
from fivethousand_rl.envs.policy import Policy
from fivethousand_rl.envs.render import (
    action_text,
    board_text,
    count_dice,
    cut_off_text,
    event_text,
    headline,
    join_words,
    lost_reason,
    plural,
    refusal,
    render_text,
)
from fivethousand_rl.envs.rules import (
    BANK_BIT,
    ROLL_INFO,
    Rules,
    action_for,
    check_target_bound,
    hold_score,
)
from fivethousand_rl.envs.rules_text import house_rule_names, rules_text

HUMAN = "you"
# The commands at a decision, each with what it does (``commands_text``).
COMMAND_HELP = [
    ("r 115", N_("hold 1, 1 and 5, then roll the dice left (faces in any order, spaces optional)")),
    ("b 115", N_("hold 1, 1 and 5, then bank")),
    ("r / b", N_("hold the best-scoring set, then roll / bank")),
    ("hint", N_("the best move and its chances (exact with 2 players; with 3+ an estimate)")),
    ("rules", N_("the rules in short, with this game's house rules")),
    ("save F", N_("save the game to file F (resume with --load F)")),
    ("help", N_("this list")),
    ("quit", N_("leave the game (the game log is still written with --log)")),
]
SCRIPT = "python play.py"  # how the command names itself when run as a script
# "r", "b", "roll" or "bank", then the faces to hold (spaces optional: "r55", "b 1 5").
MOVE = re.compile(r"(roll|bank|r|b)(?![a-z])(.*)")
TABLE_PACE = 0.4  # s between bot moves at 3+ players on a terminal: one line at a time
NO_ANSWERS = {"n", "no", "q", "quit", "exit"}  # to "save before leaving?": leave as it is
ALIASES = {"?": "help", "h": "help", "exit": "quit", "q": "quit"}  # other words for help, quit
ECHO = 40  # an error quotes at most this many characters of what was typed
# A long game's save or log is tens of kB (the web server caps its saves at 4 MB too).
MAX_FILE_BYTES = 4 << 20


def commands_text() -> str:
    """The commands at a decision and what each does, in the language in use."""
    return "\n".join(f"  {keys:<8} {_(text)}" for keys, text in COMMAND_HELP)


def wants_rematch(ask: Callable[[str], str], several: bool = False) -> bool:
    """Whether the player (the people, if `several`), asked at the end of a game, wants
    another (the end of input: no)."""
    if several:
        question = _("Play again at the same table? (y/n) ")
    else:
        question = _("Play again against the same bots? (y/n) ")
    try:
        answer = ask(question).strip().lower()
    except EOFError:
        return False
    return answer in {"y", "yes", pgettext("answer", "y"), pgettext("answer", "yes")}


def cut(text: str, limit: int = ECHO) -> str:
    """`text` as an error message quotes it: its first `limit` characters, and "..." if
    there were more (a 100,000-character line is not printed back whole)."""
    return text if len(text) <= limit else text[:limit] + "..."


# Whether a player spec names a model file or code (``module:function``): the specs
# ``make_policy`` opens or imports, which a save never does alone.
is_model = opens_file_or_code


MAX_NAME = 24  # characters of a person's name (--humans): it fits a line of the board


def name_problem(names: list[str]) -> str:
    """What is wrong with the names of the people at one keyboard ("" if nothing):
    each 1 to MAX_NAME printable characters once stripped, not "you" (the single
    player's name), no two alike whatever their case."""
    seen: set[str] = set()
    for raw in names:
        name = raw.strip()
        if not name:
            return "a name cannot be empty"
        if len(name) > MAX_NAME:
            return f"{cut(name)!r} is longer than {MAX_NAME} characters"
        if not name.isprintable():
            return f"{cut(name)!r} has a character that cannot be shown"
        if name.casefold() == HUMAN:
            return f"{HUMAN!r} is the single player's name: give each person their own"
        if name.casefold() in seen:
            return f"{name!r} is given twice"
        seen.add(name.casefold())
    return ""


def seat_table(
    humans: list[str] | None, seats: list[int] | None, opponents: list[str] | None
) -> tuple[list[str], list[int]]:
    """The player of each seat of a new game (a bot spec, or a person's name; "you"
    alone) and the people's seats, from --humans, --seat and --opponents; ValueError
    (one line) unless they fit. Seats play in seat order (R11: 2 to 8 players), so
    --seat chooses who plays when; the bots fill the other seats in order."""
    if humans is not None and len(humans) < 2:
        raise ValueError("--humans names the people at this keyboard, 2 or more (pass and play)")
    if humans is not None and (problem := name_problem(humans)):
        raise ValueError(f"--humans: {problem}")
    people = [h.strip() for h in humans] if humans is not None else [HUMAN]
    k = len(people)
    bots = opponents if opponents is not None else ["smart"] * (k == 1)
    n = k + len(bots)
    if k == 1 and not 1 <= len(bots) <= 7:
        raise ValueError("give 1 to 7 opponents")
    if n > 8:
        raise ValueError(f"give at most 8 players in all, not {n} ({k} people, {len(bots)} bots)")
    seats = list(range(k)) if seats is None else seats
    if len(seats) != k:
        who = "one person" if k == 1 else f"{k} people"
        raise ValueError(f"--seat gives {plural(len(seats), 'seat')} for {who} at the keyboard")
    if not all(0 <= seat < n for seat in seats):
        raise ValueError(f"--seat must be 0..{n - 1}")
    if len(set(seats)) != k:
        raise ValueError("--seat gives a seat twice: each person has their own")
    players, others = [""] * n, iter(bots)
    for seat, person in zip(seats, people, strict=True):
        players[seat] = person
    return [p or next(others) for p in players], seats


def new_game(n_players: int, rules: Rules, seed: int) -> Game:
    """A new game whose dice draw from the first stream of `seed` (a Session's bots draw
    from the second), so that a seed replays its game."""
    dice = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[0])
    return Game(n_players, rules, seed=dice)


class Quit(Exception):
    """The player left the game ('quit', end of input, Ctrl-C)."""


def bank_preview(outcome: BankOutcome, names: list[str], target: int, me: int) -> str:
    """What banking would do, in words (the engine's ``BankOutcome``, R8, R9), so that
    nobody banks into a surprise; `me` is the player's own seat (said "you")."""
    o = outcome
    said = {"who": names[o.banker], "score": o.scores[o.banker], "points": o.total}
    if o.winner == o.banker:
        if o.banker == me:
            return _("bank: you win with exactly {score}", **said)
        return _("bank: {who} wins with exactly {score}", **said)
    if o.lost:
        said.update(target=target, why=lost_reason(o, names))
        return _("bank: overshoot past {target}, the {points} points are lost ({why})", **said)
    if o.overshoot:
        said.update(to=names[o.gift_to], now=o.scores[o.gift_to])
        if o.winner == o.gift_to:
            return _("bank: overshoot, gift of {points} to {to}, who wins with {now}", **said)
        return _("bank: overshoot, gift of {points} to {to}, up to {now}", **said)
    if o.bumped:
        said["bumped"] = join_words([names[p] for p in o.bumped])
        return _("bank: score {score}, bumps {bumped} to 0", **said)
    return _("bank: score {score}", **said)


def choices(game: Game, names: list[str] | None = None) -> list[tuple[int, str]]:
    """The legal actions with their descriptions, each hold's roll-on choice first, then
    its banking choice, which says what banking does; a hold that can't be banked says
    why."""
    names = names or [_("player {seat}", seat=i) for i in range(game.n_players)]
    me = game.state.current
    out = []
    for move in sorted(game.moves(), key=lambda m: (m.action & ~BANK_BIT, m.banks)):
        if move.bank is not None:
            what = bank_preview(move.bank, names, game.rules.target, me)
        else:
            what = _("roll {dice}", dice=count_dice(move.dice_left))
            if move.why_no_bank:
                why = refusal(move.why_no_bank)
                what += "  " + _("(can't bank: {total} {why})", total=move.turn_total, why=why)
        head = _("hold {dice}", dice=f"{format_dice(move.held):<11}") + f" -> {move.turn_total:>4}"
        out.append((move.action, f"{head}, {what}"))
    return out


def parse_command(text: str, game: Game, menu: list[tuple[int, str]]) -> int | str:
    """An action for `text`, a command word ("hint", "help", "quit", "rules",
    "save F"), or raise ValueError with a message for the player."""
    words = text.strip().lower().split()
    if not words:
        raise ValueError(_("type a choice number, or 'help'"))
    head = ALIASES.get(words[0], words[0])
    if head in ("help", "quit", "hint", "rules"):
        return head
    if head == "save":
        if len(words) != 2:
            raise ValueError(_("usage: save FILE"))
        return "save " + text.strip().split(maxsplit=1)[1]
    # ASCII digits only: str.isdigit() also accepts "²", which int() refuses.
    if re.fullmatch(r"[0-9]+", head) and len(words) == 1:
        number = int(head)
        if not 1 <= number <= len(menu):
            raise ValueError(_("there are choices 1 to {last}", last=len(menu)))
        return menu[number - 1][0]
    if move := MOVE.fullmatch(head):
        return _parse_move(move.group(1), move.group(2) + "".join(words[1:]), game)
    raise ValueError(_("unknown command {text}; type 'help'", text=repr(cut(text.strip()))))


def _parse_move(verb: str, faces: str, game: Game) -> int:
    """The action for "r 115" / "b" (verb, faces), or ValueError saying why not."""
    bank = verb in ("b", "bank")
    roll = game.state.roll
    if not faces:
        held = list(ROLL_INFO[roll].best.dice)
    elif all(c in "123456" for c in faces):
        held = [int(c) for c in faces]
    else:
        raise ValueError(
            _("dice are written as digits 1 to 6, like '{example}'", example=f"{verb} 115")
        )
    try:
        action = action_for(held, roll, bank)
    except ValueError:
        held_text = cut(format_dice(sorted(held)))
        raise ValueError(
            _("the roll {roll} has no {dice}", roll=format_dice(roll), dice=held_text)
        ) from None
    legal = game.legal()[0]
    if action in legal:
        return action
    if action & ~BANK_BIT not in {a & ~BANK_BIT for a in legal}:
        if game.rules.hold == "all" and hold_score(held) > 0:
            best = format_dice(ROLL_INFO[roll].best.dice)
            raise ValueError(
                _(
                    "under the hold rule 'all' every scoring die must be held: here {dice} (R5)",
                    dice=best,
                )
            )
        raise ValueError(
            _("{dice} cannot be held: every held die must score", dice=format_dice(sorted(held)))
        )
    roll_on = game.move(action & ~BANK_BIT)
    why = refusal(roll_on.why_no_bank)
    raise ValueError(_("you can't bank {total}: it {why} (R8)", total=roll_on.turn_total, why=why))


def rules_lines(rules: Rules) -> list[str]:
    """The game's rules, said as a game starts or resumes: every switch, then the house
    rules (those that differ from the seeds' rules), if any."""
    house = house_rule_names(rules)
    lines = [_("Rules: {rules}.", rules=describe_rules(rules))]
    return lines + [_("House rules: {rules}.", rules=", ".join(house))] * bool(house)


def decision_text(event: Moved, names: list[str], you: bool = False) -> str:
    """A decision as a past event: ``smart (seat 1) rolled [1 5 2 3 3], held [1 5] and
    rolled on.``, or said to the one person at the keyboard (`you`): ``You held ...``."""
    if event.move.banks:
        move = _("held {dice} and banked", dice=format_dice(event.move.held))
    else:
        move = _("held {dice} and rolled on", dice=format_dice(event.move.held))
    if you:
        return _("You {move}.", move=move)
    dice = format_dice(event.roll)
    return _("{who} rolled {dice}, {move}.", who=names[event.seat], dice=dice, move=move)


class Session:
    """One game at the terminal; input and output are functions, for tests and replays."""

    def __init__(
        self,
        game: Game,
        players: list[str],
        humans: int | list[int],
        seed: int,
        hint: bool = False,
        delay: float = 0.0,
        ask: Callable[[str], str] = input,
        say: Callable[[str], None] = print,
    ) -> None:
        self.game = game
        self.players = players  # spec per seat; HUMAN for a single player, else a name
        self.humans = [humans] if isinstance(humans, int) else list(humans)  # their seats
        self.several = len(self.humans) > 1  # pass and play: each person by their name
        self._last_person: int | None = None  # the seat of the last human decision
        bots = [i for i in range(len(players)) if i not in self.humans]
        self.policies = {i: make_policy(players[i]) for i in bots}
        for policy in self.policies.values():  # a trained model plays only its own rules
            policy.check_game(game.n_players, game.rules)
            policy.prepare(game.rules)  # optimal: solved (or refused) now, not mid-game
        self.rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[1])  # bots
        self.seed, self.hint, self.delay = seed, hint, delay
        self.ask, self.say = ask, say
        self.log: list[dict] = []
        self._adviser: tuple[Policy | None, str] | None = None  # the hints' policy, or why none
        self.program = SCRIPT  # the command as the user runs it, for the resume command

    def names(self) -> list[str]:
        """The seats as the players read them: "you" (or each person's name, in pass
        and play), "smart (seat 1)"."""
        return [
            (p if self.several else _("you"))
            if i in self.humans
            else _("{bot} (seat {seat})", bot=p, seat=i)
            for i, p in enumerate(self.players)
        ]

    @property
    def ended(self) -> bool:
        """Won, or cut off without a winner at the turn limit (R11)."""
        return self.game.over or self.game.state.turns >= driver.DEFAULT_MAX_TURNS

    def log_names(self) -> list[str]:
        """The seats as a game log records them (English, whatever the language)."""
        return [p if i in self.humans else f"{p} (seat {i})" for i, p in enumerate(self.players)]

    def play(self) -> int | None:
        game = self.game
        for line in rules_lines(game.rules):
            self.say(line)
        self.say(render_text(game, self.names()))
        seats = [self.policies.get(i, self) for i in range(game.n_players)]  # self: a person
        driver.play(game, seats, self.rng, on_event=self.show)  # R11: a bounded game
        self.say(board_text(game, self.names()).rstrip("\n"))
        self.say(headline(game, self.names()) if game.over else cut_off_text(game.state.turns))
        return game.state.winner

    def show(self, game: Game, event: Rolled | Moved) -> None:
        """Log a step, and tell it: each move, and the end of each turn."""
        names = self.names()
        self.log.append(log_entry(event))
        if isinstance(event, Rolled):
            if event.bust:  # the turn ends (R4)
                self.say(f"  {event_text(event, names)}")
                self.say(render_text(game, names))
            return
        self.say(decision_text(event, names, you=event.seat in self.humans and not self.several))
        if event.seat not in self.humans:
            time.sleep(self.delay)
        if event.move.banks:
            self.say(f"  {event_text(event, names)}")
            if not game.over:  # the final board comes once, at the end of play()
                self.say(render_text(game, names))

    def act(self, game: Game, rng: np.random.Generator) -> int:
        """A person's decision, as the game driver asks a seat for it (``human_turn``)."""
        return self.human_turn()

    def human_turn(self) -> int:
        """The decision of the person whose turn it is (in pass and play, a header
        names them when the keyboard changes hands, and the prompt names them)."""
        game = self.game
        s = game.state
        prompt = "> "
        if self.several:
            name = self.players[s.current]
            if self._last_person != s.current:
                self.say(_("{name}: your turn (pass the keyboard).", name=name))
            self._last_person, prompt = s.current, f"{name}> "
        menu = choices(game, self.names())
        held = "  ".join(format_dice(h) for h in s.held) or _("nothing yet")
        self.say(
            _(
                "Your roll: {dice}   (held this turn: {held}; turn total {total}, score {score})",
                dice=format_dice(s.roll),
                held=held,
                total=s.turn_total,
                score=s.scores[s.current],
            )
        )
        for i, (_action, text) in enumerate(menu, 1):
            self.say(f"  {i:>2}) {text}")
        if self.hint:
            self.say(self.hint_text())
        while True:
            try:
                text = self.ask(prompt)
            except EOFError:
                raise Quit from None
            try:
                choice = parse_command(text, game, menu)
            except ValueError as e:
                self.say(f"  {e}")
                continue
            if choice == "help":
                self.say(commands_text())
            elif choice == "rules":
                self.say(rules_text(game.rules))
            elif choice == "quit":
                self.offer_save()
                raise Quit
            elif choice == "hint":
                self.say(self.hint_text())
            elif isinstance(choice, str) and choice.startswith("save "):
                self.save_to(choice[5:])
            else:
                return choice

    def offer_save(self) -> None:
        """Before the player leaves an unfinished game ('quit'): a file to save it to, or
        nothing (Enter, 'quit', 'no', or the end of input) to leave without saving."""
        try:
            answer = self.ask(_("Save the game before leaving? A file name, or Enter to leave: "))
        except EOFError:
            return
        answer = answer.strip()
        if answer.lower().split(maxsplit=1)[:1] == ["save"]:  # "save F" typed out of habit
            answer = answer[4:].strip()
        if answer and answer.lower() not in NO_ANSWERS:
            self.save_to(answer)

    def save_to(self, given: str) -> None:
        """Save the game to the file `given` (as typed), saying where and how to resume,
        or why not."""
        path = str(Path(given).expanduser())
        try:
            save(self, path)
        except (OSError, ValueError) as e:
            why = getattr(e, "strerror", None) or e
            self.say("  " + _("could not save to {path}: {why}", path=cut(path), why=why))
            return
        command = self.resume_command(path)
        self.say("  " + _("saved to {path}; resume with: {command}", path=path, command=command))

    def rematch(self) -> Session:
        """A new game at the same table (the same people, bots and seats, rules, hints
        and pace), its dice seeded by the next seed: the same rematch for the same seed."""
        seed, how = self.seed + 1, (self.hint, self.delay, self.ask, self.say)
        game = new_game(self.game.n_players, self.game.rules, seed)
        again = Session(game, self.players, self.humans, seed, *how)
        again.program = self.program
        return again

    def resume_command(self, path: str) -> str:
        """The command that resumes this game saved at `path`: a save never opens a model
        file by itself, so with a model seated every bot seat is named again."""
        command = [*shlex.split(self.program), "--load", path]
        bots = [p for i, p in enumerate(self.players) if i not in self.humans]
        if any(is_model(p) for p in bots):
            command += ["--opponents", *bots]
        return shlex.join(command)

    def hint_text(self) -> str:
        """The hint for the seat whose decision it is (each person's own, in pass and
        play), from the mover's view, by the policy ``hint_policy`` chooses: with 2
        players the optimal move and its exact win probability; with 3+ a move and every
        player's win probability if it is played (exact against a table of bots whose
        best response was computed before, else a trained planner's estimate)."""
        game, n = self.game, self.game.n_players
        if self._adviser is None:  # chosen at the first hint (a 2-player solve: seconds)
            me = self.humans[0]
            table = [] if self.several else [self.players[(me + i) % n] for i in range(1, n)]
            try:
                self._adviser = hint_policy(n, game.rules, table, show_progress=True), ""
            except ValueError as e:  # rules the solver does not take
                self._adviser = None, one_line(e)
        policy, why = self._adviser
        said = {"players": n, "why": why}
        if policy is None and n == 2:
            return "  " + _("hint: unavailable under these rules ({why})", **said)
        if policy is None and house_rules(game.rules):
            return "  " + _(
                "hint: unavailable for {players} players (no shipped planner values such "
                "a table under these rules)",
                **said,
            )
        if policy is None:
            return "  " + _(
                "hint: unavailable for {players} players (no shipped planner values such a table)",
                **said,
            )
        best, chances = hint(policy, game)
        said["advice"] = action_text(best, game.state.roll, advice=True)
        if n == 2:
            said["chance"] = percent(chances[game.state.current])
            return "  " + _("hint: {advice} (win probability {chance} with optimal play)", **said)
        odds = zip(self.names(), chances, strict=True)
        said["odds"] = ", ".join(f"{who} {percent(p)}" for who, p in odds)
        if is_exact(policy):
            return "  " + _(
                "hint: {advice}; win chances then: {odds} (exact: the best response to this table)",
                **said,
            )
        return "  " + _(
            "hint: {advice}; win chances then: {odds} (an estimate by the trained planner "
            "{planner}, not exact)",
            **said,
            planner=policy.name,
        )


# ------------------------------------------------------------- save and replay
SAVE_FORMAT, LOG_FORMAT, VERSION = "fivethousand-rl saved game", "fivethousand-rl game log", 1
# Version 1: one person, "you", at the seat "human". Version 2 (pass and play): the
# people's seats "humans", and at each of them in "players" that person's name.
PASS_AND_PLAY = 2
SAVE_FIELDS = {
    version: ("format", "version", "game", "dice", "players", seats, "seed", "bot_rng", "log")
    for version, seats in ((VERSION, "human"), (PASS_AND_PLAY, "humans"))
}


def write_beside(path: str, text: str) -> None:
    """``atomic_write`` into a folder that exists (a mistyped one is an OSError to say,
    not a folder to make)."""
    if not Path(path).parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(Path(path).parent))
    atomic_write(path, text)


def save(session: Session, path: str) -> None:
    """Write the game to `path`: version 1 for one person (as before, which older
    play.py reads too), version 2 for several."""
    version = PASS_AND_PLAY if session.several else VERSION
    seats = {"humans": session.humans} if session.several else {"human": session.humans[0]}
    data = {
        "format": SAVE_FORMAT,
        "version": version,
        "game": json.loads(session.game.to_json()),
        "dice": session.game.dice_state(),
        "players": session.players,
        **seats,
        "seed": session.seed,
        "bot_rng": session.rng.bit_generator.state,
        "log": session.log,
    }
    write_beside(path, json.dumps(data))  # a full disk leaves the older save whole


def _saved_humans(data: dict, players: list[str]) -> list[int]:
    """The people's seats in a save (ValueError saying what is wrong): version 1's one
    seat "you", or version 2's seats of 2 or more people, each named at their seat."""
    n = len(players)
    if data["version"] == VERSION:
        human = data["human"]
        if not is_int(human) or not 0 <= human < n or players[human] != HUMAN:
            raise ValueError(f"human must be the seat (0..{n - 1}) whose player is {HUMAN!r}")
        if players.count(HUMAN) != 1:
            raise ValueError(f"exactly one seat is {HUMAN!r}")
        return [human]
    humans = data["humans"]
    seats = isinstance(humans, list) and all(is_int(h) and 0 <= h < n for h in humans)
    if not seats or len(humans) < 2 or len(set(humans)) != len(humans):
        raise ValueError(f"humans must be a list of 2 or more distinct seats (0..{n - 1})")
    people = [players[h] for h in humans]
    if problem := name_problem(people):
        raise ValueError(f"the people's names: {problem}")
    if people != [p.strip() for p in people]:
        raise ValueError("the people's names: a name has spaces around it")
    return list(humans)


class SeatError(ValueError):
    """A save and the players named again with ``--opponents`` that do not fit."""


def load(
    path: str,
    hint: bool,
    delay: float,
    ask: Callable[[str], str],
    say: Callable[[str], None],
    opponents: list[str] | None = None,
) -> Session:
    """Resume a game written by ``save``, checking every field and that its log leads to
    its game; raises a one-line ValueError naming `path` otherwise. A save is not
    trusted to open files: a seat it records as a model file (``is_model``) is played
    only by the model the user names again in `opponents` (every bot seat, in seat
    order, as ``--opponents`` gives them); without `opponents` such a save is refused
    before anything is opened."""
    try:
        text = read_text_capped(path, MAX_FILE_BYTES)
    except FileNotFoundError:
        raise ValueError(f"no saved game at {path}") from None
    except (OSError, ValueError) as e:  # UnicodeDecodeError is a ValueError
        why = getattr(e, "strerror", None) or one_line(e)
        raise ValueError(f"{path} is not a saved game we can resume ({why})") from None
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != SAVE_FORMAT:
            raise ValueError("not a saved 5000 game")
        version = data.get("version")
        known = is_int(version) and version in SAVE_FIELDS
        if "version" in data and not known:
            raise ValueError(
                f"version {data['version']!r}: this play.py reads version {VERSION} or "
                f"{PASS_AND_PLAY}"
            )
        check_fields(data, SAVE_FIELDS[version if known else VERSION])
        game = Game.from_json(json.dumps(data["game"]))
        check_target_bound(game.rules)
        game.set_dice_state(data["dice"])
        players, seed = data["players"], data["seed"]
        n = game.n_players
        listed = isinstance(players, list) and all(isinstance(p, str) for p in players)
        if not listed or len(players) != n:
            raise ValueError(f"players must be a list of {n} names, one per seat of its game")
        humans = _saved_humans(data, players)
        if not is_int(seed) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, not {seed!r}")
        if problem := rng_state_problem(np.random.PCG64(), data["bot_rng"]):
            raise ValueError(f"bot_rng: {problem}")
        replayed = Game(n, game.rules)
        replay_log(replayed, data["log"])
        if replayed.state != game.state:
            raise ValueError("its log does not lead to its game (a hand-edited game or log?)")
        players = _seat_players(players, humans, opponents)  # before any model is opened
        try:
            session = Session(game, players, humans, seed, hint, delay, ask, say)
        except ValueError as e:
            if opponents is None:  # a bot name of the save's own: the save is wrong
                raise
            raise SeatError(one_line(e)) from None  # the user's players: not the save's fault
        session.rng.bit_generator.state = data["bot_rng"]
        session.log = [dict(event) for event in data["log"]]
        return session
    except SeatError as e:
        raise ValueError(f"{path}: {one_line(e)}") from None
    except RecursionError:  # json.loads recurses once per bracket of a nested file
        raise ValueError(f"{path} is not a saved game we can resume (nested too deeply)") from None
    except (ValueError, TypeError, KeyError, IndexError, OSError) as e:
        raise ValueError(f"{path} is not a saved game we can resume ({one_line(e)})") from None


def _seat_players(players: list[str], humans: list[int], opponents: list[str] | None) -> list[str]:
    """The player of each seat of a saved game: its own bots, or the `opponents` named
    again (SeatError unless they fit, saying how). No model file is named by the save
    alone: the user's `opponents` must name it, and then it must be one there too."""
    seats = [i for i in range(len(players)) if i not in humans]
    if opponents is None:
        models = [i for i in seats if is_model(players[i])]
        if models:
            raise SeatError(
                f"seat {models[0]} was the model file or code {cut(players[models[0]])!r}, which a "
                "save does not open by itself: pass --opponents with the model file(s) you "
                f"trust, one per bot seat in seat order ({len(seats)})"
            )
        return players
    if len(opponents) != len(seats):
        saved = f" ({', '.join(cut(players[i]) for i in seats)})" if seats else ""
        raise SeatError(
            f"--opponents names {plural(len(opponents), 'player')}, the save has "
            f"{plural(len(seats), 'bot seat')}{saved}"
        )
    for seat, given in zip(seats, opponents, strict=True):
        saved = players[seat]
        if is_model(saved) != is_model(given) or (not is_model(saved) and saved != given):
            want = "a model file" if is_model(saved) else repr(cut(saved))
            raise SeatError(f"seat {seat} was {want} in the save, not {cut(given)!r}")
    given = iter(opponents)
    return [p if i in humans else next(given) for i, p in enumerate(players)]


def write_log(session: Session, path: str) -> None:
    data = {
        "format": LOG_FORMAT,
        "version": VERSION,
        "rules": session.game.rules.to_dict(),
        "players": session.log_names(),
        "events": session.log,
        "winner": session.game.state.winner,
    }
    write_beside(path, json.dumps(data, indent=1))


def replay(path: str, say: Callable[[str], None] = print, delay: float = 0.0) -> int | None:
    """Play a game log back through the engine, which checks every move again; a log
    that stops before the game is over (left, or cut short) is said to be one."""
    try:
        data = json.loads(read_text_capped(path, MAX_FILE_BYTES))
        if not isinstance(data, dict) or data.get("format") != LOG_FORMAT:
            raise ValueError("not a 5000 game log")
        if data.get("version", VERSION) != VERSION:
            raise ValueError(f"version {data['version']!r}: this play.py reads version {VERSION}")
        names, events = data["players"], data["events"]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValueError("players must be a list of names")
        if not isinstance(events, list) or not isinstance(data["rules"], dict):
            raise ValueError("events must be a list and rules an object")
        game = Game(len(names), check_target_bound(Rules(**data["rules"])))
    except FileNotFoundError:
        raise ValueError(f"no game log at {path}") from None
    except RecursionError:  # json.loads recurses once per bracket of a nested file
        raise ValueError(f"{path} is not a game log (nested too deeply)") from None
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path} is not a game log ({one_line(e)})") from None
    s = game.state
    for line in rules_lines(game.rules):  # the log's rules (Rules.to_dict), as play said them
        say(line)
    say(render_text(game, names))
    for number, event in enumerate(events, 1):
        turns = s.turns
        try:
            apply_event(game, event)
        except ValueError as e:
            why = one_line(e)
            raise ValueError(f"{path}: event {number} cannot be replayed ({why})") from None
        if "act" in event:
            say(decision_text(game.last_event, names))
        if s.turns > turns or game.over:
            say(f"  {event_text(game.last_event, names)}")
        time.sleep(delay)
    recorded = data.get("winner")
    if game.over:
        if recorded is not None and recorded != s.winner:
            raise ValueError(f"{path}: its moves make seat {s.winner} win, not seat {recorded!r}")
        say(board_text(game, names).rstrip("\n"))
        say(headline(game, names))
        return s.winner
    say(render_text(game, names).rstrip("\n"))
    cut_short = ngettext(
        "The log was cut short: it stops after {n} turn, before the end of the game, "
        "though it records a winner.",
        "The log was cut short: it stops after {n} turns, before the end of the game, "
        "though it records a winner.",
        s.turns,
    )
    left = ngettext(
        "The log stops after {n} turn, before the end of the game: the game was left, "
        "or the log was cut short.",
        "The log stops after {n} turns, before the end of the game: the game was left, "
        "or the log was cut short.",
        s.turns,
    )
    say(cut_short if recorded is not None else left)
    return None


def opening(session: Session) -> str:
    """The line that opens a new game: who plays against whom, and its seed."""
    players, humans = session.players, session.humans
    said = {
        "bots": ", ".join(p for i, p in enumerate(players) if i not in humans),
        "people": join_words([players[i] for i in sorted(humans)]),
        "seed": session.seed,
    }
    if not session.several:
        return _("5000: you against {bots} (seed {seed}). Type 'help' for commands.", **said)
    if not said["bots"]:
        return _("5000: {people} (pass and play, seed {seed}). Type 'help' for commands.", **said)
    return _(
        "5000: {people} (pass and play) against {bots} (seed {seed}). Type 'help' for commands.",
        **said,
    )


def play_table(session: Session) -> Session:
    """Play `session`'s game, then new games at the same table while its people want
    another (``wants_rematch``), until one leaves ('quit', the end of input, Ctrl-C);
    the last game's session (its log is the one written)."""
    try:
        session.play()
        while session.ended and wants_rematch(session.ask, session.several):
            session = session.rematch()
            if session.several:
                session.say(_("A new game at the same table (seed {seed}).", seed=session.seed))
            else:
                session.say(_("A new game against the same bots (seed {seed}).", seed=session.seed))
            session.play()
    except (Quit, KeyboardInterrupt):
        session.say(_("Left the game."))
    return session
