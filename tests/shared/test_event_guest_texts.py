"""An event's languages and own texts reach every guest text about a session (issue 23 item 1), not only
the link message: the failure text (:func:`shared.joblife.fail_job`), the worker's "no face" and
delivery's "still working" read the session's event through the job's context, and a guest whose Telegram
language the event does not serve is answered in the event's first language. A default-event guest keeps
the catalogue's texts. What is checked is what was queued for the gateway (``tg_commands`` params)."""

from __future__ import annotations

from datetime import timedelta

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from delivery.deadlines import enforce_deadlines
from shared.db.tables import jobs
from shared.domain import Job, JobStatus
from shared.errors import ErrorClass, NoFaceError
from shared.events import DEFAULT_EVENT, Event
from shared.joblife import fail_job
from shared.repositories import Database
from shared.streams import Publisher
from shared.texts import text
from tests.outbox_helpers import stored_texts
from tests.worker.test_job_lifecycle import failing, generator
from tests.worker.test_job_lifecycle import settings as worker_settings

pytestmark = pytest.mark.integration

#: An event in German and English with its own wording for some texts.
GALA = Event(
    id="gala",
    name="Gala",
    languages=("de", "en"),
    texts={
        "de": {
            "failed": "Gala: Da ist leider etwas schiefgegangen.",
            "no_face": "Gala: Kein Gesicht gefunden, bitte noch ein Selfie.",
            "still_working": "Gala: Gleich sind deine Sticker fertig!",
        }
    },
)


async def guest_job(db: Database, *, event: str, language: str, minutes_old: float = 0) -> Job:
    """A queued job of a Telegram guest with ``language`` in a session of ``event``, ``minutes_old``."""
    async with db.transaction() as repos:
        if event != DEFAULT_EVENT:
            await repos.events.save(GALA)
        session = await repos.sessions.create(station="s", token="tok", event_id=event)
        await repos.sessions.bind_telegram("tok", user_id=7, chat_id=7, name="A", language=language)
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
        await repos.blobs.put(kind="selfie", data=b"jpeg", content_type="image/jpeg", job_id=job.id)
        if minutes_old:
            await repos.conn.execute(
                sa.update(jobs)
                .where(jobs.c.id == job.id)
                .values(created_at=sa.func.now() - timedelta(minutes=minutes_old), status="processing")
            )
        fresh = await repos.jobs.get(job.id)
    assert fresh is not None
    return fresh


async def fail(db: Database, job: Job, guest_text: str) -> None:
    async with db.transaction() as repos:
        failed = await fail_job(
            repos,
            job,
            error_class=ErrorClass.INTERNAL,
            error="x",
            from_statuses=(JobStatus.QUEUED,),
            guest_text=guest_text,
        )
    assert failed is not None


async def still_working(db: Database, redis: aioredis.Redis) -> None:
    assert await enforce_deadlines(db, Publisher(redis), notice_after_s=300, deadline_s=900) == (0, 1)


async def test_a_failure_text_is_in_the_events_words_and_its_first_language(db: Database) -> None:
    job = await guest_job(db, event="gala", language="fr")  # French: the gala does not serve it
    await fail(db, job, "failed")
    assert await stored_texts(db, "send_message") == ["Gala: Da ist leider etwas schiefgegangen."]


async def test_a_text_the_event_does_not_word_is_the_catalogues_in_the_events_language(db: Database) -> None:
    job = await guest_job(db, event="gala", language="fr")
    await fail(db, job, "content_refused")
    assert await stored_texts(db, "send_message") == [text("content_refused", "de")]


async def test_a_served_language_is_kept(db: Database) -> None:
    job = await guest_job(db, event="gala", language="en-GB")
    await fail(db, job, "failed")
    assert await stored_texts(db, "send_message") == [text("failed", "en")]


async def test_the_workers_no_face_text_is_in_the_events_words(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    job = await guest_job(db, event="gala", language="fr")
    cfg = worker_settings(database_url, redis_url)
    await generator(db, redis, cfg, failing(NoFaceError("no face"))).process(job.id)
    assert await stored_texts(db, "send_message") == ["Gala: Kein Gesicht gefunden, bitte noch ein Selfie."]


async def test_the_still_working_notice_is_in_the_events_words(db: Database, redis: aioredis.Redis) -> None:
    await guest_job(db, event="gala", language="fr", minutes_old=6)
    await still_working(db, redis)
    assert await stored_texts(db, "send_message") == ["Gala: Gleich sind deine Sticker fertig!"]


@pytest.mark.parametrize("language", ["fr", "de-AT", "uk"])
async def test_a_default_event_guest_gets_the_catalogues_texts(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str, language: str
) -> None:
    """Nothing changes for an operator who never creates an event: the nearest catalogue of the guest's
    Telegram language (French: English; Ukrainian: Russian), the catalogue's words."""
    await guest_job(db, event=DEFAULT_EVENT, language=language, minutes_old=6)
    await still_working(db, redis)
    async with db.transaction() as repos:
        await repos.conn.execute(sa.update(jobs).values(status="queued"))
        job = (await repos.jobs.in_status(JobStatus.QUEUED, limit=1))[0]
    await generator(
        db, redis, worker_settings(database_url, redis_url), failing(NoFaceError("no face"))
    ).process(job.id)
    assert await stored_texts(db, "send_message") == [
        text("still_working", language),
        text("no_face", language),
    ]
