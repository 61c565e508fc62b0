"""The outfit catalog: one JSON file per outfit in ``shared/outfits/``, loaded as frozen models.

Each outfit carries what every consumer needs: ``title`` for the kiosk, ``prompt`` for the AI image
providers, ``body_template`` for composite mode (DESIGN.md §4, spec/002 "Composite"), and ``art``, the
drawing data of the offline ``local`` provider (palette, headwear, garment and prop kinds).
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Outfit", "OutfitArt", "Palette", "get_outfit", "load_catalog", "thumbnail_png"]

Colour = Annotated[str, Field(pattern=r"^#[0-9A-Fa-f]{6}$", description="sRGB colour as #RRGGBB")]
HeadwearKind = Literal["space_helmet", "tricorn", "chef_toque", "wizard_hat", "cowboy_hat", "none"]
GarmentKind = Literal["spacesuit", "hero", "pirate", "chef", "robe", "western"]
PropKind = Literal["rocket", "cutlass", "spoon", "wand", "lasso", "none"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Palette(_Frozen):
    """Colours of one outfit (all ``#RRGGBB``)."""

    suit: Colour = Field(description="main garment")
    trim: Colour = Field(description="collar, cuffs, belt, stripes")
    accent: Colour = Field(description="emblem, buttons, badge")
    pants: Colour
    shoes: Colour
    headwear: Colour
    headwear_trim: Colour
    gloves: Colour | None = Field(default=None, description="None: bare hands in the guest's skin tone")
    vest: Colour | None = Field(default=None, description="open vest over the garment; None: no vest")
    cape: Colour | None = Field(default=None, description="None: no cape")


class OutfitArt(_Frozen):
    """What the offline renderer draws for this outfit."""

    palette: Palette
    headwear: HeadwearKind
    garment: GarmentKind
    prop: PropKind = Field(description="signature prop held in the victory pose")


class Outfit(_Frozen):
    """One entry of the catalog (``GET /outfits``)."""

    id: str = Field(pattern=r"^[a-z][a-z0-9_]{1,31}$")
    title: str = Field(min_length=1, max_length=40)
    prompt: str = Field(min_length=20, description="outfit description for an AI image model")
    body_template: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="body template of composite mode")
    art: OutfitArt


@functools.cache
def _catalog() -> tuple[Outfit, ...]:
    folder = resources.files("shared").joinpath("outfits")
    outfits = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".json"):
            continue
        outfit = Outfit.model_validate_json(entry.read_text(encoding="utf-8"))
        if outfit.id != entry.name.removesuffix(".json"):
            raise ValueError(f"outfit file {entry.name} holds id {outfit.id!r}; name the file after the id")
        outfits.append(outfit)
    if not outfits:
        raise ValueError("the outfit catalog shared/outfits/ is empty")
    return tuple(outfits)


def load_catalog() -> dict[str, Outfit]:
    """All outfits by id, in file-name order. Read once from the package data, then cached.

    Raises:
        pydantic.ValidationError: a catalog file is malformed (a packaging bug, not a runtime condition).
    """
    return {outfit.id: outfit for outfit in _catalog()}


def get_outfit(outfit_id: str) -> Outfit:
    """The outfit with this id.

    Raises:
        KeyError: no such outfit (the worker maps this to ``PermanentJobError``).
    """
    return load_catalog()[outfit_id]


def thumbnail_png(outfit_id: str) -> bytes | None:
    """The outfit's kiosk thumbnail (256×256 RGBA PNG, the figure without a face), or ``None``.

    Pre-rendered from the ``local`` provider's drawing (``python -m devstack.thumbnails``) and shipped
    as package data, so the ingest image needs no rendering code.
    """
    path = resources.files("shared") / "outfits" / "thumbnails" / f"{outfit_id}.png"
    return path.read_bytes() if path.is_file() else None
