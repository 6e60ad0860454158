"""Players in their own language (issue 43): the catalogues are complete and current,
the language is chosen as the player's system or browser asks, numbers are written as
each language writes them, and the terminal game and its rules (R2-R9, V1-V5) read in
each language with none of the English interface left."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from fivethousand_rl.envs import i18n
from fivethousand_rl.envs.i18n import (
    LANGUAGES,
    accept_language,
    catalogue_json,
    catalogue_problems,
    language_from_environment,
    negotiate,
    number,
    percent,
    timespan,
    using,
)
from fivethousand_rl.envs.rules import Rules
from fivethousand_rl.envs.rules_text import rules_text

ROOT = Path(__file__).resolve().parent.parent
TRANSLATED = [lang for lang in LANGUAGES if lang != i18n.SOURCE_LANGUAGE]


@pytest.mark.parametrize("lang", TRANSLATED)
def test_every_message_has_every_language(lang):
    """A text a player reads that a language lacks (missing, empty, fuzzy, the wrong
    number of plural forms, other placeholders than the English) fails the build."""
    problems = catalogue_problems(lang)
    assert problems == [], f"{len(problems)} problems, the first: {problems[:10]}"


def test_the_template_holds_exactly_the_texts_of_the_code():
    """The catalogues' template (envs/locale/messages.pot) is what `make messages`
    extracts from the code now: a text added or changed without it fails."""
    from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
    from babel.messages.pofile import read_po

    method_map = [
        (f"{package}/**.py", "python")
        for package in ("envs", "agents", "webplay", "fivethousand_rl")
    ] + [("webplay/static/**.js", "javascript")]
    options = {"webplay/static/**.js": {"parse_template_string": "true"}}
    found = {
        (context, message if isinstance(message, str) else message[0])
        for _file, _line, message, _comments, context in extract_from_dir(
            str(ROOT), method_map, options, keywords=DEFAULT_KEYWORDS
        )
    }
    with i18n.TEMPLATE.open("rb") as f:
        template = {
            (m.context, m.id if isinstance(m.id, str) else m.id[0]) for m in read_po(f) if m.id
        }
    assert found - template == set(), "texts not in the template: run make messages"
    assert template - found == set(), "texts the code no longer has: run make messages"


def test_the_page_gets_each_catalogue_with_plural_forms_by_cldr_category():
    ru = catalogue_json("ru")["messages"]
    forms = ru["{n} die"]
    assert set(forms) == {"one", "few", "many"}  # 1 кубик, 2 кубика, 5 кубиков
    assert catalogue_json("en") == {"lang": "en", "messages": {}}
    with pytest.raises(ValueError, match="unknown language 'xx'"):
        catalogue_json("xx")


@pytest.mark.parametrize(
    ("header", "chosen"),
    [
        ("ru-RU,ru;q=0.9,en-US;q=0.8,en;q=0.7", "ru"),
        ("hi-IN", "hi"),
        ("ms-MY,ms;q=0.9", "ms"),
        ("fr-CA,en;q=0.5", "fr"),
        ("de-DE,de;q=0.9", "en"),
        ("en-GB,fr;q=0.9", "en"),
        ("zh-Hant-TW, hi;q=0.1", "hi"),
        ("fr;q=0, ru", "ru"),
        ("", "en"),
        ("*", "en"),
        ("ru;q=abc, fr", "fr"),
    ],
)
def test_the_browser_language_is_negotiated_from_accept_language(header, chosen):
    assert negotiate(header) == chosen


def test_accept_language_orders_by_quality_and_reads_a_bounded_header():
    assert accept_language("fr;q=0.5, ru, hi;q=0.9") == ["ru", "hi", "fr"]
    assert len(accept_language(",".join(["xx"] * 10_000))) <= 32


@pytest.mark.parametrize(
    ("environ", "chosen"),
    [
        ({"LANG": "ru_RU.UTF-8"}, "ru"),
        ({"LANG": "C.UTF-8"}, "en"),
        ({"LANGUAGE": "hi:en", "LANG": "en_US.UTF-8"}, "hi"),
        ({"LC_ALL": "fr_FR.UTF-8", "LANG": "ru_RU.UTF-8"}, "fr"),
        ({"LANG": "ms_MY.UTF-8"}, "ms"),
        ({"LANG": "de_DE@euro"}, "en"),
        ({}, "en"),
    ],
)
def test_the_terminal_language_comes_from_the_environment(environ, chosen):
    assert language_from_environment(environ) == chosen


def test_numbers_and_chances_are_written_as_each_language_writes_them():
    assert [number(5000, lang) for lang in LANGUAGES] == ["5000"] * 5  # the game's name
    assert number(12345, "en") == "12,345"
    assert number(12345, "fr") == "12\u202f345" and number(12345, "ru") == "12\u00a0345"
    assert number(1234567, "hi") == "12,34,567"  # Latin digits, Indian grouping
    assert percent(0.4234, "en") == "42.3%" and percent(0.4234, "fr") == "42,3\u00a0%"


def test_lengths_of_time_are_said_in_each_language():
    """The server's "try again later" messages say the grace in the player's words."""
    assert timespan(1800, "en") == "30 minutes" and timespan(1800, "ru") == "30 минут"
    assert timespan(7 * 86400, "fr") == "1\u00a0semaine"
    with using("hi"):
        assert timespan(1800) == "30 मिनट"


@pytest.mark.parametrize("lang", TRANSLATED)
def test_the_rules_read_in_each_language_with_every_combination_and_switch(lang):
    """Issue 43 item 2: every scoring combination (R2: 1100, four and five of a kind,
    the straight's 1500), entry (V1), the 50 rule (V4), bumps (V2), overshoot (V3) and
    the house rules in force, in the language."""
    house = Rules(target=3000, entry=350, bump=False, fifty_rule=False, overshoot="lost")
    with using("en"):
        english = rules_text(house)
    with using(lang):
        text = rules_text(house)
    for figure in ("1100", "1500", "2200", "4400", "800", "350", "3000"):
        assert figure in text, figure
    english_lines = {line for line in english.splitlines() if len(line) > 12}
    assert not english_lines & set(text.splitlines())


# Words a translated terminal may still show in Latin letters: commands the player
# types, bot names, the program's name and its options.
LATIN_ALLOWED = {"help", "quit", "hint", "rules", "save", "smart", "seat", "seed", "python"}
LATIN_ALLOWED |= {"play", "load", "log", "replay", "opponents", "FILE"}


@pytest.mark.parametrize("lang", ["ru", "hi"])
def test_the_terminal_game_in_a_non_latin_language_shows_no_english_word(lang):
    """A game played at the terminal in Russian or Hindi (--lang) up to its end: every
    line the player reads is in that language, apart from the commands one types and
    the bots' names."""
    answers = "\n".join(["r"] * 200 + ["help", "rules"] + ["b"] * 200)
    result = subprocess.run(
        [sys.executable, "play.py", "--lang", lang, "--opponents", "smart", "--seed", "3"],
        input=answers,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    words = set(re.findall(r"[A-Za-z]{3,}", result.stdout)) - LATIN_ALLOWED
    assert words == set(), sorted(words)[:30]


def test_an_unknown_language_is_refused_in_one_line(capsys):
    from fivethousand_rl import play

    with pytest.raises(SystemExit):
        play.main(["--lang", "xx"], ask=lambda _: "quit", say=lambda _: None)
    err = capsys.readouterr().err
    assert "--lang" in err and err.count("\n") == 1
