"""The preflight checks every image can run: ``python -m shared.preflight.stores`` (JSON lines, exit 1
when one fails; :mod:`shared.preflight`).

- ``settings.bot_username`` / ``telegram.set_name_length``: ``BOT_USERNAME`` passes the settings'
  validation, and the longest sticker set name we build with it fits Telegram's 64 characters
  (core.telegram.org/bots/api#createnewstickerset: "1-64 characters", ending in ``_by_<bot_username>``).
  Our names are ``sb<32 hex>_by_<bot>`` (:func:`shared.bot_identity.sticker_set_name`), 38 characters plus
  the username, so a username of 27-32 characters (Telegram allows up to 32) breaks every pack.
- ``postgres``: reachable, and ``alembic_version`` at the head revision of ``shared/migrations``.
- ``redis``: reachable (``PING``).
- ``disk``: at least ``PREFLIGHT_MIN_FREE_MB`` free on each of ``PREFLIGHT_DISK_PATHS`` (and ``BACKUP_DIR``).
- ``clock``: this machine's clock within ``PREFLIGHT_MAX_CLOCK_SKEW_SEC`` of Postgres's.
- ``backup``: the newest generation in ``BACKUP_DIR`` (:mod:`shared.backup`) is younger than
  ``BACKUP_MAX_AGE_HOURS`` and passes the backup's own integrity check (:func:`shared.backup.verify`:
  every table's data is in it and every block reads). ``skip`` when ``BACKUP_DIR`` is not set here.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import redis.asyncio as aioredis
from alembic.script import ScriptDirectory
from pydantic import Field, field_validator

from shared.backup import STAMP_FORMAT, BackupError, expected_tables, generations, target, verify
from shared.bot_identity import MAX_SET_NAME_CHARS, longest_set_name, max_bot_username_chars
from shared.db import client_target, create_engine
from shared.errors import ConfigError
from shared.migrate import alembic_config
from shared.preflight import CheckResult, PreflightSettings, emit, fail, ok, skip
from shared.repositories import Database
from shared.settings import BotIdentitySettings, ServiceSettings, load_settings

#: Seconds one check may take before it counts as failed (a server that accepts and never answers).
CHECK_TIMEOUT_S = 20.0


class StoresPreflightSettings(ServiceSettings, PreflightSettings):
    """Env: ``DATABASE_URL``, ``REDIS_URL`` (:class:`shared.settings.ServiceSettings`); ``BACKUP_DIR``
    (where the backup generations are; unset: the backup check is skipped), ``BACKUP_MAX_AGE_HOURS``
    (26: a daily backup plus two hours), ``PREFLIGHT_MIN_FREE_MB`` (512), ``PREFLIGHT_DISK_PATHS``
    (comma-separated, ``/tmp``: the only writable path of our containers) and ``PREFLIGHT_MAX_CLOCK_SKEW_SEC``
    (:class:`shared.preflight.PreflightSettings`)."""

    backup_dir: Path | None = Field(None, validation_alias="BACKUP_DIR")
    backup_max_age_hours: float = Field(26.0, gt=0, validation_alias="BACKUP_MAX_AGE_HOURS")
    preflight_min_free_mb: int = Field(512, ge=0, validation_alias="PREFLIGHT_MIN_FREE_MB")
    preflight_disk_paths: str = Field("/tmp", validation_alias="PREFLIGHT_DISK_PATHS")

    @field_validator("backup_dir", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value


def set_name_checks() -> list[CheckResult]:
    """``BOT_USERNAME`` valid by Telegram's rules and short enough that the longest set name we build
    fits Telegram's 64 characters: both are the settings' own validation
    (:func:`shared.bot_identity.bot_username_problems`), reported here as a failed check, not a traceback."""
    try:
        bot = load_settings(BotIdentitySettings).bot_username
    except ConfigError as exc:
        return [
            fail(
                "settings.bot_username",
                f"invalid settings: {exc}",
                "set BOT_USERNAME to the bot's username without @ (what @BotFather shows), "
                f"at most {max_bot_username_chars()} characters",
            )
        ]
    name = longest_set_name(bot)
    return [
        ok("telegram.set_name_length", f"longest set name {len(name)} of {MAX_SET_NAME_CHARS} characters")
    ]


def _redis_display(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}:{parts.port or 6379}{parts.path}"


def _error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def postgres_checks(settings: StoresPreflightSettings) -> list[CheckResult]:
    """``postgres`` (reachable, at the head migration) and ``clock`` (against Postgres's clock)."""
    display = client_target(settings.database_url).display
    engine = create_engine(settings.database_url, pool_size=1)
    try:
        db = Database(engine)
        async with db.transaction() as repos:
            revisions = await repos.preflight.schema_revisions()
            server_now = await repos.preflight.server_now()
        local_now = datetime.now(UTC)
    except Exception as exc:
        return [
            fail(
                "postgres",
                f"cannot reach {display}: {_error(exc)}",
                "start Postgres or correct DATABASE_URL",
            ),
            skip("clock", "not compared: Postgres did not answer"),
        ]
    finally:
        await engine.dispose()
    heads = frozenset(ScriptDirectory.from_config(alembic_config(settings.database_url)).get_heads())
    if revisions != heads:
        at = ", ".join(sorted(revisions)) or "no revision (never migrated)"
        schema = fail(
            "postgres",
            f"{display}: schema at {at}, the code expects {', '.join(sorted(heads))}",
            "run the migrations: python -m shared.migrate "
            "(compose: the migrate service; k8s: the migrate Job)",
        )
    else:
        schema = ok("postgres", f"{display}: reachable, schema at head {', '.join(sorted(heads))}")
    skew = (local_now - server_now).total_seconds()
    if abs(skew) > settings.preflight_max_clock_skew_sec:
        clock = fail(
            "clock",
            f"this machine's clock is {skew:+.1f} s off Postgres's "
            f"(limit {settings.preflight_max_clock_skew_sec:g} s)",
            "synchronise the clocks (NTP: timedatectl set-ntp true) on this host and the database's",
        )
    else:
        clock = ok("clock", f"{skew:+.1f} s from Postgres's clock")
    return [schema, clock]


async def redis_check(settings: StoresPreflightSettings) -> CheckResult:
    display = _redis_display(settings.redis_url)
    client = aioredis.Redis.from_url(settings.redis_url, socket_connect_timeout=5, socket_timeout=5)
    try:
        await client.ping()
    except Exception as exc:
        return fail("redis", f"cannot reach {display}: {_error(exc)}", "start Redis or correct REDIS_URL")
    finally:
        await client.aclose()
    return ok("redis", f"{display}: PONG")


def disk_check(settings: StoresPreflightSettings) -> CheckResult:
    paths = [Path(p.strip()) for p in settings.preflight_disk_paths.split(",") if p.strip()]
    if settings.backup_dir is not None and settings.backup_dir.exists():
        paths.append(settings.backup_dir)
    low, seen = [], []
    for path in paths:
        try:
            free_mb = shutil.disk_usage(path).free // (1024 * 1024)
        except OSError as exc:
            low.append(f"{path}: {exc.strerror or exc}")
            continue
        seen.append(f"{path} {free_mb} MB free")
        if free_mb < settings.preflight_min_free_mb:
            low.append(f"{path}: {free_mb} MB free")
    if low:
        return fail(
            "disk",
            f"under {settings.preflight_min_free_mb} MB: {'; '.join(low)}",
            "free space there (old logs, images: docker system prune) or give the volume more",
        )
    return ok("disk", ", ".join(seen) or "no path to check")


def backup_check(settings: StoresPreflightSettings, *, now: datetime | None = None) -> CheckResult:
    """The newest generation of ``DATABASE_URL``'s database in ``BACKUP_DIR``: recent and restorable."""
    if settings.backup_dir is None:
        return skip(
            "backup",
            "BACKUP_DIR is not set here: no backup to check",
            "set BACKUP_DIR to the backup volume (compose: backup-data at /backups; k8s: the backup PVC)",
        )
    db = target(settings.database_url)
    database = db.database
    found = generations(settings.backup_dir, database)
    take = "take one now: python -m shared.backup (compose: --profile backup run --rm backup)"
    if not found:
        return fail("backup", f"no backup of {database} in {settings.backup_dir}", take)
    newest = found[-1]
    taken = datetime.strptime(newest.name.removeprefix(f"{database}-").removesuffix(".dump"), STAMP_FORMAT)
    age_h = ((now or datetime.now(UTC)) - taken.replace(tzinfo=UTC)).total_seconds() / 3600
    if age_h > settings.backup_max_age_hours:
        return fail(
            "backup",
            f"the last backup {newest.name} is {age_h:.1f} h old (limit {settings.backup_max_age_hours:g} h)",
            f"the scheduled backup is not running (k8s: the backup CronJob's last Job); {take}",
        )
    try:
        verify(newest, expected_tables(), db)
    except BackupError as exc:
        return fail(
            "backup",
            f"the last backup {newest.name} is not restorable: {exc}",
            f"investigate the backup job's log; {take}",
        )
    return ok("backup", f"{newest.name}: {age_h:.1f} h old, every block readable, the database's schema")


async def _bounded(name: str, check: Callable[[], Awaitable[list[CheckResult]]]) -> list[CheckResult]:
    try:
        return await asyncio.wait_for(check(), CHECK_TIMEOUT_S)
    except TimeoutError:
        return [fail(name, f"no answer within {CHECK_TIMEOUT_S:g} s", "see why the server hangs")]


async def run_checks() -> list[CheckResult]:
    """Every check of this part, in the order the operator reads them."""
    results = set_name_checks()
    try:
        settings = load_settings(StoresPreflightSettings)
    except ConfigError as exc:
        return [
            *results,
            fail("settings.stores", f"invalid settings: {exc}", "correct the named variables"),
        ]
    results += await _bounded("postgres", lambda: postgres_checks(settings))

    async def one_redis() -> list[CheckResult]:
        return [await redis_check(settings)]

    results += await _bounded("redis", one_redis)
    results.append(disk_check(settings))
    results.append(await asyncio.to_thread(backup_check, settings))
    return results


def main() -> int:
    return emit(asyncio.run(run_checks()))


if __name__ == "__main__":
    sys.exit(main())
