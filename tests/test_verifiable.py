"""Kafka's VerifiableProducer / VerifiableConsumer output converted into a run directory and checked.

The lines are written by hand in the tools' documented format (one JSON object per event, `timestamp` in
milliseconds and `name` first), so each test states exactly what the tools printed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from kchaos.checkers.importers.verifiable import (
    VerifiableInputError,
    convert,
    process_names,
    verifiable_inputs,
)
from kchaos.checkers.results import check_run, read_config
from kchaos.model.events import MESSAGE_TIMED_OUT
from kchaos.model.history_files import history_path
from kchaos.model.history_schema import SCHEMA
from kchaos.runner.cli import main

T0 = 1_700_000_000_000
TOPIC = "verified"


def success(ts: int, value: str, partition: int, offset: int, key: str | None = None) -> dict[str, Any]:
    return {"timestamp": T0 + ts, "name": "producer_send_success", "key": key, "value": value,
            "topic": TOPIC, "partition": partition, "offset": offset}  # fmt: skip


def error(ts: int, value: str, exception: str, message: str) -> dict[str, Any]:
    return {"timestamp": T0 + ts, "name": "producer_send_error", "key": None, "value": value,
            "topic": TOPIC, "exception": f"class org.apache.kafka.common.errors.{exception}",
            "message": message}  # fmt: skip


def record(ts: int, value: str, partition: int, offset: int) -> dict[str, Any]:
    return {"timestamp": T0 + ts, "name": "record_data", "key": None, "value": value, "topic": TOPIC,
            "partition": partition, "offset": offset}  # fmt: skip


def consumed(ts: int, *ranges: tuple[int, int, int]) -> dict[str, Any]:
    """A records_consumed summary: (partition, minOffset, maxOffset) per partition read in one poll."""
    parts = [{"topic": TOPIC, "partition": p, "count": hi - lo + 1, "minOffset": lo, "maxOffset": hi}
             for p, lo, hi in ranges]  # fmt: skip
    return {"timestamp": T0 + ts, "name": "records_consumed", "count": sum(p["count"] for p in parts),
            "partitions": parts}  # fmt: skip


def assigned(ts: int, *partitions: int) -> dict[str, Any]:
    return {"timestamp": T0 + ts, "name": "partitions_assigned",
            "partitions": [{"topic": TOPIC, "partition": p} for p in partitions]}  # fmt: skip


def event(ts: int, name: str, **fields: Any) -> dict[str, Any]:
    return {"timestamp": T0 + ts, "name": name, **fields}


def write_log(path: Path, *lines: dict[str, Any] | str) -> Path:
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
        encoding="utf-8",
    )
    return path


def producer_log(path: Path, prefix: int, sends: list[tuple[int, int, int]], *, start: int = 0) -> Path:
    """A VerifiableProducer run with `--value-prefix prefix`: (ts, partition, offset) per acked send."""
    lines: list[dict[str, Any]] = [event(start, "startup_complete")]
    lines += [success(ts, f"{prefix}.{n}", p, o) for n, (ts, p, o) in enumerate(sends)]
    lines += [event(start + 10_000, "shutdown_complete"),
              event(start + 10_001, "tool_data", sent=len(sends), acked=len(sends), target_throughput=-1,
                    avg_throughput=100.0)]  # fmt: skip
    return write_log(path, *lines)


def consumer_log(path: Path, reads: list[tuple[int, str, int, int]], *, assign_at: int = 5) -> Path:
    """A VerifiableConsumer --verbose run: one poll per read (ts, value, partition, offset)."""
    lines: list[dict[str, Any]] = [
        event(0, "startup_complete"),
        event(assign_at - 1, "partitions_revoked", partitions=[]),
        assigned(assign_at, 0, 1),
    ]
    for ts, value, p, o in reads:
        lines += [record(ts, value, p, o), consumed(ts, (p, o, o))]
        committed = [{"topic": TOPIC, "partition": p, "offset": o + 1}]
        lines.append(event(ts, "offsets_committed", offsets=committed, success=True))
    lines.append(event(20_000, "shutdown_complete"))
    return write_log(path, *lines)


def clean_logs(tmp_path: Path) -> tuple[list[Path], list[Path]]:
    """Two producers (prefixes 1 and 2) writing two partitions; one consumer reads all six records."""
    p1 = producer_log(tmp_path / "producer-a.out", 1, [(100, 0, 0), (110, 1, 0), (120, 0, 2)])
    p2 = producer_log(tmp_path / "producer-b.out", 2, [(105, 0, 1), (115, 1, 1), (125, 1, 2)])
    c = consumer_log(
        tmp_path / "consumer.out",
        [(200, "1.0", 0, 0), (201, "2.0", 0, 1), (202, "1.2", 0, 2),
         (203, "1.1", 1, 0), (204, "2.1", 1, 1), (205, "2.2", 1, 2)],
    )  # fmt: skip
    return [p1, p2], [c]


def test_conversion_writes_history_in_the_checkers_schema_ordered_by_timestamp(tmp_path: Path) -> None:
    producers, consumers = clean_logs(tmp_path)
    run_dir = tmp_path / "run"
    conversion = convert(producers, consumers, run_dir, verifiable_inputs())
    table = pq.read_table(history_path(run_dir))
    assert table.schema.equals(SCHEMA)
    history = table.to_pandas()
    assert list(history["index"]) == list(range(len(history))) == list(range(conversion.rows))
    assert history["time_ns"].is_monotonic_increasing
    # Six sends (invoke + ok each), one assignment, six reads.
    assert conversion.rows == 6 * 2 + 1 + 6
    sends = history[history["f"] == "send"]
    assert list(sends["type"]) == ["invoke", "ok"] * 6
    assert list(sends[sends["type"] == "ok"]["value"]) == ["1.0", "2.0", "1.1", "2.1", "1.2", "2.2"]
    assert set(sends["process"]) == {"producer-a", "producer-b"}
    first_ok = sends[sends["type"] == "ok"].iloc[0]
    assert (first_ok["topic"], first_ok["partition"], first_ok["offset"]) == (TOPIC, 0, 0)
    assert first_ok["wall_time"] == pytest.approx((T0 + 100) / 1000)
    assign = history[history["f"] == "assign"].iloc[0]
    assert (assign["process"], assign["type"], assign["topic"]) == ("consumer", "ok", TOPIC)
    assert json.loads(assign["detail"])["partitions"] == [0, 1]
    polls = history[history["f"] == "poll"]
    assert (polls["type"] == "ok").all() and len(polls) == 6
    assert polls["index"].min() > assign["index"]
    counts = {log.process: log for log in conversion.logs}
    assert counts["producer-a"].sends_acknowledged == counts["producer-a"].tool_acked == 3
    assert counts["consumer"].records == counts["consumer"].records_consumed == 6
    assert conversion.total("sends_acknowledged") == 6


def test_config_json_carries_what_the_oracle_needs(tmp_path: Path) -> None:
    producers, consumers = clean_logs(tmp_path)
    settings = verifiable_inputs(acks="1", min_insync_replicas=1, replication_factor=3, idempotence=False)
    convert(producers, consumers, tmp_path / "run", settings)
    config = read_config(tmp_path / "run")
    assert config["source"] == "verifiable"
    assert config["topic"] == TOPIC
    assert {k: config[k] for k in ("acks", "min_insync_replicas", "replication_factor",
                                   "unclean_leader_election", "idempotence")} == {
        "acks": "1", "min_insync_replicas": 1, "replication_factor": 3, "unclean_leader_election": False,
        "idempotence": False,
    }  # fmt: skip
    assert set(config["producer_logs"]) == {"producer-a", "producer-b"}


def test_send_errors_are_indeterminate_unless_the_record_never_left_the_client(tmp_path: Path) -> None:
    p = write_log(
        tmp_path / "p.out",
        success(100, "1.0", 0, 0),
        error(101, "1.1", "TimeoutException", "Expiring 1 record(s) for verified-0:120000 ms has passed"),
        error(102, "1.2", "NotLeaderOrFollowerException", "This server is not the leader"),
        error(103, "1.3", "RecordTooLargeException", "The message is 2000000 bytes"),
    )
    c = consumer_log(tmp_path / "c.out", [(200, "1.0", 0, 0)])
    conversion = convert([p], [c], tmp_path / "run", verifiable_inputs())
    history = pd.read_parquet(history_path(tmp_path / "run"))
    outcomes = history[(history["f"] == "send") & (history["type"] != "invoke")].set_index("value")
    assert outcomes.loc["1.1", "type"] == "info"
    assert outcomes.loc["1.1", "error"].startswith(f"{MESSAGE_TIMED_OUT}: TimeoutException: Expiring")
    assert outcomes.loc["1.2", "type"] == "info"
    assert outcomes.loc["1.2", "error"] == "NotLeaderOrFollowerException: This server is not the leader"
    assert outcomes.loc["1.3", "type"] == "fail"
    assert outcomes.loc["1.2", "partition"] is None or pd.isna(outcomes.loc["1.2", "partition"])
    log = conversion.logs[0]
    assert (log.sends_acknowledged, log.sends_indeterminate, log.sends_failed) == (1, 2, 1)


def test_timestamp_ties_keep_file_and_line_order(tmp_path: Path) -> None:
    p = write_log(tmp_path / "p.out", success(100, "1.0", 0, 0), success(100, "1.1", 0, 1))
    c = write_log(tmp_path / "c.out", assigned(100, 0), record(100, "1.0", 0, 0), record(100, "1.1", 0, 1))
    convert([p], [c], tmp_path / "run", verifiable_inputs())
    history = pd.read_parquet(history_path(tmp_path / "run"))
    assert list(zip(history["f"], history["type"], history["value"].fillna(""), strict=True)) == [
        ("send", "invoke", "1.0"), ("send", "ok", "1.0"), ("send", "invoke", "1.1"), ("send", "ok", "1.1"),
        ("assign", "ok", ""), ("poll", "ok", "1.0"), ("poll", "ok", "1.1"),
    ]  # fmt: skip


def test_log_lines_that_are_not_json_are_skipped(tmp_path: Path) -> None:
    p = write_log(
        tmp_path / "p.out",
        "[2025-01-01 00:00:00,000] WARN some client warning (org.apache.kafka.clients.NetworkClient)",
        success(100, "1.0", 0, 0),
    )
    c = consumer_log(tmp_path / "c.out", [(200, "1.0", 0, 0)])
    conversion = convert([p], [c], tmp_path / "run", verifiable_inputs())
    assert conversion.logs[0].ignored_lines == 1


def test_process_names_are_file_stems_made_unique() -> None:
    names = process_names([Path("a/p.out"), Path("b/p.out"), Path("nemesis.out"), Path("c.log")])
    assert names == ["p", "p-2", "nemesis-log", "c"]


def test_invalid_json_names_the_file_and_line(tmp_path: Path) -> None:
    p = write_log(tmp_path / "p.out", success(100, "1.0", 0, 0), '{"timestamp": 1, "name": "producer_send_')
    c = consumer_log(tmp_path / "c.out", [(200, "1.0", 0, 0)])
    with pytest.raises(VerifiableInputError, match=r"p\.out:2: invalid JSON .* Fix: ") as caught:
        convert([p], [c], tmp_path / "run", verifiable_inputs())
    assert caught.value.line == 2
    assert not (tmp_path / "run" / "history").exists()


def test_consumer_log_without_record_data_asks_for_verbose(tmp_path: Path) -> None:
    p = producer_log(tmp_path / "p.out", 1, [(100, 0, 0)])
    c = write_log(
        tmp_path / "c.out", assigned(5, 0), consumed(200, (0, 0, 0)), event(300, "shutdown_complete")
    )
    with pytest.raises(
        VerifiableInputError, match=r"c\.out: records_consumed lines report 1 records.*--verbose"
    ):
        convert([p], [c], tmp_path / "run", verifiable_inputs())


def test_consumer_log_with_missing_record_data_is_refused(tmp_path: Path) -> None:
    p = producer_log(tmp_path / "p.out", 1, [(100, 0, 0), (101, 0, 1)])
    c = write_log(tmp_path / "c.out", assigned(5, 0), record(200, "1.0", 0, 0), consumed(200, (0, 0, 1)))
    with pytest.raises(VerifiableInputError, match=r"1 record_data lines, but records_consumed .* 2 records"):
        convert([p], [c], tmp_path / "run", verifiable_inputs())


def test_values_repeated_across_producers_ask_for_value_prefix(tmp_path: Path) -> None:
    # Two VerifiableProducer runs without --value-prefix both send "0", "1", ...
    p1 = write_log(tmp_path / "p1.out", success(100, "0", 0, 0), success(101, "1", 0, 1))
    p2 = write_log(tmp_path / "p2.out", success(102, "0", 1, 0))
    c = consumer_log(tmp_path / "c.out", [(200, "0", 0, 0)])
    with pytest.raises(VerifiableInputError, match=r"p2\.out:1: value '0' was already sent at .*p1\.out:1.*"
                       r"--value-prefix"):  # fmt: skip
        convert([p1, p2], [c], tmp_path / "run", verifiable_inputs())


def test_a_log_given_with_the_wrong_flag_says_which_flag(tmp_path: Path) -> None:
    p = producer_log(tmp_path / "p.out", 1, [(100, 0, 0)])
    c = consumer_log(tmp_path / "c.out", [(200, "1.0", 0, 0)])
    with pytest.raises(
        VerifiableInputError, match=r"c\.out:\d+: .*VerifiableConsumer output.*--consumer-log"
    ):
        convert([p, c], [c], tmp_path / "run", verifiable_inputs())
    with pytest.raises(
        VerifiableInputError, match=r"p\.out:\d+: .*VerifiableProducer output.*--producer-log"
    ):
        convert([p], [p], tmp_path / "run", verifiable_inputs())


def test_a_file_with_no_producer_events_is_refused(tmp_path: Path) -> None:
    p = write_log(tmp_path / "p.out", event(0, "startup_complete"), event(1, "shutdown_complete"))
    c = consumer_log(tmp_path / "c.out", [(200, "1.0", 0, 0)])
    with pytest.raises(VerifiableInputError, match=r"p\.out: no producer_send_success"):
        convert([p], [c], tmp_path / "run", verifiable_inputs())


def test_settings_the_oracle_has_no_rules_for_are_refused() -> None:
    with pytest.raises(ValueError, match="acks=all"):
        verifiable_inputs(acks="0")
    with pytest.raises(ValueError, match=r"min_insync_replicas=3 exceeds replication_factor=2"):
        verifiable_inputs(min_insync_replicas=3, replication_factor=2)


def test_converted_history_is_checked_like_a_run(tmp_path: Path, spark: SparkSession) -> None:
    """The consumer read past the acknowledged 1.1 at partition 0 offset 1 but never saw it: a lost write,
    which acks=all with no unclean election forbids."""
    p = producer_log(tmp_path / "p.out", 1, [(100, 0, 0), (101, 0, 1), (102, 0, 2), (103, 1, 0)])
    c = consumer_log(tmp_path / "c.out", [(200, "1.0", 0, 0), (201, "1.2", 0, 2), (202, "1.3", 1, 0)])
    convert([p], [c], tmp_path / "run", verifiable_inputs())
    results = check_run(tmp_path / "run")
    assert results["summary"]["sends_acknowledged"] == 4
    assert results["summary"]["records_read_poll"] == 3
    lost = results["anomalies"]["lost-write"]
    assert (lost["count"], lost["verdict"]) == (1, "violation")
    assert lost["examples"][0]["value"] == "1.1"
    assert results["anomalies"]["unseen"]["count"] == 0
    assert results["verdict"] == "violation"


@pytest.mark.parametrize(
    "command",
    [["import-verifiable"], ["check", "--format", "verifiable"]],
    ids=["import-verifiable", "alias"],
)
def test_cli_converts_and_checks(tmp_path: Path, spark: SparkSession, command: list[str]) -> None:
    producers, consumers = clean_logs(tmp_path)
    out = tmp_path / "runs" / "verifiable-1"
    args = [
        *command,
        "--out",
        str(out),
        "--acks",
        "-1",
        "--min-insync-replicas",
        "2",
    ]
    for path in producers:
        args += ["--producer-log", str(path)]
    for path in consumers:
        args += ["--consumer-log", str(path)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "producer-a: 3 acknowledged" in result.output
    assert "verdict: ok" in result.output
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["verdict"] == "ok"
    assert results["context"]["acks"] == "all"
    assert results["summary"]["sends_acknowledged"] == 6
    assert (out / "report.html").exists()
    # The converted directory is an ordinary run directory: checking it again works the default way.
    again = CliRunner().invoke(main, ["check", str(out)])
    assert again.exit_code == 0, again.output


def test_cli_reports_bad_input_with_the_fix(tmp_path: Path) -> None:
    p = producer_log(tmp_path / "p.out", 1, [(100, 0, 0)])
    c = write_log(tmp_path / "c.out", assigned(5, 0), consumed(200, (0, 0, 0)))
    base = ["check", "--format", "verifiable", "--producer-log", str(p), "--out", str(tmp_path / "run")]
    result = CliRunner().invoke(main, [*base, "--consumer-log", str(c)])
    assert result.exit_code == 2
    assert "c.out" in result.output and "--verbose" in result.output
    missing = CliRunner().invoke(main, base)
    assert missing.exit_code == 2 and "--consumer-log" in missing.output
    unknown = CliRunner().invoke(main, ["check", "--format", "jepsen", str(tmp_path)])
    assert unknown.exit_code == 2 and "jepsen" in unknown.output
    mixed = CliRunner().invoke(main, ["check", str(tmp_path), "--producer-log", str(p)])
    assert mixed.exit_code == 2 and "only apply with --format verifiable" in mixed.output


def test_import_refuses_idempotence_without_acks_all_as_a_run_does(tmp_path: Path) -> None:
    """`import-verifiable --acks 1 --idempotence` judged `ok` a producer Kafka would not start; `kchaos run`
    refuses the combination, and the import now does in the same words."""
    from kchaos.model.config import ConfigError, load_config

    with pytest.raises(ValueError, match="idempotence requires acks=all") as refused:
        verifiable_inputs(acks="1", idempotence=True)
    with pytest.raises(ConfigError) as run_refused:
        load_config(acks="1", idempotence=True, duration=60)
    assert str(refused.value) in str(run_refused.value)
    producer = producer_log(tmp_path / "p.out", 0, [(1, 0, 0)])
    consumer = consumer_log(tmp_path / "c.out", [(3, "0.0", 0, 0)])
    done = CliRunner().invoke(main, ["import-verifiable", "--producer-log", str(producer), "--consumer-log",
                                     str(consumer), "--out", str(tmp_path / "out"), "--acks", "1",
                                     "--idempotence"])  # fmt: skip
    assert done.exit_code == 2 and "idempotence requires acks=all" in done.output
    assert not (tmp_path / "out").exists()
