"""The preflight's Telegram checks (``telegram_gateway.preflight``) against the Telegram simulator: all
pass on a good setup; each fails, naming the cause, when its precondition is broken; ``/preflight``
answers an admin with the live checks and the last stored report."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import redis.asyncio as aioredis

from shared.preflight import CheckResult, Report
from shared.preflight.reports import store
from shared.repositories import Database
from shared.streams import Publisher
from telegram_gateway import preflight
from tests.simulators.tgsim_helpers import BOT_USERNAME, TOKEN, serving, sim_config
from tests.telegram_gateway.gateway_helpers import running_gateway
from tests.telegram_gateway.test_conversation import replies, settings_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

ADMIN = 1000
STAFF_GROUP = -1001234567890


@pytest.fixture
async def sim() -> AsyncIterator[httpx.AsyncClient]:
    """A simulator with the staff group (the admin posted in it) and an admin who started the bot."""
    async with serving(sim_config()) as running, httpx.AsyncClient(base_url=running.url) as client:
        for body in (
            {"text": "/start"},
            {"text": "cards here", "chat_id": STAFF_GROUP, "chat_title": "Staff"},
        ):
            (await client.post(f"/sim/users/{ADMIN}/messages", json=body)).raise_for_status()
        yield client


@pytest.fixture
def env(
    monkeypatch: pytest.MonkeyPatch, sim: httpx.AsyncClient, database_url: str, redis_url: str
) -> pytest.MonkeyPatch:
    for name, value in {
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "TELEGRAM_BOT_TOKEN": TOKEN,
        "TELEGRAM_API_BASE_URL": str(sim.base_url).rstrip("/"),
        "BOT_USERNAME": BOT_USERNAME,
        "LEADS_ENABLED": "1",
        "LEADS_CHAT_ID": str(STAFF_GROUP),
        "ADMIN_CHAT_ID": str(STAFF_GROUP),
        "ADMIN_USER_IDS": str(ADMIN),
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("PREFLIGHT_MAX_CLOCK_SKEW_SEC", raising=False)
    return monkeypatch


def statuses(results: list[CheckResult]) -> dict[str, str]:
    return {r.name: r.status for r in results}


def named(results: list[CheckResult], name: str) -> CheckResult:
    return next(r for r in results if r.name == name)


async def test_a_good_setup_passes_every_telegram_check(env: pytest.MonkeyPatch) -> None:
    assert statuses(await preflight.run_checks()) == {
        "telegram.bot_token": "ok",
        "telegram.bot_username": "ok",
        "telegram.updates": "ok",
        "telegram.staff_group": "ok",
        "telegram.admin_group": "ok",
        "telegram.admins": "ok",
        "telegram.clock": "ok",
    }


async def test_bot_username_of_another_bot_fails_naming_both(env: pytest.MonkeyPatch) -> None:
    env.setenv("BOT_USERNAME", "some_other_bot")
    check = named(await preflight.run_checks(), "telegram.bot_username")
    assert check.status == "fail"
    assert "some_other_bot" in check.detail and f"@{BOT_USERNAME}" in check.detail
    assert f"BOT_USERNAME={BOT_USERNAME}" in check.fix


async def test_bot_username_compares_case_insensitively(env: pytest.MonkeyPatch) -> None:
    env.setenv("BOT_USERNAME", BOT_USERNAME.upper().replace("_BOT", "_Bot"))
    assert named(await preflight.run_checks(), "telegram.bot_username").status == "ok"


async def test_a_token_the_bot_api_refuses_fails(env: pytest.MonkeyPatch) -> None:
    env.setenv("TELEGRAM_BOT_TOKEN", "123456789:not-the-token")
    results = await preflight.run_checks()
    assert statuses(results) == {"telegram.bot_token": "fail"}
    assert "401" in results[0].detail


async def test_a_settings_error_is_a_failed_check_not_a_traceback(env: pytest.MonkeyPatch) -> None:
    env.setenv("BOT_USERNAME", "@" + BOT_USERNAME)  # refused by the settings' pattern
    results = await preflight.run_checks()
    assert statuses(results) == {"settings.telegram": "fail"}
    assert "bot_username" in results[0].detail.lower()


async def test_a_staff_group_the_bot_is_not_in_fails(env: pytest.MonkeyPatch) -> None:
    env.setenv("LEADS_CHAT_ID", "-1009999999999")
    check = named(await preflight.run_checks(), "telegram.staff_group")
    assert check.status == "fail"
    assert "LEADS_CHAT_ID=-1009999999999" in check.detail and "chat not found" in check.detail.lower()


async def test_leads_enabled_without_a_staff_group_fails(env: pytest.MonkeyPatch) -> None:
    env.delenv("LEADS_CHAT_ID")
    assert named(await preflight.run_checks(), "telegram.staff_group").status == "fail"


async def test_an_admin_who_never_started_the_bot_fails(
    env: pytest.MonkeyPatch, sim: httpx.AsyncClient
) -> None:
    (
        await sim.post("/sim/users/3000/messages", json={"text": "hi", "chat_id": STAFF_GROUP})
    ).raise_for_status()
    env.setenv("ADMIN_USER_IDS", f"{ADMIN},3000,4000")  # 3000 only seen in the group, 4000 never
    check = named(await preflight.run_checks(), "telegram.admins")
    assert check.status == "fail"
    assert "2 of 3" in check.detail and "3000" in check.detail and "4000" in check.detail


async def test_an_admin_who_blocked_the_bot_fails(env: pytest.MonkeyPatch, sim: httpx.AsyncClient) -> None:
    (await sim.post(f"/sim/users/{ADMIN}/block")).raise_for_status()
    check = named(await preflight.run_checks(), "telegram.admins")
    assert check.status == "fail" and "blocked" in check.detail


async def test_a_webhook_set_fails_the_updates_check(env: pytest.MonkeyPatch, sim: httpx.AsyncClient) -> None:
    answer = await sim.post(f"/bot{TOKEN}/setWebhook", json={"url": "https://elsewhere.example/hook"})
    assert answer.json()["ok"]
    check = named(await preflight.run_checks(), "telegram.updates")
    assert check.status == "fail" and "webhook" in check.detail


async def test_a_clock_off_telegram_fails(sim: httpx.AsyncClient) -> None:
    # a limit of -2 s: even a perfect clock is over it, once the header's whole second is allowed for
    check = await preflight.clock_check(str(sim.base_url), TOKEN, -2)
    assert check.status == "fail" and "off Telegram's" in check.detail


def test_reply_text_shows_failures_and_the_age_of_the_last_report() -> None:
    now = datetime(2026, 12, 2, 18, 0, tzinfo=UTC)
    report = Report(
        at=now - timedelta(minutes=75),
        source="make preflight",
        results=(CheckResult("redis", "fail", "down", "start it"), CheckResult("disk", "ok", "fine")),
    )
    text = preflight.reply_text([CheckResult("telegram.bot_token", "ok", "getMe: @b")], report, now)
    assert "✅ telegram.bot_token: getMe: @b" in text
    assert "Last full preflight: NOT READY, 1 h 15 min ago (make preflight)." in text
    assert "❌ redis: down" in text and "disk" not in text


async def test_slash_preflight_answers_an_admin(
    env: pytest.MonkeyPatch,
    sim: httpx.AsyncClient,
    db: Database,
    redis: aioredis.Redis,
    database_url: str,
    redis_url: str,
) -> None:
    await store(Report(at=datetime.now(UTC), source="k8s", results=(CheckResult("redis", "ok", "PONG"),)))
    settings = settings_for(
        sim, database_url, redis_url, ADMIN_USER_IDS=str(ADMIN), LEADS_CHAT_ID=str(STAFF_GROUP)
    )
    async with running_gateway(settings, db=db, publisher=Publisher(redis)):
        await replies(sim, ADMIN, 1)  # the answer to the fixture's /start
        (await sim.post(f"/sim/users/{ADMIN}/messages", json={"text": "/preflight"})).raise_for_status()
        answer = (await replies(sim, ADMIN, 2))[-1]
    assert "✅ telegram.bot_username" in answer
    assert "Last full preflight: READY, 0 min ago (k8s)." in answer


async def test_webhook_mode_fails_the_updates_check_until_telegram_delivers_to_our_webhook(
    env: pytest.MonkeyPatch, sim: httpx.AsyncClient
) -> None:
    """``TELEGRAM_UPDATES=webhook``: no webhook, another one, or ours failing (nothing listens on the port,
    updates wait) each fail ``telegram.updates``; the passing case is in test_webhook.py (a real route)."""
    ours = "https://127.0.0.1:8443/telegram/webhook"  # nothing listens there: deliveries are refused
    env.setenv("TELEGRAM_UPDATES", "webhook")
    env.setenv("TELEGRAM_WEBHOOK_URL", ours)
    env.setenv("TELEGRAM_WEBHOOK_SECRET", "preflight-secret")
    check = named(await preflight.run_checks(), "telegram.updates")
    assert check.status == "fail" and "no webhook is set" in check.detail
    await sim.post(f"/bot{TOKEN}/setWebhook", json={"url": "https://elsewhere.example/hook"})
    check = named(await preflight.run_checks(), "telegram.updates")
    assert check.status == "fail" and "another URL" in check.detail
    await sim.post(f"/bot{TOKEN}/setWebhook", json={"url": ours, "secret_token": "preflight-secret"})
    async with asyncio.timeout(20):
        while (
            "cannot deliver" not in (check := named(await preflight.run_checks(), "telegram.updates")).detail
        ):
            await asyncio.sleep(0.1)
    assert check.status == "fail" and "Connection refused" in check.detail
