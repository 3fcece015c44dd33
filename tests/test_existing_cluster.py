"""A cluster kchaos did not start (`--bootstrap`), without Kafka: what the configuration refuses before
anything runs, the fault log's lines, the follower that records them as the user's tooling writes them, and
the replica dump the run cannot take, which leaves divergence unchecked with that reason and the run
complete. The run itself, against the project's docker-compose cluster, is tests/cluster/test_bootstrap.py.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from kchaos.checkers.faults import fault_application, fault_intervals
from kchaos.checkers.rules.anomaly_names import ANOMALY_NAMES, REPLICA_DIVERGENCE
from kchaos.checkers.rules.checkability import unchecked_reasons
from kchaos.harness.existing_cluster import NO_NODE_ACCESS
from kchaos.model.config import ConfigError, load_config
from kchaos.model.events import SKIPPED, START, STOP
from kchaos.model.fault_log_lines import FaultLogError, parse_line, parse_time
from kchaos.model.history import HistoryWriter
from kchaos.model.history_files import history_path
from kchaos.model.phase_record import REPLICA_DUMP, RUN_PHASES, PhaseRecorder, run_phases
from kchaos.model.run_files import RunDir
from kchaos.nemesis.fault_log import EXTERNAL, FaultLog
from kchaos.runner.cli import main

BOOTSTRAP = "127.0.0.1:29091,127.0.0.1:29092"


def refusal(**values: object) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(**values)
    return str(caught.value)


def test_bootstrap_takes_host_port_lists_and_runs_no_faults_of_kchaos() -> None:
    config = load_config(bootstrap=BOOTSTRAP)
    assert config.bootstrap == ("127.0.0.1:29091", "127.0.0.1:29092")
    assert config.nemesis == (), "kchaos has no node to fault: no faults unless asked, and then refused"
    assert load_config(bootstrap="[::1]:9092", nemesis="none").bootstrap == ("[::1]:9092",)
    # The cluster has the brokers it has: a replication factor above the default count is Kafka's to judge.
    assert (
        load_config(bootstrap=BOOTSTRAP, replication_factor=5, min_insync_replicas=4).replication_factor == 5
    )


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"bootstrap": "kafka-1"}, "bootstrap (--bootstrap): 'kafka-1' is not HOST:PORT with a port from 1"),
        ({"bootstrap": "h:0"}, "'h:0' is not HOST:PORT with a port from 1 to 65535"),
        ({"bootstrap": "h:99999"}, "'h:99999' is not HOST:PORT"),
        ({"bootstrap": ":9092"}, "':9092' is not HOST:PORT"),
        ({"bootstrap": BOOTSTRAP, "nemesis": "kill:target=leader"}, "nemesis: kchaos applies faults through"),
        (
            {"bootstrap": BOOTSTRAP, "scenario": "acks-1-failover"},
            "nemesis: kchaos applies faults through the nodes",
        ),
        ({"bootstrap": BOOTSTRAP, "brokers": 5}, "brokers: --brokers shapes a cluster kchaos starts"),
        (
            {
                "bootstrap": BOOTSTRAP,
                "broker_config": {"log.flush.interval.messages": "1"},
                "broker_heap": "1g",
            },
            "broker_heap: --broker-heap, --broker-config shape a cluster kchaos starts",
        ),
        (
            {"fault_log": "/tmp/faults.log"},
            "fault_log: --fault-log records the faults you apply to a cluster",
        ),
        (
            {"bootstrap": BOOTSTRAP, "fault_log": "/no/such/dir/f"},
            "its directory '/no/such/dir' does not exist",
        ),
        ({"bootstrap": BOOTSTRAP, "fault_log": "/tmp"}, "'/tmp' is a directory"),
    ],
)
def test_what_a_cluster_kchaos_did_not_start_cannot_take_is_refused_with_the_fix(
    values: dict[str, object], says: str
) -> None:
    assert says in refusal(**values)


def test_the_refusals_come_before_anything_starts_from_the_command_line(tmp_path: Path) -> None:
    """No engine, no run directory: the flag's refusal is the whole of what happens."""
    result = CliRunner().invoke(
        main, ["run", "--bootstrap", BOOTSTRAP, "--brokers", "5", "--runs-dir", str(tmp_path)]
    )
    assert result.exit_code != 0 and "leave --brokers out" in result.output
    assert list(tmp_path.iterdir()) == []
    assert "--bootstrap" in CliRunner().invoke(main, ["run", "--help"]).output


# --- the fault log's lines --------------------------------------------------------------------------


def test_a_line_gives_its_time_phase_name_kind_nodes_and_words() -> None:
    line = parse_line(3, "2026-11-29T00:00:01.5Z start restart-2 kind=crash nodes=2 systemctl restart kafka")
    assert line is not None
    assert (line.number, line.phase, line.name, line.kind, line.nodes) == (
        3,
        START,
        "restart-2",
        "crash",
        (2,),
    )
    assert line.at == pytest.approx(1795910401.5) and line.what == "systemctl restart kafka"
    plain = parse_line(4, "1795910409.25 stop restart-2")
    assert plain is not None and (plain.at, plain.phase, plain.kind, plain.nodes) == (
        1795910409.25, STOP, "unknown", ()
    )  # fmt: skip
    assert parse_line(5, "   ") is None and parse_line(6, "# a comment") is None
    assert parse_time("2026-11-29T01:00:00+01:00") == parse_time("2026-11-29T00:00:00Z")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("1764374401 start", "a line needs a time, start or stop, and a name"),
        ("2026-11-29T00:00:01 start x", "has no zone; end it with Z or +HH:MM"),
        ("yesterday start x", "'yesterday' is neither Unix seconds nor an ISO 8601 time"),
        ("1764374401 begin x", "'begin' is neither start nor stop"),
        ("1764374401 start x kind=meltdown", "no fault kind 'meltdown'; choose from crash,"),
        ("1764374401 start x nodes=a,b", "nodes='a,b' is not broker ids"),
    ],
)
def test_a_line_kchaos_cannot_record_is_named_with_the_form(text: str, says: str) -> None:
    with pytest.raises(FaultLogError, match="fault log line 7: ") as caught:
        parse_line(7, text)
    assert says in str(caught.value) and "write TIME start|stop NAME" in str(caught.value)


# --- the follower -----------------------------------------------------------------------------------


def history_rows(run_dir: Path) -> list[dict[str, object]]:
    return [
        {str(key): value for key, value in row.items()}
        for row in pd.read_parquet(history_path(run_dir)).to_dict("records")
    ]


def test_the_follower_records_each_line_as_the_tooling_writes_it_at_the_time_it_gives(tmp_path: Path) -> None:
    log_file = tmp_path / "faults.log"
    writer = HistoryWriter(RunDir(tmp_path), "r")
    said: list[str] = []
    follower = FaultLog(log_file, writer, said.append)
    follower.start()
    follower.read_new()  # not written yet: nothing to read, no error
    now = time.time()
    with log_file.open("w") as fh:
        fh.write(f"{now - 2:.3f} start pause-3 kind=pause nodes=3 docker pause kafka-3\n")
        fh.write(f"{now - 1:.3f} stop pause-3\n{now:.3f} start half")  # the last line is not whole yet
    follower.read_new()
    assert list(follower.active_keys) == []
    with log_file.open("a") as fh:
        fh.write("-way kind=partition\nnonsense\n")
    follower.stop()
    follower.stop()  # twice is fine
    writer.finish()
    rows = history_rows(tmp_path)
    nemesis = [row for row in rows if row["process"] == "nemesis"]
    assert [(row["f"], row["key"], row["value"]) for row in nemesis] == [
        (EXTERNAL, "pause-3", START), (EXTERNAL, "pause-3", STOP), (EXTERNAL, "half-way", START),
        (EXTERNAL, "line-4", SKIPPED),
    ]  # fmt: skip
    start, stop = nemesis[0], nemesis[1]
    assert int(str(stop["time_ns"])) - int(str(start["time_ns"])) == pytest.approx(1e9, rel=0.01)
    intervals = fault_intervals(rows)
    assert [(i.key, i.kind, i.nodes) for i in intervals] == [
        ("pause-3", "pause", (3,)),
        ("half-way", "partition", ()),
    ]
    assert intervals[0].description is not None and "docker pause kafka-3" in intervals[0].description
    assert "kchaos did not see its effect" in intervals[0].description
    assert fault_application([], rows, None).applied == ("pause-3", "half-way")
    assert follower.skipped and "fault log line 4" in said[0] and "not recorded" in said[0]


def test_without_a_log_the_follower_records_nothing_and_never_holds_the_run(tmp_path: Path) -> None:
    writer = HistoryWriter(RunDir(tmp_path), "r")
    follower = FaultLog(None, writer)
    follower.start()
    assert follower.faults_ended.is_set() and follower.planned == [] and follower.error is None
    follower.stop()
    writer.finish()
    assert not [row for row in history_rows(tmp_path) if row["process"] == "nemesis"]


# --- the replica dump it cannot take ------------------------------------------------------------------


def test_a_skipped_replica_dump_leaves_the_run_complete_and_divergence_unchecked_with_why(
    tmp_path: Path,
) -> None:
    writer = HistoryWriter(RunDir(tmp_path), "r")
    record = PhaseRecorder(writer)
    for phase in RUN_PHASES[:-1]:
        record.completed_phase(phase)
    record.skipped(REPLICA_DUMP, NO_NODE_ACCESS)
    writer.finish()
    phases = run_phases(history_rows(tmp_path))
    assert not phases.partial and phases.missing == ()
    assert phases.describe() == f"complete run (replica-dump not taken: {NO_NODE_ACCESS})"
    assert phases.to_json()["skipped"] == {REPLICA_DUMP: NO_NODE_ACCESS}
    reasons = unchecked_reasons(ANOMALY_NAMES, phases, replicas_present=False)
    assert reasons[REPLICA_DIVERGENCE] == NO_NODE_ACCESS
    with pytest.raises(ValueError, match="unknown run phase"):
        record.skipped("checking", "no")
