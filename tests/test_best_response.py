"""The exact best response (envs.best_response, agents.best_response) on shrunken games.

Oracles: against the optimal player the best response gains nothing (its values are the
2-player solver's at every state, R1-R12 and every house rule inside); every state's
values satisfy their Bellman equation, checked with the independent single-turn planner
(envs.turn_planner) and the per-start turn ends (envs.turn_outcomes); and the
best-response bot, played in the engine, wins as often as computed."""

import json
from pathlib import Path

import numpy as np
import pytest

from fivethousand_rl.agents import best_response as br_core
from fivethousand_rl.agents import make_policy
from fivethousand_rl.agents.best_response import (
    BestResponseBot,
    best_response,
    bot_key,
    parallel_turn_ends,
    summary,
    table_of,
)
from fivethousand_rl.agents.best_response import cli as br_cli
from fivethousand_rl.agents.optimal import two_player_solution
from fivethousand_rl.envs.batch import play_games
from fivethousand_rl.envs.best_response import ScoreSpace, solve_best_response
from fivethousand_rl.envs.rules import NUM_DICE, Rules
from fivethousand_rl.envs.turn_outcomes import turn_ends, turn_outcomes
from fivethousand_rl.envs.turn_planner import plan_turn

SMALL = Rules(target=1000, entry=300)
TINY = Rules(target=800, entry=300)  # 6 scores a player can start a turn with


@pytest.mark.parametrize(
    "rules",
    [
        pytest.param(SMALL, id="R1-R12 target 1000"),
        pytest.param(Rules(target=800, entry=300, bump=False), id="V2 no bumps"),
        pytest.param(Rules(target=800, entry=300, overshoot="lost"), id="V3 overshoot lost"),
        pytest.param(Rules(target=600, entry=300, fifty_rule=False), id="V4 no 50 rule"),
        pytest.param(Rules(target=800, entry=300, hold="all"), id="R5 hold all"),
    ],
)
def test_the_best_response_to_optimal_play_is_the_solvers_value(rules):
    """Optimal play cannot be exploited: at every state, the best response's values are
    the exact 2-player solution's (the responder's and the optimal player's)."""
    sol = two_player_solution(rules, show_progress=False)
    br = solve_best_response([make_policy("optimal")], rules)
    positions = ScoreSpace(rules, 2).positions()
    ia, ib = (np.searchsorted(sol.scores, positions[:, c]) for c in (0, 1))
    assert br.values[0, :, 0] == pytest.approx(sol.V[ia, ib], abs=1e-9)  # responder moves
    assert br.values[1, :, 0] == pytest.approx(sol.V[ia, ib], abs=1e-9)  # optimal moves
    assert br.values.sum(axis=2) == pytest.approx(1.0, abs=1e-9)  # someone wins
    v = sol.first_player_win_probability
    assert br.seat_values() == pytest.approx([v, 1 - v], abs=1e-9)
    assert summary(br)["exploitability"] == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize(
    "bots",
    [
        pytest.param(("threshold:300",), id="2p threshold"),
        pytest.param(("smart", "turn-ev"), id="3p smart, turn-ev"),
        pytest.param(("random", "smart"), id="3p random (every branch), smart"),
    ],
)
def test_every_state_satisfies_its_bellman_equation(bots):
    """A responder's state is worth its best turn, planned by the single-turn planner
    against the values where its turn ends; a bot's state is worth its turn's exact ends
    (R4-R9), valued where they lead; the values are win probabilities that add to 1."""
    rules = Rules(target=700, entry=300) if len(bots) > 1 else SMALL
    policies = [make_policy(b) for b in bots]
    br = solve_best_response(policies, rules)
    n = br.n_players
    space = br.space
    positions = space.positions()
    value_fn = br.value_fn()
    for i, pos in enumerate(positions):
        plan = plan_turn(tuple(int(s) for s in pos), rules, value_fn)
        assert plan.W[0, NUM_DICE] == pytest.approx(br.values[0, i, 0], abs=1e-9)
    for i in np.random.default_rng(0).choice(len(positions), size=10, replace=False):
        for j, bot in enumerate(policies, start=1):
            out = turn_outcomes(bot, positions[i], rules)
            following = br.values[(j + 1) % n, space.index(out.positions)]
            assert out.value(following) == pytest.approx(br.values[j, i], abs=1e-9)
    assert br.values.sum(axis=2) == pytest.approx(1.0, abs=1e-9)
    assert ((br.values >= -1e-12) & (br.values <= 1 + 1e-12)).all()


def test_the_best_response_beats_what_optimal_play_wins_against_the_same_bot():
    """Optimal play maximizes against an optimal opponent, not against threshold:300: the
    best response to threshold:300 wins at least what optimal play wins against it (here
    measured in 8,000 batched games, seats alternating), and more than one half."""
    rules = SMALL
    br = best_response(("threshold:300",), rules, make_policy, show_progress=False)
    mean = summary(br)["mean"]
    optimal, bot = make_policy("optimal"), make_policy("threshold:300")
    wins = 0
    for seat, policies in enumerate(([optimal, bot], [bot, optimal])):
        rng = np.random.default_rng(seat)
        wins += int((play_games(4000, policies, rules, rng).winner == seat).sum())
    rate = wins / 8000
    assert mean > 0.5
    assert mean >= rate - 4 * np.sqrt(rate * (1 - rate) / 8000)


@pytest.mark.parametrize(
    "bots",
    [
        pytest.param(("smart",), id="2p smart"),
        pytest.param(("random",), id="2p random"),
        pytest.param(("turn-ev", "threshold:300"), id="3p turn-ev, threshold"),
    ],
)
def test_the_best_response_bot_wins_as_often_as_computed(bots):
    """Played in the engine (batched games), from each seat, the best-response bot wins
    at the computed rate, within 4 standard errors."""
    rules = TINY if len(bots) > 1 else SMALL
    n = len(bots) + 1
    bot = make_policy("best-response:" + ",".join(bots))
    assert isinstance(bot, BestResponseBot)
    expected = best_response(bots, rules, make_policy, show_progress=False).seat_values()
    others = [make_policy(b) for b in bots]
    table = [bot, *others]  # the responder, then the bots in turn order
    games = 3000
    for seat in range(n):
        policies = table[-seat:] + table[:-seat] if seat else table  # `seat` bots before it
        result = play_games(games, policies, rules, np.random.default_rng(seat))
        rate = float((result.winner == seat).mean())
        se = np.sqrt(expected[seat] * (1 - expected[seat]) / games)
        assert abs(rate - expected[seat]) < 4 * se, (seat, rate, expected[seat])


def _by_start(ends) -> dict:
    """Each turn start's ends, as {start: ({end: chance}, wins)}."""
    out = {}
    for b in range(len(ends)):
        turn = ends[b]
        chances = {tuple(map(int, p)): q for p, q in zip(turn.positions, turn.probs, strict=True)}
        out[turn.scores] = (chances, tuple(turn.wins))
    return out


@pytest.mark.parametrize("players, bot", [(2, "smart"), (3, "turn-ev")])
def test_turn_ends_agree_across_chunks_and_workers(players, bot):
    """The bots' turn ends are the same numbers however they are split: in chunks, or
    in two processes (which keep the starts a bot plays alike together)."""
    rules = TINY
    positions = ScoreSpace(rules, players).positions()
    policy = make_policy(bot)
    whole = turn_ends(policy, positions, rules)
    assert whole.probs.sum() + whole.wins.sum() == pytest.approx(len(positions))
    expected = _by_start(whole)
    for other in (
        turn_ends(policy, positions, rules, chunk=7),
        parallel_turn_ends(policy, positions, rules, workers=2, chunk=13),
    ):
        assert _by_start(other) == expected


def test_results_are_cached_by_bots_and_rules(monkeypatch):
    """A second ask reads the disk cache (nothing is computed again); other rules are
    another entry; a corrupt file is computed again, with a note."""
    rules = Rules(target=800, entry=300)
    first = best_response(("turn-ev",), rules, make_policy, show_progress=False)
    br_core._MEMORY.clear()

    def refuse(*args, **kwargs):
        raise AssertionError("computed again")

    monkeypatch.setattr(br_core, "_compute", refuse)
    again = best_response(("turn-ev",), rules, make_policy, show_progress=False)
    assert np.array_equal(first.values, again.values)
    with pytest.raises(AssertionError, match="computed again"):
        best_response(
            ("turn-ev",), Rules(target=800, entry=300, bump=False), make_policy, show_progress=False
        )
    monkeypatch.undo()
    path = br_core._cache_path((bot_key("turn-ev"),), rules)
    path.write_bytes(b"not an npz")
    br_core._MEMORY.clear()
    fixed = best_response(("turn-ev",), rules, make_policy, show_progress=False)
    assert np.array_equal(first.values, fixed.values)


def test_a_model_is_known_by_its_contents():
    """A shipped agent's (or a file's) cache key carries a digest of its file, so a
    retrained model never reads an old result; the package's own bots are known by their
    names (tests/test_best_response_cache.py)."""
    assert bot_key("smart") == "smart"
    assert bot_key("optimal") == "optimal"
    assert bot_key("planner-2p").startswith("planner-2p@")
    assert len(bot_key("planner-2p").split("@")[1]) == 16


@pytest.mark.parametrize(
    "spec, players, error",
    [
        ("", None, "at least one bot"),
        ("smart,turn-ev", 2, "2 players: the responder and 1 bots"),
        ("smart", 9, "players"),
    ],
)
def test_bad_tables_are_refused_in_one_line(spec, players, error):
    with pytest.raises(ValueError, match=error):
        table_of(spec, players)


def test_the_bot_refuses_another_table_size():
    bot = make_policy("best-response:smart")
    with pytest.raises(ValueError, match="table of 2 players, not 3"):
        bot.check_game(3, SMALL)


def test_the_command_prints_exploitability(capsys):
    """--json: the seats' values, their mean and the exploitability (the mean minus
    one half); the text form says the same."""
    flags = ["--target", "1000", "--entry", "300"]
    assert br_cli.main(["threshold:300", *flags, "--json"]) == 0
    numbers = json.loads(capsys.readouterr().out)
    assert numbers["players"] == 2
    assert numbers["mean"] == pytest.approx(np.mean(numbers["seat_values"]))
    assert numbers["exploitability"] == pytest.approx(numbers["mean"] - 0.5)
    assert numbers["rules"]["target"] == 1000
    assert br_cli.main(["threshold:300", *flags]) == 0
    assert f"{numbers['exploitability']:.10f}" in capsys.readouterr().out


def test_the_command_takes_a_table(capsys):
    flags = ["--target", "800", "--entry", "300"]
    assert br_cli.main(["--players", "3", "threshold:300", *flags, "--json"]) == 0
    numbers = json.loads(capsys.readouterr().out)
    assert numbers["bots"] == ["threshold:300", "threshold:300"]
    assert len(numbers["seat_values"]) == 3
    assert "exploitability" not in numbers


@pytest.mark.parametrize(
    "argv, error",
    [
        (["nobody"], "unknown bot 'nobody'"),
        (["smart", "smart", "--players", "2"], "2 players: the responder and 1 bots"),
        (["smart", "--workers", "0"], "--workers must be at least 1"),
        (["smart", "--target", "70"], "target"),
    ],
)
def test_the_command_refuses_bad_input_in_one_line(argv, error, capsys):
    assert br_cli.main(argv) == 2
    err = capsys.readouterr().err
    assert error in err
    assert err.count("\n") == 1


def test_the_readme_table_shows_the_report():
    """The README's exploitability rows are docs/exploitability.json's numbers (written
    by the report command the README names)."""
    root = Path(__file__).resolve().parent.parent
    rows = json.loads((root / "docs" / "exploitability.json").read_text())["rows"]
    readme = (root / "README.md").read_text()
    for row in rows:
        line = next(x for x in readme.splitlines() if x.startswith(f"| {row['policy']} |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[1] == f"{max(row['exploitability'], 0.0):.4f}"
        assert cells[2] == f"{row['estimated_win_rate_against_optimal']:.1%}"
        assert cells[3] == f"{row['regret_per_game']:.4f}"


def test_play_hints_the_exact_best_response_at_a_computed_table():
    """Once the best response to a table of bots is computed (cached), the terminal game's
    hint at that table is exact: the move that wins most often against these bots, with
    every player's chances then (adding to 100%)."""
    import re

    from fivethousand_rl import play

    rules_flags = ["--target", "800", "--entry", "300"]
    best_response(("threshold:300", "turn-ev"), TINY, make_policy, show_progress=False)
    lines: list[str] = []
    answers = iter(["hint", *["b", "r"] * 1500])  # bank when allowed, else roll on
    code = play.main(
        ["--opponents", "threshold:300", "turn-ev", "--seed", "5", "--hint", *rules_flags],
        ask=lambda _: next(answers),
        say=lines.append,
    )
    assert code == 0
    hints = [line for line in lines if "hint:" in line]
    assert hints and all("(exact: the best response to this table)" in h for h in hints)
    for hint in hints:
        odds = [float(p) for p in re.findall(r"(\d+\.\d)%", hint)]
        assert len(odds) == 3 and sum(odds) == pytest.approx(100, abs=0.2)


def test_the_table_report_puts_agents_beside_the_ceiling(tmp_path):
    """--report with --players 3: the exact ceiling at the table and each agent's win
    rate with its seat rotated, none above the ceiling by more than chance; a planner of
    a value network of that table gets its mean value error against the exact values."""
    from fivethousand_rl.agents.value_net import FeatureSpec, ValueNet

    table = ("threshold:350", "turn-ev")
    spec = FeatureSpec(TINY, max_players=3, table=table)
    rng = np.random.default_rng(0)
    weights = [rng.normal(0, 0.05, (spec.size, 8)), rng.normal(0, 0.5, (8, 3))]
    net_path = tmp_path / "net" / "value_net.npz"
    net_path.parent.mkdir()
    ValueNet(spec, weights, [np.zeros(8), np.zeros(3)]).save(net_path)
    out = tmp_path / "table.md"
    argv = ["--players", "3", *table, "--target", "800", "--entry", "300", "--report", str(out)]
    argv += ["--agents", "optimal", str(net_path), "--games", "600"]
    assert br_cli.main(argv) == 0
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["mean"] == pytest.approx(np.mean(data["seat_values"]))
    for row in data["agents"]:
        se = np.sqrt(data["mean"] * (1 - data["mean"]) / row["games"])
        assert row["win_rate"] <= data["mean"] + 4 * se
    optimal, planner = data["agents"]
    assert optimal["value_error"] is None and 0 < planner["value_error"] < 1
    # the error where the planner reads its net: after its own turn, the agent last
    br = best_response(table, TINY, make_policy, False)
    positions = br.space.positions()
    net = ValueNet.load(net_path)
    mine = net(positions, np.full(len(positions), 2))[:, 2]
    exact = br.values[1][:, 2]  # table index 1 (the first bot) to move
    assert planner["value_error"] == pytest.approx(np.abs(mine - exact).mean())
    assert f"{data['mean']:.2%}" in out.read_text()


def test_the_readme_ceiling_table_shows_the_report():
    """The README's rows for the 3-player table are docs/table_3p.json's numbers (written
    by the report command the README names)."""
    root = Path(__file__).resolve().parent.parent
    data = json.loads((root / "docs" / "table_3p.json").read_text())
    readme = (root / "README.md").read_text()
    assert data["command"] in " ".join(readme.replace("\\\n", " ").split())
    best = next(x for x in readme.splitlines() if x.startswith("| best response (exact) |"))
    assert best.split("|")[2].strip() == f"{data['mean']:.2%}"
    for row in data["agents"]:
        line = next(x for x in readme.splitlines() if x.startswith(f"| {row['agent']} | 4"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        low, high = row["ci95"]
        assert cells[1:4] == [
            f"{row['win_rate']:.2%}",
            f"{low:.1%} - {high:.1%}",
            f"{data['mean'] - row['win_rate']:.2%}",
        ]
        error = row["value_error"]
        assert cells[4] == ("-" if error is None else f"{error:.4f}")
