"""The kiosk page's words come from the catalogues (``shared/locales``, ``msgctxt "kiosk"``): ``GET
/kiosk/words.js`` serves them in every language, and every word the page's script and HTML ask for by
name is in the English catalogue, so kiosk and catalogue cannot drift apart."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from ingest.main import create_app
from shared.repositories import Database
from shared.streams import Publisher
from shared.texts import CATALOGUES, TEXTS
from tests.ingest.ingest_helpers import app_client, ingest_settings

KIOSK = Path(__file__).resolve().parents[2] / "services" / "ingest" / "ingest" / "static" / "kiosk"
PREFIX = "window.KIOSK_WORDS = "


def words_of(script: str) -> dict[str, dict[str, str]]:
    """The ``{language: {key: text}}`` a ``words.js`` sets."""
    line = script[script.index(PREFIX) + len(PREFIX) :].rstrip().removesuffix(";")
    words: dict[str, dict[str, str]] = json.loads(line)
    return words


def keys_asked_for(script: str, page: str) -> set[str]:
    """The words a kiosk script (``t("key")``, ``t("key", …)``) and page (``data-i18n``) name."""
    asked = set(re.findall(r"""\bt\(\s*["']([a-z0-9_]+)["']""", script))
    asked |= set(re.findall(r"""data-i18n=["']([a-z0-9_]+)["']""", page))
    for pair in re.findall(r"""t\(state\.session \? "([a-z_]+)" : "([a-z_]+)"\)""", script):
        asked |= set(pair)
    return asked


@pytest.mark.unit
def test_every_word_the_kiosk_names_is_in_the_catalogue() -> None:
    script, page = (KIOSK / "kiosk.js").read_text("utf-8"), (KIOSK / "index.html").read_text("utf-8")
    asked = keys_asked_for(script, page)
    assert len(asked) > 40  # the pattern finds the page's words (a broken pattern would find none)
    english = set(CATALOGUES.table("kiosk"))
    assert asked - english == set()
    assert {"welcome_title", "agree", "not_you", "hi", "welcome_opening"} <= asked
    # a word the catalogue lacks is found
    broken = script + '\n$("x").textContent = t("no_such_word");\n'
    assert keys_asked_for(broken, page) - english == {"no_such_word"}


@pytest.mark.unit
def test_the_kiosk_script_carries_no_words_of_its_own() -> None:
    script = (KIOSK / "kiosk.js").read_text("utf-8")
    for versions in CATALOGUES.table("kiosk").values():
        for lang in ("en", "ru"):  # the table kiosk.js used to hold
            if len(versions[lang]) > 20:  # short ones ("Back", "Sticker Booth") may appear in comments
                assert versions[lang] not in script, versions[lang]


async def test_the_kiosk_gets_its_words_in_every_language(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    app = create_app(ingest_settings(database_url, redis_url), db=db, publisher=Publisher(redis))
    async with app_client(app, base_url="http://kiosk") as client:
        answer = await client.get("/kiosk/words.js")
        again = await client.get("/kiosk/words.js", headers={"If-None-Match": answer.headers["etag"]})
        page = await client.get("/kiosk")
        config = (await client.get("/kiosk/config")).json()
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/javascript")
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    assert again.status_code == 304
    words = words_of(answer.text)
    assert list(words) == ["en", "de", "es", "ru"]  # the order the language button steps through
    table = CATALOGUES.table("kiosk")
    assert words == {lang: {key: versions[lang] for key, versions in table.items()} for lang in words}
    assert words["de"]["agree"] == "Einverstanden" and words["es"]["not_you"] == "¿No eres tú?"
    # the bot's words the kiosk shows too come in every language as well
    assert config["guest_texts"]["no_face"]["es"] == TEXTS["no_face"]["es"]
    assert set(config["guest_texts"]["maintenance"]) == set(words)
    # the page loads the words before its script
    assert page.text.index('src="/kiosk/words.js"') < page.text.index('src="/kiosk/assets/kiosk.js"')
