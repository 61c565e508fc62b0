"""A TCP proxy in front of a real server, to cut one client off it as an outage does: :meth:`cut` resets
every open connection and refuses new ones (closed at once, as a stopped server's port answers), and
:meth:`restore` lets them through again. Only the clients pointed at the proxy see the outage.
:meth:`blackhole` is a network partition instead: nothing is forwarded either way and nothing is closed,
so the client sees silence (a query that never answers), not a reset (issue 22: the gateway's lease must
expire behind a partition, where no connection drops)."""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlsplit, urlunsplit


class TcpProxy:
    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.down = False
        self.silent = False
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @classmethod
    async def to_url(cls, url: str) -> tuple[TcpProxy, str]:
        """A started proxy to the host and port of ``url``, and ``url`` pointed at the proxy."""
        parts = urlsplit(url)
        proxy = cls(parts.hostname or "127.0.0.1", parts.port or 5432)
        await proxy.start()
        auth = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
        return proxy, urlunsplit(parts._replace(netloc=f"{auth}127.0.0.1:{proxy.port}"))

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def cut(self) -> None:
        """Reset every open connection; refuse new ones until :meth:`restore`."""
        self.down = True
        for writer in list(self._writers):
            writer.transport.abort()

    def blackhole(self) -> None:
        """Forward nothing, close nothing, answer no new connection, until :meth:`restore` (what was sent
        meanwhile is lost, as on a partition)."""
        self.silent = True

    def restore(self) -> None:
        self.down = False
        self.silent = False

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.down:
            writer.transport.abort()
            return
        if self.silent:  # the connection is "made" and never answered
            self._writers.add(writer)
            try:
                with contextlib.suppress(OSError):
                    while await reader.read(65536):
                        pass
            finally:
                self._writers.discard(writer)
                writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, up_writer}
        try:
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        finally:
            self._writers -= {writer, up_writer}
            for w in (writer, up_writer):
                w.transport.abort()
                w.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(65536):
                if self.silent:
                    continue  # lost on the way
                writer.write(data)
                await writer.drain()
        writer.transport.abort()
