"""Webhook delivery as the Bot API server does it (tdlib/telegram-bot-api ``WebhookActor.cpp``).

While a webhook is set (``setWebhook``), every pending update is POSTed to its URL as JSON
(``Content-Type: application/json``) with ``X-Telegram-Bot-Api-Secret-Token: <secret_token>`` when one was
given (core.telegram.org/bots/api#setwebhook). An update is forgotten once a POST for it is answered 2xx;
any other answer, or a connection that fails, keeps it and records ``last_error_date`` /
``last_error_message`` (``getWebhookInfo``): ``Wrong response from the webhook: <code> <reason>`` for an
HTTP answer, as the server words it. The update is then repeated: at once after its first failure, then
after 2, 4, 8 … s up to a cap (the server's ``WEBHOOK_MAX_RESEND_TIMEOUT``, 60 s; here
``TGSIM_WEBHOOK_MAX_RETRY_S`` so tests need not wait a minute), or after the answer's ``Retry-After``.

Order: the server keeps one queue per chat and sends a queue's next update only after the previous one was
answered 2xx (``queue_updates_``); different chats go in parallel, up to ``max_connections`` POSTs at once.

A real bot sits behind a TLS-terminating ingress; the simulator cannot speak HTTPS to a dev gateway, so
``TGSIM_WEBHOOK_TARGET`` (``http://host:port``) plays that ingress: the registered ``https://`` URL's path
and query are POSTed to the target instead. Unset, the registered URL itself is used.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import aiohttp

from simulators.telegram.state import UpdateRecord

if TYPE_CHECKING:
    from simulators.telegram.simulator import Simulator

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
#: How long a POST may take before it counts as failed (seconds).
POST_TIMEOUT_S = 10.0


@dataclass
class _Retry:
    fails: int = 0
    delay_s: float = 1.0
    at: float = 0.0


class WebhookDelivery:
    """Delivers ``sim.state.updates`` to the registered webhook; :meth:`run` is the delivery loop."""

    def __init__(
        self,
        sim: Simulator,
        *,
        target: str | None,
        max_retry_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sim = sim
        self.target = target.rstrip("/") if target else None
        self.max_retry_s = max_retry_s
        self._clock = clock
        self._wake = asyncio.Event()
        self._in_flight: dict[int, asyncio.Task[None]] = {}  # update_id → its POST
        self._retries: dict[int, _Retry] = {}
        self._http: aiohttp.ClientSession | None = None

    def notify(self) -> None:
        """Something changed (a new update, a webhook set or deleted): look again."""
        self._wake.set()

    def reset(self) -> None:
        """Forget the retry schedule (a new webhook, or a reset world)."""
        self._retries.clear()
        self.notify()

    def destination(self, url: str) -> str:
        """Where a POST for the registered ``url`` goes: ``url``, or its path and query on the target."""
        if self.target is None:
            return url
        parts = urlsplit(url)
        return self.target + (parts.path or "/") + (f"?{parts.query}" if parts.query else "")

    async def run(self) -> None:
        """Deliver until cancelled."""
        try:
            while True:
                self._wake.clear()
                wait_s = self._send_ready() if self.sim.state.webhook_url else None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), wait_s)
        finally:
            for task in self._in_flight.values():
                task.cancel()
            await asyncio.gather(*self._in_flight.values(), return_exceptions=True)
            if self._http is not None:
                await self._http.close()

    def _send_ready(self) -> float | None:
        """Start a POST for each chat's first pending update that is due, within ``max_connections``;
        returns the seconds until the next retry falls due (``None``: nothing scheduled)."""
        now = self._clock()
        busy_queues = {self._queue(u) for u in self.sim.state.updates if u.update_id in self._in_flight}
        seen: set[object] = set()
        next_at: float | None = None
        for update in list(self.sim.state.updates):
            queue = self._queue(update)
            if queue in seen:
                continue  # a chat's later update waits for the one before it
            seen.add(queue)
            if queue in busy_queues or len(self._in_flight) >= self.sim.state.webhook_max_connections:
                continue
            retry = self._retries.get(update.update_id)
            if retry is not None and retry.at > now:
                next_at = retry.at if next_at is None else min(next_at, retry.at)
                continue
            task = asyncio.create_task(self._post(update), name=f"webhook:{update.update_id}")
            self._in_flight[update.update_id] = task
        return None if next_at is None else max(next_at - now, 0.01)

    @staticmethod
    def _queue(update: UpdateRecord) -> object:
        """The update's queue: its chat (or the sender when it has no chat), else its own."""
        payload = update.payload
        chat = payload.get("chat") or (payload.get("message") or {}).get("chat") or payload.get("from")
        return chat.get("id") if isinstance(chat, dict) else ("update", update.update_id)

    async def _post(self, update: UpdateRecord) -> None:
        sim = self.sim
        url = sim.state.webhook_url
        body = json.dumps({"update_id": update.update_id, update.kind: update.payload})
        headers = {"Content-Type": "application/json"}
        if sim.state.webhook_secret_token:
            headers[SECRET_HEADER] = sim.state.webhook_secret_token
        error: str | None = None
        retry_after = 0.0
        try:
            if self._http is None:
                self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=POST_TIMEOUT_S))
            async with self._http.post(self.destination(url), data=body, headers=headers) as response:
                await response.read()
                if not 200 <= response.status <= 299:
                    error = f"Wrong response from the webhook: {response.status} {response.reason}"
                    with contextlib.suppress(ValueError):
                        retry_after = float(response.headers.get("Retry-After", "0"))
        except TimeoutError:
            error = "Read timeout expired"
        except aiohttp.ClientConnectorError:
            error = "Connection refused"
        except aiohttp.ClientError:
            error = "Webhook connection closed"
        finally:
            self._in_flight.pop(update.update_id, None)
            self.notify()
        if url != sim.state.webhook_url:
            return  # the webhook changed meanwhile: this answer is not about it
        if error is None:
            self._retries.pop(update.update_id, None)
            sim.state.updates = [u for u in sim.state.updates if u.update_id != update.update_id]
            sim.touch()
            return
        sim.state.webhook_last_error_date = sim.now()
        sim.state.webhook_last_error_message = error
        sim.touch()
        retry = self._retries.setdefault(update.update_id, _Retry())
        if retry_after > 0:
            wait_s = min(retry_after, 3600.0)
        elif retry.fails == 0:
            wait_s = 0.0  # the server repeats a first failure at once
        else:
            retry.delay_s = min(retry.delay_s * 2, self.max_retry_s)
            wait_s = retry.delay_s
        retry.fails += 1
        retry.at = self._clock() + wait_s

    def info(self) -> dict[str, Any]:
        """The delivery part of ``getWebhookInfo``: the last error, when there was one."""
        state = self.sim.state
        if state.webhook_last_error_date is None:
            return {}
        return {
            "last_error_date": state.webhook_last_error_date,
            "last_error_message": state.webhook_last_error_message or "",
        }
