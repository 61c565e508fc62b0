"""Guest-facing texts, one gettext message catalogue per language, chosen by the guest's Telegram
``language_code`` (:func:`language_of`).

A language is a file: ``shared/locales/<lang>/LC_MESSAGES/guest.po`` (``<lang>`` a Babel locale
identifier: ``de``, ``pt_BR``). Every catalogue found there is loaded with Babel (:func:`babel.messages.
pofile.read_po`) when this module is imported; nothing in the code lists the languages. The catalogues are
"monolingual" gettext (as Weblate calls it): the ``msgid`` is a key (``linked``) and the English catalogue
holds the source texts; ``msgctxt`` says where a text is shown:

============== =============================================================================================
``msgctxt``    texts
============== =============================================================================================
``bot``        the bot's messages and buttons (:data:`TEXTS`, :func:`text`); placeholders ``{link}``
``set_title``  the sticker set's title (:data:`PACK_TITLE`, Bot API 1-64 characters)
``menu``       the guests' command menu (:data:`GUEST_COMMANDS`, BotCommand 1-256 characters)
``admin_menu`` the admins' extra commands (:data:`ADMIN_COMMANDS`)
``consent``    the kiosk's consent screen (``consent``: one point per line; placeholders ``{providers}``,
               ``{selfie_hours}``, ``{sticker_days}``, ``{session_days}``; ``or``: between two providers)
``provider``   each AI provider's name as the consent screen says it (:data:`shared.ai_providers.PROVIDERS`)
``kiosk``      the kiosk page's own words (``GET /kiosk/words.js``; ``outfit_<id>``: an outfit's title in
               a language other than English, whose title is the outfit's own)
``download``   the download page ``/d/<token>`` (:func:`download_text`; placeholder ``{count}``)
============== =============================================================================================

A text a catalogue lacks (or marks fuzzy) is the English one; :func:`catalogue_problems` names each such
gap and each placeholder that differs from English (``tests/shared/test_catalogues.py`` holds every shipped
catalogue to it). Adding a language: README "Languages".

The meaning of each bot text follows the spec's job outcomes (spec/002 "Job-level outcomes", spec/000
deadlines).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from babel.core import Locale, UnknownLocaleError
from babel.messages.pofile import read_po

#: Where the catalogues are: ``<lang>/LC_MESSAGES/guest.po`` below it.
LOCALES_DIR: Final = Path(__file__).parent / "locales"
DOMAIN: Final = "guest"
#: The language every other falls back to, and the source of the keys.
SOURCE_LANGUAGE: Final = "en"
#: The ``msgctxt`` of each kind of text (module docstring).
CONTEXTS: Final = ("bot", "set_title", "menu", "admin_menu", "consent", "provider", "kiosk", "download")

Table = Mapping[str, Mapping[str, str]]
"""key → language → text."""


def read_catalogue(path: Path, language: str) -> dict[tuple[str, str], str]:
    """The texts of one ``.po`` file as ``(msgctxt, msgid) → msgstr``; an empty or fuzzy entry is left
    out (as ``pybabel compile`` leaves it out of the ``.mo``), and so is the header.

    Raises:
        babel.messages.pofile.PoFileError: the file is not valid PO syntax.
        OSError: the file cannot be read.
    """
    with path.open("rb") as file:
        catalog = read_po(file, locale=language, domain=DOMAIN, abort_invalid=True)
    return {
        (message.context or "", str(message.id)): str(message.string)
        for message in catalog
        if message.id and message.string and not message.fuzzy
    }


def catalogue_files(directory: Path) -> dict[str, Path]:
    """Each language of ``directory`` (the folder name of ``<lang>/LC_MESSAGES/guest.po``) with its file."""
    return {path.parents[1].name: path for path in sorted(directory.glob(f"*/LC_MESSAGES/{DOMAIN}.po"))}


def _language_id(name: str) -> str:
    """``name`` when it is a locale Babel knows (``de``, ``pt_BR``), else :class:`ValueError`."""
    try:
        Locale.parse(name)
    except (ValueError, UnknownLocaleError) as exc:
        raise ValueError(f"{LOCALES_DIR.name}/{name}: not a locale identifier such as de or pt_BR") from exc
    return name


@dataclass(frozen=True)
class Catalogues:
    """The guest texts of every language: ``messages[language][(msgctxt, msgid)]``."""

    messages: Mapping[str, Mapping[tuple[str, str], str]]

    @classmethod
    def load(cls, directory: Path = LOCALES_DIR) -> Catalogues:
        """Every catalogue of ``directory`` (module docstring).

        Raises:
            ValueError: no English catalogue, or a folder name that is no locale identifier.
            babel.messages.pofile.PoFileError: a file that is not valid PO syntax.
        """
        files = catalogue_files(directory)
        if SOURCE_LANGUAGE not in files:
            raise ValueError(f"{directory}: no {SOURCE_LANGUAGE}/LC_MESSAGES/{DOMAIN}.po, the source texts")
        return cls({_language_id(lang): read_catalogue(path, lang) for lang, path in files.items()})

    @property
    def languages(self) -> tuple[str, ...]:
        """English first, then the others in alphabetical order."""
        return (SOURCE_LANGUAGE, *sorted(lang for lang in self.messages if lang != SOURCE_LANGUAGE))

    def table(self, context: str) -> dict[str, dict[str, str]]:
        """The texts of one ``msgctxt`` as ``key → language → text``, keys in the English catalogue's
        order; a text a catalogue lacks is the English one."""
        source = self.messages[SOURCE_LANGUAGE]
        return {
            key: {lang: self.messages[lang].get((ctx, key), text) for lang in self.languages}
            for (ctx, key), text in source.items()
            if ctx == context
        }

    def language_of(self, language_code: str | None) -> str:
        """The guest's text language for a Telegram ``language_code`` (an IETF tag such as ``de-AT``,
        ``pt-br``, ``uk``; ``None`` when the client sends none): :meth:`catalogue_of`, else ``en``.
        Never raises."""
        return self.catalogue_of(language_code) or SOURCE_LANGUAGE

    def catalogue_of(self, language_code: str | None) -> str | None:
        """The nearest catalogue of a Telegram ``language_code``: the tag's language and region
        (``pt_BR``) when there is such a catalogue, else its language (``de-AT`` → ``de``), else ``ru``
        for the :data:`RUSSIAN_READERS` (when there is a Russian catalogue); ``None`` when none fits
        (``fr``) or there is no tag. Case and separator (``-``/``_``) are ignored; never raises."""
        if not language_code:
            return None
        primary, _, rest = language_code.replace("_", "-").strip().partition("-")
        primary = primary.lower()
        region = rest.split("-")[-1].upper() if rest else ""
        for candidate in (f"{primary}_{region}" if region else "", primary):
            if candidate and candidate in self.messages:
                return candidate
        if primary in RUSSIAN_READERS and "ru" in self.messages:
            return "ru"
        return None

    def text(self, context: str, key: str, language_code: str | None, **values: str | int) -> str:
        """The text ``key`` of ``context`` in the guest's language (:meth:`language_of`), formatted with
        ``values`` (``str.format``).

        Raises:
            KeyError: ``key`` is not in the English catalogue, or a placeholder lacks its value.
        """
        source = self.messages[SOURCE_LANGUAGE][(context, key)]
        template = self.messages[self.language_of(language_code)].get((context, key), source)
        return template.format(**values)


def placeholders(text: str) -> list[str]:
    """The placeholders of ``text``, sorted: ``{name}`` fields as ``{name}`` and printf conversions as
    written (``%(name)s``, ``%d``; ``%%`` is a literal).

    Raises:
        ValueError: a stray brace (a literal brace is written ``{{``/``}}``).
    """
    fields = [f"{{{name}}}" for _, name, _, _ in string.Formatter().parse(text) if name is not None]
    printf = [m for m in _PRINTF.findall(text) if m != "%%"]
    return sorted(fields + printf)


def catalogue_problems(directory: Path = LOCALES_DIR) -> list[str]:
    """What is wrong with the catalogues of ``directory``, one line each (``[]``: nothing): a file Babel
    cannot read or a folder that is no locale, an English text whose ``msgctxt`` is none of
    :data:`CONTEXTS` (no code would show it), an English key a language does not translate (missing,
    empty or fuzzy), a key English does not have, and a text whose placeholders (:func:`placeholders`)
    differ from the English text's."""
    files = catalogue_files(directory)
    if SOURCE_LANGUAGE not in files:
        return [f"no {SOURCE_LANGUAGE}/LC_MESSAGES/{DOMAIN}.po"]
    loaded: dict[str, dict[tuple[str, str], str]] = {}
    problems: list[str] = []
    for lang, path in files.items():
        try:
            loaded[_language_id(lang)] = read_catalogue(path, lang)
        except Exception as exc:  # a bad file is a finding here, not a crash
            problems.append(f"{lang}: {exc}")
    source = loaded.get(SOURCE_LANGUAGE, {})
    for ctx, key in sorted(where for where in source if where[0] not in CONTEXTS):
        problems.append(f"{SOURCE_LANGUAGE}: {ctx}/{key}: msgctxt is none of {', '.join(CONTEXTS)}")
    for lang, messages in loaded.items():
        for ctx, key in sorted(source.keys() - messages.keys()):
            problems.append(f"{lang}: {ctx}/{key} is not translated")
        for ctx, key in sorted(messages.keys() - source.keys()):
            problems.append(f"{lang}: {ctx}/{key} is no English key")
        for where, text in messages.items():
            if where not in source:
                continue
            try:
                mine, english = placeholders(text), placeholders(source[where])
            except ValueError as exc:
                problems.append(f"{lang}: {where[0]}/{where[1]}: {exc}")
                continue
            if mine != english:
                problems.append(f"{lang}: {where[0]}/{where[1]} has placeholders {mine}, English {english}")
    return problems


_PRINTF: Final = re.compile(r"%%|%(?:\(\w+\))?[-#0 +]*\d*(?:\.\d+)?[diouxXeEfFgGcrsa]")

#: Telegram ``language_code`` primary subtags (ISO 639-1, or 639-3 where there is none) answered in Russian:
#: languages whose speakers, as a group, read Russian more readily than English. Every other code, and
#: none at all, is answered in English, unless it has a catalogue of its own (:meth:`Catalogues.language_of`).
#: Reasoning, by group:
#:
#: - ``ru``; ``uk`` and ``be``: East Slavic, mutually intelligible enough to read Russian, which nearly all
#:   speakers also learnt at school (a Ukrainian client who prefers English can switch the app to English);
#: - ``kk``, ``ky``, ``uz``, ``tg``, ``tk``: Central Asia, where Russian is an official or the main second
#:   language (media, higher education) and English is far less widespread;
#: - ``hy``, ``az``: the South Caucasus states where Russian is still the usual second language
#:   (Russian-language schools, media), ahead of English in every age group;
#: - ``tt``, ``ba``, ``cv``, ``ce``, ``os``, ``sah``, ``av``, ``ab``: languages of Russia's republics (and
#:   Abkhazia), whose speakers are practically all bilingual in Russian.
#:
#: Left out on purpose: ``ka`` (Georgian; the guests of an evening event are mostly under 35, and that age
#: group reads English ahead of Russian), ``mn``, ``ro`` and the Baltic ``lv``, ``lt``, ``et`` (English is
#: the second language of the young; Russian speakers there set their client to ``ru`` anyway).
RUSSIAN_READERS: Final[frozenset[str]] = frozenset(
    {
        "ru",
        "uk",
        "be",
        "kk",
        "ky",
        "uz",
        "tg",
        "tk",
        "hy",
        "az",
        "tt",
        "ba",
        "cv",
        "ce",
        "os",
        "sah",
        "av",
        "ab",
    }
)


#: The shipped catalogues (:data:`LOCALES_DIR`), loaded once at import.
CATALOGUES: Final = Catalogues.load()
#: Every language with a catalogue, English first.
LANGUAGES: Final = CATALOGUES.languages
#: The bot's messages and buttons: key → language → text.
TEXTS: Final[Table] = CATALOGUES.table("bot")
#: The sticker set's title per language.
PACK_TITLE: Final[Mapping[str, str]] = CATALOGUES.table("set_title")["pack_title"]

#: The bot's command menu (``setMyCommands``, :mod:`telegram_gateway.menu`): each command's description per
#: language (Bot API BotCommand: 1-256 characters). ``/start`` is left out: Telegram's own Start button and
#: the booth's QR code send it. The guests' commands are those every private chat answers
#: (:mod:`telegram_gateway.handlers`, :mod:`telegram_gateway.erasure`); the admins' extra ones answer only
#: ``ADMIN_USER_IDS`` (:mod:`telegram_gateway.admin`).
GUEST_COMMANDS: Final[Table] = CATALOGUES.table("menu")
ADMIN_COMMANDS: Final[Table] = CATALOGUES.table("admin_menu")


def language_of(language_code: str | None) -> str:
    """The guest's text language for a Telegram ``language_code``: :meth:`Catalogues.language_of` of the
    shipped catalogues. Never raises."""
    return CATALOGUES.language_of(language_code)


def catalogue_of(language_code: str | None) -> str | None:
    """The shipped catalogue nearest to a Telegram ``language_code`` (:meth:`Catalogues.catalogue_of`);
    ``None`` when none fits. Never raises."""
    return CATALOGUES.catalogue_of(language_code)


def download_text(key: str, language_code: str | None, **values: str) -> str:
    """The download page's text ``key`` (``msgctxt "download"``) in ``language_code``'s language.

    Raises:
        KeyError: unknown ``key``.
    """
    return CATALOGUES.text("download", key, language_code, **values)


def text(key: str, language_code: str | None, **values: str) -> str:
    """The bot's text ``key`` in the guest's language, formatted with ``values``.

    Raises:
        KeyError: unknown ``key``.
    """
    return CATALOGUES.text("bot", key, language_code, **values)
