"""The Java client's group members without a cluster: the worker's lines become the rows the librdkafka
members write (so the same group checks judge them), each stamped with the worker's own clock, a commit
whose answer never came is indeterminate, and `--group-protocol` reaches both clients' settings or is
refused before anything starts."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from confluent_kafka import TopicPartition

from kchaos.model.config import ConfigError, load_config
from kchaos.model.events import (
    ASSIGN,
    COMMIT,
    FAIL,
    INFO,
    INVOKE,
    OK,
    POLL,
    REVOKE,
    TXN_ABORT,
    TXN_BEGIN,
    TXN_COMMIT,
    TXN_SEND,
)
from kchaos.model.group_protocol import group_broker_config, member_protocol_settings
from kchaos.model.history import HistoryWriter
from kchaos.model.run_files import RunDir
from kchaos.workloads.in_harness.group_consumer import SESSION_TIMEOUT_MS, GroupMember, group_settings
from kchaos.workloads.processes.java.eos import ProcessorRecorder
from kchaos.workloads.processes.java.group import java_member_settings
from kchaos.workloads.processes.member_recorder import (
    MemberLine,
    MemberRecorder,
    java_commit_outcome,
    parse_member_line,
)
from kchaos.workloads.processes.worker_lines import LineError


def test_each_kind_of_member_line_is_read_with_its_fields() -> None:
    def parse(line: str) -> MemberLine:
        return replace(parse_member_line(line), time_ns=0)

    assert parse_member_line("started\t99\t4.3.1\tconsumer").time_ns == 99
    assert parse("started\t9\t4.3.1\tconsumer") == MemberLine("started", said=("4.3.1", "consumer"))
    assert parse("assign\t9\t0,2\tm-1\t5") == MemberLine(
        "assign", partitions="0,2", member="m-1", generation="5"
    )
    assert parse("revoke\t9\t1") == MemberLine("revoke", partitions="1")
    assert parse("poll\t9\t2\t41\t=k\t=v") == MemberLine("poll", partition=2, offset=41, key="=k", value="=v")
    assert parse("commit\t9\t3\t0=4,2=9") == MemberLine("commit", id="3", offsets="0=4,2=9")
    assert parse("commit-error\t9\t3\t0=4\tCommitFailedException\tgone") == MemberLine(
        "commit-error", id="3", offsets="0=4", exception="CommitFailedException", message="gone"
    )


@pytest.mark.parametrize(
    "line",
    ["", "poll\t9\t2\t41\t=k", "poll\t9\tone\t41\t=k\t=v", "assign\t0,1\tm\t3", "started\t-1\t4.3.1\tclassic",
     "[main] WARN org.apache.kafka.clients.NetworkClient - disconnected"],
)  # fmt: skip
def test_a_line_outside_the_member_protocol_is_refused(line: str) -> None:
    with pytest.raises(LineError):
        parse_member_line(line)


def _rows(history: HistoryWriter) -> pd.DataFrame:
    return pd.read_parquet(history.finish())


def _detail(raw: Any) -> dict[str, Any]:
    return {} if not isinstance(raw, str) else dict(json.loads(raw))


def test_lines_become_the_rows_the_librdkafka_members_write(tmp_path: Path) -> None:
    history = HistoryWriter(RunDir(tmp_path), "java")
    recorder = MemberRecorder("member-0", "t", history, group="g", mode="sync")
    for line in [
        "started\t100\t4.3.1\tclassic",
        "assign\t200\t0,1\tconsumer-g-1-abc\t3",
        "poll\t300\t0\t7\t=producer-0-1\t=producer-0-1",
        "poll\t301\t1\t8\t\t=v",
        "commit\t302\t0\t0=8,1=9",
        "committed\t303\t0\t0=8,1=9",
        "commit\t304\t1\t0=9",
        "commit-error\t305\t1\t0=9\tCommitFailedException\tnot part of an active group",
        "commit\t306\t2\t1=10",
        "commit-error\t307\t2\t1=10\tTimeoutException\ttimed out",
        "committed\t308\t2\t1=10",  # a second answer to one commit is not a second commit
        "poll-error\t309\tAuthorizationException\tdenied",
        "revoke\t310\t1",
        "lost\t311\t0",
        "not a line",
    ]:
        recorder.take(line)
    assert recorder.version == "4.3.1" and recorder.protocol == "classic" and recorder.started.is_set()
    assert (
        recorder.tally.assignments == 1
        and recorder.tally.handed == 2
        and recorder.tally.assigned == frozenset()
    )
    rows = _rows(history)
    assert list(zip(rows["f"], rows["type"], strict=True)) == [
        (ASSIGN, OK), (POLL, OK), (POLL, OK), (COMMIT, OK), (COMMIT, FAIL), (COMMIT, INFO), (POLL, INFO),
        (REVOKE, OK), (REVOKE, INFO),
    ]  # fmt: skip
    # Each row at the worker's own clock, not when its line arrived.
    assert list(rows["time_ns"]) == [200, 300, 301, 303, 305, 307, 309, 310, 311]
    assign = _detail(rows["detail"][0])
    assert assign == {"partitions": [0, 1], "group": "g", "member": "consumer-g-1-abc",
                      "isolation": "read_committed", "protocol": "classic", "generation": 3}  # fmt: skip
    assert (rows["topic"][1], rows["partition"][1], rows["offset"][1]) == ("t", 0, 7)
    assert (rows["key"][1], rows["value"][1]) == ("producer-0-1", "producer-0-1")
    assert pd.isna(rows["key"][2]) and rows["value"][2] == "v"
    assert [_detail(rows["detail"][i])["offsets"] for i in (3, 4, 5)] == [
        {"0": 8, "1": 9},
        {"0": 9},
        {"1": 10},
    ]
    assert _detail(rows["detail"][3])["group"] == "g" and _detail(rows["detail"][3])["mode"] == "sync"
    assert rows["error"][4] == "CommitFailedException: not part of an active group"
    assert _detail(rows["detail"][7]) == {"partitions": [1], "group": "g", "lost": False}
    assert _detail(rows["detail"][8])["lost"] is True


def test_a_commit_a_dead_member_never_heard_back_about_is_indeterminate(tmp_path: Path) -> None:
    history = HistoryWriter(RunDir(tmp_path), "java")
    recorder = MemberRecorder("member-1", "t", history, group="g", mode="auto")
    for line in [
        "started\t1\t3.9.2\tclassic",
        "commit\t2\t0\t0=5",
        "commit\t3\t1\t0=6",
        "committed\t4\t0\t0=5",
    ]:
        recorder.take(line)
    assert recorder.abandon("the client process ended (exit 137) without reporting the commit") == 1
    assert recorder.abandon("again") == 0
    rows = _rows(history)
    assert list(rows["type"]) == [OK, INFO] and pd.isna(rows["error"][0])
    assert rows["error"][1] == "the client process ended (exit 137) without reporting the commit"
    # Asked for at the worker's clock 3: when the coordinator may have applied it from.
    assert _detail(rows["detail"][1]) == {"offsets": {"0": 6}, "group": "g", "mode": "auto", "asked_ns": 3}


@pytest.mark.parametrize(
    ("exception", "outcome"),
    [("CommitFailedException", FAIL), ("org.apache.kafka.common.errors.RebalanceInProgressException", FAIL),
     ("StaleMemberEpochException", FAIL), ("TimeoutException", INFO),
     ("RetriableCommitFailedException", INFO), ("DisconnectException", INFO)],
)  # fmt: skip
def test_only_a_refused_commit_fails(exception: str, outcome: str) -> None:
    assert java_commit_outcome(exception) == outcome


def test_the_consumer_protocol_drops_what_the_broker_decides_for_both_clients() -> None:
    config = load_config(client="java", workload="group", run_id="r", kafka_version="4.3.1")
    classic = java_member_settings(config, "b:1", "member-0", "g", "read_committed")
    assert classic["session.timeout.ms"] == str(SESSION_TIMEOUT_MS) and "group.protocol" not in classic
    assert (classic["enable.auto.commit"], classic["auto.offset.reset"]) == ("false", "earliest")
    consumer = java_member_settings(
        config.model_copy(update={"group_protocol": "consumer"}), "b:1", "member-0", "g", "read_committed"
    )
    assert consumer["group.protocol"] == "consumer" and "session.timeout.ms" not in consumer
    rdkafka = group_settings("b:1", "member-0", "g", "sync", protocol="consumer")
    assert rdkafka["group.protocol"] == "consumer" and "session.timeout.ms" not in rdkafka
    assert "group.protocol" not in group_settings("b:1", "member-0", "g", "sync")
    settings = {"partition.assignment.strategy": "range", "heartbeat.interval.ms": 1, "client.id": "c"}
    assert member_protocol_settings(settings, "classic") == settings
    assert member_protocol_settings(settings, "consumer") == {"client.id": "c", "group.protocol": "consumer"}


def _refusal(**values: Any) -> str:
    with pytest.raises(ConfigError) as error:
        load_config(run_id="r", **values)
    return str(error.value)


def test_the_consumer_protocol_is_refused_where_brokers_do_not_enable_it_or_there_is_no_group() -> None:
    old = _refusal(workload="group", group_protocol="consumer", kafka_version="3.9.2")
    assert "group_protocol" in old and "4.0" in old and "--kafka-version" in old
    none = _refusal(workload="sends", group_protocol="consumer", kafka_version="4.3.1")
    assert "group_protocol" in none and "--workload group" in none
    assert load_config(run_id="r", workload="eos", group_protocol="consumer").group_protocol == "consumer"
    assert load_config(run_id="r", workload="group", kafka_version="3.9.2").group_protocol == "classic"


def test_the_java_client_drives_the_group_and_eos_workloads() -> None:
    assert load_config(run_id="r", client="java", workload="group").client == "java"
    assert load_config(run_id="r", client="java", workload="eos", group_protocol="consumer").client == "java"


def test_the_consumer_protocols_session_is_set_on_the_brokers_as_the_classic_one_is_on_the_client() -> None:
    assert group_broker_config("classic") == {}
    assert group_broker_config("consumer") == {
        "group.consumer.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "group.consumer.min.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    }


class _NoMemberId:
    def memberid(self) -> str:
        raise RuntimeError("not in a group")


def test_a_librdkafka_member_holds_what_an_incremental_assignment_adds(tmp_path: Path) -> None:
    # Seen on 4.3.1 with --group-protocol consumer: [0, 1, 2] assigned, [1, 2] revoked, then an assignment
    # of nothing; the member still holds 0, which the nemesis must see to crash it while it reads.
    member = GroupMember(
        process="member-1", settings={"isolation.level": "read_committed", "group.protocol": "consumer"},
        group="g", topic="t", commit="sync", history=HistoryWriter(RunDir(tmp_path), "r"),
    )  # fmt: skip
    member._on_assign(_NoMemberId(), [TopicPartition("t", p) for p in (0, 1, 2)])  # type: ignore[arg-type]
    member._on_revoke(_NoMemberId(), [TopicPartition("t", p) for p in (1, 2)])  # type: ignore[arg-type]
    member._on_assign(_NoMemberId(), [])  # type: ignore[arg-type]
    assert member.assigned == frozenset({0}) and member.assignments == 2
    rows = _rows(member.history)
    assigns = rows[rows["f"] == ASSIGN]["detail"]
    assert [_detail(d).get("protocol") for d in assigns] == ["consumer", "consumer"]


def test_a_processors_lines_become_the_rows_the_librdkafka_processors_write(tmp_path: Path) -> None:
    history = HistoryWriter(RunDir(tmp_path), "java")
    recorder = ProcessorRecorder("processor-0", "t", history, group="g", mode="transaction", output="t-out")
    for line in [
        "started\t1\t4.3.1\tconsumer",
        "assign\t2\t0\tm\t4",
        "poll\t3\t0\t5\t=producer-0-5\t=producer-0-5",
        "begun\t4\tprocessor-0-txn-0\tkchaos-r-processor-0",
        "invoke\t5\tprocessor-0-txn-0\tproducer-0-5@processor-0-txn-0\t0",
        "ok\t6\tprocessor-0-txn-0\tproducer-0-5@processor-0-txn-0\t0\t11",
        "offsets\t7\tprocessor-0-txn-0\t0=6",
        "commit\t8\tprocessor-0-txn-0\t2",
        "committed\t9\tprocessor-0-txn-0",
        "fate\t10\tprocessor-0-txn-0\tok",
        "poll\t11\t0\t6\t=producer-0-6\t=producer-0-6",
        "begun\t12\tprocessor-0-txn-1\tkchaos-r-processor-0",
        "invoke\t13\tprocessor-0-txn-1\tproducer-0-6@processor-0-txn-1\t0",
        "ok\t14\tprocessor-0-txn-1\tproducer-0-6@processor-0-txn-1\t0\t12",
        "offsets\t15\tprocessor-0-txn-1\t0=7",
        "offsets-error\t16\tprocessor-0-txn-1\tCommitFailedException\tfenced",
        "abort\t17\tprocessor-0-txn-1\t2",
        "aborted\t18\tprocessor-0-txn-1",
        "fate\t19\tprocessor-0-txn-1\tfail",
        "rewind\t20\t0\t0=6\tm",
        "poll\t21\t0\t6\t=producer-0-6\t=producer-0-6",
        "begun\t22\tprocessor-0-txn-2\tkchaos-r-processor-0",
        "invoke\t23\tprocessor-0-txn-2\tproducer-0-6@processor-0-txn-2\t0",
        "offsets\t24\tprocessor-0-txn-2\t0=7",
        "fate\t25\tprocessor-0-txn-2\tmaybe",
    ]:
        recorder.take(line)
    assert recorder.protocol == "consumer" and recorder.started.is_set()
    recorder.abandon("the client process ended (exit 137)")
    rows = _rows(history)
    topics = [None if pd.isna(topic) else topic for topic in rows["topic"]]
    steps = [(f, kind, topic) for f, kind, topic in zip(rows["f"], rows["type"], topics, strict=True)]
    assert steps == [
        (ASSIGN, OK, "t"), (POLL, OK, "t"),
        (TXN_BEGIN, OK, None), (TXN_SEND, INVOKE, "t-out"), (TXN_SEND, OK, "t-out"),
        (TXN_COMMIT, INVOKE, None), (TXN_COMMIT, OK, None), (COMMIT, OK, "t"),
        (POLL, OK, "t"), (TXN_BEGIN, OK, None), (TXN_SEND, INVOKE, "t-out"), (TXN_SEND, OK, "t-out"),
        (TXN_ABORT, INVOKE, None), (TXN_ABORT, OK, None), (COMMIT, FAIL, "t"), (ASSIGN, OK, "t"),
        (POLL, OK, "t"), (TXN_BEGIN, OK, None), (TXN_SEND, INVOKE, "t-out"),
        (TXN_SEND, INFO, "t-out"), (COMMIT, INFO, "t"),
    ]  # fmt: skip
    commits = rows[rows["f"] == COMMIT]
    assert [_detail(d)["offsets"] for d in commits["detail"]] == [{"0": 6}, {"0": 7}, {"0": 7}]
    assert {_detail(d)["mode"] for d in commits["detail"]} == {"transaction"}
    assert list(commits["key"]) == [f"processor-0-txn-{n}" for n in range(3)]
    assert list(commits["error"])[1] == "CommitFailedException: fenced"
    assert _detail(rows["detail"][15]) == {"partitions": [0], "group": "g", "from": {"0": 6}, "member": "m",
                                           "rewind": True, "isolation": "read_committed"}  # fmt: skip
