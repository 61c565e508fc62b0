"""One call through the simulator, whatever the provider: check the key, answer a model the provider does
not serve with its 404, refuse a request the provider would refuse (its documented 400,
:class:`RejectedRequest`, :mod:`simulators.ai.rules`), apply latency and the queued fault, else
draw or answer; every call is logged (``GET /sim/calls``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from cartoon.grammar import parse_image_prompt, parse_vision_prompt
from simulators.ai.state import CONTENT_KINDS, CallRecord, SimState

__all__ = [
    "NOT_AN_IMAGE",
    "Call",
    "ErrorShape",
    "InvalidShape",
    "RejectedRequest",
    "Renderer",
    "Served",
    "serve_call",
]

#: The bytes of ``not_image``: a PNG signature and the start of an IHDR chunk, cut off (what a proxy that
#: truncated the answer, or a model that emitted a broken file, hands back).
NOT_AN_IMAGE = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x04\x00" + b"\x00" * 24

_log = logging.getLogger(__name__)

#: Answers a call with a result (``kind`` ``ok``) or a rendered failure (a content kind answered with a
#: 200, ``no_image``, ``not_image``, ``refusal``); ``payload`` is PNG bytes (image) or a JSON object
#: (vision).
Renderer = Callable[["Call", str, bytes | dict[str, Any] | None], web.StreamResponse]
#: (fault kind, model, retry_after_s) → (HTTP status, JSON body, headers) in the provider's wire shape.
ErrorShape = Callable[[str, str, float | None], tuple[int, dict[str, Any], dict[str, str]]]


class RejectedRequest(Exception):
    """A request the provider answers with its 400 (a missing or unsupported field, a prompt the simulated
    model cannot read): ``message`` is the provider's text, ``param`` the offending field, when named;
    ``code`` and ``error_type`` are OpenAI's (type ``invalid_request_error`` unless given)."""

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        error_type: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code
        self.error_type = error_type


#: A :class:`RejectedRequest` → (HTTP status, JSON body, headers) in the provider's wire shape.
InvalidShape = Callable[[RejectedRequest], tuple[int, dict[str, Any], dict[str, str]]]


@dataclass
class Call:
    """A call as received: provider, model, ``image`` or ``vision``, the prompt and the images."""

    provider: str
    model: str
    call: str
    prompt: str
    images: list[bytes]
    size: str | None = None
    aspect: str | None = None
    authorised: bool = True
    rejection: RejectedRequest | None = None
    exists: bool = True  # the provider serves ``model`` in this role (simulators.ai.rules.ModelBook)


#: Draws an image (PNG bytes) or answers a vision call (JSON object) for a call, filling in the record.
Served = Callable[[Call, CallRecord], Awaitable[bytes | dict[str, Any]]]

_RENDERED = frozenset({"no_image", "not_image", "refusal"})


def _request_kind(call: Call) -> str:
    """What the prompt asks for (``sheet``, ``anchor``, ``passport``, …), or ``?``."""
    try:
        if call.call == "image":
            return parse_image_prompt(call.prompt).kind
        return parse_vision_prompt(call.prompt)[0]
    except ValueError:
        return "?"


async def serve_call(
    request: web.Request,
    state: SimState,
    call: Call,
    serve: Served,
    *,
    render: Renderer,
    error: ErrorShape,
    invalid: InvalidShape,
) -> web.StreamResponse:
    """Answer one call (see the module docstring): the key first, then ``call.rejection`` (the wire
    checks of the provider's route), then the fault, then ``serve`` (which raises
    :class:`RejectedRequest` for a prompt it cannot read). The call counts as in flight
    (:meth:`SimState.entered`) until it is answered or its client goes away."""
    state.entered(call.provider, call.call)
    try:
        return await _serve_call(request, state, call, serve, render=render, error=error, invalid=invalid)
    finally:
        state.left(call.provider, call.call)


async def _serve_call(
    request: web.Request,
    state: SimState,
    call: Call,
    serve: Served,
    *,
    render: Renderer,
    error: ErrorShape,
    invalid: InvalidShape,
) -> web.StreamResponse:
    record = state.log(
        CallRecord(
            at=state.now(),
            provider=call.provider,
            model=call.model,
            call=call.call,
            kind="?",
            size=call.size,
            aspect=call.aspect,
            images=len(call.images),
        )
    )
    if not call.authorised:
        record.outcome = "auth"
        status, body, headers = error("auth", call.model, None)
        return web.json_response(body, status=status, headers=headers)
    if not call.exists:  # the provider's 404 for a model it does not serve (simulators.ai.wire)
        record.outcome = "model_not_found"
        status, body, headers = error("model_not_found", call.model, None)
        return web.json_response(body, status=status, headers=headers)
    if call.rejection is not None:
        return _rejected(record, call.rejection, invalid)
    record.kind = _request_kind(call)
    fault = state.take_fault(call.provider, call.call, record.kind)
    latency_s = state.latency_for(call.call)
    if latency_s:
        await asyncio.sleep(latency_s)
    if fault is not None:
        record.outcome = fault.kind
        if fault.kind == "timeout":
            await asyncio.sleep(fault.delay_s)
        elif fault.kind == "drop":
            _log.info("dropping a %s call (injected fault)", call.provider)
            if request.transport is not None:
                request.transport.close()
            return web.Response(status=500)
        elif fault.kind in _RENDERED or (
            fault.kind in CONTENT_KINDS and (call.provider == "gemini" or call.call == "vision")
        ):
            return render(call, fault.kind, None)
        else:
            status, body, headers = error(fault.kind, call.model, fault.retry_after_s)
            return web.json_response(body, status=status, headers=headers)
    try:
        payload = await serve(call, record)
    except RejectedRequest as exc:
        return _rejected(record, exc, invalid)
    return render(call, "ok", payload)


def _rejected(record: CallRecord, rejection: RejectedRequest, invalid: InvalidShape) -> web.StreamResponse:
    record.outcome = "invalid_argument"
    status, body, headers = invalid(rejection)
    return web.json_response(body, status=status, headers=headers)
