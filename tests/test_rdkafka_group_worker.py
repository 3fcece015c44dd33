"""The librdkafka group member process without a cluster: what it prints is the Java member's protocol,
which the shared recorder turns into the rows the in-process member writes (a refused commit judged by
librdkafka's error names), an empty incremental assignment step prints nothing, a member forgets what it
held of revoked partitions, and the process gets the in-process member's settings and its mode."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pandas as pd
import pytest
from confluent_kafka import KafkaError, TopicPartition

from kchaos.compose.rdkafka.group_worker import (
    MemberLines,
    commit_settings,
    committed_offsets,
    offsets_field,
    partitions_field,
    text_field,
)
from kchaos.compose.rdkafka.worker import Lines, mode_module
from kchaos.harness.cluster import KafkaCluster
from kchaos.model.config import load_config
from kchaos.model.events import ASSIGN, COMMIT, FAIL, INFO, OK, POLL, REVOKE
from kchaos.model.history import HistoryWriter
from kchaos.model.run_files import RunDir
from kchaos.workloads.outcome import commit_outcome, named_commit_outcome
from kchaos.workloads.processes.member_recorder import MemberRecorder
from kchaos.workloads.processes.rdkafka.group import RdkafkaGroupWorkload


def _printed(out: io.BytesIO) -> list[str]:
    return out.getvalue().decode().splitlines()


def _member() -> tuple[MemberLines, io.BytesIO]:
    out = io.BytesIO()
    return MemberLines(Lines(cast(io.BufferedWriter, out))), out


def test_fields_are_the_java_members_spelling() -> None:
    assert partitions_field([TopicPartition("t", 2), TopicPartition("t", 0)]) == "0,2"
    assert offsets_field({2: 9, 0: 4}) == "0=4,2=9"
    assert (text_field(b"producer-0-1"), text_field(None), text_field(b"")) == ("=producer-0-1", "", "=")
    answered = [TopicPartition("t", 0, 5), TopicPartition("t", 1, -1001), TopicPartition("t", 2, 7)]
    assert committed_offsets(answered) == {0: 5, 2: 7}


def test_what_a_member_prints_becomes_the_in_process_members_rows(tmp_path: Path) -> None:
    member, out = _member()
    member.lines.add("started", "2.16.1", "consumer")
    member.assigned([TopicPartition("t", 0), TopicPartition("t", 1)], "m-1")
    member.assigned([], "m-1")  # an incremental step that adds nothing: nothing printed, nothing counted
    member.handed(0, 7, b"producer-0-1", b"producer-0-1")
    member.handed(1, 8, None, b"v")
    member.poll_error("_PARTITION_EOF", "end")  # not an error
    member.poll_error("_TRANSPORT", "broker down")
    member.lines.flush()
    asked = member.ask(dict(member.pending))
    member.answer(asked, {0: 8, 1: 9}, None)
    refused = member.ask({0: 9})
    member.answer(refused, {0: 9}, KafkaError(KafkaError.ILLEGAL_GENERATION))
    timed_out = member.ask({1: 10})
    member.answer(timed_out, {1: 10}, KafkaError(KafkaError.REQUEST_TIMED_OUT))
    member.auto_committed(KafkaError(KafkaError._NO_OFFSET), [])  # nothing was due: no commit at all
    member.revoked([TopicPartition("t", 1)])
    member.revoked([TopicPartition("t", 0)], lost=True)
    member.revoked([])
    member.lines.add("stopped", str(member.polled), str(member.commits))
    member.lines.flush()
    lines = _printed(out)
    assert [line.split("\t")[0] for line in lines] == [
        "started", "assign", "poll", "poll", "poll-error", "commit", "committed", "commit", "commit-error",
        "commit", "commit-error", "revoke", "lost", "stopped",
    ]  # fmt: skip
    assert lines[-1].split("\t")[2:] == ["2", "3"]
    history = HistoryWriter(RunDir(tmp_path), "r")
    recorder = MemberRecorder(
        "member-0", "t", history, group="g", mode="sync", commit_judge=named_commit_outcome
    )
    for line in lines:
        recorder.take(line)
    assert recorder.version == "2.16.1" and recorder.protocol == "consumer"
    assert recorder.tally.assignments == 1 and recorder.tally.assigned == frozenset()
    rows = pd.read_parquet(history.finish())
    assert list(zip(rows["f"], rows["type"], strict=True)) == [
        (ASSIGN, OK), (POLL, OK), (POLL, OK), (POLL, INFO), (COMMIT, OK), (COMMIT, FAIL), (COMMIT, INFO),
        (REVOKE, OK), (REVOKE, INFO),
    ]  # fmt: skip
    assert (
        json.loads(rows["detail"][0])["partitions"] == [0, 1]
        and json.loads(rows["detail"][0])["member"] == "m-1"
    )
    assert (rows["key"][1], rows["value"][1], rows["offset"][1]) == ("producer-0-1", "producer-0-1", 7)
    assert pd.isna(rows["key"][2])
    assert json.loads(rows["detail"][4])["offsets"] == {"0": 8, "1": 9}
    assert rows["error"][5].startswith("ILLEGAL_GENERATION: ")


def test_a_member_commits_nothing_more_for_partitions_it_no_longer_holds() -> None:
    member, _ = _member()
    member.handed(0, 3, None, b"a")
    member.handed(1, 4, None, b"b")
    member.revoked([TopicPartition("t", 0)])
    assert member.pending == {1: 5}


def test_an_automatic_commit_is_printed_with_its_outcome_when_the_client_reports_it() -> None:
    member, out = _member()
    member.auto_committed(None, [TopicPartition("t", 0, 12), TopicPartition("t", 1, -1001)])
    member.auto_committed(KafkaError(KafkaError.REBALANCE_IN_PROGRESS), [TopicPartition("t", 1, 4)])
    said = [line.split("\t") for line in _printed(out)]
    assert [s[0] for s in said] == ["commit", "committed", "commit", "commit-error"]
    assert said[0][2:] == ["0", "0=12"] and said[1][2:] == ["0", "0=12"]
    assert said[3][2:5] == ["1", "1=4", "REBALANCE_IN_PROGRESS"]


@pytest.mark.parametrize(
    "code",
    [KafkaError.ILLEGAL_GENERATION, KafkaError.UNKNOWN_MEMBER_ID, KafkaError.REBALANCE_IN_PROGRESS,
     KafkaError.STALE_MEMBER_EPOCH, KafkaError._ASSIGNMENT_LOST, KafkaError.REQUEST_TIMED_OUT,
     KafkaError._TIMED_OUT, KafkaError.NOT_COORDINATOR, KafkaError._TRANSPORT],
)  # fmt: skip
def test_a_commit_error_by_name_is_judged_as_the_in_process_member_judges_it(code: int) -> None:
    error = KafkaError(code)
    assert named_commit_outcome(error.name()) == commit_outcome(error)


def test_commit_modes_are_the_in_process_members() -> None:
    assert commit_settings("auto")["enable.auto.commit"] is True
    assert commit_settings("sync") == {"enable.auto.commit": False, "enable.auto.offset.store": False}
    with pytest.raises(ValueError, match=r"kchaos\.commit"):
        commit_settings("transaction")


def _workload(tmp_path: Path, **values: Any) -> RdkafkaGroupWorkload:
    config = load_config(run_id="r", client="librdkafka-process", workload="group", **values)
    cluster = SimpleNamespace(
        client_bootstrap="kafka-1:19092", run_id="r", name_prefix="kchaos-r", client_network="kchaos-r-net"
    )
    return RdkafkaGroupWorkload(
        config, cast(KafkaCluster, cluster), HistoryWriter(RunDir(tmp_path), "r"), "kchaos/rdkafka-client:x"
    )


def test_a_member_process_is_the_group_mode_with_the_in_process_members_settings(tmp_path: Path) -> None:
    assert mode_module("group") == "kchaos.compose.rdkafka.group_worker"
    workload = _workload(tmp_path, kafka_version="4.3.1", commit="auto")
    assert workload.main_class is None  # the image's entrypoint picks the worker by kchaos.mode
    args = dict(arg.split("=", 1) for arg in workload._command("member-1", "read_uncommitted"))
    assert args["kchaos.mode"] == "group" and args["kchaos.commit"] == "auto"
    assert args["group.id"] == workload.group and args["client.id"] == "member-1"
    assert args["isolation.level"] == "read_uncommitted" and args["enable.auto.commit"] == "true"
    assert args["session.timeout.ms"] == "10000" and "logger" not in args
    consumer = _workload(tmp_path, kafka_version="4.3.1", group_protocol="consumer")
    args = dict(arg.split("=", 1) for arg in consumer._command("member-0", "read_committed"))
    assert args["group.protocol"] == "consumer" and "session.timeout.ms" not in args
    assert consumer._recorder("member-0", "read_committed").commit_judge is named_commit_outcome
