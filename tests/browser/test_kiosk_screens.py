"""Issue 13's kiosk screens in Chromium against the running stack: who linked and "not you?", the break
screen from the status poll, "Still there?" before every reset, failures in the bot's words, upload
time-outs, the attract loop and the venue branding. Every screen is saved to ``out/kiosk-screens/`` at
tablet landscape (1280×800) by :func:`tests.browser.kiosk_helpers.screenshot`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from uuid import UUID

import httpx
import pytest
from playwright.sync_api import Page, Route

from devstack.journey import bot_texts, chat_messages
from devstack.processes import Stack
from shared.db import create_engine
from shared.domain import JobStatus
from shared.errors import ContentRefused, JobError, NoFaceError, PermanentJobError
from shared.joblife import fail_job, guest_failure_text, is_last_capture
from shared.outbox import dispatch_commands
from shared.repositories import Database
from shared.streams import Publisher, create_redis
from shared.texts import TEXTS
from tests.browser.kiosk_helpers import (
    ADMIN_TOKEN,
    BRANDING,
    choose_language,
    choose_photo,
    deep_link,
    in_thread,
    open_kiosk,
    pick_outfit,
    scan_and_start,
    screen,
    screenshot,
    session_status,
    wait_screen,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def fail_as_worker(stack: Stack, job_id: str, exc: JobError) -> None:
    """Fail the job the way the worker does for ``exc`` (``shared.joblife.fail_job`` with the guest text
    of :func:`shared.joblife.guest_failure_text`, the ``*_last`` one once the session has taken its
    ``MAX_CAPTURES_PER_SESSION`` photos, 2 in this stack), then, after the commit, the hints for its
    commands (``shared.outbox.dispatch_commands``, as ``worker.outcomes`` does); the gateway then sends
    the bot's text. Without the hints the texts waited for the outbox reconciler's grace (10 s), and the
    two failures' texts were hinted in one tick and sent in either order (a CI run read the first
    failure's text last)."""

    async def go() -> None:
        db = Database(create_engine(stack.config.database_url))
        redis = create_redis(stack.config.redis_url)
        try:
            async with db.transaction() as repos:
                job = await repos.jobs.get(UUID(job_id))
                assert job is not None
                session = await repos.sessions.get(job.session_id)
                assert session is not None
                last = is_last_capture(session, 2)
                failed = await fail_job(
                    repos,
                    job,
                    error_class=exc.error_class,
                    error=str(exc),
                    from_statuses=(JobStatus.QUEUED, JobStatus.PROCESSING, JobStatus.RENDERED),
                    guest_text=guest_failure_text(exc.error_class, str(exc), last_capture=last),
                )
                assert failed is not None, f"job {job_id} had already moved on"
            await dispatch_commands(db, Publisher(redis), failed.commands)
        finally:
            await redis.aclose()
            await db.dispose()

    in_thread(go)


@pytest.fixture
def paused(stack: Stack) -> Iterator[Callable[[], None]]:
    """Call it to pause the queue (``POST /admin/pause``); resumed after the test whatever happened."""

    def pause() -> None:
        httpx.post(f"{stack.ingest_url}/admin/pause", headers=ADMIN, timeout=10).raise_for_status()

    yield pause
    httpx.post(f"{stack.ingest_url}/admin/resume", headers=ADMIN, timeout=10).raise_for_status()


def resume(stack: Stack) -> None:
    httpx.post(f"{stack.ingest_url}/admin/resume", headers=ADMIN, timeout=10).raise_for_status()


def last_bot_text(stack: Stack, user_id: int, count: int, timeout_s: float = 15) -> str:
    """The bot's newest message to ``user_id`` once it has sent at least ``count``."""
    deadline = time.monotonic() + timeout_s
    with httpx.Client(base_url=stack.sim_url, timeout=10) as sim:
        while True:
            texts = bot_texts(chat_messages(sim, user_id))
            if len(texts) >= count:
                return texts[-1]
            assert time.monotonic() < deadline, (
                f"the bot sent {len(texts)} messages to {user_id}, not {count}"
            )
            time.sleep(0.3)


# ---- welcome: attract loop and branding ----


def test_the_welcome_screen_runs_an_attract_loop_and_carries_the_venue_branding(
    page: Page, stack: Stack
) -> None:
    open_kiosk(page, stack, station="hall-w")
    page.wait_for_selector("#event-title:not([hidden])")
    assert page.inner_text("#event-title") == BRANDING["KIOSK_EVENT_TITLE"]
    assert page.title().startswith(BRANDING["KIOSK_EVENT_TITLE"])
    assert page.evaluate("document.getElementById('logo').naturalWidth") > 0
    accent = page.evaluate(
        "getComputedStyle(document.querySelector('.steps li'), '::before').backgroundColor"
    )
    assert accent == "rgb(61, 220, 151)"  # KIOSK_ACCENT_COLOR #3ddc97
    page.wait_for_function(
        "() => [...document.querySelectorAll('#attract img')].every((i) => i.complete && i.naturalWidth)"
    )
    first = page.eval_on_selector_all("#attract img", "imgs => imgs.map((i) => i.src)")
    assert len(first) == 5 and all("/kiosk/assets/sample-" in src for src in first)
    page.wait_for_timeout(3000)  # one step of the loop (2.6 s)
    assert page.eval_on_selector_all("#attract img", "imgs => imgs.map((i) => i.src)") != first
    screenshot(page, "kiosk-welcome")
    page.click("#lang")  # English, German, Spanish, Russian: the catalogues' languages in turn
    assert page.inner_text('section[data-screen="welcome"] h1') == "Mach aus deinem Selfie Sticker!"
    page.click("#lang")
    assert page.inner_text('section[data-screen="welcome"] h1') == "¡Convierte tu selfie en stickers!"
    choose_language(page, "ru")
    assert page.inner_text('section[data-screen="welcome"] h1') == "Превратим твоё селфи в стикеры!"
    screenshot(page, "kiosk-welcome-ru")


# ---- "Hi, <first name> — not you?" ----


def test_not_you_unlinks_the_other_person_and_shows_a_new_qr_for_the_guest(page: Page, stack: Stack) -> None:
    session = open_kiosk(page, stack, station="hall-n")
    first_link = deep_link(page)
    scan_and_start(page, stack, user_id=7201, first_name="Zed")
    page.wait_for_selector("#guest:not([hidden])")
    assert page.inner_text("#guest-hi") == "Hi, Zed!"
    screenshot(page, "kiosk-outfits-hi")
    page.click('.outfit[data-outfit="chef"]')
    wait_screen(page, "consent")
    assert page.is_visible("#not-you")  # on every screen before the photo
    page.click("#not-you")
    wait_screen(page, "welcome")
    page.wait_for_selector("#qr:not([hidden])")
    assert deep_link(page) != first_link and not page.is_visible("#guest")
    status = session_status(stack, session["id"])
    assert (status["telegram_linked"], status["outfit_id"], status["consent"]) == (False, None, None)
    # Zed is told that the booth was unlinked from his Telegram ("You're linked!", then this)
    assert last_bot_text(stack, 7201, 2) == TEXTS["unlinked"]["en"]
    # The old code binds nobody now: its scanner is told so, and the kiosk stays on the new QR.
    token = first_link.split("start=", 1)[1]
    httpx.post(
        f"{stack.sim_url}/sim/users/7201/messages",
        json={"text": f"/start {token}", "first_name": "Zed", "language_code": "en"},
        timeout=10,
    ).raise_for_status()
    assert last_bot_text(stack, 7201, 3) == TEXTS["unknown_token"]["en"]
    assert screen(page) == "welcome"
    scan_and_start(page, stack, user_id=7202, first_name="Ann")
    page.wait_for_selector("#guest:not([hidden])")
    assert page.inner_text("#guest-hi") == "Hi, Ann!"
    choose_language(page, "ru")
    assert page.inner_text("#guest-hi") == "Привет, Ann!" and page.inner_text("#not-you") == "Это не ты?"


# ---- the break screen ----


def test_a_pause_replaces_the_qr_with_the_break_screen_and_a_guest_who_linked_meanwhile_goes_on(
    page: Page, stack: Stack, paused: Callable[[], None]
) -> None:
    session = open_kiosk(page, stack, station="hall-p")
    paused()
    wait_screen(page, "break", timeout_ms=5_000)  # the 1 s status poll
    assert not page.is_visible("#qr")
    scan_and_start(page, stack, user_id=7203, first_name="Mia", wait_for=None)
    page.wait_for_function("() => document.getElementById('break-guest').textContent.includes('Mia')")
    assert screen(page) == "break"
    assert "no need to scan again" in page.inner_text("#break-guest")
    screenshot(page, "kiosk-break-linked")
    assert last_bot_text(stack, 7203, 1) == TEXTS["maintenance"]["en"]
    resume(stack)
    wait_screen(page, "outfits", timeout_ms=5_000)  # by itself, without scanning again
    assert page.inner_text("#guest-hi") == "Hi, Mia!"
    assert session_status(stack, session["id"])["telegram_linked"]


def test_a_pause_on_the_camera_screen_shows_the_break_and_comes_back_to_the_camera(
    page: Page, stack: Stack, paused: Callable[[], None]
) -> None:
    open_kiosk(page, stack, station="hall-q")
    scan_and_start(page, stack, user_id=7204)
    pick_outfit(page, "astronaut")
    paused()
    wait_screen(page, "break", timeout_ms=5_000)
    screenshot(page, "kiosk-break")
    resume(stack)
    wait_screen(page, "camera", timeout_ms=5_000)
    page.wait_for_selector("#shoot:enabled")  # the camera is live again
    page.wait_for_timeout(500)
    screenshot(page, "kiosk-camera")


# ---- "Still there?" before every reset ----


def test_still_there_warns_with_a_countdown_before_a_reset_and_continue_keeps_the_guest(
    page: Page, stack: Stack
) -> None:
    page.clock.install()
    open_kiosk(page, stack, station="hall-i")
    scan_and_start(page, stack, user_id=7205)
    pick_outfit(page, "pirate")
    choose_photo(page, "face-woman-red-hat.png")
    screenshot(page, "kiosk-review")
    page.clock.fast_forward(70_000)
    assert not page.is_visible("#idle")  # 90 s screen: the warning comes 15 s before the end
    page.clock.fast_forward(6_000)
    page.wait_for_selector("#idle:not([hidden])")
    assert page.inner_text("#idle-title") == "Still there?"
    assert "Back to the start in" in page.inner_text("#idle-count")
    assert (
        page.inner_text("#idle-what")
        == "Your photo has not been sent yet — it will be deleted from the booth."
    )
    screenshot(page, "kiosk-still-there")
    page.click("#idle-continue")
    assert not page.is_visible("#idle") and screen(page) == "review"
    page.clock.fast_forward(80_000)
    page.wait_for_selector("#idle:not([hidden])")
    page.clock.fast_forward(16_000)
    wait_screen(page, "welcome")
    assert not page.is_visible("#idle")


def test_a_reset_after_the_photo_was_sent_says_so_and_the_stickers_still_arrive(
    page: Page, stack: Stack
) -> None:
    page.clock.install()
    session = open_kiosk(page, stack, station="hall-j")
    scan_and_start(page, stack, user_id=7206)
    pick_outfit(page, "wizard")
    choose_photo(page, "face-older-man-white-hair.jpg")
    page.click("#send")
    wait_screen(page, "generating")
    screenshot(page, "kiosk-generating")
    page.clock.fast_forward(166_000)  # the generating screen's 180 s, less the 15 s warning
    page.wait_for_selector("#idle:not([hidden])")
    assert page.inner_text("#idle-what") == "Your photo is sent: your stickers still arrive in Telegram."
    screenshot(page, "kiosk-still-there-sent")
    page.clock.fast_forward(16_000)
    wait_screen(page, "welcome")
    deadline = time.monotonic() + 180
    while (status := session_status(stack, session["id"]))["status"] != "delivered":
        assert status["status"] != "failed" and time.monotonic() < deadline, status
        time.sleep(1)
    assert "addstickers" in last_bot_text(stack, 7206, 3, timeout_s=30)


# ---- failures in the bot's words ----


@pytest.mark.parametrize(
    ("exc", "title", "user_id"),
    [
        (NoFaceError("no face found in the selfie"), "We couldn't see your face", 7207),
        (
            ContentRefused("sheet: every provider refused this selfie as content"),
            "That photo didn't work",
            7208,
        ),
    ],
)
def test_a_job_failed_for_no_face_or_content_shows_the_bots_text_and_a_retake(
    page: Page, stack: Stack, exc: JobError, title: str, user_id: int
) -> None:
    session = open_kiosk(page, stack, station="hall-f")
    scan_and_start(page, stack, user_id=user_id)
    pick_outfit(page, "cowboy")
    choose_photo(page, "face-woman-red-hat.png")
    page.click("#send")
    wait_screen(page, "generating")
    job_id = session_status(stack, session["id"])["jobs"][0]["id"]
    fail_as_worker(stack, job_id, exc)
    wait_screen(page, "failed")
    key = guest_failure_text(exc.error_class, str(exc))
    assert page.inner_text("#failed-title") == title
    kiosk_text = page.inner_text("#failed-text")
    assert kiosk_text == TEXTS[key]["en"]
    assert last_bot_text(stack, user_id, 3) == kiosk_text  # linked, generating, then this: the same words
    assert page.is_visible("#failed-again") and page.inner_text("#failed-again") == "Retake"
    screenshot(page, f"kiosk-failed-{key}")
    page.click("#failed-again")
    wait_screen(page, "camera")  # a new photo, not a retry of the refused one


def test_when_the_last_photo_fails_booth_and_bot_both_send_the_guest_to_the_staff(
    page: Page, stack: Stack
) -> None:
    session = open_kiosk(page, stack, station="hall-h")
    scan_and_start(page, stack, user_id=7216)
    pick_outfit(page, "cowboy")
    for n in (0, 1):  # MAX_CAPTURES_PER_SESSION is 2: the second photo is the last
        choose_photo(page, "face-woman-red-hat.png")
        page.click("#send")
        wait_screen(page, "generating")
        fail_as_worker(stack, session_status(stack, session["id"])["jobs"][n]["id"], NoFaceError("no face"))
        wait_screen(page, "failed")
        if n == 0:
            assert page.is_visible("#failed-again")
            page.click("#failed-again")
            wait_screen(page, "camera")
    kiosk_text = page.inner_text("#failed-text")
    assert kiosk_text == TEXTS["no_face_last"]["en"]
    assert last_bot_text(stack, 7216, 5) == kiosk_text  # linked, generating, no face, generating, this
    assert not page.is_visible("#failed-again") and "take another selfie" not in kiosk_text
    choose_language(page, "ru")
    assert page.inner_text("#failed-text") == TEXTS["no_face_last"]["ru"]
    screenshot(page, "kiosk-failed-last-photo-ru")


def test_a_failure_a_new_photo_cannot_fix_offers_no_retake(page: Page, stack: Stack) -> None:
    session = open_kiosk(page, stack, station="hall-g")
    scan_and_start(page, stack, user_id=7209)
    pick_outfit(page, "superhero")
    choose_photo(page, "face-older-man-white-hair.jpg")
    page.click("#send")
    wait_screen(page, "generating")
    fail_as_worker(
        stack, session_status(stack, session["id"])["jobs"][0]["id"], PermanentJobError("unknown outfit")
    )
    wait_screen(page, "failed")
    assert page.inner_text("#failed-text") == TEXTS["failed"]["en"]
    assert not page.is_visible("#failed-again")
    assert page.is_visible("#next-failed")
    screenshot(page, "kiosk-failed")


def test_still_there_on_a_failed_job_never_promises_stickers(page: Page, stack: Stack) -> None:
    page.clock.install()
    session = open_kiosk(page, stack, station="hall-k")
    scan_and_start(page, stack, user_id=7212)
    pick_outfit(page, "chef")
    choose_photo(page, "face-older-man-white-hair.jpg")
    page.click("#send")
    wait_screen(page, "generating")
    fail_as_worker(
        stack, session_status(stack, session["id"])["jobs"][0]["id"], PermanentJobError("unknown outfit")
    )
    wait_screen(page, "failed")
    page.clock.fast_forward(31_000)  # the failed screen's 45 s, less the 15 s warning
    page.wait_for_selector("#idle:not([hidden])")
    what = page.inner_text("#idle-what")
    assert what == "Your pack could not be made this time; staff at the booth can help.", what
    screenshot(page, "kiosk-still-there-failed")


def test_without_a_camera_choosing_a_photo_is_the_one_big_button(page: Page, stack: Stack) -> None:
    # plain http on a venue LAN: no secure context, so getUserMedia is refused
    page.add_init_script(
        "navigator.mediaDevices.getUserMedia = () => Promise.reject(new DOMException('no', 'NotAllowed'))"
    )
    open_kiosk(page, stack, station="hall-l")
    scan_and_start(page, stack, user_id=7213)
    pick_outfit(page, "pirate")
    page.wait_for_selector("#camera-off:not([hidden])")
    assert not page.is_visible("#shoot") and not page.is_visible(".camera-hint")
    assert "primary" in (page.get_attribute("#pick-label", "class") or "")
    screenshot(page, "kiosk-camera-off")
    choose_photo(page, "face-woman-red-hat.png")  # and it still works


# ---- upload time-outs ----


def test_a_hung_upload_shows_progress_then_a_retry_and_goes_through(page: Page, stack: Stack) -> None:
    """A server that never answers: "Still sending" from 3 s, and once no answer came 20 s after the
    last byte (kiosk.js ``uploadAnswerMs``; ingest answers within 15 s or says "busy" at once) the same
    capture goes again."""
    session = open_kiosk(page, stack, station="hall-u")
    scan_and_start(page, stack, user_id=7210)
    pick_outfit(page, "chef")
    choose_photo(page, "face-woman-red-hat.png")
    hung: list[Route] = []

    def hang_first(route: Route) -> None:
        if not hung:
            hung.append(route)  # never answered: a hung server
        else:
            route.continue_()

    page.route("**/sessions/*/photo", hang_first)
    page.click("#send")
    wait_screen(page, "sending")
    page.wait_for_function(
        "() => document.getElementById('sending-note').textContent.startsWith('Still sending')",
        timeout=5_000,
    )
    screenshot(page, "kiosk-sending-slow")
    page.wait_for_function(
        "() => document.getElementById('sending-note').textContent.startsWith('Connection hiccup')",
        timeout=25_000,
    )
    screenshot(page, "kiosk-sending-retry")
    wait_screen(page, "generating", timeout_ms=15_000)
    status = session_status(stack, session["id"])
    assert (len(hung), len(status["jobs"])) == (1, 1)


def test_an_upload_that_keeps_failing_ends_on_send_failed_with_the_photo_still_there(
    page: Page, stack: Stack
) -> None:
    session = open_kiosk(page, stack, station="hall-s")
    scan_and_start(page, stack, user_id=7211)
    pick_outfit(page, "wizard")
    choose_photo(page, "face-older-man-white-hair.jpg")
    page.route("**/sessions/*/photo", lambda route: route.abort("connectionreset"))
    page.click("#send")
    wait_screen(page, "send-failed", timeout_ms=15_000)  # after the retries of 1, 2 and 3 s
    assert "still here on the booth" in page.inner_text('section[data-screen="send-failed"] .lead')
    screenshot(page, "kiosk-send-failed")
    page.unroute("**/sessions/*/photo")
    page.click("#resend")  # the same photo, the same capture id
    wait_screen(page, "generating", timeout_ms=15_000)
    assert len(session_status(stack, session["id"])["jobs"]) == 1


# ---- portrait tablet and phone ----

FITS = """() => {
  const vw = document.documentElement.clientWidth, vh = document.documentElement.clientHeight;
  const main = document.querySelector('main');
  const off = [...document.querySelectorAll('body *')].filter((el) => {
    const r = el.getBoundingClientRect();
    return el.getClientRects().length && r.width && (r.left < -1 || r.right > vw + 1);
  }).map((el) => `${el.tagName}#${el.id}.${el.className}`);
  const send = document.getElementById('send').getBoundingClientRect();
  return { off, wide: main.scrollWidth > main.clientWidth, send_visible: send.bottom <= vh };
}"""


@pytest.mark.parametrize(("width", "height"), [(800, 1280), (390, 844)])
def test_at_portrait_tablet_and_phone_size_nothing_runs_off_the_screen(
    page: Page, stack: Stack, width: int, height: int
) -> None:
    """A long first name once pushed the top bar, and with it every screen, off the right edge of a
    portrait tablet; and the review frame pushed "Send it!" below the fold."""
    page.set_viewport_size({"width": width, "height": height})
    open_kiosk(page, stack, station="hall-portrait")
    scan_and_start(page, stack, user_id=7214 if width > 400 else 7215, first_name="Konstantinopolina")
    for step in ("outfits", "consent", "review"):
        if step == "consent":
            page.click('.outfit[data-outfit="pirate"]')
            wait_screen(page, "consent")
            page.wait_for_selector("#agree:enabled")
        if step == "review":
            page.click("#agree")
            wait_screen(page, "camera")
            choose_photo(page, "face-woman-red-hat.png")
        page.wait_for_timeout(300)
        fits = page.evaluate(FITS)
        assert fits["off"] == [] and not fits["wide"], (step, fits)
    assert fits["send_visible"], fits
    screenshot(page, f"portrait-{width}x{height}-review")
