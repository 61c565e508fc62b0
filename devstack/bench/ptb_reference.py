"""The reference of the gateway benchmark: python-telegram-bot with its ``AIORateLimiter`` alone sending a
load of messages, as its own process: ``python -m devstack.bench.ptb_reference PLAN.json``.

``PLAN.json``: ``{"base_url": "<Bot API root>", "token": "...", "slots": 8, "max_retries": 3,
"messages": [[chat_id, text], ...]}``. ``slots`` senders take the messages in order (as the gateway's
``OUTBOX_SLOTS`` consumers do); each send goes through an ``ExtBot`` with ``AIORateLimiter(max_retries=…)``
and PTB's defaults otherwise (30 messages/s overall, 20/min per group, nothing per private chat;
REFERENCE.md). A ``RetryAfter`` that the limiter gives up on is waited out and the message sent again, as a
bot must do to deliver it. Prints ``{"sent": n, "retry_after_raised": n}`` as JSON.

The one module outside the gateway that imports python-telegram-bot (``pyproject.toml`` import contract
``telegram-sdk-in-gateway`` names it): the benchmark's reference *is* that library.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any

from telegram.error import RetryAfter
from telegram.ext import AIORateLimiter, ExtBot


async def send_all(plan: dict[str, Any]) -> dict[str, int]:
    """Send every message of ``plan``; returns the counts printed by :func:`main`."""
    base = str(plan["base_url"]).rstrip("/")
    limiter: AIORateLimiter = AIORateLimiter(max_retries=int(plan["max_retries"]))
    bot: ExtBot[int] = ExtBot(token=plan["token"], base_url=f"{base}/bot", rate_limiter=limiter)
    queue: asyncio.Queue[tuple[int, str]] = asyncio.Queue()
    for chat_id, text in plan["messages"]:
        queue.put_nowait((int(chat_id), str(text)))
    counts = {"sent": 0, "retry_after_raised": 0}

    async def sender() -> None:
        while not queue.empty():
            chat_id, text = queue.get_nowait()
            while True:
                try:
                    await bot.send_message(chat_id, text)
                except RetryAfter as exc:
                    counts["retry_after_raised"] += 1
                    delay = exc.retry_after
                    await asyncio.sleep(delay.total_seconds() if hasattr(delay, "total_seconds") else delay)
                    continue
                counts["sent"] += 1
                break

    async with bot:
        await asyncio.gather(*(sender() for _ in range(int(plan["slots"]))))
    return counts


def main() -> None:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # its INFO lines carry the token
    plan = json.loads(Path(sys.argv[1]).read_text())
    print(json.dumps(asyncio.run(send_all(plan))))


if __name__ == "__main__":
    main()
