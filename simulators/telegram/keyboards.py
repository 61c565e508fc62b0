"""``reply_markup`` parsing: inline keyboards are checked button by button, other markups kept as sent.

Rules from core.telegram.org/bots/api#inlinekeyboardbutton (exactly one action field besides ``text``;
``callback_data`` of 1-64 bytes) with the Bot API server's wording (Client.cpp ``get_inline_keyboard_button``;
``BUTTON_DATA_INVALID`` comes from Telegram's servers).
"""

from __future__ import annotations

from typing import Any

from simulators.telegram.errors import BUTTON_DATA_INVALID, bad_request, fail
from simulators.telegram.params import Params

MAX_CALLBACK_DATA_BYTES = 64

_ACTIONS = (
    "callback_data",
    "url",
    "login_url",
    "switch_inline_query",
    "switch_inline_query_current_chat",
    "switch_inline_query_chosen_chat",
    "callback_game",
    "pay",
    "web_app",
    "copy_text",
)


def parse_reply_markup(params: Params) -> dict[str, Any] | None:
    """The call's ``reply_markup`` (JSON object) or ``None``; raises ``BotApiError`` 400 when malformed."""
    value = params.json("reply_markup", "reply keyboard markup")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise bad_request("object expected as reply markup")
    if "inline_keyboard" in value:
        _check_inline_keyboard(value["inline_keyboard"])
        return {"inline_keyboard": value["inline_keyboard"]}
    return value


def _check_inline_keyboard(rows: Any) -> None:
    if not isinstance(rows, list):
        raise bad_request('field "inline_keyboard" of the InlineKeyboardMarkup must be an Array')
    for row in rows:
        if not isinstance(row, list):
            raise bad_request(
                'field "inline_keyboard" of the InlineKeyboardMarkup must be an Array of Arrays'
            )
        for button in row:
            _check_button(button)


def _check_button(button: Any) -> None:
    prefix = "can't parse inline keyboard button: "
    if not isinstance(button, dict):
        raise bad_request(prefix + "InlineKeyboardButton must be an Object")
    if not isinstance(button.get("text"), str):
        raise bad_request(prefix + 'Field "text" must be of type String')
    if not any(key in button for key in _ACTIONS):
        raise bad_request(prefix + "Text buttons are unallowed in the inline keyboard")
    if "callback_data" in button:
        data = button["callback_data"]
        if not isinstance(data, str):
            raise bad_request(prefix + 'Field "callback_data" must be of type String')
        if not 1 <= len(data.encode("utf-8")) <= MAX_CALLBACK_DATA_BYTES:
            raise fail(BUTTON_DATA_INVALID)
    if "url" in button and not (isinstance(button["url"], str) and button["url"].strip()):
        raise bad_request(prefix + 'Field "url" must be of type String')
