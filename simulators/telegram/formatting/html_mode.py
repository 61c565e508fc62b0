"""``parse_mode=HTML``: the tags of core.telegram.org/bots/api#html-style, with TDLib ``parse_html``
errors."""

from __future__ import annotations

from dataclasses import dataclass

from simulators.telegram.formatting.entities import (
    WHITESPACE,
    Entity,
    TextBuilder,
    byte_offset,
    entities_error,
)

_HTML_KINDS = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "tg-spoiler": "spoiler",
    "span": "spoiler",
    "a": "text_link",
    "code": "code",
    "pre": "pre",
    "blockquote": "blockquote",
    "tg-emoji": "custom_emoji",
}
_HTML_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}


@dataclass
class _OpenTag:
    name: str
    start: int
    attrs: dict[str, str]
    language: str | None = None


def _html_char_ref(text: str, index: int) -> tuple[str, int]:
    end = text.find(";", index + 1, index + 12)
    if end == -1:
        return "&", 1
    name = text[index + 1 : end]
    if name in _HTML_NAMED:
        return _HTML_NAMED[name], end - index + 1
    try:
        if name.startswith(("#x", "#X")):
            return chr(int(name[2:], 16)), end - index + 1
        if name.startswith("#"):
            return chr(int(name[1:])), end - index + 1
    except (ValueError, OverflowError):
        pass
    return "&", 1


def _html_attributes(text: str, index: int, tag_start: int) -> tuple[dict[str, str], int]:
    attrs: dict[str, str] = {}
    size = len(text)
    while True:
        while index < size and text[index] in WHITESPACE:
            index += 1
        if index >= size:
            raise entities_error(f"Unclosed start tag at byte offset {byte_offset(text, tag_start)}")
        if text[index] == ">":
            return attrs, index + 1
        name_end = index
        while name_end < size and text[name_end] not in WHITESPACE + "=>":
            name_end += 1
        name = text[index:name_end].lower()
        index = name_end
        value = ""
        if index < size and text[index] == "=":
            index += 1
            if index < size and text[index] in "\"'":
                quote = text[index]
                close = text.find(quote, index + 1)
                if close == -1:
                    raise entities_error(f"Unclosed start tag at byte offset {byte_offset(text, tag_start)}")
                value, index = text[index + 1 : close], close + 1
            else:
                value_end = index
                while value_end < size and text[value_end] not in WHITESPACE + ">":
                    value_end += 1
                value, index = text[index:value_end], value_end
        decoded: list[str] = []
        position = 0
        while position < len(value):
            if value[position] == "&":
                char, used = _html_char_ref(value, position)
                decoded.append(char)
                position += used
            else:
                decoded.append(value[position])
                position += 1
        attrs[name] = "".join(decoded)


def _close_html_tag(out: TextBuilder, tag: _OpenTag, parent: _OpenTag | None) -> None:
    kind = _HTML_KINDS[tag.name]
    if kind == "text_link":
        href = tag.attrs.get("href", "").strip()
        if href:
            out.entity("text_link", tag.start, url=href)
    elif kind == "code" and parent is not None and parent.name == "pre":
        language = tag.attrs.get("class", "")
        if language.startswith("language-") and parent.start == tag.start:
            parent.language = language.removeprefix("language-")
        else:
            out.entity("code", tag.start)
    elif kind == "pre":
        if tag.language:
            out.entity("pre", tag.start, language=tag.language)
        else:
            out.entity("pre", tag.start)
    elif kind == "blockquote":
        out.entity("expandable_blockquote" if "expandable" in tag.attrs else "blockquote", tag.start)
    elif kind == "custom_emoji":
        out.entity("custom_emoji", tag.start, custom_emoji_id=tag.attrs.get("emoji-id", ""))
    else:
        out.entity(kind, tag.start)


def parse_html(text: str) -> tuple[str, list[Entity]]:
    out = TextBuilder()
    stack: list[_OpenTag] = []
    index, size = 0, len(text)
    while index < size:
        char = text[index]
        if char == "&":
            decoded, used = _html_char_ref(text, index)
            out.add(decoded)
            index += used
            continue
        if char != "<":
            out.add(char)
            index += 1
            continue
        tag_start = index
        if index + 1 < size and text[index + 1] == "/":
            close = text.find(">", index)
            if close == -1:
                raise entities_error(f"Unclosed end tag at byte offset {byte_offset(text, tag_start)}")
            name = text[index + 2 : close].strip().lower()
            if not stack:
                raise entities_error(f"Unexpected end tag at byte offset {byte_offset(text, tag_start)}")
            tag = stack.pop()
            if name != tag.name:
                offset = byte_offset(text, tag_start)
                raise entities_error(
                    f'Unmatched end tag at byte offset {offset}, expected "</{tag.name}>", found "</{name}>"'
                )
            _close_html_tag(out, tag, stack[-1] if stack else None)
            index = close + 1
            continue
        name_end = index + 1
        while name_end < size and text[name_end] not in WHITESPACE + ">":
            name_end += 1
        if name_end >= size:
            raise entities_error(f"Unclosed start tag at byte offset {byte_offset(text, tag_start)}")
        name = text[index + 1 : name_end].lower()
        if name not in _HTML_KINDS:
            raise entities_error(
                f'Unsupported start tag "{name}" at byte offset {byte_offset(text, tag_start)}'
            )
        attrs, index = _html_attributes(text, name_end, tag_start)
        if name == "span" and attrs.get("class") != "tg-spoiler":
            raise entities_error('Tag "span" must have class "tg-spoiler"')
        stack.append(_OpenTag(name, out.length, attrs))
    if stack:
        raise entities_error(f'Can\'t find end tag corresponding to start tag "{stack[-1].name}"')
    return out.text(), out.entities
