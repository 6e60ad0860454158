"""The house-rules analysis (issue 31 item 4), on shrunken games: its exact figures are
the solver's, its counts of what happens in games are the engine's."""

from __future__ import annotations

import numpy as np
import pytest

from fivethousand_rl.agents import analysis, make_policy
from fivethousand_rl.agents.analysis import fair_start, main, measure, self_play
from fivethousand_rl.agents.optimal import two_player_solution
from fivethousand_rl.envs.driver import play
from fivethousand_rl.envs.game import Game, Moved, Rolled
from fivethousand_rl.envs.rules import Rules

SMALL = dict(target=1000, entry=300)
VARIANTS = [
    ("small", Rules(**SMALL), ""),
    ("no bumps", Rules(**SMALL, bump=False), "V2"),
    ("overshoot lost", Rules(**SMALL, overshoot="lost"), "V3"),
]


@pytest.mark.parametrize("rules", [r for _, r, _ in VARIANTS], ids=repr)
def test_the_fair_start_is_where_the_first_players_chance_crosses_one_half(rules):
    first, fair, (low, high), _ = fair_start(rules)
    sol = two_player_solution(rules, show_progress=False)
    assert first == pytest.approx(sol.first_player_win_probability, abs=1e-12)
    assert first > 0.5  # the first player's edge (R11: seats in order)
    index = {int(s): i for i, s in enumerate(sol.scores)}
    assert sol.V[0, index[low]] > 0.5 >= sol.V[0, index[high]]
    assert low <= fair <= high


def engine_counts(rules: Rules, n_games: int, seed: int) -> dict:
    """The same counts, from games of the engine one at a time."""
    bot = make_policy("optimal")
    totals = dict(turns=[], busts=0, bumps=0, gifts=0, lost=0)
    for g in range(n_games):
        game = Game(2, rules, seed=seed + g)

        def count(game, event):
            if isinstance(event, Rolled) and event.bust:
                totals["busts"] += 1
            if isinstance(event, Moved) and event.move.banks:
                bank = event.move.bank
                totals["bumps"] += len(bank.bumped)
                totals["gifts"] += bank.gift_to is not None
                totals["lost"] += bank.lost

        play(game, [bot, bot], np.random.default_rng(seed + g), on_event=count)
        totals["turns"].append(game.state.turns)
    return totals


@pytest.mark.parametrize("rules", [r for _, r, _ in VARIANTS], ids=repr)
def test_self_play_counts_what_the_engine_counts(rules):
    """Busts, bumps, gifts and lost overshoots per game, and the length, as engine games
    of the same bots give them (different dice: within statistical noise)."""
    n = 400
    batched = self_play(rules, 4000, seed=1)
    engine = engine_counts(rules, n, seed=7)
    turns = np.array(engine["turns"])
    assert batched["cut_off"] == 0
    se = turns.std() / np.sqrt(n)
    assert abs(batched["turns_mean"] - turns.mean()) < 4 * se + 0.1
    for event in ("busts", "bumps", "gifts", "lost"):
        rate = engine[event] / n
        assert abs(batched[event] - rate) < 4 * np.sqrt(max(rate, 0.01) / n) + 0.02, event
    if not rules.bump:
        assert batched["bumps"] == 0  # V2
    if rules.overshoot == "lost":
        assert batched["gifts"] == 0  # V3
    assert batched["busts"] > 0


def test_the_report_names_each_variant_and_the_rule_that_matters_most(tmp_path, monkeypatch):
    results = measure(VARIANTS, 300, seed=0, show=False)
    assert [r.label for r in results] == [v[0] for v in VARIANTS]
    monkeypatch.setattr(analysis, "VARIANTS", VARIANTS)  # shrunken for the test
    out = tmp_path / "analysis.md"
    assert main(["--games", "200", "--out", str(out)]) == 0
    text = out.read_text()
    for label, _, _ in VARIANTS:
        assert f"| {label} |" in text
    assert "## Which rule matters most" in text
    for png in ("first_player.png", "length.png", "events.png"):
        assert (tmp_path / "analysis" / png).stat().st_size > 1000
        assert f"(analysis/{png})" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--games", "0"], "--games must be >= 1"),
        (["--out", "report.txt"], "--out must name a .md file"),
    ],
)
def test_bad_arguments_are_refused_in_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err
