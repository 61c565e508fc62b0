"""The streaming multipart reader: parts in order, limits that stop the reading, malformed bodies refused."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from ingest.multipart import MultipartReader, Part
from shared.errors import UploadRejected

pytestmark = pytest.mark.unit

BOUNDARY = "----kiosk7MA4YWxkTrZu0gW"
CONTENT_TYPE = f"multipart/form-data; boundary={BOUNDARY}"


def form(*parts: tuple[str, bytes, str | None]) -> bytes:
    """A multipart body of (name, data, filename) parts, as a browser's FormData sends it."""
    out = b""
    for name, data, filename in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        out += f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n".encode()
        if filename:
            out += b"Content-Type: image/jpeg\r\n"
        out += b"\r\n" + data + b"\r\n"
    return out + f"--{BOUNDARY}--\r\n".encode()


class Stream:
    """The body in ``chunk``-byte pieces, counting what the reader pulled (bytes)."""

    def __init__(self, body: bytes, chunk: int = 7) -> None:
        self.body = body
        self.chunk = chunk
        self.pulled = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self.body), self.chunk):
            piece = self.body[start : start + self.chunk]
            self.pulled += len(piece)
            yield piece


async def read_all(reader: MultipartReader) -> list[tuple[Part, bytes | None]]:
    parts = []
    while (part := await reader.next_part()) is not None:
        parts.append((part, await reader.read_part(10_000)))
    return parts


@pytest.mark.parametrize("chunk", [1, 7, 64, 100_000])
async def test_parts_come_in_order_with_their_names_and_data_whatever_the_chunking(chunk: int) -> None:
    body = form(("capture_id", b"cap-1", None), ("photo", b"\xff\xd8\xff" + bytes(range(256)) * 3, "me.jpg"))
    parts = await read_all(MultipartReader(aiter(Stream(body, chunk)), CONTENT_TYPE, max_body_bytes=10_000))
    assert [(p.name, p.filename, p.content_type, data) for p, data in parts] == [
        ("capture_id", None, None, b"cap-1"),
        ("photo", "me.jpg", "image/jpeg", b"\xff\xd8\xff" + bytes(range(256)) * 3),
    ]


async def test_a_part_over_its_limit_stops_the_reading_near_the_limit() -> None:
    stream = Stream(form(("photo", b"x" * 50_000, "big.jpg")), chunk=1000)
    reader = MultipartReader(aiter(stream), CONTENT_TYPE, max_body_bytes=1_000_000)
    assert (await reader.next_part()) is not None
    assert await reader.read_part(5_000) is None
    assert stream.pulled <= 5_000 + 1_000 + 200  # the limit, one chunk, the part's headers


async def test_an_unread_part_is_skipped_by_the_next_one() -> None:
    body = form(("ignored", b"y" * 3000, None), ("capture_id", b"c", None))
    reader = MultipartReader(aiter(Stream(body, 100)), CONTENT_TYPE, max_body_bytes=10_000)
    first = await reader.next_part()
    second = await reader.next_part()
    assert (first and first.name, second and second.name) == ("ignored", "capture_id")
    assert await reader.read_part(10) == b"c"
    assert await reader.next_part() is None


async def test_a_body_over_its_limit_is_refused_without_reading_on() -> None:
    stream = Stream(form(*[(f"f{k}", b"z" * 500, None) for k in range(100)]), chunk=256)
    reader = MultipartReader(aiter(stream), CONTENT_TYPE, max_body_bytes=4_096)
    with pytest.raises(UploadRejected) as refused:
        await read_all(reader)
    assert (refused.value.code, refused.value.status) == ("file_too_large", 413)
    assert stream.pulled <= 4_096 + 256


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("application/json", b"{}"),
        ("multipart/form-data", form(("a", b"1", None))),  # no boundary
        (CONTENT_TYPE, form(("photo", b"abc", "x.jpg"))[:-30]),  # cut before the closing boundary
        (CONTENT_TYPE, b"--" + BOUNDARY.encode() + b"\r\nContent-Type: text/plain\r\n\r\nno name\r\n"),
        (CONTENT_TYPE, b"this is not multipart at all"),
        (CONTENT_TYPE, b""),
    ],
    ids=["json", "no-boundary", "truncated", "no-disposition", "garbage", "empty"],
)
async def test_a_malformed_body_is_a_400_malformed_multipart(content_type: str, body: bytes) -> None:
    with pytest.raises(UploadRejected) as refused:
        await read_all(MultipartReader(aiter(Stream(body)), content_type, max_body_bytes=10_000))
    assert (refused.value.code, refused.value.status) == ("malformed_multipart", 400)
