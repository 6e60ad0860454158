"""The game review (agents/review.py): every decision of every player replayed from the
game's log and judged by the hints' policy: exact with 2 players (the solver's values),
a best response or a shipped planner's estimate with more, labelled as such."""

import json

import numpy as np
import pytest

from fivethousand_rl.agents import make_policy, terminal
from fivethousand_rl.agents.batched import optimal_values
from fivethousand_rl.agents.best_response import best_response
from fivethousand_rl.agents.optimal import OptimalBot, two_player_solution
from fivethousand_rl.agents.review import read_record, review, review_record, seat_advisers
from fivethousand_rl.agents.value_net import shipped_planner
from fivethousand_rl.envs.batch import ROLL_ID, BatchGames
from fivethousand_rl.envs.game import Game, GameState
from fivethousand_rl.envs.game_log import log_entry, replay_log
from fivethousand_rl.envs.rules import BANK_BIT, Rules
from fivethousand_rl.webplay.games import WebGame

SMALL = Rules(target=1000, entry=300)  # solved in a tenth of a second
MEDIUM = Rules(target=2000, entry=300)  # in under a second: longer games


def played(policies, rules: Rules, seed: int) -> list[dict]:
    """The log of a game of `policies` (one per seat) played to its end."""
    game, rng, events = Game(len(policies), rules, seed=seed), np.random.default_rng(seed), []
    while not game.over:
        game.roll()
        events.append(log_entry(game.last_event))
        if game.state.phase == "decide":
            game.act(policies[game.state.current].act(game, rng))
            events.append(log_entry(game.last_event))
    return events


class RefusesItsWin(OptimalBot):
    """optimal, except that once, where banking would win the game (R9: reaching the
    target exactly), it holds the same dice and rolls on."""

    name = "refuses-its-win"

    def __init__(self) -> None:
        super().__init__(show_progress=False)
        self.refused: dict | None = None  # the position where it refused, and its move

    def act(self, game: Game, rng: np.random.Generator) -> int:
        if self.refused is None:
            for move in game.moves():
                if move.banks and move.bank.winner == game.state.current:
                    roll_on = move.action & ~BANK_BIT  # the same hold, rolling on
                    self.refused = {"position": game.state.to_dict(), "made": roll_on}
                    return self.refused["made"]
        return super().act(game, rng)


def test_a_refused_exact_win_is_the_costliest_decision():
    """Rolling on where banking wins (R9) is seat 0's costliest decision, its one cost:
    every other decision of the optimal player costs nothing."""
    for seed in range(20):  # the first game where seat 0 reaches an exact win
        blunderer = RefusesItsWin()
        events = played([blunderer, make_policy("optimal")], SMALL, seed)
        if blunderer.refused is not None:
            break
    assert blunderer.refused is not None
    got = review(SMALL, 2, events, seat_advisers(2, SMALL))
    me = got.players[0]
    worst = got.decisions[me.costliest[0]]
    assert (worst.position, worst.made) == (
        blunderer.refused["position"],
        blunderer.refused["made"],
    )
    assert worst.p_best == 1.0 and worst.best & BANK_BIT  # banking wins for sure
    assert worst.cost > 0.1
    assert me.costliest == [me.costliest[0]] and me.lost == pytest.approx(worst.cost)
    assert me.exact and me.adviser == "optimal"
    assert me.accuracy < 100


def test_optimal_play_costs_nothing_and_the_values_are_the_solvers():
    """With 2 players the optimal player's every decision costs exactly 0 and its
    accuracy is 100; smart's cost something; p_made and p_best are the solution's values
    of the position (read again from the batched table, ``optimal_values``)."""
    events = played([make_policy("optimal"), make_policy("smart")], MEDIUM, seed=4)
    got = review(MEDIUM, 2, events, seat_advisers(2, MEDIUM))
    assert len(got.decisions) == sum("act" in e for e in events)  # every decision, bots too
    optimal, smart = got.players
    assert all(d.cost == 0 for d in got.decisions if d.seat == 0)
    assert (optimal.accuracy, optimal.lost, optimal.costliest) == (100.0, 0.0, [])
    costly = [d.cost for d in got.decisions if d.seat == 1 and d.cost > 0]
    assert smart.accuracy < 100 and smart.lost == pytest.approx(sum(costly))
    assert len(costly) > 3 and len(smart.costliest) == 3
    costs = [got.decisions[i].cost for i in smart.costliest]
    assert costs == sorted(costs, reverse=True) and costs[0] == max(d.cost for d in got.decisions)
    table = BatchGames(len(got.decisions), 2, MEDIUM)
    for row, d in enumerate(got.decisions):
        s = GameState.from_dict(d.position, MEDIUM)
        table.scores[row], table.current[row] = s.scores, s.current
        table.turn_total[row], table.dice_left[row] = s.turn_total, s.dice_left
        table.roll[row] = ROLL_ID[s.roll]
        assert events[d.event] == {"act": d.made, "player": d.seat}
    values = optimal_values(two_player_solution(MEDIUM), table, np.arange(len(got.decisions)))
    rows = np.arange(len(got.decisions))
    assert values[rows, [d.made for d in got.decisions]] == pytest.approx(
        [d.p_made for d in got.decisions], abs=1e-12
    )
    assert values.max(axis=1) == pytest.approx([d.p_best for d in got.decisions], abs=1e-12)


def test_the_series_starts_at_the_positions_value_and_ends_at_the_result():
    """Each point is every seat's chance (adding to 1 with 2 players), the first the
    mover's best value at the first decision (near the opening's value), the last 1 for
    the winner and 0 for the loser."""
    events = played([make_policy("smart"), make_policy("optimal")], SMALL, seed=2)
    got = review(SMALL, 2, events, seat_advisers(2, SMALL))
    series = got.series()
    assert len(series) == len(got.decisions) + 1
    first = got.decisions[0]
    assert series[0] == first.chances and series[0][first.seat] == first.p_best
    sol = two_player_solution(SMALL)
    assert series[0][0] == pytest.approx(sol.V[0, 0], abs=0.15)  # one roll in
    assert all(sum(point) == pytest.approx(1.0) for point in series)
    assert series[-1] == [float(seat == got.winner) for seat in range(2)]
    assert json.loads(json.dumps(got.to_dict()))["series"] == series


@pytest.mark.parametrize("n_players", [3, 4])
def test_bigger_tables_are_estimates_by_the_shipped_planner(n_players):
    """With 3 or 4 players and no best response cached, every seat is judged by the
    shipped planner and labelled an estimate; costs are never negative."""
    rules = Rules()
    bots = [make_policy(b) for b in ("smart", "turn-ev", "threshold:350", "smart")]
    events = played(bots[:n_players], rules, seed=n_players)
    got = review_record({"rules": rules.to_dict(), "players": ["?"] * n_players, "events": events})
    planner = shipped_planner(n_players, rules)
    assert [(p.adviser, p.exact) for p in got.players] == [(planner.name, False)] * n_players
    assert all(d.cost >= 0 and len(d.chances) == n_players for d in got.decisions)
    assert got.series()[-1] == [float(seat == got.winner) for seat in range(n_players)]


def test_a_cached_best_response_judges_exactly_and_unvalued_seats_are_left_out():
    """At a table of bots whose best response was computed, the person's seat is judged
    exactly by it (its own moves then cost nothing); seats with no policy that values
    their table (no shipped planner for these rules) are not reviewed."""
    rules = Rules(target=700, entry=300)
    table = ("smart", "turn-ev")
    best_response(table, rules, make_policy, show_progress=False)
    advisers = seat_advisers(3, rules, (None, *table))
    events = played([advisers[0], *(make_policy(b) for b in table)], rules, seed=0)
    got = review(rules, 3, events, advisers)
    person, *bots = got.players
    assert person.exact and person.adviser == advisers[0].name and person.decisions > 0
    assert all(d.cost < 1e-9 for d in got.decisions)
    assert [(p.adviser, p.decisions, p.accuracy) for p in bots] == [(None, 0, None)] * 2
    with pytest.raises(ValueError, match="no policy values a table of 3 players"):
        review(rules, 3, events, seat_advisers(3, rules))


def test_web_saves_terminal_saves_and_game_logs_all_load(tmp_path):
    """The web page's save, the terminal's save and its game log of one game give its
    review; a save whose log does not lead to its game is refused."""
    events = played([make_policy("optimal"), make_policy("smart")], SMALL, seed=3)
    want = review(SMALL, 2, events, seat_advisers(2, SMALL)).to_dict()
    web = WebGame("g" * 22, [None, "smart"], [0], 3, Game(2, SMALL))
    replay_log(web.game, events, web.record)
    game = Game(2, SMALL)
    replay_log(game, events)
    session = terminal.Session(game, ["you", "smart"], 0, 3, say=lambda _: None)
    session.log = events
    terminal.save(session, str(tmp_path / "save.json"))
    terminal.write_log(session, str(tmp_path / "log.json"))
    records = [web.to_dict()] + [
        json.loads((tmp_path / f).read_text()) for f in ("save.json", "log.json")
    ]
    for data in records:
        assert review_record(data).to_dict() == want
    edited = web.to_dict()
    edited["log"] = edited["log"][:-2]
    with pytest.raises(ValueError, match="its log does not lead to its game"):
        read_record(edited)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "not a saved game or a game log"),
        (
            {"rules": {}, "players": ["a", "b"], "events": [{"act": 3, "player": 1}]},
            "log event 1: ",
        ),
        ({"rules": {"colour": 1}, "players": ["a", "b"], "events": []}, "not valid rules"),
        ({"rules": {}, "players": ["a"], "events": []}, "player"),
        (
            {"rules": {"target": 10**6}, "players": ["a", "b"], "events": []},
            "target must be at most",
        ),
    ],
)
def test_bad_records_get_one_line(data, message):
    with pytest.raises(ValueError, match=message) as caught:
        review_record(data)
    assert "\n" not in str(caught.value)
