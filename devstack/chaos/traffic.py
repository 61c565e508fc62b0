"""The traffic of a chaos run: the photos kiosks upload, a guest's journey and a visitor's lead.

A guest is played as the kiosk page and a person would: the kiosk retries on network errors and 5xx, the
guest presses Start again when the bot answered with the maintenance text (a paused queue), and every
wait is bounded, so a stuck stack ends in a ledger entry instead of a hung run.
"""

from __future__ import annotations

import contextlib
import io
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import httpx

from devstack.chaos.ledger import Guest, LeadSubmission, classify
from devstack.journey import bot_texts, chat_messages, consent

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "photos"
#: Seconds a guest waits before pressing Start again after the bot said so: after "a short break"
#: (maintenance), and after "busy" (the gateway could not record their Start: Postgres was unreachable;
#: the text says "in a minute", a guest at the kiosk tries sooner, and may be told "busy" again).
START_AGAIN_S = {"maintenance": 3.0, "busy": 10.0}
#: Seconds a guest waits for any answer to Start before pressing it again: when Postgres is down the
#: gateway answers "busy" straight from the handler (there is no outbox to hold it), and a Telegram fault
#: on the guest's chat at that moment (a 5xx, a 120 s flood wait) eats that answer. A guest facing a
#: silent bot presses Start again; the ledger lets a guest down for it unless such a fault was aimed at
#: them (:attr:`devstack.chaos.ledger.FaultKind.holds_reply`).
SILENT_START_AGAIN_S = 45.0


@dataclass(frozen=True)
class Photo:
    """A photo a kiosk uploads; ``face``: a guest's face is in it (else the expected answer is 422
    ``no_face``)."""

    label: str
    filename: str
    data: bytes
    face: bool


def _encoded(image: object, fmt: str, **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)  # type: ignore[attr-defined]
    return buffer.getvalue()


@cache
def photos() -> dict[str, Photo]:
    """The kiosk photos by label: faces as JPEG/PNG, and the hard ones the issue names: no face (the
    welder, the pug HEIC), CMYK JPEG, 16-bit PNG, PNG with alpha, HEIC with a face (built with Pillow,
    pillow-heif and OpenCV from the fixtures)."""
    import cv2
    import numpy as np
    import pillow_heif
    from PIL import Image

    pillow_heif.register_heif_opener()
    read = (FIXTURES / "face-older-man-white-hair.jpg").read_bytes
    man = Image.open(io.BytesIO(read())).convert("RGB")
    small = man.resize((600, 600))  # the 16-bit and HEIC variants: quick to encode, face still large
    astronaut = Image.open(FIXTURES / "astronaut-portrait.png").convert("RGB")
    woman = Image.open(FIXTURES / "face-woman-red-hat.png").convert("RGBA")
    sixteen = cv2.imencode(".png", (np.asarray(small).astype(np.uint16) * 257)[:, :, ::-1])[1].tobytes()
    found = [
        Photo("jpeg", "man.jpg", read(), True),
        Photo("png", "astronaut.png", (FIXTURES / "astronaut-portrait.png").read_bytes(), True),
        Photo("cmyk", "astronaut-cmyk.jpg", _encoded(astronaut.convert("CMYK"), "JPEG", quality=90), True),
        Photo("16bit", "man-16bit.png", sixteen, True),
        Photo("alpha", "woman-alpha.png", _encoded(woman, "PNG"), True),
        Photo("heic", "man.heic", _encoded(small, "HEIF", quality=80), True),
        Photo(
            "no_face:welder", "welder.png", (FIXTURES / "png-16bit-welder-low-light.png").read_bytes(), False
        ),
        Photo("no_face:pug_heic", "pug.heic", (FIXTURES / "heic-iphone-pug.heic").read_bytes(), False),
    ]
    return {p.label: p for p in found}


@dataclass
class GuestPlan:
    """Who a guest is and what the run aims at them: ``tg_faults`` (fault kind, ``POST /sim/faults`` body)
    are queued in the Telegram simulator for their chat just before they press Start; ``tags`` name the
    fault kinds for the ledger."""

    user_id: int
    photo: Photo
    outfit: str
    tags: tuple[str, ...] = ()
    tg_faults: list[tuple[str, dict[str, object]]] = field(default_factory=list)
    #: ``kiosk:slow-uplink``: the kiosk's upload trickles at this many bytes per second.
    uplink_bps: int | None = None


def retrying(
    call: Callable[[], httpx.Response], *, timeout_s: float = 180, also: frozenset[int] = frozenset()
) -> httpx.Response | None:
    """Call until a non-5xx answer arrives (nor one of the statuses in ``also``, e.g. the 429 the kiosk
    page waits out when it opens a session), as the kiosk page does on network errors; ``None`` when the
    stack did not answer within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        wait_s = 0.5
        try:
            response = call()
            if response.status_code < 500 and response.status_code not in also:
                return response
            wait_s = min(float(response.headers.get("Retry-After", wait_s)), 10.0)
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            return None
        time.sleep(wait_s)


def _consent_or_5xx(kiosk: httpx.Client, session_id: str) -> httpx.Response:
    """ "Agree" on the consent screen; a failed ``GET /consent`` is answered as its response, so
    :func:`retrying` retries its 5xx like any other."""
    try:
        return consent(kiosk, session_id)
    except httpx.HTTPStatusError as exc:
        return exc.response


def play_guest(
    ingest_url: str,
    sim_url: str,
    plan: GuestPlan,
    *,
    before_upload: threading.Barrier | None = None,
    link_timeout_s: float = 300,
) -> Guest:
    """One guest up to the kiosk's answer to the upload (what happens after is judged by the ledger).

    ``before_upload``: kiosks that upload at the same moment wait there. Never raises for the stack's
    failures: a guest who could not get through is a :class:`Guest` with ``upload_status`` 0.
    """
    with (
        httpx.Client(base_url=ingest_url, timeout=30) as kiosk,
        httpx.Client(base_url=sim_url, timeout=30) as sim,
    ):
        started: float | None = None

        def gave_up(what: str) -> Guest:
            if before_upload is not None:
                before_upload.abort()
            return Guest(
                plan.user_id, plan.photo.label, plan.photo.face, 0, what, None, None, plan.tags, started
            )

        opened = retrying(lambda: kiosk.post("/sessions", json={"station": "chaos"}), also=frozenset({429}))
        if opened is None or opened.status_code >= 400:
            return gave_up("no_session")
        session = opened.json()
        token = session["deep_link"].split("start=", 1)[1]
        for _kind, fault in plan.tg_faults:
            sim.post("/sim/faults", json=fault).raise_for_status()
        start = {"text": f"/start {token}", "first_name": "G", "language_code": "en"}
        started = time.time()
        sim.post(f"/sim/users/{plan.user_id}/messages", json=start).raise_for_status()
        deadline = time.monotonic() + link_timeout_s
        answered = 1
        starts = 1
        silent_starts = 0
        pressed_at, texts_then = time.monotonic(), 0
        while True:
            status = retrying(lambda: kiosk.get(f"/sessions/{session['id']}"), timeout_s=30)
            if status is not None and status.json().get("telegram_linked"):
                break
            if time.monotonic() > deadline:
                return gave_up("never_linked")
            texts = bot_texts(chat_messages(sim, plan.user_id))
            told = classify(texts[-1]) if len(texts) >= answered and texts else ""
            silent = len(texts) == texts_then and time.monotonic() - pressed_at > SILENT_START_AGAIN_S
            if (wait_s := START_AGAIN_S.get(told)) is not None or silent:  # told to, or no answer at all
                answered = len(texts) + 1  # the guest presses Start again
                time.sleep(wait_s or 0)
                sim.post(f"/sim/users/{plan.user_id}/messages", json=start).raise_for_status()
                pressed_at, texts_then = time.monotonic(), len(texts)
                starts += 1
                silent_starts += int(silent and wait_s is None)
            time.sleep(0.5)
        if (
            retrying(lambda: kiosk.put(f"/sessions/{session['id']}/outfit", json={"outfit_id": plan.outfit}))
            is None
        ):
            return gave_up("no_outfit")
        agreed = retrying(lambda: _consent_or_5xx(kiosk, session["id"]))
        if agreed is None or agreed.status_code != 200:
            return gave_up("no_consent")
        if before_upload is not None:
            with contextlib.suppress(threading.BrokenBarrierError):  # another kiosk gave up: upload anyway
                before_upload.wait(timeout=120)
        capture = uuid.uuid4().hex
        upload = retrying(
            lambda: _upload(kiosk, f"/sessions/{session['id']}/photo", plan, capture),
        )
        if upload is None:
            return gave_up("upload_unanswered")
        accepted = upload.status_code in (200, 201, 202)
        body = upload.json() if upload.headers.get("content-type", "").startswith("application/json") else {}
        code = None if accepted else (body.get("error") or {}).get("code")
        return Guest(
            user_id=plan.user_id,
            photo=plan.photo.label,
            face=plan.photo.face,
            upload_status=upload.status_code,
            upload_code=code,
            job_id=str(body["job_id"]) if accepted else None,
            accepted_at=time.time() if accepted else None,
            targeted=plan.tags,
            started_at=started,
            starts=starts,
            silent_starts=silent_starts,
        )


def _upload(kiosk: httpx.Client, path: str, plan: GuestPlan, capture: str) -> httpx.Response:
    """The kiosk's photo upload; with ``plan.uplink_bps`` its body trickles at that rate (a slow venue
    uplink: 4 KB every ``4096 / uplink_bps`` seconds)."""
    files = {"photo": (plan.photo.filename, plan.photo.data)}
    request = kiosk.build_request("POST", path, files=files, data={"capture_id": capture})
    if plan.uplink_bps is None:
        return kiosk.send(request)
    body, rate = request.read(), plan.uplink_bps

    def trickle() -> Iterator[bytes]:
        for start in range(0, len(body), 4096):
            time.sleep(4096 / rate)
            yield body[start : start + 4096]

    headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
    slow = kiosk.build_request("POST", path, content=trickle(), headers=headers)
    return kiosk.send(slow)


def submit_lead(ingest_url: str, n: int) -> LeadSubmission:
    """A landing-page visitor posts lead ``n`` (retried like the page does); the number it was given."""
    request_id = f"chaos-lead-{n:05d}"
    body = {
        "requestId": request_id,
        "name": f"Lead {n}",
        "contact": f"+1555{n:07d}",
        "message": "hi",
        "consent": True,
    }
    with httpx.Client(timeout=30) as landing:  # one client for every retry (a new one builds an SSL context)
        response = retrying(lambda: landing.post(f"{ingest_url}/leads", json=body))
    if response is None or response.status_code >= 400:
        return LeadSubmission(request_id, None)
    return LeadSubmission(request_id, int(response.json()["lead_number"]))
