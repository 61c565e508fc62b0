"""The one exception tree of Sticker Booth.

Every service raises and catches these; foreign exceptions (asyncpg, redis-py, httpx, the provider SDKs,
python-telegram-bot) are translated into them at the boundary where we call the library, so handlers can
tell "retry later" from "permanent" without knowing which library failed.

    StickerBoothError
    ├── ConfigError                  settings are missing or unsafe; the process must not start
    ├── UnavailableError             a dependency is down: retry later, change nothing
    │   ├── DatabaseUnavailable      Postgres cannot be reached (HTTP 503, consumers back off)
    │   ├── RedisUnavailable         Redis cannot be reached (rows stay pending for the reconciler)
    │   ├── TelegramUnreachable      (telegram_gateway.executor) no answer from the Bot API: the
    │   │                            command is pending again
    │   ├── NothingSent              (telegram_gateway.executor) the read before a send failed, so
    │   │                            nothing was sent: the command may run again; a PTB ``NetworkError``
    │   ├── SetNotReadable           (telegram_gateway.sticker_sets) a set's name is taken but the set
    │   │                            does not read yet; also a PTB ``NetworkError``, so PTB retries it
    │   ├── NotLeading               (telegram_gateway.executor) this replica does not hold the gateway
    │   │                            lease (a standby, or fenced): the entry stays for the leader
    │   ├── PhotoCheckUnavailable    (ingest.photo_pool) a photo-check process died during the upload:
    │   │                            HTTP 503, the pool is replaced, the kiosk sends the photo again
    │   └── ScorerUnavailable        (worker.likeness) the likeness scoring process died or did not
    │                                answer: that sticker's likeness is ``None`` (scorer_unavailable)
    ├── UploadRejected               a kiosk upload is unusable: 4xx with a machine-readable `code`
    │   ├── ConsentRequired          (ingest.consent) no "Agree" on the session: 403
    │   │                            `consent_required`, nothing read or stored
    │   └── RepeatedRefusal          (ingest.captures) a capture's refusal answered again to a retry
    │                                of it, without a second check; not counted again
    ├── ApiError                     (ingest.api.errors) any other HTTP 4xx/5xx a route answers with
    │   ├── RateLimited              (ingest.api.errors) too many new sessions or leads from one
    │   │                            client: 429 `rate_limited` with ``Retry-After``
    │   └── KioskKeyRequired         (ingest.api.errors) ``KIOSK_KEY`` set, ``POST /sessions`` without
    │                                it: 401 `kiosk_key_required`, before the body is read
    ├── RequestTooLarge              (ingest.api.errors) a body over MAX_JSON_BODY_BYTES: 413; also a
    │                                Starlette ``HTTPException``, which FastAPI's body parsing passes on
    ├── NotFound                     a row the caller named does not exist
    ├── Conflict                     a state change lost its race or is not allowed from this state
    ├── UndeclaredTransition         code asked for a job transition the state machine does not declare
    │                                (shared.repositories.jobs.ALLOWED): a bug, never retried
    ├── JobError                     generation failed; `error_class` decides what happens (DESIGN.md §5)
    │   ├── PermanentJobError        failed at once, guest told (photo missing, unknown outfit, no face)
    │   │   ├── NoFaceError          no human face in the photo (text ``no_face``)
    │   │   ├── JobCostExceeded      JOB_MAX_COST_USD reached before a call: failed, no retry
    │   │   └── ContentRefused       every provider refused this selfie as content: failed, no retry,
    │   │                            the guest is asked for another photo
    │   ├── RetryableJobError        charged: an attempt is consumed, retried after RETRY_DELAY_SEC
    │   │   └── NoValidSheet         (worker.context) a figure sheet was never valid in its attempts:
    │   │                            composite fallback, else the attempt fails as ``invalid``
    │   └── ProviderUnavailable      no provider could serve (credit, auth, config, outage, budget): the
    │                                queue pauses and the job is refunded (attempt not consumed)
    ├── ProviderCallError            (worker.providers.base) one provider call failed, classified by
    │                                `error_class`; the provider chain turns it into a JobError
    ├── BackupError                  (shared.backup) a backup or restore step failed: exit 1, older
    │                                generations kept
    ├── ModelMissing                 (worker.preflight) the provider answered that a configured model
    │                                does not exist (404): a failed preflight check
    ├── KeyRefused                   (worker.preflight) the provider refused the configured key: a
    │                                failed preflight check
    ├── TelegramError                the Bot API answered `ok: false` (carries code, description, retry_after)
    └── StickerTooLarge              (telegram_gateway.sticker_sets) one sticker alone is over Telegram's
                                     request size (413); also a PTB ``BadRequest``: permanent

A name with a module in brackets is defined there; the rest are here.
``tests/shared/test_error_tree.py`` holds this drawing against the classes: every exception class the
code defines descends from ``StickerBoothError`` and stands here under its real parent.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorClass(StrEnum):
    """Failure classes of DESIGN.md §5 (from spec/004, with the numbers of spec/002)."""

    RATE_LIMIT = "rate_limit"
    QUOTA_DAY = "quota_day"
    CREDIT = "credit"
    AUTH = "auth"
    CONFIG = "config"  # the provider says our settings are wrong: no such model, a rejected parameter, an
    # account not set up for the call (DESIGN.md §5); pauses until /resume, never charged to a guest
    OUTAGE = "outage"
    BUDGET = "budget"
    JOB_COST = "job_cost"
    TIMEOUT = "timeout"
    INVALID = "invalid"
    CONTENT = "content"
    INTERNAL = "internal"
    PERMANENT = "permanent"
    CRASHED = "crashed"
    DEADLINE = "deadline"  # the guest's 15-minute deadline passed (DESIGN.md §6); retryable by an admin


class StickerBoothError(Exception):
    """Root of every error this codebase raises on purpose."""


class ConfigError(StickerBoothError):
    """Settings are missing, contradictory or unsafe; raised at start-up, never later."""


class UnavailableError(StickerBoothError):
    """A dependency cannot be reached right now; the caller should back off and retry."""


class DatabaseUnavailable(UnavailableError):
    """Postgres refused or dropped the connection. HTTP endpoints answer 503 `database_unavailable`."""


class RedisUnavailable(UnavailableError):
    """Redis refused or dropped the connection. Producers leave the outbox row pending."""


class UploadRejected(StickerBoothError):
    """A kiosk photo upload cannot be used.

    Attributes:
        code: machine-readable reason, e.g. ``empty_file``, ``file_too_large``, ``unsupported_format``,
            ``corrupt_image``, ``too_many_pixels``, ``no_face``.
        detail: one sentence a kiosk operator can read.
        status: the HTTP status to answer with (413 for size, 415 for format, 422 otherwise).

    Picklable with its class and attributes (ingest's photo-check processes raise it across a pipe).
    """

    def __init__(self, code: str, detail: str, *, status: int = 422) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
        self.status = status

    def __reduce__(self) -> tuple[object, tuple[type[UploadRejected], str, str, int]]:
        return (_rebuild_upload_rejected, (type(self), self.code, self.detail, self.status))


def _rebuild_upload_rejected(
    cls: type[UploadRejected], code: str, detail: str, status: int
) -> UploadRejected:
    error = cls.__new__(cls)
    UploadRejected.__init__(error, code, detail, status=status)
    return error


class NotFound(StickerBoothError):
    """The named row does not exist (HTTP 404)."""


class UndeclaredTransition(StickerBoothError):
    """A state change its state machine does not declare was asked for (a bug); raised before any SQL runs.
    The machines: the job's (:data:`shared.repositories.jobs.ALLOWED`, DESIGN.md §3 "Job state machine"), a
    lead's status (:data:`shared.repositories.leads.ALLOWED`) and a lead post's publication
    (:data:`shared.repositories.lead_posts.ALLOWED`)."""


class Conflict(StickerBoothError):
    """A conditional state change found the row in another state (HTTP 409)."""

    def __init__(self, code: str, detail: str, extra: dict[str, object] | None = None) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
        #: More machine-readable fields for the answer's ``error`` object (``next`` of ``station_closed``).
        self.extra: dict[str, object] = dict(extra or {})


class JobError(StickerBoothError):
    """Generation of a job failed; `error_class` (DESIGN.md §5) decides retry, refund or failure."""

    error_class: ErrorClass = ErrorClass.INTERNAL

    def __init__(self, message: str, *, error_class: ErrorClass | None = None) -> None:
        super().__init__(message)
        if error_class is not None:
            self.error_class = error_class


class PermanentJobError(JobError):
    """The job can never succeed (photo missing, unknown outfit, no face): `failed` at once, guest told."""

    error_class = ErrorClass.PERMANENT


#: How the message of a :class:`NoFaceError` starts, so the stored ``jobs.error`` still says which
#: permanent failure it was (:func:`shared.joblife.guest_failure_text` reads it back for the kiosk).
NO_FACE_MARK = "no_face:"


class NoFaceError(PermanentJobError):
    """No human face was found in the photo. The message starts with :data:`NO_FACE_MARK`."""

    def __init__(self, message: str) -> None:
        super().__init__(message if message.startswith(NO_FACE_MARK) else f"{NO_FACE_MARK} {message}")


class ContentRefused(PermanentJobError):
    """Every provider of the chain refused an image request of this job as content (OpenAI 400
    ``moderation_blocked`` / ``content_policy_violation``, Gemini ``finishReason`` ``IMAGE_SAFETY`` …,
    ``promptFeedback.blockReason``; :mod:`worker.providers.classify`).

    The selfie is what they refused, so nothing else of the job is sent again and a retry could only be
    refused again: the job is ``failed`` at once with class ``content``, the guest is asked for another
    photo (text ``content_refused``) and no Retry is offered (issue 8 refines DESIGN.md §5 here, where
    ``content`` was charged and retried).
    """

    error_class = ErrorClass.CONTENT


class RetryableJobError(JobError):
    """A charged failure (timeout, invalid output, refusal, bug): an attempt is consumed, then retried."""


class JobCostExceeded(PermanentJobError):
    """The job's spend reached ``JOB_MAX_COST_USD`` before a provider call (log marker ``JOB_COST_LIMIT``)."""

    error_class = ErrorClass.JOB_COST


#: The classes whose failure of every provider pauses the queue (:class:`ProviderUnavailable`).
PAUSING_CLASSES = frozenset(
    {ErrorClass.CREDIT, ErrorClass.AUTH, ErrorClass.CONFIG, ErrorClass.OUTAGE, ErrorClass.BUDGET}
)


class ProviderUnavailable(JobError):
    """No provider in the chain could serve, for a reason that is not the job's fault.

    ``error_class`` is ``credit``, ``auth``, ``config``, ``outage`` or ``budget`` (DESIGN.md §5): the
    worker pauses the queue (``credit``/``auth``/``config`` until ``/resume``; ``outage`` for 1, 2, 4 … 60
    min or ``retry_after_s``; ``budget`` until 00:00 UTC) and puts the job back to ``queued`` without
    consuming an attempt.

    Attributes:
        retry_after_s: the provider's own retry-after hint in seconds (``outage``), if it gave one.
        alert: the admins' alert text naming the cause and the setting to fix (``config``), secret-free;
            ``None``: the class's fixed text.
    """

    def __init__(
        self,
        message: str,
        *,
        error_class: ErrorClass,
        retry_after_s: float | None = None,
        alert: str | None = None,
    ) -> None:
        if error_class not in PAUSING_CLASSES:
            raise ValueError(f"{error_class} does not pause the queue")
        super().__init__(message, error_class=error_class)
        self.retry_after_s = retry_after_s
        self.alert = alert


class TelegramError(StickerBoothError):
    """The Bot API answered ``ok: false``.

    Attributes:
        error_code: Telegram's HTTP-like code (400, 403, 429, ...).
        description: Telegram's text, e.g. ``Bad Request: sticker set name is already occupied``.
        retry_after: seconds to wait before any repeat, from ``parameters.retry_after`` (429 only).
    """

    def __init__(self, error_code: int, description: str, *, retry_after: float | None = None) -> None:
        super().__init__(f"{error_code}: {description}")
        self.error_code = error_code
        self.description = description
        self.retry_after = retry_after
