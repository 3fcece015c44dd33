"""A fake Kafka broker, a request proxy in a subprocess and its control client, for the proxy's tests.

The fake reads Kafka frames and answers each with its correlation id, ThrottleTimeMs 0, an error code
chosen per API, then the request's body (so a test sees its bytes came back whole). It records every frame
it received, per connection, so a test can say what the broker saw and when; a connection whose framing is
not Kafka's is echoed raw.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROXY_MODULE = "kchaos.compose.proxy.request_proxy"
WAIT = 10.0


def wait_until(condition: Callable[[], bool], timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.01)


def recv_exact(sock: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def request(api_key: int, correlation_id: int, client_id: str | None = "producer-0") -> bytes:
    """A request frame at version 1 (header v1), its body naming it so each request's bytes differ."""
    cid = b"" if client_id is None else client_id.encode()
    body = struct.pack(">hhih", api_key, 1, correlation_id, -1 if client_id is None else len(cid)) + cid
    body += f"body of {correlation_id}".encode() * (1 + correlation_id % 5)
    return struct.pack(">i", len(body)) + body


def read_answer(sock: socket.socket) -> tuple[int, bytes] | None:
    """(correlation id, whole response body) of the next answer, None when the proxy closed."""
    prefix = recv_exact(sock, 4)
    if prefix is None:
        return None
    body = recv_exact(sock, struct.unpack(">i", prefix)[0])
    if body is None:
        return None
    return struct.unpack_from(">i", body)[0], body


@dataclass
class FakeKafka:
    errors: dict[int, int] = field(default_factory=dict)
    received: list[tuple[int, int, int, bytes]] = field(default_factory=list)  # conn, api, correlation, frame
    raw: bytearray = field(default_factory=bytearray)
    closed: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self._conns = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def correlation_ids(self, api_key: int | None = None) -> list[int]:
        return [corr for _, api, corr, _ in list(self.received) if api_key in (None, api)]

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.server.accept()
            except OSError:
                return
            self._conns += 1
            threading.Thread(target=self._serve, args=(sock, self._conns), daemon=True).start()

    def _serve(self, sock: socket.socket, conn: int) -> None:
        with sock:
            try:
                while (prefix := recv_exact(sock, 4)) is not None:
                    size = struct.unpack(">i", prefix)[0]
                    if not 8 <= size <= 100 * 1024 * 1024:
                        self._echo_raw(sock, prefix)
                        break
                    body = recv_exact(sock, size)
                    if body is None:
                        break
                    api_key, _, corr = struct.unpack_from(">hhi", body)
                    self.received.append((conn, api_key, corr, prefix + body))
                    answer = struct.pack(">iih", corr, 0, self.errors.get(api_key, 0)) + body
                    sock.sendall(struct.pack(">i", len(answer)) + answer)
            except OSError:
                pass
        self.closed.add(conn)

    def _echo_raw(self, sock: socket.socket, first: bytes) -> None:
        self.raw += first
        sock.sendall(first)
        while chunk := sock.recv(65536):
            self.raw += chunk
            sock.sendall(chunk)

    def stop(self) -> None:
        self.server.close()


class Proxy:
    """The proxy as a subprocess, on loopback ports it chose, with one control connection."""

    REST = ("--listen", "127.0.0.1:0", "--control", "127.0.0.1:0", "--events")

    def __init__(self, upstream: int, events: Path, command: list[str] | None = None) -> None:
        argv = command or [sys.executable, "-m", PROXY_MODULE]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(
            [*argv, "--upstream", f"127.0.0.1:{upstream}", *self.REST, str(events)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        assert self.process.stdout is not None
        bound = json.loads(self.process.stdout.readline())
        self.listen = int(bound["listen"].rsplit(":", 1)[1])
        self.control_port = int(bound["control"].rsplit(":", 1)[1])
        self.control = Control(self.control_port)

    def client(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.listen))
        sock.settimeout(WAIT)
        return sock

    def stop(self) -> int:
        self.control.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=WAIT)
        assert self.process.stderr is not None
        self.stderr = self.process.stderr.read()
        return code


class Control:
    """A control client: commands and their answers, and the events as they arrive."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.lines = self.sock.makefile("r", encoding="utf-8")
        self.events: list[dict[str, Any]] = []
        self._answers: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for line in self.lines:
                record = json.loads(line)
                with self._lock:
                    (self.events if "event" in record else self._answers).append(record)
        except (OSError, ValueError):
            return

    def send(self, **command: Any) -> dict[str, Any]:
        self.sock.sendall((json.dumps(command) + "\n").encode())
        wait_until(lambda: bool(self._answers))
        with self._lock:
            return self._answers.pop(0)

    def event(self, kind: str, **match: Any) -> dict[str, Any]:
        """Waits for the first event of `kind` whose fields include `match`."""
        found: list[dict[str, Any]] = []

        def seen() -> bool:
            with self._lock:
                found[:] = [e for e in self.events if e["event"] == kind and match.items() <= e.items()]
            return bool(found)

        wait_until(seen)
        return found[0]

    def kinds(self) -> list[str]:
        with self._lock:
            return [event["event"] for event in self.events]

    def close(self) -> None:
        self.sock.close()
