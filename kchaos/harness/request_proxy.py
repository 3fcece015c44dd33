"""The request proxy in front of one node's Kafka listeners, and the harness's line to it.

A request-level fault (hold, drop or delay one chosen request while everything else flows) needs a party
on the wire that knows where one Kafka request ends: `kchaos/compose/proxy/request_proxy.py`, a program
that reads only the framing and the request header. It runs in the node's network sidecar, which owns the
node's network namespace, and a NAT rule there redirects every connection arriving for the node's client,
inter-broker and controller listeners to it; it forwards each to the address it was meant for. So clients
on the host, client processes, other brokers and controllers all pass through it, and the Kafka process
knows nothing of it. A connection the node opens itself leaves through OUTPUT and is met by the proxy of
the node it goes to: each link is seen once, at its receiving end.

The proxy has to be in place before the connections it should see are opened (NAT applies to a
connection's first packet), so a cluster that may need it starts it on each node before the node's Kafka
(`KafkaCluster(proxy_events=...)`), and a cluster that does not pays nothing. Its events (a request
held, released, answered) come back over its control connection as they happen and are also kept in a
file in the sidecar, which `stop` reads back: a dropped control connection loses no event.
"""

from __future__ import annotations

import json
import queue
import socket
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from importlib import resources
from pathlib import PurePosixPath
from typing import Any

from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.container_files import put_file
from kchaos.harness.docker_node import DockerNode
from kchaos.harness.kafka_node import CLIENT_PORT, CONTROLLER_PORT, INTERNAL_PORT

#: Where the proxy's files live in the sidecar.
PROXY_DIR = PurePosixPath("/opt/kchaos/proxy")
#: Its event log in the sidecar, read back at the end.
EVENTS_FILE = PROXY_DIR / "events.ndjson"
#: The port connections are redirected to, and the one the harness controls it on; both inside the
#: node's namespace, chosen clear of Kafka's listeners.
LISTEN_PORT = 29092
CONTROL_PORT = 29093
#: The listeners whose connections pass through the proxy.
INTERCEPTED_PORTS = (CLIENT_PORT, INTERNAL_PORT, CONTROLLER_PORT)
#: How long the proxy may take to start listening, and a command to be answered.
START_SECONDS = 15.0
ANSWER_SECONDS = 10.0

#: What receives each event, with the node whose proxy saw it.
EventSink = Callable[[int, Mapping[str, Any]], None]


def _redirect_rule() -> list[str]:
    ports = ",".join(str(port) for port in INTERCEPTED_PORTS)
    tag = ["-m", "comment", "--comment", "kchaos:request-proxy"]
    return ["PREROUTING", "-p", "tcp", "-m", "multiport", "--dports", ports, *tag,
            "-j", "REDIRECT", "--to-ports", str(LISTEN_PORT)]  # fmt: skip


def _program_files() -> dict[str, bytes]:
    """The proxy's modules, as kchaos ships them (stdlib-only Python: the sidecar has python3)."""
    folder = resources.files("kchaos.compose") / "proxy"
    return {item.name: item.read_bytes() for item in folder.iterdir() if item.name.endswith(".py")}


class RequestProxy:
    """The proxy on one node: started in its sidecar, controlled over TCP, its events handed to `sink`.

    State: `connection` (None until started or after stop), `delivered` (the sequence numbers of the events
    already handed on, so that reading the event file back hands on only what the connection missed)."""

    def __init__(self, node: DockerNode, sink: EventSink) -> None:
        self.node = node
        self.sink = sink
        self.connection: socket.socket | None = None
        self.delivered: set[int] = set()
        self._answers: queue.Queue[dict[str, Any]] = queue.Queue()
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None

    def start(self) -> None:
        """Copies the program in, starts it, waits for its control port, then redirects the listeners."""
        sidecar = self.node.sidecar.get_wrapped_container()
        self.node.network_exec(["mkdir", "-p", str(PROXY_DIR)])
        for name, data in _program_files().items():
            put_file(sidecar, PROXY_DIR / name, data)
        sidecar.exec_run(
            ["python3", str(PROXY_DIR / "request_proxy.py"), "--redirected",
             "--listen", f"0.0.0.0:{LISTEN_PORT}", "--control", f"0.0.0.0:{CONTROL_PORT}",
             "--events", str(EVENTS_FILE)],
            detach=True,
        )  # fmt: skip
        self.connection = self._connect()
        self._reader = threading.Thread(target=self._read, name=f"proxy-{self.node.node_id}", daemon=True)
        self._reader.start()
        self.node.network_exec(["iptables", "-w", "-t", "nat", "-A", *_redirect_rule()])

    def _connect(self) -> socket.socket:
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                return socket.create_connection((self.node.ip, CONTROL_PORT), timeout=1.0)
            except OSError as exc:
                if time.monotonic() > deadline:
                    raise ClusterError(
                        f"node {self.node.node_id}: the request proxy did not listen on {self.node.ip}:"
                        f"{CONTROL_PORT} within {START_SECONDS:g} s ({exc}); see {EVENTS_FILE} in its sidecar"
                    ) from None
                time.sleep(0.2)

    def _read(self) -> None:
        connection = self.connection
        assert connection is not None
        connection.settimeout(None)
        with connection.makefile("r", encoding="utf-8") as lines:
            try:
                for line in lines:
                    self._take(json.loads(line))
            except (OSError, ValueError):
                return  # closed by stop, or the proxy died: `stop` reads the event file back

    def _take(self, message: dict[str, Any]) -> None:
        if "event" not in message:
            self._answers.put(message)
            return
        seq = int(message.get("seq", -1))
        if seq in self.delivered:
            return
        self.delivered.add(seq)
        self.sink(self.node.node_id, message)

    def command(self, op: str, **fields: Any) -> dict[str, Any]:
        """Sends one command and returns the proxy's answer; ClusterError if it refuses or is silent."""
        if self.connection is None:
            raise ClusterError(f"node {self.node.node_id}: the request proxy is not running")
        with self._lock:
            self.connection.sendall((json.dumps({"op": op, **fields}) + "\n").encode())
            try:
                answer = self._answers.get(timeout=ANSWER_SECONDS)
            except queue.Empty:
                raise ClusterError(
                    f"node {self.node.node_id}: the request proxy did not answer {op} within "
                    f"{ANSWER_SECONDS:g} s"
                ) from None
        if not answer.get("ok"):
            raise ClusterError(
                f"node {self.node.node_id}: the request proxy refused {op}: {answer.get('error')}"
            )
        return answer

    def stop(self) -> None:
        """Lifts the redirect, hands on any event the control connection missed, and ends the program.
        Safe to call twice, and on a node whose sidecar is gone (its events then went with it)."""
        if self.connection is None:
            return
        with suppress(ClusterError):  # the rule went with its sidecar
            self.node.network_exec(["iptables", "-w", "-t", "nat", "-D", *_redirect_rule()])
        with suppress(OSError):  # wakes the reader, whose read a close alone does not end
            self.connection.shutdown(socket.SHUT_RDWR)
        self.connection.close()
        self.connection = None
        if self._reader is not None:
            self._reader.join(5)
        try:
            raw = self.node.network_exec(["cat", str(EVENTS_FILE)])
        except ClusterError:
            raw = ""
        for line in raw.splitlines():
            if line.strip():
                self._take(json.loads(line))
        with suppress(ClusterError):  # not running any more
            self.node.network_exec(["pkill", "-TERM", "-f", str(PROXY_DIR / "request_proxy.py")])
