"""The bot itself: ``getMe``, receiving updates (``getUpdates``, webhooks) and profile setters (the command
menu is :mod:`simulators.telegram.methods.commands`).

python-telegram-bot calls ``getMe`` in ``Bot.initialize`` and ``deleteWebhook`` then ``getUpdates`` in
``Updater.start_polling`` (and one last ``getUpdates`` with ``timeout=0`` when polling stops). While a webhook
is set ``getUpdates`` answers 409, as Telegram does, and the updates are POSTed to it
(:mod:`simulators.telegram.webhook`). ``setWebhook`` checks what Telegram's server checks
(tdlib/telegram-bot-api ``Client.cpp`` / ``WebhookActor.cpp``): an ``https://`` URL on port 443, 80, 88 or
8443, a ``secret_token`` of 1-256 characters ``A-Z a-z 0-9 _ -``; ``max_connections`` is clamped to 1-100
(default 40).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from simulators.telegram import wire
from simulators.telegram.errors import TERMINATED_BY_SET_WEBHOOK, WEBHOOK_ACTIVE, bad_request, fail
from simulators.telegram.methods.base import Answer, Handler
from simulators.telegram.params import Params
from simulators.telegram.simulator import Simulator

#: getUpdates bounds (Client.cpp: ``limit`` 1-100, default 100; ``timeout`` 0-50 s, LONG_POLL_MAX_TIMEOUT).
MAX_UPDATES_LIMIT = 100
MAX_POLL_TIMEOUT_S = 50
#: Ports Telegram delivers webhooks to (core.telegram.org/bots/api#setwebhook).
WEBHOOK_PORTS = frozenset({443, 80, 88, 8443})
#: ``secret_token``: "1-256 characters. Only characters A-Z, a-z, 0-9, _ and - are allowed".
SECRET_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,256}")


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
    """``setWebhook``: updates are POSTed to ``url`` from now on; an empty ``url`` deletes the webhook.
    Ends a waiting long poll (409 ``terminated by setWebhook request``) and clears the last error."""
    url = params.text("url").strip()
    if not url:
        return await delete_webhook(sim, params)
    parts = urlsplit(url)
    if parts.scheme.lower() != "https":
        raise bad_request("bad webhook: An HTTPS URL must be provided for webhook")
    try:
        port = parts.port or 443
    except ValueError:
        raise bad_request("bad webhook: Wrong port number specified in the URL") from None
    if port not in WEBHOOK_PORTS:
        raise bad_request("bad webhook: Webhook can be set up only on ports 80, 88, 443 or 8443")
    secret = params.text("secret_token")
    if params.has("secret_token") and SECRET_TOKEN.fullmatch(secret) is None:
        raise bad_request("secret token contains unallowed characters")
    if params.has("allowed_updates"):
        allowed = params.json("allowed_updates", "allowed updates")
        if isinstance(allowed, list):
            sim.state.allowed_updates = [str(kind) for kind in allowed] or None
    if params.flag("drop_pending_updates"):
        sim.state.updates.clear()
    sim.state.webhook_url = url
    sim.state.webhook_secret_token = secret
    sim.state.webhook_max_connections = min(max(params.integer("max_connections", 40), 1), 100)
    sim.state.webhook_last_error_date = None
    sim.state.webhook_last_error_message = None
    sim.poll.terminate(TERMINATED_BY_SET_WEBHOOK)
    sim.webhook.reset()
    sim.touch()
    return Answer(True, "Webhook was set")


async def delete_webhook(sim: Simulator, params: Params) -> Any:
    """``deleteWebhook``: drop the webhook (and pending updates with ``drop_pending_updates``)."""
    if params.flag("drop_pending_updates"):
        sim.state.updates.clear()
    if not sim.state.webhook_url:
        return Answer(True, "Webhook is already deleted")
    sim.state.webhook_url = ""
    sim.state.webhook_secret_token = ""
    sim.state.webhook_last_error_date = None
    sim.state.webhook_last_error_message = None
    sim.webhook.reset()
    sim.touch()
    return Answer(True, "Webhook was deleted")


async def get_webhook_info(sim: Simulator, params: Params) -> Any:
    """``getWebhookInfo``: the URL, the pending updates, and while a webhook is set its ``max_connections``
    and the last failed delivery (``last_error_date``, ``last_error_message``), as WebhookInfo has them."""
    info: dict[str, Any] = {
        "url": sim.state.webhook_url,
        "has_custom_certificate": False,
        "pending_update_count": len(sim.state.updates),
    }
    if sim.state.webhook_url:
        info["max_connections"] = sim.state.webhook_max_connections
        info.update(sim.webhook.info())
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
