"""What the real providers refuse before any model runs, per model: a model that does not exist (or is past
its shutdown), and a parameter or value a model rejects. Each rule cites its source beside it.

Which models exist is :class:`simulators.ai.state.ModelBook` (the catalogue, provider and role aware, less
the models past their shutdown date; tests add or retire models through ``POST /sim/models``).

A refused request is a :class:`simulators.ai.handling.RejectedRequest` carrying the provider's status,
type and code; :mod:`simulators.ai.wire` renders it in the provider's body.
"""

from __future__ import annotations

import re
from typing import Any

from simulators.ai.handling import RejectedRequest

__all__ = [
    "HIGH_FIDELITY",
    "openai_image_rejection",
    "responses_rejection",
]


# --- OpenAI images (openai 3.51.0 types/image_edit_params.py, types/image_generate_params.py) -----------

#: "Supports `high` and `low` on `gpt-image-1.5`; `gpt-image-1-mini` supports only `low`. For
#: `gpt-image-2`, omit this parameter." (image_edit_params.py ``input_fidelity``)
HIGH_FIDELITY = frozenset({"gpt-image-1.5"})
_LOW_FIDELITY_ONLY = frozenset({"gpt-image-1-mini"})
#: "arbitrary resolutions are supported as `WIDTHxHEIGHT` strings … Width and height must both be divisible
#: by 16 and the requested aspect ratio must be between 1:3 and 3:1 … the maximum supported resolution is
#: `3840x2160`" for these models (``size``); the others take the standard sizes and ``auto``.
_ANY_SIZE = frozenset(
    {
        "gpt-image-2",
        "gpt-image-2-2026-04-21",
        "gpt-image-2.5-sunburst",
        "gpt-image-2.5-sunburst-2026-09-08",
        "gpt-image-2.5-flare",
        "gpt-image-2.5-flare-2026-09-08",
    }
)
_STANDARD_SIZES = ("1024x1024", "1536x1024", "1024x1536")
#: "The GPT image models support `low`, `medium`, and `high`. `gpt-image-2.5-sunburst` and
#: `gpt-image-2.5-flare`, including their `2026-09-08` snapshots, also support `xhigh` and `max`."
_QUALITIES = ("low", "medium", "high", "auto")
_XHIGH = frozenset(
    {
        "gpt-image-2.5-sunburst",
        "gpt-image-2.5-sunburst-2026-09-08",
        "gpt-image-2.5-flare",
        "gpt-image-2.5-flare-2026-09-08",
    }
)
#: ``background``: "Must be one of `transparent`, `opaque`, or `auto` … When using `transparent`, set the
#: output format to `png` or `webp`."; ``output_format`` png, webp, jpeg (gif and svg need preview access);
#: ``moderation`` (generations only): "Must be either `low` … or `auto`"; ``n``: "between 1 and 10".
_BACKGROUNDS = ("transparent", "opaque", "auto")
_FORMATS = ("png", "webp", "jpeg")
_MODERATION = ("low", "auto")


def _invalid_value(value: object, param: str, supported: tuple[str, ...]) -> RejectedRequest:
    """OpenAI's 400 ``invalid_value`` (the shape the simulator already answers for ``size``/``quality``;
    "Invalid value: 'x'. Supported values are: …")."""
    listed = "', '".join(supported[:-1])
    return RejectedRequest(
        f"Invalid value: '{value}'. Supported values are: '{listed}', and '{supported[-1]}'.",
        param=param,
        code="invalid_value",
    )


def _size_rejection(model: str, size: str) -> RejectedRequest | None:
    if size == "auto" or size in _STANDARD_SIZES:
        return None
    if model not in _ANY_SIZE:
        return _invalid_value(size, "size", (*_STANDARD_SIZES, "auto"))
    match = re.fullmatch(r"(\d+)x(\d+)", size)
    if match is None:
        return _invalid_value(size, "size", (*_STANDARD_SIZES, "auto"))
    width, height = int(match[1]), int(match[2])
    fits = (
        width % 16 == 0
        and height % 16 == 0
        and 1 / 3 <= width / max(1, height) <= 3
        and max(width, height) <= 3840
        and min(width, height) <= 2160
    )
    if fits:
        return None
    return RejectedRequest(
        f"Invalid size '{size}'. Width and height must both be divisible by 16, the aspect ratio between "
        "1:3 and 3:1, and the resolution at most 3840x2160.",
        param="size",
        code="invalid_value",
    )


def openai_image_rejection(model: str, fields: dict[str, Any], *, edit: bool) -> RejectedRequest | None:
    """A parameter or value ``model`` rejects on ``images.edit`` (``edit``) or ``images.generate``."""
    fidelity = fields.get("input_fidelity")
    low_only = model in _LOW_FIDELITY_ONLY and fidelity == "low"
    if edit and fidelity is not None and model not in HIGH_FIDELITY and not low_only:
        # The real answer: pydantic/pydantic-ai#5413 and vulca-org/vulca-visual-control-sdk#12 (curl
        # against api.openai.com, 2026-04-24): 400, type image_generation_user_error.
        return RejectedRequest(
            f"The model '{model}' does not support the 'input_fidelity' parameter.",
            param="input_fidelity",
            code="invalid_input_fidelity_model",
            error_type="image_generation_user_error",
        )
    quality = str(fields.get("quality", "auto"))
    qualities = (*_QUALITIES[:-1], "xhigh", "max", "auto") if model in _XHIGH else _QUALITIES
    if quality not in qualities:
        return _invalid_value(quality, "quality", qualities)
    size = _size_rejection(model, str(fields.get("size", "auto")))
    if size is not None:
        return size
    background = str(fields.get("background", "auto"))
    if background not in _BACKGROUNDS:
        return _invalid_value(background, "background", _BACKGROUNDS)
    output_format = str(fields.get("output_format", "png"))
    if output_format not in _FORMATS:
        return _invalid_value(output_format, "output_format", _FORMATS)
    if background == "transparent" and output_format not in ("png", "webp"):
        return _invalid_value(output_format, "output_format", ("png", "webp"))
    if not edit and str(fields.get("moderation", "auto")) not in _MODERATION:
        return _invalid_value(fields.get("moderation"), "moderation", _MODERATION)
    if edit and "moderation" in fields:
        # images.edit takes no ``moderation`` (image_edit_params.py has none); the API's answer to an
        # unknown parameter: 400 "Unknown parameter: 'x'." code unknown_parameter (not verified for this
        # endpoint, see docs/contract-audit.md).
        return RejectedRequest(
            "Unknown parameter: 'moderation'.", param="moderation", code="unknown_parameter"
        )
    try:
        n = int(fields.get("n", 1))
    except (TypeError, ValueError):
        n = 0
    if not 1 <= n <= 10:
        return RejectedRequest(
            f"Invalid 'n': integer below minimum value. Expected a value >= 1 and <= 10, got {n}.",
            param="n",
            code="integer_below_min_value" if n < 1 else "integer_above_max_value",
        )
    return None


# --- OpenAI responses (openai 3.51.0 types/responses/) ---------------------------------------------------

#: ``ResponseFormatTextJSONSchemaConfigParam.name``: "Must be a-z, A-Z, 0-9, or contain underscores and
#: dashes, with a maximum length of 64."
_FORMAT_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: ``ResponseInputImageParam.detail``: "One of `high`, `low`, `auto`, or `original`."
_DETAILS = ("high", "low", "auto", "original")


def _strict_violation(schema: Any, context: tuple[str, ...] = ()) -> str | None:
    """The first rule of strict structured outputs ``schema`` breaks: every object must say
    ``additionalProperties: false`` and list every property in ``required`` (the API's texts, e.g. "In
    context=(), 'additionalProperties' is required to be supplied and to be false." and "'required' is
    required to be supplied and to be an array including every key in properties", quoted in
    moeru-ai/xsai#145 and agentscope-ai/agentscope-java#2548)."""
    if not isinstance(schema, dict):
        return None
    types = schema.get("type")
    is_object = types == "object" or (isinstance(types, list) and "object" in types)
    if is_object:
        where = f"In context={context!r}, " if context else "In context=(), "
        if schema.get("additionalProperties") is not False:
            return f"{where}'additionalProperties' is required to be supplied and to be false."
        properties = schema.get("properties") or {}
        missing = [key for key in properties if key not in (schema.get("required") or [])]
        if missing:
            return (
                f"{where}'required' is required to be supplied and to be an array including every key in "
                f"properties. Missing '{missing[0]}'."
            )
        for key, sub in properties.items():
            found = _strict_violation(sub, (*context, "properties", key))
            if found:
                return found
    if "items" in schema:
        return _strict_violation(schema["items"], (*context, "items"))
    return None


def responses_rejection(body: dict[str, Any]) -> RejectedRequest | None:
    """What ``responses.create`` refuses in ``body`` (after the model's existence)."""
    fmt = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        # "Missing required parameter: 'text.format.name'." code missing_required_parameter
        # (vercel/ai#21202, the API's answer quoted there).
        for field in ("name", "schema"):
            if field not in fmt:
                return RejectedRequest(
                    f"Missing required parameter: 'text.format.{field}'.",
                    param=f"text.format.{field}",
                    code="missing_required_parameter",
                )
        if not _FORMAT_NAME.match(str(fmt["name"])):
            return RejectedRequest(
                "Invalid 'text.format.name': string does not match pattern. Expected a string that matches "
                "the pattern '^[a-zA-Z0-9_-]+$'.",
                param="text.format.name",
                code="invalid_value",
            )
        violation = _strict_violation(fmt["schema"]) if fmt.get("strict") else None
        if violation:
            # code null as quoted; the param the Responses API names is not verified (docs/contract-audit.md)
            return RejectedRequest(
                f"Invalid schema for response_format '{fmt['name']}': {violation}",
                param="text.format.schema",
                code=None,
            )
    for message in body.get("input", []) if isinstance(body.get("input"), list) else []:
        for part in message.get("content", []) if isinstance(message, dict) else []:
            if isinstance(part, dict) and part.get("type") == "input_image":
                detail = part.get("detail", "auto")
                if detail not in _DETAILS:
                    return _invalid_value(detail, "input[0].content.detail", _DETAILS)
    return None
