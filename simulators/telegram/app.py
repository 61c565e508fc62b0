"""The aiohttp application: Bot API, control API, the watch page and ``/healthz`` around one ``Simulator``.

``create_app(config)`` builds it without I/O; persisted state is loaded in ``on_startup`` (then the
configured groups are created when missing) and saved in ``on_cleanup``. Tests run it in-process
(``web.AppRunner`` on port 0); ``__main__`` serves it.
"""

from __future__ import annotations

import asyncio
import contextlib

from aiohttp import web

from simulators.telegram.botapi import BotApi
from simulators.telegram.config import SimConfig
from simulators.telegram.control import ControlApi
from simulators.telegram.page import WatchPage
from simulators.telegram.persistence import CounterKeeper, autosave, load_state, save_state
from simulators.telegram.simulator import Simulator

SIMULATOR_KEY = web.AppKey("simulator", Simulator)
_AUTOSAVE_KEY = web.AppKey("autosave", asyncio.Task[None])
_WEBHOOK_KEY = web.AppKey("webhook", asyncio.Task[None])


async def _healthz(request: web.Request) -> web.StreamResponse:
    return web.Response(text="ok")


async def _start(app: web.Application) -> None:
    sim = app[SIMULATOR_KEY]
    data_dir = sim.config.data_dir
    if data_dir is not None:
        loaded = load_state(data_dir)
        if loaded is not None:
            sim.state = loaded
        sim.before_handout = CounterKeeper(data_dir)
        app[_AUTOSAVE_KEY] = asyncio.create_task(autosave(sim, data_dir), name="tgsim-autosave")
    sim.seed_groups()
    app[_WEBHOOK_KEY] = asyncio.create_task(sim.webhook.run(), name="tgsim-webhook")


async def _release_polls(app: web.Application) -> None:
    app[SIMULATOR_KEY].poll.shutdown()


async def _stop(app: web.Application) -> None:
    sim = app[SIMULATOR_KEY]
    for key in (_WEBHOOK_KEY, _AUTOSAVE_KEY):
        task = app.get(key)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if sim.config.data_dir is not None:
        save_state(sim.config.data_dir, sim.state)
    await sim.close()


def create_app(config: SimConfig) -> web.Application:
    """Build the simulator application for ``config``; the ``Simulator`` is at ``app[SIMULATOR_KEY]``."""
    sim = Simulator(config)
    app = web.Application(client_max_size=config.max_request_bytes)
    app[SIMULATOR_KEY] = sim
    BotApi(sim).add_routes(app.router)
    ControlApi(sim).add_routes(app.router)
    WatchPage(sim).add_routes(app.router)
    app.router.add_get("/healthz", _healthz)
    app.on_startup.append(_start)
    app.on_shutdown.append(_release_polls)
    app.on_cleanup.append(_stop)
    return app
