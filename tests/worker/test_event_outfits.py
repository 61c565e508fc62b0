"""An outfit an operator uploaded for an event (``event_outfits``, issue 23) renders through the worker's
own composition (settings without keys → the offline ``local`` provider → :class:`PipelineRenderer` →
:class:`Generator`) on real Postgres and Redis: its title and prompt on its ``based_on`` catalogue
outfit. An uploaded outfit that is gone fails the job as an unknown catalogue outfit always has."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio as aioredis

from shared.domain import Blob, Job
from shared.events import Event, EventOutfit
from shared.outfits import Outfit, load_catalog
from shared.repositories import Database
from shared.streams import Publisher
from tests.simulators.ai.helpers import photo
from worker.generation import Generator
from worker.main import alerter
from worker.providers.factory import build_chain, build_providers
from worker.render import Pack, PipelineRenderer
from worker.settings import WorkerSettings

pytestmark = pytest.mark.integration

PROMPT = "a lighthouse keeper's yellow raincoat and sou'wester, a brass lantern in hand"


async def queued_job(db: Database, outfit_id: str) -> Job:
    async with db.transaction() as repos:
        await repos.events.save(Event(id="harbour", name="Harbour Days", stations=("pier-1",)))
        await repos.events.save_outfit(
            EventOutfit(id="keeper", event_id="harbour", title="Keeper", prompt=PROMPT, based_on="pirate")
        )
        session = await repos.sessions.create(station="pier-1", token="tok", event_id="harbour")
        await repos.sessions.bind_telegram("tok", user_id=3, chat_id=3, name="A", language="en")
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id=outfit_id)
        await repos.blobs.put(kind="selfie", data=photo(), content_type="image/jpeg", job_id=job.id)
    return job


async def process(db: Database, redis: aioredis.Redis, cfg: WorkerSettings, job: Job, render: Any) -> Job:
    generator = Generator(
        db=db, publisher=Publisher(redis), settings=cfg, catalog=load_catalog(), render=render, owner="w1"
    )
    await generator.process(job.id)
    async with db.transaction() as repos:
        current = await repos.jobs.get(job.id)
    assert current is not None
    return current


def keyless(database_url: str, redis_url: str) -> WorkerSettings:
    return WorkerSettings(  # type: ignore[call-arg]
        DATABASE_URL=database_url, REDIS_URL=redis_url, GEMINI_API_KEY="", OPENAI_API_KEY=""
    )


async def test_an_uploaded_outfit_renders_with_the_local_provider_on_its_base(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    job = await queued_job(db, "keeper")
    cfg = keyless(database_url, redis_url)
    providers, _warnings = build_providers(cfg, load_catalog())
    assert [p.name for p in providers] == ["local"]
    publisher = Publisher(redis)
    renderer = PipelineRenderer(
        settings=cfg,
        chain=build_chain(cfg, providers, alert=alerter(db, publisher)),
        db=db,
        alert=alerter(db, publisher),
        cut_slots=asyncio.Semaphore(2),
    )
    seen: list[Outfit] = []

    async def render(job: Job, selfie: Blob, outfit: Outfit) -> Pack:
        seen.append(outfit)
        return await renderer(job, selfie, outfit)

    try:
        final = await process(db, redis, cfg, job, render)
    finally:
        for provider in providers:
            await provider.aclose()
    assert final.status == "rendered", final.error
    base = load_catalog()["pirate"]
    assert [(o.title, o.prompt, o.body_template, o.art) for o in seen] == [
        ("Keeper", PROMPT, base.body_template, base.art)
    ]
    async with db.transaction() as repos:
        assert len(await repos.blobs.ids_for_job(job.id, "sticker")) >= 1


async def test_an_uploaded_outfit_that_is_gone_fails_the_job_permanently(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    job = await queued_job(db, "keeper")
    async with db.transaction() as repos:
        assert await repos.events.delete_outfit("keeper")

    async def never(_job: Job, _selfie: Blob, _outfit: Outfit) -> Pack:
        raise AssertionError("an unknown outfit is never rendered")

    final = await process(db, redis, keyless(database_url, redis_url), job, never)
    assert (final.status, final.attempts, final.error_class) == ("failed", 0, "permanent")
    assert "unknown outfit 'keeper'" in (final.error or "")
