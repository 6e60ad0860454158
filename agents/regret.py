"""Where a 2-player policy gives away its chances: exact regret of every decision.

    python -m agents.regret checkpoints/ppo-2p/model.zip --against smart --games 2000
    python -m fivethousand_rl.agents.regret smart --against turn-ev --no-bump --overshoot lost
                                        # under house rules (the rule flags, RULES.md V1-V5)

The exact 2-player solution (``fivethousand_rl.envs.solver``) gives every legal action's probability
of winning. A decision's *regret* is what the chosen action gives away against the best
one (0 for an optimal choice). Over a game the win probability moves only by chance
(on average nothing) and by regrets, so a player's expected result is

    P(win) = V(start) - E[its regrets per game] + E[the opponent's regrets per game]

where V(start) is the optimal player's chance from the first seat (or second). That
makes the regrets both a diagnosis (which decisions cost what) and an estimate of the
win rate with far less noise than counting wins. Seats alternate between games.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from tqdm import tqdm

from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.base import Policy, atomic_write, check_output_path
from fivethousand_rl.agents.rule_flags import add_rule_flags, rules_from_args
from fivethousand_rl.agents.tournament import play_game
from fivethousand_rl.envs.game import Game
from fivethousand_rl.envs.render import count_dice
from fivethousand_rl.envs.rules import BANK_BIT, Rules


@dataclass
class RegretReport:
    """Regrets of `player` and `opponent` over `games` games (seats alternating)."""

    player: str
    opponent: str
    games: int
    wins: int = 0
    start_value: float = 0.0  # optimal win probability of the player's seats, summed
    regret: dict[str, float] = field(default_factory=lambda: {"player": 0.0, "opponent": 0.0})
    decisions: dict[str, int] = field(default_factory=lambda: {"player": 0, "opponent": 0})
    mistakes: dict[str, int] = field(default_factory=lambda: {"player": 0, "opponent": 0})
    # The player's regret by kind of mistake and by situation: key -> [regret, count].
    by_kind: dict[str, list] = field(default_factory=lambda: defaultdict(lambda: [0.0, 0]))
    by_move: dict[str, list] = field(default_factory=lambda: defaultdict(lambda: [0.0, 0]))

    @property
    def win_rate(self) -> float:
        return self.wins / self.games

    @property
    def estimated_win_rate(self) -> float:
        """V(start) - own regrets + opponent's regrets, per game (see the module doc)."""
        return (self.start_value - self.regret["player"] + self.regret["opponent"]) / self.games

    def to_dict(self, top: int = 15) -> dict:
        def rows(table: dict) -> list[dict]:
            ranked = sorted(table.items(), key=lambda kv: -kv[1][0])[:top]
            return [
                {"situation": k, "regret_per_game": r / self.games, "per_game": n / self.games}
                for k, (r, n) in ranked
            ]

        return {
            "player": self.player,
            "opponent": self.opponent,
            "games": self.games,
            "win_rate": self.win_rate,
            "estimated_win_rate": self.estimated_win_rate,
            "regret_per_game": {k: v / self.games for k, v in self.regret.items()},
            "decisions_per_game": {k: v / self.games for k, v in self.decisions.items()},
            "mistakes_per_game": {k: v / self.games for k, v in self.mistakes.items()},
            "player_regret_by_kind": rows(self.by_kind),
            "player_costliest_moves": rows(self.by_move),
        }


def _describe(game: Game, action: int) -> str:
    """'bank 200' or 'roll 4 dice on 100' for an action of the roll on the table."""
    move = game.move(action)
    if move.banks:
        return f"bank {move.turn_total}"
    return f"roll {count_dice(move.dice_left)} on {move.turn_total}"


def _kind(chosen: int, best: int) -> str:
    if chosen & BANK_BIT and not best & BANK_BIT:
        return "banked, should roll on"
    if best & BANK_BIT and not chosen & BANK_BIT:
        return "rolled on, should bank"
    return "held the wrong dice"


class _Audited(Policy):
    """Plays as `policy` and charges the win probability each of its decisions gives
    away (against the solver's best action) to `who` in `report`."""

    def __init__(self, policy: Policy, who: str, report: RegretReport, oracle) -> None:
        self.policy, self.who, self.report, self.oracle = policy, who, report, oracle
        self.name = policy.name

    def act(self, game: Game, rng: np.random.Generator) -> int:
        action = self.policy.act(game, rng)
        values = self.oracle.action_values(game)
        best = max(values, key=values.__getitem__)
        regret = values[best] - values[action]
        report, who = self.report, self.who
        report.decisions[who] += 1
        if regret > 1e-12:
            report.regret[who] += regret
            report.mistakes[who] += 1
            if who == "player":
                move = f"{_describe(game, action)} (best: {_describe(game, best)})"
                for table, key in ((report.by_kind, _kind(action, best)), (report.by_move, move)):
                    table[key][0] += regret
                    table[key][1] += 1
        return action


def measure(
    player: str | Policy,
    opponent: str | Policy,
    games: int,
    seed: int = 0,
    rules: Rules | None = None,
    max_turns: int = 1000,
    progress: bool = False,
) -> RegretReport:
    """Play `games` 2-player games (the player first in even games) and add up regrets."""
    from fivethousand_rl.agents.optimal import OptimalBot

    rules = rules or Rules()
    me, other = make_policy(player), make_policy(opponent)
    for policy in (me, other):
        policy.check_game(2, rules)  # a trained model: was it made for this game?
    oracle = OptimalBot(show_progress=progress)
    first = oracle.solution(rules).first_player_win_probability
    report = RegretReport(me.name, other.name, games)
    audited = [_Audited(me, "player", report, oracle), _Audited(other, "opponent", report, oracle)]
    for g in tqdm(range(games), desc="regret", unit="game", disable=not progress):
        my_seat = g % 2
        report.start_value += first if my_seat == 0 else 1.0 - first
        seats = audited if my_seat == 0 else audited[::-1]
        winner, _ = play_game(seats, rules, [seed, 20_011, g], max_turns)
        report.wins += winner == my_seat
    return report


def make_parser(prog: str = "python -m fivethousand_rl.agents.regret") -> argparse.ArgumentParser:
    """The command line of ``python -m agents.regret`` (`prog`: the command as typed, for
    its usage)."""
    parser = argparse.ArgumentParser(
        prog=prog, description="Exact regret of a 2-player policy's decisions, against the solver."
    )
    parser.add_argument("player", help="bot name or model file (as in evaluate.py)")
    parser.add_argument("--against", default="smart", help="the opponent (default: smart)")
    parser.add_argument("--games", type=int, default=1000, help="games, seats alternating")
    parser.add_argument("--seed", type=int, default=0, help="seed of the games, >= 0")
    parser.add_argument("--top", type=int, default=15, help="rows of the costliest moves")
    parser.add_argument("--json", metavar="PATH", help="also write the report as JSON")
    add_rule_flags(parser)
    return parser


def main(
    argv: list[str] | None = None, prog: str = "python -m fivethousand_rl.agents.regret"
) -> int:
    """The command line of ``python -m agents.regret`` (`prog`: the command as typed, for
    its usage); the exit code."""
    args = make_parser(prog).parse_args(argv)
    try:
        limits = {"games": (1, "at least 1"), "seed": (0, "0 or more"), "top": (0, "0 or more")}
        for flag, (least, words) in limits.items():
            if getattr(args, flag) < least:
                raise ValueError(f"--{flag} must be {words}, got {getattr(args, flag)}")
        if args.json:
            check_output_path(args.json, "--json")  # before the games, not after
        rules = rules_from_args(args)
        report = measure(args.player, args.against, args.games, args.seed, rules, progress=True)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    data = report.to_dict(args.top)
    print(
        f"{data['player']} vs {data['opponent']}, {args.games} games: won "
        f"{data['win_rate']:.1%}; estimated from the regrets {data['estimated_win_rate']:.1%}"
    )
    for who in ("player", "opponent"):
        print(
            f"  {data[who]:<20} gives away {data['regret_per_game'][who]:.4f} win probability "
            f"per game in {data['mistakes_per_game'][who]:.2f} of "
            f"{data['decisions_per_game'][who]:.1f} decisions"
        )
    tables = {"by kind": "player_regret_by_kind", "costliest": "player_costliest_moves"}
    for title, key in tables.items():
        print(f"{data['player']}'s regret {title} (per game: regret, count):")
        for row in data[key]:
            print(f"  {row['regret_per_game']:.4f}  {row['per_game']:6.2f}  {row['situation']}")
    if args.json:
        try:
            atomic_write(args.json, json.dumps(data, indent=2))
        except OSError as e:  # checked before, but the disk may fill or the folder go
            print(f"error: could not write {args.json}: {e.strerror or e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
