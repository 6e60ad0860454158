"""House rules in the web app (issue 31 item 2): the new-game request takes every switch
of RULES.md (V1-V5 and the hold rule R5), Rules's own checks refuse a bad value in one
line, saves record the rules (old saves, which have no switches, load as the seeds'
rules), the game's rules line marks the house rules, bots that cannot play the chosen
rules are refused at creation, and the exact 2-player hint is the solver's for the
chosen rules. Shrunken games (small targets) keep it fast. The browser side is in
tests/test_webplay_browser.py."""

import dataclasses
import json

import pytest

pytest.importorskip("fastapi", reason="the web app needs fastapi (dev extras)")

from fivethousand_rl.envs.game import Game  # noqa: E402
from fivethousand_rl.envs.rules import Rules  # noqa: E402
from fivethousand_rl.envs.solver import solve_two_player  # noqa: E402
from fivethousand_rl.webplay.games import MAX_TARGET, rules_line  # noqa: E402
from tests.test_webplay_api import client, greedy, move, play_on, restart  # noqa: E402

SEEDS = Rules()
ALL_HOUSE = {
    "target": 1000,
    "entry": 300,
    "bump": False,
    "overshoot": "lost",
    "fifty_rule": False,
    "hold": "all",
}
# (the switches sent, the rules-line items they highlight); a row per switch.
SWITCHES = [
    pytest.param({}, [], id="the seeds' rules"),
    pytest.param({"target": 1000}, ["target 1000"], id="V5 target"),
    pytest.param({"entry": 350}, ["entry 350"], id="V1 entry ending in 50"),
    pytest.param({"entry": 1000}, ["entry 1000"], id="V1 entry 1000"),
    pytest.param({"bump": False}, ["no bumps"], id="V2 no bumps"),
    pytest.param({"overshoot": "lost"}, ["overshoot lost"], id="V3 overshoot lost"),
    pytest.param({"fifty_rule": False}, ["no 50 rule"], id="V4 no 50 rule"),
    pytest.param({"hold": "all"}, ["hold all"], id="R5 hold all"),
    pytest.param(
        ALL_HOUSE,
        ["target 1000", "entry 300", "no bumps", "overshoot lost", "no 50 rule", "hold all"],
        id="all at once",
    ),
]


def start(c, bots=("smart",), seed=1, **rules):
    return c.post("/api/games", json={"bots": list(bots), "seed": seed, **rules})


def saved(folder, gid: str) -> dict:
    return json.loads((folder / f"{gid}.json").read_text())


def highlighted(items: list[dict]) -> list[str]:
    return [item["text"] for item in items if item["house"]]


@pytest.mark.parametrize(("switches", "house"), SWITCHES)
def test_each_switch_is_taken_recorded_and_shown(tmp_path, switches, house):
    """V1-V5, R5: the game is played under the rules sent; its view, its save (after a
    restart too), its replay and its rematch carry them; the rules line highlights
    exactly the switches changed."""
    rules = Rules(**switches)
    c = client(tmp_path)
    r = start(c, **switches)
    assert r.status_code == 201, r.text
    view = play_on(c, r.json(), decisions=2)
    assert view["rules"] == rules.to_dict()
    assert highlighted(view["rules_line"]) == house
    assert len(view["rules_line"]) == len(dataclasses.fields(Rules))  # every rule is shown
    game = Game.from_json(json.dumps(saved(tmp_path, view["id"])["game"]))
    assert game.rules == rules
    c = restart(c)
    assert c.get("/api/problems").json() == {"problems": []}
    resumed = c.get(f"/api/games/{view['id']}").json()
    assert resumed["rules"] == rules.to_dict() and resumed["rules_line"] == view["rules_line"]
    replay = c.get(f"/api/games/{view['id']}/replay").json()
    assert replay["rules"] == rules.to_dict() and replay["rules_line"] == view["rules_line"]


def test_a_house_rules_game_plays_to_the_end_and_its_rematch_keeps_the_rules(tmp_path):
    """Every switch changed at once: the game ends on the target (V5: exactly 1000 wins);
    a rematch is played under the same rules."""
    c = client(tmp_path)
    view = play_on(c, start(c, bots=["turn-ev"], seed=4, **ALL_HOUSE).json())
    assert view["status"] == "over" and view["scores"][view["winner"]] == 1000
    again = c.post(f"/api/games/{view['id']}/rematch")
    assert again.status_code == 201 and again.json()["rules"] == Rules(**ALL_HOUSE).to_dict()


RULES_LINE = [  # (rules, the items' words, in order)
    (SEEDS, ["target 5000", "entry 500", "bumps", "overshoot gift", "50 rule", "hold free"]),
    (
        Rules(**ALL_HOUSE),
        ["target 1000", "entry 300", "no bumps", "overshoot lost", "no 50 rule", "hold all"],
    ),
]


@pytest.mark.parametrize(("rules", "words"), RULES_LINE)
def test_the_rules_line_names_every_rule(rules, words):
    items = rules_line(rules)
    assert [item["text"] for item in items] == words
    assert all(item["about"] and "\n" not in item["about"] for item in items)


def test_the_form_is_offered_the_seeds_rules(tmp_path):
    answer = client(tmp_path).get("/api/rules").json()
    assert answer["defaults"] == dataclasses.asdict(SEEDS)
    assert answer["choices"] == {"hold": ["free", "all"], "overshoot": ["gift", "lost"]}
    assert answer["max_target"] == MAX_TARGET


BAD_RULES = [  # (switches, words in the one-line error): Rules's own checks, or the types
    ({"target": 150}, "target must be a positive multiple of 100"),
    ({"target": 0}, "target must be a positive multiple of 100"),
    ({"target": MAX_TARGET + 100}, f"target must be at most {MAX_TARGET} on this server"),
    ({"target": 1000.0}, "target: Input should be a valid integer"),
    ({"target": True}, "target: Input should be a valid integer"),
    ({"entry": 0}, "entry must be between 50 and target"),
    ({"entry": 1500, "target": 1000}, "entry must be between 50 and target"),  # V1
    ({"entry": 120}, "entry must be a multiple of 50"),  # V1
    ({"entry": "500"}, "entry: Input should be a valid integer"),
    ({"bump": "no"}, "bump: Input should be a valid boolean"),  # V2
    ({"bump": 0}, "bump: Input should be a valid boolean"),
    ({"overshoot": "kept"}, "overshoot must be one of ('gift', 'lost')"),  # V3
    ({"overshoot": "x" * 50}, "overshoot: String should have at most 20 characters"),
    ({"fifty_rule": None}, "fifty_rule: Input should be a valid boolean"),  # V4
    ({"hold": "some"}, "hold must be one of ('free', 'all')"),  # R5
    ({"house": True}, "house: Extra inputs are not permitted"),
]


@pytest.mark.parametrize(("switches", "words"), BAD_RULES)
def test_a_bad_rule_is_refused_in_one_line(tmp_path, switches, words):
    c = client(tmp_path)
    r = start(c, **switches)
    assert r.status_code == 422
    error = r.json()["error"]
    assert words in error and "\n" not in error
    assert not list(tmp_path.glob("*.json"))  # nothing stored


NO_BUMPS = {"target": 1000, "bump": False}
BOTS_UNDER_HOUSE_RULES = [  # (bots, switches, None if accepted else words of the refusal)
    (["smart"], NO_BUMPS, None),
    (["turn-ev"], NO_BUMPS, None),
    (["threshold:350"], NO_BUMPS, None),
    (["random"], NO_BUMPS, None),
    (["optimal"], NO_BUMPS, None),  # solved for these rules
    (["optimal"], {"target": 1000, "fifty_rule": False}, None),  # V4: scores ending in 50
    (["optimal"], {"target": 1000, "entry": 350}, None),  # V1
    (["smart", "optimal"], {"overshoot": "lost", "target": 1000}, None),
    # Trained agents (the quick-loading planners; the PPO agents refuse the same way):
    (["planner-2p"], NO_BUMPS, "planner-2p values games under"),
    (["smart", "planner-2p"], {"target": 1000}, "planner-2p "),  # named once (issue 43)
]


@pytest.mark.parametrize(("bots", "switches", "refusal"), BOTS_UNDER_HOUSE_RULES)
def test_bots_that_cannot_play_the_rules_are_refused_at_creation(tmp_path, bots, switches, refusal):
    """A trained agent plays only the rules it was trained under; bots and optimal play
    any (issue 31 item 2)."""
    c = client(tmp_path)
    r = start(c, bots=bots, **switches)
    if refusal is None:
        assert r.status_code == 201, r.text
        view = play_on(c, r.json(), decisions=3)  # the bots play their turns
        assert view["rules"] == Rules(**switches).to_dict()
    else:
        assert r.status_code == 422
        error = r.json()["error"]
        assert error.startswith(refusal) and "\n" not in error
        assert not list(tmp_path.glob("*.json"))


def test_old_saves_load_under_the_seeds_rules(tmp_path):
    """A save made before the switches existed records hold, target and entry only: it
    loads as the seeds' rules (V1-V5 defaults); the switches written out at their
    defaults read the same."""
    c = client(tmp_path)
    view = play_on(c, start(c, seed=7).json(), decisions=2)
    data = saved(tmp_path, view["id"])
    assert data["game"]["rules"] == {"hold": "free", "target": 5000, "entry": 500}  # as before
    c = restart(c)
    resumed = c.get(f"/api/games/{view['id']}").json()
    assert resumed == {**view, "events": []} and highlighted(resumed["rules_line"]) == []
    explicit = {"bump": True, "overshoot": "gift", "fifty_rule": True}
    data["game"]["rules"].update(explicit)
    (tmp_path / f"{view['id']}.json").write_text(json.dumps(data))
    c = restart(c)
    assert c.get("/api/problems").json() == {"problems": []}
    assert c.get(f"/api/games/{view['id']}").json()["rules"] == SEEDS.to_dict()


def test_a_save_with_a_bigger_target_than_the_server_plays_is_skipped(tmp_path):
    c = client(tmp_path)
    view = start(c, seed=7).json()
    data = saved(tmp_path, view["id"])
    data["game"]["rules"]["target"] = MAX_TARGET + 1000
    (tmp_path / f"{view['id']}.json").write_text(json.dumps(data))
    (problem,) = restart(c).get("/api/problems").json()["problems"]
    assert f"target must be at most {MAX_TARGET}" in problem["error"]


HINTED = {"target": 1000, "bump": False, "overshoot": "lost"}
HINT_VARIANTS = [
    pytest.param(HINTED, id="V2 off, V3 lost"),
    pytest.param({"target": 1000, "entry": 350, "fifty_rule": False}, id="V1 350, V4 off"),
]


@pytest.mark.parametrize("switches", HINT_VARIANTS)
def test_the_exact_hint_is_the_solvers_choice_under_the_house_rules(tmp_path, switches):
    """Shrunken to a target of 1000: at every decision of whole games (following the
    hints), the hint's move has the solver's best value under the game's house rules, and
    its win probability is that value, which the seeds' rules (same target) would not
    give."""
    rules = Rules(**switches)
    house = solve_two_player(rules)
    seeds = solve_two_player(Rules(target=1000))
    seeds_scores = set(seeds.scores.tolist())
    c = client(tmp_path)
    decisions = differ = 0
    for seed in range(20):
        if decisions >= 10:
            break
        view = start(c, bots=["optimal"], seed=seed, **switches).json()
        while (view := play_on(c, view, decisions=0))["status"] == "you":
            assert view["hint"] == "exact"
            h = c.get(f"/api/games/{view['id']}/hint").json()
            game = Game.from_json(json.dumps(saved(tmp_path, view["id"])["game"]))
            own, opp = game.state.scores[view["human"]], game.state.scores[1 - view["human"]]

            def value(sol, m, own=own, opp=opp):
                if m.banks:
                    return sol.bank_value(own, opp, m.turn_total)
                return sol.roll_value(own, opp, m.turn_total, m.dice_left)

            solver = {m.action: value(house, m) for m in game.moves()}
            assert h["available"] and h["exact"] and h["source"] == "optimal"
            assert solver[h["action"]] == pytest.approx(max(solver.values()), abs=1e-12)
            assert h["chances"][view["human"]] == pytest.approx(solver[h["action"]], abs=1e-12)
            if {own, opp} <= seeds_scores:  # a position the seeds' rules can reach
                differ += abs(value(seeds, game.move(h["action"])) - solver[h["action"]]) > 1e-6
            decisions += 1
            view = move(c, view, h["action"]).json()
        assert view["scores"][view["winner"]] == 1000  # V5
    assert decisions >= 10 and differ, (decisions, differ)


def test_a_hint_the_solver_refuses_is_unavailable_and_the_game_goes_on(tmp_path, monkeypatch):
    """Should the solver refuse a game's rules, the hint says so in one line, the view
    then offers no hint, and play continues (a stand-in refusal: the solver takes every
    variant)."""
    from fivethousand_rl.agents.optimal import OptimalBot

    def refuse(self, rules):
        raise ValueError("the 2-player solver does not take these rules (the test's stand-in)")

    monkeypatch.setattr(OptimalBot, "prepare", refuse)
    c = client(tmp_path)
    view = play_on(c, start(c, seed=2, **HINTED).json(), decisions=0)
    assert view["hint"] == "exact"  # not known until the first hint solves
    h = c.get(f"/api/games/{view['id']}/hint").json()
    assert h == {
        "available": False,
        "note": "no exact hint under these rules: the 2-player solver does not take these "
        "rules (the test's stand-in)",
    }
    assert c.get(f"/api/games/{view['id']}").json()["hint"] is None
    r = move(c, view, greedy(view))
    assert r.status_code == 200 and r.json()["hint"] is None


def test_no_hint_for_bigger_tables_under_house_rules(tmp_path):
    """The shipped planners value the seeds' rules only: at 3 players under V2 off, no
    hint, said in one line."""
    c = client(tmp_path)
    view = play_on(c, start(c, bots=["smart", "turn-ev"], seed=2, **HINTED).json(), decisions=0)
    assert view["hint"] is None
    h = c.get(f"/api/games/{view['id']}/hint").json()
    assert not h["available"] and "no shipped planner" in h["note"] and "\n" not in h["note"]
