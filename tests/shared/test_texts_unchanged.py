"""The English and Russian guest texts are byte for byte what they were before they moved into the message
catalogues (issue 23 item 4): ``data/guest_texts_en_ru.json`` was written from the code of commit 15f3a28
(``shared.texts.TEXTS``, ``PACK_TITLE``, ``GUEST_COMMANDS``, ``ADMIN_COMMANDS``, ``ingest.consent.
DEFAULT_TEXTS``, ``telegram_gateway.handlers.TRY_AGAIN`` and the kiosk's own ``TEXT`` table of ``kiosk.js``)
before any of them moved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ingest.consent import DEFAULT_TEXTS
from shared.texts import ADMIN_COMMANDS, CATALOGUES, GUEST_COMMANDS, PACK_TITLE, TEXTS

pytestmark = pytest.mark.unit

SNAPSHOT = Path(__file__).parent / "data" / "guest_texts_en_ru.json"
BEFORE: dict[str, Any] = json.loads(SNAPSHOT.read_text("utf-8"))
LANGUAGES = ("en", "ru")


def only(table: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """``table`` (key → language → text) cut to English and Russian."""
    return {key: {lang: versions[lang] for lang in LANGUAGES} for key, versions in table.items()}


def test_the_bots_texts_are_unchanged_in_english_and_russian() -> None:
    assert only({key: TEXTS[key] for key in BEFORE["texts"]}) == BEFORE["texts"]
    # the gateway's answer while the database is down was English only (handlers.TRY_AGAIN)
    assert TEXTS["busy"]["en"] == BEFORE["gateway_busy"]["en"]


def test_the_set_title_and_the_command_menu_are_unchanged() -> None:
    assert {lang: PACK_TITLE[lang] for lang in LANGUAGES} == BEFORE["pack_title"]
    assert only(dict(GUEST_COMMANDS)) == BEFORE["guest_commands"]
    assert only(dict(ADMIN_COMMANDS)) == BEFORE["admin_commands"]


def test_the_consent_text_is_unchanged() -> None:
    assert {lang: DEFAULT_TEXTS[lang] for lang in LANGUAGES} == BEFORE["consent"]


def test_the_kiosks_words_are_unchanged() -> None:
    words = CATALOGUES.table("kiosk")
    for lang in LANGUAGES:
        assert {key: words[key][lang] for key in BEFORE["kiosk"][lang]} == BEFORE["kiosk"][lang]
