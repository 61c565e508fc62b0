"""Reading a Bot API call's parameters the way the Bot API server does.

Telegram accepts a query string, ``application/x-www-form-urlencoded``, ``application/json`` and
``multipart/form-data`` (core.telegram.org/bots/api#making-requests). The server reduces all of them to string
arguments: in forms, objects and arrays arrive JSON-encoded (python-telegram-bot sends ``reply_markup``,
``stickers`` ... that way); in a JSON body they are re-encoded, numbers become their digits and booleans
``true``/``false``. Uploaded files are multipart parts with a filename, referenced either by the parameter's
own name or by ``attach://<part name>`` inside a JSON field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from simulators.telegram.errors import JSON_BODY_INVALID, bad_request, fail


@dataclass(frozen=True)
class UploadedFile:
    """One multipart file part: its part name, the client's filename and content type, and the bytes."""

    field: str
    filename: str
    content_type: str
    data: bytes


class Params:
    """The string arguments and uploaded files of one call, with Telegram's lenient conversions."""

    def __init__(self, values: Mapping[str, str], files: Mapping[str, UploadedFile]) -> None:
        self._values = dict(values)
        self._files = dict(files)

    def has(self, name: str) -> bool:
        """Whether the argument was sent with a non-empty value."""
        return bool(self._values.get(name))

    def text(self, name: str) -> str:
        """The argument as sent, ``""`` when absent."""
        return self._values.get(name, "")

    def integer(self, name: str, default: int = 0) -> int:
        """The argument as an integer; absent gives ``default``, garbage gives 0 (like ``td::to_integer``)."""
        raw = self._values.get(name, "").strip()
        if not raw:
            return default
        try:
            return int(raw)
        except ValueError:
            try:
                return int(float(raw))
            except ValueError:
                return 0

    def flag(self, name: str) -> bool:
        """The argument as a boolean: ``true`` (any case) or ``1`` (``to_bool`` in Client.cpp)."""
        raw = self._values.get(name, "").strip()
        return raw.lower() == "true" or raw == "1"

    def json(self, name: str, what: str) -> Any:
        """The argument decoded from JSON, ``None`` when absent.

        Raises ``BotApiError`` 400 ``can't parse <what> JSON object`` when it is not JSON.
        """
        raw = self._values.get(name, "")
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise bad_request(f"can't parse {what} JSON object") from None

    def file(self, name: str) -> UploadedFile | None:
        """The uploaded part called ``name``, if any."""
        return self._files.get(name)

    def loggable(self) -> dict[str, Any]:
        """The arguments with each file replaced by its name, type and size (for ``GET /sim/calls``)."""
        logged: dict[str, Any] = dict(self._values)
        for name, upload in self._files.items():
            logged[name] = {
                "file": upload.filename,
                "content_type": upload.content_type,
                "size": len(upload.data),
            }
        return logged


def _as_argument(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


async def read_params(request: web.Request) -> Params:
    """Collect the query string and body of a Bot API request.

    Raises ``BotApiError`` 400 when a JSON body is not a JSON object.
    """
    values: dict[str, str] = {key: request.query[key] for key in request.query}
    files: dict[str, UploadedFile] = {}
    if not request.can_read_body:
        return Params(values, files)
    content_type = request.content_type
    if content_type == "application/json":
        raw = await request.read()
        if raw.strip():
            try:
                body = json.loads(raw)
            except ValueError:
                raise fail(JSON_BODY_INVALID) from None
            if not isinstance(body, dict):
                raise fail(JSON_BODY_INVALID)
            values.update({str(key): _as_argument(value) for key, value in body.items()})
        return Params(values, files)
    if content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        form = await request.post()
        for key, value in form.items():
            if isinstance(value, web.FileField):
                files[key] = UploadedFile(
                    field=key,
                    filename=value.filename,
                    content_type=value.content_type,
                    data=value.file.read(),
                )
            elif isinstance(value, str):
                values[key] = value
            else:
                values[key] = bytes(value).decode("utf-8", "replace")
    return Params(values, files)
