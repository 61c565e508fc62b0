"""Bot API failures as Telegram words them, and the one exception that carries them to the wire.

A failed call answers ``{"ok": false, "error_code": N, "description": "...", "parameters": {...}}`` with HTTP
status N (core.telegram.org/bots/api#making-requests). The texts follow tdlib/telegram-bot-api ``Client.cpp``:
``fail_query_with_error`` prefixes ``Bad Request: `` / ``Forbidden: `` / ``Internal Server Error: ``, maps a
few MTProto codes to prose (``PACK_SHORT_NAME_INVALID`` -> "invalid sticker set name is specified",
``PACK_SHORT_NAME_OCCUPIED`` -> "sticker set name is already occupied", ``MESSAGE_NOT_MODIFIED`` -> the long
"message is not modified" text, ``QUERY_ID_INVALID`` -> "query is too old ...") and passes other UPPER_CASE
codes through (``STICKERSET_INVALID``, ``STICKER_PNG_DIMENSIONS``, ``STICKER_PNG_NOPNG``,
``USER_ID_INVALID``).
"""

from __future__ import annotations

from typing import Any

CHAT_NOT_FOUND = "Bad Request: chat not found"
CHAT_ID_EMPTY = "Bad Request: chat_id is empty"
CANT_INITIATE = "Forbidden: bot can't initiate conversation with a user"
BOT_BLOCKED = "Forbidden: bot was blocked by the user"
MESSAGE_TEXT_EMPTY = "Bad Request: message text is empty"
MESSAGE_TOO_LONG = "Bad Request: message is too long"
CAPTION_TOO_LONG = "Bad Request: message caption is too long"
MESSAGE_NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are exactly the "
    "same as a current content and reply markup of the message"
)
MESSAGE_TO_EDIT_NOT_FOUND = "Bad Request: message to edit not found"
MESSAGE_CANT_BE_EDITED = "Bad Request: message can't be edited"
NO_TEXT_TO_EDIT = "Bad Request: there is no text in the message to edit"
MESSAGE_TO_DELETE_NOT_FOUND = "Bad Request: message to delete not found"
REPLY_NOT_FOUND = "Bad Request: message to be replied not found"
# The Bot API server's chat checks (Client.cpp ``check_chat_access``) and its error mapping
# (``fail_query_with_error``: USER_IS_BLOCKED, INPUT_USER_DEACTIVATED), texts as the server sends them.
# with parameters.migrate_to_chat_id (:class:`BotApiError`)
GROUP_UPGRADED = "Bad Request: group chat was upgraded to a supergroup chat"
GROUP_DELETED = "Forbidden: the group chat was deleted"
KICKED_FROM_GROUP = "Forbidden: bot was kicked from the group chat"
KICKED_FROM_SUPERGROUP = "Forbidden: bot was kicked from the supergroup chat"
NOT_A_MEMBER = "Forbidden: bot is not a member of the supergroup chat"
USER_DEACTIVATED = "Forbidden: user is deactivated"
PRIVATE_CHAT_NOT_FOUND = "Bad Request: private chat not found"
# TDLib's refusal to post where the bot may not (td MessagesManager ``can_send_message``), first letter
# lowered by Client.cpp: a group whose admins took the bot's right to send messages.
NOT_ENOUGH_RIGHTS = "Bad Request: not enough rights to send text messages to the chat"
PEER_ID_INVALID = "Bad Request: PEER_ID_INVALID"
QUERY_ID_INVALID = "Bad Request: query is too old and response timeout expired or query ID is invalid"
BUTTON_DATA_INVALID = "Bad Request: BUTTON_DATA_INVALID"
UNSUPPORTED_PARSE_MODE = "Bad Request: unsupported parse_mode"
WRONG_CHAT_ACTION = "Bad Request: wrong parameter action in request"
INVALID_USER_ID = "Bad Request: invalid user_id specified"
USER_NOT_FOUND = "Bad Request: user not found"
USER_ID_INVALID = "Bad Request: USER_ID_INVALID"
STICKERSET_INVALID = "Bad Request: STICKERSET_INVALID"
STICKER_SET_NAME_INVALID = "Bad Request: invalid sticker set name is specified"
STICKER_SET_NAME_OCCUPIED = "Bad Request: sticker set name is already occupied"
STICKER_SET_TITLE_INVALID = "Bad Request: PACK_TITLE_INVALID"
STICKERS_EMPTY = "Bad Request: STICKERS_EMPTY"
STICKERS_TOO_MUCH = "Bad Request: STICKERS_TOO_MUCH"
TOO_MANY_STICKERS = "Bad Request: too many stickers specified"
STICKER_PNG_DIMENSIONS = "Bad Request: STICKER_PNG_DIMENSIONS"
STICKER_PNG_NOPNG = "Bad Request: STICKER_PNG_NOPNG"
STICKER_TGS_NOTGS = "Bad Request: STICKER_TGS_NOTGS"
STICKER_VIDEO_NOWEBM = "Bad Request: STICKER_VIDEO_NOWEBM"
STICKER_FORMAT_INVALID = "Bad Request: invalid sticker format specified"
STICKER_TYPE_INVALID = "Bad Request: unsupported sticker type specified"
NO_STICKER_FILE = "Bad Request: there is no sticker file in the request"
NO_STICKER = "Bad Request: there is no sticker in the request"
NO_PHOTO = "Bad Request: there is no photo in the request"
IMAGE_PROCESS_FAILED = "Bad Request: IMAGE_PROCESS_FAILED"
FILE_TOO_BIG = "Bad Request: file is too big"
FILE_EMPTY = "Bad Request: file must be non-empty"
WRONG_FILE_ID = "Bad Request: wrong file identifier/HTTP URL specified"
INVALID_FILE_ID = "Bad Request: invalid file_id"
URL_FETCH_FAILED = "Bad Request: failed to get HTTP URL content"
JSON_BODY_INVALID = "Bad Request: can't parse JSON encoded request"
WEBHOOK_ACTIVE = (
    "Conflict: can't use getUpdates method while webhook is active; "
    "use deleteWebhook to delete the webhook first"
)
TERMINATED_BY_GET_UPDATES = (
    "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
)
TERMINATED_BY_SET_WEBHOOK = "Conflict: terminated by setWebhook request"
UNAUTHORIZED = "Unauthorized"
NOT_FOUND = "Not Found"

_STATUS_PREFIX = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    413: "Request Entity Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
}


class BotApiError(Exception):
    """A Bot API call that fails: ``error_code`` (= HTTP status) and Telegram's ``description``.

    ``retry_after`` (whole seconds, >= 1) goes to ``parameters.retry_after`` on a 429, ``migrate_to_chat_id``
    to ``parameters.migrate_to_chat_id`` on the 400 "group chat was upgraded to a supergroup chat"
    (core.telegram.org/bots/api#responseparameters: "The group has been migrated to a supergroup with the
    specified identifier"; Client.cpp ``check_chat_access``).
    """

    def __init__(
        self,
        error_code: int,
        description: str,
        *,
        retry_after: int | None = None,
        migrate_to_chat_id: int | None = None,
    ) -> None:
        super().__init__(description)
        self.error_code = error_code
        self.description = description
        self.retry_after = retry_after
        self.migrate_to_chat_id = migrate_to_chat_id

    def payload(self) -> dict[str, Any]:
        """The JSON body Telegram sends for this failure."""
        body: dict[str, Any] = {"ok": False, "error_code": self.error_code, "description": self.description}
        parameters: dict[str, int] = {}
        if self.migrate_to_chat_id is not None:
            parameters["migrate_to_chat_id"] = self.migrate_to_chat_id
        if self.retry_after is not None:
            parameters["retry_after"] = self.retry_after
        if parameters:
            body["parameters"] = parameters
        return body


def bad_request(text: str) -> BotApiError:
    """A 400 whose description is ``Bad Request: <text>``."""
    return BotApiError(400, f"Bad Request: {text}")


def fail(description: str) -> BotApiError:
    """An error from one of this module's full texts; the status comes from its prefix."""
    for code, prefix in _STATUS_PREFIX.items():
        if description.startswith(prefix):
            return BotApiError(code, description)
    return BotApiError(400, description)


def too_many_requests(retry_after: int) -> BotApiError:
    """The flood-control 429: ``Too Many Requests: retry after N`` with ``parameters.retry_after = N``."""
    seconds = max(1, int(retry_after))
    return BotApiError(429, f"Too Many Requests: retry after {seconds}", retry_after=seconds)


def default_description(error_code: int) -> str:
    """What Telegram says for a bare status (used by injected faults without a description)."""
    return _STATUS_PREFIX.get(error_code, "Bad Request")
