"""The bot's identity: the rules of its username, the sticker-set names built from it, and whether the
token's bot is the one configured. Plain functions, so that settings validation, delivery, the gateway's
start and a preflight all apply the same rules.

Rules and their sources:

- A bot username is 5-32 characters of Latin letters, digits and underscores and ends in ``bot`` (any
  case): core.telegram.org/bots/features#botfather ("Usernames are 5-32 characters long and not case
  sensitive – but may only include Latin characters, numbers, and underscores. Your bot's username must
  end in 'bot'"); core.telegram.org/method/bots.checkUsername ("only letters, digits and underscores are
  allowed, must end in ``bot``, and the full username must be 5–32 characters long").
- It starts with a letter: kept from the settings' earlier pattern (a set name built from it never starts
  with it: ``sb…``).
- A set name: English letters, digits, underscores; begins with a letter; no consecutive underscores;
  ends in ``_by_<bot username>`` (case-insensitive); 1-64 characters: core.telegram.org/bots/api
  #createnewstickerset; python-telegram-bot 22.8 ``Bot.create_new_sticker_set`` docstring (``name``).

A job's set name is ``sb<32 hex digits of the job id>_by_<bot username>`` (:func:`sticker_set_name`): every
name has the same length, 38 characters plus the username, so a username over 26 characters makes every
set name too long for Telegram and every pack fails (issue 18). :func:`bot_username_problems` says so at
settings validation; :func:`longest_set_name` is the name that length is computed from.
"""

from __future__ import annotations

import re
from uuid import UUID

__all__ = [
    "MAX_SET_NAME_CHARS",
    "bot_mismatch",
    "bot_username_problems",
    "longest_set_name",
    "max_bot_username_chars",
    "set_name_problems",
    "sticker_set_name",
]

#: Telegram's limit on a sticker set's ``name`` (core.telegram.org/bots/api#createnewstickerset:
#: "1-64 characters").
MAX_SET_NAME_CHARS = 64
_USERNAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{4,31}")
_SET_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
#: The greatest job id: its hex is as long as every other's (32 digits), so its name is the longest.
_LAST_JOB_ID = UUID(int=(1 << 128) - 1)


def _name(job_id: UUID, bot_username: str) -> str:
    return f"sb{job_id.hex}_by_{bot_username}"


def set_name_problems(name: str, bot_username: str) -> list[str]:
    """What breaks Telegram's rules for a set ``name`` of the bot ``bot_username`` (empty: none)."""
    problems = []
    if not 1 <= len(name) <= MAX_SET_NAME_CHARS:
        problems.append(f"is {len(name)} characters; Telegram allows 1-{MAX_SET_NAME_CHARS}")
    if not _SET_NAME.fullmatch(name):
        problems.append("must be English letters, digits and underscores, beginning with a letter")
    if "__" in name:
        problems.append("must not contain consecutive underscores")
    if not name.lower().endswith(f"_by_{bot_username}".lower()):
        problems.append(f"must end in _by_{bot_username}")
    return problems


def sticker_set_name(job_id: UUID, bot_username: str) -> str:
    """The deterministic set name of a job: ``sb<32 hex>_by_<bot username>``.

    Raises:
        ValueError: the name breaks Telegram's rules (:func:`set_name_problems`), e.g. a bot username
            longer than :func:`max_bot_username_chars`.
    """
    name = _name(job_id, bot_username)
    problems = set_name_problems(name, bot_username)
    if problems:
        raise ValueError(f"sticker set name {name!r} breaks Telegram's rules: {'; '.join(problems)}")
    return name


def longest_set_name(bot_username: str) -> str:
    """The longest set name we build for ``bot_username`` (unchecked): every job id's hex has 32 digits,
    so this is the length of every set name; built by the same code as :func:`sticker_set_name`."""
    return _name(_LAST_JOB_ID, bot_username)


def max_bot_username_chars() -> int:
    """The longest bot username whose set names fit Telegram's 64 characters (26)."""
    return MAX_SET_NAME_CHARS - len(longest_set_name(""))


def bot_username_problems(bot_username: str) -> list[str]:
    """Why ``bot_username`` cannot be the booth's ``BOT_USERNAME`` (empty: it can): Telegram's username
    rules, then whether the longest set name built from it fits Telegram's limit."""
    if not _USERNAME.fullmatch(bot_username) or not bot_username.lower().endswith("bot"):
        return [
            f"BOT_USERNAME {bot_username!r} is not a bot username: 5-32 Latin letters, digits or "
            "underscores, starting with a letter and ending in 'bot' "
            "(core.telegram.org/bots/features#botfather); "
            "write it without the @"
        ]
    longest = longest_set_name(bot_username)
    problems = set_name_problems(longest, bot_username)
    if problems:
        return [
            f"BOT_USERNAME {bot_username!r} ({len(bot_username)} characters) makes every sticker set name "
            f"{len(longest)} characters ({longest!r}: {'; '.join(problems)}); a bot whose username has at "
            f"most {max_bot_username_chars()} characters is needed "
            "(core.telegram.org/bots/api#createnewstickerset)"
        ]
    return []


def bot_mismatch(configured: str, actual: str | None) -> str | None:
    """Why the token's bot (``getMe``'s ``username``, ``actual``) is not ``BOT_USERNAME`` (``configured``),
    compared without case as Telegram does (core.telegram.org/bots/features#botfather: usernames "are not
    case sensitive"); ``None`` when it is."""
    if actual is not None and actual.lower() == configured.lower():
        return None
    return (
        f"TELEGRAM_BOT_TOKEN belongs to @{actual} but BOT_USERNAME is {configured!r}: every QR code "
        f"(t.me/{configured}) and every sticker set name (…_by_{configured}) would name the wrong bot; "
        f"set BOT_USERNAME={actual} or use the token of @{configured}"
    )
