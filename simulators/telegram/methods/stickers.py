"""Sticker sets: ``uploadStickerFile``, ``createNewStickerSet``, ``addStickerToSet``, ``getStickerSet``,
``deleteStickerSet``, ``deleteStickerFromSet``, ``setStickerSetTitle``.

Argument parsing follows Client.cpp (``get_input_stickers``/``get_input_sticker``: at most 50 InputStickers,
each ``{"sticker", "format", "emoji_list", "keywords"}``; errors read ``can't parse InputSticker: ...``), then
the user check (``access.started_user``), then the rules of ``validation`` in the order Telegram applies
them: title, name, emptiness, each file, and last whether the name is taken. Each sticker in a set gets its
own ``file_id`` (Telegram re-issues files for set stickers); the bytes stay as uploaded (Telegram would
re-encode to WEBP).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulators.telegram import wire
from simulators.telegram.errors import (
    NO_STICKER_FILE,
    STICKER_FORMAT_INVALID,
    STICKER_SET_NAME_OCCUPIED,
    STICKER_TYPE_INVALID,
    STICKERS_EMPTY,
    STICKERS_TOO_MUCH,
    STICKERSET_INVALID,
    TOO_MANY_STICKERS,
    USER_ID_INVALID,
    bad_request,
    fail,
)
from simulators.telegram.methods.access import started_user, user_id_param
from simulators.telegram.methods.base import Handler
from simulators.telegram.methods.files import FileSource, input_file, resolve_reference
from simulators.telegram.params import Params
from simulators.telegram.simulator import Simulator
from simulators.telegram.state import FileRecord, StickerFormat, StickerRecord, StickerSetRecord, StickerType
from simulators.telegram.validation import (
    MAX_INITIAL_STICKERS,
    MAX_STATIC_SET_STICKERS,
    check_emoji_list,
    check_sticker_file,
    check_sticker_set_name,
    check_sticker_set_title,
)

#: Custom emoji sets hold up to 200 stickers (core.telegram.org/bots/api#addstickertoset).
MAX_EMOJI_SET_STICKERS = 200
_FORMATS: dict[str, StickerFormat | None] = {
    "static": "static",
    "animated": "animated",
    "video": "video",
    "auto": None,
}
_STICKER_TYPES: dict[str, StickerType] = {
    "regular": "regular",
    "mask": "mask",
    "custom_emoji": "custom_emoji",
}


@dataclass(frozen=True)
class InputSticker:
    """A parsed InputSticker: where its bytes come from, its format (``None`` = detect) and its emoji."""

    source: FileSource
    format: StickerFormat | None
    emoji_list: list[str]
    keywords: list[str]


def _sticker_format(raw: str, prefix: str = "") -> StickerFormat | None:
    if raw not in _FORMATS:
        if prefix:
            raise bad_request(prefix + "Invalid sticker format specified")
        raise fail(STICKER_FORMAT_INVALID)
    return _FORMATS[raw]


def _detect_format(data: bytes) -> StickerFormat:
    if data.startswith(b"\x1f\x8b"):
        return "animated"
    if data.startswith(b"\x1a\x45\xdf\xa3"):
        return "video"
    return "static"


async def _parse_input_sticker(
    sim: Simulator, params: Params, value: Any, default_format: str, prefix: str
) -> InputSticker:
    if not isinstance(value, dict):
        raise bad_request(prefix + "InputSticker must be an Object")
    reference = value.get("sticker", "")
    if not isinstance(reference, str):
        raise bad_request(prefix + 'Field "sticker" must be of type String')
    source = await resolve_reference(sim, params, reference) if reference.strip() else None
    if source is None:
        raise bad_request(prefix + "sticker not found")
    raw_format = value.get("format")
    if raw_format is None and not default_format:
        raise bad_request(prefix + 'Can\'t find field "format"')
    if raw_format is not None and not isinstance(raw_format, str):
        raise bad_request(prefix + 'Field "format" must be of type String')
    sticker_format = _sticker_format(raw_format or default_format, prefix)
    if "emoji_list" not in value:
        raise bad_request(prefix + 'Can\'t find field "emoji_list"')
    if not isinstance(value["emoji_list"], list):
        raise bad_request(prefix + 'Field "emoji_list" must be of type Array')
    emoji_list = check_emoji_list(value["emoji_list"], prefix)
    keywords = value.get("keywords", [])
    if not isinstance(keywords, list) or not all(isinstance(word, str) for word in keywords):
        raise bad_request(prefix + "keyword must be a string")
    return InputSticker(source, sticker_format, emoji_list, list(keywords))


async def _legacy_input_sticker(sim: Simulator, params: Params) -> InputSticker:
    source = await input_file(sim, params, "png_sticker")
    if source is None:
        raise fail(NO_STICKER_FILE)
    emojis = params.text("emojis")
    return InputSticker(source, "static", [emojis] if emojis else [], [])


async def _input_stickers(sim: Simulator, params: Params) -> list[InputSticker]:
    if not params.has("stickers"):
        return [await _legacy_input_sticker(sim, params)]
    value = params.json("stickers", "stickers")
    if not isinstance(value, list):
        raise bad_request("expected an Array of InputSticker")
    if len(value) > MAX_INITIAL_STICKERS:
        raise fail(TOO_MANY_STICKERS)
    default_format = params.text("sticker_format")
    return [
        await _parse_input_sticker(sim, params, item, default_format, "can't parse InputSticker: ")
        for item in value
    ]


def _sticker_file(
    sim: Simulator, source: FileSource, sticker_format: StickerFormat | None, owner: int
) -> FileRecord:
    """A checked sticker file for ``source``: an already checked upload is reused, other bytes are checked."""
    existing = source.existing
    wanted = sticker_format or (existing.sticker_format if existing else None) or _detect_format(source.data)
    if existing is not None and existing.kind == "sticker" and existing.sticker_format == wanted:
        return existing
    image = check_sticker_file(source.data, wanted)
    return sim.store_file(
        source.data,
        kind="sticker",
        mime_type=image.mime_type,
        width=image.width,
        height=image.height,
        sticker_format=image.format,
        owner_user_id=owner,
    )


def _set_item(sim: Simulator, checked: FileRecord, item: InputSticker, set_name: str) -> StickerRecord:
    data = sim.file_bytes(checked) or b""
    in_set = sim.store_file(
        data,
        kind="sticker",
        mime_type=checked.mime_type,
        width=checked.width,
        height=checked.height,
        sticker_format=checked.sticker_format,
        set_name=set_name,
        owner_user_id=checked.owner_user_id,
    )
    return StickerRecord(
        file_id=in_set.file_id,
        emoji_list=item.emoji_list,
        keywords=item.keywords,
        source_blob_id=checked.blob_id,
        source_file_id=checked.file_id,
    )


def _find_set(sim: Simulator, name: str) -> StickerSetRecord:
    record = sim.state.find_sticker_set(name.strip()) if name.strip() else None
    if record is None:
        raise fail(STICKERSET_INVALID)
    return record


async def upload_sticker_file(sim: Simulator, params: Params) -> Any:
    """``uploadStickerFile``: check and keep a sticker file for later create/add calls; returns the File."""
    user_id = user_id_param(params)
    if params.has("sticker") or params.file("sticker") is not None:
        sticker_format = _sticker_format(params.text("sticker_format"))
        source = await input_file(sim, params, "sticker")
    else:
        sticker_format = "static"
        source = await input_file(sim, params, "png_sticker")
    if source is None:
        raise fail(NO_STICKER_FILE)
    started_user(sim, user_id)
    record = _sticker_file(sim, source, sticker_format, user_id)
    return wire.file(record, with_path=False)


async def create_new_sticker_set(sim: Simulator, params: Params) -> Any:
    """``createNewStickerSet`` for ``user_id`` with 1-50 stickers; returns ``True``."""
    user_id = user_id_param(params)
    inputs = await _input_stickers(sim, params)
    sticker_type = _STICKER_TYPES.get(params.text("sticker_type") or "regular")
    if sticker_type is None:
        raise fail(STICKER_TYPE_INVALID)
    if params.flag("contains_masks"):
        sticker_type = "mask"
    started_user(sim, user_id)
    name, title = params.text("name").strip(), params.text("title")
    check_sticker_set_title(title)
    check_sticker_set_name(name, sim.config.bot_username)
    if not inputs:
        raise fail(STICKERS_EMPTY)
    checked = [_sticker_file(sim, item.source, item.format, user_id) for item in inputs]
    if sim.state.find_sticker_set(name) is not None:
        raise fail(STICKER_SET_NAME_OCCUPIED)
    record = StickerSetRecord(
        name=name,
        title=title.strip(),
        owner_user_id=user_id,
        sticker_type=sticker_type,
        needs_repainting=params.flag("needs_repainting"),
        stickers=[_set_item(sim, file, item, name) for file, item in zip(checked, inputs, strict=True)],
        created_at=sim.now(),
    )
    sim.state.sticker_sets[name.lower()] = record
    sim.touch()
    return True


async def add_sticker_to_set(sim: Simulator, params: Params) -> Any:
    """``addStickerToSet``: append one sticker; at most 120 in a regular or mask set, 200 in a custom
    emoji set (``STICKERS_TOO_MUCH``). "If exactly the same sticker had already been added to the set,
    then the set isn't changed" (core.telegram.org/bots/api#addstickertoset): see :func:`_already_in`."""
    user_id = user_id_param(params)
    if params.has("sticker"):
        value = params.json("sticker", "sticker")
        item = await _parse_input_sticker(sim, params, value, "auto", "can't parse sticker: ")
    else:
        item = await _legacy_input_sticker(sim, params)
    started_user(sim, user_id)
    sticker_set = _find_set(sim, params.text("name"))
    if sticker_set.owner_user_id != user_id:
        raise fail(USER_ID_INVALID)
    if _already_in(sticker_set, item.source.existing):
        return True
    checked = _sticker_file(sim, item.source, item.format, user_id)
    limit = MAX_EMOJI_SET_STICKERS if sticker_set.sticker_type == "custom_emoji" else MAX_STATIC_SET_STICKERS
    if len(sticker_set.stickers) >= limit:
        raise fail(STICKERS_TOO_MUCH)
    sticker_set.stickers.append(_set_item(sim, checked, item, sticker_set.name))
    sim.touch()
    return True


def _already_in(sticker_set: StickerSetRecord, file: FileRecord | None) -> bool:
    """Whether ``file`` (given by ``file_id``) is "exactly the same sticker" as one already in the set: one of
    the set's stickers, or the uploaded file one of them was made from.

    Only a file given again by its ``file_id`` can be the same sticker: every upload (``attach://`` part, URL)
    becomes a new file, so the same bytes sent twice are added twice (which is why a bot that repeats an
    add after an unknown outcome must reconcile against ``getStickerSet`` first: REFERENCE.md).
    """
    if file is None:
        return False
    return any(file.file_id in (item.file_id, item.source_file_id) for item in sticker_set.stickers)


async def get_sticker_set(sim: Simulator, params: Params) -> Any:
    """``getStickerSet``: the ``StickerSet``; unknown names fail with ``STICKERSET_INVALID``."""
    return wire.sticker_set(sim.state, _find_set(sim, params.text("name")))


async def delete_sticker_set(sim: Simulator, params: Params) -> Any:
    """``deleteStickerSet``: remove a set the bot created (its sticker files stay downloadable)."""
    record = _find_set(sim, params.text("name"))
    del sim.state.sticker_sets[record.name.lower()]
    sim.touch()
    return True


async def delete_sticker_from_set(sim: Simulator, params: Params) -> Any:
    """``deleteStickerFromSet``: remove the sticker with this ``file_id`` from its set."""
    file_id = params.text("sticker").strip()
    for sticker_set in sim.state.sticker_sets.values():
        for item in sticker_set.stickers:
            if item.file_id == file_id:
                sticker_set.stickers.remove(item)
                sim.touch()
                return True
    raise fail(STICKERSET_INVALID)


async def set_sticker_set_title(sim: Simulator, params: Params) -> Any:
    """``setStickerSetTitle``: rename a set (title 1-64 characters)."""
    record = _find_set(sim, params.text("name"))
    check_sticker_set_title(params.text("title"))
    record.title = params.text("title").strip()
    sim.touch()
    return True


HANDLERS: dict[str, Handler] = {
    "uploadStickerFile": upload_sticker_file,
    "createNewStickerSet": create_new_sticker_set,
    "addStickerToSet": add_sticker_to_set,
    "getStickerSet": get_sticker_set,
    "deleteStickerSet": delete_sticker_set,
    "deleteStickerFromSet": delete_sticker_from_set,
    "setStickerSetTitle": set_sticker_set_title,
}
