"""One proxied client connection: its requests to the broker in order, the broker's answers back.

Kafka answers a connection's requests in the order they were sent, so a held request holds every later
request of its connection (they queue behind it) while other connections flow. With nothing queued a
request is written through at once, so a connection no rule touches pays only the framing.

A client that gave up does not cancel its request: when the client closes its side while a request is
held, the broker side stays open; on release the held request, and whatever queued behind it, is delivered,
the answers are read and recorded (`answered`), and only then is the broker side closed, or after
`answer_timeout` seconds without an answer (`answer_lost`). That is how a stale EndTxn reaches a coordinator
after its application moved on, which is the sequence the proxy exists to make.

Events of a held request, in order: `held`, maybe `client_closed`, `released`, `delivered`, then `answered`
or `answer_lost`; a dropped request has `dropped` alone. Requests nothing selected have no events.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol

from .events import EventLog
from .framing import RESPONSE_HEAD, SIZE, Header, frame_size, parse_header
from .rules import Rule

_CHUNK = 256 * 1024


class Switchboard(Protocol):
    """What a connection needs of the proxy: the rules, the event log and how long to wait for an answer
    nobody is connected to receive."""

    events: EventLog
    answer_timeout: float

    def select(self, header: Header, peer: str) -> Rule | None: ...

    def selecting(self) -> bool: ...


@dataclass(eq=False)
class Request:
    """A request (or, on a connection that is not Kafka framing, a raw chunk) waiting for its turn."""

    conn: Connection
    data: bytes
    header: Header | None = None
    rule: Rule | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    timer: asyncio.TimerHandle | None = None

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {"conn": self.conn.number, "peer": self.conn.peer}
        described["upstream"] = self.conn.upstream
        if self.rule is not None:
            described |= {"rule": self.rule.rule_id, "action": self.rule.action}
        if self.header is not None:
            described |= {
                "api_key": self.header.api_key,
                "api_version": self.header.api_version,
                "correlation_id": self.header.correlation_id,
                "client_id": self.header.client_id,
            }
        return described

    def release(self, by: str) -> bool:
        if self.ready.is_set():
            return False
        self.ready.set()
        self._unhold()
        connected = self.conn.client_connected
        self.conn.events.emit("released", by=by, client_connected=connected, **self.describe())
        return True

    def lost(self, reason: str) -> None:
        """Ends the hold of a request that will never be answered, saying why."""
        self._unhold()
        self.conn.events.emit("answer_lost", reason=reason, **self.describe())

    def _unhold(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.rule is not None and self in self.rule.held:
            self.rule.held.remove(self)


class Connection:
    """A client connection and its broker-side twin."""

    def __init__(self, board: Switchboard, number: int, peer: str, upstream: str) -> None:
        self.board = board
        self.events = board.events
        self.number = number
        self.peer = peer
        self.upstream = upstream
        self.client_connected = True
        self.closed = False
        self.pending: deque[Request] = deque()
        #: correlation id -> a request a rule selected that was delivered and awaits its answer
        self.tracked: dict[int, Request] = {}
        self._drainer: asyncio.Task[None] | None = None
        self._client: asyncio.StreamWriter | None = None
        self._broker: asyncio.StreamWriter | None = None

    async def run(
        self,
        client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        broker: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    ) -> None:
        """Pumps both ways until both sides are done; an error here ends this connection only."""
        self._client, self._broker = client[1], broker[1]
        try:
            await asyncio.gather(self._requests(client[0]), self._responses(broker[0]))
        finally:
            self.close("connection ended")

    # --- client -> broker ------------------------------------------------------------------------------
    async def _requests(self, reader: asyncio.StreamReader) -> None:
        """Reads what the client sends a chunk at a time and forwards each run of requests no rule takes in
        one write: per-request awaits would cost a busy connection most of its rate."""
        buffer = bytearray()
        raw = False
        try:
            while not self.closed and (chunk := await reader.read(_CHUNK)):
                if raw:
                    await self._send(Request(self, chunk))
                    continue
                buffer += chunk
                done, raw = await self._frames(buffer)
                if raw:
                    await self._send(Request(self, bytes(buffer[done:])))
                    done = len(buffer)
                del buffer[:done]
        except (ConnectionError, OSError):
            pass
        if buffer and not self.closed:
            await self._send(Request(self, bytes(buffer)))  # a client that closed mid-frame: its bytes go on
        await self._client_gone()

    async def _frames(self, buffer: bytearray) -> tuple[int, bool]:
        """Sends the whole requests at the start of `buffer`; returns how many bytes that was, and whether
        the rest is not Kafka framing (then it is passed through raw from there on)."""
        offset = start = 0
        selecting = self.board.selecting()
        while len(buffer) - offset >= SIZE.size:
            size = frame_size(buffer, offset, 8)
            if size is None:
                await self._pass(buffer, start, offset)
                return offset, True
            end = offset + SIZE.size + size
            if end > len(buffer):
                break
            if selecting:
                header = parse_header(buffer, offset + SIZE.size, end)
                rule = self.board.select(header, self.peer)
                if rule is not None:
                    await self._pass(buffer, start, offset)
                    await self._send(Request(self, bytes(buffer[offset:end]), header, rule))
                    start = end
            offset = end
        await self._pass(buffer, start, offset)
        return offset, False

    async def _pass(self, buffer: bytearray, start: int, end: int) -> None:
        if end > start:
            await self._send(Request(self, bytes(buffer[start:end])))

    async def _send(self, request: Request) -> None:
        """Writes the request through, or queues it behind earlier ones, or holds it as its rule says."""
        if self.closed:
            return
        rule = request.rule
        if rule is None and not self.pending:
            assert self._broker is not None
            self._broker.write(request.data)
            await self._broker.drain()
            return
        if rule is not None and rule.action == "drop":
            request.ready.set()
        elif rule is not None:
            rule.held.append(request)
            self.events.emit("held", **request.describe())
            if rule.delay_ms is not None:
                loop = asyncio.get_running_loop()
                request.timer = loop.call_later(rule.delay_ms / 1000, request.release, "delay")
        else:
            request.ready.set()
        self.pending.append(request)
        if self._drainer is None:
            self._drainer = asyncio.create_task(self._drain())

    async def _drain(self) -> None:
        """Delivers the queue in order, each request once it is ready (released, or never held)."""
        broker = self._broker
        assert broker is not None
        try:
            while self.pending and not self.closed:
                request = self.pending[0]
                await request.ready.wait()
                self.pending.popleft()
                if request.rule is not None and request.rule.action == "drop":
                    self.events.emit("dropped", **request.describe())
                    self.close("connection cut by a drop", abort=True)
                    return
                broker.write(request.data)
                if request.rule is not None and request.header is not None:
                    self.tracked[request.header.correlation_id] = request
                    connected = self.client_connected
                    self.events.emit("delivered", client_connected=connected, **request.describe())
                await broker.drain()
        except (ConnectionError, OSError):
            self.close("broker side failed")
        finally:
            self._drainer = None
        if not self.client_connected:
            await self._finish()

    async def _client_gone(self) -> None:
        """The client closed its side: held requests stay held and are delivered on release."""
        if not self.client_connected:
            return
        self.client_connected = False
        if self._client is not None:
            self._client.close()
        for request in self.pending:
            if request.rule is not None and not request.ready.is_set():
                self.events.emit("client_closed", **request.describe())
        if self._drainer is None:
            await self._finish()

    async def _finish(self) -> None:
        """With the client gone and the queue delivered: waits for the selected requests' answers, then
        closes the broker side."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.board.answer_timeout
        while self.tracked and not self.closed and loop.time() < deadline:
            await asyncio.sleep(0.05)
        for request in list(self.tracked.values()):
            request.lost(f"no answer within {self.board.answer_timeout:g} s after the client closed")
        self.tracked.clear()
        self.close("client closed")

    # --- broker -> client ------------------------------------------------------------------------------
    async def _responses(self, reader: asyncio.StreamReader) -> None:
        """Forwards the broker's bytes as they come and follows the frame boundaries beside them, to pair
        an answer with a selected request by its correlation id (its head kept, its body skipped)."""
        buffer = bytearray()
        skip = 0  # bytes of the current frame's body still to come, not kept
        raw = False
        try:
            while not self.closed and (chunk := await reader.read(_CHUNK)):
                await self._answer(chunk)
                if raw or skip >= len(chunk):
                    skip = 0 if raw else skip - len(chunk)
                    continue
                buffer += memoryview(chunk)[skip:]
                skip, raw, done = self._boundaries(buffer)
                del buffer[:done]
        except (ConnectionError, OSError):
            pass
        self.close("broker closed the connection")

    def _boundaries(self, buffer: bytearray) -> tuple[int, bool, int]:
        """(bytes of the last frame still to come, whether the framing broke, bytes of `buffer` consumed)."""
        offset = 0
        while len(buffer) - offset >= SIZE.size:
            size = frame_size(buffer, offset, SIZE.size)
            if size is None:
                return 0, True, len(buffer)
            head = min(size, RESPONSE_HEAD) if self.tracked else SIZE.size
            if len(buffer) - offset - SIZE.size < head:
                break
            body = offset + SIZE.size
            if self.tracked:
                (correlation_id,) = SIZE.unpack_from(buffer, body)
                request = self.tracked.pop(correlation_id, None)
                if request is not None:
                    self.events.emit(
                        "answered",
                        client_connected=self.client_connected,
                        response_bytes=size,
                        response_head=buffer[body : body + head].hex(),
                        **request.describe(),
                    )
            end = body + size
            if end > len(buffer):
                return end - len(buffer), False, len(buffer)
            offset = end
        return 0, False, offset

    async def _answer(self, data: bytes) -> None:
        if not self.client_connected or self._client is None:
            return
        try:
            self._client.write(data)
            await self._client.drain()
        except (ConnectionError, OSError):
            await self._client_gone()

    # --- the end -----------------------------------------------------------------------------------------
    def close(self, reason: str, abort: bool = False) -> None:
        """Ends both sides once; every request still held or unanswered is recorded as lost, with why."""
        if self.closed:
            return
        self.closed = True
        for request in self.pending:
            if request.rule is not None and request.rule.action != "drop":
                request.lost(f"{reason} before delivery")
        self.pending.clear()
        for request in self.tracked.values():
            request.lost(f"{reason} before an answer")
        self.tracked.clear()
        for writer in (self._client, self._broker):
            if writer is None:
                continue
            with contextlib.suppress(Exception):
                if abort:
                    writer.transport.abort()
                else:
                    writer.close()
        drainer = self._drainer
        if drainer is not None and drainer is not asyncio.current_task():
            drainer.cancel()


def report(error: BaseException, conn: int) -> None:
    """One connection's unexpected error, on stderr: the proxy and its other connections carry on."""
    print(f"request proxy: connection {conn} failed: {type(error).__name__}: {error}", file=sys.stderr)
