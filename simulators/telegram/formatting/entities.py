"""Shared pieces of text formatting: UTF-16 lengths, the text/entity builder, errors, bot commands.

Entity ``offset``/``length`` count UTF-16 code units (core.telegram.org/bots/api#messageentity).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from simulators.telegram.errors import BotApiError, bad_request

Entity = dict[str, Any]

WHITESPACE = " \t\r\n"
_USER_ENTITY_TYPES = {
    "bold",
    "italic",
    "underline",
    "strikethrough",
    "spoiler",
    "code",
    "pre",
    "text_link",
    "text_mention",
    "custom_emoji",
    "blockquote",
    "expandable_blockquote",
}
_BOT_COMMAND = re.compile(r"(?<![\w/<>])/[A-Za-z0-9_]{1,64}(?:@[A-Za-z0-9_]{3,32})?(?![\w/<>@])")


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units, the unit of entity offsets."""
    return len(text.encode("utf-16-le")) // 2


def entities_error(reason: str) -> BotApiError:
    """The 400 ``can't parse entities: <reason>`` of a markup error."""
    return bad_request(f"can't parse entities: {reason}")


def byte_offset(text: str, index: int) -> int:
    """UTF-8 byte offset of ``text[index]``: TDLib reports markup errors in bytes."""
    return len(text[:index].encode("utf-8"))


@dataclass
class TextBuilder:
    """Plain text being assembled, its length in UTF-16 units and the entities found so far."""

    parts: list[str] = field(default_factory=list)
    length: int = 0
    chars: int = 0
    entities: list[Entity] = field(default_factory=list)

    def add(self, chunk: str) -> None:
        """Append plain text."""
        self.parts.append(chunk)
        self.length += utf16_len(chunk)
        self.chars += len(chunk)

    def entity(self, kind: str, start: int, **extra: Any) -> None:
        """Record an entity of ``kind`` from UTF-16 offset ``start`` to the current end (if non-empty)."""
        if self.length > start:
            self.entities.append({"type": kind, "offset": start, "length": self.length - start, **extra})

    def text(self) -> str:
        """The plain text so far."""
        return "".join(self.parts)


def bot_commands(text: str) -> list[str]:
    """The commands in a user's text, as typed (``/start``, ``/help@some_bot``)."""
    return [match.group() for match in _BOT_COMMAND.finditer(text)]


def command_entities(text: str) -> list[Entity]:
    """``bot_command`` entities Telegram attaches to a user's message (``/start``, ``/help@bot`` ...)."""
    return [
        {
            "type": "bot_command",
            "offset": utf16_len(text[: match.start()]),
            "length": utf16_len(match.group()),
        }
        for match in _BOT_COMMAND.finditer(text)
    ]


def explicit_entities(text: str, entities: Any) -> list[Entity]:
    """The formatting entities a bot passed in ``entities`` (without a parse mode), clipped to the text;
    automatically detected kinds (mentions, URLs ...) are dropped, as Telegram re-detects them."""
    if not isinstance(entities, list):
        return []
    total = utf16_len(text)
    kept: list[Entity] = []
    for entity in entities:
        if not isinstance(entity, dict) or entity.get("type") not in _USER_ENTITY_TYPES:
            continue
        offset, length = entity.get("offset"), entity.get("length")
        if not isinstance(offset, int) or not isinstance(length, int) or offset < 0 or length <= 0:
            continue
        if offset < total:
            kept.append({**entity, "length": min(length, total - offset)})
    return kept


def trim(text: str, entities: list[Entity]) -> tuple[str, list[Entity]]:
    """Strip leading/trailing whitespace, shifting and clipping entities; entities end up sorted by offset
    (TDLib ``fix_formatted_text``)."""
    stripped = text.lstrip(WHITESPACE)
    shift = utf16_len(text) - utf16_len(stripped)
    stripped = stripped.rstrip(WHITESPACE)
    total = utf16_len(stripped)
    result: list[Entity] = []
    for entity in entities:
        start = max(entity["offset"] - shift, 0)
        end = min(entity["offset"] + entity["length"] - shift, total)
        if end > start:
            result.append({**entity, "offset": start, "length": end - start})
    result.sort(key=lambda item: (item["offset"], -item["length"]))
    return stripped, result
