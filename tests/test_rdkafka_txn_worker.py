"""The librdkafka transactional worker without a cluster: its plan is the in-process transactional
workload's for the same seed and process; its lines, read by the Java transactional workload's recorder,
become exactly the rows the in-process workload records for every way a transaction can go (the same
scripted client drives both); its arguments are the Java worker's and its client settings the in-process
producer's; and `--client librdkafka-process` drives `--workload txn`."""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from confluent_kafka import KafkaError, KafkaException

from kchaos.compose.rdkafka.transaction_calls import (
    CALL_TIMEOUT_S,
    IN_DOUBT_AT_ABORT,
    NEVER_SENT,
    ON_TIMEOUT_ARGUMENT,
    PROTOCOL,
    RESTART,
    RETRY,
    must_exit,
)
from kchaos.compose.rdkafka.transaction_plan import PlannedTransaction, TransactionPlanner
from kchaos.compose.rdkafka.txn_worker import TransactionalWriter, TxnArguments
from kchaos.compose.rdkafka.worker import Lines, mode_module, split_arguments
from kchaos.model.config import load_config
from kchaos.model.events import transaction_id, transactional_name
from kchaos.model.history import HistoryWriter
from kchaos.model.history_files import history_path
from kchaos.model.run_files import RunDir
from kchaos.workloads import outcome
from kchaos.workloads.in_harness import transactions
from kchaos.workloads.in_harness.transactions import TransactionalProducerProcess, transactional_settings
from kchaos.workloads.outcome import named_send_outcome
from kchaos.workloads.processes.java.transactions import CALL_TIMEOUT_MS, TransactionRecorder, parse_txn_line
from kchaos.workloads.processes.rdkafka.producer import rdkafka_arguments
from kchaos.workloads.processes.rdkafka.transactions import RdkafkaTransactionalWorkload
from tests.test_transactions_workload import TOPIC, ScriptedClient, error

PROCESS = "producer-0"
TRANSACTIONAL_ID = "kchaos-producer-0"


@pytest.mark.parametrize(
    ("process", "partitions", "records", "ratio", "seed"),
    [("producer-0", 3, 4, 0.3, 7), ("producer-1", 5, 1, 0.0, 12345), ("producer-0.2", 1, 6, 1.0, 0)],
)
def test_the_plan_is_the_in_process_workloads_for_the_same_seed_and_process(
    process: str, partitions: int, records: int, ratio: float, seed: int
) -> None:
    """The worker plans from its `kchaos.seed` argument, text; the in-process workload from the number."""
    ours = _arguments(
        process=process, partitions=partitions, max_records=records, abort_ratio=ratio, seed=str(seed)
    ).planner()
    theirs = TransactionPlanner(process, partitions, records, ratio, seed)
    for n in range(300):
        mine, planned = ours.next(), theirs.next()
        assert (mine.txn, mine.records, mine.commit) == (planned.txn, planned.records, planned.commit)
        assert mine.txn == transaction_id(process, n)


def test_its_constants_are_the_in_process_workloads() -> None:
    assert NEVER_SENT is outcome.NEVER_SENT
    assert IN_DOUBT_AT_ABORT is transactions.IN_DOUBT_AT_ABORT
    assert CALL_TIMEOUT_S == CALL_TIMEOUT_MS / 1000 == TransactionalProducerProcess.timeout
    assert mode_module("txn") == "kchaos.compose.rdkafka.txn_worker"


def test_a_fatal_or_fenced_error_ends_the_process_and_a_retriable_one_does_not() -> None:
    assert must_exit(KafkaError(KafkaError._FENCED, "fenced", fatal=True))
    assert must_exit(KafkaError(KafkaError.PRODUCER_FENCED, "fenced"))
    assert not must_exit(KafkaError(KafkaError._TIMED_OUT, "slow", retriable=True))
    assert not must_exit(KafkaError(KafkaError._PURGE_INFLIGHT, IN_DOUBT_AT_ABORT))


def _arguments(**overrides: object) -> TxnArguments:
    values: dict[str, object] = {
        "process": PROCESS, "topic": TOPIC, "partitions": 3, "interval_ns": 0, "drain_ms": 0, "seed": "7",
        "max_records": 4, "abort_ratio": 0.3, "commit_attempts": transactions.COMMIT_ATTEMPTS,
        "on_timeout": RETRY,
    }  # fmt: skip
    values.update(overrides)
    return TxnArguments(**values)  # type: ignore[arg-type]


def _rows(history: HistoryWriter) -> list[tuple[Any, ...]]:
    """Every row but its clock and index, in order."""
    history.finish()
    frame = pd.read_parquet(history_path(history.files.path))
    columns = ["process", "type", "f", "topic", "partition", "offset", "key", "value", "error", "detail"]
    return [
        tuple(None if pd.isna(cell) else cell for cell in row)
        for row in frame[columns].itertuples(index=False)
    ]


Script = Callable[[], ScriptedClient]
#: Every way a transaction can go, as the in-process workload's tests script them.
TIMED_OUT = KafkaError(KafkaError._MSG_TIMED_OUT, "scripted")
SCRIPTS: dict[str, tuple[Script, list[PlannedTransaction]]] = {
    "commits": (ScriptedClient, [PlannedTransaction("t", ((0, "a"), (1, "b")), commit=True)]),
    "aborts as planned": (ScriptedClient, [PlannedTransaction("t", ((0, "a"),), commit=False)]),
    "a record timed out": (
        lambda: ScriptedClient(errors={"b": TIMED_OUT}),
        [PlannedTransaction("t", ((0, "a"), (1, "b")), commit=True)],
    ),
    "a record refused": (
        lambda: ScriptedClient(refuse={"a"}),
        [PlannedTransaction("t", ((0, "a"), (1, "b")), commit=True)],
    ),
    "a record unreported": (
        lambda: ScriptedClient(unreported={"b"}),
        [PlannedTransaction("t", ((0, "a"), (1, "b")), commit=True)],
    ),
    "a commit timed out then committed": (
        lambda: ScriptedClient(commits=[error(KafkaError._TIMED_OUT, retriable=True), None]),
        [PlannedTransaction("t", ((0, "a"),), commit=True)],
    ),
    "a commit must be aborted": (
        lambda: ScriptedClient(commits=[error(KafkaError._TIMED_OUT, abort=True)]),
        [PlannedTransaction("t", ((0, "a"),), commit=True)],
    ),
    "commits kept timing out": (
        lambda: ScriptedClient(commits=[error(KafkaError._TIMED_OUT, retriable=True)] * 3),
        [PlannedTransaction("t", ((0, "a"),), commit=True)],
    ),
    "a fatal commit": (
        lambda: ScriptedClient(commits=[error(KafkaError._FENCED, fatal=True)]),
        [PlannedTransaction("t", ((0, "a"),), commit=True)],
    ),
    "a failed abort": (
        lambda: ScriptedClient(aborts=[error(KafkaError._TIMED_OUT, retriable=True)]),
        [PlannedTransaction("t", ((0, "a"),), commit=False)],
    ),
    "a commit timed out, then the next transaction": (
        lambda: ScriptedClient(commits=[error(KafkaError._TIMED_OUT, retriable=True), None, None]),
        [PlannedTransaction("t", ((0, "a"),), True), PlannedTransaction("u", ((2, "b"),), True)],
    ),
    "an abort timed out, then the next transaction": (
        lambda: ScriptedClient(aborts=[error(KafkaError._TIMED_OUT, retriable=True)]),
        [PlannedTransaction("t", ((0, "a"),), False), PlannedTransaction("u", ((2, "b"),), True)],
    ),
    "a begin refused, then a commit": (
        lambda: ScriptedClient(begins=[error(KafkaError._STATE)]),
        [PlannedTransaction("t", ((0, "a"),), True), PlannedTransaction("u", ((2, "b"),), True)],
    ),
}


def _in_process(
    tmp_path: Path, client: ScriptedClient, planned: list[PlannedTransaction], on_timeout: str = RETRY
) -> HistoryWriter:
    history = HistoryWriter(RunDir(tmp_path / "threads"), "txn-test")
    writer = TransactionalProducerProcess(
        process=PROCESS, settings={"transactional.id": TRANSACTIONAL_ID}, topic=TOPIC,
        planner=TransactionPlanner(PROCESS, 3, 4, 0.3, 7), history=history, make_client=lambda _: client,
        on_timeout=on_timeout,
    )  # fmt: skip
    for transaction in planned:
        if writer.client is None or writer.unusable is not None:
            writer.start_client(threading.Event())
        writer.run_one(transaction)
    return history


def _worker_lines(
    client: ScriptedClient, planned: list[PlannedTransaction], on_timeout: str = RETRY
) -> list[str]:
    out = io.BytesIO()
    lines = Lines(io.BufferedWriter(out))  # type: ignore[arg-type]
    writer = TransactionalWriter(
        _arguments(on_timeout=on_timeout), {"transactional.id": TRANSACTIONAL_ID}, lines,
        make_client=lambda _: client,
    )  # fmt: skip
    for transaction in planned:
        if writer.client is None or writer.unusable is not None:
            writer.start_client(lambda: False)
        writer.transaction(PlannedTransaction(transaction.txn, transaction.records, transaction.commit))
    lines.flush()
    return out.getvalue().decode().splitlines()


@pytest.mark.parametrize("on_timeout", [RETRY, RESTART])
@pytest.mark.parametrize("name", list(SCRIPTS))
def test_its_lines_become_the_rows_the_in_process_workload_records(
    tmp_path: Path, name: str, on_timeout: str
) -> None:
    """Under either `--txn-on-timeout` policy: the same scripted client, the same rows."""
    script, planned = SCRIPTS[name]
    said = _worker_lines(script(), planned, on_timeout)
    history = HistoryWriter(RunDir(tmp_path / "process"), "txn-test")
    recorder = TransactionRecorder(PROCESS, TOPIC, history, judge=named_send_outcome)
    for line in said:
        recorder.take(line)
    recorder.abandon("the workload stopped")
    assert _rows(history) == _rows(_in_process(tmp_path, script(), planned, on_timeout))


def test_every_line_is_in_the_java_workers_protocol_and_commits_say_protocol_none() -> None:
    said = _worker_lines(
        ScriptedClient(commits=[error(KafkaError._TIMED_OUT, retriable=True), None]),
        [PlannedTransaction("t", ((0, "a"), (1, "b")), commit=True)],
    )
    kinds = [parse_txn_line(line).kind for line in said]  # a line outside the protocol raises
    assert kinds == ["begun", "invoke", "invoke", "ok", "ok", "commit", "commit-error", "commit", "committed"]
    commits = [parse_txn_line(line) for line in said if line.startswith("commit\t")]
    assert {c.said for c in commits} == {(PROTOCOL,)} and PROTOCOL == "none"
    failed = parse_txn_line(said[6])
    assert (failed.exception, failed.message) == ("_TIMED_OUT", "scripted")


def test_a_commit_line_is_on_stdout_before_the_commit_is_asked_for() -> None:
    """The attacks freeze the process when they see it: it must be out while the call is outstanding."""
    out = io.BytesIO()
    seen: list[str] = []

    class Watching(ScriptedClient):
        def commit_transaction(self, timeout: float = -1) -> None:
            seen.append(out.getvalue().decode().splitlines()[-1])

    lines = Lines(io.BufferedWriter(out))  # type: ignore[arg-type]
    writer = TransactionalWriter(_arguments(), {}, lines, make_client=lambda _: Watching())
    writer.start_client(lambda: False)
    assert writer.transaction(PlannedTransaction("t", ((0, "a"),), commit=True))
    assert seen and seen[0].startswith("commit\t") and seen[0].endswith("\tt\tnone")


def test_its_arguments_are_the_java_workers_and_bad_ones_are_refused() -> None:
    config = load_config(workload="txn", seed=11)
    command = _command(config)
    worker, _ = split_arguments(command)
    parsed = TxnArguments.parse(worker)
    assert (parsed.process, parsed.seed, parsed.commit_attempts) == ("producer-0", "11", 3)
    assert (parsed.max_records, parsed.abort_ratio) == (
        config.transaction_records,
        config.transaction_abort_ratio,
    )
    with pytest.raises(ValueError, match=r"kchaos\.seed"):
        TxnArguments.parse({k: v for k, v in worker.items() if k != "kchaos.seed"})
    with pytest.raises(ValueError, match=r"commit\.attempts"):
        TxnArguments.parse({**worker, "kchaos.commit.attempts": "0"})
    with pytest.raises(ValueError):
        TxnArguments.parse({**worker, "kchaos.partitions": "three"})


class _NoCluster:
    """Stands in for the cluster: the command needs only the addresses its clients dial (none)."""

    client_bootstrap = ""


def _command(config: Any) -> list[str]:
    workload = RdkafkaTransactionalWorkload(config, _NoCluster(), None, "img", "4.3.1")  # type: ignore[arg-type]
    return workload._command(0)


def test_its_client_settings_are_the_in_process_transactional_producers() -> None:
    config = load_config(workload="txn", run_id="r")
    _, settings = split_arguments(_command(config))
    expected = transactional_settings(config, "", "producer-0", transactional_name("r", "producer-0"))
    assert settings == dict(arg.split("=", 1) for arg in rdkafka_arguments(expected))
    assert (settings["transactional.id"], settings["enable.idempotence"]) == ("kchaos-r-producer-0", "true")


def test_librdkafka_processes_drive_the_transactional_workload() -> None:
    assert load_config(client="librdkafka-process", workload="txn").client == "librdkafka-process"


#: Two transactions planned to commit: what the application does after the first one's commit timed out.
TWO = [PlannedTransaction("t", ((0, "a"),), True), PlannedTransaction("u", ((1, "b"),), True)]


def _timeouts(n: int) -> list[KafkaException | None]:
    return [error(KafkaError._TIMED_OUT, retriable=True)] * n


def _said(lines: list[str]) -> list[tuple[str, ...]]:
    """Each line's kind and fields, its clock left out."""
    return [(kind, *fields) for kind, _, *fields in (line.split("\t") for line in lines)]


def test_under_retry_a_timed_out_commit_is_asked_again_until_the_attempts_run_out_then_aborted() -> None:
    client = ScriptedClient(commits=_timeouts(3))
    said = _said(_worker_lines(client, TWO[:1], RETRY))
    asked = [s for s in said if s[0] in ("commit", "commit-error", "abort", "abort-error", "restart")]
    assert asked == [("commit", "t", "none"), ("commit-error", "t", "_TIMED_OUT", "scripted")] * 3 + [
        ("abort", "t", "none")
    ]
    assert client.commits == [] and client.inits == 1


def test_under_restart_a_timed_out_commit_restarts_the_client_at_once_and_goes_on() -> None:
    """One commit asked, no abort (librdkafka refuses one while the timed-out commit is resumable): the
    client is replaced, its `restart` line naming the policy, and the next transaction commits on the new
    instance, whose init fences the old one."""
    client = ScriptedClient(commits=[*_timeouts(1), None])
    said = _said(_worker_lines(client, TWO, RESTART))
    assert said[said.index(("commit", "t", "none")) :] == [
        ("commit", "t", "none"),
        ("commit-error", "t", "_TIMED_OUT", "scripted"),
        ("restart", "_TIMED_OUT", "txn-on-timeout=restart after the commit of t timed out: scripted"),
        ("begun", "u", TRANSACTIONAL_ID),
        ("invoke", "u", "b", "1"),
        ("ok", "u", "b", "1", "0"),
        ("commit", "u", "none"),
        ("committed", "u"),
    ]
    assert client.inits == 2 and client.commits == []


def test_under_restart_a_timed_out_abort_restarts_too_and_other_errors_keep_their_handling() -> None:
    planned = [PlannedTransaction("t", ((0, "a"),), commit=False), TWO[1]]
    said = _said(_worker_lines(ScriptedClient(aborts=_timeouts(1)), planned, RESTART))
    assert said[said.index(("abort", "t", "none")) :][:3] == [
        ("abort", "t", "none"),
        ("abort-error", "t", "_TIMED_OUT", "scripted"),
        ("restart", "_TIMED_OUT", "txn-on-timeout=restart after the abort of t timed out: scripted"),
    ]
    must_abort = ScriptedClient(commits=[error(KafkaError._TIMED_OUT, abort=True)])
    said = _said(_worker_lines(must_abort, TWO[:1], RESTART))
    assert said[-2:] == [("abort", "t", "none"), ("aborted", "t")] and must_abort.inits == 1


def test_the_policy_is_a_worker_argument_and_a_bad_one_is_refused() -> None:
    config = load_config(workload="txn", txn_on_timeout="restart")
    worker, _ = split_arguments(_command(config))
    assert worker[ON_TIMEOUT_ARGUMENT] == "restart" == TxnArguments.parse(worker).on_timeout
    worker, _ = split_arguments(_command(load_config(workload="txn")))
    assert TxnArguments.parse(worker).on_timeout == RETRY
    for bad in ("abort", "Restart", ""):
        with pytest.raises(ValueError, match=r"kchaos\.txn\.on\.timeout must be retry or restart"):
            TxnArguments.parse({**worker, ON_TIMEOUT_ARGUMENT: bad})
    with pytest.raises(ValueError, match=r"kchaos\.txn\.on\.timeout"):
        TxnArguments.parse({k: v for k, v in worker.items() if k != ON_TIMEOUT_ARGUMENT})
