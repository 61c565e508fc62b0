"""``parse_mode=MarkdownV2`` (with TDLib ``parse_markdown_v2`` errors) and the legacy ``Markdown``.

Rules from core.telegram.org/bots/api#markdownv2-style and #markdown-style. Expandable blockquotes
(``**>``) are not supported.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulators.telegram.errors import BotApiError
from simulators.telegram.formatting.entities import (
    WHITESPACE,
    Entity,
    TextBuilder,
    byte_offset,
    entities_error,
)

_MD2_RESERVED = set("_*[]()~`>#+-=|{}.!")
_MD2_NAMES = {
    "bold": "Bold",
    "italic": "Italic",
    "underline": "Underline",
    "strikethrough": "Strikethrough",
    "spoiler": "Spoiler",
    "code": "Code",
    "pre": "Pre",
    "text_link": "TextUrl",
    "custom_emoji": "CustomEmoji",
}


@dataclass
class _OpenMark:
    kind: str
    start: int
    byte_offset: int
    language: str | None = None
    first_char: int = 0


def _reserved(char: str) -> BotApiError:
    return entities_error(f"Character '{char}' is reserved and must be escaped with the preceding '\\'")


def _md2_link_target(text: str, index: int) -> tuple[str, int]:
    """Read ``(url)`` starting at ``text[index] == '('``; returns the url and the index after ``)``."""
    chars: list[str] = []
    position = index + 1
    while position < len(text):
        char = text[position]
        if char == "\\" and position + 1 < len(text):
            chars.append(text[position + 1])
            position += 2
            continue
        if char == ")":
            return "".join(chars), position + 1
        chars.append(char)
        position += 1
    raise entities_error(f"Can't find end of a URL at byte offset {byte_offset(text, index)}")


def _md2_close_link(text: str, index: int, out: TextBuilder, mark: _OpenMark) -> int:
    url = ""
    if index < len(text) and text[index] == "(":
        url, index = _md2_link_target(text, index)
    if mark.kind == "custom_emoji":
        emoji_id = url.removeprefix("tg://emoji?id=")
        if emoji_id == url or not emoji_id.isdigit():
            raise entities_error("Custom emoji URL must have an emoji identifier")
        out.entity("custom_emoji", mark.start, custom_emoji_id=emoji_id)
    else:
        out.entity("text_link", mark.start, url=url or out.text()[mark.first_char :])
    return index


def _md2_open_pre(text: str, index: int) -> tuple[str | None, int]:
    """``text[index:index+3] == '```'``: read an optional language and skip the line break after it."""
    position = index + 3
    language_end = position
    while language_end < len(text) and text[language_end] not in WHITESPACE + "`":
        language_end += 1
    language = None
    if language_end > position and language_end < len(text) and text[language_end] != "`":
        language = text[position:language_end]
        position = language_end
    if position < len(text) and text[position] == "\n":
        position += 1
    return language, position


def parse_markdown_v2(text: str) -> tuple[str, list[Entity]]:
    out = TextBuilder()
    stack: list[_OpenMark] = []
    quote_start: int | None = None
    quote_end = 0
    at_line_start = True
    index, size = 0, len(text)
    while index < size:
        char = text[index]
        top = stack[-1] if stack else None
        in_code = top is not None and top.kind in ("code", "pre")
        if at_line_start and not in_code:
            at_line_start = False
            if char == ">":
                if quote_start is None:
                    quote_start = out.length
                index += 1
                continue
            if quote_start is not None:
                out.entities.append(
                    {"type": "blockquote", "offset": quote_start, "length": quote_end - quote_start}
                )
                quote_start = None
        if in_code:
            assert top is not None
            if char == "\\" and index + 1 < size and text[index + 1] in "`\\":
                out.add(text[index + 1])
                index += 2
            elif char == "`" and top.kind == "code":
                stack.pop()
                out.entity("code", top.start)
                index += 1
            elif char == "`" and text.startswith("```", index):
                stack.pop()
                extra = {"language": top.language} if top.language else {}
                out.entity("pre", top.start, **extra)
                index += 3
            else:
                out.add(char)
                index += 1
            continue
        if char == "\\" and index + 1 < size and 0 < ord(text[index + 1]) <= 126:
            out.add(text[index + 1])
            index += 2
            continue
        if char not in _MD2_RESERVED:
            if char == "\n":
                if quote_start is not None:
                    quote_end = out.length
                at_line_start = True
            out.add(char)
            index += 1
            continue
        offset = byte_offset(text, index)
        kind = top.kind if top else None
        double = index + 1 < size and text[index + 1] == char
        if char == "_" and double:
            if kind == "underline" and top is not None:
                stack.pop()
                out.entity("underline", top.start)
            else:
                stack.append(_OpenMark("underline", out.length, offset))
            index += 2
        elif char in "_*~":
            own = {"_": "italic", "*": "bold", "~": "strikethrough"}[char]
            if kind == own and top is not None:
                stack.pop()
                out.entity(own, top.start)
            else:
                stack.append(_OpenMark(own, out.length, offset))
            index += 1
        elif char == "|" and double:
            if kind == "spoiler" and top is not None:
                stack.pop()
                out.entity("spoiler", top.start)
            else:
                stack.append(_OpenMark("spoiler", out.length, offset))
            index += 2
        elif char == "[":
            stack.append(_OpenMark("text_link", out.length, offset, first_char=out.chars))
            index += 1
        elif char == "!" and index + 1 < size and text[index + 1] == "[":
            stack.append(_OpenMark("custom_emoji", out.length, offset))
            index += 2
        elif char == "]" and kind in ("text_link", "custom_emoji") and top is not None:
            stack.pop()
            index = _md2_close_link(text, index + 1, out, top)
        elif char == "`":
            if text.startswith("```", index):
                language, index = _md2_open_pre(text, index)
                stack.append(_OpenMark("pre", out.length, offset, language))
            else:
                stack.append(_OpenMark("code", out.length, offset))
                index += 1
        else:
            raise _reserved(char)
    if stack:
        open_mark = stack[-1]
        raise entities_error(
            f"Can't find end of {_MD2_NAMES[open_mark.kind]} entity at byte offset {open_mark.byte_offset}"
        )
    if quote_start is not None:
        out.entities.append({"type": "blockquote", "offset": quote_start, "length": out.length - quote_start})
    return out.text(), [entity for entity in out.entities if entity["length"] > 0]


def parse_markdown(text: str) -> tuple[str, list[Entity]]:
    out = TextBuilder()
    index, size = 0, len(text)
    while index < size:
        char = text[index]
        if char == "\\" and index + 1 < size and text[index + 1] in "_*`[":
            out.add(text[index + 1])
            index += 2
            continue
        if char not in "_*`[":
            out.add(char)
            index += 1
            continue
        unclosed = entities_error(
            f"Can't find end of the entity starting at byte offset {byte_offset(text, index)}"
        )
        start = out.length
        if char == "[":
            close = text.find("](", index + 1)
            end = text.find(")", close + 2) if close != -1 else -1
            if close == -1 or end == -1:
                raise unclosed
            out.add(text[index + 1 : close])
            out.entity("text_link", start, url=text[close + 2 : end])
            index = end + 1
        elif text.startswith("```", index):
            language, body_start = _md2_open_pre(text, index)
            end = text.find("```", body_start)
            if end == -1:
                raise unclosed
            out.add(text[body_start:end])
            out.entity("pre", start, **({"language": language} if language else {}))
            index = end + 3
        else:
            end = text.find(char, index + 1)
            if end == -1:
                raise unclosed
            out.add(text[index + 1 : end])
            out.entity({"_": "italic", "*": "bold", "`": "code"}[char], start)
            index = end + 1
    return out.text(), out.entities
