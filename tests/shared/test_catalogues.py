"""The guest-text catalogues (``shared/locales/<lang>/LC_MESSAGES/guest.po``): every shipped catalogue is
complete with English's placeholders (and the check finds a broken copy), each text fits Telegram's
limits, and a new language is one new file, made with ``pybabel init`` as README "Languages" says."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.pofile import read_po, write_po

from shared.texts import (
    ADMIN_COMMANDS,
    DOMAIN,
    GUEST_COMMANDS,
    LANGUAGES,
    LOCALES_DIR,
    PACK_TITLE,
    Catalogues,
    catalogue_problems,
    placeholders,
)

pytestmark = pytest.mark.unit

PYBABEL = Path(sys.executable).parent / "pybabel"


def po(directory: Path, lang: str) -> Path:
    return directory / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A copy of the shipped catalogues to break."""
    target = tmp_path / "locales"
    shutil.copytree(LOCALES_DIR, target)
    return target


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text("utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), "utf-8")


def test_the_shipped_catalogues_are_complete_with_the_same_placeholders() -> None:
    assert catalogue_problems() == []
    assert LANGUAGES == ("en", "de", "es", "ru")  # the folders of shared/locales, nothing listed in code


def test_a_missing_or_fuzzy_text_is_found(copy: Path) -> None:
    edit(po(copy, "de"), 'msgstr "Sticker hinzufügen"', 'msgstr ""')
    edit(po(copy, "es"), 'msgctxt "bot"\nmsgid "erase_no"', '#, fuzzy\nmsgctxt "bot"\nmsgid "erase_no"')
    assert catalogue_problems(copy) == [
        "de: bot/add_stickers is not translated",
        "es: bot/erase_no is not translated",
    ]
    # and the booth still answers: a missing text is the English one
    assert Catalogues.load(copy).text("bot", "add_stickers", "de") == "Add stickers"


def test_a_changed_placeholder_is_found(copy: Path) -> None:
    edit(po(copy, "es"), "Toca para añadirlo: {link}", "Toca para añadirlo: {enlace}")
    edit(po(copy, "ru"), 'msgstr "Удалить всё"', 'msgstr "Удалить %s"')
    edit(po(copy, "de"), "innerhalb von {session_days} ", "innerhalb von {session_days ")
    assert catalogue_problems(copy) == [
        "de: consent/consent: expected '}' before end of string",
        "es: bot/pack_ready has placeholders ['{enlace}'], English ['{link}']",
        "ru: bot/erase_yes has placeholders ['%s'], English []",
    ]


def test_a_key_english_does_not_have_and_an_unreadable_file_are_found(copy: Path) -> None:
    with po(copy, "de").open("a", encoding="utf-8") as file:
        file.write('\nmsgctxt "bot"\nmsgid "farewell"\nmsgstr "Tschüss"\n')
    po(copy, "es").write_text('msgid "broken\n', "utf-8")
    problems = catalogue_problems(copy)
    assert problems[0].startswith("es: ") and len(problems) == 2, problems
    assert problems[1] == "de: bot/farewell is no English key"
    with po(copy, "en").open("a", encoding="utf-8") as file:
        file.write('\nmsgctxt "kiosks"\nmsgid "farewell"\nmsgstr "Bye"\n')
    assert "en: kiosks/farewell: msgctxt is none of bot, set_title" in catalogue_problems(copy)[1]
    shutil.rmtree(copy / "en")
    assert catalogue_problems(copy) == ["no en/LC_MESSAGES/guest.po"]


def test_placeholders_reads_both_styles() -> None:
    assert placeholders("{link} and %(name)s, %d, 100%% and {{literal}}") == ["%(name)s", "%d", "{link}"]


def test_every_text_fits_telegrams_limits() -> None:
    for lang in LANGUAGES:
        assert 1 <= len(PACK_TITLE[lang].strip()) <= 64, lang  # createNewStickerSet title
        for descriptions in (*GUEST_COMMANDS.values(), *ADMIN_COMMANDS.values()):
            assert 1 <= len(descriptions[lang]) <= 256, lang  # BotCommand description


def test_a_new_language_is_one_new_file(copy: Path) -> None:
    """README "Languages": ``pybabel init`` from the English catalogue, translate, done."""
    subprocess.run(
        [str(PYBABEL), "init", "-i", str(po(copy, "en")), "-d", str(copy), "-D", DOMAIN, "-l", "it"],
        check=True,
        capture_output=True,
    )
    italian = {("bot", "pack_ready"): "Il tuo pacchetto di sticker è pronto! Tocca per aggiungerlo: {link}"}
    with po(copy, "it").open("rb") as file:
        catalog = read_po(file, locale="it")
    for message in catalog:
        if message.id:
            message.string = italian.get((message.context or "", str(message.id)), f"[it] {message.string}")
    with po(copy, "it").open("wb") as file:
        write_po(file, catalog)

    catalogues = Catalogues.load(copy)
    assert catalogues.languages == ("en", "de", "es", "it", "ru")
    assert catalogues.language_of("it-CH") == "it"
    assert catalogues.text("bot", "pack_ready", "it", link="L") == (
        "Il tuo pacchetto di sticker è pronto! Tocca per aggiungerlo: L"
    )
    assert catalogues.table("menu")["help"]["it"] == "[it] How to get your sticker pack"
    assert catalogue_problems(copy) == []


def test_a_folder_that_is_no_locale_is_refused(copy: Path) -> None:
    shutil.copytree(copy / "de", copy / "klingon")
    with pytest.raises(ValueError, match="klingon: not a locale identifier"):
        Catalogues.load(copy)
    assert catalogue_problems(copy)[0].startswith("klingon: ")
