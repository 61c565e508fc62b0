"""A job's sticker set: ``createNewStickerSet``, and for a request too big for Telegram the documented path
of a smaller set plus ``addStickerToSet`` for the rest, never two sets and never a sticker twice.

Algorithm (one ``create_sticker_set`` command, which the executor treats as repeatable: a gateway killed
mid-way or a redelivered command runs it again from the top):

1. ``createNewStickerSet`` with all the stickers, in order.
2. Only on HTTP 413 ``Request Entity Too Large`` the first batch is halved (12 → 6 → 3 → 1) and the set is
   created again with it. python-telegram-bot raises a 413 as a plain ``NetworkError`` (its
   ``request/_baserequest.py`` maps every status but 400/401/403/404/409 to one, with Telegram's
   description, or ``Request Entity Too Large (413)`` for a body that is not JSON), so it is recognised
   by that text. A 413 with one sticker, or on adding one, cannot get smaller: :class:`StickerTooLarge`,
   a ``BadRequest``, which the executor stores as the failed result instead of trying again.
3. ``sticker set name is already occupied``: names are deterministic per job (DESIGN.md §6), so the set
   is ours from an earlier run of this command (killed mid-way, redelivered, or a create that timed out
   after it applied). It continues at 4 like a set just created with fewer stickers.
4. Reconcile, then add: the set's sticker count (``getStickerSet`` after "occupied"; the batch size right
   after a successful create) says how many of ours are in, since we only ever append in order; the
   missing ones are appended with ``addStickerToSet``, one per call, in order.
5. A 429 on an add (the limiter never repeats one, :data:`telegram_gateway.flood.NOT_REPEATED_AFTER_429`)
   is reconciled at once: the count is read again and the adds go on, each waiting out the method's
   pause in the limiter; after ``FLOOD_RECONCILES`` such answers, or a pause longer than the limiter's
   bound, the ``RetryAfter`` propagates (the executor defers the ``create_sticker_set`` row to the end of
   the wait; run again, it resumes here from the set's count, so nothing is added twice).
6. A create whose answer is lost (a read time-out, a dropped connection, a 5xx: Telegram may have applied
   it) is reconciled at once: ``getStickerSet`` says whether the set exists and how many stickers it
   holds, and the run goes on at 4; only a set that does not read back (``STICKERSET_INVALID``) hands
   the command back with the create's own error. The create is never repeated blindly: a repeat would
   upload up to 12 stickers again for an answer "occupied".
7. Every other failure of a call (a 5xx, a time-out, a dropped connection) propagates unchanged:
   the executor hands the command back and its next run resumes through 1-4 from what Telegram really
   holds. An add that applied before its error (Telegram does that, REFERENCE.md "reconcile against
   getStickerSet") is counted there, never sent again blindly: the same bytes uploaded again are a new
   file and would become a second copy of the sticker.

Timeouts: the calls that carry stickers run with :func:`media_timeouts` (``TELEGRAM_MEDIA_TIMEOUT_SEC``,
60 s, :class:`telegram_gateway.settings.GatewaySettings`) instead of python-telegram-bot's 5 s read
timeout: Telegram answers ``createNewStickerSet`` only once it has processed every sticker of the request.

Sources: core.telegram.org/bots/api#createnewstickerset (1-50 stickers at creation), #addstickertoset
(a regular set holds up to 120; "If exactly the same sticker had already been added to the set, then the
set isn't changed"), #uploadstickerfile; REFERENCE.md "Telegram: sticker sets".
"""

from __future__ import annotations

from typing import Any, TypedDict

import structlog
from telegram import Bot, InputSticker
from telegram.error import BadRequest, NetworkError, RetryAfter, TelegramError, TimedOut

from shared.commands import CreateStickerSet
from shared.errors import StickerBoothError, UnavailableError
from shared.repositories import Database

__all__ = [
    "CONNECT_TIMEOUT_S",
    "OCCUPIED",
    "MediaTimeouts",
    "SetNotReadable",
    "StickerTooLarge",
    "create_sticker_set",
    "first_batches",
    "media_timeouts",
]

log = structlog.get_logger(__name__)

OCCUPIED = "sticker set name is already occupied"
_TOO_LARGE = ("request entity too large", "(413)")
_SET_INVALID = "stickerset_invalid"
#: 429 answers to adds reconciled within one run before the ``RetryAfter`` goes back to the executor.
FLOOD_RECONCILES = 3
#: Connect timeout (s) of the media calls: python-telegram-bot's own default (``HTTPXRequest(connect_timeout=
#: 5.0)``), made explicit; a connection that cannot be opened in 5 s sent nothing and is tried again.
CONNECT_TIMEOUT_S = 5.0
#: The default of ``TELEGRAM_MEDIA_TIMEOUT_SEC`` (sources: :class:`.settings.GatewaySettings`).
MEDIA_TIMEOUT_S = 60.0


class MediaTimeouts(TypedDict):
    """The python-telegram-bot timeout arguments (s) of a call that carries or makes stickers."""

    read_timeout: float
    write_timeout: float
    connect_timeout: float


def media_timeouts(seconds: float = MEDIA_TIMEOUT_S) -> MediaTimeouts:
    """Read and write timeouts of ``seconds`` (``TELEGRAM_MEDIA_TIMEOUT_SEC``), connect timeout
    :data:`CONNECT_TIMEOUT_S`, for ``createNewStickerSet``, ``addStickerToSet``, ``uploadStickerFile``,
    ``sendSticker``."""
    return MediaTimeouts(read_timeout=seconds, write_timeout=seconds, connect_timeout=CONNECT_TIMEOUT_S)


class StickerTooLarge(BadRequest, StickerBoothError):
    """A request with a single sticker is still too large for Telegram (HTTP 413): permanent."""


class SetNotReadable(NetworkError, UnavailableError):
    """The name is occupied but ``getStickerSet`` does not find the set yet (Telegram: a set can read as
    invalid for a moment after creation, REFERENCE.md); a ``NetworkError``, so the command is tried again."""


def first_batches(count: int) -> list[int]:
    """Sizes of the first batch tried for ``count`` stickers, largest first: ``12 → [12, 6, 3, 1]``."""
    sizes = [count]
    while sizes[-1] > 1:
        sizes.append(sizes[-1] // 2)
    return sizes


async def create_sticker_set(
    bot: Bot, db: Database, command: CreateStickerSet, *, timeouts: MediaTimeouts | None = None
) -> dict[str, Any]:
    """Create the set with all its stickers once, or finish one an earlier run started (module docstring).

    Args:
        command: the set's owner, name, title and stickers in the set's order (the blobs are PNG/WEBP
            bytes of at most 512 KB each).
        timeouts: of ``createNewStickerSet`` and ``addStickerToSet`` (default :func:`media_timeouts`).

    Returns:
        ``{"name", "created", "sticker_count"}``: ``created`` is whether this run created the set,
        ``sticker_count`` how many stickers it holds now.

    Raises:
        StickerTooLarge: 413 with one sticker in the request (permanent).
        SetNotReadable: the name is occupied but the set cannot be read yet (try again).
        BadRequest: the blobs are missing, or Telegram refused the request (permanent).
        RetryAfter: a 429 on creating the set, or more than ``FLOOD_RECONCILES`` on adding.
        TelegramError: any other failure of a call, unchanged (``TimedOut``, ``NetworkError``); the next
            run resumes where Telegram's set stands.
    """
    async with db.transaction() as repos:
        blobs = [await repos.blobs.get(s.blob_id) for s in command.stickers]
    stickers: list[tuple[bytes, str]] = []
    for blob, sticker in zip(blobs, command.stickers, strict=True):
        if blob is None:
            raise BadRequest("sticker blobs are missing")
        stickers.append((blob.data, sticker.emoji))
    user_id, name = command.user_id, command.name
    timeouts = timeouts or media_timeouts()

    created, have = False, 0
    for size in first_batches(len(stickers)):
        try:
            await bot.create_new_sticker_set(
                user_id=user_id,
                name=name,
                title=command.title,
                stickers=[_input(data, emoji) for data, emoji in stickers[:size]],
                **timeouts,
            )
        except BadRequest as exc:
            if OCCUPIED not in exc.message.lower():
                raise
            have = await _sticker_count(bot, name)
            break
        except NetworkError as exc:  # TimedOut included
            if not _too_large(exc):
                have = await _reconcile_lost_create(bot, name, exc)
                break
            log.warning("STICKER_SET_TOO_LARGE", set_name=name, stickers=size)
            if size == 1:
                raise _one_too_large(exc) from exc
            continue
        created, have = True, size
        break

    if have < len(stickers):
        missing = len(stickers) - have
        log.info("STICKER_SET_ADDING", set_name=name, have=have, missing=missing, created=created)
    elif have > len(stickers):
        log.warning("STICKER_SET_HAS_MORE", set_name=name, have=have, expected=len(stickers))
    floods = 0
    while have < len(stickers):
        data, emoji = stickers[have]
        try:
            await bot.add_sticker_to_set(user_id=user_id, name=name, sticker=_input(data, emoji), **timeouts)
        except RetryAfter:
            floods += 1
            if floods > FLOOD_RECONCILES:
                raise
            have = await _sticker_count(bot, name)  # the add may have applied before its 429
            continue
        except NetworkError as exc:
            if _too_large(exc):
                raise _one_too_large(exc) from exc
            raise
        have += 1
    return {"name": name, "created": created, "sticker_count": have}


async def _reconcile_lost_create(bot: Bot, name: str, lost: NetworkError) -> int:
    """The sticker count of set ``name`` after a create whose answer was ``lost`` (step 6).

    Raises:
        NetworkError: ``lost`` itself when the set does not read back (``STICKERSET_INVALID``: not created,
            or not readable yet); the command is tried again.
    """
    log.warning("STICKER_SET_CREATE_UNANSWERED", set_name=name, error=type(lost).__name__)
    try:
        sticker_set = await bot.get_sticker_set(name)
    except BadRequest as exc:
        if _SET_INVALID in exc.message.lower():
            raise lost from lost.__cause__  # its own cause kept (the executor reads it)
        raise
    log.info("STICKER_SET_CREATE_RECONCILED", set_name=name, sticker_count=len(sticker_set.stickers))
    return len(sticker_set.stickers)


async def _sticker_count(bot: Bot, name: str) -> int:
    try:
        sticker_set = await bot.get_sticker_set(name)
    except BadRequest as exc:
        if _SET_INVALID in exc.message.lower():
            raise SetNotReadable(f"sticker set {name} is occupied but not readable yet") from exc
        raise
    return len(sticker_set.stickers)


def _input(data: bytes, emoji: str) -> InputSticker:
    return InputSticker(sticker=data, emoji_list=[emoji], format="static")


def _one_too_large(exc: TelegramError) -> StickerTooLarge:
    return StickerTooLarge(f"Request Entity Too Large (413) with a single sticker: {exc.message}")


def _too_large(exc: TelegramError) -> bool:
    """An HTTP 413 as python-telegram-bot reports it (a ``NetworkError`` that names the status)."""
    if isinstance(exc, TimedOut):
        return False
    message = exc.message.lower()
    return any(marker in message for marker in _TOO_LARGE)
