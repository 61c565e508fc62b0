"""The aiohttp application: the Gemini and OpenAI routes, the control API and ``/healthz`` around one
:class:`simulators.ai.state.SimState`.

``create_app(config)`` builds it without I/O. Drawing and measuring run in a thread, so a slow render does
not hold other calls (tests run several worker slots against one simulator).
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from cartoon.grammar import ImageRole
from shared.outfits import load_catalog
from simulators.ai.config import AiSimConfig
from simulators.ai.control import ControlApi
from simulators.ai.drawing import draw_image, read_image_prompt, vision_answer
from simulators.ai.gemini import GeminiApi
from simulators.ai.handling import Call
from simulators.ai.models import ModelsApi
from simulators.ai.openai_api import OpenAIApi
from simulators.ai.state import CallRecord, SimState

__all__ = ["MAX_REQUEST_BYTES", "STATE_KEY", "create_app"]

#: Largest request body accepted (bytes): OpenAI takes image files of up to 50 MB.
MAX_REQUEST_BYTES = 64 * 1024 * 1024
STATE_KEY = web.AppKey("state", SimState)


async def _healthz(request: web.Request) -> web.StreamResponse:
    return web.Response(text="ok")


def create_app(config: AiSimConfig) -> web.Application:
    """Build the simulator application for ``config``; its state is at ``app[STATE_KEY]``."""
    state = SimState(latency_s=config.latency_sec, call_latency_s=config.call_latencies())
    catalog = load_catalog()

    async def serve(call: Call, record: CallRecord) -> bytes | dict[str, Any]:
        images: list[tuple[ImageRole, bytes]] = [("selfie", data) for data in call.images]
        if call.call == "image":
            parsed = read_image_prompt(call.prompt)  # RejectedRequest: the provider's 400
            sheet = parsed.spec.cols * parsed.spec.rows > 1
            imperfections = state.take_imperfections() if sheet else []
            png, _ = await asyncio.to_thread(draw_image, call.prompt, images, catalog, imperfections)
            record.kind = parsed.kind
            record.roles = list(parsed.roles)
            if imperfections:
                record.outcome = "imperfect:" + ",".join(imperfections)
            return png
        kind, answer = await asyncio.to_thread(vision_answer, call.prompt, images)
        record.kind = kind
        scripted = (
            state.take_qa()
            if kind in ("sheet_qa", "pack_qa")
            else state.take_verify()
            if kind == "verify"
            else None
        )
        if scripted is not None and kind == "verify":
            answer = {"match": not scripted.mismatches, "mismatches": scripted.mismatches}
        elif scripted is not None:
            answer = {"outliers": scripted.outliers}
        return answer

    app = web.Application(client_max_size=MAX_REQUEST_BYTES)
    app[STATE_KEY] = state
    GeminiApi(state, serve, config.accepts).add_routes(app.router)
    OpenAIApi(state, serve, config.accepts).add_routes(app.router)
    ControlApi(state).add_routes(app.router)
    ModelsApi(state.models, config.accepts).add_routes(app.router)
    app.router.add_get("/healthz", _healthz)
    return app
