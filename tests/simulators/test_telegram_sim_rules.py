"""Pure rules of the simulator: sticker validation, text markup, flood control, fault queue, long poll."""

from __future__ import annotations

import asyncio

import pytest

from simulators.telegram.config import Limits, SimConfig
from simulators.telegram.errors import BotApiError
from simulators.telegram.faults import FaultQueue, FaultSpec
from simulators.telegram.formatting import command_entities, parse_text, utf16_len
from simulators.telegram.polling import LongPoll
from simulators.telegram.ratelimit import FloodControl
from simulators.telegram.validation import (
    check_sticker_file,
    check_sticker_set_name,
    check_sticker_set_title,
    is_emoji,
)
from tests.simulators.tgsim_helpers import jpeg, png

pytestmark = pytest.mark.unit


def description(error: pytest.ExceptionInfo[BotApiError]) -> str:
    return error.value.description


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "Bad Request: file must be non-empty"),
        (b"not an image", "Bad Request: STICKER_PNG_NOPNG"),
        (jpeg(), "Bad Request: STICKER_PNG_NOPNG"),
        (png(511, 511), "Bad Request: STICKER_PNG_DIMENSIONS"),
        (png(noise=True), "Bad Request: file is too big"),
    ],
)
def test_static_sticker_files_are_refused_with_telegram_codes(data: bytes, expected: str) -> None:
    with pytest.raises(BotApiError) as caught:
        check_sticker_file(data, "static")
    assert description(caught) == expected


def test_static_sticker_accepts_png_and_webp_with_one_512_side() -> None:
    assert check_sticker_file(png(512, 200), "static").mime_type == "image/png"
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGBA", (300, 512)).save(buffer, format="WEBP")
    image = check_sticker_file(buffer.getvalue(), "static")
    assert (image.mime_type, image.width, image.height) == ("image/webp", 300, 512)


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("abc_by_stickerbooth_bot", True),
        ("A1_by_StickerBooth_Bot", True),
        ("x" * 44 + "_by_stickerbooth_bot", True),
        ("x" * 45 + "_by_stickerbooth_bot", False),
        ("abc_by_other_bot", False),
        ("abc__by_stickerbooth_bot", False),
        ("9abc_by_stickerbooth_bot", False),
        ("ab c_by_stickerbooth_bot", False),
        ("", False),
    ],
)
def test_sticker_set_names(name: str, ok: bool) -> None:
    if ok:
        check_sticker_set_name(name, "stickerbooth_bot")
    else:
        with pytest.raises(BotApiError, match="invalid sticker set name is specified"):
            check_sticker_set_name(name, "stickerbooth_bot")


def test_sticker_set_titles() -> None:
    check_sticker_set_title("x" * 64)
    for bad in ("", "   ", "x" * 65):
        with pytest.raises(BotApiError, match="PACK_TITLE_INVALID"):
            check_sticker_set_title(bad)


@pytest.mark.parametrize(
    ("text", "ok"), [("😀", True), ("👍🏽", True), ("🇩🇪", True), ("❤️", True), ("1️⃣", True)]
)
def test_emoji_are_recognised(text: str, ok: bool) -> None:
    assert is_emoji(text) is ok


@pytest.mark.parametrize("text", ["a", "😀a", "", "12"])
def test_non_emoji_are_refused(text: str) -> None:
    assert not is_emoji(text)


def test_html_is_parsed_into_entities_counted_in_utf16() -> None:
    text, entities = parse_text(
        "😀 <b>bold</b> <a href='https://t.me/x'>link</a> &amp; <code>c</code>", "HTML", None
    )

    assert text == "😀 bold link & c"
    assert utf16_len("😀") == 2
    assert entities == [
        {"type": "bold", "offset": 3, "length": 4},
        {"type": "text_link", "offset": 8, "length": 4, "url": "https://t.me/x"},
        {"type": "code", "offset": 15, "length": 1},
    ]


@pytest.mark.parametrize(
    ("text", "mode", "reason"),
    [
        ("a<br>b", "HTML", 'Unsupported start tag "br" at byte offset 1'),
        ("<b>open", "HTML", 'Can\'t find end tag corresponding to start tag "b"'),
        ("<b>x</i>", "HTML", 'Unmatched end tag at byte offset 4, expected "</b>", found "</i>"'),
        (
            "Price: 5-10",
            "MarkdownV2",
            "Character '-' is reserved and must be escaped with the preceding '\\'",
        ),
        ("*bold", "MarkdownV2", "Can't find end of Bold entity at byte offset 0"),
        ("_it", "Markdown", "Can't find end of the entity starting at byte offset 0"),
    ],
)
def test_bad_markup_is_refused_with_tdlib_reasons(text: str, mode: str, reason: str) -> None:
    with pytest.raises(BotApiError) as caught:
        parse_text(text, mode, None)
    assert description(caught) == f"Bad Request: can't parse entities: {reason}"


def test_markdown_v2_entities_and_escapes() -> None:
    text, entities = parse_text(
        "*b* _i_ __u__ ~s~ ||sp|| [l](https://x.org/a\\)) `c` 1\\.5", "MarkdownV2", None
    )

    assert text == "b i u s sp l c 1.5"
    assert [entity["type"] for entity in entities] == [
        "bold",
        "italic",
        "underline",
        "strikethrough",
        "spoiler",
        "text_link",
        "code",
    ]
    assert entities[5]["url"] == "https://x.org/a)"


def test_plain_text_is_trimmed_and_unknown_parse_modes_refused() -> None:
    assert parse_text("  hi \n", "", None) == ("hi", [])
    with pytest.raises(BotApiError, match="unsupported parse_mode"):
        parse_text("hi", "rst", None)


def test_command_entities_cover_each_command() -> None:
    assert command_entities("/start abc") == [{"type": "bot_command", "offset": 0, "length": 6}]
    assert command_entities("😀 /help@stickerbooth_bot now") == [
        {"type": "bot_command", "offset": 3, "length": 22}
    ]
    assert command_entities("a/b and http://x/y") == []


def test_private_chat_bucket_allows_a_burst_then_one_per_second() -> None:
    clock = FakeClock()
    flood = FloodControl(Limits(private_per_second=1, private_burst=3, global_per_second=0), clock)
    for _ in range(3):
        flood.acquire(7)

    with pytest.raises(BotApiError) as caught:
        flood.acquire(7)
    assert (caught.value.error_code, caught.value.retry_after) == (429, 1)
    flood.acquire(8)
    clock.now += 1
    flood.acquire(7)


def test_global_bucket_and_disabled_limits() -> None:
    clock = FakeClock()
    flood = FloodControl(Limits(private_per_second=0, global_per_second=2), clock)
    flood.acquire(1)
    flood.acquire(2)
    with pytest.raises(BotApiError, match="Too Many Requests: retry after 1"):
        flood.acquire(3)
    flood.configure(Limits(private_per_second=0, group_per_minute=0, global_per_second=0))
    for chat_id in (1, 1, 1, -5, -5, -5):
        flood.acquire(chat_id)


def test_fault_queue_counts_down_per_method() -> None:
    queue = FaultQueue()
    queue.add(FaultSpec(method="sendMessage", count=2, error_code=429, retry_after=3))
    queue.add(FaultSpec(method="*", kind="delay", seconds=0.1))

    first = queue.take("SENDMESSAGE")
    assert first is not None and first.error().payload() == {
        "ok": False,
        "error_code": 429,
        "description": "Too Many Requests: retry after 3",
        "parameters": {"retry_after": 3},
    }
    assert queue.take("sendMessage") is not None
    wildcard = queue.take("sendMessage")
    assert wildcard is not None and wildcard.kind == "delay"
    assert queue.take("sendMessage") is None


def test_bot_id_comes_from_the_token() -> None:
    assert SimConfig(token="42:abc").bot_id == 42
    assert SimConfig(token="not-a-token").bot_id == 7_000_000_001


async def test_long_poll_wakes_on_updates_and_yields_to_a_newer_poll() -> None:
    poll = LongPoll()
    ready = False
    waiting = asyncio.create_task(poll.wait(30, lambda: ready))
    await asyncio.sleep(0.01)
    ready = True
    poll.notify()
    await asyncio.wait_for(waiting, 10)

    ready = False
    older = asyncio.create_task(poll.wait(30, lambda: ready))
    await asyncio.sleep(0.01)
    newer = asyncio.create_task(poll.wait(0.05, lambda: ready))
    with pytest.raises(BotApiError) as caught:
        await asyncio.wait_for(older, 10)
    assert caught.value.error_code == 409
    await asyncio.wait_for(newer, 10)
