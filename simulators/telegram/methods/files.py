"""Files in calls: resolving an InputFile argument, and ``getFile``.

An InputFile is an uploaded multipart part, ``attach://<part>`` naming one, an HTTP(S) URL Telegram downloads,
or the ``file_id`` of a file Telegram already has (core.telegram.org/bots/api#sending-files).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulators.telegram import wire
from simulators.telegram.errors import INVALID_FILE_ID, WRONG_FILE_ID, fail
from simulators.telegram.methods.base import Handler
from simulators.telegram.params import Params
from simulators.telegram.simulator import Simulator
from simulators.telegram.state import FileRecord

#: Largest file a bot may have Telegram fetch by URL for a photo/sticker (bytes; Bot API "Sending files").
MAX_URL_FILE_BYTES = 5 * 1024 * 1024


@dataclass(frozen=True)
class FileSource:
    """Bytes given for an InputFile; ``existing`` is set when they came as a known ``file_id``."""

    data: bytes
    existing: FileRecord | None = None


async def resolve_reference(sim: Simulator, params: Params, reference: str) -> FileSource | None:
    """Resolve an InputFile string: ``attach://`` part, URL or ``file_id``.

    Returns ``None`` for an ``attach://`` part that was not uploaded; raises ``BotApiError`` 400
    ``wrong file identifier/HTTP URL specified`` for an unknown ``file_id`` or a failed download.
    """
    reference = reference.strip()
    if reference.startswith("attach://"):
        upload = params.file(reference.removeprefix("attach://"))
        return FileSource(upload.data) if upload is not None else None
    if reference.startswith(("http://", "https://")):
        return FileSource(await sim.download(reference, MAX_URL_FILE_BYTES))
    record = sim.state.files.get(reference)
    data = sim.file_bytes(record) if record is not None else None
    if record is None or data is None:
        raise fail(WRONG_FILE_ID)
    return FileSource(data, record)


async def input_file(sim: Simulator, params: Params, name: str) -> FileSource | None:
    """The InputFile argument ``name``: an upload under that part name, or a reference string."""
    upload = params.file(name)
    if upload is not None:
        return FileSource(upload.data)
    if not params.has(name):
        return None
    return await resolve_reference(sim, params, params.text(name))


async def get_file(sim: Simulator, params: Params) -> Any:
    """``getFile``: the ``File`` with ``file_path`` for ``GET /file/bot<token>/<file_path>``."""
    record = sim.state.files.get(params.text("file_id").strip())
    if record is None:
        raise fail(INVALID_FILE_ID)
    return wire.file(record, with_path=True)


HANDLERS: dict[str, Handler] = {"getFile": get_file}
