"""Helpers for tests that drive the real SDKs against the AI provider simulator: serve it in-process,
script it, and build the worker's provider adapters pointed at it."""

from __future__ import annotations

import dataclasses
import io
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from PIL import Image

from shared.ai_models import CATALOGUE, ModelInfo
from simulators.ai import STATE_KEY, AiSimConfig, SimState, create_app
from worker.providers.gemini import GeminiProvider
from worker.providers.openai_api import OpenAIProvider


def retiring_model(monkeypatch: Any, *, days: int = 9) -> ModelInfo:
    """A catalogued OpenAI vision model that shuts down ``days`` after today's real date (a copy of
    gpt-5-mini's entry under another name): tests of "near its shutdown" stay true whatever day they run
    on, where gpt-5-mini itself is past its 2026-12-11 shutdown from that day on."""
    model = dataclasses.replace(
        CATALOGUE[("openai", "gpt-5-mini", "vision")],
        name="gpt-test-retiring",
        shutdown=datetime.now(UTC).date() + timedelta(days=days),
    )
    monkeypatch.setitem(CATALOGUE, ("openai", model.name, "vision"), model)
    return model


#: ``../shared/fixtures/photos`` beside the repository (CI links it); tests fail when it is missing.
PHOTOS = Path(__file__).resolve().parents[4] / "shared" / "fixtures" / "photos"
KEY = "sim-test-key"


def photo(name: str = "astronaut-portrait.png", max_side: int = 640) -> bytes:
    """A fixture photo as a JPEG of at most ``max_side`` px (what ingest stores, smaller for speed)."""
    path = PHOTOS / name
    assert path.is_file(), f"fixture photo missing: {path} (../shared must sit beside the repository)"
    with Image.open(path) as image:
        image = image.convert("RGB")
        image.thumbnail((max_side, max_side))
        out = io.BytesIO()
        image.save(out, format="JPEG", quality=92)
    return out.getvalue()


@dataclass
class RunningAiSim:
    """A simulator on 127.0.0.1:<port> and a JSON client for its control API."""

    url: str
    state: SimState
    http: aiohttp.ClientSession

    async def post(self, path: str, body: dict[str, Any]) -> Any:
        async with self.http.post(self.url + path, json=body) as response:
            assert response.status == 200, await response.text()
            return await response.json()

    async def fault(self, kind: str, **fields: Any) -> None:
        """Queue a fault (see :class:`simulators.ai.state.FaultSpec`)."""
        await self.post("/sim/faults", {"kind": kind, **fields})

    async def calls(self) -> list[dict[str, Any]]:
        """The call log."""
        async with self.http.get(self.url + "/sim/calls") as response:
            result: list[dict[str, Any]] = await response.json()
            return result

    def gemini(self) -> GeminiProvider:
        """The worker's Gemini adapter (google-genai) pointed at the simulator."""
        return GeminiProvider(
            KEY, base_url=self.url, image_model="gemini-3.1-flash-image", vision_model="gemini-3.5-flash-lite"
        )

    def openai(self, timeout_s: float = 30.0) -> OpenAIProvider:
        """The worker's OpenAI adapter (openai) pointed at the simulator."""
        return OpenAIProvider(
            KEY,
            base_url=f"{self.url}/v1",
            image_model="gpt-image-2",
            vision_model="gpt-6.1-terra",
            timeout_s=timeout_s,
        )


async def serve_aisim(config: AiSimConfig | None = None) -> tuple[web.AppRunner, RunningAiSim]:
    """Serve a simulator on a free port; the caller cleans up the runner and closes ``http``."""
    app = create_app(config or AiSimConfig(keys=KEY))
    runner = web.AppRunner(app, shutdown_timeout=2)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    return runner, RunningAiSim(
        url=f"http://{host}:{port}", state=app[STATE_KEY], http=aiohttp.ClientSession()
    )
