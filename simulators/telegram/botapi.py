"""The Bot API over HTTP: ``/bot<token>/<method>`` and ``/file/bot<token>/<file_path>``.

Every call is checked in Telegram's order (token -> 401 ``Unauthorized``; method -> 404 ``Not Found``), may be
hit by an injected fault (``faults``), is logged (``calls``) and answers ``{"ok": true, "result": ...}`` or
``{"ok": false, "error_code", "description", "parameters"}`` with HTTP status = ``error_code``
(core.telegram.org/bots/api#making-requests). GET and POST are both accepted, as Telegram does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from simulators.telegram.calls import CallRecord
from simulators.telegram.errors import NOT_FOUND, UNAUTHORIZED, BotApiError
from simulators.telegram.faults import FaultSpec
from simulators.telegram.methods import Answer, Method, method_table
from simulators.telegram.params import Params, read_params
from simulators.telegram.simulator import Simulator

_log = logging.getLogger(__name__)
#: What a request body over ``SimConfig.max_request_bytes`` is answered with (HTTP 413).
TOO_LARGE = "Request Entity Too Large"


@dataclass
class _Outcome:
    body: dict[str, Any] | None
    status: int = 200
    dropped: bool = False


def _success(result: Any) -> dict[str, Any]:
    if isinstance(result, Answer):
        return {"ok": True, "result": result.result, "description": result.description}
    return {"ok": True, "result": result}


def _target_chat(params: Params) -> int | None:
    """The chat a call is for: its ``chat_id`` (numeric), else the ``user_id`` of the sticker methods."""
    for name in ("chat_id", "user_id"):
        if params.has(name):
            value = params.integer(name)
            return value or None
    return None


def _sticker_count(params: Params) -> int:
    """How many stickers a call sends (its ``stickers`` JSON array; 0 when absent or malformed)."""
    try:
        stickers = json.loads(params.text("stickers") or "[]")
    except ValueError:
        return 0
    return len(stickers) if isinstance(stickers, list) else 0


def _dumps(body: Any) -> str:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


class BotApi:
    """Serves the Bot API of one simulator."""

    def __init__(self, sim: Simulator) -> None:
        self._sim = sim
        self._methods = method_table()

    def add_routes(self, router: web.UrlDispatcher) -> None:
        """Register the Bot API and file download routes."""
        router.add_route("*", "/bot{token}/{method}", self.handle_call)
        router.add_get("/file/bot{token}/{file_path:.+}", self.handle_file)

    async def handle_call(self, request: web.Request) -> web.StreamResponse:
        """One Bot API call."""
        sim = self._sim
        started = time.perf_counter()
        seq = sim.calls.next_seq()
        called = request.match_info["method"]
        method = self._methods.get(called.lower())
        params = Params({}, {})
        fault: FaultSpec | None = None
        held = None
        try:
            if request.match_info["token"] != sim.config.token:
                raise BotApiError(401, UNAUTHORIZED)
            if method is None:
                raise BotApiError(404, NOT_FOUND)
            # A declared length over the limit is refused before the body is read, as a front server
            # does; a chunked body is cut off by aiohttp's own limit while it is read.
            length = request.content_length
            if length is not None and length > sim.config.max_request_bytes:
                raise BotApiError(413, TOO_LARGE)
            try:
                params = await read_params(request)
            except web.HTTPRequestEntityTooLarge:
                raise BotApiError(413, TOO_LARGE) from None
            chat_id = _target_chat(params)
            held = sim.holds.refusal(method.name, chat_id)
            if held is not None:
                raise held
            fault = sim.faults.take(method.name, chat_id, _sticker_count(params), params.text("text"))
            if fault is not None and fault.hold:
                sim.holds.start(fault, method.name)
            outcome = await self._run(method, params, fault)
        except BotApiError as error:
            outcome = _Outcome(error.payload(), error.error_code)
        sim.touch()
        body = outcome.body or {}
        sim.calls.add(
            CallRecord(
                seq=seq,
                at=time.time(),
                method=method.name if method else called,
                params=params.loggable(),
                ok=bool(body.get("ok")),
                error_code=body.get("error_code"),
                description=body.get("description") if not body.get("ok") else None,
                fault="hold" if held is not None else fault.kind if fault else None,
                duration_ms=round((time.perf_counter() - started) * 1000, 2),
            )
        )
        if outcome.dropped:
            _log.info("dropping the connection of %s (injected fault)", method.name if method else called)
            if request.transport is not None:
                request.transport.close()
            return web.Response(status=500)
        return web.json_response(outcome.body, status=outcome.status, dumps=_dumps)

    async def _run(self, method: Method, params: Params, fault: FaultSpec | None) -> _Outcome:
        kind = fault.kind if fault else None
        if fault is not None and kind == "delay":
            await asyncio.sleep(fault.seconds)
        if fault is not None and kind == "error":
            raise fault.error()
        if kind == "drop":
            return _Outcome(None, dropped=True)
        result = await method.handler(self._sim, params)
        if fault is not None and kind == "incomplete" and isinstance(result, dict):
            result = {**result, "stickers": fault.visible(list(result.get("stickers", [])))}
        outcome = _Outcome(_success(result))
        if fault is not None and kind == "error_after_apply":
            raise fault.error()
        if fault is not None and kind == "delay_after_apply":
            await asyncio.sleep(fault.seconds)
        if kind == "drop_after_apply":
            outcome.dropped = True
        return outcome

    async def handle_file(self, request: web.Request) -> web.StreamResponse:
        """``GET /file/bot<token>/<file_path>``: the bytes of a file named by ``getFile``."""
        sim = self._sim
        if request.match_info["token"] != sim.config.token:
            return web.json_response(BotApiError(401, UNAUTHORIZED).payload(), status=401)
        path = request.match_info["file_path"]
        for record in sim.state.files.values():
            if record.file_path == path:
                data = sim.file_bytes(record)
                if data is not None:
                    return web.Response(body=data, content_type=record.mime_type)
        return web.json_response(BotApiError(404, NOT_FOUND).payload(), status=404)
