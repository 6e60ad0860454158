"""The rule flags every command line takes, made in one place: the hold rule (R5) and
the house-rule switches of RULES.md V1-V5, with the seeds' rules as defaults.

    --hold free|all  --target N  --entry N  --bump/--no-bump
    --overshoot gift|lost  --fifty-rule/--no-fifty-rule

``add_rule_flags(parser)`` adds them (as one group of the --help text) and
``rules_from_args(args)`` makes the ``envs.rules.Rules`` they name, refusing bad values
in one line (``Rules``'s own checks).
"""

from __future__ import annotations

import argparse
import dataclasses

from envs.rules import HOLD_VARIANTS, OVERSHOOT_VARIANTS, Rules

DEFAULTS = {f.name: f.default for f in dataclasses.fields(Rules)}
FLAGS = {  # Rules field -> its flag
    "hold": "--hold",
    "target": "--target",
    "entry": "--entry",
    "bump": "--bump",
    "overshoot": "--overshoot",
    "fifty_rule": "--fifty-rule",
}


def add_rule_flags(parser: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    """Add the rule flags to `parser` (all but the Rules fields named in `skip`, for a
    program that fixes some rule itself)."""
    group = parser.add_argument_group("rules (RULES.md R5, V1-V5; default: the seeds' rules)")
    helps = {
        "hold": dict(choices=HOLD_VARIANTS, help="which scoring dice may be held (R5)"),
        "target": dict(type=int, metavar="N", help="the exact score that wins (V5)"),
        "entry": dict(
            type=int, metavar="N", help="turn total needed to bank a first time, 50..target (V1)"
        ),
        "bump": dict(
            action=argparse.BooleanOptionalAction,
            help="banking onto another player's score sends it to 0 (V2)",
        ),
        "overshoot": dict(
            choices=OVERSHOOT_VARIANTS,
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


def rules_from_args(args: argparse.Namespace) -> Rules:
    """The rules the parsed flags name (fields a program skipped keep their defaults);
    a one-line ValueError for a bad value."""
    return Rules(**{name: getattr(args, name, DEFAULTS[name]) for name in FLAGS})


def rule_flags(rules: Rules) -> list[str]:
    """The flags that name `rules` on a command line (only those that differ from the
    defaults): what a program prints in a command to run again."""
    out = []
    for name, flag in FLAGS.items():
        value = getattr(rules, name)
        if value == DEFAULTS[name]:
            continue
        if isinstance(value, bool):
            out.append(flag if value else f"--no-{flag[2:]}")
        else:
            out += [flag, str(value)]
    return out
