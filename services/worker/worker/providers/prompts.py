"""The prompts of every call kind, built from structured requests (spec/002 "Steps" and "How the
variants differ": the anchor as image 1 and a ``HARD LOCKS`` block in the consistency path, a
``COLOR LOCK`` block in hybrid), and :func:`parse_image_prompt`, which reads an image prompt back into
its :class:`DrawSpec` the way a model reads it (the AI provider simulator draws from that).

The first line names the task (``STICKER SHEET``, ``HEAD SHEET``, ``ANCHOR PORTRAIT``, ``SINGLE
FIGURE``); the grid is ``a grid of C columns x R rows``; the outfit is ``Outfit [id]: …``; figures are
numbered lines ``N. [pose] description``; references are ``Image N: <role text>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cartoon.grammar import (
    VISION_TASKS,
    DrawSpec,
    ImageKind,
    ImageRole,
    figure_line,
    grid_text,
    image_line,
    outfit_line,
    task_line,
)
from shared.outfits import Outfit
from worker.providers.answers import Passport

__all__ = [
    "POSE_TEXT",
    "ColourLock",
    "image_prompt",
    "vision_prompt",
]

STYLE_TEXT = {
    "cute_cartoon": (
        "cute chibi cartoon sticker art: a big head (about 40 % of the height), clean bold dark outlines, "
        "flat cel shading, bright saturated colours"
    ),
}
#: What each pose of :data:`cartoon.poses.POSES` shows, for the model.
POSE_TEXT = {
    "neutral": "standing straight, facing forward, arms relaxed at the sides, a friendly smile",
    "waving": "waving hello with one hand raised high, a happy smile",
    "thumbs_up": "giving a big thumbs up, confident grin",
    "heart": "holding a big red heart in front of the chest, blushing",
    "party": "celebrating with a party popper, confetti in the air",
    "ok": "making an OK sign with one hand, cheerful",
    "laughing": "laughing out loud with tears of joy, a 'HAHA' speech bubble",
    "cool": "arms crossed, wearing dark sunglasses, cool and confident",
    "thinking": "thinking, finger on the chin, head tilted, a question mark",
    "surprised": "surprised, both hands up, mouth open in an O, exclamation marks",
    "sleeping": "sleeping while standing, eyes closed, head tilted, 'Zzz'",
    "love": "in love, heart-shaped eyes, small hearts around",
    "victory": "victory pose with a peace sign, holding the outfit's signature prop",
}
_BACKGROUND = (
    "Background: one flat, pure chroma-key green #00FF00 everywhere behind the figures: no gradient, no "
    "floor, no cast shadows, no vignette; nothing else in the image is this green."
)
_LAYOUT = (
    "Layout: every figure complete (head to feet) and centred in its own cell, with a clear gap of "
    "background between figures and a margin to the image edges; no text outside speech bubbles, no "
    "frames, no cell borders."
)


@dataclass(frozen=True, slots=True)
class ColourLock:
    """Hybrid's colour lock: the skin and hair colours every figure must use (``#RRGGBB``)."""

    skin_hex: str
    hair_hex: str | None


def _character(passport: Passport | None) -> str:
    text = (
        "Character: the guest from the reference images, drawn as a cartoon that is clearly the same "
        "person: same face shape, hairstyle, hair length and colour, skin tone, facial hair, glasses and age."
    )
    if passport is None:
        return text
    details = [f"skin tone {passport.skin_tone_hex}"]
    if passport.hair_color_hex:
        details.append(f"hair colour {passport.hair_color_hex}")
    if passport.hair_length != "unknown":
        details.append(f"{passport.hair_length} hair")
    if passport.facial_hair not in ("unknown", "none"):
        details.append(passport.facial_hair)
    details.append("glasses" if passport.glasses else "no glasses")
    if passport.age_band != "unknown":
        details.append(f"age: {passport.age_band}")
    return f"{text} Appearance: {', '.join(details)}."


def _hard_locks(passport: Passport | None) -> str:
    lines = [
        "HARD LOCKS (identical in every figure, never change them):",
        "- the face of the anchor portrait: shape, eyes, nose, mouth, proportions;",
        "- hairstyle, hair length and hair colour of the anchor portrait;",
        "- skin tone of the anchor portrait, the same on face and hands;",
        "- facial hair and glasses exactly as in the anchor portrait;",
        "- the outfit and its colours exactly as in the anchor portrait.",
    ]
    if passport is not None:
        lines.append(
            f"- skin {passport.skin_tone_hex}; hair {passport.hair_color_hex or 'as in the anchor'}."
        )
    return "\n".join(lines)


#: Cells from which a sheet is the one-sheet layout (``1x12``) and its prompt adds :data:`_ROOM`.
ONE_SHEET_CELLS = 12
#: The one-sheet layout's grid line (issue 12): twelve figures crowd a sheet, and a figure touching its
#: cell's edge or a neighbour leaves no room for the die-cut outline (it is regenerated).
_ROOM = (
    "Grid: {cols} equal square cells across and {rows} down, one figure per cell, each figure at most "
    "about 85 % of its cell's height and width with green on all four sides, never touching the cell "
    "edge or a neighbouring figure."
)


def _colour_lock(lock: ColourLock) -> str:
    hair = f"hair exactly {lock.hair_hex}" if lock.hair_hex else "hair exactly as in the selfie"
    return (
        f"COLOR LOCK: skin exactly {lock.skin_hex} on face, neck and hands in every figure; {hair}; no "
        "green tint anywhere on the figures."
    )


def image_prompt(
    kind: ImageKind,
    spec: DrawSpec,
    *,
    outfit: Outfit,
    art_style: str,
    roles: Sequence[ImageRole],
    aspect: str,
    passport: Passport | None = None,
    hard_locks: bool = False,
    colour_lock: ColourLock | None = None,
) -> str:
    """The prompt of an image request.

    Args:
        kind: ``sheet``, ``heads``, ``anchor`` or ``figure``.
        spec: grid, outfit and poses (``spec.poses`` in reading order; ``""`` = leave that cell empty).
        outfit: the outfit (its ``prompt`` is quoted).
        art_style: ``ART_STYLE`` (``cute_cartoon``); an unknown style is quoted as given.
        roles: the roles of the attached images, in order (``Image 1`` is ``roles[0]``).
        aspect: the image's aspect ratio (``1:1``, ``3:2``, ``2:3``, ``4:3``).
        passport: the appearance passport, when there is one.
        hard_locks: add the consistency path's ``HARD LOCKS`` block.
        colour_lock: add hybrid's ``COLOR LOCK`` block.
    """
    lines = [
        task_line(kind, spec, aspect),
        f"Style: {STYLE_TEXT.get(art_style, art_style)}.",
        _character(passport),
        outfit_line(outfit.id, outfit.prompt),
    ]
    if kind == "heads":
        lines.append(
            "Draw only the head with hair and the outfit's headwear: no neck, no body; facing forward, "
            "each head the same size, expressions:"
        )
    elif kind in ("anchor", "figure"):
        lines.append("One full-body figure, centred, filling about 80 % of the image height:")
    else:
        lines.append("Figures, in reading order (left to right, top to bottom):")
    for number, pose in enumerate(spec.poses, start=1):
        lines.append(figure_line(number, pose, POSE_TEXT.get(pose, pose)))
    lines.append(_LAYOUT)
    if spec.cols * spec.rows >= ONE_SHEET_CELLS:
        lines.append(_ROOM.format(cols=spec.cols, rows=spec.rows))
    lines.append(_BACKGROUND)
    if roles:
        lines.append("References:")
        lines += [image_line(n, role) for n, role in enumerate(roles, start=1)]
    if hard_locks:
        lines.append(_hard_locks(passport))
    if colour_lock is not None:
        lines.append(_colour_lock(colour_lock))
    return "\n".join(lines)


def vision_prompt(kind: str, *, reference: str = "", count: int = 0, grid: tuple[int, int] = (4, 3)) -> str:
    """The prompt of a vision request.

    Args:
        kind: ``passport``, ``verify``, ``sheet_qa`` or ``pack_qa``.
        reference: for QA, what image 1 is (``the anchor portrait`` or ``the guest's selfie``).
        count: for QA, how many stickers the contact sheets show.
        grid: for QA, the contact sheets' (columns, rows).
    """
    task = VISION_TASKS[kind]
    if kind == "passport":
        return (
            f"{task}: describe the person in Image 1 for a cartoon artist. Answer with JSON only: "
            "skin_tone_hex (#RRGGBB of the lit cheek), hair_color_hex (#RRGGBB), hair_length (bald, short, "
            "medium, long), facial_hair (none, stubble, moustache, beard), age_band (child, teen, adult, "
            "senior), glasses (true/false), face_box [x, y, w, h] as fractions of the image width and height."
        )
    if kind == "verify":
        return (
            f"{task}: Image 1 is a cartoon portrait meant to show the person in Image 2 (a photo). Compare "
            "hair length, hair colour, facial hair and glasses only (the style differs on purpose). Answer "
            "with JSON only: match (true when all four agree), mismatches (the ones that differ)."
        )
    cols, rows = grid
    return (
        f"{task}: Image 1 is {reference}. The next images are contact sheets of {count} cartoon stickers "
        f"in {grid_text(cols, rows)}, numbered from 1 in reading order across the sheets. "
        "Which stickers do not look like the same person as Image 1? Judge hair length, hair colour, skin "
        "tone, face shape and facial hair only; ignore pose, expression, props and style. Answer with JSON "
        "only: outliers, a list of {index, reasons}; an empty list when all match."
    )
