"""The preflight's shared part (``shared.preflight.stores``) and runner against real Postgres and Redis:
every check passes on a good setup and fails, naming the cause, when its precondition is broken."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from devstack.infra import Infra, drop_database, free_port, recreate_database
from shared import backup
from shared.preflight import REPORT_KEY, CheckResult, Report, render, stores
from shared.preflight import __main__ as runner
from shared.preflight.reports import store, stored_report
from shared.repositories import Database

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


def by_name(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {r.name: r for r in results}


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, database_url: str, redis_url: str) -> pytest.MonkeyPatch:
    """A good setup: the migrated test database, the test Redis, a valid bot username, no backups."""
    for name in (
        "BACKUP_DIR",
        "PREFLIGHT_MIN_FREE_MB",
        "PREFLIGHT_DISK_PATHS",
        "PREFLIGHT_MAX_CLOCK_SKEW_SEC",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("BOT_USERNAME", "stickerbooth_bot")
    return monkeypatch


async def test_a_good_setup_passes_every_store_check(env: pytest.MonkeyPatch) -> None:
    results = by_name(await stores.run_checks())
    assert {n: r.status for n, r in results.items()} == {
        "telegram.set_name_length": "ok",
        "postgres": "ok",
        "clock": "ok",
        "redis": "ok",
        "disk": "ok",
        "backup": "skip",
    }


async def test_a_30_character_bot_username_fails_the_set_name_check(env: pytest.MonkeyPatch) -> None:
    env.setenv("BOT_USERNAME", "a" * 26 + "_bot")  # 30 characters: Telegram allows it, our set names not
    check = by_name(await stores.run_checks())
    assert "telegram.set_name_length" not in check
    failed = check["settings.bot_username"]
    assert failed.status == "fail"
    assert "BOT_USERNAME" in failed.detail and "at most 26 characters" in failed.fix


async def test_a_username_the_settings_refuse_is_a_failed_check_not_a_traceback(
    env: pytest.MonkeyPatch,
) -> None:
    env.setenv("BOT_USERNAME", "@stickerbooth_bot")
    check = by_name(await stores.run_checks())["settings.bot_username"]
    assert check.status == "fail"
    assert "bot_username" in check.detail.lower()


@pytest.fixture
def unmigrated(infra: Infra) -> Iterator[str]:
    name = f"sb_preflight_{os.getpid()}"
    url = recreate_database(infra.postgres_url, name)
    yield url
    drop_database(infra.postgres_url, name)


async def test_postgres_not_at_head_fails(env: pytest.MonkeyPatch, unmigrated: str) -> None:
    env.setenv("DATABASE_URL", unmigrated)
    check = by_name(await stores.run_checks())["postgres"]
    assert check.status == "fail"
    assert "never migrated" in check.detail and "shared.migrate" in check.fix


async def test_postgres_down_fails(env: pytest.MonkeyPatch) -> None:
    env.setenv("DATABASE_URL", f"postgresql://postgres@127.0.0.1:{free_port()}/nowhere")
    results = by_name(await stores.run_checks())
    assert results["postgres"].status == "fail"
    assert "cannot reach" in results["postgres"].detail
    assert results["clock"].status == "skip"


async def test_redis_down_fails(env: pytest.MonkeyPatch) -> None:
    env.setenv("REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")
    check = by_name(await stores.run_checks())["redis"]
    assert check.status == "fail"
    assert "cannot reach" in check.detail


async def test_too_little_free_disk_fails(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env.setenv("PREFLIGHT_DISK_PATHS", str(tmp_path))
    env.setenv("PREFLIGHT_MIN_FREE_MB", str(shutil.disk_usage(tmp_path).free // 2**20 + 10_000))
    check = by_name(await stores.run_checks())["disk"]
    assert check.status == "fail"
    assert str(tmp_path) in check.detail


async def test_a_clock_off_postgres_by_more_than_the_limit_fails(env: pytest.MonkeyPatch) -> None:
    env.setenv("PREFLIGHT_MAX_CLOCK_SKEW_SEC", "0.000001")  # any real difference is over it
    check = by_name(await stores.run_checks())["clock"]
    assert check.status == "fail"
    assert "off Postgres's" in check.detail


def _settings(database_url: str, directory: Path, max_age_h: float = 26) -> stores.StoresPreflightSettings:
    return stores.StoresPreflightSettings(
        DATABASE_URL=database_url,
        REDIS_URL="redis://127.0.0.1:6379/0",
        BACKUP_DIR=directory,
        BACKUP_MAX_AGE_HOURS=max_age_h,
    )


def test_no_backup_at_all_fails(database_url: str, tmp_path: Path) -> None:
    check = stores.backup_check(_settings(database_url, tmp_path))
    assert check.status == "fail"
    assert "no backup" in check.detail


@pytest.fixture
def taken(database_url: str, tmp_path: Path) -> Path:
    """A real generation of the test database (pg_dump + the backup's own check), or skip without tools
    of the server's major version (as tests/shared/test_backup.py)."""
    if shutil.which("pg_dump") is None:
        pytest.skip("no pg_dump here")
    try:
        generation = backup.take_backup(
            backup.BackupSettings(DATABASE_URL=database_url, BACKUP_DIR=tmp_path, BACKUP_KEEP=3)
        )
    except backup.BackupError as exc:
        pytest.skip(f"no usable pg_dump for this server: {exc}")
    return generation.path


def test_a_recent_restorable_backup_passes(database_url: str, taken: Path) -> None:
    check = stores.backup_check(_settings(database_url, taken.parent))
    assert check.status == "ok", check


def test_a_stale_backup_fails(database_url: str, taken: Path) -> None:
    later = datetime.now(UTC) + timedelta(hours=30)
    check = stores.backup_check(_settings(database_url, taken.parent), now=later)
    assert check.status == "fail"
    assert "h old" in check.detail


def test_a_backup_that_does_not_restore_fails(database_url: str, taken: Path) -> None:
    data = taken.read_bytes()
    taken.write_bytes(data[: len(data) // 2])  # truncated: the table of contents reads, the data does not
    check = stores.backup_check(_settings(database_url, taken.parent))
    assert check.status == "fail"
    assert "not restorable" in check.detail


async def test_a_part_that_cannot_run_is_a_failed_check_naming_it() -> None:
    results = await runner.run_part("no_such_package.preflight")
    assert [(r.name, r.status) for r in results] == [("no_such_package.preflight", "fail")]
    assert "No module named" in results[0].detail


async def test_the_runner_prints_one_line_per_check_and_exits_1_on_a_failure(
    env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env.setenv("REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")
    code = await _run_main(["--part", "shared.preflight.stores"])
    out = capsys.readouterr().out
    assert code == 1
    assert any(line.startswith("FAIL  redis") for line in out.splitlines())
    assert "→ start Redis or correct REDIS_URL" in out
    assert "NOT READY: 1 check(s) failed (redis)." in out


async def _run_main(argv: list[str]) -> int:
    import asyncio

    return await asyncio.to_thread(runner.main, argv)


async def test_the_report_is_stored_and_read_back(env: pytest.MonkeyPatch, db: Database) -> None:
    report = Report(
        at=datetime(2026, 12, 2, 17, 0, tzinfo=UTC),
        source="test",
        results=(CheckResult("redis", "fail", "down", "start it"), CheckResult("disk", "ok", "fine")),
    )
    assert await store(report) is None
    back = await stored_report(db)
    assert back == report and not back.ok
    async with db.transaction() as repos:
        assert (await repos.settings.get(REPORT_KEY))["ok"] is False


def test_render_marks_failures_and_fixes() -> None:
    text = render([CheckResult("a", "ok", "fine"), CheckResult("b", "fail", "broken", "mend it")])
    assert text.splitlines() == [
        "ok    a  fine",
        "FAIL  b  broken",
        "         → mend it",
        "NOT READY: 1 check(s) failed (b).",
    ]
