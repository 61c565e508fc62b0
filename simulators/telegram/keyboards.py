"""``reply_markup`` parsing: inline keyboards are checked button by button, other markups kept as sent.

Rules from core.telegram.org/bots/api#inlinekeyboardbutton (exactly one action field besides ``text``;
``callback_data`` of 1-64 bytes) with the Bot API server's wording (Client.cpp ``get_inline_keyboard_button``;
``BUTTON_DATA_INVALID`` comes from Telegram's servers). A ``url`` button's URL is checked as TDLib does
(an HTTP(S) URL, the scheme optional, or a ``tg://``/``ton://`` link): otherwise 400 ``inline keyboard
button URL '<url>' is invalid: <reason>`` with TDLib's reasons ``Unsupported URL protocol``, ``Wrong HTTP
URL``, ``Wrong port number specified in the URL`` (the answers bots report, e.g. "…'happ://add/…' is
invalid: Unsupported URL protocol").
"""

from __future__ import annotations

import re
from typing import Any

from simulators.telegram.errors import BUTTON_DATA_INVALID, bad_request, fail
from simulators.telegram.params import Params

MAX_CALLBACK_DATA_BYTES = 64
_URL_SCHEMES = ("http", "https", "tg", "ton")
_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")
_HOST = re.compile(
    r"^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$"
)

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
    if "url" in button:
        if not (isinstance(button["url"], str) and button["url"].strip()):
            raise bad_request(prefix + 'Field "url" must be of type String')
        problem = url_problem(button["url"])
        if problem is not None:
            raise bad_request(f"inline keyboard button URL '{button['url']}' is invalid: {problem}")


def url_problem(url: str) -> str | None:
    """Why TDLib refuses ``url`` for a URL button, or ``None`` when it is a valid link (module docstring)."""
    url = url.strip()
    match = _SCHEME.match(url)
    scheme, rest = (match["scheme"].lower(), url[match.end() :]) if match else ("http", url)
    if scheme not in _URL_SCHEMES:
        return "Unsupported URL protocol"
    if scheme in ("tg", "ton"):
        return None if rest else "Wrong HTTP URL"
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0].rsplit("@", 1)[-1]
    host, _, port = authority.partition(":")
    if not host or not _HOST.match(host):
        return "Wrong HTTP URL"
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        return "Wrong port number specified in the URL"
    return None
