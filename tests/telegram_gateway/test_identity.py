"""The gateway refuses to start when its token is not ``BOT_USERNAME``'s bot (issue 18): the simulator's
``getMe`` answers the bot it was started for, as Telegram answers the token's bot, and a typo in
``BOT_USERNAME`` (or another venue's token) ends the start with exit code 2 and both names, before a single
update is taken or command executed."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis
from structlog.testing import capture_logs
from telegram import Bot
from telegram.request import HTTPXRequest

from shared.errors import ConfigError
from shared.repositories import Database
from telegram_gateway.identity import check_bot_identity
from telegram_gateway.main import CONFIG_EXIT, run
from tests.simulators.tgsim_helpers import BOT_USERNAME, serving, sim_config
from tests.telegram_gateway.gateway_helpers import gateway_settings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


async def test_get_me_is_compared_with_bot_username_without_case() -> None:
    async with serving(sim_config()) as tgsim, tgsim.bot() as bot:
        assert await check_bot_identity(bot, BOT_USERNAME.upper()) == BOT_USERNAME
        with pytest.raises(ConfigError) as caught:
            await check_bot_identity(bot, "stickerboth_bot")
    assert f"@{BOT_USERNAME}" in str(caught.value) and "'stickerboth_bot'" in str(caught.value)


async def test_a_token_telegram_refuses_is_a_config_error_not_a_traceback() -> None:
    async with serving(sim_config()) as tgsim:
        request = HTTPXRequest()
        bot = Bot("123456789:not-the-token", base_url=f"{tgsim.url}/bot", request=request)  # a wrong token
        try:
            with pytest.raises(
                ConfigError, match=r"TELEGRAM_BOT_TOKEN was refused by Telegram \(Unauthorized\)"
            ):
                await check_bot_identity(bot, BOT_USERNAME)
        finally:
            await request.shutdown()


async def test_the_gateway_refuses_to_start_for_another_bot(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> None:
    async with serving(sim_config(bot_username="other_booth_bot")) as tgsim:
        await tgsim.say(700001, "/start")
        settings = gateway_settings(database_url, redis_url, tgsim.url)  # BOT_USERNAME=stickerbooth_bot
        with capture_logs() as logs:
            code = await asyncio.wait_for(run(settings, db=db, redis=redis, stop=asyncio.Event()), 30)
        assert code == CONFIG_EXIT
        (cancelled,) = [e for e in logs if e["event"] == "STARTUP_CANCELLED"]
        assert "@other_booth_bot" in cancelled["reason"] and f"'{BOT_USERNAME}'" in cancelled["reason"]
        assert [c["method"] for c in await tgsim.get("/sim/calls")] == ["getMe", "getMe"]
        assert len(await tgsim.get("/sim/updates")) == 1  # nothing was taken
