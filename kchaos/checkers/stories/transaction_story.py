"""A transaction anomaly's story: the transaction's own rows and what the readers saw of it.

`aborted-read`, `uncommitted-read`, `lost-committed` and `partial-transaction` each name a record or a
transaction, which says *that* a reader saw what it must not have (or missed what it must) but not how the
two met. The story lays them side by side in one clock (seconds since the run started): the transaction
begun, each record sent and acknowledged at its offset, the commit or abort asked and answered; then every
read of its records, by which reader, at which isolation level (the reader's latest `assign` row before
the read, or the final reader's `final-read` invoke); then, per partition it wrote to, what each reader
read next after the transaction's last record there. Kafka puts the transaction's control marker (commit
or abort) at an offset after its records, and a reader never returns one, so the offsets it skips where
no send was acknowledged are where the markers lie: the history records no control record itself.

Pure functions over rows, as the record's story (`kchaos.checkers.stories.record_story`); `load_transactions`
is the one place that reads the run directory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kchaos.checkers.stories.broker_log import partition_name
from kchaos.checkers.stories.evidence import run_started_at
from kchaos.model.client_targets import is_client_target
from kchaos.model.events import (
    ASSIGN,
    FAIL,
    FINAL_READ,
    FINAL_READER_PROCESS,
    INFO,
    INVOKE,
    ISOLATION,
    OK,
    POLL,
    PRODUCER_RESTART,
    REQUEST,
    SEND,
    TRANSACTION_OPERATIONS,
    TRANSACTIONAL_ID,
    TXN_ABORT,
    TXN_BEGIN,
    TXN_COMMIT,
    TXN_SEND,
)
from kchaos.model.history_files import history_path
from kchaos.model.history_schema import parse_detail
from kchaos.model.request_rows import request_line
from kchaos.model.run_files import RunDir

#: How long after a transaction's last row a replacement of its producer still belongs to its story.
RESTART_SLACK_S = 1.0
#: Reads listed per transaction; a record read by every consumer many times would fill a screen.
READS_SHOWN = 12
#: How far past a transaction's last offset in a partition a reader's next read is looked for.
NEXT_READ_WINDOW = 16


@dataclass(frozen=True)
class Transaction:
    """A transaction to tell the story of, and the anomaly and record that named it."""

    txn: str
    anomaly: str | None = None
    value: str | None = None
    read_index: int | None = None

    @property
    def id(self) -> str:
        return self.txn


@dataclass
class TransactionEvidence:
    """What the history holds about some transactions: their own rows (by id), the reads of their records
    and of the offsets just past them, the readers' rows that set their isolation level, and the sends
    acknowledged in the partitions they wrote to."""

    started_at: float
    own_rows: dict[str, list[dict[str, Any]]]
    reads: list[dict[str, Any]]
    isolation_rows: list[dict[str, Any]]
    acks: list[dict[str, Any]]
    #: The rows of requests a request fault took (`hold`, `drop`, `delay`), whichever transaction they
    #: were part of: the proxy sees only a request's header, so a story places them by time.
    requests: list[dict[str, Any]] = field(default_factory=list)
    #: Every transaction's process and the wall times of its first and last rows, by id: where a request
    #: taken before a story's transaction began was taken (`kchaos run --scenario txn-endtxn-held`).
    spans: dict[str, tuple[str, float, float]] = field(default_factory=dict)
    #: The rows of producers replaced (`producer-restart`: a failed or fenced client, or the application's
    #: `--txn-on-timeout restart`), which name no transaction: a story places them by process and time.
    restarts: list[dict[str, Any]] = field(default_factory=list)


def known_transactions(run_dir: Path) -> set[str]:
    """The ids of the transactions `run_dir`'s history holds."""
    table = pq.read_table(history_path(run_dir), columns=["f", "key"])
    begun = table.filter(pc.equal(table["f"], TXN_BEGIN))
    return {key for key in begun["key"].to_pylist() if key is not None}


def load_transactions(run_dir: Path, txns: Sequence[str]) -> TransactionEvidence:
    """Reads what `run_dir`'s history holds about the transactions `txns`."""
    table = pq.read_table(history_path(run_dir))
    ops = pc.is_in(table["f"], value_set=pa.array(TRANSACTION_OPERATIONS, table["f"].type))
    own = table.filter(
        pc.and_kleene(ops, pc.is_in(table["key"], value_set=pa.array(txns, table["key"].type)))
    )
    own_rows: dict[str, list[dict[str, Any]]] = {}
    for row in own.to_pylist():
        own_rows.setdefault(row["key"], []).append(row)
    written = [
        row for rows in own_rows.values() for row in rows if row["f"] == TXN_SEND and row["type"] == OK
    ]
    places = {(row["topic"], row["partition"]) for row in written}
    low = min((row["offset"] for row in written), default=0)
    high = max((row["offset"] for row in written), default=0) + NEXT_READ_WINDOW
    values = pa.array([row["value"] for rows in own_rows.values() for row in rows], table["value"].type)
    in_places = pc.is_in(
        pc.binary_join_element_wise(table["topic"], pc.cast(table["partition"], pa.string()), "/"),
        value_set=pa.array([f"{topic}/{partition}" for topic, partition in places], pa.string()),
    )
    near = pc.and_kleene(
        in_places, pc.and_kleene(pc.greater_equal(table["offset"], low), pc.less_equal(table["offset"], high))
    )
    is_ok = pc.equal(table["type"], OK)
    reading = pc.is_in(table["f"], value_set=pa.array([POLL, FINAL_READ], table["f"].type))
    reads = table.filter(
        pc.and_kleene(
            pc.and_kleene(reading, is_ok), pc.or_kleene(pc.is_in(table["value"], value_set=values), near)
        )
    )
    setting = pc.or_kleene(
        pc.equal(table["f"], ASSIGN),
        pc.and_kleene(pc.equal(table["f"], FINAL_READ), pc.equal(table["type"], INVOKE)),
    )
    sending = pc.is_in(table["f"], value_set=pa.array([SEND, TXN_SEND], table["f"].type))
    acks = table.filter(pc.and_kleene(pc.and_kleene(sending, is_ok), near))
    started = run_started_at(RunDir(run_dir), pc.min(table["wall_time"]).as_py())
    requests = table.filter(pc.equal(table["f"], REQUEST)).to_pylist()
    return TransactionEvidence(
        started, own_rows, reads.to_pylist(), table.filter(setting).to_pylist(), acks.to_pylist(), requests,
        _spans(table.filter(ops)) if requests else {},
        table.filter(pc.equal(table["f"], PRODUCER_RESTART)).to_pylist(),
    )  # fmt: skip


def _spans(rows: pa.Table) -> dict[str, tuple[str, float, float]]:
    """Each transaction's process and first and last row's wall time, from its rows."""
    grouped = rows.group_by(["key", "process"]).aggregate([("wall_time", "min"), ("wall_time", "max")])
    return {
        row["key"]: (row["process"], row["wall_time_min"], row["wall_time_max"])
        for row in grouped.to_pylist()
        if row["key"] is not None
    }


def _at(evidence: TransactionEvidence, wall_time: float) -> str:
    return f"+{wall_time - evidence.started_at:.2f}s"


def isolation_at(evidence: TransactionEvidence, read: Mapping[str, Any]) -> str:
    """The isolation level `read` was made at: its reader's latest `assign` row before it (the final
    reader's `final-read` invoke of its partition) names it; unknown where that row names none."""
    setters = [
        row for row in evidence.isolation_rows
        if row["process"] == read["process"] and row["index"] < read["index"]
        and (row["f"] == ASSIGN or row["partition"] in (None, read["partition"]))
    ]  # fmt: skip
    if not setters:
        return "an unknown isolation level (no assign row before it)"
    level = parse_detail(setters[-1].get("detail")).get(ISOLATION)
    where = f"history row {setters[-1]['index']}"
    return (
        f"{level} ({where})" if isinstance(level, str) else f"an unknown isolation level ({where} names none)"
    )


def _own_line(row: Mapping[str, Any]) -> str:
    what = {TXN_BEGIN: "begin", TXN_COMMIT: "commit", TXN_ABORT: "abort"}.get(row["f"])
    if row["f"] == TXN_SEND:
        if row["type"] == INVOKE:
            text = f"{row['value']} sent to {partition_name(row['topic'], row['partition'])}"
        elif row["type"] == OK:
            place = partition_name(row["topic"], row["partition"])
            text = f"{row['value']} acknowledged at {place} offset {row['offset']}"
        else:
            text = f"{row['value']} send {row['type']}: {row['error'] or 'no error given'}"
    elif row["type"] == INVOKE:
        text = f"{what} asked"
    elif row["f"] == TXN_BEGIN:
        named = parse_detail(row.get("detail")).get(TRANSACTIONAL_ID)
        text = f"begun by {row['process']}" + (f" (transactional.id {named})" if named else "")
        text += "" if row["type"] == OK else f", {row['type']}: {row['error'] or 'no error given'}"
    else:
        text = f"{what} {row['type']}" + (f": {row['error']}" if row["error"] else "")
    return f"{text} (history row {row['index']})"


def ending(rows: Sequence[Mapping[str, Any]]) -> str:
    """How the transaction ended, as its producer was told: committed, aborted, or undecided (no answer,
    or only answers that leave it open)."""
    answers = [(row["f"], row["type"]) for row in rows
               if row["f"] in (TXN_COMMIT, TXN_ABORT) and row["type"] != INVOKE]  # fmt: skip
    if (TXN_COMMIT, OK) in answers:
        return "committed (the commit was acknowledged)"
    if (TXN_ABORT, OK) in answers:
        return "aborted (the abort was acknowledged)"
    if (TXN_COMMIT, FAIL) in answers and (TXN_COMMIT, INFO) not in answers:
        return "not committed (the commit definitely failed), its abort unanswered or indeterminate"
    return "undecided: no commit or abort was acknowledged"


def _final_read_from(evidence: TransactionEvidence, topic: str, partition: int, offset: int) -> bool:
    """Whether the final read of `topic`-`partition` started at or before `offset` (its invoke's `from`),
    so that it read past `offset` whatever it returned there."""
    for row in evidence.isolation_rows:
        if (row["process"], row["f"], row["topic"], row["partition"]) == (
            FINAL_READER_PROCESS, FINAL_READ, topic, partition
        ):  # fmt: skip
            start = parse_detail(row.get("detail")).get("from")
            if isinstance(start, int) and start <= offset:
                return True
    return False


def _next_reads(evidence: TransactionEvidence, written: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per partition the transaction wrote to and per reader that read there up to its last record: the
    offset it read next past that record, and what it skipped on the way (where the control marker lies)."""
    lines = []
    for topic, partition in sorted({(row["topic"], row["partition"]) for row in written}):
        last = max(row["offset"] for row in written if (row["topic"], row["partition"]) == (topic, partition))
        name = partition_name(topic, partition)
        here = [row for row in evidence.reads if (row["topic"], row["partition"]) == (topic, partition)]
        acked = {row["offset"]: row["value"] for row in evidence.acks
                 if (row["topic"], row["partition"]) == (topic, partition)}  # fmt: skip
        readers = sorted(
            {row["process"] for row in here if row["offset"] <= last}
            | ({FINAL_READER_PROCESS} if _final_read_from(evidence, topic, partition, last) else set())
        )
        lines.append(
            f"  {name}: its last record at offset {last}; the history records no control record, so:"
        )
        if not readers:
            lines.append("    no reader read this partition up to it")
        for reader in readers:
            after = sorted(
                {row["offset"] for row in here if row["process"] == reader and row["offset"] > last}
            )
            if not after:
                lines.append(
                    f"    {reader} read nothing past offset {last} (within {NEXT_READ_WINDOW} offsets)"
                )
                continue
            skipped = list(range(last + 1, after[0]))
            markers = [offset for offset in skipped if offset not in acked]
            others = [f"{offset} ({acked[offset]})" for offset in skipped if offset in acked]
            text = f"    {reader} read offset {after[0]} next"
            if markers:
                skips = ", ".join(map(str, markers))
                text += f", skipping {skips}, where no send was acknowledged: a control marker's place"
            if others:
                text += f"; skipping acknowledged {', '.join(others)}"
            lines.append(text + ("" if skipped else ", skipping nothing"))
    return lines


def _others_at(evidence: TransactionEvidence, written: Sequence[Mapping[str, Any]]) -> list[str]:
    """What readers returned at the offsets the transaction's records were acknowledged at, other than
    those records: where a record was replaced, the reader saw its replacement."""
    lines = []
    for record in written:
        where = (record["topic"], record["partition"], record["offset"])
        others = [
            f"{row['value']} ({row['process']}, history row {row['index']})"
            for row in evidence.reads
            if (row["topic"], row["partition"], row["offset"]) == where and row["value"] != record["value"]
        ]
        if others:
            place = f"{partition_name(record['topic'], record['partition'])} offset {record['offset']}"
            returned = ", ".join(others)
            lines.append(
                f"  at {place}, where {record['value']} was acknowledged, readers returned {returned}"
            )
    return lines


def _txn_at(evidence: TransactionEvidence, process: str, time: float) -> str | None:
    """The transaction `process` was in at `time`: the one whose rows span it."""
    for txn, (owner, first, last) in evidence.spans.items():
        if owner == process and first <= time <= last:
            return txn
    return None


def _requests_during(
    evidence: TransactionEvidence, rows: Sequence[Mapping[str, Any]]
) -> list[tuple[float, str]]:
    """The requests a request fault took while the transaction ran (from its first row to its last), with
    every later step of each (a held EndTxn is released after the application gave up on it), as timeline
    entries: those its own process sent, and those of nodes (transaction markers, replication); another
    client process's belong to its own transactions' stories. A request its own process sent before the
    transaction began, whose later steps fall within it, is told too, with when it was taken and in which
    transaction: a late EndTxn of the one before lands here. The proxy sees only a request's header, so
    time and sender are all that tie a request to a transaction."""
    start, end = rows[0]["wall_time"], rows[-1]["wall_time"]
    process = rows[0]["process"]
    taken: set[tuple[Any, ...]] = set()
    earlier: dict[tuple[Any, ...], float] = {}
    entries = []
    for row in evidence.requests:
        detail = parse_detail(row.get("detail"))
        link = str(detail.get("link", ""))
        sender = link.split(">")[0]
        request = (row["key"], detail.get("correlation_id"), link)
        line = request_line(str(row["key"]), str(row["value"]), detail)
        if request not in taken:
            if sender != process and is_client_target(sender):
                continue
            if row["wall_time"] < start and sender == process:
                earlier.setdefault(request, row["wall_time"])
                continue
            if request in earlier and row["wall_time"] <= end:
                was_in = _txn_at(evidence, process, earlier[request])
                line += f" (taken at {_at(evidence, earlier[request])}" + (
                    f", while {process} was in {was_in})" if was_in else ")"
                )
            elif not start <= row["wall_time"] <= end:
                continue
            taken.add(request)
        entries.append((row["wall_time"], line))
    return entries


def _restarts_after(
    evidence: TransactionEvidence, rows: Sequence[Mapping[str, Any]]
) -> list[tuple[float, str]]:
    """The replacements of the transaction's producer from its first row to just after its last: a
    restart follows the failed or timed-out call that caused it at once."""
    start, end = rows[0]["wall_time"], rows[-1]["wall_time"] + RESTART_SLACK_S
    process = rows[0]["process"]
    return [
        (row["wall_time"], f"{process} replaced its producer: {row['error']} (history row {row['index']})")
        for row in evidence.restarts
        if row["process"] == process and start <= row["wall_time"] <= end
    ]


def tell_transaction(evidence: TransactionEvidence, subject: Transaction) -> list[str]:
    """The story of one transaction, as lines of text."""
    rows = evidence.own_rows.get(subject.txn, [])
    why = ""
    if subject.anomaly:
        why = f" ({subject.anomaly}" + (f": {subject.value}" if subject.value else "") + ")"
    story = [f"{subject.txn}{why}"]
    if not rows:
        return [*story, "  the history holds no row of this transaction"]
    story.append("the transaction's rows (seconds since the run started):")
    lines = [(row["wall_time"], _own_line(row)) for row in rows]
    lines += _requests_during(evidence, rows)
    lines += _restarts_after(evidence, rows)
    story += [
        f"  {_at(evidence, time):>9}  {line}" for time, line in sorted(lines, key=lambda entry: entry[0])
    ]
    story.append(f"  it ended {ending(rows)}")
    values = {row["value"] for row in rows if row["f"] == TXN_SEND}
    reads = [row for row in evidence.reads if row["value"] in values]
    story.append(f"what readers returned of its records ({len(reads)} read{'' if len(reads) == 1 else 's'}):")
    shown = reads[:READS_SHOWN]
    shown += [row for row in reads[READS_SHOWN:] if row["index"] == subject.read_index]
    for row in shown:
        mark = "** " if row["index"] == subject.read_index else ""
        story.append(
            f"  {_at(evidence, row['wall_time']):>9}  {mark}{row['process']} read {row['value']} at "
            f"{partition_name(row['topic'], row['partition'])} offset {row['offset']} (history row "
            f"{row['index']}), at {isolation_at(evidence, row)}"
        )
    if len(reads) > len(shown):
        story.append(f"  ... {len(reads) - len(shown)} more reads left out")
    final = any(row["process"] == FINAL_READER_PROCESS for row in evidence.isolation_rows)
    unread = sorted(values - {row["value"] for row in reads if row["process"] == FINAL_READER_PROCESS})
    if final and unread:
        story.append(f"  the final read did not return {', '.join(unread)}")
    written = [
        row for row in rows if row["f"] == TXN_SEND and row["type"] == OK and row["offset"] is not None
    ]
    story += _others_at(evidence, written)
    story.append("where its control markers lie (what each reader read next after its records):")
    story += _next_reads(evidence, written)
    return story
