"""Issue 54 items 4 and 6: every web game ends, and its end is kept.

A bot that fails mid-game (its decision raises, is illegal, or its network starts
giving NaN) ends its game without a winner, with a clear, translated reason: saved,
shown, replayable and read back after a restart. Before, the step answered 500 and every
later step did too: the game was stuck for good.

Every game is bounded (R11): cut off without a winner after MAX_TURNS turns (or
MAX_STEPS steps), so that pass and play cannot grow a save past MAX_SAVE_BYTES, which a
restart would skip. Before, web games had no bound."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi", reason="the web app needs fastapi (dev extras)")

from fastapi.testclient import TestClient  # noqa: E402

from fivethousand_rl.agents.exported import check_onnx_weights  # noqa: E402
from fivethousand_rl.envs.game import Game  # noqa: E402
from fivethousand_rl.envs.rules import DEFAULT_RULES  # noqa: E402
from fivethousand_rl.webplay import games  # noqa: E402
from fivethousand_rl.webplay.app import create_app  # noqa: E402
from fivethousand_rl.webplay.bots import Bot, Catalogue  # noqa: E402
from fivethousand_rl.webplay.games import MAX_SAVE_BYTES, MAX_STEPS, MAX_TURNS, WebGame  # noqa: E402
from tests.test_webplay_api import client, restart  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHIPPED_ONNX = ROOT / "checkpoints" / "ppo-2p" / "model.onnx"


def fewest_dice(view: dict) -> int:
    """A person who never banks and holds as little as they may: the longest turns."""
    rolls = [m for m in view["moves"] if not m["banks"]] or view["moves"]
    return min(rolls, key=lambda m: bin(m["action"] & 63).count("1"))["action"]


def play_until_over(c: TestClient, view: dict, limit: int = 2000) -> dict:
    """Play `view`'s game on through the API (the person never banks) until it is over."""
    for _ in range(limit):
        if view["status"] == "over":
            return view
        if view["status"] == "wait":
            r = c.post(f"/api/games/{view['id']}/step", json={"steps": 1000, "at": view["at"]})
        else:
            body = {"action": fewest_dice(view), "at": view["at"]}
            r = c.post(f"/api/games/{view['id']}/move", json=body)
        assert r.status_code == 200, r.text
        view = r.json()
    raise AssertionError("the game did not end")


# ------------------------------------------------------------------ a bot that fails
class Failing:
    """A bot that plays its first `good` decisions well, then fails as `how` says."""

    name = "failing"

    def __init__(self, how: str, good: int = 3) -> None:
        from fivethousand_rl.agents import make_policy

        self.how, self.good, self.smart = how, good, make_policy("smart")

    def check_game(self, n_players, rules) -> None:
        pass

    def prepare(self, rules) -> None:
        pass

    def act(self, game: Game, rng: np.random.Generator) -> int:
        if self.good:
            self.good -= 1
            return self.smart.act(game, rng)
        if self.how == "raises":
            raise RuntimeError("the model's file\ncould not be read")
        return 0  # holds nothing: never legal (R5)


def catalogue_with(tmp_path: Path, key: str, policy: object) -> Catalogue:
    catalogue = Catalogue(tmp_path / "server")
    catalogue.bots[key] = Bot(key, key, "scripted", "a test's bot")
    catalogue.once(("policy", key), lambda: policy)
    return catalogue


@pytest.mark.parametrize(
    ("how", "reason"),
    [
        ("raises", "the model's file could not be read"),
        ("illegal", "illegal action 0 (hold [] and roll) for roll"),
    ],
)
def test_a_bot_that_fails_mid_game_ends_it_saved_shown_and_replayable(
    tmp_path, caplog, how, reason
):
    catalogue = catalogue_with(tmp_path, "failing", Failing(how))
    c = client(tmp_path / "data", catalogue=catalogue)
    view = c.post("/api/games", json={"bots": ["failing", "smart"], "seed": 4}).json()
    gid = view["id"]
    with caplog.at_level(logging.WARNING, logger="webplay"):
        view = play_until_over(c, view)
    assert view["status"] == "over" and view["winner"] is None and view["moves"] == []
    assert view["end"].startswith(f"failing failed: {reason}")
    assert view["end"].endswith("; the game ended without a winner")
    [line] = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert gid in line and "bot failing (seat 1)" in line and "\n" not in line
    # Not stuck: a further step is refused as for any finished game, not a 500.
    r = c.post(f"/api/games/{gid}/step", json={"steps": 1})
    assert r.status_code == 409 and r.json()["error"] == "the game is over"
    # In every language, by the seat's name.
    fr = c.get(f"/api/games/{gid}", headers={"X-Language": "fr"}).json()["end"]
    assert fr.startswith(f"failing a échoué : {reason}") and "sans gagnant" in fr
    # The replay ends with why.
    frames = c.get(f"/api/games/{gid}/replay").json()["frames"]
    assert frames[-1]["kind"] == "end" and frames[-1]["text"] == view["end"]
    assert frames[-1]["scores"] == view["scores"] and frames[-2]["kind"] != "end"
    # Saved: read back after a restart, even by a server that no longer has the bot
    # (a finished game's bots never play again); its rematch is a new game.
    saved = json.loads((tmp_path / "data" / f"{gid}.json").read_text())
    assert saved["failure"]["seat"] == 1 and saved["failure"]["reason"].startswith(reason)
    c = restart(c, catalogue=catalogue)
    assert c.get(f"/api/games/{gid}").json() == view | {"events": []}
    rematch = c.post(f"/api/games/{gid}/rematch")
    assert rematch.status_code == 201
    c = restart(c, catalogue=Catalogue(tmp_path / "server"))
    # Only the rematch, which goes on, needs its bot.
    assert [p["file"] for p in c.app.state.store.problems] == [f"{rematch.json()['id']}.json"]
    assert c.get(f"/api/games/{gid}").json()["end"] == view["end"]
    c.app.state.store.close()


def test_a_save_without_failure_still_loads_and_a_forged_one_is_refused(tmp_path):
    catalogue = Catalogue(tmp_path / "server")
    web = WebGame.new(["smart"], 0, DEFAULT_RULES, seed=1)
    web.advance(catalogue, 100)
    data = web.to_dict()
    older = {k: v for k, v in data.items() if k != "failure"}  # saved before this field
    assert WebGame.from_dict(older, catalogue).to_dict() == data
    for failure, why in [
        ({"seat": 0, "reason": "x"}, "failure's seat must be a bot's seat"),
        ({"seat": 1, "reason": "x" * 201}, "failure's reason must be 1 to 200 characters"),
        ({"seat": 1}, "failure must be null or an object of seat and reason"),
    ]:
        with pytest.raises(ValueError, match=f"^{why}$"):
            WebGame.from_dict(data | {"failure": failure}, catalogue)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # the NaN
def test_an_exported_bot_whose_network_starts_giving_nan_ends_its_game(tmp_path, caplog):
    """Finite weights (the start-up check passes) so large that some positions' inputs
    overflow its first layer to NaN: the bot plays a while, then fails."""
    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper

    model = onnx.load(str(SHIPPED_ONNX))
    [first] = [t for t in model.graph.initializer if t.name == "state_w0"]
    first.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(first) * 1e37, first.name))
    bots = tmp_path / "server" / "bots"
    bots.mkdir(parents=True)
    onnx.save(model, str(bots / "huge.onnx"))
    shutil.copy(SHIPPED_ONNX.with_suffix(".json"), bots / "huge.json")
    check_onnx_weights(bots / "huge.onnx")  # all finite
    c = client(tmp_path / "data", catalogue=Catalogue(tmp_path / "server"))
    view = c.post("/api/games", json={"bots": ["huge.onnx"], "seat": 1, "seed": 0}).json()
    with caplog.at_level(logging.WARNING, logger="webplay"):
        view = play_until_over(c, view)
    assert view["status"] == "over" and view["winner"] is None and view["turn"] > 2
    assert view["end"].startswith("huge.onnx failed: the network's outputs are not finite")
    assert any("huge.onnx" in r.getMessage() for r in caplog.records)
    c = restart(c, catalogue=Catalogue(tmp_path / "server"))
    assert c.get(f"/api/games/{view['id']}").json()["end"] == view["end"]
    c.app.state.store.close()


# ------------------------------------------------------------------ bounded games
def near_the_limit(turns: int, catalogue: Catalogue) -> WebGame:
    """A pass-and-play game of two people who never bank and hold as few dice as they
    may (the longest turns they can make), played to `turns` turns."""
    web = WebGame.new([], 0, DEFAULT_RULES, seed=7, humans=[0, 1], people=["Ann", "Bo"])
    while web.game.state.turns < turns:
        if web.to_play() is None:
            web.advance(catalogue, 10**6)
            continue
        moves = [m for m in web.game.moves() if not m.banks]
        web.act(min(moves, key=lambda m: bin(m.action & 63).count("1")).action)
    return web


def test_pass_and_play_is_cut_off_at_the_turn_limit_and_its_save_reloads(tmp_path):
    """R11: a game that reaches MAX_TURNS turns ends without a winner, saying so."""
    catalogue = Catalogue(tmp_path / "server")
    web = near_the_limit(MAX_TURNS - 2, catalogue)
    data = tmp_path / "data"
    data.mkdir()
    (data / f"{web.id}.json").write_text(json.dumps(web.to_dict()))
    c = client(data, catalogue=catalogue)
    view = play_until_over(c, c.get(f"/api/games/{web.id}").json())
    assert view["status"] == "over" and view["winner"] is None and view["turn"] == MAX_TURNS + 1
    end = f"the game was cut off after {MAX_TURNS} turns, the longest a game may last: no one won"
    assert view["end"] == end and view["moves"] == [] and view["to_play"] is None
    r = c.post(f"/api/games/{web.id}/move", json={"action": 1, "at": view["at"]})
    assert r.status_code == 409 and r.json()["error"] == "the game is over"
    hi = c.get(f"/api/games/{web.id}", headers={"X-Language": "hi"}).json()["end"]
    assert f"खेल {MAX_TURNS} बारियों के बाद रोक दिया गया" in hi
    frames = c.get(f"/api/games/{web.id}/replay").json()["frames"]
    assert frames[-1]["kind"] == "end" and frames[-1]["text"] == end
    # The largest save a game can have: far below the size a restart skips.
    size = (data / f"{web.id}.json").stat().st_size
    assert size < MAX_SAVE_BYTES / 10, size
    c = restart(c, catalogue=catalogue)
    assert c.app.state.store.problems == []
    assert c.get(f"/api/games/{web.id}").json()["end"] == end
    c.app.state.store.close()


def test_a_game_is_cut_off_at_the_step_limit_too(tmp_path, monkeypatch):
    """A turn alone has no bound (hot dice): the steps are bounded too, so no save can
    outgrow MAX_SAVE_BYTES, whatever the dice."""
    longest = json.dumps({"roll": [6] * 6, "player": 7}, separators=(",", ":")) + ","
    assert MAX_STEPS * len(longest) < MAX_SAVE_BYTES / 2
    monkeypatch.setattr(games, "MAX_STEPS", 40)
    c = client(tmp_path / "data", catalogue=Catalogue(tmp_path / "server"))
    view = c.post("/api/games", json={"bots": [], "humans": [0, 1], "seed": 3}).json()
    view = play_until_over(c, view)
    assert view["at"] == 40 and view["winner"] is None
    assert view["end"].startswith(f"the game was cut off after {view['turn'] - 1} turn")
    c.app.state.store.close()


# ------------------------------------------------------------------ the page
def test_the_page_shows_why_a_game_ended_without_a_winner(tmp_path):
    """The headline, the end box and the replay's last step say why (a browser)."""
    pytest.importorskip("playwright", reason="the browser tests need playwright (dev extras)")
    if shutil.which("chromium") is None:
        pytest.skip("no chromium on PATH")
    from playwright.sync_api import expect, sync_playwright

    from tests.test_webplay_browser import new_page, serving, settle

    catalogue = catalogue_with(tmp_path, "failing", Failing("raises", good=0))
    app = create_app(tmp_path / "data", catalogue=catalogue)
    with serving(app) as base, sync_playwright() as p:
        game = TestClient(app, base_url="http://localhost").post(
            "/api/games",
            json={"bots": ["failing"], "seat": 1, "seed": 1},  # no bust first
        )
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        page = new_page(browser)
        page.goto(f"{base}/?delay=0#game={game.json()['id']}")
        assert settle(page) == "over"
        end = "failing failed: the model's file could not be read; the game ended without a winner"
        expect(page.locator("#headline")).to_have_text("Game over after 0 turns: no winner.")
        expect(page.locator("#over-text")).to_have_text(end)
        page.click("#replay-btn")
        page.click("#rp-last")
        expect(page.locator("#replay-text")).to_have_text(end)
        assert page.errors == []
        browser.close()
