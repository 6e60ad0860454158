"""The page in each language, in a real browser (issue 43 items 1 and 6): Debian's
Chromium opened with the language of a French, Malay, Russian or Hindi player shows the
start page, a game in progress and a finished game with none of the English interface
left, Cyrillic and Devanagari drawn with a font that has them, and axe-core finds no
serious or critical accessibility problem. Screenshots of each language go to
$WEBPLAY_SCREENSHOTS if set (``WEBPLAY_SCREENSHOTS=docs/screenshots`` refreshes the
docs' pictures), else to the test's temporary folder.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the web app needs fastapi (dev extras)")
pytest.importorskip("playwright", reason="the browser tests need playwright (dev extras)")

from babel.messages.pofile import read_po  # noqa: E402

from fivethousand_rl.envs import i18n  # noqa: E402
from fivethousand_rl.webplay.app import create_app  # noqa: E402
from fivethousand_rl.webplay.games import Limits  # noqa: E402
from tests.test_webplay_browser import browser, serving, settle, shots  # noqa: E402, F401

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH (as root: apt-get install -y chromium)"
)
ROOT = Path(__file__).resolve().parent.parent
AXE = ROOT / "tests" / ".axe" / "node_modules" / "axe-core" / "axe.min.js"
AXE_VERSION = "4.14.1"  # the Makefile's
LOCALES = {"fr": "fr-FR", "ms": "ms-MY", "ru": "ru-RU", "hi": "hi-IN"}
PHONE = {"width": 390, "height": 844}
# What a translated page may still show in Latin letters: the bots' names and kinds of
# model, and the game's name.
NAMES = {"smart", "turn-ev", "threshold", "random", "optimal", "expectimax", "planner"}
NAMES |= {"ppo", "policy", "onnx", "PPO", "ONNX", "multi"}
# ... the licence's name (MIT, as SPDX names it in any language) ...
NAMES |= {"mit"}
# ... and the language selector, which names each language in itself.
NAMES |= {word.lower() for name in i18n.LANGUAGES.values() for word in name.split()}
VISIBLE_TEXT = """() => {
  const bits = [document.title, document.body.innerText];
  const named = '[aria-label],[title],[placeholder],[alt]';
  for (const el of document.querySelectorAll(named))
    for (const a of ['aria-label', 'title', 'placeholder', 'alt'])
      if (el.getAttribute(a)) bits.push(el.getAttribute(a));
  return bits.join('\\n');
}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app served for this module's tests, which start many games from one address
    (the usual limit is 10 kept per address)."""
    app = create_app(tmp_path_factory.mktemp("webdata"), limits=Limits(per_address=1000))
    with serving(app) as base:
        yield base


def english_words(lang: str) -> set[str]:
    """Words of the English texts that `lang`'s own translations never use: on a page
    in that language, any of them is an untranslated English text."""
    with i18n.TEMPLATE.open("rb") as f:
        english = " ".join(
            " ".join([m.id] if isinstance(m.id, str) else m.id) for m in read_po(f) if m.id
        )
    with i18n.catalogue_path(lang).open("rb") as f:
        own = " ".join(
            " ".join([m.string] if isinstance(m.string, str) else m.string)
            for m in read_po(f)
            if m.id
        )

    def words(text: str) -> set[str]:
        return {w.lower() for w in re.findall(r"\b[A-Za-z]{3,}\b", re.sub(r"\{\w+\}", "", text))}

    return words(english) - words(own)


def untranslated(page, lang: str) -> list[str]:
    """The English words the page shows in `lang` (for Cyrillic and Devanagari, any
    Latin word but the bots' names)."""
    text = page.evaluate(VISIBLE_TEXT)
    found = {w for w in re.findall(r"\b[A-Za-z][A-Za-z-]{2,}\b", text)}
    found -= {w for w in found if w.lower() in NAMES or w.split("-")[0].lower() in NAMES}
    if lang in ("ru", "hi"):
        return sorted(found)
    return sorted(w for w in found if w.lower() in english_words(lang))


def api(base: str, path: str, body: dict | None = None, method: str | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        base + path, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request) as r:
        raw = r.read()
        return json.loads(raw) if raw else {}


def finished_game(base: str) -> str:
    """A game against smart played to its end through the API (the human banks when it
    may, else holds the first choice and rolls on); its id."""
    view = api(base, "/api/games", {"bots": ["smart"], "seed": 11, "target": 1000})
    for _ in range(2000):
        if view["status"] == "over":
            return view["id"]
        if view["status"] == "wait":
            view = api(base, f"/api/games/{view['id']}/step", {"steps": 1000})
            continue
        banks = [m for m in view["moves"] if m["banks"]]
        move = (banks or view["moves"])[0]
        body = {"action": move["action"], "at": view["at"]}
        view = api(base, f"/api/games/{view['id']}/move", body)
    raise AssertionError("the game did not end")


def opened(context, base: str, lang: str, game: str | None = None):
    """A new page of `context` on the start page, or on `game`, once it is in `lang` and
    (for a game) waits for the player or shows the end."""
    page = context.new_page()
    page.goto(f"{base}/?delay=0" + (f"#game={game}" if game else ""))
    page.wait_for_function(f"() => document.documentElement.lang === '{lang}'")
    if game:
        settle(page)
    return page


# Letters of each script: a node whose text has them is drawn with a font that has them.
SCRIPT_LETTERS = {"ru": "\\u0400-\\u04FF", "hi": "\\u0900-\\u097F"}


def fonts_drawing(page, lang: str) -> set[str]:
    """The font families Chromium used to draw the first text of the page in `lang`'s
    script (DevTools' platform fonts of that node)."""
    page.evaluate(
        """letters => {
          const re = new RegExp('[' + letters + ']');
          const shown = el => el.getClientRects().length > 0 && !el.closest('select');
          for (const el of document.querySelectorAll('body *'))
            if (shown(el) && [...el.childNodes].some(n => n.nodeType === 3 && re.test(n.data))) {
              el.setAttribute('data-script-probe', ''); return;
            }
        }""",
        SCRIPT_LETTERS[lang],
    )
    selector = "[data-script-probe]"
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument")["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    return {
        f["familyName"] for f in cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
    }


def families_for(script_lang: str) -> set[str]:
    """The installed font families that have `script_lang`'s letters (fontconfig)."""
    out = subprocess.run(
        ["fc-list", f":lang={script_lang}", "family"], capture_output=True, text=True
    ).stdout
    return {name.strip() for line in out.splitlines() for name in line.split(",")}


def serious_violations(page) -> list[dict]:
    """axe-core's serious and critical violations on the page as it is."""
    page.evaluate(AXE.read_text())  # not add_script_tag: the page's CSP forbids inline scripts
    assert page.evaluate("axe.version") == AXE_VERSION
    found = page.evaluate(
        """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
            .map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.target.join())}))"""
    )
    return [v for v in found if v["impact"] in ("serious", "critical")]


@pytest.mark.parametrize("lang", list(LOCALES))
def test_the_page_in_each_language_has_no_english_left(server, browser, shots, lang):  # noqa: F811
    """A player whose browser asks for `lang` gets the start page, a game in progress
    and a finished game in it, apart from the bots' names."""
    context = browser.new_context(locale=LOCALES[lang], viewport={"width": 1000, "height": 900})
    assert untranslated(opened(context, server, lang), lang) == [], "the start page"
    game = api(server, "/api/games", {"bots": ["smart", "turn-ev"], "seed": 3})
    page = opened(context, server, lang, game["id"])
    assert untranslated(page, lang) == [], "a game in progress"
    page.screenshot(path=str(shots / f"webplay-{lang}.png"))
    page = opened(context, server, lang, finished_game(server))
    assert untranslated(page, lang) == [], "a finished game"
    context.close()


@pytest.mark.parametrize("lang", ["ru", "hi"])
def test_cyrillic_and_devanagari_are_drawn_with_a_font_that_has_them(server, browser, lang):  # noqa: F811
    families = families_for(lang)
    if not families:
        pytest.skip(f"no font for :lang={lang} (the Makefile installs one)")
    context = browser.new_context(locale=LOCALES[lang])
    used = fonts_drawing(opened(context, server, lang), lang)
    assert used & families, (used, families)
    context.close()


@pytest.mark.skipif(not AXE.is_file(), reason="axe-core not installed (make test installs it)")
@pytest.mark.parametrize("lang", ["en", *LOCALES])
def test_no_serious_accessibility_problem_at_the_start_mid_game_and_at_the_end(
    server,  # noqa: F811
    browser,  # noqa: F811
    lang,
):
    context = browser.new_context(locale=LOCALES.get(lang, "en-US"))
    assert serious_violations(opened(context, server, lang)) == [], "the start page"
    game = api(server, "/api/games", {"bots": ["smart"], "seed": 5})
    assert serious_violations(opened(context, server, lang, game["id"])) == [], "mid-game"
    finished = opened(context, server, lang, finished_game(server))
    assert serious_violations(finished) == [], "the end screen"
    context.close()


def test_the_screenshots_folder_is_the_docs_when_asked():
    """The docs' screenshots of each language come from this test's run with
    WEBPLAY_SCREENSHOTS=docs/screenshots (see the module's docstring)."""
    docs = ROOT / "docs" / "screenshots"
    assert all((docs / f"webplay-{lang}.png").is_file() for lang in LOCALES), (
        "run WEBPLAY_SCREENSHOTS=docs/screenshots pytest tests/test_webplay_languages.py"
    )


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_rules_panel_opens_at_any_moment_with_this_games_rules(server, browser, lang):  # noqa: F811
    """Issue 43 item 2: a Rules button (and the key ?) opens the rules in the player's
    language, every scoring combination (R2) and this game's house rules (V1-V5) named,
    on a phone-sized screen too; Escape closes it."""
    house = {"bots": ["smart"], "seed": 2, "target": 3000, "bump": False}
    game = api(server, "/api/games", house)
    standard = api(server, "/api/rules/text", {})["sections"]
    context = browser.new_context(locale=LOCALES.get(lang, "en-US"), viewport=PHONE)
    page = opened(context, server, lang, game["id"])
    page.click("#rules-btn")
    panel = page.locator("#rules-panel")
    panel.wait_for(state="visible")
    text = panel.inner_text()
    for figure in ("1100", "1500", "2200", "4400", "3000"):
        assert figure in text
    box = panel.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    shown_lines = [line for s in standard for line in s["lines"]]
    assert shown_lines and (lang == "en") == (shown_lines[0] in text)  # translated in ru
    page.keyboard.press("Escape")
    panel.wait_for(state="hidden")
    page.keyboard.press("?")
    panel.wait_for(state="visible")
    context.close()
