"""Ingest settings: the kiosk API, the landing ``POST /leads`` and the admin API."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Final, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode

from ingest.branding import check_logo_url
from ingest.consent import DEFAULT_TEXTS, check_template
from shared.settings import (
    BotIdentitySettings,
    BudgetSettings,
    CaptureSettings,
    DownloadSettings,
    ProviderName,
    RetentionSettings,
    ServiceSettings,
)

#: ``compose.yaml``'s default ``ADMIN_TOKEN``: fine on 127.0.0.1, refused when ingest is published wider.
DEV_ADMIN_TOKEN: Final = "dev-only-admin-token"


class IngestSettings(
    ServiceSettings, BotIdentitySettings, RetentionSettings, BudgetSettings, CaptureSettings, DownloadSettings
):
    """Env of the ingest service (see :class:`shared.settings.ServiceSettings` for the common part).

    Upload limits: ``MAX_UPLOAD_BYTES`` (bytes, default 15 MB), ``MAX_UPLOAD_PIXELS`` (px, default 40 MP;
    larger images are refused before a full decode), ``MAX_CAPTURES_PER_SESSION`` (2, DESIGN.md §4;
    :class:`shared.settings.CaptureSettings`, read by the worker too).
    ``MAX_JSON_BODY_BYTES`` (bytes, default 64 KiB): every other request body (413 ``request_too_large``,
    :mod:`ingest.api.body_limit`). The largest legitimate one is a ``POST /leads`` with every field at
    its length limit: 3,938 code points plus ~170 bytes of keys, so at most ~16 KB as UTF-8 (what a
    browser's ``JSON.stringify`` sends) and 44 KB even if every code point of the free-text fields came
    as a ``\\uXXXX\\uXXXX`` escape (12 bytes; ``tests/ingest/test_body_limit.py`` sends that one);
    kiosk and admin bodies are under 300 bytes. 64 KiB keeps half as much again above that worst case.
    ``PHOTO_CHECK_WORKERS`` (processes, default: the CPUs the container may use, its CPU quota rounded
    up): how many uploads are checked at once (:mod:`ingest.photo_pool`); the others wait for a free one.
    ``PHOTO_CHECK_MAX_WAIT_SEC`` (s, default 15): a new upload whose check would answer later than this
    (its turn behind the others at the measured time per check) is answered at once with 503 ``busy`` and
    ``Retry-After`` (:mod:`ingest.captures`); the kiosk waits 30 s for an answer once its photo is sent
    (``kiosk.js`` ``uploadAnswerMs``), so 15 s leaves room for the database and an estimate that was
    short.
    ``REQUIRE_FACE`` (``1``): refuse a photo without a face (422 ``no_face``).
    ``SESSIONS_RATE_LIMIT`` new kiosk sessions (``POST /sessions``) per client per
    ``SESSIONS_RATE_WINDOW_SEC`` (120 per 60 s, in Redis across replicas): a kiosk opens one per guest
    (about one a minute at a busy booth), so even 20 kiosks behind one venue NAT stay far below it, while
    a script looping on the public route is refused with 429 ``rate_limited`` (the kiosk page retries
    with backoff). ``PHOTO_RATE_LIMIT`` photos checked per session per ``PHOTO_RATE_WINDOW_SEC`` (6 per
    60 s): a guest's take, review and send lasts well over 10 s, while one session looping on uploads
    (refused photos use no capture) would queue every kiosk's photo behind its face checks (~0.4 CPU-s
    each); a capture is counted once, whatever its retries (:meth:`ingest.ratelimit.RateLimiter.hit_once`).

    Connections (:mod:`ingest.server`): ``HTTP_HEADER_TIMEOUT_SEC`` (10 s: a request's head must be
    complete within it), ``HTTP_BODY_TIMEOUT_SEC`` (20 s: the longest pause between two reads of a body;
    a slow uplink whose bytes keep moving is never cut), ``HTTP_IDLE_TIMEOUT_SEC`` (5 s: uvicorn's
    keep-alive; the kiosk polls every second), ``HTTP_MAX_CONNECTIONS_PER_CLIENT`` (64 open connections
    per client address: a browser opens at most 6 per origin, so 10 kiosks behind one address stay
    below it). ``FORWARDED_ALLOW_IPS``: the proxies (addresses, networks, comma-separated; ``*`` any)
    whose ``X-Forwarded-For`` names the client for the per-client limits and the cap; empty (the
    default) trusts none, so a client cannot name itself another address. uvicorn's own default for it
    (``127.0.0.1``) is not used.

    Leads (DESIGN.md §8): ``LEADS_ENABLED`` (``0`` removes ``POST /leads`` and the landing form),
    ``LEADS_RATE_LIMIT`` submissions per client per ``LEADS_RATE_WINDOW_SEC`` (10 per 600 s, counted in
    Redis across replicas; behind a proxy set ``FORWARDED_ALLOW_IPS`` to it so the client address is the
    visitor's), ``LEADS_CORS_ORIGINS`` (comma-separated origins of the landing page allowed to post).
    ``ADMIN_TOKEN`` (secret, no default): the bearer token of the admin API; unset, admin endpoints
    answer 403. ``INGEST_BIND_ADDRESS`` (``127.0.0.1``): the host address compose publishes ingest on;
    with any address but a loopback one, compose's dev default token (:data:`DEV_ADMIN_TOKEN`) is refused
    at start, since it would open the admin page to the venue network. ``KIOSK_KEY`` (secret, no default):
    when set, only requests carrying it (header ``X-Kiosk-Key``; the kiosk sends the ``?key=`` of its start
    URL) may open a session, and sessions are counted per station instead of per client address.

    Consent screen (:mod:`ingest.consent`): ``CONSENT_TEXT_EN``, ``CONSENT_TEXT_RU`` (one point per line;
    placeholders ``{providers}``, ``{selfie_hours}``, ``{sticker_days}``, ``{session_days}``; defaults in
    :data:`ingest.consent.DEFAULT_TEXTS`), ``CONSENT_VERSION`` (the venue's label of its text, ``1``;
    the recorded version adds a digest of the rendered text). ``PRIMARY_AI_PROVIDER`` (gemini) and
    ``FALLBACK_AI_PROVIDER`` (openai; empty = none) are the worker's settings, read here only to name
    the providers on that screen: give ingest the same values as the worker. ``SELFIE_RETENTION_HOURS``
    (24) and ``STICKER_RETENTION_DAYS`` (30): :class:`shared.settings.RetentionSettings`.
    ``DAILY_BUDGET_USD`` and ``IMAGE_RPD_LIMIT`` (:class:`shared.settings.BudgetSettings`): the worker's
    limits, read here to show today's spend and image requests against them on the admin page.

    Kiosk branding per venue (issue 13), sent to the page by ``GET /kiosk/config``: ``KIOSK_EVENT_TITLE``
    (at most 80 characters, one line; empty: "Sticker Booth"), ``KIOSK_LOGO_URL`` (an ``https://`` URL or
    a path on this origin starting with ``/``; its origin is added to the page's ``img-src``; empty: no
    logo), ``KIOSK_ACCENT_COLOR`` (``#rgb`` or ``#rrggbb``; default ``#ffc93c``, the kiosk's yellow; the
    text on it is chosen black or white by WCAG contrast). A value that breaks these stops ingest at
    start-up.
    """

    host: str = Field("0.0.0.0", validation_alias="HOST")
    port: int = Field(8000, validation_alias="PORT")
    max_upload_bytes: int = Field(15 * 1024 * 1024, gt=0, validation_alias="MAX_UPLOAD_BYTES")
    max_json_body_bytes: int = Field(64 * 1024, gt=0, validation_alias="MAX_JSON_BODY_BYTES")
    max_upload_pixels: int = Field(40_000_000, gt=0, validation_alias="MAX_UPLOAD_PIXELS")
    require_face: bool = Field(True, validation_alias="REQUIRE_FACE")
    photo_check_workers: int | None = Field(None, ge=1, le=64, validation_alias="PHOTO_CHECK_WORKERS")
    http_header_timeout_sec: float = Field(10.0, gt=0, le=300, validation_alias="HTTP_HEADER_TIMEOUT_SEC")
    http_body_timeout_sec: float = Field(20.0, gt=0, le=600, validation_alias="HTTP_BODY_TIMEOUT_SEC")
    http_idle_timeout_sec: int = Field(5, ge=1, le=600, validation_alias="HTTP_IDLE_TIMEOUT_SEC")
    http_max_connections_per_client: int = Field(
        64, ge=1, le=100_000, validation_alias="HTTP_MAX_CONNECTIONS_PER_CLIENT"
    )
    forwarded_allow_ips: str = Field("", max_length=2000, validation_alias="FORWARDED_ALLOW_IPS")
    photo_check_max_wait_sec: float = Field(15.0, gt=0, le=300, validation_alias="PHOTO_CHECK_MAX_WAIT_SEC")
    leads_enabled: bool = Field(True, validation_alias="LEADS_ENABLED")
    leads_rate_limit: int = Field(10, ge=1, validation_alias="LEADS_RATE_LIMIT")
    leads_rate_window_sec: int = Field(600, ge=1, validation_alias="LEADS_RATE_WINDOW_SEC")
    sessions_rate_limit: int = Field(120, ge=1, validation_alias="SESSIONS_RATE_LIMIT")
    sessions_rate_window_sec: int = Field(60, ge=1, validation_alias="SESSIONS_RATE_WINDOW_SEC")
    photo_rate_limit: int = Field(6, ge=1, validation_alias="PHOTO_RATE_LIMIT")
    photo_rate_window_sec: int = Field(60, ge=1, validation_alias="PHOTO_RATE_WINDOW_SEC")
    leads_cors_origins: Annotated[tuple[str, ...], NoDecode] = Field(
        (), validation_alias="LEADS_CORS_ORIGINS"
    )
    admin_token: SecretStr | None = Field(None, validation_alias="ADMIN_TOKEN")
    kiosk_key: SecretStr | None = Field(None, validation_alias="KIOSK_KEY")
    published_address: str = Field("127.0.0.1", validation_alias="INGEST_BIND_ADDRESS")
    consent_version: str = Field(
        "1", min_length=1, max_length=32, pattern=r"^[A-Za-z0-9_.:-]+$", validation_alias="CONSENT_VERSION"
    )
    consent_text_en: str = Field(DEFAULT_TEXTS["en"], validation_alias="CONSENT_TEXT_EN")
    consent_text_ru: str = Field(DEFAULT_TEXTS["ru"], validation_alias="CONSENT_TEXT_RU")
    primary_ai_provider: ProviderName = Field("gemini", validation_alias="PRIMARY_AI_PROVIDER")
    fallback_ai_provider: ProviderName | Literal[""] = Field(
        "openai", validation_alias="FALLBACK_AI_PROVIDER"
    )

    kiosk_event_title: str = Field(
        "", max_length=80, pattern=r"^[^\x00-\x1f\x7f]*$", validation_alias="KIOSK_EVENT_TITLE"
    )
    kiosk_logo_url: str = Field("", max_length=500, validation_alias="KIOSK_LOGO_URL")
    kiosk_accent_color: str = Field(
        "#ffc93c", pattern=r"^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$", validation_alias="KIOSK_ACCENT_COLOR"
    )

    @property
    def metrics_port(self) -> int:
        """The port ``/metrics`` is served on apart from the API (``OPS_PORT``), or 0: none, ``/metrics`` is
        on ``PORT``. An ``OPS_PORT`` equal to ``PORT`` is the same port (the image's default: its
        ``HEALTHCHECK`` reads ``OPS_PORT``, which for ingest is the API's 8000)."""
        return 0 if self.ops_port == self.port else self.ops_port

    @field_validator("kiosk_event_title")
    @classmethod
    def _title(cls, value: str) -> str:
        return value.strip()

    @field_validator("kiosk_logo_url")
    @classmethod
    def _logo_url(cls, value: str) -> str:
        return check_logo_url(value.strip())

    @field_validator("consent_text_en", "consent_text_ru")
    @classmethod
    def _consent_template(cls, value: str) -> str:
        return check_template(value)

    @field_validator("leads_cors_origins", mode="before")
    @classmethod
    def _origins(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(o.strip().rstrip("/") for o in value.split(",") if o.strip())
        return value

    @model_validator(mode="after")
    def _no_dev_token_beyond_this_machine(self) -> IngestSettings:
        token = self.admin_token.get_secret_value() if self.admin_token else None
        if token == DEV_ADMIN_TOKEN and not _is_loopback(self.published_address):
            raise ValueError(
                f"ADMIN_TOKEN is compose's dev default and INGEST_BIND_ADDRESS={self.published_address} "
                "publishes ingest beyond this machine: set ADMIN_TOKEN to a long random string "
                "(e.g. `openssl rand -hex 16`)"
            )
        return self

    @field_validator("kiosk_key")
    @classmethod
    def _strong_kiosk_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value().strip():
            return None
        # only URL-unreserved characters: the kiosk's start URL carries it as it is (`+` would read as a
        # space, `&`, `#`, `%` would end or change the query string)
        if not re.fullmatch(r"[A-Za-z0-9._~-]{16,}", value.get_secret_value()):
            raise ValueError(
                "KIOSK_KEY must be a long random string of at least 16 characters out of A-Z a-z 0-9 . _ ~ - "
                "(e.g. `openssl rand -hex 16`), so that a kiosk's ?key= carries it as it is"
            )
        return value

    @field_validator("admin_token")
    @classmethod
    def _strong_admin_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None or not value.get_secret_value():
            return None
        token = value.get_secret_value()
        if len(token) < 16 or token.lower() in {"changeme", "change-me", "changethis", "admin", "secret"}:
            raise ValueError("ADMIN_TOKEN must be a long random string (at least 16 characters)")
        return value


def _is_loopback(address: str) -> bool:
    """``127.0.0.1``, ``::1`` or ``localhost`` (an empty address, as compose passes an unset one, counts as
    its default ``127.0.0.1``); ``0.0.0.0`` and any other address are not."""
    if address.strip() in {"", "localhost"}:
        return True
    try:
        return ipaddress.ip_address(address.strip().strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: published somewhere we cannot tell
