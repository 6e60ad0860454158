"""The web app in the player's language (issue 43): each request's language (the page's
choice, else Accept-Language), the catalogues for the page, and every text the API
returns put in words at the request, in its language: never stored translated, so
saves hold what they held before. FastAPI's TestClient, no browser.

The tests that need translated texts use a fake catalogue (``marked``: every text
prefixed by its language's mark), so they do not depend on the real translations."""

import base64
import gettext
import json
import re
import threading
import zlib

import pytest

pytest.importorskip("fastapi", reason="the web app needs fastapi (dev extras)")

from fastapi.testclient import TestClient  # noqa: E402

from fivethousand_rl.envs import i18n  # noqa: E402
from fivethousand_rl.webplay import games  # noqa: E402
from fivethousand_rl.webplay.app import create_app, request_language  # noqa: E402


def client(folder) -> TestClient:
    return TestClient(create_app(folder), base_url="http://localhost")


def mark(lang: str) -> str:
    return f"<{lang}>"


class Marked(gettext.NullTranslations):
    """A fake catalogue: every text with its language's mark in front."""

    def __init__(self, lang: str) -> None:
        super().__init__()
        self.lang = lang

    def gettext(self, message: str) -> str:
        return mark(self.lang) + message

    def ngettext(self, singular: str, plural: str, n: int) -> str:
        return mark(self.lang) + (singular if n == 1 else plural)

    def pgettext(self, context: str, message: str) -> str:
        return mark(self.lang) + message


@pytest.fixture
def marked(monkeypatch):
    """Every language but English translated by its mark."""
    real = i18n.translations

    def fake(lang: str) -> gettext.NullTranslations:
        return real(lang) if lang == i18n.SOURCE_LANGUAGE else Marked(i18n.check_language(lang))

    monkeypatch.setattr(i18n, "translations", fake)


def new_game(c, lang: str = "en", **body) -> dict:
    body = {"bots": ["smart"], "seat": 0, "seed": 3, **body}
    r = c.post("/api/games", json=body, headers={"X-Language": lang})
    assert r.status_code == 201, r.text
    return r.json()


def steps(c, view: dict, count: int) -> dict:
    """Play `count` requests on (the human banks when it can, else rolls on with the
    most), in English."""
    for _ in range(count):
        if view["status"] == "over":
            break
        if view["status"] == "wait":
            r = c.post(f"/api/games/{view['id']}/step", json={"steps": 3, "at": view["at"]})
        else:
            best = max(view["moves"], key=lambda m: (m["banks"], m["turn_total"]))
            body = {"action": best["action"], "at": view["at"]}
            r = c.post(f"/api/games/{view['id']}/move", json=body)
        assert r.status_code == 200, r.text
        view = r.json()
    return view


# ------------------------------------------------------------------ the catalogues
@pytest.mark.parametrize("lang", list(i18n.LANGUAGES))
def test_each_language_has_its_catalogue_for_the_page(tmp_path, lang):
    c = client(tmp_path)
    r = c.get(f"/api/i18n/{lang}")
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["lang"] == lang and isinstance(data["messages"], dict)
    categories = {"zero", "one", "two", "few", "many", "other"}
    for text in data["messages"].values():  # a text, or its forms by plural category
        assert isinstance(text, str) or set(text) <= categories
    assert r.headers["content-language"] == lang
    assert "public" in r.headers["cache-control"]  # static data: cached
    assert "accept-language" not in r.headers.get("vary", "").lower()
    again = c.get(f"/api/i18n/{lang}", headers={"If-None-Match": r.headers["etag"]})
    assert again.status_code == 304


def test_an_unknown_language_has_no_catalogue(tmp_path):
    r = client(tmp_path).get("/api/i18n/de")
    assert r.status_code == 404 and "de" in r.json()["error"]


def test_the_languages_are_listed_each_named_in_itself(tmp_path):
    c = client(tmp_path)
    data = c.get("/api/languages", headers={"Accept-Language": "hi-IN,en;q=0.5"}).json()
    assert data == {"languages": i18n.LANGUAGES, "default": "hi"}
    assert c.get("/api/languages").json()["default"] == "en"


# ------------------------------------------------------------------ choosing
@pytest.mark.parametrize(
    "query, headers, expected",
    [
        ("", {}, "en"),
        ("", {"Accept-Language": "ru-RU,ru;q=0.9,en;q=0.8"}, "ru"),
        ("", {"Accept-Language": "de-DE,fr;q=0.5"}, "fr"),
        ("", {"Accept-Language": "de-DE"}, "en"),  # none spoken here: English
        ("", {"Accept-Language": "ru", "X-Language": "fr"}, "fr"),  # the choice first
        ("", {"Accept-Language": "ru", "X-Language": "en"}, "en"),  # English chosen
        ("", {"Accept-Language": "ru", "X-Language": "de"}, "ru"),  # an unknown choice
        ("?lang=ms", {"Accept-Language": "ru", "X-Language": "fr"}, "ms"),
        ("?lang=hi-IN", {}, "hi"),
        ("?lang=xx", {}, "en"),
    ],
)
def test_a_request_is_answered_in_its_language(tmp_path, query, headers, expected):
    r = client(tmp_path).get(f"/api/bots{query}", headers=headers)
    assert r.status_code == 200
    assert r.headers["content-language"] == expected
    assert "accept-language" in r.headers["vary"].lower()


def test_request_language_reads_the_scope():
    scope = {"query_string": b"", "headers": [(b"accept-language", b"ms-MY,ms;q=0.9")]}
    assert request_language(scope) == "ms"
    assert request_language({"query_string": b"lang=ru", "headers": []}) == "ru"


def test_accept_language_gives_the_real_catalogue(tmp_path):
    """A browser that asks for Russian in Accept-Language reads the texts the ru
    catalogue translates (here the dice a choice rolls: "roll 5 кубиков")."""
    if not i18n.catalogue_json("ru")["messages"].get("{n} die"):
        pytest.skip("the ru catalogue does not translate '{n} die' yet")
    c = client(tmp_path)
    view = steps(c, new_game(c), 1)  # the human's first roll
    assert view["status"] == "you"
    rolls = [m["text"] for m in view["moves"] if not m["banks"]]
    assert rolls and not any(re.search("[а-я]", text) for text in rolls)
    ru = c.get(f"/api/games/{view['id']}", headers={"Accept-Language": "ru-RU,en;q=0.5"})
    assert ru.headers["content-language"] == "ru"
    assert all(re.search("[а-я]", m["text"]) for m in ru.json()["moves"] if not m["banks"])


# ------------------------------------------------------------------ the texts
def test_views_log_and_errors_follow_the_request_language(tmp_path, marked):
    c = client(tmp_path)
    view = new_game(c, "fr")  # a sync endpoint: its worker thread sees the language
    assert view["names"][0] == "<fr>you"
    assert all(item["text"].startswith("<fr>") for item in view["rules_line"])
    assert all(item["about"].startswith("<fr>") for item in view["rules_line"])
    view = steps(c, view, 8)
    gid = view["id"]
    english = c.get(f"/api/games/{gid}").json()
    assert english["log"] and not any("<" in line["text"] for line in english["log"])
    for lang in ("fr", "ru", "en", "hi"):  # the same game, read in each language in turn
        seen = c.get(f"/api/games/{gid}", headers={"X-Language": lang}).json()
        assert len(seen["log"]) == len(english["log"])
        for line, plain in zip(seen["log"], english["log"], strict=True):
            assert (line["seat"], line["kind"]) == (plain["seat"], plain["kind"])
            if lang == "en":
                assert line["text"] == plain["text"]
            else:
                assert line["text"].startswith(mark(lang)), line
        if seen["status"] == "you" and lang != "en":
            assert all(m["text"].startswith(mark(lang)) for m in seen["moves"])
    saved = (tmp_path / f"{gid}.json").read_text(encoding="utf-8")
    assert "<fr>" not in saved and "<ru>" not in saved  # nothing stored translated
    # Errors too.
    missing = c.get("/api/games/" + "x" * 43, headers={"X-Language": "ms"})
    assert missing.status_code == 404 and missing.json()["error"] == "<ms>no such game"
    stale = c.post(
        f"/api/games/{gid}/step", json={"steps": 1, "at": 0}, headers={"X-Language": "ru"}
    )
    assert stale.status_code == 409 and stale.json()["error"].startswith("<ru>")
    # The replay's frames, in the language of its request.
    frames = c.get(f"/api/games/{gid}/replay", headers={"X-Language": "hi"}).json()["frames"]
    assert frames[0]["text"] == "<hi>the game starts"
    assert all(f["text"].startswith("<hi>") for f in frames)


def test_the_bot_list_is_in_the_request_language(tmp_path, marked):
    c = client(tmp_path)
    english = {b["key"]: b["about"] for b in c.get("/api/bots").json()["bots"]}
    french = {b["key"]: b["about"] for b in c.get("/api/bots?lang=fr").json()["bots"]}
    assert english["smart"] == "endgame-aware heuristic"
    assert french == {k: "<fr>" + v for k, v in english.items()}


def test_concurrent_requests_in_different_languages_do_not_mix(tmp_path, marked):
    c = client(tmp_path)
    gid = steps(c, new_game(c), 4)["id"]
    langs = list(i18n.LANGUAGES)
    wrong: list[str] = []

    def texts(data: dict) -> list[str]:
        if "log" in data:
            return [line["text"] for line in data["log"]] + [data["names"][0]]
        return [b["about"] for b in data["bots"]]

    def reader(k: int) -> None:
        for i in range(12):
            lang = langs[(k + i) % len(langs)]
            path = f"/api/games/{gid}" if i % 2 else "/api/bots"
            r = c.get(path, headers={"X-Language": lang})
            said = texts(r.json())
            ok = all(t.startswith(mark(lang)) == (lang != "en") for t in said)
            if r.headers["content-language"] != lang or not ok:
                wrong.append(f"{lang} {path}: {said[:2]}")

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
    assert i18n.language.get() == "en"  # nothing leaked into this thread


# ------------------------------------------------------------------ old saves
# A save written before issue 43 (by the code of commit 9a350c8; zlib, base64): a
# 2-player game against smart, 9 events in; and its log in words as that code showed it.
OLD_SAVE = "".join(
    [
        "eNqVmGuPHGcRhf8Kms8Neu8XfyRCIIEACSEIVmRt7LG9Yb1L1rsEFPm/8zzViEC4SMiyPdPTXW9dTp061d9e3j48frh5",
        "ury4vL398/Xp/cPzx5v7Nz98vPvBN9cvf/Du5sP1clz+fH38ePtwf3mRj8vtG+79uv3m8x+//eOHn3/+zfsPf/jdV3df",
        "/+RXn/3i3Y/T188/u7n7429X+v3d57/sv79+9TmPf/nw9PHy4uX9893dcfn44ebx6fLFcXn//OEGk4lL1ytG53F5/Xi9",
        "efJznnu0PlOZP9ol9zLbcXn+05vv/bh+1PLuba7jEo6++Pby+Hx3/eiH9w93Ovr28WoATzeP764E2VPivOv90+Nf48sn",
        "Dn/Cqk98fP3w6LMv05Fw7/Xz4yM3hoNPz4/3r54enm7u4uub29fXV3fXtxo8Lo8Pd1x+WY56NP50Q7t6+Es+/en9zUes",
        "X95cX9++0ZNvbu/vr4+XF2cyNMyR5dOn02qEcP/O/768fXr17sq9N08P3H/59Wc/He3yz/6eH3JNpfad0pyrpZ7rXHOm",
        "lmcdo9VRdh27NpJ7e//au3tPfc9W0t51D/7UnFfvM882Kv+NRLpxB8dfPd/eP9USMfvx+k7P68wZu6U27nr98CZyViol",
        "GiW1I/fVj5bLMWolI32vo22/zt6PmcY6+pj5oH7pyDX3Y+yej7HGUfPY/LiwsdM+2iwHoRyFqI7c0sDqWtiv8xgYP/pa",
        "9ag4fcy8MV38kDiSW8kHBrDXVubEMvrRd/YSdaojHb01DusJgwuHR27rqAVn50h63DBdcjtq6lQ1jXzkXDCwesU9HS5b",
        "k+vgoXLM0otOLuLEtZIJrKVdjkZUR934BojHkVMzFdP0zHoMnereTFT7NFp2IzM5H6XgZ/zNBr/JX5/TxKx0zEqotZCf",
        "3sldow2O0oluNg7spWOIQI+ycL2lus8DSx1TP8uxK6GngnMlYWRPb+N6GytjpPNDM7WmqOAiLpHujhNAC5iPlkk+Zjfp",
        "Kxs3yZyOUAsA0o+6CL8Ovo7Jk6SPY5oZpvH4VPlVN3miWX+ebZn7eA6j5H9mgNFJbluVhPdqlkrjnE6aN8+H/2MTV0CD",
        "s/g6GgBa05puzA0NLQ/EGn8pc6X0dA0BEmUTiINC8HU30ZNNH8klsdRVwHTqVbfw4ry+BGDHy0ZdsQtgwWrV/Sl0CXPx",
        "aNMr/B5L+4ObaEWyYj4TjvZp1UhiJTuD/jVZpKkRpr/naZuMCZDpLn7UE7qd8vHDsCHI9bLFjkVaAPQUX9QmQ4kyAMjx",
        "SAtXWxEgfB2ipO5tgkxwiZstcgFqrUTnagRzuKbfgC63JhgC82LZanF4r94F8MATyS6WLVEySMYagXjIyXp4QKVkpQBx",
        "235WyGLUbBW5odlElftpTDxIU7/DIj24+KdlCkP4HA5EbfcsLgWM7kFjFIuC9w1OCg141NkNQ3YZtk1fJntbewzYl2BC",
        "+BgPGc5Zu5W7SqrCWUIxGLKMqzR46dHvPLSm4XWP03QrGJyWClrlH8gw2GlyvdtpPVJnXegn7h0zwiJRBpqkpia06RIM",
        "2WiFIgfeCE0ugxGh5iS0OToNucQCrCzeQDlHT3lMfiOD9H+gI0fNCCdZSokwZyMokghuATGZ2AYO16AYwm7TNGWRaxMl",
        "uYe5C52sKWM2cmFlMukpKbolEe7Qo0Shiu3SEuVpdhB1AoxFUrCAi3MAAoYFYJLsd5eOJGFZI4BAF1B/ob/BOv2GEOCM",
        "3gL4QslWTQH9boPAm8GF0UITg2t4DkZhx2nFabQibxAaCcHjsxp+KpwHRqRMcoef8mSRHwxRGOZCmapdwq8clW21PXUZ",
        "u5yJfS5vmqEP0DU7/wxHYbHpR0St3aAy0GbWvM8QsqySBQ4AAsg0q55CWMm8VIHctCaMHE4Vn2lg+5aSNCdllROcOR36",
        "WGQbKwCYmzfToW2dSCRpbOrCEBpnE3anGwDrkoSdVfVp+UNzYmTDxLu4ZTZwk6MGBpW714bkXXGtOrvGolWG7rZqFjPg",
        "abJhNz2B4eFgDCSA3mHvowlwdp4d2Hz8UM1QtOkA8EeFXpvOfcg0A+TqDOJOKdF5L4Z6mJB98jghTVc5yFuMhOkQKOEQ",
        "ZD+h7FOO5CIYqAT2qrl3RDSRW6SjoicO4GGDFgcjnoDIuWO6diFLnmFv27KcfNbt0hoFMMWkKdRGskurcRKZXQB9es2o",
        "vG/YNtNuyY4V5iY1d8hYXmTXEoROJWNujpvhA70HAqIzca9GbsD5UP2NFf2VT1GSmxUfEY96RlDFKMYwbkqIwIMMrmgT",
        "xZVeJ2enVSNRtFSRloAUY5A4zIuEW0/FgrUBSJrNROOYtBKswyFO83QqIjlcvk7cO7IuRrawSGPrgVIrlEMRAsMJKTk7",
        "RbKtOBnOlFWSMs6yqs93KVbmWPKYcwcdapeY63441apRogB4BMOivdpCqo+ySsCtOdx5dEADRVxBACoS/lH0iKWu5JtA",
        "ySkSPNWlCtTBMMFKnCqtO1oVRXCyA9WhIrpzDnKSCZhMKhA+Ta85wIZZj9lCpsynsyJKv+TjqkbbtEdRXSDZKFHRVcpO",
        "vEXkOJsFAwUbElxJwwHqXJbDwHQ7k0+66PrMMeR3qtEEXIgPdWpVLSJtdZtKTeogGw7hl6fDaEh7AgAtxWEzRr0z2REm",
        "U0+Lz5yVE0UzU0BBYXerEEA6/JDMWnS9co6CAgO5Qj2FOzAE6SxDPUltQLMqnk4Hoc1wVGAw8LHHOHmiitWh4i/FhSI7",
        "h4rkgFnVFKuEAuEUwg715IYSY02z7iTRQdVh4kYBSXeF7DkP8EIiSi4TjoJks2XhtDyzmRpAYlGiSyRtnUSXy0bTVWGd",
        "km7C/K4iKmgEZdd3S6de5B6KozRrsTZFwqXDETo3SzOWJFqd0k1r2mKCLhQ/Esn7APh0i7GVSgyRkD3LHiOlPG47pBh6",
        "Mv0+C1Rt3dgcUCH97Da+DqefoahJUxF9BNUDa2XFdiUBWL9FrVjkKUuIqKKaqnaePWWKbES4womUZ2iA4QyMdoQE1VQe",
        "7JzRVgldGoQ+z3aGxNvhxpFjOxqxqw3ZU25kEbaoBMDKJOBcG1QDod4sDfyQXS+2HTtVCPaaxLFIcZOHuiJxq81EYlbw",
        "DtFZ1I1wc3GBkt/cJJNT12WjO2eGuHE9gCJt3+rulOyEEHjOJIfBUMHRr67YXFZvnbueHCcIEWfO3BKrUyxhKrwodSww",
        "CrYVM8MdTO0pMNdWmEL0MJxrrdKu2QPZPoiFqNgHThcXKmEz1jbNsk4rp6wFdutcKocjHZ4op8Ye5phJtNUz7dxq8N49",
        "fqjQzv3M1bTG3FDYZotk3Vx8Qiz0ve0azQv3c3srXnJIK3wGB1JEZWeX8KhndZkJQTvtPKAs9nU2wyXMNKe6hV4znUNw",
        "CObmGNcSh4pIRYIS4vTVfGX7GmaWZ03yufq4afQ+zorkHId1m6HZsi6o4sP1bMfKazvHTpIUY+4vgj0HXmfAXkp2LYoX",
        "F76vkFlimlb32i7zFcUOw0Ac0mHTpp++ZkD/xMsSBXFzaycPTt4QosVUsmbHIg2Ou6NhC/8uaS/1uoOgib9pm0KC0meN",
        "lzj2r4K6uhN4C4tcksmFXYkObs4vppn43a2dry92KHDrM1Wtwz3ZcTejU5QcCC5HbBKv5RSPNRhdIVF8SwHp46DjTXG9",
        "HOFBjDuWQtEQuJeZnAnnhLSBztXWsvieoQRJq1okPP0t8j+Ynydll1hkfNfSXNWnb2OyygdwTpK0cIgP9Xw4xwIjC4MX",
        "e2W4Fcbcd7fGco13X/EmR5mFZNc7iXbGOuEQL6EjjFQhXUfgjZyqkZp4izc20K5riqQdujz2UZlEVQTX7S+Oy/31L0+X",
        "F+NTvGB99f++NkQPNRfPmQEaNMamgQQn6Z2iZqEw1NPna0MStTtqbbO6QDdoQoDlC4fEjK1sWNOk/q+3hr5qvXvAxZff",
        "fvfGlH45aHffk97d/PXvt317uXltXN+7+PeHIM54xfrvD/T//ED54r8Z8o1t/5fT8z+M5e9d/IfL7XsO/+uv370C/u7I",
        "Lz79DVnbAKA=",
    ]
)
OLD_LINES = [
    (0, "roll", "you rolled [2 5 5 6 6]"),
    (0, "hold", "you held [5 5], turn total 100"),
    (0, "roll", "you rolled [1 3 5]"),
    (0, "hold", "you held [1 5], turn total 250"),
    (0, "bust", "you rolled [2]: bust, lost 250"),
    (1, "roll", "smart rolled [1 2 3 5 6]"),
    (1, "hold", "smart held [1], turn total 100"),
    (1, "bust", "smart rolled [2 4 6 6]: bust, lost 100"),
    (0, "roll", "you rolled [2 3 4 4 5]"),
]


def test_a_save_from_before_still_loads_and_reads_in_any_language(tmp_path, marked):
    data = json.loads(zlib.decompress(base64.b64decode(OLD_SAVE)))
    (tmp_path / f"{data['id']}.json").write_text(json.dumps(data), encoding="utf-8")
    c = client(tmp_path)
    assert c.get("/api/problems").json() == {"problems": []}
    view = c.get(f"/api/games/{data['id']}").json()
    assert [(x["seat"], x["kind"], x["text"]) for x in view["log"]] == OLD_LINES
    assert view["log_start"] == 1 and view["at"] == len(OLD_LINES)
    french = c.get(f"/api/games/{data['id']}", headers={"X-Language": "fr"}).json()
    assert all(x["text"].startswith("<fr>") for x in french["log"])
    # Played on, it is saved in today's version (one person: "humans" holds their seat),
    # the log as the engine writes it.
    steps(c, view, 2)
    again = json.loads((tmp_path / f"{data['id']}.json").read_text(encoding="utf-8"))
    assert data["version"] == 1 and list(data) == list(games.FIELDS_V1)
    assert list(again) == list(games.FIELDS) and again["version"] == games.VERSION
    assert again["humans"] == [data["human"]] and again["people"] == [None]
    assert again["log"][: len(data["log"])] == data["log"]


# ------------------------------------------------------------------ the page
FAKE_RU = {  # a catalogue for the page's own texts (the real one is the translators')
    "lang": "ru",
    "messages": {
        "New game": "Новая игра",
        "5000 - dice against the bots": "5000 - кубики против ботов",
        "Turn {turn}: your move. Click dice to hold them, then roll or bank.": "Ход {turn}: ваш.",
        "turn total {total} · {n} die in play · held this turn:": {
            "one": "{total} · {n} кубик",
            "few": "{total} · {n} кубика",
            "many": "{total} · {n} кубиков",
        },
    },
}


def test_the_page_speaks_the_players_language(tmp_path, marked):
    """In Chromium: the browser's language (ru-RU) chosen, the page's texts from the
    catalogue, numbers and plural forms as Russian writes them, the server's texts in
    the same language; the selector switches at once and is remembered."""
    pytest.importorskip("uvicorn", reason="the web app needs uvicorn")
    playwright = pytest.importorskip("playwright.sync_api", reason="needs playwright")
    import shutil
    import socket
    import time

    import uvicorn

    if shutil.which("chromium") is None:
        pytest.skip("no chromium on PATH")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    server = uvicorn.Server(
        uvicorn.Config(create_app(tmp_path), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"))
            context = browser.new_context(locale="ru-RU")
            context.route("**/api/i18n/ru", lambda route: route.fulfill(json=FAKE_RU))
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(f"http://127.0.0.1:{port}/?delay=0")
            page.wait_for_selector("#setup:not([hidden])")
            assert page.evaluate("document.documentElement.lang") == "ru"
            assert page.title() == "5000 - кубики против ботов"
            assert page.inner_text("#setup h2") == "Новая игра"
            assert page.input_value("#lang-select") == "ru"
            names = page.locator("#lang-select option").all_inner_texts()
            assert names == list(i18n.LANGUAGES.values())
            assert page.evaluate("[number(5000), number(12345)]") == ["5000", "12\u00a0345"]
            forms = page.evaluate(
                "[1, 2, 5, 21].map((n) => ngettext("
                "'turn total {total} · {n} die in play · held this turn:', "
                "'turn total {total} · {n} dice in play · held this turn:', n, {total: 0}))"
            )
            assert forms == ["0 · 1 кубик", "0 · 2 кубика", "0 · 5 кубиков", "0 · 21 кубик"]
            page.click("#start")
            page.wait_for_function("() => view && !busy && view.status === 'you'")
            assert page.inner_text("#headline").startswith("Ход ")
            assert page.locator("#log li").first.inner_text().startswith("<ru>")  # the server's
            # English chosen: at once, remembered over the browser's language.
            page.select_option("#lang-select", "en")
            page.wait_for_function("() => document.documentElement.lang === 'en'")
            page.wait_for_function(
                "() => !document.querySelector('#log li').textContent.startsWith('<')"
            )
            assert page.inner_text("#headline").startswith("Turn ")
            page.reload()
            page.wait_for_function("() => view && !busy && view.status === 'you'")
            assert page.evaluate("[LANG, localStorage.getItem('fivethousand.lang')]") == [
                "en",
                "en",
            ]
            assert page.inner_text("#new-btn") == "New game"
            browser.close()
        assert errors == []
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.mark.parametrize("lang", sorted(i18n.LANGUAGES))
def test_the_page_names_its_licence_in_every_language(tmp_path, lang):
    """Issue 53 item 2: the page's footer names the MIT licence, translated."""
    c = client(tmp_path)
    assert (
        '<small data-i18n="licence">Free software under the MIT licence</small>' in c.get("/").text
    )
    text = (
        c.get(f"/api/i18n/{lang}")
        .json()["messages"]
        .get("Free software under the MIT licence", "Free software under the MIT licence")
    )
    assert "MIT" in text and (lang == "en" or text != "Free software under the MIT licence")
