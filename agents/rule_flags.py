"""The rule flags every command line takes, made in one place: the hold rule (R5) and
the house-rule switches of RULES.md V1-V5, with the seeds' rules as defaults.

    --hold free|all  --target N  --entry N  --bump/--no-bump
    --overshoot gift|lost  --fifty-rule/--no-fifty-rule

``add_rule_flags(parser)`` adds them (as one group of the --help text) and
``rules_from_args(args)`` makes the ``envs.rules.Rules`` they name, refusing bad values
in one line (``Rules``'s own checks, the choices too: every program refuses a bad rule
value in the same words). ``rule_flags(rules)`` writes them back, for the
commands a program prints or records; ``describe_rules`` says them in words. The
training scripts make the same flags from their config's fields of the same names
(tyro: agents/training/config.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from typing import NoReturn

from fivethousand_rl.envs import rules_text
from fivethousand_rl.envs.rules import HOLD_VARIANTS, OVERSHOOT_VARIANTS, Rules, check_target_bound

DEFAULTS = {f.name: f.default for f in dataclasses.fields(Rules)}
FLAGS = {  # Rules field -> its flag
    "hold": "--hold",
    "target": "--target",
    "entry": "--entry",
    "bump": "--bump",
    "overshoot": "--overshoot",
    "fifty_rule": "--fifty-rule",
}


class OneLineParser(argparse.ArgumentParser):
    """argparse, its errors on one line naming the flag and the command as typed for its
    help (no usage block), exit 2: like every other refusal here (issue 54 item 7)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def non_negative_number(text: str) -> float:
    """An argparse type: a finite number, 0 or more (nan, inf, 1e309, -1 refused)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number, 0 or more, not {text!r}")
    return value


def positive_whole_number(text: str) -> int:
    """An argparse type: a whole number, 1 or more."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number, 1 or more, not {text!r}")
    return value


def add_rule_flags(parser: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    """Add the rule flags to `parser` (all but the Rules fields named in `skip`, for a
    program that fixes some rule itself)."""
    group = parser.add_argument_group("rules (RULES.md R5, V1-V5; default: the seeds' rules)")
    helps = {
        "hold": dict(metavar=_metavar(HOLD_VARIANTS), help="which scoring dice may be held (R5)"),
        "target": dict(type=int, metavar="N", help="the exact score that wins (V5)"),
        "entry": dict(
            type=int, metavar="N", help="turn total needed to bank a first time, 50..target (V1)"
        ),
        "bump": dict(
            action=argparse.BooleanOptionalAction,
            help="banking onto another player's score sends it to 0 (V2)",
        ),
        "overshoot": dict(
            metavar=_metavar(OVERSHOOT_VARIANTS),
            help="a total past the target goes to the lowest entered player, or is lost (V3)",
        ),
        "fifty_rule": dict(
            action=argparse.BooleanOptionalAction,
            help="no banking a total that ends in 50 (V4)",
        ),
    }
    for name, flag in FLAGS.items():
        if name in skip:
            continue
        spec = dict(helps[name])
        text = f"{spec.pop('help')} (default: {DEFAULTS[name]})"
        group.add_argument(flag, default=DEFAULTS[name], help=text, **spec)


def _metavar(values: tuple[str, ...]) -> str:
    """A flag's choices as --help shows them ("{gift,lost}"); Rules checks the value."""
    return "{" + ",".join(values) + "}"


def unset_rule_flags() -> argparse.Namespace:
    """A namespace to parse into (``parser.parse_args(argv, namespace=...)``): argparse
    sets no default on an attribute that is already there, so the rule flags not given
    stay None, and ``given_rule_flags`` can tell which were (a program that must refuse
    them, as play.py with --load does; ``rules_from_args`` reads None as the default)."""
    return argparse.Namespace(**dict.fromkeys(FLAGS))


def given_rule_flags(args: argparse.Namespace) -> list[str]:
    """The rule flags given on a command line parsed into ``unset_rule_flags()``, as
    typed ("--no-bump" for bump=False)."""
    given = {name: value for name in FLAGS if (value := getattr(args, name, None)) is not None}
    return [_flag(name, value) for name, value in given.items()]


def _flag(name: str, value: object) -> str:
    """The flag that sets the Rules field `name` (a switch's --no- form when off)."""
    return f"--no-{FLAGS[name][2:]}" if value is False else FLAGS[name]


def rules_from_args(args: argparse.Namespace) -> Rules:
    """The rules the parsed flags name (fields a program skipped, or flags left unset,
    keep their defaults); a one-line ValueError for a bad value, or a target past
    ``fivethousand_rl.envs.rules.MAX_TARGET`` (where the exact solver would not fit in memory)."""
    values = {name: getattr(args, name, None) for name in FLAGS}
    return check_target_bound(
        Rules(**{n: DEFAULTS[n] if v is None else v for n, v in values.items()})
    )


def rule_flags(rules: Rules) -> list[str]:
    """The flags that name `rules` on a command line (only those that differ from the
    defaults): what a program prints in a command to run again."""
    out = []
    for name, flag in FLAGS.items():
        value = getattr(rules, name)
        if value == DEFAULTS[name]:
            continue
        if isinstance(value, bool):
            out.append(_flag(name, value))
        else:
            out += [flag, str(value)]
    return out


def describe_rules(rules: Rules) -> str:
    """Every rule of the game in words, the switches that are on or off, e.g.
    "exactly 1000 wins, 500 to enter, no bumps, overshoot lost, the 50 rule, hold free"
    (in the language in use: ``fivethousand_rl.envs.rules_text``)."""
    return rules_text.describe_rules(rules)


def house_rules(rules: Rules) -> list[str]:
    """The rules of `rules` that differ from the seeds' rules, in words (none: [])."""
    return rules_text.house_rule_names(rules)
