"""The rules as a player reads them, in the language in use (``fivethousand_rl.envs.i18n``): every
scoring combination (R2), the turn (R3-R8), banking (R9) and the game's own switches
(V1-V5), the house rules in force named. The terminal's ``rules`` prints it; the texts
are translated in ``envs/locale`` like every other text a player reads."""

from __future__ import annotations

from fivethousand_rl.envs.i18n import _
from fivethousand_rl.envs.rules import DEFAULT_RULES, Rules


def scoring_lines() -> list[str]:
    """What the dice set aside from one roll score (R1, R2)."""
    return [
        _("A 1 scores 100 and a 5 scores 50."),
        _("Three of a kind scores the face times 100 (three 4s: 400), but three 1s score 1100."),
        _("Four of a kind scores twice that (four 5s: 1000, four 1s: 2200)."),
        _("Five of a kind scores four times that (five 2s: 800, five 1s: 4400)."),
        _("A straight, 1-2-3-4-5 or 2-3-4-5-6, scores 1500."),
        _("Dice combine only with dice of the same roll: three 1s over two rolls are 300."),
        _("A 2, 3, 4 or 6 scores only in three or more of a kind or a straight."),
    ]


def turn_lines(rules: Rules) -> list[str]:
    """A turn under `rules` (R3-R8, V1, V4, R5's hold rule)."""
    return [
        _(
            "On your turn you roll the five dice, set aside dice that score, then either bank "
            "the turn's points or roll the dice you did not set aside."
        ),
        _("A roll in which nothing scores is a bust: the turn's points are lost."),
        _("Set aside all five dice and you may roll all five again."),
        _("You may set aside any dice that score and roll the others again.")
        if rules.hold == "free"
        else _("You must set aside every die that scores in the roll."),
        _(
            "To enter the game, your first bank needs at least {entry} points in one turn.",
            entry=rules.entry,
        ),
        _("You may not bank a turn total that ends in 50: roll again.")
        if rules.fifty_rule
        else _("A turn total that ends in 50 may be banked."),
    ]


def banking_lines(rules: Rules) -> list[str]:
    """What a bank does under `rules` (R9, V2, V3, V5)."""
    return [
        _("The first to reach exactly {target} wins.", target=rules.target),
        _("Landing on another player's score sends them back to 0.")
        if rules.bump
        else _("Landing on another player's score leaves it as it is."),
        _(
            "Going past {target} gives the turn's points to the opponent with the lowest "
            "score among those who have entered, unless that takes them past {target}: "
            "then the points are lost.",
            target=rules.target,
        )
        if rules.overshoot == "gift"
        else _("Going past {target} loses the turn's points.", target=rules.target),
    ]


def rule_words(rules: Rules) -> dict[str, str]:
    """Each switch of `rules` in a few words, by Rules field: "exactly 5000 wins", "500 to
    enter", "bumps", "overshoot gift", "the 50 rule", "hold free"."""
    return {
        "target": _("exactly {target} wins", target=rules.target),
        "entry": _("{entry} to enter", entry=rules.entry),
        "bump": _("bumps") if rules.bump else _("no bumps"),
        "overshoot": _("overshoot gift") if rules.overshoot == "gift" else _("overshoot lost"),
        "fifty_rule": _("the 50 rule") if rules.fifty_rule else _("no 50 rule"),
        "hold": _("hold free") if rules.hold == "free" else _("hold all"),
    }


def describe_rules(rules: Rules) -> str:
    """Every switch of `rules` in words: "exactly 1000 wins, 500 to enter, no bumps, ..."."""
    return _(", ").join(rule_words(rules).values())


def house_rule_names(rules: Rules) -> list[str]:
    """The switches of `rules` that differ from the standard rules, in words (none: [])."""
    words = rule_words(rules)
    return [words[name] for name in words if getattr(rules, name) != getattr(DEFAULT_RULES, name)]


def rules_sections(rules: Rules | None = None) -> list[tuple[str, list[str]]]:
    """The rules under `rules` (default: the standard rules) as titled sections of lines,
    in the language in use."""
    rules = rules or DEFAULT_RULES
    house = house_rule_names(rules)
    in_force = (
        [_("House rules in force: {rules}.", rules=", ".join(house))]
        if house
        else [_("The standard rules, with no house rules.")]
    )
    return [
        (_("Scoring"), scoring_lines()),
        (_("A turn"), turn_lines(rules)),
        (_("Banking and winning"), banking_lines(rules)),
        (_("This game"), in_force),
    ]


def rules_text(rules: Rules | None = None) -> str:
    """``rules_sections`` as plain text: a title, then a line per rule."""
    sections = rules_sections(rules)
    return "\n\n".join("\n".join([f"{t}:", *(f"- {row}" for row in rows)]) for t, rows in sections)
