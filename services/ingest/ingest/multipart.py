"""A streaming ``multipart/form-data`` reader with byte limits, for the kiosk photo upload.

Starlette's form parsing (``UploadFile``) reads the whole body into a spooled temporary file before a
route runs, so a size limit checked in the route comes after the bytes are on disk (on compose ``/tmp`` is
a tmpfs: memory). This reader pulls the body chunk by chunk (``Request.stream()``) through
python-multipart's push parser and lets the route decide part by part: read a part up to a limit, or skip
it. The whole body is bounded too, so a stream of small parts cannot grow without end.

Memory held at any time: the part being read (at most its limit) plus one chunk of the body.

Raises :class:`shared.errors.UploadRejected`:

========================  ======  ======================================================================
code                      status  when
========================  ======  ======================================================================
``file_too_large``        413     the body passes ``max_body_bytes`` (the rest is not read)
``malformed_multipart``   400     not ``multipart/form-data`` with a boundary, a syntax error, a part
                                  without a ``Content-Disposition: form-data; name=…``, or the body
                                  ends before the closing boundary
========================  ======  ======================================================================

Grammar: RFC 7578 (``multipart/form-data``), RFC 2046 §5.1 (boundaries).
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header

from shared.errors import UploadRejected

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks

__all__ = ["MultipartReader", "Part"]


@dataclass(frozen=True, slots=True)
class Part:
    """The headers of one form part.

    Attributes:
        name: the form field name (``Content-Disposition: form-data; name="…"``).
        filename: the file name the client gave, if any (never trusted for the format).
        content_type: the part's declared ``Content-Type``, if any.
    """

    name: str
    filename: str | None
    content_type: str | None


def _malformed(detail: str) -> UploadRejected:
    return UploadRejected(
        "malformed_multipart", f"The upload is not valid multipart/form-data: {detail}.", status=400
    )


def boundary_of(content_type: str | None) -> bytes:
    """The ``boundary`` parameter of a ``multipart/form-data`` Content-Type header.

    Raises:
        UploadRejected: ``malformed_multipart`` when the type is another one or has no boundary.
    """
    kind, options = parse_options_header(content_type)
    boundary = options.get(b"boundary")
    if kind != b"multipart/form-data" or not boundary:
        raise _malformed("expected Content-Type multipart/form-data with a boundary")
    return boundary


class MultipartReader:
    """Pulls the parts of one ``multipart/form-data`` body, in order.

    Usage: ``while (part := await reader.next_part()) is not None:`` then either
    ``await reader.read_part(limit)`` or nothing (the part is skipped by the next ``next_part``).

    Args:
        chunks: the body as it arrives (``Request.stream()``), untrusted.
        content_type: the request's ``Content-Type`` header.
        max_body_bytes: most body bytes ever pulled from ``chunks`` (bytes).

    Raises:
        UploadRejected: ``malformed_multipart`` at once for a wrong Content-Type (see the module docstring).
    """

    def __init__(
        self, chunks: AsyncIterator[bytes], content_type: str | None, *, max_body_bytes: int
    ) -> None:
        self._chunks = chunks
        self._max_body = max_body_bytes
        self._received = 0
        self._events: deque[tuple[str, bytes | Part | None]] = deque()
        self._finished = False
        self._in_part = False
        self._header_field = bytearray()
        self._header_value = bytearray()
        self._headers: dict[bytes, bytes] = {}
        boundary = boundary_of(content_type)
        callbacks: MultipartCallbacks = {
            "on_part_begin": self._on_part_begin,
            "on_header_field": self._on_header_field,
            "on_header_value": self._on_header_value,
            "on_header_end": self._on_header_end,
            "on_headers_finished": self._on_headers_finished,
            "on_part_data": self._on_part_data,
            "on_part_end": self._on_part_end,
            "on_end": self._on_end,
        }
        try:
            self._parser = MultipartParser(boundary, callbacks)
        except FormParserError as exc:  # e.g. a boundary longer than RFC 2046's 70 characters
            raise _malformed(str(exc)) from exc

    @property
    def bytes_received(self) -> int:
        """Body bytes pulled from the stream so far (bytes)."""
        return self._received

    async def next_part(self) -> Part | None:
        """The next part's headers (skipping what is left of the current part), or None after the last.

        Raises:
            UploadRejected: ``file_too_large`` or ``malformed_multipart``.
        """
        while self._in_part:
            kind, _ = await self._next_event()
            if kind == "end":
                self._in_part = False
        kind, value = await self._next_event()
        if kind == "finish":
            return None
        if kind != "part" or not isinstance(value, Part):
            raise _malformed("part data outside a part")
        self._in_part = True
        return value

    async def read_part(self, limit: int) -> bytes | None:
        """The rest of the current part's data, or None as soon as it passes ``limit`` bytes.

        After None the reader stops where it is (nothing more of the body is read); the caller answers
        and drops it.

        Raises:
            UploadRejected: ``file_too_large`` or ``malformed_multipart``.
        """
        data = bytearray()
        while True:
            kind, value = await self._next_event()
            if kind == "end":
                self._in_part = False
                return bytes(data)
            if kind != "data" or not isinstance(value, bytes):
                raise _malformed("a part ended without its boundary")
            data += value
            if len(data) > limit:
                return None

    async def _next_event(self) -> tuple[str, bytes | Part | None]:
        while not self._events:
            if self._finished:
                return ("finish", None)
            chunk = await anext(self._chunks, None)
            if chunk is None:
                raise _malformed("the body ended before the closing boundary")
            if self._received + len(chunk) > self._max_body:
                self._received += len(chunk)
                raise UploadRejected(
                    "file_too_large", f"The upload is larger than {self._max_body} bytes.", status=413
                )
            self._received += len(chunk)
            try:
                self._parser.write(chunk)
            except FormParserError as exc:
                raise _malformed(str(exc) or type(exc).__name__) from exc
        return self._events.popleft()

    # python-multipart callbacks: (data, start, end) slices are only valid during the call, hence the copies.

    def _on_part_begin(self) -> None:
        self._headers = {}

    def _on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_field += data[start:end]

    def _on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def _on_header_end(self) -> None:
        self._headers[bytes(self._header_field).lower()] = bytes(self._header_value)
        self._header_field.clear()
        self._header_value.clear()

    def _on_headers_finished(self) -> None:
        disposition, options = parse_options_header(self._headers.get(b"content-disposition", b""))
        name = options.get(b"name")
        if disposition != b"form-data" or name is None:
            raise _malformed('a part has no Content-Disposition: form-data; name="…"')
        filename = options.get(b"filename")
        content_type = self._headers.get(b"content-type")
        self._events.append(
            (
                "part",
                Part(
                    name=name.decode("utf-8", "replace"),
                    filename=filename.decode("utf-8", "replace") if filename is not None else None,
                    content_type=content_type.decode("latin-1") if content_type is not None else None,
                ),
            )
        )

    def _on_part_data(self, data: bytes, start: int, end: int) -> None:
        self._events.append(("data", bytes(data[start:end])))

    def _on_part_end(self) -> None:
        self._events.append(("end", None))

    def _on_end(self) -> None:
        self._finished = True
        self._events.append(("finish", None))
