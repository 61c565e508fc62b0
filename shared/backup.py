"""Database backups: ``python -m shared.backup`` takes one generation; ``… restore FILE`` puts one back.

A generation is ``pg_dump --format=custom`` of ``DATABASE_URL``, stored in ``BACKUP_DIR`` as
``<database>-<YYYYmmddTHHMMSSZ>.dump`` (UTC). It is written under a hidden ``.….partial`` name and renamed
into place only after the integrity check passes: ``pg_restore --list`` reads the archive's table of
contents and it must hold the data of every table in :func:`shared.db.table_names` plus
``alembic_version`` (a dump of an empty or wrong database is refused); the archive's schema
(``pg_restore --schema-only``, every definition its TOC holds: tables, columns, constraints, indexes,
sequences, with their names and owners) must be, line for line, what ``pg_dump --schema-only`` gives for
the database right after (issue 19: ``--list`` prints only each entry's tag, and ``--file=/dev/null``
only writes the definitions out, so a damaged ``CREATE TABLE`` passed both and only the restore found
it); and ``pg_restore --file=/dev/null`` reads every data block first (``--list`` alone accepts a
truncated file: the TOC is at the start; a damaged block fails its zlib check). A migration that runs
between the dump and the check fails that day's backup (the next run takes a good one). After a good
generation the oldest beyond ``BACKUP_KEEP`` are deleted; a failed run deletes nothing but its own partial
file, so the older good generations survive. Blobs (selfies, stickers) are ``bytea`` rows of ``blobs`` and
are in the dump.

Source: issue 11 item 4; spec/000 "Single points of failure": the system we replace "backed up daily with
an integrity check". The schedule is the deployment's (k8s ``CronJob`` ``backup``; compose profile
``backup``). The client tools must be of the server's major version (``pg_dump`` refuses a newer server,
and a newer ``pg_restore`` sets parameters an older server rejects): the backup image carries those of the
``postgres:16-bookworm`` image (the ``backup`` target of the root ``Dockerfile``).

Exit status: 0 on success; 1 when the dump, the check, the restore, or taking the directory lock fails
(logged as ``BACKUP_FAILED``/``RESTORE_FAILED`` with the stage and pg_dump's last error lines; the
password never reaches argv or the log: it goes to the tools as ``PGPASSWORD``).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import structlog
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from shared.db import client_target, table_names
from shared.errors import StickerBoothError
from shared.logging import configure_logging
from shared.settings import settings_or_exit

#: The table Alembic keeps the schema revision in: a restore without it would not know its schema.
ALEMBIC_TABLE = "alembic_version"

STAMP_FORMAT = "%Y%m%dT%H%M%SZ"

#: ``pg_restore --list`` line of a table's data: ``3344; 0 16562 TABLE DATA public jobs booth``.
_TABLE_DATA = re.compile(r"^\d+; \d+ \d+ TABLE DATA (?P<schema>\S+) (?P<table>\S+) ")

#: Seconds pg_dump waits for a table lock (e.g. behind a migration) before it gives up.
LOCK_WAIT_S = 120

#: The lines of a tool's stderr kept in the log when it fails.
STDERR_LINES = 5


class BackupSettings(BaseSettings):
    """Env: ``DATABASE_URL`` (``postgresql://user:pass@host:5432/db``), ``BACKUP_DIR`` (where generations
    live; a volume), ``BACKUP_KEEP`` (generations kept, ≥ 1; 7 = a week of dailies), ``LOG_LEVEL``,
    ``LOG_FORMAT``."""

    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=False)

    database_url: str = Field(validation_alias="DATABASE_URL")
    backup_dir: Path = Field(Path("/backups"), validation_alias="BACKUP_DIR")
    backup_keep: int = Field(7, ge=1, validation_alias="BACKUP_KEEP")
    log_level: str = Field("INFO", validation_alias="LOG_LEVEL")
    log_format: str = Field("json", validation_alias="LOG_FORMAT")


class BackupError(StickerBoothError):
    """A backup or restore step failed; ``stage`` names it (``url``, ``lock``, ``tools``, ``dump``,
    ``check``, ``exists``, ``restore``), ``detail`` says why without secrets."""

    def __init__(self, stage: str, detail: str) -> None:
        super().__init__(f"{stage}: {detail}")
        self.stage = stage
        self.detail = detail


@dataclass(frozen=True)
class Generation:
    """A backup taken: the file, its size in bytes, the tables whose data it holds, and the older
    generations rotation deleted."""

    path: Path
    size_bytes: int
    tables: frozenset[str]
    deleted: tuple[Path, ...]


@dataclass(frozen=True)
class Target:
    """A database for the client tools: ``conninfo`` (a libpq URI without the password), ``env`` (the
    process environment plus ``PGPASSWORD`` when the URL has one), ``database`` and ``display`` (the URL
    with the password masked, for logs)."""

    conninfo: str
    env: Mapping[str, str]
    database: str
    display: str


def target(database_url: str) -> Target:
    """Split ``database_url`` (any accepted form) for libpq: the password leaves the URL for the env.

    Raises:
        BackupError: stage ``url`` when the URL names no database.
    """
    try:
        client = client_target(database_url)
    except ValueError as exc:
        raise BackupError("url", f"DATABASE_URL: {exc}") from exc
    env = dict(os.environ)
    if client.password is not None:
        env["PGPASSWORD"] = client.password
    env.setdefault("PGCONNECT_TIMEOUT", "10")
    return Target(conninfo=client.conninfo, env=env, database=client.database, display=client.display)


def expected_tables() -> frozenset[str]:
    """``schema.table`` of every table a good dump holds data for: tables.py's and Alembic's."""
    return frozenset({f"public.{name}" for name in table_names()} | {f"public.{ALEMBIC_TABLE}"})


def generation_name(database: str, taken_at: datetime) -> str:
    """``<database>-<YYYYmmddTHHMMSSZ>.dump`` of ``taken_at`` (aware) in UTC."""
    return f"{database}-{taken_at.astimezone(UTC).strftime(STAMP_FORMAT)}.dump"


def generations(directory: Path, database: str) -> list[Path]:
    """The finished generations of ``database`` in ``directory``, oldest first (partial files excluded)."""
    pattern = re.compile(rf"{re.escape(database)}-\d{{8}}T\d{{6}}Z\.dump")
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if pattern.fullmatch(p.name) and p.is_file())


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise BackupError("tools", f"{name} is not on PATH")
    return path


def _run(stage: str, args: list[str], env: Mapping[str, str]) -> str:
    """Run a client tool; its stdout, or BackupError(stage) with the tail of its stderr."""
    result = subprocess.run(args, env=dict(env), capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = " | ".join(result.stderr.strip().splitlines()[-STDERR_LINES:]) or "no error output"
        raise BackupError(stage, f"{Path(args[0]).name} exited {result.returncode}: {tail}")
    return result.stdout


def dump(db: Target, path: Path) -> None:
    """``pg_dump --format=custom`` of ``db`` into ``path``, fsynced.

    Raises:
        BackupError: stage ``dump`` when pg_dump fails (unreachable server, auth, version mismatch…).
    """
    _run(
        "dump",
        [
            _tool("pg_dump"),
            "--format=custom",
            "--no-password",
            f"--lock-wait-timeout={LOCK_WAIT_S}s",
            f"--file={path}",
            f"--dbname={db.conninfo}",
        ],
        db.env,
    )
    with path.open("rb") as handle:
        os.fsync(handle.fileno())


def verify(path: Path, expected: frozenset[str], db: Target) -> frozenset[str]:
    """The integrity check of an archive of ``db`` (module docstring): the TOC lists the data of every
    ``expected`` table, its definitions are the database's schema, and every data block reads to its end.
    Returns the ``schema.table`` names whose data the archive holds.

    Raises:
        BackupError: stage ``check`` when pg_restore cannot read the TOC or a block, a table is missing, or
            a definition differs from the database's (damage in the TOC).
    """
    toc = _run("check", [_tool("pg_restore"), "--list", str(path)], os.environ)
    found = frozenset(
        f"{m['schema']}.{m['table']}" for line in toc.splitlines() if (m := _TABLE_DATA.match(line))
    )
    missing = expected - found
    if missing:
        raise BackupError("check", f"the dump holds no data for {', '.join(sorted(missing))}")
    _run("check", [_tool("pg_restore"), f"--file={os.devnull}", str(path)], os.environ)
    archived = _run("check", [_tool("pg_restore"), "--schema-only", "--file=-", str(path)], os.environ)
    live = _run(
        "check", [_tool("pg_dump"), "--schema-only", "--no-password", f"--dbname={db.conninfo}"], db.env
    )
    _same_schema(_schema_lines(archived), _schema_lines(live))
    return found


#: Lines of a schema script that differ between two runs over the same schema: the random key of
#: ``\restrict``/``\unrestrict`` (pg_dump 17.6, 16.10, 15.14 and later) and the tools' version comments.
_RUN_LINES = re.compile(r"^(\\(un)?restrict |-- Dumped (from database|by pg_dump) version )")


def _schema_lines(script: str) -> list[str]:
    return [line for line in script.splitlines() if not _RUN_LINES.match(line)]


def _same_schema(archived: list[str], live: list[str]) -> None:
    if archived == live:
        return
    at = next(
        (n for n, (a, b) in enumerate(zip(archived, live, strict=False)) if a != b),
        min(len(archived), len(live)),
    )
    shown = archived[at][:80] if at < len(archived) else "(the archive ends)"
    raise BackupError(
        "check",
        f"the archive's definitions differ from the database's at line {at + 1} of the schema: {shown!r}",
    )


def rotate(directory: Path, database: str, keep: int) -> tuple[Path, ...]:
    """Delete the oldest generations of ``database`` beyond the newest ``keep``; returns those deleted."""
    old = generations(directory, database)[:-keep]
    for path in old:
        path.unlink(missing_ok=True)
    return tuple(old)


@contextmanager
def _directory_lock(directory: Path) -> Iterator[None]:
    """An exclusive lock on ``directory/.lock``: one run at a time per backup directory."""
    with (directory / ".lock").open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BackupError("lock", f"another backup is running in {directory}") from None
        yield


def take_backup(settings: BackupSettings, *, now: datetime | None = None) -> Generation:
    """Dump, check, rename into place, rotate. ``now`` (aware, default the current time) names the file.

    Raises:
        BackupError: any failed step, including the directory itself failing (stage ``directory``: not
            writable, read-only file system, disk full, …); the partial file is removed and no generation
            is deleted.
    """
    try:
        return _take_backup(settings, now=now)
    except OSError as exc:
        raise BackupError("directory", f"{settings.backup_dir}: {exc.strerror or exc}") from exc


def _take_backup(settings: BackupSettings, *, now: datetime | None) -> Generation:
    db = target(settings.database_url)
    directory = settings.backup_dir
    directory.mkdir(parents=True, exist_ok=True)
    with _directory_lock(directory):
        for stale in directory.glob(".*.partial"):  # left by a run that was killed mid-dump
            stale.unlink(missing_ok=True)
        final = directory / generation_name(db.database, now or datetime.now(UTC))
        if final.exists():
            raise BackupError("exists", f"{final.name} already exists")
        partial = directory / f".{final.name}.partial"
        try:
            dump(db, partial)
            tables = verify(partial, expected_tables(), db)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        os.replace(partial, final)
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)  # the rename itself survives a crash
        finally:
            os.close(fd)
        deleted = rotate(directory, db.database, settings.backup_keep)
        return Generation(final, final.stat().st_size, tables, deleted)


def restore(path: Path, database_url: str) -> None:
    """Restore a generation into ``database_url`` in one transaction, replacing the objects it holds
    (``--clean --if-exists``); owners and grants are the connecting role's. Stop the services first.

    Raises:
        BackupError: stage ``restore`` when pg_restore fails; the transaction leaves the database as it was.
    """
    db = target(database_url)
    _run(
        "restore",
        [
            _tool("pg_restore"),
            "--exit-on-error",
            "--single-transaction",
            "--clean",
            "--if-exists",
            "--no-owner",
            "--no-privileges",
            "--no-password",
            f"--dbname={db.conninfo}",
            str(path),
        ],
        db.env,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shared.backup", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("dump", help="take one generation (the default)")
    restore_cmd = commands.add_parser("restore", help="restore a generation into DATABASE_URL")
    restore_cmd.add_argument("file", type=Path, help="a .dump file of BACKUP_DIR")
    args = parser.parse_args(argv)
    settings = settings_or_exit(BackupSettings, "backup")
    configure_logging(service="backup", level=settings.log_level, fmt=settings.log_format)
    log = structlog.get_logger("shared.backup")  # after configure: bound to this run's stderr
    if args.command == "restore":
        try:
            restore(args.file, settings.database_url)
        except BackupError as exc:
            log.error("RESTORE_FAILED", stage=exc.stage, reason=exc.detail, file=str(args.file))
            return 1
        log.info("RESTORE_OK", file=str(args.file), database=target(settings.database_url).display)
        return 0
    try:
        generation = take_backup(settings)
    except BackupError as exc:
        log.error("BACKUP_FAILED", stage=exc.stage, reason=exc.detail, directory=str(settings.backup_dir))
        return 1
    log.info(
        "BACKUP_OK",
        file=str(generation.path),
        bytes=generation.size_bytes,
        tables=len(generation.tables),
        keep=settings.backup_keep,
        deleted=[p.name for p in generation.deleted],
        database=target(settings.database_url).display,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
