"""Play 5000 in the terminal against 1 to 7 bots.

    python play.py --opponents smart                 # you against smart
    python play.py --opponents optimal --hint        # with the optimal player's advice
    python play.py --opponents checkpoints/ppo-2p/model.zip turn-ev --seat 1
    python play.py --load mygame.json                # resume a saved game
    python play.py --replay game-log.json            # watch a finished game again

At each of your decisions type a choice number from the list, or:
  r 115     hold 1, 1 and 5, then roll the dice left      (faces, any order, spaces optional)
  b 115     hold 1, 1 and 5, then bank
  r / b     hold the best-scoring set, then roll / bank
  hint      the optimal player's choice and its win probability (2 players)
  save F    save the game to file F (resume with --load F)
  help      this list;  quit  leave (the game log is still written with --log)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from agents import make_policy
from envs.game import OVER, ROLL, Game
from envs.render import name_players, render_text
from envs.rules import BANK_BIT, ROLL_INFO, Rules, action_for, can_bank

HUMAN = "you"
COMMANDS = __doc__[__doc__.index("  r 115") :].rstrip()


class Quit(Exception):
    """The player left the game ('quit', end of input, Ctrl-C)."""


def choices(game: Game) -> list[tuple[int, str]]:
    """The legal actions with their descriptions, in a stable order."""
    s = game.state
    info = ROLL_INFO[s.roll]
    out = []
    for hold in info.holds(game.rules.hold):
        total = s.turn_total + hold.points
        left = (len(info.dice) - len(hold.dice)) or 5
        dice = " ".join(map(str, hold.dice))
        out.append(
            (
                hold.bits,
                f"hold {dice:<9} -> {total:>4}, roll {left} {'die' if left == 1 else 'dice'}",
            )
        )
        if can_bank(s.scores[s.current], total, game.rules.entry):
            out.append((hold.bits | BANK_BIT, f"hold {dice:<9} -> {total:>4}, bank"))
    return out


def parse_command(text: str, game: Game, menu: list[tuple[int, str]]) -> int | str:
    """An action for `text`, a command word ("hint", "help", "quit", "save F"), or
    raise ValueError with a message for the player."""
    words = text.strip().lower().split()
    if not words:
        raise ValueError("type a choice number, or 'help'")
    head = words[0]
    if head in ("help", "?", "h"):
        return "help"
    if head in ("quit", "exit", "q"):
        return "quit"
    if head == "hint":
        return "hint"
    if head == "save":
        if len(words) != 2:
            raise ValueError("usage: save FILE")
        return "save " + text.strip().split(maxsplit=1)[1]
    if head.isdigit() and len(words) == 1:
        number = int(head)
        if not 1 <= number <= len(menu):
            raise ValueError(f"there are choices 1 to {len(menu)}")
        return menu[number - 1][0]
    if head in ("r", "b", "roll", "bank"):
        bank = head in ("b", "bank")
        roll = game.state.roll
        faces = "".join(words[1:])
        if not faces:
            held = list(ROLL_INFO[roll].best.dice)
        elif all(c in "123456" for c in faces):
            held = [int(c) for c in faces]
        else:
            raise ValueError(f"dice are written as digits 1 to 6, like '{head} 115'")
        try:
            action = action_for(held, roll, bank)
        except ValueError:
            raise ValueError(
                f"the roll {' '.join(map(str, roll))} has no {' '.join(map(str, held))}"
            ) from None
        if action not in game.legal()[0]:
            if action & ~BANK_BIT not in {a & ~BANK_BIT for a in game.legal()[0]}:
                raise ValueError(
                    f"{' '.join(map(str, held))} cannot be held: every held die must score"
                )
            raise ValueError(_why_no_bank(game, held))
        return action
    raise ValueError(f"unknown command {text.strip()!r}; type 'help'")


def _why_no_bank(game: Game, held: list[int]) -> str:
    s = game.state
    total = s.turn_total + ROLL_INFO[tuple(sorted(held))].best.points
    if total % 100 == 50:
        return f"you can't bank {total}: a total ending in 50 can't be banked"
    return f"you can't bank {total}: you need {game.rules.entry} in one turn to enter"


class Session:
    """One game at the terminal; input and output are functions, for tests and replays."""

    def __init__(
        self,
        game: Game,
        players: list[str],
        human: int,
        seed: int,
        hint: bool = False,
        delay: float = 0.0,
        ask: Callable[[str], str] = input,
        say: Callable[[str], None] = print,
    ) -> None:
        self.game = game
        self.players = players  # spec per seat; HUMAN for the player
        self.human = human
        self.policies = {i: make_policy(p) for i, p in enumerate(players) if i != human}
        for policy in self.policies.values():
            if hasattr(policy, "check_game"):
                policy.check_game(game.n_players, game.rules)
        self.rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[1])  # bots
        self.seed = seed
        self.hint = hint
        self.delay = delay
        self.ask, self.say = ask, say
        self.log: list[dict] = []
        self._optimal = None

    def names(self) -> list[str]:
        return [HUMAN if i == self.human else f"{p} (seat {i})" for i, p in enumerate(self.players)]

    def play(self) -> int | None:
        game, s = self.game, self.game.state
        self.say(render_text(game, self.names()))
        while s.phase != OVER:
            if s.phase == ROLL:
                who, before = s.current, s.turns
                info = game.roll()
                self.log.append({"roll": list(info.dice), "player": who})
                if s.turns > before:
                    who_rolls = "You roll" if who == self.human else f"{self.names()[who]} rolls"
                    self.say(f"{who_rolls} {_dice(info.dice)}: bust, the turn ends.")
                    self.say(render_text(game, self.names()))
                continue
            if s.current == self.human:
                action = self.human_turn()
                self.say(f"You {_describe(game, action, you=True)}.")
            else:
                action = self.policies[s.current].act(game, self.rng)
                self.say(
                    f"{self.names()[s.current]} rolls {_dice(s.roll)}: {_describe(game, action)}"
                )
                if self.delay:
                    time.sleep(self.delay)
            self.act(action)
        self.say(f"Game over: {self.names()[s.winner]} won.")
        return s.winner

    def act(self, action: int) -> None:
        s = self.game.state
        who, before = s.current, s.turns
        self.log.append({"act": action, "player": who})
        self.game.act(action)
        if s.turns > before or s.phase == OVER:
            self.say(f"  {name_players(s.last_event, self.names())}")
            self.say(render_text(self.game, self.names()))

    def human_turn(self) -> int:
        game = self.game
        s = game.state
        menu = choices(game)
        held = "  ".join(_dice(h) for h in s.held) or "nothing yet"
        self.say(
            f"Your roll: {_dice(s.roll)}   (held this turn: {held}; "
            f"turn total {s.turn_total}, score {s.scores[s.current]})"
        )
        for i, (_, text) in enumerate(menu, 1):
            self.say(f"  {i:>2}) {text}")
        if self.hint:
            self.say(self.hint_text())
        while True:
            try:
                text = self.ask("> ")
            except EOFError:
                raise Quit from None
            try:
                choice = parse_command(text, game, menu)
            except ValueError as e:
                self.say(f"  {e}")
                continue
            if choice == "help":
                self.say(COMMANDS)
            elif choice == "quit":
                raise Quit
            elif choice == "hint":
                self.say(self.hint_text())
            elif isinstance(choice, str) and choice.startswith("save "):
                path = str(Path(choice[5:]).expanduser())
                try:
                    save(self, path)
                    self.say(f"  saved to {path}; resume with: python play.py --load {path}")
                except (OSError, ValueError) as e:
                    self.say(f"  could not save to {path}: {getattr(e, 'strerror', None) or e}")
            else:
                return choice

    def hint_text(self) -> str:
        if self.game.n_players != 2:
            return "  hint: the optimal player is solved for 2 players only"
        if self._optimal is None:
            from agents.optimal import OptimalBot

            self._optimal = OptimalBot()
        values = self._optimal.action_values(self.game)
        best = max(values, key=values.__getitem__)
        return (
            f"  hint: {_describe(self.game, best)} "
            f"(win probability {values[best]:.1%} with optimal play)"
        )


def _dice(dice) -> str:
    return "[" + " ".join(map(str, dice)) + "]"


def _describe(game: Game, action: int, you: bool = False) -> str:
    s = game.state
    held = [d for i, d in enumerate(s.roll) if action >> i & 1]
    if you:
        return f"hold {_dice(held)} and {'bank' if action & BANK_BIT else 'roll on'}"
    return f"holds {_dice(held)} and {'banks' if action & BANK_BIT else 'rolls on'}"


# ------------------------------------------------------------- save and replay
def save(session: Session, path: str) -> None:
    data = {
        "format": "fivethousand-rl saved game",
        "version": 1,
        "game": json.loads(session.game.to_json()),
        "dice": session.game.dice_state(),
        "players": session.players,
        "human": session.human,
        "seed": session.seed,
        "bot_rng": session.rng.bit_generator.state,
        "log": session.log,
    }
    Path(path).write_text(json.dumps(data))


def load(path: str, hint: bool, delay: float, ask, say) -> Session:
    try:
        data = json.loads(Path(path).read_text())
        if not isinstance(data, dict) or data.get("format") != "fivethousand-rl saved game":
            raise ValueError("not a saved 5000 game")
        game = Game.from_json(json.dumps(data["game"]))
        game.set_dice_state(data["dice"])
        players, human = list(data["players"]), int(data["human"])
        if len(players) != game.n_players or not 0 <= human < game.n_players:
            raise ValueError("its players do not match its game")
        session = Session(game, players, human, int(data["seed"]), hint, delay, ask, say)
        session.rng.bit_generator.state = data["bot_rng"]
        session.log = list(data["log"])
    except FileNotFoundError:
        raise ValueError(f"no saved game at {path}") from None
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
        raise ValueError(f"{path} is not a saved game we can resume ({e})") from None
    return session


def write_log(session: Session, path: str) -> None:
    data = {
        "format": "fivethousand-rl game log",
        "version": 1,
        "rules": session.game.rules.to_dict(),
        "players": session.names(),
        "events": session.log,
        "winner": session.game.state.winner,
    }
    Path(path).write_text(json.dumps(data, indent=1))


def replay(path: str, say: Callable[[str], None] = print, delay: float = 0.0) -> int | None:
    """Play a game log back through the engine, which checks every move again."""
    try:
        data = json.loads(Path(path).read_text())
        if not isinstance(data, dict) or data.get("format") != "fivethousand-rl game log":
            raise ValueError("not a 5000 game log")
        names, events = list(data["players"]), list(data["events"])
        game = Game(len(names), Rules(**data["rules"]))
    except FileNotFoundError:
        raise ValueError(f"no game log at {path}") from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path} is not a game log ({e})") from None
    s = game.state
    say(render_text(game, names))
    for number, event in enumerate(events, 1):
        try:
            if isinstance(event, dict) and "roll" in event:
                before = s.turns
                game.roll(event["roll"])
                if s.turns > before:
                    say(f"{names[event['player']]} rolls {_dice(event['roll'])}: bust.")
            elif isinstance(event, dict) and "act" in event:
                line = f"{names[s.current]} rolls {_dice(s.roll)}: {_describe(game, event['act'])}"
                before = s.turns
                game.act(event["act"])
                say(line)
                if s.turns > before or s.phase == OVER:
                    say(f"  {name_players(s.last_event, names)}")
            else:
                raise ValueError("an event is a roll or an act")
        except (ValueError, TypeError, KeyError, IndexError) as e:
            raise ValueError(f"{path}: event {number} cannot be replayed ({e})") from None
        if delay:
            time.sleep(delay)
    say(render_text(game, names))
    if s.phase == OVER:
        say(f"Game over: {names[s.winner]} won.")
    return s.winner


# ------------------------------------------------------------------- main
def main(argv: list[str] | None = None, ask=input, say=print) -> int:
    p = argparse.ArgumentParser(
        description="Play 5000 against bots in the terminal.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Commands during the game:\n" + COMMANDS,
    )
    p.add_argument(
        "--opponents",
        nargs="+",
        default=["smart"],
        help="1 to 7 bots: names, checkpoints (.zip) or exported bots (.onnx)",
    )
    p.add_argument("--seat", type=int, default=0, help="your seat (0 plays first)")
    p.add_argument("--seed", type=int, default=None, help="seed of the dice and bots")
    p.add_argument("--hold", choices=["free", "all"], default="free", help="hold rule")
    p.add_argument("--hint", action="store_true", help="show optimal advice at each decision")
    p.add_argument("--delay", type=float, default=0.0, help="pause between bot moves (s)")
    p.add_argument("--load", metavar="FILE", help="resume a saved game")
    p.add_argument("--log", metavar="FILE", help="write the game log here at the end")
    p.add_argument("--replay", metavar="FILE", help="replay a game log and exit")
    args = p.parse_args(argv)
    try:
        if args.delay < 0:
            raise ValueError("--delay must be >= 0")
        if args.log:
            log_dir = Path(args.log).expanduser().resolve().parent
            if Path(args.log).is_dir() or not log_dir.is_dir():
                raise ValueError(f"cannot write the game log to {args.log}")
        if args.replay:
            replay(args.replay, say, args.delay)
            return 0
        if args.load:
            session = load(args.load, args.hint, args.delay, ask, say)
        else:
            if not 1 <= len(args.opponents) <= 7:
                raise ValueError("give 1 to 7 opponents")
            n = len(args.opponents) + 1
            if not 0 <= args.seat < n:
                raise ValueError(f"--seat must be 0..{n - 1}")
            seed = (
                args.seed
                if args.seed is not None
                else int(np.random.SeedSequence().entropy % 2**32)
            )
            players = list(args.opponents)
            players.insert(args.seat, HUMAN)
            dice = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[0])
            game = Game(n, Rules(hold=args.hold), seed=dice)
            session = Session(game, players, args.seat, seed, args.hint, args.delay, ask, say)
            against = ", ".join(args.opponents)
            say(f"5000: you against {against} (seed {seed}). Type 'help' for commands.")
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        session.play()
    except (Quit, KeyboardInterrupt):
        say("Left the game.")
    if args.log:
        try:
            write_log(session, str(Path(args.log).expanduser()))
        except OSError as e:
            print(
                f"error: could not write the game log to {args.log}: {e.strerror}", file=sys.stderr
            )
            return 1
        say(f"game log written to {args.log} (replay: python play.py --replay {args.log})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
