"""The structured answers of vision calls: their JSON schemas (sent to the providers) and the models
that validate them (spec/002 "Appearance passport", "Anchor", "Pack QA")."""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

__all__ = [
    "ANCHOR_CHECK_SCHEMA",
    "PASSPORT_SCHEMA",
    "QA_REASONS",
    "QA_SCHEMA",
    "AnchorCheck",
    "Outlier",
    "Passport",
    "QaAnswer",
    "parse_answer",
]

QA_REASONS = ("hair_length", "hair_color", "skin_tone", "face_shape", "facial_hair")
HEX = r"^#[0-9A-Fa-f]{6}$"
AnswerT = TypeVar("AnswerT", bound=BaseModel)


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Passport(_Answer):
    """The guest's appearance, as a vision model describes the selfie.

    ``face_box`` is (x, y, w, h) as fractions (0..1) of the selfie's width and height.
    """

    skin_tone_hex: str = Field(pattern=HEX)
    hair_color_hex: str | None = Field(None, pattern=HEX)
    hair_length: Literal["bald", "short", "medium", "long", "unknown"] = "unknown"
    facial_hair: Literal["none", "stubble", "moustache", "beard", "unknown"] = "unknown"
    age_band: Literal["child", "teen", "adult", "senior", "unknown"] = "unknown"
    glasses: bool = False
    face_box: tuple[float, float, float, float] | None = None

    @field_validator("face_box")
    @classmethod
    def _inside(
        cls, box: tuple[float, float, float, float] | None
    ) -> tuple[float, float, float, float] | None:
        if box is None:
            return None
        x, y, w, h = box
        if w <= 0 or h <= 0 or x < -0.05 or y < -0.05 or x + w > 1.05 or y + h > 1.05:
            return None  # a box outside the photo is no box
        return box


class AnchorCheck(_Answer):
    """Whether the anchor portrait shows the guest (hair length, hair colour, facial hair, glasses)."""

    match: bool
    mismatches: list[str] = Field(default_factory=list)


class Outlier(_Answer):
    """A sticker (1-based ``index`` in the contact sheet's reading order) that does not look like the
    reference, and why."""

    index: int = Field(ge=1)
    reasons: list[str] = Field(default_factory=list)


class QaAnswer(_Answer):
    """Pack or sheet QA: the outliers (none = accepted)."""

    outliers: list[Outlier] = Field(default_factory=list)


def _enum(values: tuple[str, ...]) -> dict[str, Any]:
    return {"type": "string", "enum": list(values)}


PASSPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "skin_tone_hex": {"type": "string", "description": "#RRGGBB of the lit cheek"},
        "hair_color_hex": {"type": "string", "description": "#RRGGBB of the hair, lit part"},
        "hair_length": _enum(("bald", "short", "medium", "long")),
        "facial_hair": _enum(("none", "stubble", "moustache", "beard")),
        "age_band": _enum(("child", "teen", "adult", "senior")),
        "glasses": {"type": "boolean"},
        "face_box": {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4},
    },
    "required": ["skin_tone_hex", "hair_color_hex", "hair_length", "facial_hair", "age_band", "glasses"],
}
ANCHOR_CHECK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "match": {"type": "boolean"},
        "mismatches": {
            "type": "array",
            "items": _enum(("hair_length", "hair_color", "facial_hair", "glasses")),
        },
    },
    "required": ["match", "mismatches"],
}
QA_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "outliers": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "index": {"type": "integer"},
                    "reasons": {"type": "array", "items": _enum(QA_REASONS)},
                },
                "required": ["index", "reasons"],
            },
        }
    },
    "required": ["outliers"],
}


def parse_answer(model: type[AnswerT], data: dict[str, Any]) -> AnswerT | None:
    """``data`` validated as ``model``, or ``None`` when the model answered something else."""
    try:
        return model.model_validate(data)
    except ValidationError:
        return None
