"""The structural lines of the sticker prompts: written by the worker's prompt builder
(:mod:`worker.providers.prompts`) and read back by the offline engine and the AI provider simulator
(:mod:`simulators.ai`) the way a model reads them.

An image prompt (spec/002 "Steps"):

- first line ``<TASK>: <n> <figures|heads> in a grid of C columns x R rows, one <aspect> image.``, the
  task one of ``STICKER SHEET``, ``HEAD SHEET``, ``ANCHOR PORTRAIT``, ``SINGLE FIGURE``;
- ``Outfit [<id>]: <outfit prompt>.``;
- one numbered line per grid cell in reading order, ``N. [<pose>] <description>`` (``N. []`` leaves the
  cell empty);
- ``Image N: <role text>.`` for each attached image.

A vision prompt's first word group is its task (``APPEARANCE PASSPORT``, ``ANCHOR CHECK``, ``SHEET QA``,
``PACK QA``); QA prompts add ``contact sheets of <n> cartoon stickers in a grid of C columns x R rows``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "IMAGE_TASKS",
    "ROLE_TEXT",
    "VISION_TASKS",
    "DrawSpec",
    "ImageKind",
    "ImageRole",
    "ParsedImagePrompt",
    "figure_line",
    "grid_text",
    "image_line",
    "outfit_line",
    "parse_image_prompt",
    "parse_vision_prompt",
    "task_line",
]

ImageKind = Literal["anchor", "sheet", "heads", "figure"]
ImageRole = Literal["selfie", "face", "anchor", "reference", "contact"]

#: The first words of an image prompt, per request kind.
IMAGE_TASKS: dict[ImageKind, str] = {
    "sheet": "STICKER SHEET",
    "heads": "HEAD SHEET",
    "anchor": "ANCHOR PORTRAIT",
    "figure": "SINGLE FIGURE",
}
#: The first words of a vision prompt, per request kind.
VISION_TASKS = {
    "passport": "APPEARANCE PASSPORT",
    "verify": "ANCHOR CHECK",
    "sheet_qa": "SHEET QA",
    "pack_qa": "PACK QA",
}
#: How an image prompt names each attached image (``Image N: <text>.``).
ROLE_TEXT: dict[ImageRole, str] = {
    "anchor": "the anchor portrait: copy this exact character (face, hair, skin, outfit)",
    "selfie": "the guest's selfie",
    "face": "a close crop of the guest's face",
    "reference": "an earlier sheet of the same character, for consistency",
    "contact": "a contact sheet",
}


@dataclass(frozen=True, slots=True)
class DrawSpec:
    """What an image request asks to be drawn, structured.

    Attributes:
        outfit_id: the outfit of every figure.
        poses: pose names (:data:`cartoon.poses.POSES`), one per grid cell in reading order; ``""``
            leaves a cell empty.
        cols, rows: the grid (1 × 1 for an anchor or a single figure).
        heads_only: draw heads without bodies (composite head sheets).
    """

    outfit_id: str
    poses: tuple[str, ...]
    cols: int = 1
    rows: int = 1
    heads_only: bool = False


@dataclass(frozen=True, slots=True)
class ParsedImagePrompt:
    """An image prompt read back: the task, the draw spec and the roles of the attached images."""

    kind: ImageKind
    spec: DrawSpec
    roles: tuple[ImageRole, ...]


def grid_text(cols: int, rows: int) -> str:
    """``a grid of C columns x R rows``."""
    return f"a grid of {cols} columns x {rows} rows"


def task_line(kind: ImageKind, spec: DrawSpec, aspect: str) -> str:
    """The first line of an image prompt (counts the non-empty cells of ``spec.poses``)."""
    count = sum(1 for pose in spec.poses if pose)
    noun = "heads" if kind == "heads" else "figures"
    return f"{IMAGE_TASKS[kind]}: {count} {noun} in {grid_text(spec.cols, spec.rows)}, one {aspect} image."


def outfit_line(outfit_id: str, prompt: str) -> str:
    """``Outfit [<id>]: <prompt>.``"""
    return f"Outfit [{outfit_id}]: {prompt}."


def figure_line(number: int, pose: str, description: str) -> str:
    """``N. [<pose>] <description>``, or ``N. [] leave empty`` for an empty cell (``pose`` ``""``)."""
    return f"{number}. [{pose}] {description}" if pose else f"{number}. [] leave empty"


def image_line(number: int, role: ImageRole) -> str:
    """``Image N: <role text>.``"""
    return f"Image {number}: {ROLE_TEXT[role]}."


_GRID = re.compile(r"a grid of (\d+) columns x (\d+) rows")
_OUTFIT = re.compile(r"^Outfit \[([a-z0-9_]+)\]", re.MULTILINE)
_FIGURE = re.compile(r"^(\d+)\. \[([a-z_]*)\]", re.MULTILINE)
_IMAGE = re.compile(r"^Image (\d+): (.+?)\.$", re.MULTILINE)
_COUNT = re.compile(r"contact sheets of (\d+) cartoon stickers")


def parse_image_prompt(text: str) -> ParsedImagePrompt:
    """Read an image prompt (the lines of the module docstring) back into its parts.

    Raises:
        ValueError: the text has no task line, grid or outfit line.
    """
    first = text.split("\n", 1)[0]
    kind = next((k for k, task in IMAGE_TASKS.items() if first.startswith(task + ":")), None)
    grid = _GRID.search(first)
    outfit = _OUTFIT.search(text)
    if kind is None or grid is None or outfit is None:
        raise ValueError("not a sticker image prompt")
    figures = sorted((int(n), pose) for n, pose in _FIGURE.findall(text))
    by_text = {text_: role for role, text_ in ROLE_TEXT.items()}
    roles = tuple(by_text[t] for _n, t in sorted(_IMAGE.findall(text)) if t in by_text)
    return ParsedImagePrompt(
        kind=kind,
        spec=DrawSpec(
            outfit_id=outfit.group(1),
            poses=tuple(pose for _n, pose in figures),
            cols=int(grid.group(1)),
            rows=int(grid.group(2)),
            heads_only=kind == "heads",
        ),
        roles=roles,
    )


def parse_vision_prompt(text: str) -> tuple[str, tuple[int, int], int]:
    """(kind, contact grid (cols, rows), sticker count) of a vision prompt; the grid defaults to 4 × 3
    and the count to 0 when the prompt names none.

    Raises:
        ValueError: the first words are not a vision task.
    """
    first = text.split(":", 1)[0]
    kind = next((k for k, task in VISION_TASKS.items() if first == task), None)
    if kind is None:
        raise ValueError("not a sticker vision prompt")
    grid = _GRID.search(text)
    count = _COUNT.search(text)
    return (
        kind,
        (int(grid.group(1)), int(grid.group(2))) if grid else (4, 3),
        int(count.group(1)) if count else 0,
    )
