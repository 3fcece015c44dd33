"""What the terminal says after a run and while it goes: only what matters.

The summary names each anomaly found, or not judged for a reason the user can act on, by count, verdict
and rule id, never the rule's text (that is in the report); anomalies that do not apply to what the run did
share one line; progress is one status line rewritten in place on a terminal and milestones alone
elsewhere, every message in the run's harness.log; Spark's JVM prints into harness.log, not the terminal.
Recorded and synthetic results, no cluster (tests/cluster/test_client_faults.py counts a real run's lines).
"""

from __future__ import annotations

import copy
import io
import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kchaos.checkers.rules.checkability import NO_EOS, NO_TRANSACTIONS
from kchaos.model.config import DEFAULT_SPARK_MASTER
from kchaos.model.progress import Milestone
from kchaos.model.run_files import RunDir
from kchaos.runner.outcome import RunOutcome, check_and_report
from kchaos.runner.outcome_echo import echo_outcome
from kchaos.runner.progress_echo import ProgressEcho
from tests.histories import HistoryBuilder
from tests.test_honest_verdicts import complete, make_run

KIP101 = Path(__file__).parent / "run_dirs" / "kip101-0.10.2.2"
KCHAOS = Path(sys.executable).parent / "kchaos"
#: What the issue asks of a default run's whole terminal output.
MAX_LINES = 12
#: Lines only Spark's JVM (or log4j in it) prints.
JVM_MARKS = ("WARNING: Using incubator modules", "WARN SparkSession", "log4j", "Setting default log level")


def kip101() -> dict[str, Any]:
    return dict(json.loads((KIP101 / "results.json").read_text(encoding="utf-8")))


def echoed(results: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = echo_outcome(RunOutcome(Path("runs/r"), results, Path("runs/r/report.html")))
    out = capsys.readouterr()
    assert out.err == ""
    return code, out.out.splitlines()


def test_a_violation_names_its_rule_by_id_and_its_known_fix_by_kip_without_their_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    results = kip101()
    code, lines = echoed(results, capsys)
    assert code == 1
    assert lines == [
        "run directory: runs/r",
        "report:        runs/r/report.html",
        "acknowledged writes: 447, lost: 1 (never read: 1)",
        "  lost-write: 1 -> violation (rule committed-not-lost; known: KIP-101, fixed in 0.11.0)",
        "  duplicate: 18 -> permitted (rule at-least-once-retries)",
        "  nonmonotonic-send: 5 -> permitted (rule retries-reorder)",
        "  not applicable: aborted-read, uncommitted-read, lost-committed, partial-transaction "
        "(the run wrote no transactions)",
        "complete run",
        "faults: 3 of 3 applied",
        "sends/s: 6 acknowledged of 6 requested (100%); reads/s: 0",
        "verdict: violation (rule committed-not-lost)",
    ]
    lost = results["anomalies"]["lost-write"]
    text = "\n".join(lines)
    assert lost["rule"] not in text and lost["known_fix"] not in text
    assert max(map(len, lines)) < 120, "no line is a paragraph"


def test_an_ok_run_says_where_it_is_what_it_rests_on_and_ok(capsys: pytest.CaptureFixture[str]) -> None:
    results = kip101()
    for anomaly in results["anomalies"].values():
        if anomaly["count"]:
            anomaly.update(count=0, verdict="ok", examples=[])
    results["verdict"] = "ok"
    results["summary"]["sends_acknowledged"] = 447
    code, lines = echoed(results, capsys)
    assert code == 0
    assert lines[2] == "acknowledged writes: 447, lost: 0"
    assert [line for line in lines if line.startswith("  ")] == [
        "  not applicable: aborted-read, uncommitted-read, lost-committed, partial-transaction "
        "(the run wrote no transactions)"
    ]
    assert lines[-1] == "verdict: ok"
    assert len(lines) == 8


def test_anomalies_that_do_not_apply_share_one_line_and_one_the_user_can_act_on_has_its_own(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A group run without eos: the transaction and the end-to-end anomalies do not apply (one line, both
    reasons); replicas that were not dumped is a reason of its own, on its own line with its reason."""
    results = kip101()
    anomalies = results["anomalies"]
    template = anomalies["aborted-read"]
    for name in ("eos-lost", "eos-duplicate"):
        anomalies[name] = {**copy.deepcopy(template), "unchecked_reason": NO_EOS}
    anomalies["replica-divergence"].update(
        count=None,
        verdict="unchecked",
        unchecked_reason="the run has no replica dumps (replicas/replicas.parquet)",
    )
    code, lines = echoed(results, capsys)
    inapplicable = [line for line in lines if "not applicable" in line]
    assert inapplicable == [
        "  not applicable: aborted-read, uncommitted-read, lost-committed, partial-transaction, eos-lost, "
        "eos-duplicate (the run wrote no transactions; the group's members wrote no transactions)"
    ]
    assert (
        "  replica-divergence: not checked (the run has no replica dumps (replicas/replicas.parquet))"
        in lines
    )
    assert NO_TRANSACTIONS not in "\n".join(lines)
    outcome = RunOutcome(KIP101, results, KIP101 / "report.html")
    assert list(outcome.unchecked()) == ["replica-divergence"]
    assert code == 1


def test_progress_on_a_terminal_is_one_line_rewritten_in_place_and_cleared() -> None:
    out = io.StringIO()
    with ProgressEcho(out, tty=True) as progress:
        progress("starting 3 Kafka 4.3.1 nodes")
        progress(Milestone("writing for 60s with 2 faults: kill#1, isolate#2"))
        progress("[00:30 fault active]; 62 acks/s; kill#1 in force; ~00:40 left")
        progress("x" * 500)
    text = out.getvalue()
    assert text.count("\n") == 1, "only the milestone is a line of its own"
    assert "* writing for 60s with 2 faults: kill#1, isolate#2\n" in text
    assert "\r\x1b[K* [00:30 fault active]" in text
    assert text.endswith("\r\x1b[K"), "the status line is cleared at the end"
    longest = max(len(part) for part in text.replace("\n", "\r").split("\r"))
    assert longest < 400, "a status line is cut to the terminal's width"


def test_progress_elsewhere_prints_milestones_alone() -> None:
    out = io.StringIO()
    with ProgressEcho(out, tty=False) as progress:
        progress("starting 3 Kafka 4.3.1 nodes")
        progress(Milestone("writing for 60s with 2 faults: kill#1, isolate#2"))
        progress("[00:30 fault active]; 62 acks/s; kill#1 in force; ~00:40 left")
        progress(Milestone("not recovered within 180s; reading what there is"))
        progress("checking the history with Spark")
    assert out.getvalue() == (
        "* writing for 60s with 2 faults: kill#1, isolate#2\n"
        "* not recovered within 180s; reading what there is\n"
    )


def test_every_progress_message_goes_to_the_harness_log(caplog: pytest.LogCaptureFixture) -> None:
    from kchaos.runner.run import _logged

    shown: list[str] = []
    with caplog.at_level(logging.INFO, logger="kchaos.runner.run"):
        progress = _logged(shown.append)
        progress("final read of every partition")
        progress(Milestone("keeping the cluster"))
    assert shown == ["final read of every partition", "keeping the cluster"]
    assert isinstance(shown[1], Milestone), "a milestone stays one on its way to the terminal"
    assert [r.getMessage() for r in caplog.records] == [
        "progress: final read of every partition",
        "progress: keeping the cluster",
    ]


def test_kchaos_check_prints_no_jvm_line_and_its_harness_log_keeps_them(tmp_path: Path) -> None:
    """A fresh process, so its JVM starts here: what it prints (Spark 4's incubator-module warning at
    least) lands in the run's harness.log, and the terminal has the summary alone."""
    h = HistoryBuilder()
    written = h.sends(10)
    h.fault("kill", "kill#1", "start", kind="crash", nodes=[1])
    h.fault("kill", "kill#1", "stop", kind="crash", nodes=[1])
    h.final_read_start(low=0, high=10)
    h.final_reads(written)
    run_dir = make_run(tmp_path, complete(h), planned=["kill#1"])

    done = subprocess.run(
        [str(KCHAOS), "check", str(run_dir)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert len(lines) <= MAX_LINES, done.stdout
    assert not [line for line in lines if any(mark in line for mark in JVM_MARKS)], done.stdout
    assert lines[-1] == "verdict: ok"
    log = RunDir(run_dir).harness_log.read_text(encoding="utf-8")
    assert "spark-jvm: WARNING: Using incubator modules" in log, log[-2000:]


def test_the_headline_counts_acknowledged_records_read_and_then_truncated_as_lost(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The power-loss case: consumers read the records before they vanished, so `lost-write` is 0 and the
    loss is a `truncated-read` of acknowledged records, which the headline still calls lost."""
    results = kip101()
    results["anomalies"]["lost-write"].update(count=0, verdict="ok", examples=[])
    results["anomalies"]["truncated-read"].update(
        count=8236, verdict="permitted", by_kind={"acknowledged": 8234, "unacknowledged": 2}
    )
    _, lines = echoed(results, capsys)
    assert lines[2] == "acknowledged writes: 447, lost: 8234 (read, then truncated: 8234)"


def test_a_check_says_what_spark_works_on_as_it_goes(tmp_path: Path) -> None:
    """`kchaos check` shows each step in place on a terminal (`judge_run_dir` hands it a ProgressEcho): the
    check tells its progress callback when Spark starts, each anomaly it counts, and the report."""
    h = HistoryBuilder()
    written = h.sends(10)
    h.final_read_start(low=0, high=10)
    h.final_reads(written)
    run_dir = make_run(tmp_path, complete(h))
    said: list[str] = []
    check_and_report(run_dir, DEFAULT_SPARK_MASTER, progress=said.append)
    assert said[:2] == ["starting Spark", "loading the history"]
    assert "checking: lost-write" in said and "checking: truncated-read" in said
    assert said[-1] == "writing the report"


def test_a_transactional_runs_headline_counts_committed_records_acknowledged_and_lost(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """It read `acknowledged writes: 0, lost: not known (lost-write, unseen not checked)`."""
    from kchaos.checkers.lost_count import headline_lost
    from kchaos.checkers.rules.checkability import NO_PLAIN_SENDS

    results = kip101()
    anomalies = results["anomalies"]
    for name in ("lost-write", "unseen"):
        anomalies[name].update(checked=False, count=None, unchecked_reason=NO_PLAIN_SENDS, examples=[])
    anomalies["truncated-read"].update(checked=True, count=0)
    anomalies["lost-committed"].update(checked=True, count=3, verdict="violation", unchecked_reason=None)
    results["summary"].update(sends_acknowledged=0, txn_records_acknowledged=900)
    results["lost"] = headline_lost(anomalies)
    _, lines = echoed(results, capsys)
    assert lines[2] == "acknowledged writes: 900, lost: 3 (committed, then lost: 3)"
