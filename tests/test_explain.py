"""`kchaos explain` tells what happened to a lost record, from a real run: the KIP-101 reproduction on Kafka
0.10.2.2 (tests/run_dirs/kip101-0.10.2.2, the run directory trimmed to the brokers' lines about the test
topic). There producer-0-44 was acknowledged at kchaos-2 offset 28 by leader 3; broker 3 was killed, broker 1
truncated its log to its high watermark (28) while broker 2 was elected, then broker 2 was killed and broker 1
elected before it had fetched offset 28 back, so every replica ends with producer-1-44 there. The story must
show each of those steps, from the history, the replica dump and the brokers' own log lines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import Result

from kchaos.checkers.stories.broker_log import LogLine, mentions_partition, partition_log_lines
from kchaos.checkers.stories.record_story import Subject, violating_records
from kchaos.checkers.stories.timeline import fault_line
from tests.test_cli_errors import assert_harness_failure, invoke

KIP101 = Path(__file__).parent / "run_dirs" / "kip101-0.10.2.2"
LOST = "producer-0-44"


def explain(*args: str) -> Result:
    result = invoke(["explain", *args])
    assert "Traceback" not in result.output, result.output
    return result


def told(*args: str) -> list[str]:
    result = explain(*args)
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def section(lines: list[str], heading: str) -> list[str]:
    """The lines under the heading that starts with `heading`, up to the next heading."""
    start = next(number for number, line in enumerate(lines) if line.startswith(heading))
    rest = lines[start + 1 :]
    end = next((number for number, line in enumerate(rest) if not line.startswith(" ")), len(rest))
    return rest[:end]


@pytest.fixture
def run_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(KIP101, copy)
    return copy


def test_the_lost_record_is_told_sent_and_acknowledged_at_its_offset_by_its_leader() -> None:
    lines = told(str(KIP101))
    assert lines[0] == f"{LOST} (lost-write)"
    assert "sent by producer-0 to kchaos-2 (history row 174)" in lines[1]
    assert "acknowledged at kchaos-2 offset 28 (history row 176)" in lines[2]
    assert lines[3].startswith("  by leader 3 (ISR [1, 2, 3])"), lines[3]
    assert lines[4].startswith("  in an unknown leader epoch: no replica holds the record with one"), lines[4]


def test_the_timeline_shows_the_fault_the_truncation_and_the_elections_in_order() -> None:
    timeline = section(told(str(KIP101)), "what the cluster did")
    wanted = [
        "fault one-way#1 begins: drop inter-broker answers from node 2 to nodes 1, 3",
        "** this record acknowledged at kchaos-2 offset 28",
        "fault kill#2 begins: SIGKILL node 3",
        "broker 2 elected leader, leader epoch 1",
        "broker 1 truncates its log to offset 28, cutting off offset 28",
        "fault kill#3 begins: SIGKILL node 2",
        "broker 1 elected leader, leader epoch 2",
    ]
    places = [next(number for number, line in enumerate(timeline) if text in line) for text in wanted]
    assert places == sorted(places), timeline
    times = [float(line.split()[0].strip("+s")) for line in timeline]
    assert times == sorted(times), "the timeline is in time order"


def test_every_replica_holds_another_record_at_the_lost_offset() -> None:
    lines = told(str(KIP101))
    replicas = section(lines, "what each replica holds at kchaos-2 offset 28")
    assert replicas[:3] == [
        f"  broker {broker}: offset 28 holds producer-1-44 (no epoch), not this record"
        for broker in (1, 2, 3)
    ]
    assert "at offset 28 it returned producer-1-44" in replicas[3]


def test_the_brokers_own_lines_show_the_truncation_to_the_high_watermark_and_the_election() -> None:
    logs = section(told(str(KIP101)), "the brokers' logs about kchaos-2")
    text = "\n".join(logs)
    assert "Truncating log kchaos-2 to offset 28." in text
    assert 'Selected new leader and ISR {"leader":1,"leader_epoch":2,"isr":[1]}' in text
    truncated = next(line for line in logs if "Truncating log kchaos-2 to offset 28." in line)
    elected = next(line for line in logs if '"leader":1,"leader_epoch":2' in line)
    assert float(truncated.split()[0].strip("+s")) < float(elected.split()[0].strip("+s"))
    assert "kchaos-20261126" not in text, "the zookeeper host name is not partition kchaos-2"
    assert "ignoring LeaderAndIsr" not in text, "echoes of an election are left out"


def test_a_record_that_was_not_lost_tells_an_uneventful_story() -> None:
    lines = told(str(KIP101), "--record", "producer-0-5")
    assert lines[0] == "producer-0-5"
    assert "acknowledged at kchaos-2 offset 2" in lines[2]
    replicas = section(lines, "what each replica holds at kchaos-2 offset 2")
    assert replicas[:3] == [
        f"  broker {broker}: offset 2 holds this record (no epoch)" for broker in (1, 2, 3)
    ]
    assert replicas[3] == "  the final read returned this record at offset 2"
    assert not any("truncates" in line for line in lines)


def test_a_record_asked_for_by_value_is_told_as_the_anomaly_it_is(run_copy: Path) -> None:
    duplicate = told(str(KIP101), "--record", "producer-0-46")
    assert duplicate[0] == "producer-0-46 (duplicate: permitted)"
    assert "  broker 1: offset 42 holds this record (no epoch); it is also at offset 30" in duplicate
    assert told(str(KIP101), "--record", LOST)[0] == f"{LOST} (lost-write: violation)"
    (run_copy / "results.json").unlink()
    assert told(str(run_copy), "--record", LOST)[0] == LOST, "a record needs no results to be told"


def test_a_record_written_after_a_truncation_is_not_said_to_be_cut_off_by_it() -> None:
    lines = told(str(KIP101), "--record", "producer-1-44")
    assert "acknowledged at kchaos-2 offset 28 (history row 722)" in lines[2]
    assert lines[3].startswith("  by leader 1 (ISR [1, 3])"), lines[3]
    assert lines[4] == "  in leader epoch 2 (the last election logged before it, by broker 1)"
    assert any(line.endswith("+30.62s  broker 1 truncates its log to offset 28") for line in lines)
    assert any(
        line.endswith("+85.81s  broker 2 truncates its log to offset 28, cutting off offset 28")
        for line in lines
    )


def test_max_examples_bounds_the_stories_and_says_how_many_were_left(run_copy: Path) -> None:
    results = json.loads((run_copy / "results.json").read_text())
    results["anomalies"]["lost-write"]["examples"].append(
        {"value": "producer-0-5", "partition": 2, "offset": 2}
    )
    results["anomalies"]["lost-write"]["count"] = 2
    (run_copy / "results.json").write_text(json.dumps(results))
    lines = told(str(run_copy), "--max-examples", "1")
    assert lines[0] == f"{LOST} (lost-write)"
    assert not any(line.startswith("producer-0-5") for line in lines)
    assert lines[-1] == "1 of 2 violations explained; --max-examples N for more"


def test_a_run_without_replicas_or_logs_still_tells_the_rest(run_copy: Path) -> None:
    shutil.rmtree(run_copy / "replicas")
    shutil.rmtree(run_copy / "logs")
    lines = told(str(run_copy))
    assert "acknowledged at kchaos-2 offset 28" in lines[2]
    assert section(lines, "what each replica holds")[0] == (
        "  unknown: no replicas/replicas.parquet: the run ended before its replica dump (a stopped or failed "
        "run), or the dump failed (see logs/harness.log)"
    )
    assert section(lines, "the brokers' logs")[0].startswith("  unknown: no logs/kafka-N.log")
    assert any("fault kill#2 begins" in line for line in lines)


def test_a_run_without_a_violation_says_so_in_one_line(run_copy: Path) -> None:
    results = json.loads((run_copy / "results.json").read_text())
    results["verdict"] = "ok"
    results["anomalies"]["lost-write"].update(verdict="ok", count=0, examples=[])
    (run_copy / "results.json").write_text(json.dumps(results))
    assert told(str(run_copy)) == [
        "verdict ok: no violation to explain (explain any record with --record VALUE)"
    ]


def test_bad_inputs_are_refused_naming_the_fix(tmp_path: Path, run_copy: Path) -> None:
    assert_harness_failure(explain(str(tmp_path / "nothing")), "is not a directory", "runs/<run-id>")
    assert_harness_failure(explain(str(tmp_path)), "is not a run directory", "history/history.parquet")
    assert_harness_failure(
        explain(str(KIP101), "--record", "producer-9-9"), "no record with value 'producer-9-9'"
    )
    (run_copy / "results.json").unlink()
    assert_harness_failure(explain(str(run_copy)), "has no results.json", f"kchaos check {run_copy}")
    (run_copy / "results.json").write_text("{")
    assert_harness_failure(explain(str(run_copy)), "is not valid JSON", "kchaos check")
    assert explain(str(KIP101), "--max-examples", "0").exit_code == 2


def test_partition_names_match_loosely_but_not_other_partitions_or_hosts() -> None:
    assert mentions_partition("Truncating log kchaos-2 to offset 28.", "kchaos", 2)
    assert mentions_partition("[Partition kchaos-2 broker=1] Shrinking ISR from 1,2,3 to 1", "kchaos", 2)
    assert mentions_partition("offline partition [kchaos,2] (kafka.controller)", "kchaos", 2)
    assert not mentions_partition("Truncating log kchaos-20 to offset 3.", "kchaos", 2)
    assert not mentions_partition("connection to kchaos-20261126-120205-zookeeper/1.2.3.4", "kchaos", 2)
    assert not mentions_partition("Truncating log my-kchaos-2 to offset 3.", "kchaos", 2)


def test_later_releases_wording_is_kept() -> None:
    text = (
        "[2026-11-26 12:00:01,000] INFO [Partition kchaos-1 broker=2] Shrinking ISR from 1,2,3 to 2. (x)\n"
        "[2026-11-26 12:00:02,000] INFO [UnifiedLog partition=kchaos-1, dir=/d] Truncating to offset 7 (x)\n"
        "[2026-11-26 12:00:03,000] INFO [Partition kchaos-1 broker=2] Log loaded for partition kchaos-1 (x)\n"
    )
    lines = partition_log_lines(2, text, "kchaos", 1, since=0.0)
    assert [line.text.split("] ", 1)[1] for line in lines] == ["Shrinking ISR from 1,2,3 to 2. (x)",
                                                               "Truncating to offset 7 (x)"]  # fmt: skip
    assert lines[1].turning_point(7, sent_at=0.0, held_end=8) == (
        "broker 2 truncates its log to offset 7, cutting off offset 7"
    )
    fetcher = "[ReplicaFetcher replicaId=1] Truncating partition kchaos-1 with TruncationState(offset=5, "
    assert LogLine(1, 9.0, fetcher + "completed=true) due to local high watermark 5").turning_point(
        7, 0.0, 8
    ) == ("broker 1 truncates its log to offset 5, cutting off offsets 5-7")
    no_effect = (
        "[UnifiedLog partition=kchaos-1] Truncating to 0 has no effect as the largest offset in the log is -1"
    )
    assert LogLine(1, 9.0, no_effect).turning_point(7, 0.0, 8) is None


def test_a_broker_taking_the_lead_is_an_election_and_a_setting_named_election_is_not() -> None:
    text = (
        "[2026-11-26 12:00:01,000] INFO Created log for partition kchaos-1 in /d with properties "
        "{unclean.leader.election.enable=false} (kafka.log.LogManager)\n"
        "[2026-11-26 12:00:02,000] INFO [Broker id=2] Leader kchaos-1 with topic id Some(x) starts at leader "
        "epoch 3 from offset 0 with partition epoch 0, high watermark 0, ISR [2,3,1] (state.change.logger)\n"
        "[2026-11-26 12:00:03,000] INFO [Broker id=1] Follower kchaos-1 starts at leader epoch 3 from "
        "offset 0 with partition epoch 0 and high watermark 0. Current leader is 2. (state.change.logger)\n"
    )
    lines = partition_log_lines(2, text, "kchaos", 1, since=0.0)
    assert [line.text[:30] for line in lines] == [
        "INFO [Broker id=2] Leader kcha",
        "INFO [Broker id=1] Follower kc",
    ]
    assert [line.turning_point(5, 0.0, 0.0) for line in lines] == [
        "broker 2 becomes leader, leader epoch 3",
        None,
    ]


def test_violating_records_come_from_violated_anomalies_only() -> None:
    results = json.loads((KIP101 / "results.json").read_text())
    subjects, total, untold = violating_records(results, 5)
    assert subjects == [Subject(LOST, "lost-write", "kchaos", 2, 28)]
    assert (total, untold) == (1, [])  # the 18 permitted duplicates are no violation


def test_a_violation_that_names_no_record_is_said_to_be_untold(run_copy: Path) -> None:
    results = json.loads((run_copy / "results.json").read_text())
    results["anomalies"]["offset-regression"] = {
        "verdict": "violation",
        "count": 1,
        "examples": [
            {"id": "kchaos/1@12074", "group": "g", "topic": "kchaos", "partition": 1, "offset": 256}
        ],
    }
    (run_copy / "results.json").write_text(json.dumps(results))
    lines = told(str(run_copy))
    assert lines[0] == (
        "offset-regression: violated, but no example names a record, a place or a transaction, which is "
        "what explain tells the story of; see results.json or report.html"
    )
    assert lines[1] == f"{LOST} (lost-write)"


def test_a_fault_that_could_not_be_applied_says_why() -> None:
    row = {"key": "kill#4", "f": "kill", "value": "skipped", "error": "no leader to kill", "detail": None}
    assert fault_line(row) == "fault kill#4 not applied: no leader to kill"


def test_kchaos_check_keeps_as_many_examples_as_max_examples_says(run_copy: Path) -> None:
    """`kchaos check --max-examples` bounds the examples kept in results.json as `kchaos run`'s does; the
    count stays the whole count. 0 is refused before Spark starts, naming the option."""
    result = invoke(["check", "--max-examples", "1", str(run_copy)])
    assert result.exit_code == 1, result.output  # the run's violation
    found = json.loads((run_copy / "results.json").read_text(encoding="utf-8"))["anomalies"]
    counted = {name: (a["count"], len(a["examples"])) for name, a in found.items() if a.get("count")}
    assert counted["duplicate"] == (18, 1) and counted["lost-write"] == (1, 1), counted
    refused = invoke(["check", "--max-examples", "0", str(run_copy)])
    assert refused.exit_code == 2 and "--max-examples" in refused.output, refused.output
