"""Guest texts: every Telegram ``language_code`` gets the nearest catalogue's language, Russian for the
Russian readers without one of their own, else English (``shared.texts.language_of``)."""

from __future__ import annotations

import pytest

from shared.texts import RUSSIAN_READERS, TEXTS, language_of, text

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("code", "language"),
    [
        ("ru", "ru"),
        ("uk", "ru"),
        ("be", "ru"),
        ("kk", "ru"),
        ("KY", "ru"),
        ("uz-Latn", "ru"),
        ("tg", "ru"),
        ("hy", "ru"),
        ("az_AZ", "ru"),
        ("tt", "ru"),
        ("ka", "en"),
        ("lv", "en"),
        ("en-US", "en"),
        ("pt-br", "en"),
        ("de", "de"),
        ("de-AT", "de"),
        ("DE_ch", "de"),
        ("es", "es"),
        ("es-419", "es"),
        ("es-MX", "es"),
        ("fr", "en"),
        ("", "en"),
        (None, "en"),
        ("-", "en"),
        ("r", "en"),
        ("russian", "en"),
    ],
)
def test_every_language_code_maps_to_the_nearest_language(code: str | None, language: str) -> None:
    assert language_of(code) == language


def test_the_russian_list_holds_only_primary_subtags() -> None:
    assert all(code.isalpha() and code.islower() and 2 <= len(code) <= 3 for code in RUSSIAN_READERS)


def test_every_text_exists_in_every_language() -> None:
    for key, versions in TEXTS.items():
        assert set(versions) == {"en", "ru", "de", "es"}, key
    assert text("pack_ready", "be", link="L").endswith("L")
    german = text("pack_ready", "de-AT", link="L")
    assert german == "Dein Sticker-Set ist fertig! Tippe hier, um es hinzuzufügen: L"
