"""The link message and its preview (issue 13 item 2), through delivery and the gateway's executor on the
Telegram simulator: the link comes with an "Add stickers" URL button, the set's first sticker follows once,
a redelivered "link sent" sends neither again, and a preview Telegram refuses leaves the job delivered."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from shared import command_ids
from shared.db.tables import jobs
from shared.domain import CommandStatus, Job
from shared.downloads import download_key, job_of_token
from shared.events import Event
from shared.joblife import resend_link
from shared.link_message import link_message, pack_link
from shared.messages import TelegramResult
from shared.repositories import Database
from shared.subjects import JobStep
from shared.texts import PACK_TITLE, text
from tests.delivery.delivery_helpers import Rig, current, gateway_rig, rendered_job

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
GUEST = 5003


@pytest.fixture
async def rig(db: Database, redis: aioredis.Redis, database_url: str, redis_url: str) -> AsyncIterator[Rig]:
    async with gateway_rig(db, redis, database_url, redis_url, guest=GUEST, first_name="Lev") as rig:
        yield rig


async def deliver(rig: Rig, db: Database, job: Job) -> None:
    """Create the set, poll it (ready), send the link: the job ends ``delivered``."""
    await rig.delivery.request_set(job.id)
    await rig.step()  # createNewStickerSet
    async with db.transaction() as repos:
        await repos.conn.execute(
            sa.update(jobs).where(jobs.c.id == job.id).values(next_poll_at=sa.func.now())
        )
    assert await rig.delivery.poll_due() == 1
    await rig.step()  # getStickerSet: ready, the link is queued
    await rig.step()  # sendMessage: delivered, the preview is queued
    assert (await current(db, job)).status == "delivered"


async def bot_messages(rig: Rig) -> list[dict[str, Any]]:
    return [m for m in await rig.sim.get(f"/sim/chats/{GUEST}/messages") if m["from_bot"]]


async def test_the_link_has_an_add_stickers_button_and_the_first_sticker_follows_once(
    rig: Rig, db: Database
) -> None:
    job = await rendered_job(db, guest=GUEST, name="Lev", language="ru-RU", stickers=3)
    await deliver(rig, db, job)
    assert await rig.step() == [command_ids.preview(job.id)]  # the preview runs once
    name = (await current(db, job)).sticker_set_name
    assert name is not None
    link, preview = (await bot_messages(rig))[-2:]
    assert link["text"] == f"Твой набор стикеров готов! Нажми, чтобы добавить: {pack_link(name)}"
    assert link["reply_markup"] == {
        "inline_keyboard": [[{"text": "Добавить стикеры", "url": f"https://t.me/addstickers/{name}"}]]
    }
    first = (await rig.sim.get(f"/sim/sticker-sets/{name}"))["stickers"][0]
    assert preview["sticker"]["file_id"] == first["file_id"] and preview["sticker"]["set_name"] == name

    async with db.transaction() as repos:  # delivery read the "link sent" result again: nothing new
        link_id = (await repos.tg_commands.for_subject("job", job.id, step="link"))[-1].command_id
    subject = JobStep(id=job.id, step="link", n=1)
    link_sent = TelegramResult(command_id=link_id, ok=True, result={"message_id": 1}, subject=subject)
    await rig.delivery.handle_result(link_sent)
    await rig.executor.execute(command_ids.preview(job.id))  # and the gateway got the preview again
    assert await rig.step() == []
    assert len(await bot_messages(rig)) == 2  # the link and the preview, nothing else
    assert len(await rig.calls("sendSticker")) == 1 and len(await rig.calls("sendMessage")) == 1


async def test_with_a_public_base_url_the_link_also_opens_the_download_page(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    base = "https://booth.example.com"
    async with gateway_rig(
        db, redis, database_url, redis_url, guest=GUEST, public_base_url=base, first_name="Lev"
    ) as rig:
        job = await rendered_job(db, guest=GUEST, name="Lev", language="en", stickers=3)
        await deliver(rig, db, job)
        link = [m for m in await bot_messages(rig) if "reply_markup" in m][-1]
    add, download = link["reply_markup"]["inline_keyboard"]
    assert add[0]["text"] == "Add stickers" and download[0]["text"] == "Download the files"
    url = download[0]["url"]
    assert url.startswith(f"{base}/d/")
    async with db.transaction() as repos:
        assert job_of_token(await download_key(repos), url.rpartition("/")[2]) == job.id


async def test_a_refused_preview_leaves_the_job_delivered_and_the_link_alone(rig: Rig, db: Database) -> None:
    job = await rendered_job(db, guest=GUEST, name="Lev", stickers=3)
    await deliver(rig, db, job)
    await rig.sim.post(
        "/sim/faults",
        {
            "method": "sendSticker",
            "kind": "error",
            "error_code": 400,
            "description": "Bad Request: wrong file identifier/HTTP URL specified",
        },
    )
    await rig.step()
    async with db.transaction() as repos:
        preview = await repos.tg_commands.get(command_ids.preview(job.id))
    assert preview is not None and preview.status == CommandStatus.FAILED
    assert (await current(db, job)).status == "delivered"
    texts = [m.get("text") for m in await bot_messages(rig)]
    assert texts[-1] is not None and texts[-1].startswith("Your sticker pack is ready!")


def test_the_link_message_is_built_in_one_place_for_any_language() -> None:
    message = link_message(42, "sbx_by_bot", "kk")
    assert message.chat_id == 42 and message.text.startswith("Твой набор")
    assert message.reply_markup == {
        "inline_keyboard": [[{"text": "Добавить стикеры", "url": "https://t.me/addstickers/sbx_by_bot"}]]
    }
    assert link_message(42, "sbx_by_bot", "ka").text.startswith("Your sticker pack is ready!")
    spanish = link_message(42, "sbx_by_bot", "es-MX")
    assert (
        spanish.text
        == "¡Tu paquete de stickers está listo! Toca para añadirlo: https://t.me/addstickers/sbx_by_bot"
    )
    assert spanish.reply_markup is not None
    assert spanish.reply_markup["inline_keyboard"][0][0]["text"] == "Añadir stickers"


async def test_a_german_guest_gets_a_german_set_title_and_link(rig: Rig, db: Database) -> None:
    """Through delivery, the gateway and the simulator: the set and the link in the language stored when
    the guest linked (``de-AT``, the nearest catalogue ``de``)."""
    job = await rendered_job(db, guest=GUEST, name="Lev", language="de-AT", stickers=3)
    await deliver(rig, db, job)
    name = (await current(db, job)).sticker_set_name
    assert name is not None
    link = (await bot_messages(rig))[-1]
    assert link["text"] == f"Dein Sticker-Set ist fertig! Tippe hier, um es hinzuzufügen: {pack_link(name)}"
    assert link["reply_markup"]["inline_keyboard"][0][0]["text"] == "Sticker hinzufügen"
    assert (await rig.sim.get(f"/sim/sticker-sets/{name}"))["title"] == "Meine Sticker"


async def test_an_event_names_the_set_and_words_the_link_in_the_languages_it_sets(
    rig: Rig, db: Database
) -> None:
    """The event's ``set_title[lang]`` and own texts for its guests (issue 23); a language it sets
    nothing for keeps the catalogue's, and so does the default event (the test above)."""
    async with db.transaction() as repos:
        await repos.events.save(
            Event(
                id="gala",
                name="Gala",
                set_title={"de": "Gala-Sticker 2026"},
                texts={"de": {"pack_ready": "Eure Gala-Sticker: {link}", "add_stickers": "Dazu!"}},
            )
        )
    german = await rendered_job(db, guest=GUEST, name="Lev", language="de-AT", stickers=3, event_id="gala")
    await deliver(rig, db, german)
    await rig.step()  # the preview
    english = await rendered_job(db, guest=GUEST, name="Lev", language="en", stickers=3, event_id="gala")
    await deliver(rig, db, english)
    titles = []
    for job in (german, english):
        name = (await current(db, job)).sticker_set_name
        titles.append((await rig.sim.get(f"/sim/sticker-sets/{name}"))["title"])
    assert titles == ["Gala-Sticker 2026", PACK_TITLE["en"]]
    german_link, english_link = [
        m for m in await bot_messages(rig) if str(m.get("text", "")).startswith(("Eure", "Your"))
    ]
    german_name = (await current(db, german)).sticker_set_name
    assert german_name is not None
    assert german_link["text"] == f"Eure Gala-Sticker: {pack_link(german_name)}"
    assert german_link["reply_markup"]["inline_keyboard"][0][0]["text"] == "Dazu!"
    assert english_link["reply_markup"]["inline_keyboard"][0][0]["text"] == "Add stickers"


async def test_a_guest_whose_language_the_event_does_not_serve_gets_its_first_and_so_does_a_resend(
    rig: Rig, db: Database
) -> None:
    """A French guest at an event in German and English: the set's title and the link in German, the
    event's first language, and an admin's "Resend link" (:func:`shared.joblife.resend_link`) builds the
    same words."""
    async with db.transaction() as repos:
        await repos.events.save(
            Event(
                id="gala",
                name="Gala",
                languages=("de", "en"),
                set_title={"de": "Gala-Sticker 2026"},
                texts={"de": {"pack_ready": "Eure Gala-Sticker: {link}"}},
            )
        )
    job = await rendered_job(db, guest=GUEST, name="Lev", language="fr", stickers=3, event_id="gala")
    await deliver(rig, db, job)
    name = (await current(db, job)).sticker_set_name
    assert name is not None
    assert (await rig.sim.get(f"/sim/sticker-sets/{name}"))["title"] == "Gala-Sticker 2026"
    link = (await bot_messages(rig))[-1]
    assert link["text"] == f"Eure Gala-Sticker: {pack_link(name)}"
    assert link["reply_markup"]["inline_keyboard"][0][0]["text"] == text("add_stickers", "de")
    async with db.transaction() as repos:
        resent = await resend_link(repos, job.id)
        assert resent is not None
        row = await repos.tg_commands.get(resent)
    assert row is not None and row.params["text"] == link["text"]


def test_an_own_text_whose_placeholders_do_not_fit_is_not_sent() -> None:
    event = Event(id="e", name="E", texts={"en": {"pack_ready": "Here: {url}", "add_stickers": "Grab them"}})
    assert event.text("pack_ready", "en-GB", link="L") == text("pack_ready", "en", link="L")
    assert event.text("add_stickers", "en") == "Grab them"
    assert event.text("add_stickers", "de") == text("add_stickers", "de")
