"""The web app's API (webplay): whole games against bots, every kind of bad request,
resuming after a restart, corrupt saves, bounded storage. FastAPI's TestClient, no
browser (that is tests/test_webplay_browser.py)."""

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the web app needs fastapi (dev extras)")

from fastapi.testclient import TestClient  # noqa: E402

from fivethousand_rl.envs.game import Game  # noqa: E402
from fivethousand_rl.webplay.app import create_app  # noqa: E402
from fivethousand_rl.webplay.games import FORMAT  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def client(folder, **kw) -> TestClient:
    # localhost: the server answers only the Host names it was started for (issue 28)
    return TestClient(create_app(folder, **kw), base_url="http://localhost")


def restart(c: TestClient, **kw) -> TestClient:
    """A new server over `c`'s data folder, `c`'s stopped first (one server a folder)."""
    store = c.app.state.store
    store.close()
    return client(store.folder, **kw)


def move(c, view: dict, action: int):
    """The human's `action` at `view`'s position (the move names it: issue 28 item 4)."""
    return c.post(f"/api/games/{view['id']}/move", json={"action": action, "at": view["at"]})


def new_game(c, bots=("smart",), seat=0, hold="free", seed=1) -> dict:
    r = c.post("/api/games", json={"bots": list(bots), "seat": seat, "hold": hold, "seed": seed})
    assert r.status_code == 201, r.text
    return r.json()


def greedy(view: dict) -> int:
    """The human's test strategy: bank when allowed, else roll on with the most points."""
    banks = [m for m in view["moves"] if m["banks"]]
    if banks:
        return max(banks, key=lambda m: m["turn_total"])["action"]
    return max(view["moves"], key=lambda m: m["turn_total"])["action"]


def play_on(c, view: dict, decisions: int = 10_000) -> dict:
    """Play `view`'s game on (bots in one step request each turn) until it is over or
    the human has made `decisions` decisions."""
    gid = view["id"]
    while view["status"] != "over":
        if view["status"] == "wait":
            view = c.post(f"/api/games/{gid}/step", json={"steps": 1000}).json()
            continue
        if decisions == 0:
            break
        decisions -= 1
        r = move(c, view, greedy(view))
        assert r.status_code == 200, r.text
        view = r.json()
    return view


def test_a_whole_game_against_a_bot_and_its_replay(tmp_path):
    c = client(tmp_path)
    view = new_game(c, bots=["smart"], seed=3)
    assert view["status"] == "wait" and view["names"] == ["you", "smart"]
    view = play_on(c, view)
    assert view["status"] == "over" and view["scores"][view["winner"]] == 5000  # R9
    assert view["mask"] == [0] * 64 and view["moves"] == []
    frames = c.get(f"/api/games/{view['id']}/replay").json()["frames"]
    assert frames[0]["kind"] == "start" and frames[-1]["scores"] == view["scores"]
    assert "won with exactly 5000" in frames[-1]["text"]
    assert [f["text"] for f in frames[1:]][-len(view["log"]) :] == [x["text"] for x in view["log"]]
    saved = json.loads((tmp_path / f"{view['id']}.json").read_text())
    assert saved["format"] == FORMAT and saved["game"]["state"]["winner"] == view["winner"]
    assert not list(tmp_path.glob(".tmp-*"))  # atomic saves leave no temporary file


def test_bots_move_one_step_at_a_time_with_readable_events(tmp_path):
    c = client(tmp_path)
    view = new_game(c, bots=["turn-ev"], seat=1, seed=5)  # the bot plays first
    kinds = set()
    for _ in range(60):
        if view["status"] == "you":
            view = move(c, view, greedy(view)).json()
            continue
        seat = view["current"]
        view = c.post(f"/api/games/{view['id']}/step").json()  # no body: one step
        (event,) = view["events"]
        assert event["seat"] == seat and event["text"].startswith(view["names"][seat] + " ")
        kinds.add(event["kind"])
    assert kinds == {"roll", "hold", "bank", "bust"}


def test_the_move_mask_is_the_engines(tmp_path):
    c = client(tmp_path)
    view = play_on(c, new_game(c, seed=8), decisions=0)
    game = Game(2)
    game.state.roll = tuple(view["roll"])
    game.state.phase = "decide"
    game.state.scores = view["scores"]
    game.state.current = view["human"]
    legal = [a for a, ok in enumerate(view["mask"]) if ok]
    assert legal == game.legal_actions() == [m["action"] for m in view["moves"]]


BAD_GAMES = [  # (body, status, words in the error)
    ({"bots": []}, 422, "2 to 8 players"),
    ({"bots": ["smart"] * 8}, 422, "at most 7"),
    ({"bots": ["nobody"]}, 422, "unknown bot 'nobody'"),
    ({"bots": ["checkpoints/ppo-2p/model.zip"]}, 422, "unknown bot"),  # never a path
    ({"bots": ["smart"], "seat": 2}, 422, "seat must be 0..1"),
    ({"bots": ["smart"], "seat": -1}, 422, "seat"),
    ({"bots": ["smart"], "hold": "some"}, 422, "hold"),
    ({"bots": ["smart"], "cheat": True}, 422, "cheat"),
    ({"bots": "smart"}, 422, "bots"),
    ({"bots": [3]}, 422, "bots.0"),
    ({"bots": ["smart"], "seed": -1}, 422, "seed"),
    ({"bots": ["smart"], "seat": "0"}, 422, "seat"),
    ({"bots": ["planner-2p"], "hold": "all"}, 422, "planner-2p values games under"),
    ({"bots": ["ppo-2p"] * 3}, 422, "ppo-2p: "),  # a 2-player agent at a table of 4
    ([], 422, "object"),
]


@pytest.mark.parametrize(("body", "status", "words"), BAD_GAMES)
def test_a_bad_new_game_is_refused_in_one_line(tmp_path, body, status, words):
    c = client(tmp_path)
    r = c.post("/api/games", json=body)
    assert r.status_code == status
    error = r.json()["error"]
    assert words in error and "\n" not in error
    assert not list(tmp_path.glob("*.json"))  # nothing stored


def test_malformed_and_oversized_bodies(tmp_path):
    c = client(tmp_path, max_body=1000)
    r = c.post("/api/games", content=b"{not json", headers={"Content-Type": "application/json"})
    assert (r.status_code, r.json()["error"]) == (422, "the request body is not valid JSON")
    r = c.post("/api/games")
    assert r.status_code == 422 and r.json()["error"] == "a JSON request body is required"
    big = json.dumps({"bots": ["smart"], "pad": "x" * 2000})
    r = c.post("/api/games", content=big, headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and "over 1000 bytes" in r.json()["error"]

    def chunks():  # no Content-Length: the limit still holds
        yield b'{"bots": ["smart"], "pad": "'
        for _ in range(20):
            yield b"x" * 100
        yield b'"}'

    r = c.post("/api/games", content=chunks(), headers={"Content-Type": "application/json"})
    assert r.status_code == 413


BAD_MOVES = [  # (body, status, words); "at" is the view's unless the row gives one
    ({"action": 64}, 422, "action"),
    ({"action": -1}, 422, "action"),
    ({"action": "1"}, 422, "action"),
    ({"action": True}, 422, "action"),
    ({"action": 1.0}, 422, "action"),
    ({"action": None}, 422, "action"),
    ({}, 422, "action: Field required"),
    ({"action": 1, "also": 2}, 422, "also"),
    ({"action": 0}, 400, "illegal action"),  # holds nothing (R5)
    ({"action": 1, "at": -1}, 422, "at"),
    ({"action": 1, "at": "3"}, 422, "at"),
    ({"action": 1, "at": None}, 422, "at"),
    ({"action": 0, "at": 0}, 409, "a repeated or late request"),  # issue 28 item 4
]


@pytest.mark.parametrize(("body", "status", "words"), BAD_MOVES)
def test_a_bad_move_is_refused_and_changes_nothing(tmp_path, body, status, words):
    c = client(tmp_path)
    view = play_on(c, new_game(c, seed=2), decisions=0)
    assert view["status"] == "you"
    gid = view["id"]
    saved = (tmp_path / f"{gid}.json").read_bytes()
    r = c.post(f"/api/games/{gid}/move", json={"at": view["at"], **body})
    assert r.status_code == status and words in r.json()["error"]
    assert "\n" not in r.json()["error"]
    assert c.get(f"/api/games/{gid}").json() == {**view, "events": []}
    assert (tmp_path / f"{gid}.json").read_bytes() == saved


def test_an_illegal_hold_names_the_legal_actions(tmp_path):
    c = client(tmp_path)
    view = play_on(c, new_game(c, seed=2), decisions=0)
    illegal = next(a for a, ok in enumerate(view["mask"]) if not ok and a)
    r = move(c, view, illegal)
    assert r.status_code == 400 and "legal:" in r.json()["error"]


def test_requests_out_of_turn_and_unknown_games(tmp_path):
    c = client(tmp_path)
    view = new_game(c, seed=4)
    gid = view["id"]
    assert view["status"] == "wait"
    r = move(c, view, 1)
    assert (r.status_code, r.json()["error"]) == (409, "it is not your move")
    assert c.get(f"/api/games/{gid}/hint").status_code == 409
    view = play_on(c, view, decisions=0)
    r = c.post(f"/api/games/{gid}/step", json={"steps": 1})
    assert (r.status_code, r.json()["error"]) == (409, "it is your move")
    for steps in (0, 10_001, "1"):
        r = c.post(f"/api/games/{gid}/step", json={"steps": steps})
        assert r.status_code == 422 and "steps" in r.json()["error"]
    assert c.post(f"/api/games/{gid}/rematch").status_code == 409
    for method, path in [
        ("GET", ""),
        ("GET", "/hint"),
        ("GET", "/replay"),
        ("POST", "/step"),
        ("POST", "/rematch"),
        ("DELETE", ""),
    ]:
        for other in ("nope", gid[:-1] + ("A" if gid[-1] != "A" else "B"), "..%2Fsecrets"):
            r = c.request(method, f"/api/games/{other}{path}")
            assert r.status_code == 404 and r.json()["error"] in ("no such game", "Not Found")
    r = c.post("/api/games/nope/move", json={"action": 1, "at": 0})
    assert r.status_code == 404
    assert c.get("/api/nothing").status_code == 404
    assert len(gid) >= 40  # 256 random bits


def test_a_finished_game_refuses_moves_and_offers_a_rematch(tmp_path):
    c = client(tmp_path)
    view = play_on(c, new_game(c, bots=["threshold:350", "random"], seat=2, seed=6))
    gid = view["id"]
    for path, body in [("move", {"action": 1, "at": view["at"]}), ("step", {"steps": 1})]:
        r = c.post(f"/api/games/{gid}/{path}", json=body)
        assert (r.status_code, r.json()["error"]) == (409, "the game is over")
    again = c.post(f"/api/games/{gid}/rematch")
    assert again.status_code == 201
    assert again.json()["bots"] == view["bots"] and again.json()["id"] != gid
    assert again.json()["rules"] == view["rules"]


def test_a_game_resumes_after_a_restart_exactly(tmp_path):
    # The same seed played straight through, and with the server restarted twice.
    c = client(tmp_path / "a")
    straight = play_on(c, new_game(c, seed=11))
    folder = tmp_path / "b"
    c = client(folder)
    view = play_on(c, new_game(c, seed=11), decisions=3)
    for _ in range(2):
        c = restart(c)  # a new app over the same data folder
        assert c.get("/api/problems").json() == {"problems": []}
        resumed = c.get(f"/api/games/{view['id']}").json()
        assert resumed == {**view, "events": []}
        view = play_on(c, resumed, decisions=3)
    view = play_on(c, view)
    assert view["scores"] == straight["scores"] and view["turn"] == straight["turn"]
    assert view["log"] == straight["log"]  # the same dice and bot decisions throughout


def corrupt_saves(folder, good: dict) -> dict:
    """Damaged copies of the save `good`, by file name."""
    bad = {}

    def edited(change):
        data = json.loads(json.dumps(good))
        change(data)
        return json.dumps(data)

    gid = good["id"]
    variants = {
        "not json": "{oops",
        "not an object": "[1, 2]",
        "another format": json.dumps({"format": "something else"}),
        "score edited": edited(lambda d: d["game"]["state"]["scores"].__setitem__(1, 900)),
        "log edited": edited(lambda d: d["log"][0].__setitem__("roll", [1, 1, 1, 1, 1])),
        "unknown bot": edited(lambda d: d["bots"].__setitem__(1, "checkpoints/x.zip")),
        "bad rng": edited(lambda d: d["bot_rng"].__setitem__("state", 3)),
        "extra field": edited(lambda d: d.__setitem__("admin", True)),
        "wrong id": edited(lambda d: None),
    }
    for i, (what, text) in enumerate(variants.items()):
        name = f"{gid[:-2]}{i:02d}" if what != "wrong id" else "A" * 43
        if what != "wrong id":
            text = text.replace(gid, name)
        (folder / f"{name}.json").write_text(text)
        bad[f"{name}.json"] = what
    (folder / "binary.json").write_bytes(b"\xff\xfe\x00")
    bad["binary.json"] = "binary"
    return bad


def test_corrupt_saves_are_reported_and_skipped(tmp_path, caplog):
    c = client(tmp_path)
    view = play_on(c, new_game(c, seed=9), decisions=2)
    good = json.loads((tmp_path / f"{view['id']}.json").read_text())
    bad = corrupt_saves(tmp_path, good)
    c = restart(c)
    problems = c.get("/api/problems").json()["problems"]
    assert sorted(p["file"] for p in problems) == sorted(bad)
    assert all(p["error"] and "\n" not in p["error"] for p in problems)
    by_file = {p["file"]: p["error"] for p in problems}
    why = {what: by_file[name] for name, what in bad.items()}
    assert "does not lead to its game" in why["score edited"]
    assert why["log edited"].startswith("log event ")
    assert "not offered" in why["unknown bot"]
    assert "its id is not its file name" in why["wrong id"]
    assert "unknown field 'admin'" in why["extra field"]
    assert "skipped saved game" in caplog.text
    assert c.get(f"/api/games/{view['id']}").json()["scores"] == view["scores"]  # good one
    assert play_on(c, c.get(f"/api/games/{view['id']}").json())["status"] == "over"


def test_a_failed_save_leaves_the_game_unchanged(tmp_path, monkeypatch):
    c = client(tmp_path)
    app = c.app
    view = play_on(c, new_game(c, seed=2), decisions=0)

    def broken(web):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(app.state.store, "save", broken)
    r = move(c, view, greedy(view))
    assert r.status_code == 503 and "No space left" in r.json()["error"]
    assert c.get(f"/api/games/{view['id']}").json() == {**view, "events": []}


def test_hints_exact_for_two_players(tmp_path):
    c = client(tmp_path)
    view = play_on(c, new_game(c, seed=2), decisions=0)
    assert view["hint"] == "exact"
    h = c.get(f"/api/games/{view['id']}/hint").json()
    assert h["available"] and h["exact"] and h["source"] == "optimal"
    assert view["mask"][h["action"]] and sum(h["chances"]) == pytest.approx(1)
    assert h["marked"] == [i for i in range(5) if h["action"] >> i & 1]
    assert move(c, view, h["action"]).status_code == 200


def test_hints_estimated_for_more_players_or_unavailable(tmp_path):
    # A planner "trained at 3 and 4 players" (planner-2p's net: the plumbing is tested).
    nets = tmp_path / "nets" / "multi"
    nets.mkdir(parents=True)
    shutil.copy(ROOT / "checkpoints" / "planner-2p" / "value_net.npz", nets)
    (nets / "config.json").write_text(json.dumps({"players": [3, 4]}))
    c = client(tmp_path / "data", planners=nets.parent)
    view = play_on(c, new_game(c, bots=["smart", "turn-ev"], seed=2), decisions=0)
    assert view["hint"] == "estimate"
    h = c.get(f"/api/games/{view['id']}/hint").json()
    assert h["available"] and not h["exact"] and "estimate" in h["note"]
    assert len(h["chances"]) == 3 and sum(h["chances"]) == pytest.approx(1)
    assert h["source"] == "multi" and view["mask"][h["action"]]
    view = play_on(c, new_game(c, bots=["smart", "turn-ev"], hold="all", seed=2), decisions=0)
    assert view["hint"] is None
    h = c.get(f"/api/games/{view['id']}/hint").json()
    assert not h["available"] and "no shipped planner" in h["note"]


def test_the_page_and_the_bot_list(tmp_path):
    c = client(tmp_path)
    page = c.get("/")
    assert page.status_code == 200 and '<script src="/static/app.js">' in page.text
    assert c.get("/static/app.js").status_code == 200
    keys = [b["key"] for b in c.get("/api/bots").json()["bots"]]
    assert {"smart", "optimal", "planner-2p", "ppo-2p", "ppo-4p"} <= set(keys)
    assert not any("/" in k for k in keys)  # keys, never paths


def test_hints_exact_at_a_table_whose_best_response_was_computed(tmp_path):
    """A table of bots whose best response is cached (agents.best_response) gets exact
    hints: the move that wins most often against these bots, every seat's chances."""
    from fivethousand_rl.agents import make_policy
    from fivethousand_rl.agents.best_response import best_response
    from fivethousand_rl.envs.rules import Rules

    rules = Rules(target=800, entry=300)
    best_response(("threshold:350", "turn-ev"), rules, make_policy, show_progress=False)
    c = client(tmp_path)
    body = {"bots": ["threshold:350", "turn-ev"], "seat": 0, "seed": 2, "target": 800}
    r = c.post("/api/games", json={**body, "entry": 300})
    assert r.status_code == 201, r.text
    view = play_on(c, r.json(), decisions=0)
    assert view["hint"] == "exact"
    h = c.get(f"/api/games/{view['id']}/hint").json()
    assert h["available"] and h["exact"] and "best response" in h["note"]
    assert h["source"] == "best-response:threshold:350,turn-ev"
    assert len(h["chances"]) == 3 and sum(h["chances"]) == pytest.approx(1)
    assert view["mask"][h["action"]] and move(c, view, h["action"]).status_code == 200
