"""Figures in the docs come from their sources (issue 41 item 4): every win rate that
README.md, a page of docs/ or checkpoints/README.md quotes for a shipped agent is one of
its card's figures, the win rates of its evaluation files
(``checkpoints/NAME/evaluation*.json``, which the card prints).

Quotes are found two ways:

- table rows whose first cell names a shipped agent (an empty first cell goes on with
  the agent above): each percentage in the row must be a card figure of that agent,
  against the opponent that the column's header names if it names one; columns of
  intervals are read with the win rate beside them;
- prose: in each sentence, the first percentage after a shipped agent's name (or, for a
  list of names followed by as many percentages, each in turn) is its win rate.

Measurements of their own (a page that keeps the history, a report that plays its own
games with the command it names) are listed in ``OTHER_MEASUREMENTS`` with the reason;
an entry that no longer matches anything fails, so the list stays true.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest

from fivethousand_rl.agents.shipped import SHIPPED

ROOT = Path(__file__).resolve().parent.parent
CHECKPOINTS = ROOT / "checkpoints"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), CHECKPOINTS / "README.md"]

# Quotes that are not the card's figure on purpose, by page and a piece of the table's
# header or of the sentence (None: the whole page), with the reason.
OTHER_MEASUREMENTS: dict[tuple[str, str | None], str] = {
    ("docs/history.md", None): "the history keeps each agent's figures as measured then",
    ("docs/side_by_side.md", None): (
        "benchmarks/side_by_side.py plays its own 20,000 games per agent, one game at a "
        "time (its command is on docs/exact.md)"
    ),
    ("docs/exploitability.md", None): (
        "the exploitability report's own 2,000 games against optimal and its estimates "
        "from regrets (python -m fivethousand_rl.agents.best_response --report)"
    ),
    ("docs/table_3p.md", None): "the 3-player table report's own 20,000 games per agent",
    ("README.md", "| agent | exploitability |"): (
        "the exploitability report's estimates from regrets (docs/exploitability.md)"
    ),
    ("README.md", "| agent at (smart, turn-ev) |"): "docs/table_3p.md's own games",
    ("docs/exact.md", "of the 2,000 games and its regrets predict"): (
        "the regret command's own 2,000 games against smart"
    ),
}

NAME = re.compile(
    r"(?<![\w/.-])(" + "|".join(map(re.escape, sorted(SHIPPED, key=len, reverse=True))) + r")"
    r"(?![\w-])"
)
PERCENT = re.compile(r"(?<![\d.])(\d{1,3}\.\d+) ?%")
BOTS = ("optimal", "smart", "turn-ev", "threshold:350", "random")


# ------------------------------------------------------------------ the cards' figures
@cache
def card_figures(name: str) -> tuple[tuple[str | None, float, float, float], ...]:
    """`name`'s win rates in its evaluation files: (opponent, or None at a table or over
    all its games, rate, interval low, interval high)."""
    figures = []
    for path in sorted((CHECKPOINTS / name).glob("evaluation*.json")):
        evaluation = json.loads(path.read_text())
        [line] = [a for a in evaluation["agents"] if a["agent"] == name]
        figures.append((None, line["win_rate"], line["ci95_low"], line["ci95_high"]))
        for opponent, pair in evaluation.get("pairwise", {}).get(name, {}).items():
            figures.append((opponent, pair["win_rate"], *pair["ci95"]))
    return tuple(figures)


def shown(x: float, like: str) -> str:
    """`x` (a fraction) as a percentage with as many decimals as `like` has."""
    return f"{100 * x:.{len(like.partition('.')[2])}f}"


def is_card_figure(name: str, rate: str, opponent: str | None = None) -> bool:
    return any(
        shown(x, rate) == rate and (opponent is None or opponent == against)
        for against, x, _, _ in card_figures(name)
    )


# ------------------------------------------------------------------ the docs' quotes
def without_code(text: str) -> str:
    """`text` with its fenced code blocks blanked (their lines kept, for line numbers)."""
    return re.sub(r"```.*?```", lambda m: "\n" * m.group().count("\n"), text, flags=re.S)


def table_quotes(text: str) -> list[tuple[str, str, str, str | None]]:
    """(header, agent, rate, opponent the column names or None) of each cell of a
    shipped agent's row that holds a percentage, interval columns left out."""
    quotes, header, agent = [], None, None
    for line in without_code(text).splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if header is None:
            header, agent = line, None
            titles = cells
            continue
        if set(line) <= set("|-: "):
            continue
        named = NAME.search(cells[0])
        agent = named.group(1) if named else (agent if not cells[0] else None)
        if agent is None:
            continue
        for title, cell in zip(titles, cells, strict=False):
            rate = PERCENT.search(cell)  # the first: "45.3% (44.6% - 46.0%)" is one figure
            if rate is None or "interval" in title:
                continue
            opponents = [bot for bot in BOTS if re.search(rf"`?\b{re.escape(bot)}\b", title)]
            opponent = opponents[0] if len(opponents) == 1 else None
            quotes.append((header, agent, rate.group(1), opponent))
    return quotes


def prose_quotes(text: str) -> list[tuple[str, str, str]]:
    """(sentence, agent, rate) for each shipped agent's name followed by a percentage
    in the sentence: the first one after it, or for a list of k names followed by k
    percentages, the k-th."""
    quotes = []
    for paragraph in re.split(r"\n\s*\n", without_code(text)):
        if paragraph.lstrip().startswith("|"):
            continue
        flat = " ".join(paragraph.split())
        for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z`(\[*])", flat):
            tokens = sorted(
                [(m.start(), "name", m.group(1)) for m in NAME.finditer(sentence)]
                + [(m.start(), "rate", m.group(1)) for m in PERCENT.finditer(sentence)]
            )
            i = 0
            while i < len(tokens):
                names = []
                while i < len(tokens) and tokens[i][1] == "name":
                    names.append(tokens[i][2])
                    i += 1
                rates = []
                while i < len(tokens) and tokens[i][1] == "rate":
                    rates.append(tokens[i][2])
                    i += 1
                if names and rates:
                    same = len(names) == len(rates)
                    paired = zip(names, rates, strict=True) if same else [(names[-1], rates[0])]
                    quotes += [(sentence, name, rate) for name, rate in paired]
    return quotes


def excused(page: str, where: str) -> str | None:
    """The reason `where` (a table's header or a sentence) of `page` is another
    measurement, or None."""
    for (listed, piece), reason in OTHER_MEASUREMENTS.items():
        if listed == page and (piece is None or piece in where):
            return reason
    return None


def stale_quotes(page: str, text: str) -> list[str]:
    """The quotes of `text` (the page `page`) that are not their agent's card figures."""
    bad = []
    for header, agent, rate, opponent in table_quotes(text):
        if not excused(page, header) and not is_card_figure(agent, rate, opponent):
            against = f" against {opponent}" if opponent else ""
            bad.append(f"table {header[:60]!r}: {agent} {rate}%{against}")
    for sentence, agent, rate in prose_quotes(text):
        if not excused(page, sentence) and not is_card_figure(agent, rate):
            bad.append(f"{agent} {rate}% in {sentence[:120]!r}")
    return bad


# ------------------------------------------------------------------ tests
@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_quoted_win_rate_is_the_cards(page):
    name = page.relative_to(ROOT).as_posix()
    assert not stale_quotes(name, page.read_text()), f"{name} quotes figures no card has"


@pytest.mark.parametrize("name", SHIPPED)
def test_the_cards_print_their_figures(name):
    """What this test compares against is what a reader finds on the card."""
    card = (CHECKPOINTS / name / "MODEL_CARD.md").read_text()
    for _, rate, low, high in card_figures(name):
        assert f"{100 * rate:.1f}%" in card and f"{100 * low:.1f}% - {100 * high:.1f}%" in card


@pytest.mark.parametrize("entry", OTHER_MEASUREMENTS, ids=lambda e: f"{e[0]}: {e[1]}")
def test_every_listed_measurement_still_differs(entry):
    """An entry that excuses nothing (its figures now the card's, or gone) is dropped."""
    page, piece = entry
    text = (ROOT / page).read_text()
    tables = [(h, a, r, o) for h, a, r, o in table_quotes(text) if piece is None or piece in h]
    sentences = [(s, a, r) for s, a, r in prose_quotes(text) if piece is None or piece in s]
    differ = [r for _, a, r, o in tables if not is_card_figure(a, r, o)]
    differ += [r for _, a, r in sentences if not is_card_figure(a, r)]
    assert differ, f"{page}: nothing of {piece!r} differs from the cards; drop the entry"


def test_the_old_ppo_2p_figure_is_caught():
    """The figure issue 41 found: 46.0% against optimal, where the card says 45.3%."""
    old = "For scale, the shipped `ppo-2p` wins 46.0% against `optimal` over 20,000 games."
    assert stale_quotes("docs/getting-started/rl.md", old) == [f"ppo-2p 46.0% in {old[:120]!r}"]
    assert not stale_quotes("docs/getting-started/rl.md", old.replace("46.0", "45.3"))


@pytest.mark.parametrize(
    "text, quotes",
    [
        ("`planner-3p`, `planner-4p` and `planner-6p` win 43.3%, 40.0% and 25.3%.", 3),
        ("| agent | against smart |\n|---|---:|\n| `ppo-2p` | 50.6% |\n", 1),
        ("| agent | win rate | 95% interval |\n|-|-|-|\n| ppo-2p | 45.3% | 44.6% - 46.0% |", 1),
    ],
)
def test_quotes_are_read_in_tables_and_lists(text, quotes):
    found = table_quotes(text) + prose_quotes(text)
    assert len(found) == quotes
    assert not stale_quotes("any.md", text)


def test_a_wrong_opponent_is_caught():
    table = "| agent | against optimal |\n|---|---:|\n| ppo-2p | 50.6% |\n"  # 50.6%: vs smart
    assert stale_quotes("any.md", table) == [
        "table '| agent | against optimal |': ppo-2p 50.6% against optimal"
    ]
