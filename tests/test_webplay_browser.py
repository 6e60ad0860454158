"""The web page in a real browser: Debian's Chromium driven by Playwright, against the
app served by uvicorn in a thread. A whole game played by clicking (with a hint, an
illegal hold, a reload mid-game, a repeated move refused), the new-game form (abandoning
the game left), the replay, a phone-sized screen and a game under house rules chosen in
the panel (played to the end by the hints); all under the server's
Content-Security-Policy, which the page must not violate.

Screenshots go to $WEBPLAY_SCREENSHOTS if set (``WEBPLAY_SCREENSHOTS=docs/screenshots``
refreshes the README's picture), else to the test's temporary folder.
"""

import contextlib
import json
import os
import shutil
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the web app needs fastapi (dev extras)")
pytest.importorskip("uvicorn", reason="the web app needs uvicorn")
pytest.importorskip("playwright", reason="the browser tests need playwright (dev extras)")

import uvicorn  # noqa: E402
from playwright.sync_api import expect, sync_playwright  # noqa: E402

from fivethousand_rl.webplay.app import create_app  # noqa: E402

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH (as root: apt-get install -y chromium)"
)
PHONE = {"width": 390, "height": 844}
SEED = 4  # the dice of the clicked game (its rolls include an illegal partial hold)


@contextlib.contextmanager
def serving(app) -> Iterator[str]:
    """`app` served by uvicorn in a thread on a loopback port: its base URL, until the
    block ends."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(10)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serving(create_app(tmp_path_factory.mktemp("webdata"))) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = Path(os.environ.get("WEBPLAY_SCREENSHOTS") or tmp_path_factory.mktemp("shots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def api(base: str, path: str, body: dict | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        base + path, data=data, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


def http_status(base: str, path: str) -> int:
    """The HTTP status of GET `path`."""
    try:
        with urllib.request.urlopen(base + path) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def new_page(browser, viewport=None):
    """A page whose script errors and Content-Security-Policy violations are collected
    in ``page.errors`` (issue 28 item 6: the page works under the CSP)."""
    page = browser.new_page(viewport=viewport or {"width": 1000, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on(
        "console",
        lambda m: errors.append(m.text) if "Content Security Policy" in m.text else None,
    )
    page.errors = errors
    return page


def settle(page) -> str:
    """Wait until the page waits for the human or shows the end; the status."""
    page.wait_for_function(
        "() => view && !busy && (view.status === 'you' || view.status === 'over')",
        timeout=20_000,
    )
    return page.evaluate("view.status")


def scoreboard(page) -> list[str]:
    return page.locator("#scoreboard tr").all_inner_texts()


def faces(page) -> list[str]:
    return [d.get_attribute("data-face") for d in page.locator("#dice .die").all()]


def try_partial_hold(page) -> bool:
    """If the roll has three of a face that scores only as a triple, select one of them:
    the page must refuse it (R2, R5). True if it could be tried."""
    roll = page.evaluate("view.roll")
    face = next((f for f in (2, 3, 4, 6) if roll.count(f) == 3), None)
    if face is None:
        return False
    page.locator("#dice .die").nth(roll.index(face)).click()
    expect(page.locator("#roll-btn")).to_be_disabled()
    expect(page.locator("#bank-btn")).to_be_disabled()
    expect(page.locator("#move-note")).to_contain_text("not allowed")
    page.keyboard.press(str(roll.index(face) + 1))  # release it again (key 1-5)
    return True


def test_a_whole_game_by_clicking(server, browser, shots):
    game = api(server, "/api/games", {"bots": ["planner-2p"], "seed": SEED})
    page = new_page(browser)
    answer = page.goto(f"{server}/?delay=0#game={game['id']}")
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
    decisions = 0
    hinted = reloaded = partial = disabled_die = forged = repeated = False
    while settle(page) == "you":
        decisions += 1
        if decisions == 2:  # a hint: best move and win probability (exact, 2 players)
            page.click("#hint-btn")
            # The first hint may solve the 2-player game (seconds, once per cache).
            expect(page.locator("#hint-text")).to_contain_text(
                "Your win probability", timeout=60_000
            )
            expect(page.locator("#hint-note")).to_contain_text("exact")
            assert page.evaluate("parseFloat(getComputedStyle($('hint-bar')).width)") > 0
            page.screenshot(path=str(shots / "webplay.png"))
            hinted = True
            page.keyboard.press("b" if "and bank" in page.inner_text("#hint-text") else "r")
            continue
        if decisions == 4:  # reload mid-game: the same position comes back
            before = (scoreboard(page), faces(page), page.inner_text("#turn-info"))
            page.reload()
            settle(page)
            assert (scoreboard(page), faces(page), page.inner_text("#turn-info")) == before
            reloaded = True
        if not forged:  # a forged illegal move: the API refuses it, nothing changes
            roll = page.evaluate("view.roll")
            status = page.evaluate(
                """async () => (await fetch(`/api/games/${view.id}/move`, {method: 'POST',
                   headers: {'Content-Type': 'application/json'},
                   body: JSON.stringify({action: 0, at: view.at})})).status"""
            )
            assert status == 400
            assert api(server, f"/api/games/{game['id']}")["roll"] == roll
            forged = True
        partial = try_partial_hold(page) or partial
        dead = page.locator("#dice button.die[disabled]")
        if dead.count():  # a die that does not score can't be held
            dead.first.click(force=True)
            assert "selected" not in (dead.first.get_attribute("class") or "")
            disabled_die = True
        # Hold every scoring die (always legal), then bank if allowed, else roll on.
        for die in page.locator("#dice button.die:not([disabled])").all():
            if "selected" not in (die.get_attribute("class") or ""):
                die.click()
        button = "#bank-btn" if page.locator("#bank-btn").is_enabled() else "#roll-btn"
        if repeated:
            page.click(button)
            continue
        # Issue 28 item 4: the move names the position it answers, so the same request
        # sent again (a double click, a retry) is refused and plays nothing.
        at = page.evaluate("view.at")
        with page.expect_request(lambda r: r.url.endswith("/move")) as sent:
            page.click(button)
        body = sent.value.post_data_json
        assert body["at"] == at
        settle(page)
        before = api(server, f"/api/games/{game['id']}")
        again = page.evaluate(
            """async (body) => (await fetch(`/api/games/${view.id}/move`, {method: 'POST',
               headers: {'Content-Type': 'application/json'},
               body: JSON.stringify(body)})).status""",
            body,
        )
        assert again == 409 and api(server, f"/api/games/{game['id']}")["at"] == before["at"]
        repeated = True
    assert hinted and reloaded and forged and disabled_die and repeated
    assert partial, "this seed's game should offer a partial triple to try"
    winner = page.evaluate("view.winner")
    expect(page.locator("#over")).to_be_visible()
    expect(page.locator("#over-text")).to_contain_text("won" if winner else "You won")
    assert page.locator("#log li").count() > 10
    page.screenshot(path=str(shots / "webplay-over.png"), full_page=True)

    # The replay, step by step: by buttons and arrow keys.
    page.click("#replay-btn")
    expect(page.locator("#replay")).to_be_visible()
    expect(page.locator("#replay-text")).to_have_text("the game starts")
    page.click("#rp-next")
    first = page.inner_text("#replay-text")
    assert "rolled" in first
    page.keyboard.press("ArrowRight")
    assert page.inner_text("#replay-text") != first or "bust" in first
    page.click("#rp-last")
    expect(page.locator("#replay-text")).to_contain_text("won")
    page.keyboard.press("ArrowLeft")
    page.screenshot(path=str(shots / "webplay-replay.png"))
    page.click("#rp-back")
    expect(page.locator("#over")).to_be_visible()

    page.click("#rematch-btn")  # a new game, the same table
    page.wait_for_function(f"() => view && view.id !== '{game['id']}'")
    assert page.evaluate("view.bots") == [None, "planner-2p"]
    assert not page.errors


def test_the_new_game_form(server, browser):
    left = api(server, "/api/games", {"bots": ["smart"], "seed": 2})  # a game in progress
    page = new_page(browser)
    page.goto(f"{server}/?delay=0#game={left['id']}")
    settle(page)
    page.keyboard.press("n")
    expect(page.locator("#setup")).to_be_visible()
    expect(page.locator("#abandon-note")).to_be_visible()
    page.select_option("#opponents select >> nth=0", "planner-2p")
    page.check("input[name=hold][value=all]")
    page.click("#start")  # planner-2p values only the free hold rule: refused in one line
    expect(page.locator("#error")).to_contain_text("planner-2p values games under")
    assert http_status(server, f"/api/games/{left['id']}") == 200  # a refused start loses nothing
    page.check("input[name=hold][value=free]")
    page.click("#add-bot")
    page.select_option("#opponents select >> nth=1", "turn-ev")
    page.select_option("#seat", value="2")
    page.click("#start")
    page.wait_for_function("left => view.id !== left", arg=left["id"])
    status = settle(page)
    rows = scoreboard(page)
    assert len(rows) == 3 and "you" in rows[2].split()
    assert page.evaluate("view.bots") == ["planner-2p", "turn-ev", None]
    if status == "you":  # Roll needs a hold (one chosen for you when it is the only one)
        assert page.locator("#roll-btn").is_disabled() == page.evaluate("selected.size === 0")
    # Issue 28 item 2: New game abandoned the unfinished game it left (its save deleted).
    deadline = time.monotonic() + 10  # the page does not wait for that answer
    while http_status(server, f"/api/games/{left['id']}") != 404:
        assert time.monotonic() < deadline, "the game left was not abandoned"
        time.sleep(0.05)
    assert not page.errors


def test_a_phone_sized_screen(server, browser, shots):
    game = api(server, "/api/games", {"bots": ["smart", "turn-ev"], "seed": 3})
    page = new_page(browser, PHONE)
    page.goto(f"{server}/?delay=0#game={game['id']}")
    settle(page)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the page is {width}px wide on a {PHONE['width']}px screen"
    for button in ("#roll-btn", "#bank-btn", "#hint-btn", "#new-btn"):
        box = page.locator(button).bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], button
        assert box["height"] >= 40, f"{button} is too small to tap"
    for die in page.locator("#dice .die").all():
        box = die.bounding_box()
        assert box["x"] + box["width"] <= PHONE["width"]
    page.screenshot(path=str(shots / "webplay-phone.png"), full_page=True)
    assert not page.errors


def test_a_house_rules_game_with_hints(server, browser):
    """Issue 31 item 2: the house-rules panel (V2 no bumps, V3 overshoot lost, V5 a target
    of 1000), a bot that cannot play them refused, a game played to the end following the
    exact hints, the game's rules line during play and in the replay, and the panel
    remembering the rules for the next game."""
    page = new_page(browser)
    page.goto(f"{server}/?delay=0")
    expect(page.locator("#setup")).to_be_visible()
    expect(page.locator("#rule-target")).to_have_value("5000")  # the seeds' rules
    expect(page.locator("#rule-entry")).to_have_value("500")
    expect(page.locator("#rule-bump")).to_be_checked()
    expect(page.locator("#rule-fifty")).to_be_checked()
    expect(page.locator("#house-rules .house")).to_have_count(0)
    page.fill("#rule-target", "1000")
    page.uncheck("#rule-bump")
    page.check("input[name=overshoot][value=lost]")
    expect(page.locator("#house-rules .house")).to_have_count(3)  # the changed ones marked
    page.select_option("#opponents select >> nth=0", "planner-2p")
    page.click("#start")  # trained under the seeds' rules: refused in one line
    expect(page.locator("#error")).to_contain_text("planner-2p values games under")
    expect(page.locator("#error")).not_to_contain_text("planner-2p: planner-2p")  # issue 43
    page.select_option("#opponents select >> nth=0", "optimal")
    page.click("#start")
    page.wait_for_function("() => view !== null")
    house = ["target 1000", "no bumps", "overshoot lost"]
    expect(page.locator("#rules-line")).to_contain_text("entry 500")
    assert page.locator("#rules-line .rule.house").all_inner_texts() == house
    decisions = 0
    while settle(page) == "you":
        decisions += 1
        page.click("#hint-btn")
        expect(page.locator("#hint-text")).to_contain_text("Your win probability")
        expect(page.locator("#hint-note")).to_contain_text("exact")
        page.keyboard.press("b" if "and bank" in page.inner_text("#hint-text") else "r")
    assert decisions, "the human never decided"
    expect(page.locator("#over")).to_be_visible()
    assert "1000" in scoreboard(page)[page.evaluate("view.winner")].split()  # V5
    assert page.locator("#rules-line .rule.house").all_inner_texts() == house
    page.click("#replay-btn")
    expect(page.locator("#replay")).to_be_visible()
    assert page.locator("#replay-rules .rule.house").all_inner_texts() == house
    page.click("#rp-back")
    page.click("#again-btn")  # the next game starts from the rules last played
    expect(page.locator("#rule-target")).to_have_value("1000")
    expect(page.locator("#house-rules .house")).to_have_count(3)
    page.click("#rules-reset")
    expect(page.locator("#rule-target")).to_have_value("5000")
    expect(page.locator("#house-rules .house")).to_have_count(0)
    assert not page.errors
