"""The bot's command menu: ``setMyCommands``, ``getMyCommands``, ``deleteMyCommands``, with Telegram's
validation, and the menu a user sees (:func:`menu_for`).

A list is kept per scope and language (core.telegram.org/bots/api#setmycommands,
core.telegram.org/bots/api#determining-list-of-commands). The checks and texts follow the three layers a
real call passes:

- the Bot API server (telegram-bot-api ``Client.cpp``: ``get_bot_commands``, ``get_bot_command_scope``,
  ``check_bot_command_scope``): ``can't parse commands JSON object``, ``expected an Array of BotCommand``,
  ``can't parse BotCommand: expected an Object`` / ``Can't find field "description"`` / ``Field "command"
  must be of type String``; ``can't parse BotCommandScope JSON object``, ``can't parse BotCommandScope:
  BotCommandScope must be an Object`` / ``Can't find field "type"`` / ``Unsupported type specified`` /
  ``Empty chat_id specified`` / ``Invalid user_id specified``; an unknown chat is ``chat not found``;
- TDLib (``BotCommand.cpp`` ``set_commands``, ``BotCommandScope.cpp``), whose messages the Bot API server
  passes on with a lower-cased first letter: each command and description is trimmed and a leading ``/``
  dropped; ``command must be non-empty``, ``command length must not exceed 32``, ``command description
  must be non-empty``, ``command description length must not exceed 256``; ``invalid language code
  specified`` (a ``language_code`` that is neither empty nor two lower-case letters, ISO 639-1);
  ``can't use specified scope in private chats`` (``chat_administrators``/``chat_member`` of a user);
- Telegram's servers (``bots.setBotCommands``): ``BOT_COMMAND_INVALID`` (a command that is not 1-32
  lower-case English letters, digits and underscores) and ``BOT_COMMANDS_TOO_MUCH`` (more than 100).

Every failure is a 400 ``Bad Request: ...``. ``setMyCommands`` with an empty list deletes the list, as
``deleteMyCommands`` does; ``getMyCommands`` answers the list of exactly that scope and language (``[]``
when none was set), never a fallback.
"""

from __future__ import annotations

import json
import re
from typing import Any

from simulators.telegram.errors import CHAT_NOT_FOUND, bad_request, fail
from simulators.telegram.methods.base import Handler
from simulators.telegram.params import Params
from simulators.telegram.simulator import Simulator
from simulators.telegram.state import UserRecord

#: BotCommand limits (core.telegram.org/bots/api#botcommand; setMyCommands: "At most 100 commands").
MAX_COMMAND_CHARS = 32
MAX_DESCRIPTION_CHARS = 256
MAX_COMMANDS = 100
_COMMAND = re.compile(r"[a-z0-9_]{1,32}")
_LANGUAGE = re.compile(r"[a-z]{2}")
_CHATLESS = ("default", "all_private_chats", "all_group_chats", "all_chat_administrators")
_WITH_CHAT = ("chat", "chat_administrators", "chat_member")


def _commands(params: Params) -> list[dict[str, str]]:
    """The ``commands`` argument as BotCommand objects, trimmed (Client.cpp, then TDLib's checks)."""
    raw = params.json("commands", "commands")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise bad_request("expected an Array of BotCommand")
    parsed: list[dict[str, str]] = []
    for item in raw:
        if not isinstance(item, dict):
            raise bad_request("can't parse BotCommand: expected an Object")
        fields: dict[str, str] = {}
        for name in ("command", "description"):
            if name not in item:
                raise bad_request(f"can't parse BotCommand: Can't find field \"{name}\"")
            if not isinstance(item[name], str):
                raise bad_request(f'can\'t parse BotCommand: Field "{name}" must be of type String')
            fields[name] = item[name]
        parsed.append(fields)
    checked = []
    for item in parsed:
        command = item["command"].strip()
        if command.startswith("/"):
            command = command[1:]
        if not command:
            raise bad_request("command must be non-empty")
        if len(command) > MAX_COMMAND_CHARS:
            raise bad_request(f"command length must not exceed {MAX_COMMAND_CHARS}")
        description = item["description"].strip()
        if not description:
            raise bad_request("command description must be non-empty")
        if len(description) > MAX_DESCRIPTION_CHARS:
            raise bad_request(f"command description length must not exceed {MAX_DESCRIPTION_CHARS}")
        checked.append({"command": command, "description": description})
    for item in checked:
        if not _COMMAND.fullmatch(item["command"]):
            raise bad_request("BOT_COMMAND_INVALID")
    if len(checked) > MAX_COMMANDS:
        raise bad_request("BOT_COMMANDS_TOO_MUCH")
    return checked


def _chat_id(value: Any) -> int:
    """A scope's ``chat_id``: a number or its digits; ``@username`` chats are not simulated."""
    if isinstance(value, bool) or value is None:
        raise bad_request("can't parse BotCommandScope: Empty chat_id specified")
    text = str(value).strip()
    if not text:
        raise bad_request("can't parse BotCommandScope: Empty chat_id specified")
    try:
        return int(text)
    except ValueError:
        raise fail(CHAT_NOT_FOUND) from None


def scope_key(sim: Simulator, params: Params) -> str:
    """The list a call addresses: ``<scope type>[:<chat id>[:<user id>]]|<language code>``, checked as
    the module docstring says (scope first, then the language code)."""
    raw = params.text("scope")
    scope: Any = {"type": "default"}
    if raw:
        try:
            scope = json.loads(raw)
        except ValueError:
            raise bad_request("can't parse BotCommandScope JSON object") from None
    if not isinstance(scope, dict):
        raise bad_request("can't parse BotCommandScope: BotCommandScope must be an Object")
    kind = scope.get("type")
    if kind is None:
        raise bad_request("can't parse BotCommandScope: Can't find field \"type\"")
    if not isinstance(kind, str):
        raise bad_request('can\'t parse BotCommandScope: Field "type" must be of type String')
    if kind in _CHATLESS:
        key = kind
    elif kind in _WITH_CHAT:
        chat_id = _chat_id(scope.get("chat_id"))
        key = f"{kind}:{chat_id}"
        if kind == "chat_member":
            user_id = scope.get("user_id")
            if not isinstance(user_id, int) or isinstance(user_id, bool) or user_id <= 0:
                raise bad_request("can't parse BotCommandScope: Invalid user_id specified")
            key += f":{user_id}"
        chat = sim.state.chats.get(chat_id)
        if chat is None:
            raise fail(CHAT_NOT_FOUND)
        if chat.type == "private" and kind != "chat":
            raise bad_request("can't use specified scope in private chats")
    else:
        raise bad_request("can't parse BotCommandScope: Unsupported type specified")
    language = params.text("language_code")
    if language and not _LANGUAGE.fullmatch(language):
        raise bad_request("invalid language code specified")
    return f"{key}|{language}"


async def set_my_commands(sim: Simulator, params: Params) -> Any:
    """``setMyCommands``: store the list of one scope and language (an empty list deletes it)."""
    commands = _commands(params)
    key = scope_key(sim, params)
    if commands:
        sim.state.command_lists[key] = commands
    else:
        sim.state.command_lists.pop(key, None)
    return True


async def get_my_commands(sim: Simulator, params: Params) -> Any:
    """``getMyCommands``: the list of exactly this scope and language, ``[]`` when none was set."""
    return sim.state.command_lists.get(scope_key(sim, params), [])


async def delete_my_commands(sim: Simulator, params: Params) -> Any:
    """``deleteMyCommands``: delete the list of this scope and language (users then see a wider one)."""
    sim.state.command_lists.pop(scope_key(sim, params), None)
    return True


def menu_for(sim: Simulator, user: UserRecord) -> list[dict[str, str]]:
    """What ``user`` sees in the menu of their private chat with the bot: the first list set among the
    scopes ``chat``, ``all_private_chats``, ``default`` (narrowest first), each in the user's language
    (the primary subtag of ``language_code``) before the list without one
    (core.telegram.org/bots/api#determining-list-of-commands)."""
    language = (user.language_code or "").replace("_", "-").split("-")[0].lower()
    for scope in (f"chat:{user.id}", "all_private_chats", "default"):
        for lang in dict.fromkeys((language, "")):
            found = sim.state.command_lists.get(f"{scope}|{lang}")
            if found:
                return found
    return []


HANDLERS: dict[str, Handler] = {
    "setMyCommands": set_my_commands,
    "getMyCommands": get_my_commands,
    "deleteMyCommands": delete_my_commands,
}
