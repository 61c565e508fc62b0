"""The control API under ``/sim/``: script faults, latency, imperfect sheets and QA answers; read the call
log; reset. JSON in and out; a bad body is ``400 {"error": ...}``.

- ``POST /sim/faults`` (body :class:`simulators.ai.state.FaultSpec`), ``GET /sim/faults``,
  ``DELETE /sim/faults``.
- ``POST /sim/latency`` ``{"seconds", "image"?, "vision"?}``: added to every call (``image``/``vision``:
  to that kind of call instead).
- ``POST /sim/imperfections`` (body :class:`simulators.ai.state.ImperfectionSpec`): the next sheets.
- ``POST /sim/qa`` ``{"outliers": [{"index", "reasons"}], "count"}``: the next QA answers.
- ``POST /sim/verify`` ``{"mismatches": [...], "count"}``: the next anchor checks.
- ``GET /sim/calls``: every call (provider, model, call, kind, size, aspect, images, roles, outcome).
- ``GET /sim/in-flight``: ``{"now": {...}, "max": {...}}``, calls being answered now and the most at once
  since the last reset, by call type (``image``, ``vision``) and by ``provider:call``;
  ``DELETE /sim/in-flight`` starts the maxima again (also ``POST /sim/reset``).
- ``GET /sim/models``: the models served today (the catalogue less those past their shutdown date);
  ``POST /sim/models`` (body :class:`simulators.ai.state.ModelSpec`): add a model, or retire one
  (``exists: false``): its calls get the provider's 404.
- ``POST /sim/reset``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TypeVar

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from simulators.ai.state import FaultSpec, ImperfectionSpec, ModelSpec, ScriptedAnswer, SimState

__all__ = ["ControlApi"]

ModelT = TypeVar("ModelT", bound=BaseModel)


class LatencyIn(BaseModel):
    """Body of ``POST /sim/latency``: ``seconds`` for every call; ``image`` / ``vision`` for that kind of
    call instead (omitted: that kind follows ``seconds``)."""

    model_config = ConfigDict(extra="forbid")

    seconds: float = Field(0.0, ge=0, le=600)
    image: float | None = Field(None, ge=0, le=600)
    vision: float | None = Field(None, ge=0, le=600)


async def _body(request: web.Request, model: type[ModelT]) -> ModelT:
    try:
        return model.model_validate(await request.json())
    except (ValueError, ValidationError) as exc:
        raise web.HTTPBadRequest(
            text=json.dumps({"error": str(exc)[:500]}), content_type="application/json"
        ) from exc


class ControlApi:
    """The ``/sim/`` routes of one simulator state."""

    def __init__(self, state: SimState) -> None:
        self._state = state

    def add_routes(self, router: web.UrlDispatcher) -> None:
        """Register the control routes."""
        routes: list[tuple[str, str, Callable[[web.Request], Awaitable[web.StreamResponse]]]] = [
            ("POST", "/sim/faults", self.add_fault),
            ("GET", "/sim/faults", self.faults),
            ("DELETE", "/sim/faults", self.clear_faults),
            ("POST", "/sim/latency", self.latency),
            ("POST", "/sim/imperfections", self.imperfections),
            ("POST", "/sim/qa", self.qa),
            ("POST", "/sim/verify", self.verify),
            ("GET", "/sim/calls", self.calls),
            ("GET", "/sim/in-flight", self.in_flight),
            ("DELETE", "/sim/in-flight", self.forget_in_flight),
            ("GET", "/sim/models", self.models),
            ("POST", "/sim/models", self.set_model),
            ("POST", "/sim/reset", self.reset),
        ]
        for method, path, handler in routes:
            router.add_route(method, path, handler)

    async def add_fault(self, request: web.Request) -> web.StreamResponse:
        self._state.faults.append(await _body(request, FaultSpec))
        return await self.faults(request)

    async def faults(self, request: web.Request) -> web.StreamResponse:
        return web.json_response([f.model_dump() for f in self._state.faults])

    async def clear_faults(self, request: web.Request) -> web.StreamResponse:
        self._state.faults.clear()
        return web.json_response([])

    async def latency(self, request: web.Request) -> web.StreamResponse:
        body = await _body(request, LatencyIn)
        self._state.latency_s = body.seconds
        given = {"image": body.image, "vision": body.vision}
        self._state.call_latency_s = {call: s for call, s in given.items() if s is not None}
        return web.json_response({"seconds": self._state.latency_s, **self._state.call_latency_s})

    async def imperfections(self, request: web.Request) -> web.StreamResponse:
        self._state.imperfections.append(await _body(request, ImperfectionSpec))
        return web.json_response([i.model_dump() for i in self._state.imperfections])

    async def qa(self, request: web.Request) -> web.StreamResponse:
        self._state.qa.append(await _body(request, ScriptedAnswer))
        return web.json_response({"queued": len(self._state.qa)})

    async def verify(self, request: web.Request) -> web.StreamResponse:
        self._state.verify.append(await _body(request, ScriptedAnswer))
        return web.json_response({"queued": len(self._state.verify)})

    async def calls(self, request: web.Request) -> web.StreamResponse:
        return web.json_response([c.model_dump() for c in self._state.calls])

    async def in_flight(self, request: web.Request) -> web.StreamResponse:
        return web.json_response({"now": self._state.in_flight, "max": self._state.max_in_flight})

    async def forget_in_flight(self, request: web.Request) -> web.StreamResponse:
        self._state.forget_max_in_flight()
        return await self.in_flight(request)

    async def models(self, request: web.Request) -> web.StreamResponse:
        return web.json_response(self._state.models.listing())

    async def set_model(self, request: web.Request) -> web.StreamResponse:
        spec = await _body(request, ModelSpec)
        self._state.models.set(spec.provider, spec.name, spec.role, exists=spec.exists)
        return await self.models(request)

    async def reset(self, request: web.Request) -> web.StreamResponse:
        self._state.reset()
        return web.json_response({"ok": True})
