"""Postgres access: one async engine per process, transactions that translate driver errors.

All SQL lives in :mod:`shared.repositories`; this module only builds the engine and maps connection
failures to :class:`shared.errors.DatabaseUnavailable` so callers fail fast (HTTP 503, consumer backoff).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import asyncpg
import sqlalchemy.exc
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from shared.errors import DatabaseUnavailable

_CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    asyncpg.exceptions.PostgresConnectionError,
    asyncpg.exceptions.CannotConnectNowError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.InterfaceError,
    sqlalchemy.exc.InterfaceError,
    sqlalchemy.exc.OperationalError,
    sqlalchemy.exc.TimeoutError,
    ConnectionError,
    TimeoutError,
)


def async_url(url: str) -> str:
    """Return ``url`` with the asyncpg driver, accepting ``postgres://`` and ``postgresql://`` forms."""
    for prefix in ("postgresql+asyncpg://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+asyncpg://" + url[len(prefix) :]
    raise ValueError(f"not a Postgres URL: {url.split('@')[-1]}")


def plain_url(url: str) -> str:
    """Return ``url`` as plain ``postgresql://`` (for asyncpg.connect and command-line tools)."""
    return "postgresql://" + async_url(url)[len("postgresql+asyncpg://") :]


@dataclass(frozen=True)
class ClientTarget:
    """A database as Postgres' client tools (``pg_dump``, ``pg_restore``, ``psql``) take it.

    ``conninfo``: a libpq URI without the password; ``password``: for ``PGPASSWORD`` (``None`` when the
    URL has none); ``database``: its name; ``display``: the URL with the password masked, for logs.
    """

    conninfo: str
    password: str | None
    database: str
    display: str


def client_target(url: str) -> ClientTarget:
    """Split ``url`` (any accepted form) for libpq, so the password can travel in the environment.

    Raises:
        ValueError: not a Postgres URL, or it names no database.
    """
    parsed = make_url(plain_url(url))
    if not parsed.database:
        raise ValueError("the URL names no database")
    without_password = URL.create(
        parsed.drivername, parsed.username, None, parsed.host, parsed.port, parsed.database, parsed.query
    )
    return ClientTarget(
        conninfo=without_password.render_as_string(hide_password=False),
        password=None if parsed.password is None else str(parsed.password),
        database=parsed.database,
        display=parsed.render_as_string(hide_password=True),
    )


def table_names() -> list[str]:
    """The names of the tables :mod:`shared.db.tables` defines, in dependency order."""
    from shared.db.tables import metadata

    return [table.name for table in metadata.sorted_tables]


def create_engine(url: str, *, pool_size: int = 5, connect_timeout_s: float = 5.0) -> AsyncEngine:
    """Build the process's engine. Opens no connection until first use.

    Args:
        url: ``DATABASE_URL`` in any accepted form.
        pool_size: connections kept open per process.
        connect_timeout_s: seconds before a connection attempt counts as "Postgres unavailable".
    """
    return create_async_engine(
        async_url(url),
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=True,
        pool_recycle=1800,
        connect_args={"timeout": connect_timeout_s, "command_timeout": 30},
    )


def is_connection_error(exc: BaseException) -> bool:
    """True when ``exc`` means Postgres could not be reached (not a constraint or SQL error)."""
    if isinstance(exc, sqlalchemy.exc.DBAPIError):
        cause = exc.orig.__cause__ if exc.orig is not None else None
        return bool(
            exc.connection_invalidated
            or isinstance(exc, sqlalchemy.exc.InterfaceError | sqlalchemy.exc.OperationalError)
            or isinstance(exc.orig, _CONNECTION_ERRORS)
            or isinstance(cause, _CONNECTION_ERRORS)
        )
    return isinstance(exc, _CONNECTION_ERRORS)


@asynccontextmanager
async def transaction(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """One transaction: commits on success, rolls back on error.

    Raises:
        DatabaseUnavailable: Postgres could not be reached or dropped the connection.
    """
    try:
        async with engine.begin() as conn:
            yield conn
    except DatabaseUnavailable:
        raise
    except BaseException as exc:
        if isinstance(exc, Exception) and is_connection_error(exc):
            raise DatabaseUnavailable(f"postgres unavailable: {type(exc).__name__}") from exc
        raise
