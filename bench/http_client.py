"""A minimal HTTP/1.1 keep-alive client for the benches: raw sockets under asyncio, no HTTP
library, so the load generator costs a small share of one core (`bench.load`); and the answer
form's fields read from a page (`bench.load`, `bench.answer_cost`)."""

from __future__ import annotations

import asyncio
import re


class HttpError(Exception):
    pass


Reply = tuple[int, list[tuple[bytes, bytes]], bytes]


class _Http(asyncio.Protocol):
    """HTTP/1.1 responses parsed straight from the socket's bytes (cheaper than streams)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.waiter: asyncio.Future | None = None
        self.closed = False

    def connection_made(self, transport) -> None:
        self.transport = transport

    def connection_lost(self, exc) -> None:
        self.closed = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionError("the server closed the connection"))

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.waiter is None or self.waiter.done():
            return
        try:
            reply = self._parse()
        except (ValueError, IndexError) as exc:
            self.waiter.set_exception(HttpError(f"unparsable response: {exc}"))
            return
        if reply is not None:
            self.waiter.set_result(reply)

    def _parse(self) -> tuple[Reply, bool] | None:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return None
        lines = bytes(self.buffer[:end]).split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        headers = []
        length, chunked, close = 0, False, False
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name, value = name.strip().lower(), value.strip()
            headers.append((name, value))
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
            elif name == b"connection" and value.lower() == b"close":
                close = True
        start = end + 4
        if not chunked:
            if len(self.buffer) < start + length:
                return None
            body = bytes(self.buffer[start:start + length])
            del self.buffer[:start + length]
            return (status, headers, body), close
        parts, pos = [], start
        while True:
            eol = self.buffer.find(b"\r\n", pos)
            if eol < 0:
                return None
            size = int(bytes(self.buffer[pos:eol]).split(b";")[0], 16)
            if len(self.buffer) < eol + 2 + size + 2:
                return None
            parts.append(bytes(self.buffer[eol + 2:eol + 2 + size]))
            pos = eol + 2 + size + 2
            if size == 0:
                del self.buffer[:pos]
                return (status, headers, b"".join(parts)), close


class Connection:
    """One keep-alive HTTP/1.1 connection to the server; reconnects when the server closes it."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.protocol: _Http | None = None

    def close(self) -> None:
        if self.protocol is not None and self.protocol.transport is not None:
            self.protocol.transport.close()
        self.protocol = None

    async def request(self, head: bytes, body: bytes = b"") -> Reply:
        """Send one request (`head` ends with the blank line) and read the whole response."""
        loop = asyncio.get_running_loop()
        for attempt in (1, 2):
            if self.protocol is None or self.protocol.closed:
                _, self.protocol = await loop.create_connection(_Http, self.host, self.port)
            protocol = self.protocol
            protocol.buffer.clear()
            protocol.waiter = loop.create_future()
            protocol.transport.write(head + body)
            try:
                reply, close = await protocol.waiter
            except ConnectionError:
                # A keep-alive connection the server closed while idle: reconnect once.
                self.close()
                if attempt == 2:
                    raise
                continue
            finally:
                protocol.waiter = None
            if close:
                self.close()
            return reply
        raise HttpError("unreachable")


# The item page's answer form: its CSRF token and the presentation's position.
CSRF_RE = re.compile(rb'name="csrfmiddlewaretoken" value="([^"]+)"')
POSITION_RE = re.compile(rb'name="position" value="(\d+)"')
