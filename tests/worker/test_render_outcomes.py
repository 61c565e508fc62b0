"""What each provider failure does to a job, end to end: the worker's composition (settings → providers
→ chain → :class:`worker.render.PipelineRenderer` → :class:`worker.generation.Generator`) on real Postgres
and Redis, the real SDKs against the AI provider simulator, waits through an injected sleep (DESIGN.md §5:
rate limits wait and fall back, billing and auth and outages pause the queue and refund the job, the
daily budget pauses until midnight, the cost ceiling fails the job, the job's own failures are charged;
every call lands in ``api_usage``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest
import redis.asyncio as aioredis

from shared import maintenance
from shared.domain import Job
from shared.outfits import load_catalog
from shared.repositories import Database
from shared.repositories.usage import ApiCall
from shared.streams import Publisher
from shared.texts import text
from simulators.ai.state import CONTENT_KINDS
from tests.outbox_helpers import stored_texts
from tests.simulators.ai.helpers import KEY, RunningAiSim, photo
from worker.generation import Generator
from worker.main import alerter
from worker.providers.factory import build_chain, build_providers
from worker.render import PipelineRenderer
from worker.settings import PipelineSettings, WorkerSettings

pytestmark = pytest.mark.integration


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


async def _run_job(
    db: Database,
    redis: aioredis.Redis,
    aisim: RunningAiSim,
    database_url: str,
    redis_url: str,
    language: str = "en",
    **env: Any,
) -> tuple[Job, Sleeps]:
    cfg = WorkerSettings(  # type: ignore[call-arg]
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        GEMINI_API_KEY=KEY,
        OPENAI_API_KEY=KEY,
        AI_BASE_URL_GEMINI=aisim.url,
        AI_BASE_URL_OPENAI=f"{aisim.url}/v1",
        **{"LIKENESS_MODE": "classic", **env},
    )
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="s", token="tok")
        await repos.sessions.bind_telegram("tok", user_id=3, chat_id=3, name="A", language=language)
        job = await repos.jobs.insert_queued(session_id=session.id, capture_id="c", outfit_id="chef")
        await repos.blobs.put(kind="selfie", data=photo(), content_type="image/jpeg", job_id=job.id)
    publisher = Publisher(redis)
    sleeps = Sleeps()
    providers, _warnings = build_providers(cfg, load_catalog())
    renderer = PipelineRenderer(
        settings=cfg,
        chain=build_chain(cfg, providers, alert=alerter(db, publisher), sleep=sleeps),
        db=db,
        alert=alerter(db, publisher),
        cut_slots=asyncio.Semaphore(2),
    )
    generator = Generator(
        db=db, publisher=publisher, settings=cfg, catalog=load_catalog(), render=renderer, owner="w1"
    )
    try:
        await generator.process(job.id)
    finally:
        for provider in providers:
            await provider.aclose()
    async with db.transaction() as repos:
        current = await repos.jobs.get(job.id)
    assert current is not None
    return current, sleeps


RunJob = Callable[..., Awaitable[tuple[Job, Sleeps]]]


@pytest.fixture
def run_job(
    db: Database, redis: aioredis.Redis, aisim: RunningAiSim, database_url: str, redis_url: str
) -> RunJob:
    """Render one queued job of a guest speaking ``language`` through the worker's composition with these
    stores and the AI simulator, ``env`` added to the worker's settings: ``await run_job(language=…,
    **env)`` gives the job as it is afterwards and the sleeps the chain asked for."""
    return partial(_run_job, db, redis, aisim, database_url, redis_url)


async def usage(db: Database, job: Job) -> list[ApiCall]:
    async with db.transaction() as repos:
        return await repos.usage.for_job(job.id)


async def test_a_rate_limit_waits_then_falls_back_and_the_job_renders(
    run_job: RunJob, db: Database, aisim: RunningAiSim
) -> None:
    await aisim.fault("rate_limit", provider="gemini", request="passport", count=4)
    job, sleeps = await run_job()
    assert job.status == "rendered"
    assert len(sleeps.waits) == 3  # 5, 15, 30 s plus up to 20 % jitter, then the fallback
    assert all(d <= w <= d * 1.2 for w, d in zip(sleeps.waits, (5, 15, 30), strict=True))
    calls = await usage(db, job)
    assert [(c.provider, c.outcome) for c in calls if c.kind == "passport"] == [
        *[("gemini", "rate_limit")] * 4,
        ("openai", "ok"),
    ]
    assert {c.provider for c in calls if c.kind == "sheet"} == {"gemini"}  # the chain starts at the primary
    assert sum(c.cost_usd for c in calls) > 0.2 and all(c.cost_usd == 0 for c in calls if c.outcome != "ok")
    assert [
        t for t in await stored_texts(db, "send_admin_message") if "fallback" in t or "served instead" in t
    ]


@pytest.mark.parametrize(
    ("gemini", "openai", "reason"), [("credit", "credit", "credit"), ("auth", "outage", "auth")]
)
async def test_billing_or_auth_everywhere_pauses_until_resume_and_refunds(
    run_job: RunJob, db: Database, aisim: RunningAiSim, gemini: str, openai: str, reason: str
) -> None:
    await aisim.fault(gemini, provider="gemini")
    await aisim.fault(openai, provider="openai")
    job, sleeps = await run_job()
    assert (job.status, job.attempts, job.error_class) == ("queued", 0, reason)
    async with db.transaction() as repos:
        pause = await maintenance.current_pause(repos)
    assert pause is not None and (pause.source, pause.reason, pause.resume_at) == ("auto", reason, None)
    assert sleeps.waits == []
    assert [(c.provider, c.outcome) for c in await usage(db, job)] == [("gemini", gemini), ("openai", openai)]


async def test_an_outage_everywhere_pauses_with_the_providers_retry_after(
    run_job: RunJob, db: Database, aisim: RunningAiSim
) -> None:
    await aisim.fault("overloaded", provider="gemini", retry_after_s=90)
    await aisim.fault("drop", provider="openai")
    before = datetime.now(UTC)
    job, _ = await run_job()
    assert (job.status, job.attempts) == ("queued", 0)
    async with db.transaction() as repos:
        pause = await maintenance.current_pause(repos)
    assert pause is not None and pause.reason == "outage" and pause.resume_at is not None
    assert before + timedelta(seconds=85) < pause.resume_at < datetime.now(UTC) + timedelta(seconds=95)


async def test_the_daily_budget_pauses_until_midnight_utc(
    run_job: RunJob, db: Database, aisim: RunningAiSim
) -> None:
    async with db.transaction() as repos:
        await repos.usage.record(
            ApiCall("gemini", "gemini-3.1-flash-image", "sheet", "image", "ok", 0.6, 20.0)
        )
    job, _ = await run_job(DAILY_BUDGET_USD="0.5")
    assert (job.status, job.attempts, job.error_class) == ("queued", 0, "budget")
    async with db.transaction() as repos:
        pause = await maintenance.current_pause(repos)
    tomorrow = datetime.combine(datetime.now(UTC).date() + timedelta(days=1), datetime.min.time(), UTC)
    assert pause is not None and pause.resume_at == tomorrow
    assert await aisim.calls() == []  # refused before any paid call


async def test_the_job_cost_ceiling_fails_the_job_without_a_retry(
    run_job: RunJob, db: Database, aisim: RunningAiSim
) -> None:
    job, _ = await run_job(JOB_MAX_COST_USD="0.05")
    assert (job.status, job.error_class) == ("failed", "job_cost")
    assert job.error is not None and "the next call" in job.error  # its estimate would pass the ceiling
    calls = await usage(db, job)
    assert calls and sum(c.cost_usd for c in calls) < 0.05  # refused before the call, not after it
    assert len(await aisim.calls()) == len(calls)  # nothing was sent after it


def image_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in calls if c["call"] == "image"]


def sent_after_the_refusal(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The calls the simulator received after the last provider refused (none, once every one has)."""
    last = max(k for k, c in enumerate(calls) if c["outcome"] in CONTENT_KINDS)
    return calls[last + 1 :]


@pytest.mark.parametrize(
    ("gemini", "openai", "language"),
    [("safety", "safety", "en"), ("prohibited_content", "content_policy", "ru")],
)
async def test_a_refusal_of_the_first_sheet_fails_the_job_as_content_and_the_selfie_is_not_sent_again(
    run_job: RunJob, db: Database, aisim: RunningAiSim, gemini: str, openai: str, language: str
) -> None:
    # Every image call would be refused: only the chain's own restraint limits how often it is sent.
    await aisim.fault(gemini, provider="gemini", call="image", count=50)
    await aisim.fault(openai, provider="openai", call="image", count=50)
    job, sleeps = await run_job(language=language)
    assert (job.status, job.error_class, job.attempts, job.not_before) == ("failed", "content", 0, None)
    calls = await aisim.calls()
    assert [(c["provider"], c["kind"], c["outcome"]) for c in image_calls(calls)] == [
        ("gemini", "sheet", gemini),  # the first sheet of the classic path …
        ("openai", "sheet", openai),  # … handed to the fallback once
    ]
    assert sent_after_the_refusal(calls) == []  # no other sheet, figure, regeneration, QA or retry
    assert sleeps.waits == []
    assert await stored_texts(db, "send_message") == [
        text("content_refused", language)
    ]  # one text, the guest's language
    recorded = await usage(db, job)
    assert len(recorded) == len(calls)  # every call made is in api_usage
    assert [(c.provider, c.outcome) for c in recorded if c.call_type == "image"] == [
        ("gemini", "content"),
        ("openai", "content"),
    ]


async def test_parallel_sheets_are_cancelled_when_one_is_refused_and_still_recorded(
    run_job: RunJob, db: Database, aisim: RunningAiSim
) -> None:
    # Consistency path: the anchor is drawn, then the 3 sheets go out at once; the first to arrive is
    # refused by both providers while the other two are still being drawn (slow answers).
    await aisim.fault("safety", provider="gemini", request="sheet", count=1)
    await aisim.fault("timeout", provider="gemini", request="sheet", count=2, delay_s=120)
    await aisim.fault("safety", provider="openai", request="sheet", count=50)
    job, _ = await run_job(LIKENESS_MODE="")
    assert (job.status, job.error_class) == ("failed", "content")
    calls = await aisim.calls()
    assert sent_after_the_refusal(calls) == []
    sheets = [(c.provider, c.outcome) for c in await usage(db, job) if c.kind == "sheet"]
    assert sorted(sheets) == sorted(
        [("gemini", "content"), ("openai", "content"), ("gemini", "cancelled"), ("gemini", "cancelled")]
    )
    assert len(await usage(db, job)) == len(calls)  # the abandoned calls are recorded too


@pytest.mark.parametrize(
    ("down", "alerted"), [("outage", False), ("drop", False), ("credit", True), ("model_not_found", True)]
)
async def test_a_refusal_while_the_primary_is_down_asks_for_another_photo_and_pauses_nothing(
    run_job: RunJob, db: Database, aisim: RunningAiSim, down: str, alerted: bool
) -> None:
    # Issue 19: Gemini is down (or out of credit, or our model setting is wrong); OpenAI answers and
    # refuses this selfie. The refusal decides: the booth goes on for everyone else (OpenAI serves them).
    await aisim.fault(down, provider="gemini", count=50)
    await aisim.fault("safety", provider="openai", call="image", count=50)
    job, sleeps = await run_job()
    assert (job.status, job.error_class, job.attempts) == ("failed", "content", 0)
    async with db.transaction() as repos:
        assert await maintenance.current_pause(repos) is None
    assert await stored_texts(db, "send_message") == [text("content_refused", "en")]
    assert [c["outcome"] for c in image_calls(await aisim.calls()) if c["provider"] == "openai"] == ["safety"]
    admin = await stored_texts(db, "send_admin_message")
    assert bool([t for t in admin if "gemini failed" in t and "refused" in t]) is alerted
    assert sleeps.waits == []


async def test_after_one_providers_refusal_the_other_draws_the_whole_job(
    run_job: RunJob, aisim: RunningAiSim
) -> None:
    await aisim.fault("safety", provider="gemini", call="image", count=50)
    job, _ = await run_job()
    assert job.status == "rendered"
    by_provider = [c["provider"] for c in image_calls(await aisim.calls())]
    assert by_provider.count("gemini") == 1 and by_provider.count("openai") >= 3


@pytest.mark.parametrize("where", ["gemini", "*"])
async def test_images_that_are_not_images_are_invalid_and_charged_never_a_crash(
    run_job: RunJob, db: Database, aisim: RunningAiSim, where: str
) -> None:
    await aisim.fault("not_image", provider=where, request="sheet", count=1 if where == "gemini" else 10)
    job, _ = await run_job(FIGURE_SHEET_ATTEMPTS="1", FIGURE_FALLBACK_ENABLED="0")
    sheets = [(c.provider, c.outcome, c.cost_usd > 0) for c in await usage(db, job) if c.kind == "sheet"]
    assert sheets[0] == ("gemini", "invalid", True)  # recorded at its price: the provider billed it
    if where == "gemini":  # the fallback drew that sheet
        assert job.status == "rendered" and sheets[1][:2] == ("openai", "ok")
    else:  # charged: an attempt consumed, retried after RETRY_DELAY_SEC (DESIGN.md §5)
        assert (job.status, job.attempts, job.error_class) == ("queued", 1, "invalid")
        assert sheets == [("gemini", "invalid", True), ("openai", "invalid", True)]


async def test_the_openai_only_chain_renders_a_pack(
    run_job: RunJob, db: Database, aisim: RunningAiSim
) -> None:
    """PRIMARY_AI_PROVIDER=openai without a fallback: every call goes through the strict simulator's OpenAI
    rules (gpt-image-2 refused ``input_fidelity`` with a 400 on every edit before the mend)."""
    job, _ = await run_job(PRIMARY_AI_PROVIDER="openai", FALLBACK_AI_PROVIDER="")
    assert job.status == "rendered", job.error
    calls = await usage(db, job)
    assert calls and {(c.provider, c.outcome) for c in calls} == {("openai", "ok")}
    assert {c.call_type for c in calls} == {"image", "vision"}


CONFIG_SETTINGS = [
    ("gemini", "GEMINI_IMAGE_MODEL"),
    ("gemini", "GEMINI_VISION_MODEL"),
    ("openai", "OPENAI_IMAGE_MODEL"),
    ("openai", "OPENAI_VISION_MODEL"),
]


def default_model(setting: str) -> str:
    """The worker's default for a model setting (``GEMINI_IMAGE_MODEL`` → ``gemini-3.1-flash-image``)."""
    return str(PipelineSettings.model_fields[setting.lower()].default)


async def retire(aisim: RunningAiSim, provider: str, setting: str) -> str:
    """The provider stops serving the setting's default model (the catalogue still lists it, so the
    worker starts: a shutdown earlier than announced, or a model withdrawn from this account)."""
    name = default_model(setting)
    role = "image" if "IMAGE" in setting else "vision"
    await aisim.post("/sim/models", {"provider": provider, "name": name, "role": role, "exists": False})
    return name


@pytest.mark.parametrize(("provider", "setting"), CONFIG_SETTINGS)
async def test_a_model_the_provider_no_longer_serves_in_any_role_pauses_and_charges_nothing(
    run_job: RunJob, db: Database, aisim: RunningAiSim, provider: str, setting: str
) -> None:
    """A model unknown to the catalogue never gets this far (the worker refuses to start on it:
    ``tests/worker/test_model_lifecycle.py``); one the provider answers 404 for pauses the queue."""
    name = await retire(aisim, provider, setting)
    job, sleeps = await run_job(PRIMARY_AI_PROVIDER=provider, FALLBACK_AI_PROVIDER="")
    assert (job.status, job.attempts, job.error_class) == ("queued", 0, "config")  # refunded, not charged
    async with db.transaction() as repos:
        pause = await maintenance.current_pause(repos)
    assert pause is not None and (pause.source, pause.reason, pause.resume_at) == ("auto", "config", None)
    [alert] = [t for t in await stored_texts(db, "send_admin_message") if "does not exist" in t]
    assert f"{setting}={name} does not exist at {provider}" in alert and "/resume" in alert
    calls = await usage(db, job)
    assert [c.outcome for c in calls if c.model == name and c.outcome != "ok"] == ["config"]  # no retry
    assert sum(c.cost_usd for c in calls if c.outcome != "ok") == 0
    assert sleeps.waits == []


async def test_a_config_fault_of_the_primary_falls_back_and_the_admins_learn_the_setting(
    run_job: RunJob, db: Database, aisim: RunningAiSim
) -> None:
    name = await retire(aisim, "gemini", "GEMINI_IMAGE_MODEL")
    job, _ = await run_job()
    assert job.status == "rendered"
    async with db.transaction() as repos:
        assert await maintenance.current_pause(repos) is None
    calls = await usage(db, job)
    assert {(c.provider, c.outcome) for c in calls if c.call_type == "image"} >= {
        ("gemini", "config"),
        ("openai", "ok"),
    }
    assert any(
        f"GEMINI_IMAGE_MODEL={name} does not exist at gemini" in t
        for t in await stored_texts(db, "send_admin_message")
    )
