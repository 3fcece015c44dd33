"""The request faults (`hold`, `drop`, `delay`) without a cluster: what rule each sends the target nodes'
proxies, how it ends, what its rows say, and the history rows a proxy's events become.

The proxy itself is held to its protocol on loopback (`tests/test_request_proxy.py`) and to a real broker
in `tests/cluster/test_request_proxy.py`."""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest

from kchaos.checkers.stories.timeline import fault_line
from kchaos.checkers.stories.transaction_story import Transaction, TransactionEvidence, tell_transaction
from kchaos.harness.cluster_error import ClusterError
from kchaos.model.events import INFO, INVOKE, NEMESIS_PROCESS, OK, REQUEST, TXN_ABORT, TXN_BEGIN, TXN_COMMIT
from kchaos.model.fault_options import SpecError
from kchaos.model.fault_spec import parse_spec
from kchaos.model.faults.requests import REQUEST_FAULTS
from kchaos.model.history import HistoryWriter
from kchaos.model.history_files import history_path
from kchaos.model.kafka_apis import API_KEYS
from kchaos.model.request_rows import request_detail, sender
from kchaos.model.run_files import RunDir
from kchaos.nemesis.fault import FaultError
from kchaos.nemesis.requests import Delay, Drop, Hold, RequestFault, RequestRows

IPS = {1: "172.18.0.2", 2: "172.18.0.3", 3: "172.18.0.4"}


class FakeProxy:
    """Answers commands as the proxy does, from a list of rules; `refuse` makes every rule command fail."""

    def __init__(self, refuse: bool = False) -> None:
        self.commands: list[tuple[str, dict[str, Any]]] = []
        self.rules: dict[str, dict[str, Any]] = {}
        self.refuse = refuse

    def command(self, op: str, **fields: Any) -> dict[str, Any]:
        self.commands.append((op, fields))
        if op == "rule":
            if self.refuse:
                raise ClusterError("the request proxy refused rule: no")
            self.rules[fields["rule"]] = {"rule": fields["rule"], "selected": 0, "held": 0}
            return {"ok": True}
        if op == "status":
            return {"ok": True, "rules": list(self.rules.values())}
        if op == "remove":
            rule = self.rules[fields["rule"]]
            if not rule["held"]:
                del self.rules[fields["rule"]]
            return {"ok": True, "holding": rule["held"]}
        if op == "release":
            return {"ok": True, "released": self.rules.pop(fields["rule"])["held"]}
        raise AssertionError(op)


def _cluster(proxies: dict[int, FakeProxy]) -> Any:
    nodes = {n: SimpleNamespace(state="running", ip=ip) for n, ip in IPS.items()}
    return SimpleNamespace(nodes=nodes, servers=nodes, spares={}, controllers={}, proxies=proxies,
                           node_addresses=lambda: {ip: n for n, ip in IPS.items()})  # fmt: skip


def _fault(kind: type[RequestFault], spec: str, cluster: Any) -> RequestFault:
    return kind(cluster, "kchaos", 0, "hold#1", parse_spec(spec), random.Random(5))


def test_a_hold_sends_each_target_its_rule_and_releases_what_it_holds_at_stop() -> None:
    proxies = {1: FakeProxy(), 2: FakeProxy(), 3: FakeProxy()}
    fault = _fault(Hold, "hold:api=EndTxn:target=2+3:sender=clients:count=2:percent=50", _cluster(proxies))
    started = fault.start()
    assert started.nodes == (2, 3) and started.api == "EndTxn" and started.sender == "clients"  # type: ignore[attr-defined]
    assert proxies[1].commands == []
    ((op, rule),) = proxies[2].commands
    assert op == "rule" and rule["rule"] == "hold#1" and rule["action"] == "hold"
    assert rule["api_keys"] == [26] and rule["count"] == 2 and rule["probability"] == 0.5
    assert rule["not_peers"] == sorted(IPS.values()) and "peers" not in rule
    assert proxies[3].commands[0][1]["seed"] == rule["seed"]  # one draw for the fault, the same on each node
    assert not fault.effect_reached()
    proxies[3].rules["hold#1"].update(selected=1, held=1)
    assert fault.effect_reached()
    stopped = fault.stop()
    assert stopped.taken == 1  # type: ignore[attr-defined]
    assert [op for op, _ in proxies[3].commands[-2:]] == ["remove", "release"]
    assert [op for op, _ in proxies[2].commands[-1:]] == ["remove"]  # held nothing: gone once removed
    assert fault.stop().nodes == (2, 3)  # a second stop does nothing


def test_drop_and_delay_send_their_action_and_a_delay_its_time() -> None:
    proxies = {1: FakeProxy()}
    Drop(
        _cluster(proxies), "t", 0, "drop#1", parse_spec("drop:target=1:sender=nodes"), random.Random(1)
    ).start()
    Delay(_cluster(proxies), "t", 0, "delay#2", parse_spec("delay:target=1:ms=700"), random.Random(1)).start()
    (_, drop), (_, delay) = proxies[1].commands
    assert (
        drop["action"] == "drop"
        and drop["api_keys"] == [API_KEYS["Produce"]]
        and drop["peers"] == sorted(IPS.values())
    )
    assert (
        delay["action"] == "delay"
        and delay["delay_ms"] == 700
        and "peers" not in delay
        and "not_peers" not in delay
    )


def test_a_rule_one_proxy_refuses_is_taken_back_from_the_others() -> None:
    proxies = {1: FakeProxy(), 2: FakeProxy(refuse=True)}
    fault = _fault(Hold, "hold:target=1+2", _cluster(proxies))
    with pytest.raises(ClusterError):
        fault.start()
    assert [op for op, _ in proxies[1].commands] == ["rule", "remove"] and not proxies[1].rules


def test_a_node_without_a_proxy_is_a_harness_error_naming_why() -> None:
    fault = _fault(Hold, "hold:target=1", _cluster({}))
    with pytest.raises(FaultError, match="no request proxy runs on node"):
        fault.start()


def test_the_request_faults_are_the_ones_that_need_proxies() -> None:
    assert {"hold", "drop", "delay"} == REQUEST_FAULTS
    assert parse_spec("hold:api=EndTxn").option("api") == "EndTxn"
    with pytest.raises(ValueError, match="api must be one of"):
        parse_spec("hold:api=EndTx")


def _head(correlation_id: int, *body: bytes) -> str:
    return (correlation_id.to_bytes(4, "big") + b"".join(body)).hex()


def test_an_event_becomes_a_row_in_kchaos_words() -> None:
    node_ips = {ip: n for n, ip in IPS.items()}
    assert sender("172.18.0.3", "broker-2-fetcher", node_ips) == "node 2"
    assert sender("172.18.0.1", "producer-0", node_ips) == "producer-0"
    assert sender("172.18.0.1", None, node_ips) == "172.18.0.1"
    # EndTxn v3 is flexible: correlation id, an empty tagged-fields byte, throttle time, then the error.
    head = _head(9, b"\x00", b"\0\0\0\0", b"\x00\x30")
    answered = {"event": "answered", "api_key": 26, "api_version": 3, "correlation_id": 9, "client_id": None,
                "peer": "172.18.0.1", "response_bytes": 12, "response_head": head}  # fmt: skip
    detail = request_detail(answered, 2, node_ips)
    assert detail["api"] == "EndTxn" and detail["link"] == "172.18.0.1>node 2"
    assert detail["error_code"] == 48 and detail["error"] == "INVALID_TXN_STATE"
    released = {"event": "released", "api_key": 0, "api_version": 9, "correlation_id": 4, "client_id": "p",
                "peer": "172.18.0.4", "client_connected": False}  # fmt: skip
    detail = request_detail(released, 1, node_ips)
    assert detail["link"] == "node 3>node 1" and detail["client_connected"] is False and "error" not in detail


def test_the_proxies_events_are_history_rows_keyed_by_their_fault(tmp_path: Path) -> None:
    files = RunDir(tmp_path)
    history = HistoryWriter(files, "r")
    rows = RequestRows(history)
    rows.cluster = _cluster({})
    rows(2, {"event": "client_closed", "rule": "hold#1", "api_key": 26, "api_version": 4, "correlation_id": 7,
             "peer": "172.18.0.1", "client_id": "producer-0"})  # fmt: skip
    rows(1, {"event": "stopped", "seq": 9})  # the proxy's own life: no request, no row
    history.finish()
    frame = pd.read_parquet(history_path(tmp_path))
    (row,) = frame[frame["f"] == REQUEST].itertuples()
    assert row.process == NEMESIS_PROCESS and row.key == "hold#1" and row.value == "client-closed"
    assert '"link": "producer-0>node 2"' in row.detail and '"api": "EndTxn"' in row.detail


def _request_row(
    at: float, key: str, step: str, link: str, correlation_id: int, **more: Any
) -> dict[str, Any]:
    detail = {"api": "EndTxn", "api_version": 1, "correlation_id": correlation_id, "link": link, **more}
    return {"wall_time": at, "f": REQUEST, "process": NEMESIS_PROCESS, "key": key, "value": step,
            "detail": json.dumps(detail)}  # fmt: skip


def test_a_transaction_s_story_shows_the_requests_taken_while_it_ran_and_their_later_steps() -> None:
    own = [
        {"wall_time": 10.0, "f": TXN_BEGIN, "type": OK, "process": "producer-0", "key": "t1", "index": 1,
         "detail": "{}", "error": None},
        {"wall_time": 11.0, "f": TXN_COMMIT, "type": INVOKE, "process": "producer-0", "key": "t1", "index": 2,
         "error": None},
        {"wall_time": 14.0, "f": TXN_COMMIT, "type": INFO, "process": "producer-0", "key": "t1", "index": 3,
         "error": "_TIMED_OUT"},
    ]  # fmt: skip
    requests = [
        _request_row(9.0, "hold#1", "held", "producer-0>node 1", 5),  # before it began: another's
        _request_row(11.0, "hold#1", "held", "producer-0>node 1", 7),
        _request_row(11.5, "hold#1", "held", "producer-1>node 1", 8),  # another producer's
        _request_row(12.0, "hold#2", "held", "node 2>node 1", 9),  # a broker's, during it
        _request_row(30.0, "hold#1", "released", "producer-0>node 1", 7, client_connected=False),
        _request_row(30.1, "hold#1", "answered", "producer-0>node 1", 7, client_connected=False,
                     error="NONE", error_code=0),
    ]  # fmt: skip
    evidence = TransactionEvidence(0.0, {"t1": own}, [], [], [], requests)
    story = "\n".join(tell_transaction(evidence, Transaction("t1")))
    assert "EndTxn v1 #7 producer-0>node 1 held" in story
    assert "EndTxn v1 #7 producer-0>node 1 released, its client gone" in story
    assert "+30.10s  request hold#1: EndTxn v1 #7 producer-0>node 1 answered, its client gone: NONE" in story
    assert "#9 node 2>node 1 held" in story
    assert "#5 " not in story and "#8 " not in story
    # In time order among the transaction's own rows: the hold between the commit asked and its timeout.
    assert story.index("#7 producer-0>node 1 held") < story.index("_TIMED_OUT") < story.index("released")


def test_a_late_request_of_the_transaction_before_is_told_where_it_lands_and_a_replaced_producer_too() -> (
    None
):
    """The late EndTxn of `txn-endtxn-held`: held while producer-0 was in t0, released while it was in t1.
    t1's story tells the release and the answer, and says the request was taken in t0; t0's own story
    had its hold. Nothing taken before t1 whose steps all came before it is told."""
    t1 = [
        {"wall_time": 20.0, "f": TXN_BEGIN, "type": OK, "process": "producer-0", "key": "t1", "index": 10,
         "detail": "{}", "error": None},
        {"wall_time": 25.0, "f": TXN_ABORT, "type": INVOKE, "process": "producer-0", "key": "t1", "index": 14,
         "error": None},
    ]  # fmt: skip
    requests = [
        _request_row(9.0, "hold#1", "held", "producer-0>node 1", 7),
        _request_row(8.0, "delay#2", "held", "producer-0>node 2", 6),
        _request_row(8.1, "delay#2", "delivered", "producer-0>node 2", 6),
        _request_row(22.0, "hold#1", "released", "producer-0>node 1", 7, client_connected=False),
        _request_row(23.0, "hold#1", "answered", "producer-0>node 1", 7, client_connected=False,
                     error="NONE", error_code=0),
    ]  # fmt: skip
    spans = {
        "t0": ("producer-0", 5.0, 15.0),
        "t1": ("producer-0", 20.0, 25.0),
        "x": ("producer-1", 0.0, 30.0),
    }
    restarts = [
        {
            "wall_time": 25.5,
            "process": "producer-0",
            "index": 15,
            "error": "_TIMED_OUT: txn-on-timeout=restart",
        },
        {"wall_time": 27.0, "process": "producer-0", "index": 16, "error": "a later one, not t1's"},
        {"wall_time": 25.2, "process": "producer-1", "index": 17, "error": "another producer's"},
    ]
    evidence = TransactionEvidence(0.0, {"t1": t1}, [], [], [], requests, spans, restarts)
    story = "\n".join(tell_transaction(evidence, Transaction("t1")))
    assert (
        "+25.50s  producer-0 replaced its producer: _TIMED_OUT: txn-on-timeout=restart (history row 15)"
        in story
    )
    assert "a later one" not in story and "another producer's" not in story
    assert (
        "+22.00s  request hold#1: EndTxn v1 #7 producer-0>node 1 released, its client gone (taken at +9.00s, "
        "while producer-0 was in t0)"
    ) in story
    assert "+23.00s  request hold#1: EndTxn v1 #7 producer-0>node 1 answered, its client gone: NONE" in story
    assert "#6 " not in story and " held" not in story


def test_a_record_s_timeline_tells_a_request_row_in_words() -> None:
    row = _request_row(1.0, "drop#3", "dropped", "producer-0>node 2", 11)
    assert fault_line(row) == "request drop#3: EndTxn v1 #11 producer-0>node 2 dropped"


def test_a_hold_of_one_clients_requests_sends_its_client_id_and_says_so() -> None:
    """`client=producer-0`: the rule compares the header's client id, which kchaos sets to the process name,
    so one producer's EndTxn is held while the others' flow; the records and the sentence name it."""
    proxies = {1: FakeProxy()}
    fault = _fault(Hold, "hold:api=EndTxn:target=1:client=producer-0", _cluster(proxies))
    started = fault.start()
    ((_, rule),) = proxies[1].commands
    assert rule["client_id"] == "producer-0"
    assert started.client == "producer-0"  # type: ignore[attr-defined]
    assert "EndTxn requests from client producer-0" in started.description
    anyone = _fault(Hold, "hold:api=EndTxn:target=1", _cluster({1: FakeProxy()}))
    assert "client_id" not in anyone.rule() and anyone.start().client is None  # type: ignore[attr-defined]


@pytest.mark.parametrize("value", ["broker-1", "producer-01", "Producer-0", ""])
def test_a_client_that_is_no_process_name_is_refused_naming_the_option(value: str) -> None:
    with pytest.raises(SpecError, match=r"client=.*names no client.*e\.g\. hold:client=producer-0"):
        parse_spec(f"hold:api=EndTxn:client={value}")
