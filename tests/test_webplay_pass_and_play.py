"""Pass and play on the web server (issue 43 item 4): several people take turns on one
device, bots in the other seats. Each person decides only at their own seat (turn
order, R1-R2), each hint is for the seat whose decision is due, the game is saved and
resumed with its people, and a bad table is refused in one line. FastAPI's TestClient;
the page itself is in tests/test_webplay_languages.py."""

import json

import pytest

pytest.importorskip("fastapi", reason="the web app needs fastapi (dev extras)")

from fastapi.testclient import TestClient  # noqa: E402

from fivethousand_rl.envs.game import Game  # noqa: E402
from fivethousand_rl.webplay import games  # noqa: E402
from fivethousand_rl.webplay.app import create_app  # noqa: E402


def client(folder, **kw) -> TestClient:
    return TestClient(create_app(folder, **kw), base_url="http://localhost")


def new_game(c, **body) -> dict:
    body.setdefault("seed", 1)
    r = c.post("/api/games", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def greedy(view: dict) -> int:
    """Bank when allowed, else roll on with the most points."""
    banks = [m for m in view["moves"] if m["banks"]]
    return max(banks or view["moves"], key=lambda m: m["turn_total"])["action"]


def play_out(c, view: dict) -> tuple[dict, list[int]]:
    """Play `view`'s game to its end, every person greedy; returns the final view and
    the seat of each person's decision, in order."""
    deciders = []
    while view["status"] != "over":
        gid = view["id"]
        if view["status"] == "wait":
            view = c.post(f"/api/games/{gid}/step", json={"steps": 1000}).json()
            continue
        deciders.append(view["to_play"])
        r = c.post(f"/api/games/{gid}/move", json={"action": greedy(view), "at": view["at"]})
        assert r.status_code == 200, r.text
        view = r.json()
    return view, deciders


def test_two_people_and_a_bot_play_a_whole_game_each_at_their_own_seat(tmp_path):
    """R1-R2: turns go round the table; the server stops at each person's decision and
    only there, and says whose it is."""
    c = client(tmp_path)
    view = new_game(c, bots=["smart"], humans=[2, 0], people=["Zoé", "Ana"], seed=6)
    assert view["humans"] == [0, 2] and view["names"] == ["Ana", "smart", "Zoé"]
    assert view["bots"] == [None, "smart", None]
    gid = view["id"]
    seen = set()
    while view["status"] != "over":
        if view["status"] == "wait":
            assert view["to_play"] is None
            # A person's move is refused while a roll or the bot is due.
            r = c.post(f"/api/games/{gid}/move", json={"action": 1, "at": view["at"]})
            assert r.status_code == 409
            view = c.post(f"/api/games/{gid}/step", json={"steps": 1000}).json()
            # The steps stop at a person's decision, never at the bot's.
            assert view["status"] == "over" or view["current"] in (0, 2)
            continue
        assert view["to_play"] == view["current"] in (0, 2) and view["phase"] == "decide"
        seen.add(view["to_play"])
        r = c.post(f"/api/games/{gid}/move", json={"action": greedy(view), "at": view["at"]})
        view = r.json()
    assert seen == {0, 2} and view["scores"][view["winner"]] == 5000  # R9
    # The log names the people by name, in any language.
    texts = " ".join(line["text"] for line in view["log"])
    assert "Ana" in texts and "Zoé" in texts
    french = c.get(f"/api/games/{gid}", headers={"X-Language": "fr"}).json()
    assert french["names"][0] == "Ana" and french["names"][2] == "Zoé"


def test_people_without_names_are_player_1_2_in_the_language_in_use(tmp_path):
    c = client(tmp_path)
    view = new_game(c, bots=[], humans=[0, 1])
    assert view["names"] == ["player 1", "player 2"] and view["bots"] == [None, None]
    view, deciders = play_out(c, view)
    assert set(deciders) == {0, 1} and view["status"] == "over"


def test_each_persons_hint_is_for_their_own_seat(tmp_path):
    """Two people, no bot: the exact hint at each decision is optimal's best action for
    the seat whose decision it is, its win probability that seat's (R12: the solver)."""
    from fivethousand_rl.agents.optimal import OptimalBot

    optimal = OptimalBot(show_progress=False)
    c = client(tmp_path)
    view = new_game(c, bots=[], humans=[0, 1], seed=11)
    hinted = set()
    while hinted != {0, 1}:
        gid = view["id"]
        assert view["status"] != "over"
        if view["status"] == "wait":
            view = c.post(f"/api/games/{gid}/step", json={"steps": 1000}).json()
            continue
        hint = c.get(f"/api/games/{gid}/hint").json()
        # The position as the server saved it: the engine's own state.
        saved = json.loads((tmp_path / f"{gid}.json").read_text())
        values = optimal.action_values(Game.from_json(json.dumps(saved["game"])))
        best = max(values, key=values.__getitem__)
        me = view["to_play"]
        assert hint["action"] == best and hint["exact"]
        assert hint["chances"][me] == pytest.approx(values[best], abs=1e-12)
        assert hint["chances"][1 - me] == pytest.approx(1 - values[best], abs=1e-12)
        hinted.add(me)
        r = c.post(f"/api/games/{gid}/move", json={"action": greedy(view), "at": view["at"]})
        view = r.json()
    assert hinted == {0, 1}


def test_a_pass_and_play_game_is_saved_resumed_and_rematched_with_its_people(tmp_path):
    c = client(tmp_path)
    view = new_game(c, bots=["turn-ev"], humans=[1, 2], people=["Ravi", None], seed=4)
    saved = json.loads((tmp_path / f"{view['id']}.json").read_text())
    assert saved["version"] == games.VERSION == 2
    assert saved["humans"] == [1, 2] and saved["people"] == ["Ravi", None]
    c.app.state.store.close()
    again = client(tmp_path)
    assert again.get("/api/problems").json() == {"problems": []}
    resumed = again.get(f"/api/games/{view['id']}").json()
    assert resumed["names"] == ["turn-ev", "Ravi", "player 2"] and resumed["humans"] == [1, 2]
    over, _ = play_out(again, resumed)
    rematch = again.post(f"/api/games/{over['id']}/rematch").json()
    assert rematch["id"] != over["id"] and rematch["names"] == resumed["names"]
    replay = again.get(f"/api/games/{over['id']}/replay").json()
    assert replay["humans"] == [1, 2] and replay["names"] == resumed["names"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"bots": ["smart"], "humans": [0, 0]}, "different seats"),
        ({"bots": ["smart"], "humans": [0, 3]}, "different seats 0..2"),
        ({"bots": ["smart"], "humans": [-1, 1]}, "different seats"),
        ({"bots": ["smart"], "humans": [0, 1], "seat": 1}, "not both"),
        ({"bots": [], "humans": [0]}, "2 to 8 players"),
        ({"bots": ["smart"] * 7, "humans": [0, 1]}, "2 to 8 players"),
        ({"bots": ["smart"], "people": ["Ana"]}, "give both"),
        ({"bots": ["smart"], "humans": [0, 1], "people": ["Ana"]}, "2 names"),
        ({"bots": [], "humans": [0, 1], "people": ["Ana", "ana"]}, "same name"),
        ({"bots": [], "humans": [0, 1], "people": ["Ana", "x" * 25]}, "1 to 24 characters"),
        ({"bots": [], "humans": [0, 1], "people": ["Ana", ""]}, "1 to 24 characters"),
        ({"bots": [], "humans": [0, 1], "people": ["Ana", "Bo\nb"]}, "printable"),
        ({"bots": [], "humans": [0, 1], "people": ["Ana", " Bob"]}, "printable"),
        ({"bots": [], "humans": [0, 1], "people": ["Ana", 7]}, "valid string"),
    ],
)
def test_a_bad_table_is_refused_in_one_line_and_starts_nothing(tmp_path, body, words):
    c = client(tmp_path)
    r = c.post("/api/games", json=body)
    error = r.json()["error"]
    assert r.status_code == 422 and words in error and "\n" not in error, error
    assert not list(tmp_path.glob("*.json"))


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"humans": [0, 0]}, "different seats"),
        ({"humans": [1, 0]}, "different seats"),
        ({"humans": []}, "list of seats"),
        ({"people": ["Ana"]}, "one per person"),
        ({"people": ["Ana", "ANA"]}, "same name"),
        ({"people": ["Ana", "\x1b[2J"]}, "printable"),
        ({"bots": ["smart", "smart", None]}, "null at the people's seats only"),
    ],
)
def test_a_hand_edited_save_of_a_pass_and_play_game_is_skipped_in_one_line(tmp_path, change, words):
    c = client(tmp_path)
    view = new_game(c, bots=["smart"], humans=[0, 2], people=["Ana", "Bob"])
    c.app.state.store.close()
    path = tmp_path / f"{view['id']}.json"
    data = json.loads(path.read_text())
    data.update(change)
    path.write_text(json.dumps(data))
    problems = client(tmp_path).get("/api/problems").json()["problems"]
    assert len(problems) == 1 and words in problems[0]["error"], problems
