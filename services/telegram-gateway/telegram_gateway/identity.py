"""Whether the bot token is ``BOT_USERNAME``'s bot: the gateway's check at start, callable by a preflight.

The token decides which bot answers; ``BOT_USERNAME`` decides the bot every QR code (``t.me/<bot>``) and
every sticker set name (``…_by_<bot>``) names. When they differ, every guest scans a link to another bot and
every set fails, and nobody learns it until guests fail (issue 18). ``getMe`` "returns basic information
about the bot in form of a User object" (core.telegram.org/bots/api#getme), whose ``username`` is the
token's bot; the comparison ignores case (:func:`shared.bot_identity.bot_mismatch`).
"""

from __future__ import annotations

from telegram import Bot
from telegram.error import InvalidToken

from shared.bot_identity import bot_mismatch
from shared.errors import ConfigError

__all__ = ["check_bot_identity"]


async def check_bot_identity(bot: Bot, bot_username: str) -> str:
    """``getMe`` through ``bot``; returns the token's bot username when it is ``bot_username``.

    Raises:
        ConfigError: the token is refused (401, python-telegram-bot's ``InvalidToken``), or it belongs to
            another bot (the message names both).
        telegram.error.TelegramError: Telegram could not be asked (a network error, a 5xx).
    """
    try:
        me = await bot.get_me()
    except InvalidToken as exc:
        raise ConfigError(
            f"TELEGRAM_BOT_TOKEN was refused by Telegram ({exc.message}): give the token @BotFather "
            f"issued for @{bot_username}"
        ) from exc
    problem = bot_mismatch(bot_username, me.username)
    if problem is not None or me.username is None:
        raise ConfigError(problem or "getMe answered no username")
    return me.username
