"""The Gemini API surface google-genai calls: ``POST /v1beta/models/{model}:generateContent``.

The API key comes in ``x-goog-api-key`` (or ``?key=``). ``generationConfig.responseModalities`` holding
``IMAGE`` makes an image call (``imageConfig.aspectRatio`` / ``imageSize``), otherwise a vision call
answering JSON text. Answers are ``GenerateContentResponse`` JSON (``candidates[].content.parts[]`` with
``inlineData`` or ``text``, ``finishReason``, ``usageMetadata``: a successful answer's by the documented
token counts, :mod:`simulators.ai.usage`).

A model it does not serve in that role (:class:`simulators.ai.state.ModelBook`) is the API's 404
``NOT_FOUND``. Refused with 400 ``INVALID_ARGUMENT``, as the API does: no ``contents``; inline data over
20 MB per request (REFERENCE.md "Gemini"); an ``imageConfig.aspectRatio`` or ``imageSize`` outside the
documented values (``ImageConfig`` in googleapis/js-genai: 1:1, 2:3, 3:2, 3:4, 4:3, 4:5, 5:4, 9:16, 16:9,
21:9; 1K, 2K, 4K).
"""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

from aiohttp import web

from simulators.ai.handling import NOT_AN_IMAGE, Call, RejectedRequest, Served, serve_call
from simulators.ai.state import SimState
from simulators.ai.usage import gemini_usage_metadata
from simulators.ai.wire import gemini_error, gemini_invalid

__all__ = ["GeminiApi"]

_IMAGE_TOKENS = {"1K": 1290, "2K": 1290, "4K": 2000}
_ASPECT_RATIOS = ("1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9")
#: Inline data per request (bytes): "about 20 MB", 20 MiB as the API counts it.
MAX_INLINE_BYTES = 20 * 1024 * 1024
#: The content kinds Gemini answers with a candidate's ``finishReason`` and no content (``safety`` and
#: ``content_policy`` are ``IMAGE_SAFETY`` on an image call; on a vision call, a blocked prompt).
_FINISH_REASON = {
    "safety": "IMAGE_SAFETY",
    "content_policy": "IMAGE_SAFETY",
    "finish_safety": "SAFETY",
    "prohibited_content": "PROHIBITED_CONTENT",
    "image_prohibited_content": "IMAGE_PROHIBITED_CONTENT",
    "blocklist": "BLOCKLIST",
    "spii": "SPII",
}


def _b64(data: str) -> bytes:
    """Standard or URL-safe base64 (google-genai sends URL-safe; the API takes both)."""
    return base64.b64decode(data.replace("-", "+").replace("_", "/") + "=" * (-len(data) % 4))


def _image_parts(body: dict[str, Any]) -> tuple[str, list[bytes]]:
    texts: list[str] = []
    images: list[bytes] = []
    for content in body.get("contents", []):
        for part in content.get("parts", []):
            if "text" in part:
                texts.append(str(part["text"]))
            blob = part.get("inlineData") or part.get("inline_data")
            if blob and blob.get("data"):
                images.append(_b64(str(blob["data"])))
    return "\n".join(texts), images


def _rejection(
    body: dict[str, Any], images: list[bytes], image_config: dict[str, Any]
) -> RejectedRequest | None:
    """What the API would refuse in this request, if anything."""
    if not body.get("contents"):
        return RejectedRequest("* GenerateContentRequest.contents: contents is not specified")
    if sum(len(data) for data in images) > MAX_INLINE_BYTES:
        return RejectedRequest(f"Request payload size exceeds the limit: {MAX_INLINE_BYTES} bytes.")
    aspect = image_config.get("aspectRatio")
    if aspect is not None and aspect not in _ASPECT_RATIOS:
        return RejectedRequest(
            f"Unsupported aspect ratio {aspect!r}; supported: {', '.join(_ASPECT_RATIOS)}."
        )
    size = image_config.get("imageSize")
    if size is not None and size not in _IMAGE_TOKENS:
        return RejectedRequest(f"Unsupported image size {size!r}; supported: {', '.join(_IMAGE_TOKENS)}.")
    return None


def _response(
    model: str, parts: list[dict[str, Any]], finish: str, prompt_tokens: int, out_tokens: int
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"finishReason": finish, "index": 0}
    if parts:
        candidate["content"] = {"role": "model", "parts": parts}
    return {
        "candidates": [candidate],
        "usageMetadata": {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": out_tokens,
            "totalTokenCount": prompt_tokens + out_tokens,
        },
        "modelVersion": model,
        "responseId": uuid.uuid4().hex[:20],
    }


class GeminiApi:
    """The ``generateContent`` route bound to a simulator's state and drawing function."""

    def __init__(self, state: SimState, serve: Served, accepts: Any) -> None:
        self._state = state
        self._serve = serve
        self._accepts = accepts

    def add_routes(self, router: web.UrlDispatcher) -> None:
        """Register ``/v1beta/models/{model_action}`` (and ``/v1/…``)."""
        router.add_post("/v1beta/models/{model_action}", self.generate_content)
        router.add_post("/v1/models/{model_action}", self.generate_content)

    async def generate_content(self, request: web.Request) -> web.StreamResponse:
        """``models/{model}:generateContent``."""
        model, _, action = request.match_info["model_action"].partition(":")
        if action != "generateContent":
            missing = {"code": 404, "message": f"method {action} not found", "status": "NOT_FOUND"}
            return web.json_response({"error": missing}, status=404)
        key = request.headers.get("x-goog-api-key") or request.query.get("key")
        body = await request.json()
        config = body.get("generationConfig", {})
        prompt, images = _image_parts(body)
        image_config = config.get("imageConfig", {})
        is_image = "IMAGE" in [m.upper() for m in config.get("responseModalities", [])]
        models = self._state.models
        serves = {role: models.exists("gemini", model, role) for role in ("image", "vision")}
        rejection = _rejection(body, images, image_config if is_image else {})
        if is_image and not serves["image"] and serves["vision"] and rejection is None:
            # A text model asked for images: 400 INVALID_ARGUMENT (the text is not verified here,
            # docs/contract-audit.md "Not verifiable here").
            rejection = RejectedRequest("Model does not support the requested response modalities: image")
        call = Call(
            provider="gemini",
            model=model,
            # an image model also answers text (the vision calls); a model in neither role is a 404
            exists=serves["image"] or serves["vision"],
            call="image" if is_image else "vision",
            prompt=prompt,
            images=images,
            size=image_config.get("imageSize"),
            aspect=image_config.get("aspectRatio"),
            authorised=self._accepts(key),
            rejection=rejection,
        )
        return await serve_call(
            request,
            self._state,
            call,
            self._serve,
            render=self._render,
            error=gemini_error,
            invalid=gemini_invalid,
        )

    @staticmethod
    def _render(call: Call, kind: str, payload: bytes | dict[str, Any] | None) -> web.Response:
        prompt_tokens = 258 * len(call.images) + len(call.prompt) // 4
        if kind == "prompt_blocked" or (kind in ("safety", "content_policy") and call.call == "vision"):
            reason = "PROHIBITED_CONTENT" if kind == "prompt_blocked" else "SAFETY"
            return web.json_response(
                {
                    "promptFeedback": {"blockReason": reason},
                    "usageMetadata": {"promptTokenCount": prompt_tokens, "totalTokenCount": prompt_tokens},
                    "modelVersion": call.model,
                }
            )
        if kind in _FINISH_REASON:
            body = _response(call.model, [], _FINISH_REASON[kind], prompt_tokens, 0)
            if kind == "finish_safety":
                body["candidates"][0]["safetyRatings"] = [
                    {"category": "HARM_CATEGORY_SEXUALLY_EXPLICIT", "probability": "MEDIUM", "blocked": True}
                ]
            return web.json_response(body)
        if kind == "not_image" and call.call == "image":
            part = {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(NOT_AN_IMAGE).decode()}}
            return web.json_response(_response(call.model, [part], "STOP", prompt_tokens, 1290))
        if kind in ("no_image", "not_image", "refusal"):
            text = (
                "I can't help with that image."
                if call.call == "image"
                else "Sorry, I cannot describe people."
            )
            finish = "STOP" if kind == "refusal" or call.call == "vision" else "NO_IMAGE"
            return web.json_response(_response(call.model, [{"text": text}], finish, prompt_tokens, 12))
        if isinstance(payload, bytes):
            part = {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(payload).decode()}}
            body = _response(call.model, [part], "STOP", 0, 0)
            body["usageMetadata"] = gemini_usage_metadata(
                call.prompt, call.images, image_size=call.size or "1K"
            )
            return web.json_response(body)
        text = json.dumps(payload)
        body = _response(call.model, [{"text": text}], "STOP", 0, 0)
        body["usageMetadata"] = gemini_usage_metadata(call.prompt, call.images, output_text=text)
        return web.json_response(body)
