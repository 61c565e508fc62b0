"""The command menu of the Telegram simulator: ``setMyCommands`` / ``getMyCommands`` / ``deleteMyCommands``
with the Bot API's validation and error texts (400 ``Bad Request: ...`` in the Bot API error shape), lists
per scope and language, and the menu a user sees (``GET /sim/users/{id}/commands``); through raw HTTP and
python-telegram-bot."""

from __future__ import annotations

import json
from typing import Any

import pytest
from telegram import Bot, BotCommand, BotCommandScopeChat
from telegram.error import BadRequest

from tests.simulators.tgsim_helpers import GUEST_ID, TOKEN, RunningSim

pytestmark = pytest.mark.integration

HELP = {"command": "help", "description": "How it works"}


async def call(tgsim: RunningSim, method: str, **params: Any) -> tuple[int, dict[str, Any]]:
    body = {k: json.dumps(v) if isinstance(v, list | dict) else v for k, v in params.items()}
    async with tgsim.http.post(f"{tgsim.url}/bot{TOKEN}/{method}", data=body) as response:
        return response.status, await response.json()


@pytest.mark.parametrize(
    ("params", "description"),
    [
        ({"commands": "["}, "can't parse commands JSON object"),
        ({"commands": {}}, "expected an Array of BotCommand"),
        ({"commands": [None]}, "can't parse BotCommand: expected an Object"),
        ({"commands": [{"command": "help"}]}, "can't parse BotCommand: Can't find field \"description\""),
        (
            {"commands": [{"command": 5, "description": "x"}]},
            'can\'t parse BotCommand: Field "command" must be of type String',
        ),
        ({"commands": [{"command": " / ", "description": "x"}]}, "command must be non-empty"),
        ({"commands": [{"command": "a" * 33, "description": "x"}]}, "command length must not exceed 32"),
        ({"commands": [{"command": "help", "description": "   "}]}, "command description must be non-empty"),
        (
            {"commands": [{"command": "help", "description": "x" * 257}]},
            "command description length must not exceed 256",
        ),
        ({"commands": [{"command": "Help", "description": "x"}]}, "BOT_COMMAND_INVALID"),
        ({"commands": [{"command": "my-help", "description": "x"}]}, "BOT_COMMAND_INVALID"),
        (
            {"commands": [{"command": f"c{n}", "description": "x"} for n in range(101)]},
            "BOT_COMMANDS_TOO_MUCH",
        ),
        ({"commands": [HELP], "language_code": "rus"}, "invalid language code specified"),
        ({"commands": [HELP], "language_code": "RU"}, "invalid language code specified"),
        ({"commands": [HELP], "scope": "{"}, "can't parse BotCommandScope JSON object"),
        ({"commands": [HELP], "scope": []}, "can't parse BotCommandScope: BotCommandScope must be an Object"),
        ({"commands": [HELP], "scope": {}}, "can't parse BotCommandScope: Can't find field \"type\""),
        (
            {"commands": [HELP], "scope": {"type": "everyone"}},
            "can't parse BotCommandScope: Unsupported type specified",
        ),
        (
            {"commands": [HELP], "scope": {"type": "chat"}},
            "can't parse BotCommandScope: Empty chat_id specified",
        ),
        ({"commands": [HELP], "scope": {"type": "chat", "chat_id": 424242}}, "chat not found"),
        (
            {"commands": [HELP], "scope": {"type": "chat_administrators", "chat_id": GUEST_ID}},
            "can't use specified scope in private chats",
        ),
        (
            {"commands": [HELP], "scope": {"type": "chat_member", "chat_id": GUEST_ID, "user_id": 0}},
            "can't parse BotCommandScope: Invalid user_id specified",
        ),
    ],
)
async def test_bad_command_lists_are_refused_with_telegrams_400s_and_change_nothing(
    tgsim: RunningSim, guest: int, params: dict[str, Any], description: str
) -> None:
    status, body = await call(tgsim, "setMyCommands", **params)
    assert status == 400
    assert body == {"ok": False, "error_code": 400, "description": f"Bad Request: {description}"}
    assert (await call(tgsim, "getMyCommands"))[1]["result"] == []


async def test_lists_are_kept_per_scope_and_language_and_users_see_the_narrowest(
    tgsim: RunningSim, guest: int
) -> None:
    en = [
        {"command": "help", "description": "How it works"},
        {"command": "delete", "description": "Forget me"},
    ]
    ru = [{"command": "help", "description": "Как это работает"}]
    admin = [*en, {"command": "status", "description": "The queue"}]
    assert (await call(tgsim, "setMyCommands", commands=en))[1] == {"ok": True, "result": True}
    assert (await call(tgsim, "setMyCommands", commands=ru, language_code="ru"))[0] == 200
    # trimmed, with a leading "/" dropped, as TDLib does
    sloppy = [{**c, "command": f" /{c['command']} "} for c in admin]
    chat = {"type": "chat", "chat_id": guest}
    assert (await call(tgsim, "setMyCommands", commands=sloppy, scope=chat))[0] == 200
    assert (await call(tgsim, "getMyCommands"))[1]["result"] == en
    assert (await call(tgsim, "getMyCommands", language_code="ru"))[1]["result"] == ru
    assert (await call(tgsim, "getMyCommands", scope=chat))[1]["result"] == admin
    # exactly that scope and language: no fallback
    assert (await call(tgsim, "getMyCommands", language_code="de"))[1]["result"] == []
    assert (await call(tgsim, "getMyCommands", scope={"type": "all_private_chats"}))[1]["result"] == []
    assert await tgsim.get(f"/sim/users/{guest}/commands") == admin
    await tgsim.say(GUEST_ID + 1, "/start", first_name="Ivan", language_code="ru-RU")
    assert await tgsim.get(f"/sim/users/{GUEST_ID + 1}/commands") == ru
    await tgsim.say(GUEST_ID + 2, "/start", first_name="Hans", language_code="de")
    assert await tgsim.get(f"/sim/users/{GUEST_ID + 2}/commands") == en
    # deleting the chat's list shows the guest the default one again; an empty list deletes too
    assert (await call(tgsim, "deleteMyCommands", scope=chat))[1] == {"ok": True, "result": True}
    assert await tgsim.get(f"/sim/users/{guest}/commands") == en
    assert (await call(tgsim, "setMyCommands", commands=[]))[0] == 200
    assert (await call(tgsim, "getMyCommands"))[1]["result"] == []
    assert (await call(tgsim, "deleteMyCommands", language_code="xx1"))[1]["description"] == (
        "Bad Request: invalid language code specified"
    )


async def test_python_telegram_bot_sets_and_reads_the_lists(bot: Bot, guest: int) -> None:
    commands = [BotCommand("help", "How it works"), BotCommand("delete", "Forget me")]
    assert await bot.set_my_commands(commands, language_code="ru")
    assert await bot.set_my_commands(commands[:1], scope=BotCommandScopeChat(guest))
    assert tuple(await bot.get_my_commands(language_code="ru")) == tuple(commands)
    assert tuple(await bot.get_my_commands(scope=BotCommandScopeChat(guest))) == (commands[0],)
    assert await bot.get_my_commands() == ()
    with pytest.raises(BadRequest, match=r"(?i)chat not found"):
        await bot.set_my_commands(commands, scope=BotCommandScopeChat(987654))
    assert await bot.delete_my_commands(language_code="ru")
    assert await bot.get_my_commands(language_code="ru") == ()
