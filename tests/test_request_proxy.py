"""The request proxy on loopback, in front of a fake broker (tests/fake_kafka.py): what passes, what is
held, dropped or delayed, and what its history (the events) says about each held request."""

from __future__ import annotations

import ast
import contextlib
import json
import shutil
import socket
import struct
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kchaos.compose.proxy.framing import Header, original_destination, parse_header
from kchaos.model.kafka_apis import API_KEYS, decode_error_code
from tests.fake_kafka import ROOT, Control, FakeKafka, Proxy, read_answer, request, wait_until

END_TXN, PRODUCE, METADATA, HEARTBEAT = (API_KEYS[a] for a in ("EndTxn", "Produce", "Metadata", "Heartbeat"))
PROXY_DIR = ROOT / "kchaos" / "compose" / "proxy"


@pytest.fixture
def broker() -> Iterator[FakeKafka]:
    fake = FakeKafka(errors={END_TXN: 51})
    yield fake
    fake.stop()


@pytest.fixture
def proxy(broker: FakeKafka, tmp_path: Path) -> Iterator[Proxy]:
    running = Proxy(broker.port, tmp_path / "events.jsonl")
    yield running
    assert running.stop() == 0, running.stderr


def _events(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_pass_through_keeps_every_byte_and_the_order(proxy: Proxy, broker: FakeKafka) -> None:
    client = proxy.client()
    frames = [request(PRODUCE if n % 3 else METADATA, n) for n in range(600)]
    client.sendall(b"".join(frames))
    answers = [read_answer(client) for _ in frames]
    assert [answer[0] for answer in answers if answer] == list(range(600))
    assert all(a and a[1].endswith(frame[4:]) for a, frame in zip(answers, frames, strict=True))
    assert [frame for _, _, _, frame in broker.received] == frames
    assert proxy.control.kinds() == []  # nothing selected, nothing recorded


def test_a_hold_holds_its_request_and_what_follows_on_its_connection_while_others_flow(
    proxy: Proxy, broker: FakeKafka
) -> None:
    assert proxy.control.send(op="rule", rule="end", action="hold", api_keys=[END_TXN])["ok"]
    held, other = proxy.client(), proxy.client()
    held.sendall(request(PRODUCE, 1))
    assert read_answer(held) is not None
    held.sendall(request(END_TXN, 2) + request(METADATA, 3))
    event = proxy.control.event("held", correlation_id=2)
    what = (event["api_key"], event["api_version"], event["client_id"], event["rule"])
    assert what == (END_TXN, 1, "producer-0", "end")
    other.sendall(request(METADATA, 10))
    assert read_answer(other) is not None  # another connection flows
    time.sleep(0.3)
    assert broker.correlation_ids() == [1, 10]  # the held request and the one behind it wait
    status = proxy.control.send(op="status")
    assert [h["correlation_id"] for h in status["held"]] == [2]
    assert proxy.control.send(op="release", rule="end") == {"ok": True, "released": 1}
    answers = [read_answer(held), read_answer(held)]
    assert [answer[0] for answer in answers if answer] == [2, 3]
    assert broker.correlation_ids() == [1, 10, 2, 3]
    answered = proxy.control.event("answered", correlation_id=2)
    assert answered["client_connected"] is True
    assert decode_error_code(END_TXN, 1, bytes.fromhex(str(answered["response_head"]))) == 51
    assert proxy.control.kinds() == ["held", "released", "delivered", "answered"]


def test_a_request_whose_client_gave_up_is_still_delivered_on_release_and_its_answer_recorded(
    proxy: Proxy, broker: FakeKafka
) -> None:
    rule = {"op": "rule", "rule": "end", "action": "hold", "api_keys": [END_TXN], "client_id": "producer-0"}
    assert proxy.control.send(**rule)["ok"]
    client = proxy.client()
    client.sendall(request(END_TXN, 5))
    proxy.control.event("held", correlation_id=5)
    client.close()
    proxy.control.event("client_closed", correlation_id=5)
    time.sleep(0.2)
    assert broker.correlation_ids() == []
    proxy.control.send(op="release", rule="end")
    released = proxy.control.event("released", correlation_id=5)
    answered = proxy.control.event("answered", correlation_id=5)
    assert broker.correlation_ids(END_TXN) == [5]
    assert (released["client_connected"], answered["client_connected"]) == (False, False)
    assert decode_error_code(END_TXN, 1, bytes.fromhex(str(answered["response_head"]))) == 51
    wait_until(lambda: bool(broker.closed))  # and the broker side is closed after the answer


def test_a_drop_never_delivers_and_cuts_both_sides(proxy: Proxy, broker: FakeKafka) -> None:
    assert proxy.control.send(op="rule", rule="p", action="drop", api_keys=[PRODUCE])["ok"]
    client = proxy.client()
    client.sendall(request(METADATA, 1))
    assert read_answer(client) is not None
    client.sendall(request(PRODUCE, 2))
    with contextlib.suppress(ConnectionResetError):
        assert client.recv(1) == b""
    assert proxy.control.event("dropped", correlation_id=2)["api_key"] == PRODUCE
    wait_until(lambda: bool(broker.closed))
    assert broker.correlation_ids() == [1]


def test_a_delay_delivers_after_its_time_and_not_before(proxy: Proxy, broker: FakeKafka) -> None:
    assert proxy.control.send(op="rule", rule="d", action="delay", api_keys=[END_TXN], delay_ms=1500)["ok"]
    client = proxy.client()
    started = time.monotonic()
    client.sendall(request(END_TXN, 4))
    time.sleep(0.7)
    assert broker.correlation_ids() == []
    assert read_answer(client) is not None
    assert time.monotonic() - started >= 1.4
    held, released = proxy.control.event("held"), proxy.control.event("released", by="delay")
    assert float(released["at"]) - float(held["at"]) >= 1.4


def test_count_limits_how_many_requests_a_rule_selects(proxy: Proxy, broker: FakeKafka) -> None:
    assert proxy.control.send(op="rule", rule="hb", action="hold", api_keys=[HEARTBEAT], count=2)["ok"]
    clients = [proxy.client() for _ in range(3)]
    for n, client in enumerate(clients):
        client.sendall(request(HEARTBEAT, n))
        if n < 2:
            proxy.control.event("held", correlation_id=n)
    assert read_answer(clients[2]) is not None
    assert proxy.control.kinds() == ["held", "held"]
    assert proxy.control.send(op="release_all") == {"ok": True, "released": 2}
    assert all(read_answer(client) is not None for client in clients[:2])


def _selected(proxy: Proxy, rule: str, first: int) -> list[int]:
    """Positions (0-39) of the requests a 0.5-probability delay rule seeded 7 selects from 40."""
    command = {"op": "rule", "rule": rule, "action": "delay", "delay_ms": 1, "count": 0, "probability": 0.5}
    assert proxy.control.send(**command, seed=7)["ok"]
    client = proxy.client()
    client.sendall(b"".join(request(HEARTBEAT, first + n) for n in range(40)))
    assert [read_answer(client) is not None for _ in range(40)] == [True] * 40
    proxy.control.send(op="remove", rule=rule)
    held = [e for e in proxy.control.events if e["event"] == "held" and e["rule"] == rule]
    return [int(str(e["correlation_id"])) - first for e in held]


def test_a_seeded_probability_selects_a_reproducible_subset(proxy: Proxy) -> None:
    first, again = _selected(proxy, "a", 0), _selected(proxy, "b", 100)
    assert first == again
    assert 5 < len(first) < 35


def test_garbage_framing_passes_through_as_raw_bytes_and_the_proxy_carries_on(
    proxy: Proxy, broker: FakeKafka
) -> None:
    client = proxy.client()
    garbage = struct.pack(">i", -5) + b"not kafka at all" * 10
    client.sendall(garbage)
    echoed = b""
    while len(echoed) < len(garbage):
        echoed += client.recv(65536)
    assert echoed == garbage == bytes(broker.raw)
    huge = proxy.client()
    too_big = struct.pack(">i", 200 * 1024 * 1024) + b"x"
    huge.sendall(too_big)
    echoed = b""
    while len(echoed) < len(too_big):
        echoed += huge.recv(65536)
    assert echoed == too_big
    fine = proxy.client()
    fine.sendall(request(METADATA, 1))
    assert read_answer(fine) is not None


def test_the_events_file_has_every_event_though_the_controller_left(proxy: Proxy, tmp_path: Path) -> None:
    assert proxy.control.send(op="rule", rule="end", action="hold", api_keys=[END_TXN])["ok"]
    proxy.control.close()
    events = tmp_path / "events.jsonl"
    client = proxy.client()
    client.sendall(request(END_TXN, 1) + request(END_TXN, 2))
    wait_until(lambda: events.exists() and "held" in events.read_text())
    later = Control(proxy.control_port)
    assert later.send(op="release", rule="end") == {"ok": True, "released": 1}
    assert read_answer(client) is not None and read_answer(client) is not None
    later.event("answered", correlation_id=1)
    client.sendall(request(END_TXN, 3))  # count 1 was used up: passes
    assert read_answer(client) is not None
    later.close()
    assert proxy.stop() == 0
    recorded = _events(events)
    assert [e["event"] for e in recorded] == ["held", "released", "delivered", "answered", "stopped"]
    assert [e["seq"] for e in recorded] == [1, 2, 3, 4, 5]


def test_sigterm_exits_0_and_records_what_was_still_held(proxy: Proxy, tmp_path: Path) -> None:
    assert proxy.control.send(op="rule", rule="end", action="hold", api_keys=[END_TXN])["ok"]
    client = proxy.client()
    client.sendall(request(END_TXN, 9))
    proxy.control.event("held", correlation_id=9)
    assert proxy.stop() == 0
    recorded = _events(tmp_path / "events.jsonl")
    assert [e["event"] for e in recorded] == ["held", "answer_lost", "stopped"]
    assert "proxy stopped" in str(recorded[1]["reason"])


def test_bad_commands_are_answered_naming_the_field(proxy: Proxy) -> None:
    send = proxy.control.send
    assert send(op="rule", rule="x", action="pause") == {
        "ok": False,
        "error": "action must be one of hold, drop, delay, got 'pause'",
    }
    assert "probability" in send(op="rule", rule="x", action="hold", probability=2)["error"]
    assert "delay_ms" in send(op="rule", rule="x", action="delay")["error"]
    assert "for action delay only" in send(op="rule", rule="x", action="hold", delay_ms=5)["error"]
    assert "api_keys" in send(op="rule", rule="x", action="hold", api_keys=["EndTxn"])["error"]
    assert "unknown field(s) api" in send(op="rule", rule="x", action="hold", api="EndTxn")["error"]
    assert "none" in send(op="release", rule="nope")["error"]
    assert send(op="dance")["error"].startswith("op must be one of rule, release")
    assert send(op="rule", rule="x", action="hold")["ok"]
    assert "exists" in send(op="rule", rule="x", action="drop")["error"]


def test_the_copied_directory_runs_on_its_own_from_the_standard_library(
    broker: FakeKafka, tmp_path: Path
) -> None:
    """The sidecar has python3 and these files only: copied elsewhere, run without site-packages or the
    checkout on its path, the proxy still works."""
    copy = tmp_path / "sidecar" / "proxy"
    shutil.copytree(PROXY_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    isolated = [sys.executable, "-I", "-S", str(copy / "request_proxy.py")]
    alone = Proxy(broker.port, tmp_path / "events.jsonl", isolated)
    client = alone.client()
    client.sendall(request(METADATA, 1))
    assert read_answer(client) is not None
    assert alone.stop() == 0


def test_the_proxy_imports_only_the_standard_library_and_its_siblings() -> None:
    wrong = []
    for path in sorted(PROXY_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            wrong += [f"{path.name}: {n}" for n in names if n.split(".")[0] not in sys.stdlib_module_names]
    assert wrong == []


def test_the_header_is_read_as_each_header_version_lays_it_out() -> None:
    body = struct.pack(">hhih", 26, 3, 77, 10) + b"producer-0" + b"\x00rest"
    assert parse_header(body) == Header(26, 3, 77, "producer-0")
    assert parse_header(struct.pack(">hhih", 3, 9, 1, -1)) == Header(3, 9, 1, None)
    # ControlledShutdown v0 has header v0: what follows the correlation id is the body (the broker id)
    assert parse_header(struct.pack(">hhii", 7, 0, 1, 0x00020000)) == Header(7, 0, 1, None)
    assert parse_header(struct.pack(">hhih", 7, 1, 1, 2) + b"c1") == Header(7, 1, 1, "c1")


def test_the_original_destination_is_read_from_a_sockaddr_in() -> None:
    raw = struct.pack("=H", socket.AF_INET) + struct.pack("!H", 9092) + socket.inet_aton("172.18.0.5")
    raw += bytes(8)
    assert original_destination(raw) == ("172.18.0.5", 9092)


def test_peers_take_only_those_addresses_and_not_peers_all_but_those() -> None:
    from kchaos.compose.proxy.rules import parse_rule

    header = Header(api_key=0, api_version=9, correlation_id=1, client_id="producer-0")
    nodes = ["172.18.0.2", "172.18.0.3"]
    only_nodes = parse_rule({"rule": "n", "action": "hold", "peers": nodes})
    only_clients = parse_rule({"rule": "c", "action": "hold", "not_peers": nodes})
    assert only_nodes.matches(header, "172.18.0.3") and not only_nodes.matches(header, "172.18.0.1")
    assert only_clients.matches(header, "172.18.0.1") and not only_clients.matches(header, "172.18.0.3")
