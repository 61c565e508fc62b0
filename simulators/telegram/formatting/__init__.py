"""Message text formatting: ``parse_mode`` HTML / MarkdownV2 / Markdown to plain text plus ``entities``.

Rules from core.telegram.org/bots/api#formatting-options and TDLib's ``parse_html`` / ``parse_markdown_v2``
/ ``parse_markdown``. Entity ``offset``/``length`` count UTF-16 code units. Errors read
``Bad Request: can't parse entities: <reason>`` with TDLib's reasons, e.g. ``Character '.' is reserved and
must be escaped with the preceding '\\'``, ``Unsupported start tag "br" at byte offset 5``,
``Can't find end of Bold entity at byte offset 0``. After parsing, leading and trailing whitespace is
removed (TDLib ``fix_formatted_text``). Expandable Markdown blockquotes (``**>``) are not supported.
"""

from __future__ import annotations

from typing import Any

from simulators.telegram.errors import bad_request
from simulators.telegram.formatting.entities import (
    Entity,
    bot_commands,
    command_entities,
    explicit_entities,
    trim,
    utf16_len,
)
from simulators.telegram.formatting.html_mode import parse_html
from simulators.telegram.formatting.markdown_mode import parse_markdown, parse_markdown_v2

__all__ = ["Entity", "bot_commands", "command_entities", "parse_text", "utf16_len"]


def parse_text(text: str, parse_mode: str, entities: Any) -> tuple[str, list[Entity]]:
    """Turn a bot's ``text`` with ``parse_mode`` (or explicit ``entities``) into Telegram's plain text and
    entities, trimmed. Raises ``BotApiError`` 400 for an unknown parse mode or malformed markup."""
    mode = parse_mode.strip().lower()
    if not text or mode in ("", "none"):
        plain, found = text, explicit_entities(text, entities)
    elif mode == "html":
        plain, found = parse_html(text)
    elif mode == "markdownv2":
        plain, found = parse_markdown_v2(text)
    elif mode == "markdown":
        plain, found = parse_markdown(text)
    else:
        raise bad_request("unsupported parse_mode")
    return trim(plain, found)
