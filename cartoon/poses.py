"""The 12 sticker poses of a pack: arms, hands, face overlays, decorations and the emoji of each.

Arm points are in design px of the 512 cell (see :mod:`cartoon.body`); "left" is the arm on the
left of the picture. Decorations are named here and drawn by :mod:`cartoon.figure`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cartoon.hands import Gesture

__all__ = ["NEUTRAL", "POSES", "Arm", "Pose", "pose_named"]

Point = tuple[float, float]
FaceOverlay = Literal["sunglasses", "heart_eyes", "closed_eyes", "blush", "tears", "o_mouth"]
Decoration = Literal[
    "big_heart",
    "popper",
    "prop",
    "haha",
    "question",
    "exclaim",
    "zzz",
    "hearts",
    "confetti",
    "sparkles",
    "wave_lines",
]


@dataclass(frozen=True, slots=True)
class Arm:
    """One arm: elbow and hand centre (design px), hand gesture, hand rotation (degrees clockwise)."""

    elbow: Point
    hand: Point
    gesture: Gesture = "fist"
    angle: float = 0.0


@dataclass(frozen=True, slots=True)
class Pose:
    """One sticker: its name, Telegram emoji, arms, head tilt (degrees clockwise), legs and extras."""

    name: str
    emoji: str
    left: Arm
    right: Arm
    tilt: float = 0.0
    stance: Literal["stand", "apart"] = "stand"
    face: tuple[FaceOverlay, ...] = ()
    extras: tuple[Decoration, ...] = ()


_DOWN_L = Arm((178, 334), (170, 378), "fist")
_DOWN_R = Arm((334, 334), (342, 378), "fist")

POSES: tuple[Pose, ...] = (
    Pose(
        "waving",
        "👋",
        _DOWN_L,
        Arm((368, 262), (394, 196), "open", 14),
        tilt=-5,
        face=("blush",),
        extras=("wave_lines",),
    ),
    Pose(
        "thumbs_up",
        "👍",
        Arm((160, 334), (198, 366), "fist"),
        Arm((366, 326), (380, 276), "thumbs_up"),
        tilt=4,
        extras=("sparkles",),
    ),
    Pose(
        "heart",
        "❤️",
        Arm((184, 344), (204, 330), "fist"),
        Arm((328, 344), (308, 330), "fist"),
        tilt=-6,
        face=("blush",),
        extras=("big_heart", "hearts"),
    ),
    Pose(
        "party",
        "🎉",
        Arm((146, 262), (124, 204), "open", -18),
        Arm((364, 262), (382, 214), "fist"),
        stance="apart",
        extras=("popper", "confetti"),
    ),
    Pose(
        "ok",
        "👌",
        _DOWN_L,
        Arm((362, 322), (374, 258), "ok", 8),
        tilt=6,
        extras=("sparkles",),
    ),
    Pose(
        "laughing",
        "😂",
        Arm((174, 336), (222, 356), "fist"),
        Arm((338, 336), (290, 356), "fist"),
        tilt=-9,
        face=("tears",),
        extras=("haha",),
    ),
    Pose(
        "cool",
        "😎",
        Arm((182, 350), (292, 330), "fist"),
        Arm((330, 350), (220, 330), "fist"),
        tilt=5,
        face=("sunglasses",),
        extras=("sparkles",),
    ),
    Pose(
        "thinking",
        "🤔",
        Arm((184, 352), (268, 352), "fist"),
        Arm((340, 346), (300, 290), "point", -10),
        tilt=9,
        extras=("question",),
    ),
    Pose(
        "surprised",
        "😮",
        Arm((146, 288), (132, 226), "open", -14),
        Arm((366, 288), (380, 226), "open", 14),
        face=("o_mouth",),
        extras=("exclaim",),
    ),
    Pose(
        "sleeping",
        "😴",
        _DOWN_L,
        _DOWN_R,
        tilt=14,
        face=("closed_eyes", "blush"),
        extras=("zzz",),
    ),
    Pose(
        "love",
        "😍",
        Arm((190, 344), (246, 326), "fist"),
        Arm((322, 344), (266, 326), "fist"),
        tilt=-4,
        face=("heart_eyes",),
        extras=("hearts",),
    ),
    Pose(
        "victory",
        "✌️",
        Arm((152, 300), (130, 252), "fist"),
        Arm((366, 258), (388, 198), "peace", 12),
        stance="apart",
        extras=("prop", "sparkles"),
    ),
)

#: The anchor portrait's pose (spec/002 "Anchor": a neutral, front-facing figure): arms down, a smile.
NEUTRAL = Pose("neutral", "🙂", _DOWN_L, _DOWN_R)


def pose_named(name: str) -> Pose:
    """The pose called ``name`` (one of :data:`POSES`, or ``neutral``).

    Raises:
        KeyError: no such pose.
    """
    for pose in (*POSES, NEUTRAL):
        if pose.name == name:
            return pose
    raise KeyError(name)
