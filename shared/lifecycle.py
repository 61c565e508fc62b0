"""The process lifecycle every non-HTTP service shares (DESIGN.md §9 "Graceful shutdown"):
SIGTERM/SIGINT set one stop event; the service runs until it is set or one of its loops ends (a dead loop
stops the process, so the orchestrator restarts it); consumers get a bounded drain, then stragglers are
cancelled (handlers requeue their work; ``CancelledError`` is never swallowed).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shared.streams import StreamConsumer


def consumer_name(configured: str, service: str) -> str:
    """``CONSUMER_NAME`` when set, else ``<service>-<host>-<pid>``: one named consumer per replica."""
    return configured or f"{service}-{socket.gethostname()}-{os.getpid()}"


def stop_on_signals() -> asyncio.Event:
    """An event set by SIGTERM or SIGINT (call inside the running loop)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def sleep_or_stop(stop: asyncio.Event, seconds: float) -> None:
    """Sleep ``seconds`` s, returning early when ``stop`` is set."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)


async def run_until_stopped(stop: asyncio.Event, tasks: Sequence[asyncio.Task[object]]) -> None:
    """Wait until ``stop`` is set or any of ``tasks`` ends, then set ``stop``."""
    waiter = asyncio.create_task(stop.wait())
    await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    stop.set()


async def drain(consumers: Sequence[StreamConsumer], *, timeout_s: float) -> None:
    """Let running handlers finish for up to ``timeout_s`` s, then cancel and await the rest."""
    stragglers = [task for consumer in consumers for task in await consumer.drain(timeout_s=timeout_s)]
    for task in stragglers:
        task.cancel()
    await asyncio.gather(*stragglers, return_exceptions=True)
