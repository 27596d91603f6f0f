"""A TCP proxy in front of the emulator that can be cut, to make a replica vanish abruptly.

Cutting it is what a crashed or partitioned replica looks like from the cluster: its watches
end, it can neither renew nor release its Lease, and its writes stop.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import yaml


class CuttableProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target_host = target_host
        self.target_port = target_port
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.cut = False

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut:
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection(self.target_host, self.target_port)
        self._writers.update((writer, up_writer))
        pumps = [
            asyncio.create_task(self._pump(reader, up_writer)),
            asyncio.create_task(self._pump(up_reader, writer)),
        ]
        self._tasks.update(pumps)
        await asyncio.gather(*pumps, return_exceptions=True)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def kill(self) -> None:
        """Drop every connection and refuse new ones."""
        self.cut = True
        for task in self._tasks:
            task.cancel()
        for writer in self._writers:
            writer.close()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def stop(self) -> None:
        await self.kill()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def kubeconfig(self, original: Path, path: Path) -> Path:
        document = yaml.safe_load(original.read_text())
        for cluster in document["clusters"]:
            cluster["cluster"]["server"] = f"http://127.0.0.1:{self.port}"
        path.write_text(yaml.safe_dump(document))
        return path
