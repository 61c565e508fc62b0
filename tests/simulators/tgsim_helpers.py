"""Shared helpers for the Telegram simulator tests: serving the app, a control-API client, test images."""

from __future__ import annotations

import io
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web
from PIL import Image
from telegram import Bot

from simulators.telegram import SIMULATOR_KEY, SimConfig, Simulator, create_app

TOKEN = "123456789:AAHsimulatedTokenForTests"
BOT_USERNAME = "stickerbooth_bot"
GUEST_ID = 5001


@dataclass
class RunningSim:
    """A simulator served on 127.0.0.1:<port> plus a JSON client for its control API."""

    url: str
    sim: Simulator
    http: aiohttp.ClientSession

    async def get(self, path: str) -> Any:
        async with self.http.get(self.url + path) as response:
            assert response.status == 200, await response.text()
            return await response.json()

    async def post(self, path: str, body: dict[str, Any] | None = None, *, status: int = 200) -> Any:
        async with self.http.post(self.url + path, json=body or {}) as response:
            assert response.status == status, await response.text()
            return await response.json()

    async def say(self, user_id: int, text: str, **fields: Any) -> dict[str, Any]:
        """The user writes ``text`` to the bot (private chat unless ``chat_id`` is given)."""
        result: dict[str, Any] = await self.post(f"/sim/users/{user_id}/messages", {"text": text, **fields})
        return result

    def bot(self) -> Bot:
        """A python-telegram-bot ``Bot`` for this simulator (use as ``async with``)."""
        return Bot(TOKEN, base_url=f"{self.url}/bot", base_file_url=f"{self.url}/file/bot")


def sim_config(**overrides: Any) -> SimConfig:
    """Settings for tests: explicit limits so a developer's ``TGSIM_*`` env cannot change outcomes."""
    values: dict[str, Any] = {
        "token": TOKEN,
        "bot_username": BOT_USERNAME,
        "private_per_second": 0,
        "private_burst": 3,
        "group_per_minute": 0,
        "global_per_second": 0,
        "callback_answer_timeout": 15,
        "data_dir": None,
    }
    values.update(overrides)
    return SimConfig(**values)


async def serve(config: SimConfig) -> tuple[web.AppRunner, RunningSim]:
    """Start the simulator app on a free port."""
    app = create_app(config)
    runner = web.AppRunner(app, shutdown_timeout=2)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    running = RunningSim(f"http://{host}:{port}", app[SIMULATOR_KEY], aiohttp.ClientSession())
    return runner, running


@asynccontextmanager
async def serving(config: SimConfig) -> AsyncIterator[RunningSim]:
    """The simulator served (as :func:`serve`) for the block; its control client closed and the server
    cleaned up at the end, however the block ends."""
    runner, running = await serve(config)
    try:
        yield running
    finally:
        await running.http.close()
        await runner.cleanup()


def png(width: int = 512, height: int = 512, *, seed: int = 0, noise: bool = False) -> bytes:
    """A transparent-background RGBA PNG; ``noise`` makes it incompressible (large)."""
    if noise:
        image = Image.frombytes("RGBA", (width, height), random.Random(seed).randbytes(width * height * 4))
    else:
        image = Image.new("RGBA", (width, height), (0, 0, 0, 0))
        colour = ((seed * 67) % 256, (seed * 131) % 256, 200, 255)
        image.paste(colour, (width // 4, height // 4, 3 * width // 4, 3 * height // 4))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def jpeg(width: int = 512, height: int = 512) -> bytes:
    """A plain JPEG (not a valid sticker format)."""
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (10, 120, 200)).save(buffer, format="JPEG")
    return buffer.getvalue()
