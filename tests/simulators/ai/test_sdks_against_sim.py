"""The real SDKs (google-genai, openai) through the worker's adapters against the AI provider simulator:
images and vision answers round-trip, every fault comes back in its provider's wire shape and is
classified into the error class of DESIGN.md §5, and the SDKs retry nothing on their own."""

from __future__ import annotations

import asyncio
import io
import time
from typing import Any

import numpy as np
import pytest
from PIL import Image

from shared.errors import ErrorClass
from shared.outfits import get_outfit
from simulators.ai import AiSimConfig
from simulators.ai.handling import NOT_AN_IMAGE
from simulators.ai.state import CONTENT_KINDS
from worker.imaging.cut import cut_sheet
from worker.providers.answers import PASSPORT_SCHEMA
from worker.providers.base import (
    CallUsage,
    DrawSpec,
    ImageRequest,
    InputImage,
    Provider,
    ProviderCallError,
    VisionRequest,
)
from worker.providers.classify import classify_exception
from worker.providers.gemini import GeminiProvider
from worker.providers.images import decode_output, encode_photo
from worker.providers.openai_api import OpenAIProvider
from worker.providers.prompts import image_prompt, vision_prompt

from .helpers import RunningAiSim, photo, serve_aisim

pytestmark = pytest.mark.integration


def selfie() -> bytes:
    with Image.open(io.BytesIO(photo())) as image:
        return encode_photo(np.asarray(image.convert("RGB"))).data


def passport_request() -> VisionRequest:
    return VisionRequest(
        kind="passport",
        prompt=vision_prompt("passport"),
        images=(InputImage(selfie(), "image/jpeg", "selfie"),),
        schema=PASSPORT_SCHEMA,
    )


def sheet_request() -> ImageRequest:
    spec = DrawSpec(outfit_id="chef", poses=("waving", "heart", "cool", "ok"), cols=2, rows=2)
    prompt = image_prompt(
        "sheet", spec, outfit=get_outfit("chef"), art_style="cute_cartoon", roles=["selfie"], aspect="1:1"
    )
    images = (InputImage(selfie(), "image/jpeg", "selfie"),)
    return ImageRequest(kind="sheet", prompt=prompt, images=images, size="2K", aspect="1:1", spec=spec)


def provider(aisim: RunningAiSim, name: str, timeout_s: float = 30.0) -> Provider:
    return aisim.gemini() if name == "gemini" else aisim.openai(timeout_s)


def keyed(url: str, name: str, key: str) -> Provider:
    if name == "gemini":
        return GeminiProvider(key, base_url=url, image_model="m", vision_model="m")
    return OpenAIProvider(key, base_url=f"{url}/v1", image_model="m", vision_model="m", timeout_s=5)


async def draw_sheet(aisim: RunningAiSim, name: str) -> bytes:
    """One ``sheet_request()`` image call from a fresh client of provider ``name``, closed afterwards."""
    client = provider(aisim, name)
    try:
        data, _usage = await client.generate_image(sheet_request(), timeout_s=30)
        return data
    finally:
        await client.aclose()


async def ask_passport(aisim: RunningAiSim, name: str) -> tuple[dict[str, Any], CallUsage | None]:
    """One ``passport_request()`` vision call from a fresh client of provider ``name``, closed afterwards:
    the JSON answer and the usage."""
    client = provider(aisim, name)
    try:
        return await client.vision_json(passport_request(), timeout_s=30)
    finally:
        await client.aclose()


async def failure(call: object) -> ProviderCallError:
    try:
        await call  # type: ignore[misc]
    except Exception as exc:
        return classify_exception(exc)
    raise AssertionError("the call succeeded")


@pytest.mark.parametrize("name", ["gemini", "openai"])
async def test_a_sheet_comes_back_drawn_from_the_selfie_with_its_grid(aisim: RunningAiSim, name: str) -> None:
    data = await draw_sheet(aisim, name)
    with Image.open(io.BytesIO(data)) as image:
        sheet = np.asarray(image.convert("RGB"))
    assert sheet.shape == (1024, 1024, 3)
    cut = cut_sheet(sheet, 4)
    assert cut.valid and len(cut.figures) == 4
    [call] = await aisim.calls()
    assert (call["provider"], call["kind"], call["size"], call["aspect"], call["roles"]) == (
        name,
        "sheet",
        "2K",
        "1:1",
        ["selfie"],
    )


@pytest.mark.parametrize("name", ["gemini", "openai"])
async def test_a_vision_call_answers_the_passport_as_json(aisim: RunningAiSim, name: str) -> None:
    answer, usage = await ask_passport(aisim, name)
    assert answer["skin_tone_hex"].startswith("#") and len(answer["face_box"]) == 4
    assert usage is not None and usage.input_text_tokens > 0


VISION_FAULTS = [
    ("gemini", "rate_limit", ErrorClass.RATE_LIMIT),
    ("gemini", "quota_day", ErrorClass.QUOTA_DAY),
    ("gemini", "credit", ErrorClass.CREDIT),
    ("gemini", "payment_required", ErrorClass.CREDIT),
    ("gemini", "auth", ErrorClass.AUTH),
    ("gemini", "forbidden", ErrorClass.AUTH),
    ("gemini", "model_not_found", ErrorClass.CONFIG),
    ("gemini", "unsupported_parameter", ErrorClass.CONFIG),
    ("gemini", "account_not_set_up", ErrorClass.CONFIG),
    ("gemini", "location_unsupported", ErrorClass.CONFIG),
    ("gemini", "outage", ErrorClass.OUTAGE),
    ("gemini", "overloaded", ErrorClass.OUTAGE),
    ("gemini", "drop", ErrorClass.OUTAGE),
    ("gemini", "safety", ErrorClass.CONTENT),
    ("gemini", "no_image", ErrorClass.INVALID),
    ("openai", "rate_limit", ErrorClass.RATE_LIMIT),
    ("openai", "quota_day", ErrorClass.QUOTA_DAY),
    ("openai", "credit", ErrorClass.CREDIT),
    ("openai", "billing_hard_limit", ErrorClass.CREDIT),
    ("openai", "payment_required", ErrorClass.CREDIT),
    ("openai", "auth", ErrorClass.AUTH),
    ("openai", "forbidden", ErrorClass.AUTH),
    ("openai", "model_not_found", ErrorClass.CONFIG),
    ("openai", "unsupported_parameter", ErrorClass.CONFIG),
    ("openai", "account_not_set_up", ErrorClass.CONFIG),
    ("openai", "location_unsupported", ErrorClass.CONFIG),
    ("openai", "outage", ErrorClass.OUTAGE),
    ("openai", "overloaded", ErrorClass.OUTAGE),
    ("openai", "drop", ErrorClass.OUTAGE),
    ("openai", "refusal", ErrorClass.INVALID),  # the model declines to judge: an unusable answer
    ("openai", "no_image", ErrorClass.INVALID),
    ("gemini", "refusal", ErrorClass.INVALID),
    ("gemini", "not_image", ErrorClass.INVALID),
    ("openai", "not_image", ErrorClass.INVALID),
    # a blocked vision prompt is content (recorded so), but never stops a job (worker.providers.chain)
    *[("gemini", kind, ErrorClass.CONTENT) for kind in sorted(CONTENT_KINDS)],
    *[("openai", kind, ErrorClass.INVALID) for kind in sorted(CONTENT_KINDS)],  # a ``refusal`` part
]


@pytest.mark.parametrize(("name", "kind", "expected"), VISION_FAULTS)
async def test_each_fault_is_classified_from_its_wire_shape_with_one_request(
    aisim: RunningAiSim, name: str, kind: str, expected: ErrorClass
) -> None:
    await aisim.fault(kind, provider=name)
    client = provider(aisim, name)
    started = time.monotonic()
    try:
        error = await failure(client.vision_json(passport_request(), timeout_s=30))
    finally:
        await client.aclose()
    assert error.error_class is expected, error
    calls = await aisim.calls()
    assert len(calls) == 1  # SDK retries are off: one request, however it failed
    assert time.monotonic() - started < 5  # no hidden SDK back-off sleep either


@pytest.mark.parametrize("name", ["gemini", "openai"])
async def test_a_rate_limit_carries_the_providers_retry_hint(aisim: RunningAiSim, name: str) -> None:
    await aisim.fault("rate_limit", provider=name, retry_after_s=26)
    error = await failure(ask_passport(aisim, name))
    assert (error.error_class, error.retry_after_s) == (ErrorClass.RATE_LIMIT, 26.0)


#: Every content-refusal wire shape of an image call, as each provider answers it (the simulator's kinds,
#: simulators/ai/state.py), and what the worker reads in it.
IMAGE_REFUSALS = [
    ("gemini", "safety", "finishReason IMAGE_SAFETY"),
    ("gemini", "content_policy", "finishReason IMAGE_SAFETY"),
    ("gemini", "finish_safety", "finishReason SAFETY"),
    ("gemini", "prohibited_content", "finishReason PROHIBITED_CONTENT"),
    ("gemini", "image_prohibited_content", "finishReason IMAGE_PROHIBITED_CONTENT"),
    ("gemini", "blocklist", "finishReason BLOCKLIST"),
    ("gemini", "spii", "finishReason SPII"),
    ("gemini", "prompt_blocked", "prompt blocked: BlockedReason.PROHIBITED_CONTENT"),
    *[("openai", kind, "400 moderation_blocked") for kind in sorted(CONTENT_KINDS - {"content_policy"})],
    ("openai", "content_policy", "400 content_policy_violation"),
]


def test_every_content_kind_of_the_simulator_is_in_the_table() -> None:
    assert {kind for _name, kind, _seen in IMAGE_REFUSALS} == CONTENT_KINDS


@pytest.mark.parametrize(("name", "kind", "seen"), IMAGE_REFUSALS)
async def test_every_content_refusal_of_an_image_call_is_content(
    aisim: RunningAiSim, name: str, kind: str, seen: str
) -> None:
    await aisim.fault(kind, provider=name, call="image")
    error = await failure(draw_sheet(aisim, name))
    assert error.error_class is ErrorClass.CONTENT, error
    assert seen in error.message
    [call] = await aisim.calls()
    assert call["outcome"] == kind


@pytest.mark.parametrize("name", ["gemini", "openai"])
async def test_bytes_that_are_not_an_image_come_back_as_bytes_the_worker_cannot_decode(
    aisim: RunningAiSim, name: str
) -> None:
    await aisim.fault("not_image", provider=name, call="image")
    data = await draw_sheet(aisim, name)  # the SDK sees a success
    assert data == NOT_AN_IMAGE
    with pytest.raises(ProviderCallError) as raised:
        decode_output(data)
    assert raised.value.error_class is ErrorClass.INVALID


@pytest.mark.parametrize(
    ("name", "kind", "expected"),
    [
        ("gemini", "safety", ErrorClass.CONTENT),
        ("gemini", "no_image", ErrorClass.INVALID),
        ("openai", "safety", ErrorClass.CONTENT),
        ("openai", "no_image", ErrorClass.INVALID),
    ],
)
async def test_an_image_answer_without_an_image_is_never_an_empty_success(
    aisim: RunningAiSim, name: str, kind: str, expected: ErrorClass
) -> None:
    await aisim.fault(kind, provider=name, call="image")
    error = await failure(draw_sheet(aisim, name))
    assert error.error_class is expected


@pytest.mark.parametrize("name", ["gemini", "openai"])
async def test_a_slow_answer_is_a_timeout_at_our_timeout(aisim: RunningAiSim, name: str) -> None:
    await aisim.fault("timeout", provider=name, delay_s=3.0)
    client = provider(aisim, name, timeout_s=0.4)
    started = time.monotonic()
    try:
        error = await failure(client.vision_json(passport_request(), timeout_s=0.4))
    finally:
        await client.aclose()
    assert error.error_class is ErrorClass.TIMEOUT
    assert time.monotonic() - started < 2.5  # at our 0.4 s, well before the 3 s answer (room for a busy CI)


@pytest.mark.parametrize("name", ["gemini", "openai"])
async def test_a_refused_connection_is_an_outage_at_once(name: str) -> None:
    """One connection attempt, then ``outage``: google-genai's implicit repeat of a failed aiohttp connection
    and openai's default 2 retries are off. Attempts are counted where both SDKs connect, not timed: the
    event loop's ``sock_connect`` (aiohttp's happy eyeballs and anyio's ``create_connection`` end there)."""
    runner, running = await serve_aisim(AiSimConfig())
    url = running.url
    await running.http.close()
    await runner.cleanup()  # nothing listens there any more
    port = int(url.rsplit(":", 1)[1])
    loop = asyncio.get_running_loop()
    connect = loop.sock_connect
    attempts: list[object] = []

    async def counted(sock: Any, address: Any) -> None:
        if address[1] == port:
            attempts.append(address)
        await connect(sock, address)

    client = keyed(url, name, "k")
    loop.sock_connect = counted  # type: ignore[method-assign]
    try:
        error = await failure(client.vision_json(passport_request(), timeout_s=5))
    finally:
        loop.sock_connect = connect  # type: ignore[method-assign]
        await client.aclose()
    assert error.error_class is ErrorClass.OUTAGE
    assert len(attempts) == 1, attempts


@pytest.mark.parametrize("name", ["gemini", "openai"])
async def test_a_wrong_key_is_auth(aisim: RunningAiSim, name: str) -> None:
    client = keyed(aisim.url, name, "wrong")
    try:
        error = await failure(client.vision_json(passport_request(), timeout_s=5))
    finally:
        await client.aclose()
    assert error.error_class is ErrorClass.AUTH


async def in_flight(aisim: RunningAiSim) -> dict[str, dict[str, int]]:
    async with aisim.http.get(aisim.url + "/sim/in-flight") as response:
        assert response.status == 200
        result: dict[str, dict[str, int]] = await response.json()
        return result


async def test_the_simulator_counts_the_calls_in_flight_at_once(aisim: RunningAiSim) -> None:
    await aisim.post("/sim/latency", {"seconds": 0.4})
    await asyncio.gather(*(draw_sheet(aisim, name) for name in ("gemini", "gemini", "openai")))
    seen = await in_flight(aisim)
    assert seen["max"]["image"] == 3 and seen["max"]["gemini:image"] == 2 and seen["max"]["openai:image"] == 1
    assert seen["now"]["image"] == 0
    async with aisim.http.delete(aisim.url + "/sim/in-flight") as response:
        assert response.status == 200
    for _ in range(2):  # one after the other: never more than one at once
        await draw_sheet(aisim, "gemini")
    await ask_passport(aisim, "gemini")
    seen = await in_flight(aisim)
    assert (seen["max"]["image"], seen["max"]["vision"]) == (1, 1)
