"""The bot itself: ``getMe``, receiving updates (``getUpdates``, webhooks) and profile setters (the command
menu is :mod:`simulators.telegram.methods.commands`).

python-telegram-bot calls ``getMe`` in ``Bot.initialize`` and ``deleteWebhook`` then ``getUpdates`` in
``Updater.start_polling`` (and one last ``getUpdates`` with ``timeout=0`` when polling stops). Webhooks are
remembered but never called: while one is set ``getUpdates`` answers 409, as Telegram does.
"""

from __future__ import annotations

from typing import Any

from simulators.telegram import wire
from simulators.telegram.errors import TERMINATED_BY_SET_WEBHOOK, WEBHOOK_ACTIVE, bad_request, fail
from simulators.telegram.methods.base import Answer, Handler
from simulators.telegram.params import Params
from simulators.telegram.simulator import Simulator

#: getUpdates bounds (Client.cpp: ``limit`` 1-100, default 100; ``timeout`` 0-50 s, LONG_POLL_MAX_TIMEOUT).
MAX_UPDATES_LIMIT = 100
MAX_POLL_TIMEOUT_S = 50


async def get_me(sim: Simulator, params: Params) -> Any:
    """``getMe``: the bot's ``User`` with its capability flags."""
    return wire.bot_user(sim.config, full=True)


async def get_updates(sim: Simulator, params: Params) -> Any:
    """``getUpdates``: confirm by ``offset``, return up to ``limit`` updates, long-poll up to ``timeout`` s.

    Raises 409 while a webhook is set, or when a newer long poll replaces this one (``polling``).
    """
    if sim.state.webhook_url:
        raise fail(WEBHOOK_ACTIVE)
    limit = min(max(params.integer("limit", MAX_UPDATES_LIMIT), 1), MAX_UPDATES_LIMIT)
    timeout = min(max(params.integer("timeout"), 0), MAX_POLL_TIMEOUT_S)
    if params.has("allowed_updates"):
        allowed = params.json("allowed_updates", "allowed updates")
        if isinstance(allowed, list):
            sim.state.allowed_updates = [str(kind) for kind in allowed] or None
    offset = sim.confirm_updates(params.integer("offset"))
    batch = sim.pending_updates(offset, limit)
    if batch or timeout == 0:
        return batch
    await sim.poll.wait(timeout, lambda: bool(sim.pending_updates(offset, 1)))
    return sim.pending_updates(offset, limit)


async def set_webhook(sim: Simulator, params: Params) -> Any:
    """``setWebhook``: remembered (never called); an empty ``url`` deletes it. Ends a waiting long poll."""
    url = params.text("url").strip()
    if not url:
        return await delete_webhook(sim, params)
    if not url.lower().startswith("https://"):
        raise bad_request("bad webhook: An HTTPS URL must be provided for webhook")
    if params.flag("drop_pending_updates"):
        sim.state.updates.clear()
    sim.state.webhook_url = url
    sim.poll.terminate(TERMINATED_BY_SET_WEBHOOK)
    return Answer(True, "Webhook was set")


async def delete_webhook(sim: Simulator, params: Params) -> Any:
    """``deleteWebhook``: drop the webhook (and pending updates with ``drop_pending_updates``)."""
    if params.flag("drop_pending_updates"):
        sim.state.updates.clear()
    if not sim.state.webhook_url:
        return Answer(True, "Webhook is already deleted")
    sim.state.webhook_url = ""
    return Answer(True, "Webhook was deleted")


async def get_webhook_info(sim: Simulator, params: Params) -> Any:
    """``getWebhookInfo``: the remembered URL and the number of pending updates."""
    info: dict[str, Any] = {
        "url": sim.state.webhook_url,
        "has_custom_certificate": False,
        "pending_update_count": len(sim.state.updates),
    }
    if sim.state.allowed_updates:
        info["allowed_updates"] = sim.state.allowed_updates
    return info


async def accept(sim: Simulator, params: Params) -> Any:
    """Profile setters the simulator only acknowledges (``setMyDescription`` ...)."""
    return True


async def get_my_name(sim: Simulator, params: Params) -> Any:
    """``getMyName``."""
    return {"name": sim.config.bot_first_name}


async def get_my_description(sim: Simulator, params: Params) -> Any:
    """``getMyDescription``: always empty."""
    return {"description": ""}


async def get_my_short_description(sim: Simulator, params: Params) -> Any:
    """``getMyShortDescription``: always empty."""
    return {"short_description": ""}


HANDLERS: dict[str, Handler] = {
    "getMe": get_me,
    "getUpdates": get_updates,
    "setWebhook": set_webhook,
    "deleteWebhook": delete_webhook,
    "getWebhookInfo": get_webhook_info,
    "setMyName": accept,
    "setMyDescription": accept,
    "setMyShortDescription": accept,
    "setChatMenuButton": accept,
    "setMyDefaultAdministratorRights": accept,
    "logOut": accept,
    "close": accept,
    "getMyName": get_my_name,
    "getMyDescription": get_my_description,
    "getMyShortDescription": get_my_short_description,
}
