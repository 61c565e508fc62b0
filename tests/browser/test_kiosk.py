"""The kiosk page in Chromium against the running stack: the guest's journey and the page's retry rules.

Retry numbers under test come from DESIGN.md §4 and spec/000 "Kiosk": the outfit list 1 s doubling to
10 s until it loads, an upload retried after 1, 2, 3 s with one capture id, a 3 s staff reset.
"""

from __future__ import annotations

import io
import itertools
import re
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, Request, Route

from devstack.journey import LINK, bot_texts, chat_messages
from devstack.processes import Stack
from shared.texts import TEXTS
from tests.browser.kiosk_helpers import (
    ADMIN_TOKEN,
    choose_language,
    choose_photo,
    deep_link,
    open_kiosk,
    pick_outfit,
    scan_and_start,
    screen,
    screenshot,
    session_status,
    wait_screen,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]
STATIC = Path(__file__).resolve().parents[2] / "services" / "ingest" / "ingest" / "static" / "kiosk"
CAPTURE_ID = re.compile(rb'name="capture_id"\r\n\r\n([A-Za-z0-9_.:-]+)\r\n')
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
CONTENT_TYPES = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".css": "text/css",
    ".svg": "image/svg+xml",
    ".webp": "image/webp",
}


def test_a_guest_journey_ends_on_the_done_screen_with_the_link_in_telegram(page: Page, stack: Stack) -> None:
    response = page.request.get(f"{stack.ingest_url}/kiosk")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    etag = response.headers["etag"]
    again = page.request.get(f"{stack.ingest_url}/kiosk", headers={"If-None-Match": etag})
    assert again.status == 304
    session = open_kiosk(page, stack, station="hall-a")
    assert session["station"] == "hall-a"
    assert page.inner_text("#station") == "hall-a"
    screenshot(page, "kiosk-welcome")
    scan_and_start(page, stack, user_id=7101)
    assert page.locator(".outfit").count() >= 4
    pick_outfit(page, "pirate")
    choose_photo(page, "face-woman-red-hat.png")
    page.click("#send")
    wait_screen(page, "generating")
    screenshot(page, "kiosk-generating")
    wait_screen(page, "done", timeout_ms=180_000)
    # The guest's own first four stickers (fetched with the session's token) and the set's QR code.
    page.wait_for_function(
        "() => { const s = [...document.querySelectorAll('#done-stickers img.sticker')];"
        " return s.length === 4 && s.every((i) => i.complete && i.naturalWidth > 0); }"
    )
    page.wait_for_selector("#done-qr:not([hidden])")
    page.wait_for_timeout(900)  # the stickers' pop-in animation
    screenshot(page, "kiosk-done")
    with httpx.Client(base_url=stack.sim_url, timeout=10) as sim:
        links = [m for t in bot_texts(chat_messages(sim, 7101)) if (m := LINK.search(t))]
    assert len(links) == 1
    assert page.get_attribute("#done-qr", "data-set-url") == links[0].group(0)
    status = session_status(stack, session["id"])
    assert (status["status"], status["outfit_id"], len(status["jobs"])) == ("delivered", "pirate", 1)
    # Beside it, the QR code of the pack's download page (the devstack sets PUBLIC_BASE_URL), which the
    # guest's phone opens: a phone-sized screen with the 12 stickers decoded, no sideways scrolling, no
    # script error or CSP violation, and a zip of 24 valid files.
    page.wait_for_selector("#done-download:not([hidden])")
    url = page.get_attribute("#done-download-qr", "data-download-url")
    assert url is not None and url.startswith(f"{stack.ingest_url}/d/")
    phone = page.context.browser.new_context(  # type: ignore[union-attr]
        viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True, device_scale_factor=3
    )
    try:
        mobile = phone.new_page()
        problems: list[str] = []
        mobile.on("pageerror", lambda error: problems.append(str(error)))
        mobile.on(
            "console", lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None
        )
        assert mobile.goto(url).status == 200  # type: ignore[union-attr]
        mobile.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")  # lazy images load
        mobile.wait_for_function(
            "() => { const s = [...document.querySelectorAll('li img')];"
            " return s.length === 12 && s.every((i) => i.complete && i.naturalWidth === 512); }"
        )
        assert mobile.evaluate("() => document.documentElement.scrollWidth") <= 390
        mobile.evaluate("() => window.scrollTo(0, 0)")
        screenshot(mobile, "download-page-phone")
        archive = mobile.request.get(mobile.evaluate("() => document.querySelector('a.zip').href")).body()
        with zipfile.ZipFile(io.BytesIO(archive)) as zipped:
            assert len(zipped.namelist()) == 24 and zipped.testzip() is None
        assert not problems, problems
    finally:
        phone.close()


def test_a_guest_without_telegram_gets_the_download_page_qr_on_the_done_screen(
    page: Page, stack: Stack
) -> None:
    session = open_kiosk(page, stack, station="hall-n")
    page.click("#no-telegram:not([hidden])")
    wait_screen(page, "outfits")
    pick_outfit(page, "pirate")
    choose_photo(page, "face-woman-red-hat.png")
    page.click("#send")
    wait_screen(page, "generating")
    assert page.get_attribute("#generating-text", "data-i18n") == "generating_text_download"
    wait_screen(page, "done", timeout_ms=180_000)
    page.wait_for_selector("#done-download:not([hidden])")
    assert page.is_hidden("#done-set")  # no sticker set was made
    assert page.get_attribute("#done-text", "data-i18n") == "done_text_download"
    url = page.get_attribute("#done-download-qr", "data-download-url")
    assert url is not None and httpx.get(url, timeout=10).status_code == 200
    screenshot(page, "kiosk-done-download")
    status = session_status(stack, session["id"])
    assert (status["status"], status["delivery"], status["telegram_linked"]) == (
        "delivered",
        "download",
        False,
    )


#: Counts the page's camera requests (``navigator.mediaDevices.getUserMedia``) in ``window.cameraOpens``.
COUNT_CAMERA_OPENS = """
window.cameraOpens = 0;
const getUserMedia = navigator.mediaDevices.getUserMedia.bind(navigator.mediaDevices);
navigator.mediaDevices.getUserMedia = (...args) => { window.cameraOpens += 1; return getUserMedia(...args); };
"""


def test_the_consent_screen_comes_before_the_camera_and_agree_opens_it(page: Page, stack: Stack) -> None:
    page.add_init_script(COUNT_CAMERA_OPENS)
    session = open_kiosk(page, stack, station="hall-c")
    scan_and_start(page, stack, user_id=7106)
    page.click('.outfit[data-outfit="astronaut"]')
    wait_screen(page, "consent")
    page.wait_for_selector("#agree:enabled")
    points = page.inner_text("#consent-points")
    # no AI key in the test stack: the local renderer draws, and the guest is told so
    assert "the booth's own server" in points and "Google Gemini" not in points
    assert "anyone with its link" in points and "/delete" in points
    assert "24 hours" in points and "30 days" in points
    screenshot(page, "kiosk-consent")
    page.wait_for_timeout(500)
    assert page.evaluate("window.cameraOpens") == 0 and not page.is_visible("#video")
    status = session_status(stack, session["id"])
    assert (status["status"], status["consent"]) == ("consent_required", None)
    choose_language(page, "ru")
    assert "публичный" in page.inner_text("#consent-points")  # the guest's language, from the settings
    assert page.inner_text('section[data-screen="consent"] h1') == "Перед тем как сделать фото"
    page.click("#agree")
    wait_screen(page, "camera")
    page.wait_for_selector("#shoot:enabled")  # the fake camera streams
    assert page.evaluate("window.cameraOpens") == 1
    consent = session_status(stack, session["id"])["consent"]
    version = httpx.get(f"{stack.ingest_url}/consent", timeout=10).json()["version"]
    assert (consent["version"], consent["language"]) == (version, "ru") and consent["at"]


@pytest.fixture
def ingest_down(stack: Stack) -> Iterator[None]:
    """Ingest stopped for the test; started again (and healthy) afterwards whatever happened."""
    stack.stop("ingest")
    try:
        yield
    finally:
        if "ingest" not in stack.procs:
            stack.start("ingest")
        stack.wait_healthy()


def serve_page_from_disk(route: Route) -> None:
    """The tablet still has the page: its files come from the package, not from the stopped ingest."""
    name = route.request.url.split("?")[0].rsplit("/", 1)[1]
    file = STATIC / ("index.html" if name == "kiosk" else name)
    route.fulfill(body=file.read_bytes(), content_type=CONTENT_TYPES[file.suffix])


def test_the_outfit_list_is_retried_while_ingest_is_down_and_loads_when_it_is_back(
    page: Page, stack: Stack, ingest_down: None
) -> None:
    page.route(re.compile(r".*/kiosk(\?.*|/assets/.*)?$"), serve_page_from_disk)
    tries: list[float] = []
    outfits = re.compile(r"/outfits(\?station=[^&]*)?$")  # the page asks for its station's outfits
    page.on("request", lambda r: tries.append(time.monotonic()) if outfits.search(r.url) else None)
    page.goto(f"{stack.ingest_url}/kiosk?station=hall-b")
    deadline = time.monotonic() + 12
    while len(tries) < 4:
        assert time.monotonic() < deadline, f"only {len(tries)} tries of /outfits"
        page.wait_for_timeout(100)
    gaps = [later - earlier for earlier, later in itertools.pairwise(tries)][:3]
    for gap, expected in zip(gaps, (1.0, 2.0, 4.0), strict=True):
        assert expected - 0.1 < gap < expected + 0.8, gaps
    assert page.is_visible("#offline")
    assert page.locator("#outfit-grid .outfit").count() == 0
    screenshot(page, "kiosk-offline")
    stack.start("ingest")
    stack.wait_healthy()
    # the next try is at most 10 s away
    page.wait_for_selector("#outfit-grid .outfit", state="attached", timeout=15_000)
    page.wait_for_selector("#qr:not([hidden])", timeout=15_000)
    assert page.locator("#outfit-grid .outfit").count() >= 4
    assert not page.is_visible("#offline")


def test_an_upload_retried_after_a_5xx_and_a_network_error_creates_one_job(page: Page, stack: Stack) -> None:
    session = open_kiosk(page, stack)
    scan_and_start(page, stack, user_id=7102)
    pick_outfit(page, "chef")
    choose_photo(page, "face-older-man-white-hair.jpg")
    seen: list[tuple[float, bytes]] = []

    def flaky(route: Route, request: Request) -> None:
        match = CAPTURE_ID.search(request.post_data_buffer or b"")
        seen.append((time.monotonic(), match.group(1) if match else b""))
        if len(seen) == 1:
            route.fetch()  # the server stores the job, but the answer is lost behind a broken proxy
            route.fulfill(status=502, body="bad gateway")
        elif len(seen) == 2:
            route.abort("connectionreset")
        else:
            route.continue_()

    page.route("**/sessions/*/photo", flaky)
    page.click("#send")
    wait_screen(page, "generating", timeout_ms=30_000)
    assert len(seen) == 3
    assert seen[0][1].startswith(b"cap-") and len({capture for _, capture in seen}) == 1
    assert seen[1][0] - seen[0][0] >= 0.9 and seen[2][0] - seen[1][0] >= 1.9
    status = session_status(stack, session["id"])
    assert (len(status["jobs"]), status["captures"]) == (1, 1)
    assert status["jobs"][0]["capture_id"] == seen[0][1].decode()


def test_the_staff_reset_gesture_returns_to_the_start_with_a_new_session(page: Page, stack: Stack) -> None:
    open_kiosk(page, stack)
    first_link = deep_link(page)
    scan_and_start(page, stack, user_id=7103)
    page.mouse.move(30, 30)
    page.mouse.down()
    page.wait_for_timeout(1500)
    page.mouse.up()
    page.wait_for_timeout(2000)
    assert screen(page) == "outfits"  # a short press is not a reset
    page.mouse.down()
    page.wait_for_timeout(3300)
    page.mouse.up()
    wait_screen(page, "welcome")
    page.wait_for_selector("#qr:not([hidden])")
    assert deep_link(page) != first_link


def test_a_photo_without_a_face_shows_the_servers_message_and_a_retake(page: Page, stack: Stack) -> None:
    session = open_kiosk(page, stack)
    scan_and_start(page, stack, user_id=7104)
    pick_outfit(page, "wizard")
    page.wait_for_selector("#shoot:enabled")  # Chromium's fake camera: a test pattern, no face
    page.click("#shoot")
    page.wait_for_selector("#countdown:not([hidden])")
    wait_screen(page, "review", timeout_ms=8_000)
    page.click("#send")
    wait_screen(page, "refused")
    assert page.inner_text("#refused-title") == "We couldn't see your face"
    assert page.inner_text("#refused-text") == TEXTS["no_face"]["en"]  # the bot's words for this case
    assert page.inner_text("#refused-action") == "Retake"
    screenshot(page, "kiosk-no-face")
    choose_language(page, "ru")
    assert page.inner_text("#refused-title") == "Не видно лица"
    assert page.inner_text("#refused-text") == TEXTS["no_face"]["ru"]
    page.click("#refused-action")
    wait_screen(page, "camera")
    assert session_status(stack, session["id"])["captures"] == 0  # a refused photo uses no capture


def test_a_damaged_photo_is_refused_in_the_guests_words_not_the_decoders(page: Page, stack: Stack) -> None:
    open_kiosk(page, stack)
    scan_and_start(page, stack, user_id=7106)
    pick_outfit(page, "wizard")
    choose_photo(page, "truncated-jpeg.jpg")  # the server answers 422 corrupt_image, "… (image file is
    page.click("#send")  # truncated …)": words for a developer
    wait_screen(page, "refused")
    assert page.inner_text("#refused-text") == "The photo file is damaged. Please take a new photo."
    assert page.inner_text("#refused-action") == "Retake"
    choose_language(page, "ru")
    assert page.inner_text("#refused-text") == "Файл фото повреждён. Сделай новое фото."


def test_maintenance_shows_the_break_screen_and_the_kiosk_carries_on_after_resume(
    page: Page, stack: Stack
) -> None:
    httpx.post(f"{stack.ingest_url}/admin/pause", headers=ADMIN, timeout=10).raise_for_status()
    try:
        page.goto(f"{stack.ingest_url}/kiosk")
        wait_screen(page, "break")
        assert not page.is_visible("#offline")
        screenshot(page, "kiosk-break")
    finally:
        httpx.post(f"{stack.ingest_url}/admin/resume", headers=ADMIN, timeout=10).raise_for_status()
    wait_screen(page, "welcome", timeout_ms=10_000)
    page.wait_for_selector("#qr:not([hidden])")


def test_an_upload_that_meets_maintenance_waits_on_the_break_screen_and_goes_through_after_resume(
    page: Page, stack: Stack
) -> None:
    session = open_kiosk(page, stack)
    scan_and_start(page, stack, user_id=7105)
    pick_outfit(page, "cowboy")
    choose_photo(page, "face-woman-red-hat.png")
    uploads: list[int] = []

    def pause_first(route: Route) -> None:
        """The pause begins while the photo is on its way (the status poll has not seen it yet), so the
        upload itself is answered 503 maintenance."""
        uploads.append(1)
        if len(uploads) == 1:
            httpx.post(f"{stack.ingest_url}/admin/pause", headers=ADMIN, timeout=10).raise_for_status()
        route.continue_()

    page.route("**/sessions/*/photo", pause_first)
    try:
        page.click("#send")
        wait_screen(page, "break")
        assert session_status(stack, session["id"])["jobs"] == []
    finally:
        httpx.post(f"{stack.ingest_url}/admin/resume", headers=ADMIN, timeout=10).raise_for_status()
    wait_screen(page, "generating", timeout_ms=15_000)
    assert len(session_status(stack, session["id"])["jobs"]) == 1 and len(uploads) == 2


def test_a_pause_on_the_review_screen_keeps_the_photo_and_it_goes_through_after_resume(
    page: Page, stack: Stack
) -> None:
    session = open_kiosk(page, stack)
    scan_and_start(page, stack, user_id=7107)
    pick_outfit(page, "chef")
    choose_photo(page, "face-woman-red-hat.png")
    httpx.post(f"{stack.ingest_url}/admin/pause", headers=ADMIN, timeout=10).raise_for_status()
    try:
        wait_screen(page, "break", timeout_ms=5_000)  # the status poll, before any tap
        assert session_status(stack, session["id"])["jobs"] == []
    finally:
        httpx.post(f"{stack.ingest_url}/admin/resume", headers=ADMIN, timeout=10).raise_for_status()
    wait_screen(page, "review", timeout_ms=5_000)
    page.click("#send")
    wait_screen(page, "generating", timeout_ms=15_000)
    assert len(session_status(stack, session["id"])["jobs"]) == 1
