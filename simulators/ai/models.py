"""The providers' "get one model" endpoints, which the preflight asks whether a configured model exists.

Known models are the simulator's :class:`simulators.ai.state.ModelBook`, the same the generation routes
answer from: :data:`shared.ai_models.CATALOGUE` (the one list of models this product may call) less the
models whose announced shutdown has come (from that day the real APIs answer 404 for the model,
platform.openai.com/docs/deprecations), plus what tests add, less what they retire (``POST /sim/models``).

- OpenAI ``GET /v1/models/{model}`` (``client.models.retrieve``; openai 3.51.0 ``resources/models.py``
  requests ``/models/{model}`` under the base URL ``…/v1``) answers the ``Model`` object
  (``openai/types/model.py``: ``id``, ``object`` ``"model"``, ``created`` Unix seconds, ``owned_by``,
  ``shutdown_date`` or null). An unknown model is 404 ``invalid_request_error`` ``model_not_found`` with
  ``param`` ``model`` (the API's error object, platform.openai.com/docs/guides/error-codes); a missing
  or wrong key 401 ``invalid_api_key``, as on every other route.
- Gemini ``GET /v1/models/{name}`` (``client.aio.models.get``; google-genai 3.3.0 ``models.py``
  ``_GetModelParameters_to_mldev`` puts ``models/<name>`` on the path, under the client's
  ``api_version``: ``v1`` by default, ``_api_client.py`` ``GOOGLE_AI_API_DEFAULT_VERSION``, or ``v1beta``
  with ``GOOGLE_GENAI_API_VERSION=beta``; both are served) answers the ``Model`` resource
  (ai.google.dev/api/models#Model: ``name`` ``models/<id>``, ``version``, ``displayName``,
  ``description``, ``inputTokenLimit``, ``outputTokenLimit``, ``supportedGenerationMethods``,
  ``temperature``, ``maxTemperature``, ``topP``, ``topK``). An unknown
  model is 404 ``NOT_FOUND`` (google.rpc.Status); a wrong key 400 ``API_KEY_INVALID`` as on
  ``generateContent``.

Both SDKs ask ``GET /v1/models/{model}`` of the one simulator: a request carrying Gemini's key header
``x-goog-api-key`` (or ``?key=``) is Gemini's, any other OpenAI's (``Authorization: Bearer``).
"""

from __future__ import annotations

from datetime import date
from typing import Any

from aiohttp import web

from shared.ai_models import CATALOGUE
from simulators.ai.state import ModelBook
from simulators.ai.wire import gemini_error, openai_error

__all__ = ["ModelsApi"]

#: ``Model.created`` of every simulated OpenAI model (2025-04-14, Unix seconds).
_CREATED = 1744588800


def _shutdown(provider: str, name: str) -> date | None:
    """The catalogue's announced shutdown of ``name`` at ``provider`` (either role), if any."""
    dates = [
        m.shutdown for m in CATALOGUE.values() if (m.provider, m.name) == (provider, name) and m.shutdown
    ]
    return min(dates) if dates else None


def _bearer(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    return header[7:].strip() if header.lower().startswith("bearer ") else None


class ModelsApi:
    """``GET`` one model, for OpenAI and Gemini; ``accepts`` decides which keys are valid."""

    def __init__(self, book: ModelBook, accepts: Any) -> None:
        self._book = book
        self._accepts = accepts

    def _roles(self, provider: str, model: str) -> list[str]:
        """The roles in which ``provider`` serves ``model`` today (the simulator's :class:`ModelBook`: the
        catalogue less models past their shutdown, plus what tests added, less what they retired)."""
        return [role for role in ("image", "vision") if self._book.exists(provider, model, role)]

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_get("/v1/models/{model}", self.either_model)
        router.add_get("/v1beta/models/{model}", self.gemini_model)

    async def either_model(self, request: web.Request) -> web.StreamResponse:
        """``/v1/models/{model}``: Gemini's when its key header is there, else OpenAI's."""
        if "x-goog-api-key" in request.headers or "key" in request.query:
            return await self.gemini_model(request)
        return await self.openai_model(request)

    async def openai_model(self, request: web.Request) -> web.StreamResponse:
        model = request.match_info["model"]
        if not self._accepts(_bearer(request)):
            status, body, headers = openai_error("auth", model, None)
            return web.json_response(body, status=status, headers=headers)
        if not self._roles("openai", model):
            body = {
                "error": {
                    "message": f"The model '{model}' does not exist",
                    "type": "invalid_request_error",
                    "param": "model",
                    "code": "model_not_found",
                }
            }
            return web.json_response(body, status=404)
        shutdown = _shutdown("openai", model)
        return web.json_response(
            {
                "id": model,
                "object": "model",
                "created": _CREATED,
                "owned_by": "system",
                "shutdown_date": shutdown.isoformat() if shutdown else None,
            }
        )

    async def gemini_model(self, request: web.Request) -> web.StreamResponse:
        model = request.match_info["model"]
        version = request.path.split("/")[1]
        key = request.headers.get("x-goog-api-key") or request.query.get("key")
        if not self._accepts(key):
            status, body, headers = gemini_error("auth", model, None)
            return web.json_response(body, status=status, headers=headers)
        roles = self._roles("gemini", model)
        if not roles:
            error = {
                "code": 404,
                "message": f"Model is not found: models/{model} for api version {version}",
                "status": "NOT_FOUND",
            }
            return web.json_response({"error": error}, status=404)
        image = "image" in roles
        return web.json_response(
            {
                "name": f"models/{model}",
                "version": "001",
                "displayName": model.replace("-", " ").title(),
                "description": "Simulated model (Sticker Booth AI simulator).",
                "inputTokenLimit": 32768 if image else 1048576,
                "outputTokenLimit": 32768 if image else 65536,
                "supportedGenerationMethods": ["generateContent", "countTokens"],
                "temperature": 1,
                "maxTemperature": 2,
                "topP": 0.95,
                "topK": 64,
            }
        )
