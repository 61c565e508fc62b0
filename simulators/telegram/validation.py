"""Sticker rules, pure: bytes and strings in, a verdict out (``BotApiError`` 400 when Telegram would refuse).

Sources: core.telegram.org/stickers (static sticker: PNG or WEBP, one side exactly 512 px, the other at most
512 px, at most 512 KB; animated TGS at most 64 KB; video WEBM at most 256 KB), core.telegram.org/bots/api
(``createNewStickerSet``: name of English letters, digits and underscores, starting with a letter, no
consecutive underscores, ending in ``_by_<bot_username>`` case-insensitively, 1-64 characters; title 1-64
characters; 1-50 initial stickers; ``InputSticker.emoji_list`` of 1-20 emoji; a static set holds up to 120),
TDLib ``get_max_sticker_file_size`` (sizes) and Client.cpp ``get_sticker_emojis`` (emoji messages).
"""

from __future__ import annotations

import io
import re
import unicodedata
import warnings
from dataclasses import dataclass

from PIL import Image, UnidentifiedImageError

from simulators.telegram.errors import (
    FILE_EMPTY,
    FILE_TOO_BIG,
    STICKER_PNG_DIMENSIONS,
    STICKER_PNG_NOPNG,
    STICKER_SET_NAME_INVALID,
    STICKER_SET_TITLE_INVALID,
    STICKER_TGS_NOTGS,
    STICKER_VIDEO_NOWEBM,
    bad_request,
    fail,
)
from simulators.telegram.state import StickerFormat

STICKER_SIDE_PX = 512
MAX_STATIC_STICKER_BYTES = 512 * 1024
MAX_ANIMATED_STICKER_BYTES = 64 * 1024
MAX_VIDEO_STICKER_BYTES = 256 * 1024
MAX_NAME_CHARS = 64
MAX_TITLE_CHARS = 64
MAX_INITIAL_STICKERS = 50
MAX_STATIC_SET_STICKERS = 120
MAX_EMOJI_PER_STICKER = 20

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_EMOJI_JOINERS = {0x200D, 0xFE0F, 0xFE0E, 0x20E3}


@dataclass(frozen=True)
class StickerImage:
    """A checked sticker file: ``mime_type``, ``width``/``height`` in px, ``format`` in Bot API terms."""

    mime_type: str
    width: int
    height: int
    format: StickerFormat


def check_sticker_file(data: bytes, sticker_format: StickerFormat) -> StickerImage:
    """Validate a sticker file for ``sticker_format`` (``static``/``animated``/``video``).

    Static: ``file is too big`` above 512 KB, ``STICKER_PNG_NOPNG`` unless the content is PNG or WEBP,
    ``STICKER_PNG_DIMENSIONS`` unless one side is 512 px and the other <= 512 px. Animated/video stickers
    are only checked for size and container (gzip / EBML) and reported as 512x512.
    """
    if not data:
        raise fail(FILE_EMPTY)
    if sticker_format == "animated":
        if len(data) > MAX_ANIMATED_STICKER_BYTES:
            raise fail(FILE_TOO_BIG)
        if not data.startswith(b"\x1f\x8b"):
            raise fail(STICKER_TGS_NOTGS)
        return StickerImage("application/x-tgsticker", STICKER_SIDE_PX, STICKER_SIDE_PX, "animated")
    if sticker_format == "video":
        if len(data) > MAX_VIDEO_STICKER_BYTES:
            raise fail(FILE_TOO_BIG)
        if not data.startswith(b"\x1a\x45\xdf\xa3"):
            raise fail(STICKER_VIDEO_NOWEBM)
        return StickerImage("video/webm", STICKER_SIDE_PX, STICKER_SIDE_PX, "video")
    if len(data) > MAX_STATIC_STICKER_BYTES:
        raise fail(FILE_TOO_BIG)
    kind, width, height = image_info(data)
    if kind not in ("PNG", "WEBP"):
        raise fail(STICKER_PNG_NOPNG)
    if not (
        (width == STICKER_SIDE_PX and 0 < height <= STICKER_SIDE_PX)
        or (height == STICKER_SIDE_PX and 0 < width <= STICKER_SIDE_PX)
    ):
        raise fail(STICKER_PNG_DIMENSIONS)
    return StickerImage("image/png" if kind == "PNG" else "image/webp", width, height, "static")


def image_info(data: bytes) -> tuple[str | None, int, int]:
    """Pillow's format name (``PNG``, ``WEBP``, ``JPEG`` ...) and size in px, or ``(None, 0, 0)``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(io.BytesIO(data)) as image:
                image.verify()
                return image.format, image.width, image.height
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, Image.DecompressionBombError):
        return None, 0, 0


def check_sticker_set_name(name: str, bot_username: str) -> None:
    """Raise ``invalid sticker set name is specified`` unless ``name`` follows createNewStickerSet's rule."""
    suffix = f"_by_{bot_username}".lower()
    if (
        not 1 <= len(name) <= MAX_NAME_CHARS
        or not _NAME.fullmatch(name)
        or "__" in name
        or not name.lower().endswith(suffix)
        or len(name) == len(suffix)
    ):
        raise fail(STICKER_SET_NAME_INVALID)


def check_sticker_set_title(title: str) -> None:
    """Raise ``PACK_TITLE_INVALID`` unless the title has 1-64 characters after trimming."""
    if not 1 <= len(title.strip()) <= MAX_TITLE_CHARS:
        raise fail(STICKER_SET_TITLE_INVALID)


def is_emoji(text: str) -> bool:
    """Whether ``text`` is one emoji (with modifiers, joiners, keycaps or flags), approximately TDLib's
    ``is_emoji``: every code point is an emoji or a joiner, and at least one is a pictograph/symbol."""
    if not text or len(text) > 16:
        return False
    has_symbol = False
    for char in text:
        point = ord(char)
        if point == 0x20E3:
            has_symbol = True
        if point in _EMOJI_JOINERS or 0x1F3FB <= point <= 0x1F3FF or 0xE0020 <= point <= 0xE007F:
            continue
        if char in "#*0123456789":
            continue
        if unicodedata.category(char) == "So" or 0x1F000 <= point <= 0x1FAFF or point in (0x203C, 0x2049):
            has_symbol = True
            continue
        return False
    return has_symbol


def check_emoji_list(value: object, prefix: str = "can't parse InputSticker: ") -> list[str]:
    """Validate ``InputSticker.emoji_list`` and return it; texts as Client.cpp ``get_sticker_emojis``,
    after ``prefix`` (the argument being parsed)."""
    if not isinstance(value, list):
        raise bad_request(prefix + "expected an Array of string")
    if not value:
        raise bad_request(prefix + "emoji list must be non-empty")
    if len(value) > MAX_EMOJI_PER_STICKER:
        raise bad_request(prefix + "too many emoji specified")
    for emoji in value:
        if not isinstance(emoji, str):
            raise bad_request(prefix + "emoji must be a string")
        if not is_emoji(emoji):
            raise bad_request(prefix + "expected a Unicode emoji")
    return list(value)
