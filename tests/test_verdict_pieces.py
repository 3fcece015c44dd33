"""The pure pieces a verdict rests on, each tested alone: the phase rows a run records and reads back,
which anomalies wait for which phase, how faults asked for pair with faults applied, why a skip happened,
and the run-wide verdict that never says `ok` for a run that tested nothing. `tests/test_honest_verdicts.py`
checks the same rules end to end through `check_run` and `kchaos check`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kchaos.checkers.faults import fault_application, skip_reason
from kchaos.checkers.rules.anomaly_names import (
    ANOMALY_NAMES,
    GROUP_ANOMALY_NAMES,
    LOST_COMMITTED,
    LOST_WRITE,
    PARTIAL_TRANSACTION,
    TRUNCATED_READ,
    UNSEEN,
)
from kchaos.checkers.rules.checkability import (
    NEEDED_PHASES,
    NOTHING_ACKNOWLEDGED,
    run_verdict,
    unchecked_reasons,
)
from kchaos.checkers.rules.transaction_summary import TransactionSummary
from kchaos.model.history import HistoryWriter
from kchaos.model.phase_record import (
    CLUSTER_UP,
    READ_TO_END,
    RECOVERY,
    REPLICA_DUMP,
    RUN_PHASES,
    WORKLOAD,
    PhaseRecorder,
    RunPhases,
    run_phases,
)
from kchaos.model.run_files import RunDir
from tests.test_honest_verdicts import NETEM_SKIP

#: A run that wrote transactions, every reader's isolation level recorded: all of them can be judged.
TRANSACTIONS = TransactionSummary(
    transactions=3, committed=2, aborted=1, records=5, committed_records=3, reads_of_unknown_isolation=0
)


def test_phase_rows_round_trip_through_a_real_writer(tmp_path: Path) -> None:
    import pandas as pd

    from kchaos.model.history_files import history_path

    writer = HistoryWriter(RunDir(tmp_path), "r")
    record = PhaseRecorder(writer)
    record.completed_phase(CLUSTER_UP)
    record.stopped("fault active", KeyboardInterrupt("signal 15"))
    record.stopped("replica dump", RuntimeError("later"))  # only the first stop counts
    writer.finish()
    rows = pd.read_parquet(history_path(tmp_path)).to_dict("records")
    phases = run_phases({str(key): value for key, value in row.items()} for row in rows)
    assert phases == RunPhases(True, (CLUSTER_UP,), "fault active", "KeyboardInterrupt: signal 15")
    assert phases.describe().startswith("partial run (stopped during: fault active; missing: workload,")
    with pytest.raises(ValueError, match="unknown run phase"):
        record.completed_phase("checking")


def test_a_history_without_phase_rows_is_judged_as_complete() -> None:
    phases = run_phases([{"index": 0, "process": "producer-0", "f": "send", "type": "ok"}])
    assert (phases.recorded, phases.partial, phases.has(READ_TO_END)) == (False, False, True)
    assert unchecked_reasons(ANOMALY_NAMES, phases, replicas_present=True, transactions=TRANSACTIONS) == {}


def test_every_phase_an_anomaly_needs_is_a_run_phase() -> None:
    assert set(NEEDED_PHASES) <= {*ANOMALY_NAMES, *GROUP_ANOMALY_NAMES}
    assert {p for needed in NEEDED_PHASES.values() for p in needed} <= set(RUN_PHASES)


def test_only_absence_defined_anomalies_wait_for_the_final_read() -> None:
    phases = RunPhases(True, (CLUSTER_UP, WORKLOAD, "heal", RECOVERY, REPLICA_DUMP))
    assert set(
        unchecked_reasons(ANOMALY_NAMES, phases, replicas_present=True, transactions=TRANSACTIONS)
    ) == {
        LOST_WRITE,
        UNSEEN,
        TRUNCATED_READ,
        LOST_COMMITTED,
        PARTIAL_TRANSACTION,
    }


def test_fault_application_pairs_plan_and_history() -> None:
    events = [
        {"index": 1, "process": "nemesis", "f": "kill", "key": "kill#1", "value": "start"},
        {"index": 2, "process": "nemesis", "f": "kill", "key": "kill#1", "value": "stop"},
        {"index": 3, "process": "nemesis", "f": "one-way", "key": "one-way#2", "value": "skipped",
         "error": "one-way#2: no node in 'followers' outside the senders"},
        {"index": 4, "process": "harness", "f": "phase", "key": None, "value": "stopped"},
        {"index": 5, "process": "nemesis", "f": "pause", "key": "pause#9", "value": "start"},
    ]  # fmt: skip
    applied = fault_application(["kill#1", "one-way#2", "isolate#3"], events)
    assert applied.requested == ("kill#1", "one-way#2", "isolate#3", "pause#9")
    assert applied.applied == ("kill#1", "pause#9")
    assert applied.describe() == (
        "faults: 2 of 4 applied (one-way#2 skipped: no node in 'followers' outside the senders; "
        "isolate#3 not reached: the run stopped first)"
    )
    assert not applied.none_applied
    assert fault_application([], []).describe() == "faults: none requested"


def test_a_request_fault_that_took_no_request_was_not_applied() -> None:
    """A hold aimed where the requests it names never arrive (an EndTxn held at a broker that coordinates
    nothing, an AddPartitionsToTxn from a client that sends none) began and ended, and did nothing: its
    stop row says it took none. A hold that took one was applied."""

    def row(index: int, key: str, value: str, taken: int | None = None) -> dict[str, object]:
        detail = {} if taken is None else {"detail": json.dumps({"taken": taken})}
        return {"index": index, "process": "nemesis", "f": "hold", "key": key, "value": value, **detail}

    events = [row(1, "hold#1", "start"), row(2, "hold#1", "stop", 0), row(3, "hold#2", "start")]
    events.append(row(4, "hold#2", "stop", 1))
    applied = fault_application(["hold#1", "hold#2"], events)
    assert applied.applied == ("hold#2",)
    assert applied.describe() == (
        "faults: 1 of 2 applied (hold#1 skipped: took no request: none of those it aims at came while it "
        "was in force)"
    )
    assert fault_application(["hold#1"], events[:2]).none_applied


def test_a_named_scenario_that_began_no_fault_applied_none_of_what_it_asked_for() -> None:
    """An attack that found nothing to attack (no coordinator, no request of its API) stops before its first
    fault: the run then tested nothing, and `ok` would say the attack was survived."""
    stopped = fault_application([], [], scenario="txn-markers-held")
    assert stopped.none_applied
    assert stopped.describe() == "faults: the scenario txn-markers-held began none"
    began = [{"index": 1, "process": "nemesis", "f": "hold", "key": "hold#1", "value": "start"}]
    assert not fault_application([], began, scenario="txn-markers-held").none_applied
    verdict, reason = run_verdict("ok", RunPhases(True, RUN_PHASES), stopped.describe(), stopped.none_applied)
    assert verdict == "unchecked"
    assert reason == "no requested fault was applied (faults: the scenario txn-markers-held began none)"


def test_skip_reasons_drop_the_fault_name_and_the_advice() -> None:
    assert skip_reason(NETEM_SKIP).startswith("no sch_netem (this kernel")
    assert skip_reason("ring needs at least 3 nodes, the cluster has 2; the fault is skipped") == (
        "ring needs at least 3 nodes, the cluster has 2"
    )


def test_run_verdict_never_says_ok_for_an_untested_run() -> None:
    whole = RunPhases(True, RUN_PHASES)
    partial = RunPhases(True, (CLUSTER_UP,), "fault active")
    assert run_verdict("ok", whole, "faults: 1 of 1 applied", False) == ("ok", None)
    assert run_verdict("ok", whole, "faults: 0 of 1 applied", True)[0] == "unchecked"
    assert run_verdict("ok", partial, "faults: 1 of 1 applied", False)[0] == "unchecked"
    assert run_verdict("violation", partial, "faults: 0 of 1 applied", True) == ("violation", None)
    # A partial run is never permitted: the same cut-short history must not pass or not by what else it saw.
    permitted_partial = run_verdict("permitted", partial, "faults: 1 of 1 applied", False)
    assert permitted_partial == run_verdict("ok", partial, "faults: 1 of 1 applied", False)
    assert permitted_partial[0] == "unchecked"
    assert run_verdict("permitted", whole, "faults: 0 of 1 applied", True) == ("permitted", None)
    # Nothing acknowledged, nothing at stake: no `ok`, whatever the faults did.
    applied = "faults: 1 of 1 applied"
    assert run_verdict("ok", whole, applied, False, None, 0) == ("unchecked", NOTHING_ACKNOWLEDGED)
    assert run_verdict("ok", whole, applied, False, None, 1) == ("ok", None)


def test_a_planned_fault_this_kchaos_does_not_know_is_said_to_be_unknown_not_unreached() -> None:
    """It read "x#2 not reached: the run stopped first", a reason nothing in the run showed."""
    events = [{"index": 1, "process": "nemesis", "f": "kill", "key": "kill#1", "value": "start"}]
    applied = fault_application(["kill#1", "teleport#2", "isolate#3"], events)
    assert applied.describe() == (
        "faults: 1 of 3 applied (teleport#2 skipped: unknown fault 'teleport' in schedule.json: this kchaos "
        "does not know it; isolate#3 not reached: the run stopped first)"
    )
