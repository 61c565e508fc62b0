"""Likeness of a sticker to the guest (issue 20): the bound on the face-descriptor distance
(:func:`shared.imaging.faces.descriptor_distance`) above which a sticker does not look like its guest.

Shared by the worker (pack QA: a sticker over the bound is a regeneration candidate) and the admin page
(which marks it).
"""

from __future__ import annotations

__all__ = ["LIKENESS_MAX_DISTANCE", "LIKENESS_MAX_DISTANCE_EYES_HIDDEN"]

#: Placeholder until the calibration on the fixtures lands: dlib's same-person threshold on LFW (0.6,
#: dlib's dnn_face_recognition_ex documentation), for photos; stickers are calibrated separately.
LIKENESS_MAX_DISTANCE = 0.6

#: Placeholder until calibrated: the bound for poses that hide the eyes (sunglasses, heart eyes, closed eyes).
LIKENESS_MAX_DISTANCE_EYES_HIDDEN = 0.7
