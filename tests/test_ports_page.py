"""The static page of ports/web (issue 44 item 3): a person plays a whole game against
a bundle's bot in Debian's Chromium (driven by Playwright), the page and the bundle
served as plain static files by http.server, nothing else. Every decision of the bot
is legal and is the Python port's for that state; the page logs no error, shows the
player's language (from the browser's) with no English left, and axe-core finds no
serious or critical accessibility problem. The page's texts are msgids of the project's
catalogues, each in the bundle's messages.json.

Issue 55 items 2 and 5: a runtime bundle (``export --runtime``: no graph, no test
vectors) plays, and the page fetches only what playing needs; served on a loopback
address other than localhost (not a secure context: no crypto.subtle) it checks the
hashes all the same; opened as file://, in a browser too old, with its scripts or a
bundle file missing or damaged, it says why in one line, in the browser's language.

Issue 55 item 1: a bundle of a bot for more than two (ppo-4p) plays at its own table, the
person at seat 0 and the bot at every other seat, each decision from the mover's seat;
the scoreboard shows every seat, whose turn it is and what the engine's banks did to the
others (bumps, gifts, R9); the bundle's vectors replay in both ports."""

from __future__ import annotations

import functools
import json
import re
import shutil
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from fivethousand_rl import export
from fivethousand_rl.agents import exporting
from fivethousand_rl.envs import i18n
from fivethousand_rl.envs.game import DECIDE, GameState
from fivethousand_rl.envs.rules import Rules

pytest.importorskip("playwright", reason="the browser tests need playwright (dev extras)")
from playwright.sync_api import sync_playwright  # noqa: E402

from tests.helpers import load_python_port  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PORTS = ROOT / "ports"
PAGE_SCRIPT = PORTS / "web" / "play.mjs"
AXE = ROOT / "tests" / ".axe" / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH (as root: apt-get install -y chromium)"
)
LOCALES = {"fr": "fr-FR", "ms": "ms-MY", "ru": "ru-RU", "hi": "hi-IN"}
SEED = 3  # the page's dice (?seed=): any seed plays a whole game
# ppo-4p's table: a short game (15 moves of the person's) with a bump shown on the board
# at the person's move and, at the end, the person's overshoot given to a bot seat (R9)
SEED_4P = 531
# What a translated page may show in Latin letters: the bot's name.
NAMES = {"ppo", "policy"}  # the first word of a bundled bot's name (ppo-2p, policy-2p)
NAMES |= {"mit"}  # the licence's name, as SPDX writes it in any language
VISIBLE_TEXT = """() => {
  const bits = [document.title, document.body.innerText];
  for (const el of document.querySelectorAll('[aria-label],[title],[alt]'))
    for (const a of ['aria-label', 'title', 'alt'])
      if (el.getAttribute(a)) bits.push(el.getAttribute(a));
  return bits.join('\\n');
}"""


# ------------------------------------------------------------------ the page's texts
def page_msgids() -> set[str]:
    """The msgids play.mjs passes to _() and ngettext() (the singular of a plural)."""
    source = PAGE_SCRIPT.read_text()
    return set(re.findall(r"""\b(?:_|ngettext)\(\s*"((?:[^"\\]|\\.)*)\"""", source))


def test_the_page_s_texts_are_the_bundle_s_messages_and_the_catalogues():
    listed = {m if isinstance(m, str) else m[0] for m in exporting.PAGE_MESSAGES}
    assert page_msgids() == listed
    template = i18n.TEMPLATE.read_text()
    for m in exporting.PAGE_MESSAGES:
        for msgid in [m] if isinstance(m, str) else m:
            assert f"msgid {json.dumps(msgid, ensure_ascii=False)}" in template or (
                f"msgid_plural {json.dumps(msgid, ensure_ascii=False)}" in template
            ), f"{msgid!r} is not in envs/locale/messages.pot"
    messages = exporting.page_messages()
    assert set(messages["languages"]) == set(i18n.LANGUAGES)
    for lang, own in messages["languages"].items():
        if lang != i18n.SOURCE_LANGUAGE:
            assert set(own["messages"]) == listed, f"{lang} lacks a text of the page"


# ------------------------------------------------------------------ serving
class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # no request lines in the test output
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """ports/web and ports/js as they are laid out in a clone, with the policy-2p bundle
    exported into web/bundle/, where the page looks by default."""
    root = tmp_path_factory.mktemp("site")
    shutil.copytree(PORTS / "web", root / "web", ignore=shutil.ignore_patterns("bundle"))
    shutil.copytree(PORTS / "js", root / "js")
    assert export.main(["policy-2p", "--out", str(root / "web" / "bundle")]) == 0
    assert export.main(["policy-2p", "--out", str(root / "web" / "slim"), "--runtime"]) == 0
    assert export.main(["ppo-4p", "--out", str(root / "web" / "four")]) == 0  # a 4-seat table
    for case in ("missing", "damaged"):  # the runtime bundle, one file missing or changed
        shutil.copytree(root / "web" / "slim", root / "web" / case)
    (root / "web" / "missing" / "turn_ev.f64").unlink()
    weights = root / "web" / "damaged" / "weights.bin"
    data = bytearray(weights.read_bytes())
    data[1000] ^= 1
    weights.write_bytes(bytes(data))
    return root


def serving(folder: Path, host: str = "127.0.0.1"):
    """`folder` served over plain http on `host`; yields the URL of its web/."""
    handler = functools.partial(Quiet, directory=str(folder))
    httpd = ThreadingHTTPServer((host, 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{httpd.server_address[1]}/web/"
    finally:
        httpd.shutdown()
        thread.join(10)


@pytest.fixture(scope="module")
def server(site):
    yield from serving(site)


def lan_address() -> str | None:
    """This machine's own non-loopback IPv4 address (that of its default route; no
    packet is sent), or None. Loopback will not do: Chromium takes all of 127.0.0.0/8,
    not only 127.0.0.1, as a secure context."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))
        except OSError:
            return None
        address = s.getsockname()[0]
    return None if address.startswith("127.") else address


@pytest.fixture(scope="module")
def lan_server(site):
    """The site over plain http on this machine's LAN address: no secure context."""
    address = lan_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address")
    yield from serving(site, address)


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def opened(
    browser, server: str, locale: str = "en-US", delay: int = 0, query: str = "", seed: int = SEED
):
    """A page on the game (its dice seeded, the bot without pauses) and the errors it
    logs, once it waits for the person or shows the end; `query`: more of the URL's."""
    context = browser.new_context(locale=locale, viewport={"width": 900, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{server}index.html?seed={seed}&delay={delay}{query}")
    settle(page)
    return page, errors


def settle(page) -> str:
    page.wait_for_function(
        "() => ['you', 'over', 'error'].includes(document.body.dataset.status)", timeout=30_000
    )
    status = page.evaluate("document.body.dataset.status")
    assert status != "error", page.inner_text("#headline")
    return status


def hold_every_scoring_die(page) -> None:
    """Click each die that may be held and is not yet (the page redraws on each click)."""
    count = page.locator("#dice button.die").count()
    for i in range(count):
        die = page.locator(f'#dice button.die[data-pos="{i}"]')
        if die.is_enabled() and die.get_attribute("aria-pressed") != "true":
            die.click()
            assert die.get_attribute("aria-pressed") == "true"


def play_one_move(page) -> None:
    """The person's move: hold every scoring die, bank when allowed, else roll on."""
    hold_every_scoring_die(page)
    if page.locator("#bank").is_enabled():
        page.click("#bank")
    else:
        assert page.locator("#roll").is_enabled(), page.inner_text("#note")
        page.click("#roll")


def play_to_the_end(page, moves: int = 2000) -> int:
    for n in range(moves):
        if settle(page) == "over":
            return n
        play_one_move(page)
    raise AssertionError("the game did not end")


# ------------------------------------------------------------------ language
def english_words(lang: str) -> set[str]:
    """Words of the page's English texts that `lang`'s translations of them never use."""
    catalogue = exporting.page_messages()["languages"][lang]["messages"]
    english = " ".join(m if isinstance(m, str) else " ".join(m) for m in exporting.PAGE_MESSAGES)
    own = " ".join(v if isinstance(v, str) else " ".join(v.values()) for v in catalogue.values())

    def words(text: str) -> set[str]:
        return {w.lower() for w in re.findall(r"\b[A-Za-z]{3,}\b", re.sub(r"\{\w+\}", "", text))}

    return words(english) - words(own)


def untranslated(page, lang: str) -> list[str]:
    """The English words the page shows in `lang` (in Cyrillic or Devanagari, any Latin
    word but the bot's name)."""
    text = page.evaluate(VISIBLE_TEXT)
    found = set(re.findall(r"\b[A-Za-z][A-Za-z-]{2,}\b", text))
    found = {w for w in found if w.split("-")[0].lower() not in NAMES}
    if lang in ("ru", "hi"):
        return sorted(found)
    return sorted(w for w in found if w.lower() in english_words(lang))


def serious_violations(page) -> list[dict]:
    """axe-core's serious and critical violations on the page as it is."""
    page.evaluate(AXE.read_text())  # not a script tag: the page's CSP allows none inline
    found = page.evaluate(
        """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
            .map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.target.join())}))"""
    )
    return [v for v in found if v["impact"] in ("serious", "critical")]


# ------------------------------------------------------------------ the tests
def check_decisions(decisions: list[dict], bundle: Path) -> None:
    """Each decision of the bot: at a bot's seat (the person's is 0), a legal action, the
    Python port's for that state (seen from the mover's seat)."""
    port = load_python_port().Bundle(bundle)
    rules = Rules()
    for d in decisions:
        state = GameState.from_dict(d["state"], rules)  # a valid state of the engine's
        assert state.phase == DECIDE and state.current != 0
        legal = [a for a, ok in enumerate(port_mask(d["state"], port)) if ok]
        assert d["legal"] == legal and d["action"] in legal, d
        assert port.act(d["state"]) == d["action"], d


def port_mask(state: dict, port) -> list[bool]:
    return load_python_port().legal_mask(state, port.rules).tolist()


@needs_chromium
def test_a_whole_game_in_french_by_clicking(browser, server, site):
    page, errors = opened(browser, server, LOCALES["fr"])
    assert page.evaluate("document.documentElement.lang") == "fr"
    assert untranslated(page, "fr") == [], "the first move"
    if AXE.is_file():
        assert serious_violations(page) == [], "the person's move"
    hold_every_scoring_die(page)
    assert page.inner_text("#note") and untranslated(page, "fr") == [], "a hold chosen"
    moves = play_to_the_end(page)
    assert moves > 0
    state = page.evaluate("fivethousandPage.state")
    assert state["phase"] == "over" and state["scores"][state["winner"]] == 5000
    assert page.locator("#over").is_visible() and page.inner_text("#over")
    assert page.locator("#roll").is_disabled() and page.locator("#bank").is_disabled()
    decisions = page.evaluate("fivethousandPage.decisions")
    assert decisions, "the bot made no decision"
    check_decisions(decisions, site / "web" / "bundle")
    assert page.locator("#log li").count() > len(decisions)
    assert untranslated(page, "fr") == [], "the end"
    if AXE.is_file():
        assert serious_violations(page) == [], "the end"
    assert errors == []
    page.context.close()


@needs_chromium
def test_new_game_and_the_bot_s_turn_step_by_step(browser, server, site):
    """The bot's turn shown a step at a time (here 300 ms a step), the buttons disabled
    meanwhile; New game starts again, the bot first this time."""
    page, errors = opened(browser, server, "en-US", delay=300)
    assert page.evaluate("document.documentElement.lang") == "en"
    assert page.inner_text("#roll") == "Roll" and page.inner_text("#bank") == "Bank"
    page.click("#new-game")
    page.wait_for_function("() => document.body.dataset.status === 'bot'")
    assert page.locator("#roll").is_disabled() and page.locator("#bank").is_disabled()
    assert "is playing" in page.inner_text("#headline")
    page.wait_for_function("() => document.querySelectorAll('#log li').length >= 2")
    settle(page)
    decisions = page.evaluate("fivethousandPage.decisions")
    check_decisions(decisions, site / "web" / "bundle")
    assert errors == []
    page.context.close()


@needs_chromium
@pytest.mark.parametrize("lang", ["ms", "ru", "hi"])
def test_the_page_speaks_the_browser_s_language(browser, server, lang):
    page, errors = opened(browser, server, LOCALES[lang])
    assert page.evaluate("document.documentElement.lang") == lang
    hold_every_scoring_die(page)
    assert untranslated(page, lang) == []
    assert errors == []
    page.context.close()


# ------------------------------------------------------------------ items 2 and 5
def boot_messages() -> dict:
    """The translated error texts boot.js holds (between its BEGIN and END lines)."""
    source = (PORTS / "web" / "boot.js").read_text()
    held = re.search(r"var MESSAGES = (\{.*?\});\n\s*// END MESSAGES", source, re.S)
    return json.loads(held.group(1))


def test_the_page_s_error_texts_are_the_catalogues_in_every_language():
    assert boot_messages() == exporting.page_error_messages(), (
        "ports/web/boot.js's MESSAGES differ from exporting.page_error_messages(): paste its "
        "json.dumps(..., ensure_ascii=False, indent=1) there"
    )
    scripts = (PORTS / "web" / "boot.js").read_text() + PAGE_SCRIPT.read_text()
    for msgid in exporting.PAGE_ERRORS:  # each one shown, as the catalogues spell it
        assert json.dumps(msgid) in scripts, msgid
    for lang, texts in exporting.page_error_messages().items():
        if lang != i18n.SOURCE_LANGUAGE:
            assert all(texts[m] != m for m in exporting.PAGE_ERRORS), f"{lang} lacks one"


def failed(browser, url: str, locale: str = "en-US", init: str | None = None) -> str:
    """The one line a page that cannot play shows at `url` (no game started)."""
    context = browser.new_context(locale=locale)
    if init:
        context.add_init_script(init)
    page = context.new_page()
    page.goto(url)
    page.wait_for_function("() => document.body.dataset.status === 'error'", timeout=30_000)
    text = page.inner_text("#headline")
    assert "\n" not in text and text.strip() == text and text
    assert page.locator("#new-game").is_disabled()
    assert page.get_attribute("#headline", "role") == "alert"
    context.close()
    return text


def fetched_names(page_requests: list[str], bundle: str) -> set[str]:
    return {u.split(f"/{bundle}/")[1] for u in page_requests if f"/{bundle}/" in u}


@needs_chromium
@pytest.mark.parametrize("bundle", ["slim", "bundle"])
def test_the_page_plays_fetching_only_what_playing_needs(browser, server, site, bundle):
    """The runtime bundle plays a whole game (each decision the Python port's on the
    same runtime bundle, which runs the plain network with numpy); from a full bundle
    the page fetches the same files, not the graph or the test vectors."""
    context = browser.new_context(viewport={"width": 900, "height": 900})
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(f"{server}index.html?seed={SEED}&delay=0&bundle={bundle}/")
    assert play_to_the_end(page) > 0
    wanted = {"bundle.json", *exporting.RUNTIME_FILES}
    assert fetched_names(requests, bundle) == wanted
    if bundle == "slim":
        assert {f.name for f in (site / "web" / "slim").iterdir()} == wanted
        decisions = page.evaluate("fivethousandPage.decisions")
        assert decisions
        check_decisions(decisions, site / "web" / "slim")
    context.close()


@needs_chromium
def test_on_a_plain_http_lan_address_the_hashes_are_still_checked(browser, lan_server):
    """Plain http on a LAN address is no secure context: no crypto.subtle there, so the
    page hashes in JavaScript; it plays, and a damaged file is still caught."""
    page, errors = opened(browser, lan_server, query="&bundle=slim/")
    assert page.evaluate("[isSecureContext, typeof crypto.subtle]") == [False, "undefined"]
    assert errors == []
    page.context.close()
    text = failed(browser, f"{lan_server}index.html?bundle=damaged/")
    assert text == exporting.PAGE_ERRORS[3].format(file="weights.bin")


@needs_chromium
@pytest.mark.parametrize(
    ("bundle", "said"),
    [
        ("nowhere", "The bot's file bundle.json is missing: export the bundle again."),
        ("missing", "The bot's file turn_ev.f64 is missing: export the bundle again."),
        (
            "damaged",
            "The bot's file weights.bin is damaged (it does not match bundle.json): export "
            "the bundle again.",
        ),
    ],
)
def test_a_missing_or_damaged_bundle_file_is_said_in_one_line(browser, server, bundle, said):
    assert failed(browser, f"{server}index.html?bundle={bundle}/") == said


@needs_chromium
def test_a_damaged_file_is_said_in_the_browser_s_language(browser, server):
    want = exporting.page_error_messages()["ru"][exporting.PAGE_ERRORS[3]]
    text = failed(browser, f"{server}index.html?bundle=damaged/", LOCALES["ru"])
    assert text == want.replace("{file}", "weights.bin")


@needs_chromium
@pytest.mark.parametrize("locale", ["en-US", LOCALES["fr"]])
def test_opened_as_a_file_the_page_says_how_to_serve_it(browser, site, locale):
    text = failed(browser, (site / "web" / "index.html").as_uri(), locale)
    lang = locale.split("-")[0]
    want = exporting.page_error_messages()[lang][exporting.PAGE_ERRORS[0]]
    values = {
        "command": "python3 -m http.server 8000",
        "folder": str(site),
        "url": "http://localhost:8000/web/index.html",
    }
    assert text == want.format(**values)


@needs_chromium
def test_a_browser_too_old_is_told_so(browser, server):
    text = failed(browser, f"{server}index.html", init="delete globalThis.structuredClone")
    assert text == exporting.PAGE_ERRORS[1]


@needs_chromium
def test_without_its_scripts_the_page_says_so(browser, site, tmp_path):
    shutil.copytree(site / "web", tmp_path / "web", ignore=shutil.ignore_patterns("bundle"))
    served = serving(tmp_path)  # no js/ beside web/: play.mjs cannot import the port
    try:
        assert failed(browser, f"{next(served)}index.html?bundle=slim/") == exporting.PAGE_ERRORS[4]
    finally:
        served.close()


def test_the_plain_sha256_matches_known_vectors(tmp_path):
    """sha256Plain (ports/js, for pages outside a secure context) against hashlib on
    FIPS 180-4's examples and the lengths where the padding takes another block."""
    import hashlib
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("no node on PATH")
    texts = ["", "abc", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"]
    texts += ["a" * n for n in (55, 56, 63, 64, 65, 119, 120, 1_000_000)]
    script = tmp_path / "sha.mjs"
    port = json.dumps((PORTS / "js" / "fivethousand.mjs").as_uri())
    script.write_text(
        f"import {{ sha256Plain }} from {port};\n"
        f"const texts = {json.dumps(texts)};\n"
        "console.log(JSON.stringify(texts.map((t) => sha256Plain(new TextEncoder().encode(t)))));\n"
    )
    done = subprocess.run([node, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [hashlib.sha256(t.encode()).hexdigest() for t in texts]


# ------------------------------------------------------------------ issue 55 item 1
BOARD = """() => [...document.querySelectorAll('#scores li')].map((li) => ({
  seat: Number(li.dataset.seat), name: li.querySelector('.name').textContent,
  score: li.querySelector('.score').textContent, note: li.querySelector('.note').textContent,
  current: li.getAttribute('aria-current') === 'true'}))"""


def marks(events: list[dict], names: list[str]) -> dict[int, str]:
    """What the scoreboard says a seat suffered from another's bank (R9): sent to 0 by a
    bump, or a gift of an overshoot, until that seat's own turn ends."""
    marked: dict[int, str] = {}
    for e in events:
        bank = e["move"]["bank"] if e["kind"] == "moved" else None
        if e.get("bust") or bank:
            marked.pop(e["seat"], None)
        if bank:
            who = names[e["seat"]]
            marked |= {p: f"bumped to 0 by {who}" for p in bank["bumped"]}
            if bank["giftTo"] is not None:
                marked[bank["giftTo"]] = f"gift of {e['move']['total']} from {who}"
    return marked


def check_board(page, names: list[str]) -> list[str]:
    """Every seat on the scoreboard with its score, the mover marked, and the bumps and
    gifts of the game's banks where they fell (those it shows)."""
    state = page.evaluate("fivethousandPage.state")
    events = page.evaluate("fivethousandPage.events")
    board = page.evaluate(BOARD)
    assert [row["seat"] for row in board] == list(range(len(names)))
    assert [row["name"] for row in board] == names
    assert [row["score"] for row in board] == [str(x) for x in state["scores"]]
    moving = state["current"] if state["phase"] != "over" else None
    assert [row["current"] for row in board] == [s == moving for s in range(len(names))]
    marked = marks(events, names)
    for row in board:
        said = row["note"].split(", ")[1:]
        assert said == ([marked[row["seat"]]] if row["seat"] in marked else []), (row, marked)
    return list(marked.values())


@needs_chromium
def test_a_whole_4_player_game_against_three_seats_of_the_bot(browser, server, site):
    """ppo-4p's bundle: the person and three seats of the bot, to the end of a game with
    a bump and a gift on the board; every decision a bot seat's, each the Python port's
    from that seat."""
    page, errors = opened(browser, server, query="&bundle=four/", seed=SEED_4P)
    names = ["you", "ppo-4p (seat 1)", "ppo-4p (seat 2)", "ppo-4p (seat 3)"]
    assert page.evaluate("fivethousandPage.names") == names
    if AXE.is_file():
        assert serious_violations(page) == [], "the person's move"
    shown: list[str] = []
    for _move in range(2000):
        status = settle(page)
        shown += check_board(page, names)
        if status == "over":
            break
        play_one_move(page)
    state = page.evaluate("fivethousandPage.state")
    assert state["phase"] == "over" and len(state["scores"]) == 4
    assert state["scores"][state["winner"]] == 5000
    assert any(m.startswith("bumped to 0 by ") for m in shown), shown
    assert any(m.startswith("gift of ") for m in shown), shown
    log = page.locator("#log li").all_inner_texts()
    assert any("which bumped" in line for line in log)
    assert any(": overshoot, gift of " in line for line in log)
    decisions = page.evaluate("fivethousandPage.decisions")
    assert {d["state"]["current"] for d in decisions} == {1, 2, 3}
    check_decisions(decisions, site / "web" / "four")
    if AXE.is_file():
        assert serious_violations(page) == [], "the end"
    assert errors == []
    page.context.close()


@needs_chromium
def test_the_4_player_table_speaks_the_browser_s_language(browser, server):
    page, errors = opened(browser, server, LOCALES["ru"], query="&bundle=four/")
    assert page.locator("#scores li").count() == 4
    assert page.evaluate("fivethousandPage.names")[1] == "ppo-4p (место 1)"
    hold_every_scoring_die(page)
    assert untranslated(page, "ru") == []
    assert errors == []
    page.context.close()


def test_the_4_player_bundle_replays_its_vectors_in_both_ports(site, tmp_path):
    """The bundle the page plays at four seats: every test vector (the observation from
    the mover's seat, the mask, the action) replayed exactly by the Python port, and by
    the JavaScript port where Node is installed."""
    import subprocess
    import sys

    bundle = site / "web" / "four"
    count = json.loads((bundle / "bundle.json").read_text())["test_vectors"]["count"]
    assert json.loads((bundle / "bundle.json").read_text())["players"] == 4
    commands = [[sys.executable, str(PORTS / "python" / "fivethousand_port.py"), str(bundle)]]
    if shutil.which("node"):
        commands.append([shutil.which("node"), str(PORTS / "js" / "fivethousand.mjs"), str(bundle)])
    for command in commands:
        done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        result = json.loads(done.stdout)
        assert result["vectors"] == count >= 1000
        assert set(result["differences"].values()) == {0}, result
