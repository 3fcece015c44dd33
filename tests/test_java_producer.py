"""The Java client producer without a cluster: its worker's lines become the same history rows the librdkafka
producer writes, a worker that dies leaves what it had in flight indeterminate (and what it acknowledged
acknowledged), its settings say in the Java client's words what librdkafka's say, and `--client java` is
refused up front for the workloads it does not drive yet."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from kchaos.model.config import ConfigError, load_config
from kchaos.model.events import FAIL, INFO, INVOKE, MESSAGE_TIMED_OUT, OK, SEND
from kchaos.model.history import HistoryWriter
from kchaos.model.matrix import MatrixError, parse_matrix
from kchaos.model.releases import Release
from kchaos.model.run_files import RunDir
from kchaos.runner.cli import main
from kchaos.workloads.processes.client_process import ClientProcess
from kchaos.workloads.processes.java.producer import java_producer_settings
from kchaos.workloads.processes.worker_lines import LineError
from kchaos.workloads.processes.worker_recorder import WorkerLine, WorkerRecorder, parse_line
from kchaos.workloads.processes.worker_recorder import parse_line as parse_worker_line


def test_every_line_carries_the_workers_clock() -> None:
    assert parse_line("invoke\t123456789012\tproducer-0-7\t1").time_ns == 123_456_789_012
    assert parse_line("stopped\t0\t10\t2").time_ns == 0


def test_each_kind_of_worker_line_is_read_with_its_fields() -> None:
    def parse_line(line: str) -> WorkerLine:
        return replace(parse_worker_line(line), time_ns=0)

    assert parse_line("started\t7\t4.3.1") == WorkerLine("started", said=("4.3.1",))
    assert parse_line("invoke\t7\tproducer-0-7\t1") == WorkerLine("invoke", "producer-0-7", 1)
    assert parse_line("ok\t7\tproducer-0-7\t1\t42\r") == WorkerLine("ok", "producer-0-7", 1, 42)
    assert parse_line("error\t7\tproducer-0-7\t1\tTimeoutException\tExpiring 1 record(s)") == WorkerLine(
        "error", "producer-0-7", 1, exception="TimeoutException", message="Expiring 1 record(s)"
    )
    assert parse_line("refused\t7\tp-1\t0\tKafkaException\t") == WorkerLine(
        "refused", "p-1", 0, exception="KafkaException", message=""
    )
    assert parse_line("stopped\t7\t10\t2") == WorkerLine("stopped", said=("10", "2"))


@pytest.mark.parametrize(
    "line",
    ["", "ok\t7\tproducer-0-7\t1", "ok\t7\tproducer-0-7\tone\t42", "invoke producer-0-7 1", "sent\tp-0\t0",
     "ok\tproducer-0-7\t1\t42", "ok\t-1\tproducer-0-7\t1\t42", "invoke\t1.5\tproducer-0-7\t1",
     "[main] WARN org.apache.kafka.clients.NetworkClient - disconnected"],
)  # fmt: skip
def test_a_line_outside_the_protocol_is_refused(line: str) -> None:
    with pytest.raises(LineError):
        parse_line(line)


def _rows(history: HistoryWriter) -> pd.DataFrame:
    rows = pd.read_parquet(history.finish())
    return rows[rows["f"] == SEND].reset_index(drop=True)


def test_lines_become_the_rows_the_librdkafka_producer_writes(tmp_path: Path) -> None:
    history = HistoryWriter(RunDir(tmp_path), "java")
    recorder = WorkerRecorder("producer-0", "t", history)
    for line in [
        "started\t7\t4.3.1",
        "invoke\t7\tproducer-0-0\t0",
        "invoke\t7\tproducer-0-1\t1",
        "invoke\t7\tproducer-0-2\t2",
        "ok\t7\tproducer-0-0\t0\t17",
        "error\t7\tproducer-0-1\t1\tTimeoutException\tExpiring 1 record(s) for t-1",
        "error\t7\tproducer-0-2\t2\tRecordTooLargeException\ttoo large",
        "invoke\t7\tproducer-0-3\t0",
        "refused\t7\tproducer-0-3\t0\tIllegalStateException\tCannot perform operation after close",
        "not a line",
    ]:
        recorder.take(line)
    assert recorder.version == "4.3.1" and recorder.started.is_set()
    assert not recorder.pending
    rows = _rows(history)
    assert list(rows["type"]) == [INVOKE, INVOKE, INVOKE, OK, INFO, FAIL, INVOKE, FAIL]
    acked = rows.iloc[3]
    assert (acked["partition"], acked["offset"], acked["key"], acked["value"]) == (
        0,
        17,
        "producer-0-0",
        "producer-0-0",
    )
    assert rows.iloc[4]["error"].startswith(f"{MESSAGE_TIMED_OUT}: TimeoutException: Expiring")
    assert rows.iloc[5]["error"] == "RecordTooLargeException: too large"
    assert rows.iloc[7]["error"].startswith("IllegalStateException: Cannot perform")
    assert set(rows["topic"]) == {"t"} and set(rows["process"]) == {"producer-0"}
    assert set(rows["time_ns"]) == {7}, "each row is stamped when the worker said it, not when it arrived"


def test_a_dead_workers_acknowledged_sends_stay_and_its_outstanding_ones_become_indeterminate(
    tmp_path: Path,
) -> None:
    """What the process printed before it died is recorded as it said; each send it had invoked and not
    answered is `info` once, with the reason, on the partition it was invoked for."""
    history = HistoryWriter(RunDir(tmp_path), "java")
    recorder = WorkerRecorder("producer-1", "t", history)
    for line in ["invoke\t7\tproducer-1-0\t0", "invoke\t7\tproducer-1-1\t1", "invoke\t7\tproducer-1-2\t2",
                 "ok\t7\tproducer-1-1\t1\t5"]:  # fmt: skip
        recorder.take(line)
    assert recorder.abandon("the client process ended (exit 137) without reporting the send") == 2
    assert recorder.abandon("again") == 0
    rows = _rows(history)
    outcomes = rows[rows["type"] != INVOKE].set_index("value")
    assert outcomes.loc["producer-1-1", "type"] == OK
    left = outcomes[outcomes["type"] == INFO]
    assert sorted(left.index) == ["producer-1-0", "producer-1-2"]
    assert list(left.sort_index()["partition"]) == [0, 2]
    assert set(left["error"]) == {"the client process ended (exit 137) without reporting the send"}


def test_the_java_settings_say_what_the_librdkafka_ones_say_in_each_releases_words() -> None:
    config = load_config(client="java", message_timeout_ms=30000, request_timeout_ms=5000)
    newest = java_producer_settings(config, "kafka-1:19092", "producer-0", Release.parse("4.3.1"))
    assert newest == {
        "bootstrap.servers": "kafka-1:19092", "client.id": "producer-0", "acks": "all",
        "request.timeout.ms": "5000", "linger.ms": "5", "batch.size": "262144", "retry.backoff.ms": "100",
        "max.block.ms": "30000", "enable.idempotence": "true", "delivery.timeout.ms": "30000",
    }  # fmt: skip
    short = load_config(client="java", message_timeout_ms=2000, request_timeout_ms=5000)
    assert java_producer_settings(short, "b", "p", Release.parse("4.3.1"))["delivery.timeout.ms"] == "5005"
    before_kip_91 = java_producer_settings(config, "b", "p", Release.parse("2.0.1"))
    assert "delivery.timeout.ms" not in before_kip_91 and before_kip_91["retries"] == str(2**31 - 1)
    old = load_config(client="java", kafka_version="0.10.2.2")
    assert "enable.idempotence" not in java_producer_settings(old, "b", "p", Release.parse("0.10.2.2"))


def test_the_client_is_librdkafka_processes_unless_told_and_is_recorded() -> None:
    assert load_config().client == "librdkafka-process"
    assert load_config().to_json_dict()["client"] == "librdkafka-process"
    assert load_config(client="librdkafka").client == "librdkafka"
    assert load_config(client="java").to_json_dict()["client"] == "java"


@pytest.mark.parametrize("workload", ["sends", "txn", "group", "eos"])
def test_java_drives_every_workload(workload: str) -> None:
    assert load_config(client="java", workload=workload).client == "java"


def test_an_unknown_client_names_the_field_and_the_choices() -> None:
    with pytest.raises(ConfigError) as refused:
        load_config(client="kcat")
    assert "client (--client):" in str(refused.value)
    assert "'librdkafka', 'java' or 'librdkafka-process'" in str(refused.value)


def test_the_cli_refuses_a_java_client_version_for_another_client_before_anything_starts(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    result = CliRunner().invoke(
        main,
        ["run", "--client", "librdkafka-process", "--java-client-version", "3.9.2", "--runs-dir", str(runs)],
        env={"DOCKER_HOST": "unix:///tmp/kchaos-test-no-engine.sock"},  # a run that did start finds no engine
    )
    assert result.exit_code == 2, result.output
    assert "--java-client-version chooses the Java client's release" in result.output
    assert not runs.exists()


def test_the_client_is_a_matrix_axis_and_a_point_it_cannot_run_is_refused_before_any_runs(
    tmp_path: Path,
) -> None:
    clients = ["librdkafka", "java", "librdkafka-process"]
    data = {"base": {"duration": 30, "nemesis": "none"}, "axes": {"client": clients}}
    points = parse_matrix(data, "clients").points(tmp_path)
    assert [point.config.client for point in points] == clients
    with pytest.raises(MatrixError) as refused:
        parse_matrix({**data, "base": {**data["base"], "java_client_version": "3.9.2"}}, "clients").points(
            tmp_path
        )
    assert "point client=librdkafka-process" in str(refused.value)
    assert "--java-client-version chooses" in str(refused.value)
    assert "point client=java" not in str(refused.value)


def test_the_java_client_is_the_clusters_release_unless_another_is_asked_for() -> None:
    assert load_config(client="java").java_client_version is None
    mixed = load_config(client="java", kafka_version="4.3.1", java_client_version="3.9.2")
    assert mixed.to_json_dict()["java_client_version"] == "3.9.2"


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"java_client_version": "3.9.2"}, "--client is librdkafka-process: add --client java"),
        ({"client": "java", "java_client_version": "3.9"}, "java_client_version (--java-client-version):"),
        ({"client": "java", "java_client_version": "5.0.0"}, "java_client_version (--java-client-version):"),
    ],
)
def test_a_java_client_version_without_the_java_client_or_not_a_release_is_refused(
    values: dict[str, str], words: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        load_config(**values)
    assert words in str(refused.value)


class DeadClient:
    """A worker's container that printed `said` and then ended with `code`, as a stand-in for Docker."""

    def __init__(self, said: list[str], code: int, stderr: bytes = b"") -> None:
        self.said, self.code, self._stderr = said, code, stderr

    def batches(self) -> Iterator[list[str]]:
        yield from ([line] for line in self.said)

    def exit_code(self, timeout: float) -> int:
        return self.code

    def stderr(self) -> bytes:
        return self._stderr


def test_a_worker_that_dies_on_its_own_leaves_its_sends_in_flight_indeterminate_with_its_exit_code(
    tmp_path: Path,
) -> None:
    history = HistoryWriter(RunDir(tmp_path), "java")
    client = DeadClient(["started\t7\t4.3.1", "invoke\t7\tproducer-0-0\t0", "ok\t7\tproducer-0-0\t0\t3",
                         "invoke\t7\tproducer-0-1\t1"], code=137)  # fmt: skip
    producer = ClientProcess(WorkerRecorder("producer-0", "t", history), client)  # type: ignore[arg-type]
    producer.await_start(5)
    producer.thread.join(5)
    rows = _rows(history)
    assert list(zip(rows["value"], rows["type"], strict=True))[-1] == ("producer-0-1", INFO)
    assert rows.iloc[-1]["error"] == "the client process ended (exit 137) without reporting the send"


def test_a_worker_that_ends_before_its_client_starts_fails_the_start_with_its_own_words(
    tmp_path: Path,
) -> None:
    history = HistoryWriter(RunDir(tmp_path), "java")
    client = DeadClient(
        [], code=1, stderr=b"Exception in thread main\nConfigException: Invalid value x for acks\n"
    )
    producer = ClientProcess(WorkerRecorder("producer-0", "t", history), client)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError) as failed:
        producer.await_start(5)
    assert "producer-0: the Java worker ended before its client started" in str(failed.value)
    assert "ConfigException: Invalid value x for acks" in str(failed.value)
    history.finish()
