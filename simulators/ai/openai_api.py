"""The OpenAI API surface the openai SDK calls: ``POST /v1/images/edits`` (multipart, one or more
``image`` files), ``POST /v1/images/generations`` (JSON) and ``POST /v1/responses`` (JSON, vision with
``input_image`` data URLs, answered as ``output_text``).

The API key comes as ``Authorization: Bearer <key>``. Image answers are ``ImagesResponse`` JSON
(``data[].b64_json``, ``size``, ``quality``, ``usage``); vision answers are ``Response`` objects; their
``usage`` follows the documented token counts (:mod:`simulators.ai.usage`).

Refused as the API does: a model it does not serve in that role (404 ``model_not_found``,
:class:`simulators.ai.state.ModelBook`); an image call without ``prompt``, an edit without ``image``
(400 ``missing_required_parameter``); a parameter or value the model rejects (``input_fidelity`` to a
model that does not take it, a ``quality``, ``size``, ``background``, ``output_format``, ``moderation``
or ``n`` outside the model's values: :func:`simulators.ai.rules.openai_image_rejection`); a
``responses`` call without ``model``, a ``text.format`` or ``detail`` it refuses
(:func:`simulators.ai.rules.responses_rejection`).

An image comes back at the shape of the size asked for, as gpt-image draws it: a drawing whose aspect
differs (the one-sheet 4 × 3 grid, drawn 2048 × 1536, asked for at ``1536x1024``) is resized to that size,
cells and all; a drawing of the same aspect keeps its pixels.
"""

from __future__ import annotations

import base64
import io
import json
import time
import uuid
from typing import Any

from aiohttp import web
from PIL import Image

from simulators.ai.handling import NOT_AN_IMAGE, Call, RejectedRequest, Served, serve_call
from simulators.ai.rules import openai_image_rejection, responses_rejection
from simulators.ai.state import CONTENT_KINDS, SimState
from simulators.ai.usage import openai_images_usage, openai_responses_usage
from simulators.ai.wire import openai_error, openai_invalid

__all__ = ["OpenAIApi"]

_ASPECT = {"1024x1024": "1:1", "1536x1024": "3:2", "1024x1536": "2:3"}


def _fit(png: bytes, size: str) -> bytes:
    """``png`` resized to ``size`` (``WxH``) when its aspect differs from it by more than 2 %."""
    if "x" not in size:
        return png
    width, height = (int(v) for v in size.split("x"))
    with Image.open(io.BytesIO(png)) as image:
        if abs(image.width / image.height - width / height) <= 0.02 * (width / height):
            return png
        resized = image.convert("RGB").resize((width, height), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    resized.save(out, format="PNG", compress_level=1)
    return out.getvalue()


def _missing(param: str) -> RejectedRequest:
    return RejectedRequest(
        f"Missing required parameter: '{param}'.", param=param, code="missing_required_parameter"
    )


def _image_rejection(fields: dict[str, Any], images: list[bytes], *, edit: bool) -> RejectedRequest | None:
    """What the image API refuses: no prompt, an edit without an image, a parameter or value the model
    rejects (:func:`simulators.ai.rules.openai_image_rejection`)."""
    if not str(fields.get("prompt") or ""):
        return _missing("prompt")
    if edit and not images:
        return _missing("image")
    return openai_image_rejection(str(fields.get("model", "gpt-image-2")), fields, edit=edit)


def _bearer(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    return header[7:].strip() if header.lower().startswith("bearer ") else None


def _data_url_bytes(url: str) -> bytes | None:
    if not url.startswith("data:") or "," not in url:
        return None
    return base64.b64decode(url.split(",", 1)[1])


class OpenAIApi:
    """The image and responses routes bound to a simulator's state and drawing function."""

    def __init__(self, state: SimState, serve: Served, accepts: Any) -> None:
        self._state = state
        self._serve = serve
        self._accepts = accepts

    def add_routes(self, router: web.UrlDispatcher) -> None:
        """Register ``/v1/images/edits``, ``/v1/images/generations`` and ``/v1/responses``."""
        router.add_post("/v1/images/edits", self.images_edit)
        router.add_post("/v1/images/generations", self.images_generate)
        router.add_post("/v1/responses", self.responses)

    async def images_edit(self, request: web.Request) -> web.StreamResponse:
        """``images.edit``: multipart form with ``image`` (or ``image[]``) files and the prompt."""
        form = await request.post()
        images = [
            field.file.read()
            for name, field in form.items()
            if name.startswith("image") and isinstance(field, web.FileField)
        ]
        return await self._image(request, dict(form), images, edit=True)

    async def images_generate(self, request: web.Request) -> web.StreamResponse:
        """``images.generate``: JSON with the prompt and no images."""
        return await self._image(request, await request.json(), [], edit=False)

    async def _image(
        self, request: web.Request, fields: dict[str, Any], images: list[bytes], *, edit: bool
    ) -> web.StreamResponse:
        size = str(fields.get("size", "1024x1024"))
        quality = str(fields.get("quality", "auto"))
        model = str(fields.get("model", "gpt-image-2"))
        call = Call(
            provider="openai",
            model=model,
            exists=self._state.models.exists("openai", model, "image"),
            call="image",
            prompt=str(fields.get("prompt", "")),
            images=images,
            size="2K" if quality == "high" else "1K",
            aspect=_ASPECT.get(size, "1:1"),
            authorised=self._accepts(_bearer(request)),
            rejection=_image_rejection(fields, images, edit=edit),
        )

        def render(call: Call, kind: str, payload: bytes | dict[str, Any] | None) -> web.Response:
            item: dict[str, Any] = {}
            if isinstance(payload, bytes) and kind == "ok":
                item["b64_json"] = base64.b64encode(_fit(payload, size)).decode()
            elif kind == "not_image":
                item["b64_json"] = base64.b64encode(NOT_AN_IMAGE).decode()
            return web.json_response(
                {
                    "created": int(time.time()),
                    "data": [item],
                    "background": "opaque",
                    "output_format": "png",
                    "quality": quality,
                    "size": size,
                    "usage": openai_images_usage(call.prompt, call.images, size=size, quality=quality),
                }
            )

        return await serve_call(
            request, self._state, call, self._serve, render=render, error=openai_error, invalid=openai_invalid
        )

    async def responses(self, request: web.Request) -> web.StreamResponse:
        """``responses.create`` with text and ``input_image`` parts; answers JSON as ``output_text``."""
        body = await request.json()
        texts: list[str] = []
        images: list[bytes] = []
        for message in body.get("input", []) if isinstance(body.get("input"), list) else []:
            for part in message.get("content", []) if isinstance(message, dict) else []:
                if part.get("type") == "input_text":
                    texts.append(str(part.get("text", "")))
                elif part.get("type") == "input_image":
                    data = _data_url_bytes(str(part.get("image_url", "")))
                    if data is not None:
                        images.append(data)
        model = str(body.get("model", ""))
        call = Call(
            provider="openai",
            model=model,
            exists=not model or self._state.models.exists("openai", model, "vision"),
            call="vision",
            prompt="\n".join(texts),
            images=images,
            authorised=self._accepts(_bearer(request)),
            rejection=responses_rejection(body) if model else _missing("model"),
        )

        def render(call: Call, kind: str, payload: bytes | dict[str, Any] | None) -> web.Response:
            content: list[dict[str, Any]]
            if kind == "refusal" or kind in CONTENT_KINDS:
                content = [{"type": "refusal", "refusal": "I'm sorry, I can't help with that."}]
            elif kind in ("no_image", "not_image"):
                content = [{"type": "output_text", "text": "The person looks happy.", "annotations": []}]
            else:
                content = [{"type": "output_text", "text": json.dumps(payload), "annotations": []}]
            said = "".join(str(part.get("text") or part.get("refusal") or "") for part in content)
            return web.json_response(
                {
                    "id": f"resp_{uuid.uuid4().hex}",
                    "object": "response",
                    "created_at": int(time.time()),
                    "status": "completed",
                    "model": call.model,
                    "output": [
                        {
                            "id": f"msg_{uuid.uuid4().hex}",
                            "type": "message",
                            "status": "completed",
                            "role": "assistant",
                            "content": content,
                        }
                    ],
                    "parallel_tool_calls": True,
                    "tool_choice": "auto",
                    "tools": [],
                    "usage": openai_responses_usage(call.prompt, call.images, output_text=said),
                }
            )

        return await serve_call(
            request, self._state, call, self._serve, render=render, error=openai_error, invalid=openai_invalid
        )
