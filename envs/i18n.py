"""What a player reads, in their language: English (the source strings themselves) and
the gettext catalogues of ``envs/locale`` (French, Malay, Russian, Hindi).

Catalogues
    One gettext domain, ``fivethousand``; the msgids are the English texts, with
    ``{name}`` placeholders (``str.format``, as the page's JavaScript fills them). Only
    the ``.po`` files are kept: each is read once per process with Babel and turned into
    a ``gettext.GNUTranslations`` in memory (``translations``), so an editable install
    needs no compile step and nothing binary goes stale. ``make messages`` extracts the
    template (``envs/locale/messages.pot``) and updates the catalogues; the tests fail
    on any message a language lacks (``catalogue_problems``).

The language in use
    A context variable (``language``), English unless set: the terminal sets it once
    (``--lang``, else ``LANGUAGE``/``LC_ALL``/``LC_MESSAGES``/``LANG``:
    ``language_from_environment``), the web server per request (``Accept-Language`` or
    the page's choice: ``negotiate``). Text is translated where it is shown, never
    stored translated: the engine's own texts stay English (tests and logs read them).

Numbers
    ``number(n)`` writes an integer as the language does (CLDR through Babel: "12 345"
    with a no-break space in French and Russian, Latin digits with Indian grouping in
    Hindi), as the page's ``Intl.NumberFormat`` does.
"""

from __future__ import annotations

import contextlib
import gettext
import io
import os
import re
import string
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from functools import cache
from pathlib import Path

# The languages, by code, each named in itself (the selector shows these).
LANGUAGES = {
    "en": "English",
    "fr": "Français",
    "ms": "Bahasa Melayu",
    "ru": "Русский",
    "hi": "हिन्दी",
}
SOURCE_LANGUAGE = "en"
DOMAIN = "fivethousand"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
TEMPLATE = LOCALE_DIR / "messages.pot"

language: ContextVar[str] = ContextVar("language", default=SOURCE_LANGUAGE)


def catalogue_path(lang: str) -> Path:
    """The .po file of `lang` (not English, whose texts are the msgids)."""
    return LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


def check_language(lang: str) -> str:
    """`lang` if it is one of ``LANGUAGES``; a one-line ValueError naming them if not."""
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; known: {', '.join(LANGUAGES)}")
    return lang


@cache
def translations(lang: str) -> gettext.NullTranslations:
    """The translations of `lang` (read once; shared, read-only): English's are the
    msgids themselves. Fuzzy entries are left out, as gettext's compiler does."""
    if check_language(lang) == SOURCE_LANGUAGE:
        return gettext.NullTranslations()
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with catalogue_path(lang).open("rb") as f:
        catalogue = read_po(f, locale=lang, domain=DOMAIN)
    compiled = io.BytesIO()
    write_mo(compiled, catalogue)
    compiled.seek(0)
    return gettext.GNUTranslations(compiled)


@contextlib.contextmanager
def using(lang: str) -> Iterator[None]:
    """Within the block, texts are in `lang`."""
    token = language.set(check_language(lang))
    try:
        yield
    finally:
        language.reset(token)


def _(message: str, **values: object) -> str:
    """`message` in the language in use, its ``{placeholders}`` filled with `values`
    (integers written as the language writes numbers)."""
    text = translations(language.get()).gettext(message)
    return _fill(text, values) if values else text


def ngettext(singular: str, plural: str, n: int, **values: object) -> str:
    """The form of `singular`/`plural` for the count `n` in the language in use (Russian
    has three, Malay one), ``{n}`` and the other placeholders filled."""
    text = translations(language.get()).ngettext(singular, plural, n)
    return _fill(text, {"n": n, **values})


def pgettext(context: str, message: str, **values: object) -> str:
    """`message` in the sense `context` says (a verb or a noun, ...), translated."""
    text = translations(language.get()).pgettext(context, message)
    return _fill(text, values) if values else text


def N_(message: str) -> str:
    """Mark `message` for translation where it is defined (a table of texts); the place
    that shows it calls ``_`` on it."""
    return message


def number(n: int, lang: str | None = None) -> str:
    """The integer `n` as `lang` (default: the language in use) writes it."""
    from babel.numbers import format_decimal

    # Grouped from 10,000 only, as the page's Intl.NumberFormat(useGrouping: "min2"):
    # scores stay "5000", the game's name.
    return format_decimal(n, locale=lang or language.get(), group_separator=abs(n) >= 10_000)


def percent(p: float, lang: str | None = None) -> str:
    """The probability `p` as a percentage with one decimal, as `lang` (default: the
    language in use) writes one: "42.3%", "42,3 %"."""
    from babel import Locale
    from babel.numbers import format_percent

    lang = lang or language.get()
    pattern = Locale.parse(lang).percent_formats[None].pattern  # "#,##0 %" in French
    return format_percent(p, pattern.replace("0", "0.0", 1), locale=lang)


def timespan(seconds: float, lang: str | None = None) -> str:
    """A length of time as `lang` (default: the language in use) says one, in its
    largest fitting unit (Babel's ``format_timedelta``): "30 minutes", "30 минут"."""
    from babel.dates import format_timedelta

    return format_timedelta(seconds, locale=lang or language.get())


def _fill(text: str, values: Mapping[str, object]) -> str:
    shown = {k: number(v) if type(v) is int else v for k, v in values.items()}
    return text.format_map(shown)


# ------------------------------------------------------------ choosing the language
def negotiate(preferences: list[str] | str | None) -> str:
    """The first of `preferences` (language tags in order, or an ``Accept-Language``
    header with q-values) that this project speaks, by its language ("ru-RU" is "ru");
    English if none."""
    if isinstance(preferences, str):
        preferences = accept_language(preferences)
    for tag in preferences or []:
        base = re.split(r"[-_.@]", tag.strip().lower(), maxsplit=1)[0]
        if base in LANGUAGES:
            return base
    return SOURCE_LANGUAGE


def accept_language(header: str) -> list[str]:
    """The tags of an ``Accept-Language`` header, most wanted first (q=0 left out)."""
    wanted = []
    for i, part in enumerate(header.split(",")[:32]):  # a header of thousands: its head
        tag, _, params = part.strip().partition(";")
        match = re.search(r"q\s*=\s*([^;,\s]*)", params)
        try:
            q = float(match.group(1)) if match else 1.0
        except ValueError:
            q = 0.0
        if tag.strip() and tag.strip() != "*" and q > 0:
            wanted.append((-q, i, tag.strip()))
    return [tag for *_, tag in sorted(wanted)]


LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


def language_from_environment(environ: Mapping[str, str] | None = None) -> str:
    """The language the environment asks for, as gettext reads it: ``LANGUAGE`` (a
    colon-separated list), then ``LC_ALL``, ``LC_MESSAGES``, ``LANG``; "C" and "POSIX"
    are English. English if none is spoken here."""
    environ = os.environ if environ is None else environ
    for variable in LOCALE_VARIABLES:
        value = environ.get(variable, "")
        if not value:
            continue
        tags = value.split(":") if variable == "LANGUAGE" else [value]
        tags = [t for t in tags if t and t.split(".")[0] not in ("C", "POSIX")]
        if tags and (lang := negotiate(tags)) != SOURCE_LANGUAGE:
            return lang
        if variable != "LANGUAGE":  # the first set locale variable decides
            return SOURCE_LANGUAGE
    return SOURCE_LANGUAGE


# ------------------------------------------------------------- checking catalogues
def placeholders(text: str) -> set[str]:
    """The ``{names}`` of a text (what ``str.format`` fills)."""
    try:
        return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
    except ValueError:
        return {"<unbalanced brace>"}


def catalogue_problems(lang: str) -> list[str]:
    """What `lang`'s catalogue lacks against the template: a message missing, empty,
    fuzzy, with the wrong number of plural forms, or whose placeholders differ from
    the English (a singular form may leave out ``{n}``: "один кубик"); entries the
    template no longer has. Empty when the catalogue is complete."""
    from babel.messages.pofile import read_po

    with TEMPLATE.open("rb") as f:
        template = read_po(f)
    with catalogue_path(lang).open("rb") as f:
        catalogue = read_po(f, locale=lang)
    problems = []
    for message in template:
        if not message.id:
            continue
        ids = [message.id] if isinstance(message.id, str) else list(message.id)
        label = f"{lang}: {message.context + '|' if message.context else ''}{ids[0]!r}"
        found = catalogue.get(message.id, context=message.context)
        if found is None:
            problems.append(f"{label} is missing (run make messages)")
            continue
        if found.fuzzy:
            problems.append(f"{label} is fuzzy: check it, then remove the flag")
            continue
        forms = [found.string] if isinstance(found.string, str) else list(found.string)
        if len(ids) > 1 and len(forms) != catalogue.num_plurals:
            problems.append(f"{label} has {len(forms)} forms, {lang} needs {catalogue.num_plurals}")
        if not all(form.strip() for form in forms):
            problems.append(f"{label} is not translated")
            continue
        needed = set().union(*map(placeholders, ids))
        for form in forms:
            extra, lost = placeholders(form) - needed, needed - placeholders(form)
            if extra or (lost - {"n"} if len(ids) > 1 else lost):
                problems.append(f"{label}: placeholders {sorted(placeholders(form))}")
    problems += [f"{lang}: {key!r} is obsolete (run make messages)" for key in catalogue.obsolete]
    return problems


def catalogue_json(lang: str) -> dict:
    """`lang`'s catalogue for the page: ``{"lang", "messages"}``, a message by its msgid
    ("context\\u0004msgid" with a context), a plural one as its forms by CLDR plural
    category ("one", "few", "many", "other"), which the page picks with
    ``Intl.PluralRules``."""
    check_language(lang)
    if lang == SOURCE_LANGUAGE:
        return {"lang": lang, "messages": {}}
    from babel.messages.pofile import read_po

    with catalogue_path(lang).open("rb") as f:
        catalogue = read_po(f, locale=lang)
    categories = plural_categories(lang, catalogue.plural_expr, catalogue.num_plurals)
    messages: dict[str, object] = {}
    for message in catalogue:
        if not message.id or message.fuzzy:
            continue
        first = message.id if isinstance(message.id, str) else message.id[0]
        key = f"{message.context}\u0004{first}" if message.context else first
        if isinstance(message.id, str):
            if message.string:
                messages[key] = message.string
        elif all(message.string):
            messages[key] = dict(zip(categories, message.string, strict=True))
    return {"lang": lang, "messages": messages}


@cache
def plural_categories(lang: str, plural_expr: str, count: int) -> tuple[str, ...]:
    """The CLDR category of each of a catalogue's plural forms (gettext numbers them),
    found by evaluating both rules on sample counts."""
    from babel import Locale

    index, category = gettext.c2py(plural_expr), Locale.parse(lang).plural_form
    found: list[str | None] = [None] * count
    for n in [*range(200), 1_000_000, 2_000_000]:
        found[index(n)] = found[index(n)] or category(n)
    return tuple(c or "other" for c in found)
