"""Which story a violation tells, and telling each: a lost record's, a replica divergence's, a transaction's.

A violated anomaly names records (`lost-write`, `unseen`, ...), offsets where replicas differ
(`replica-divergence`), transactions (`aborted-read`, `uncommitted-read`, `lost-committed`,
`partial-transaction`) or a cycle of transactions (`wr-cycle`, `G0`, ...), and each is told from the run
directory in its own way (`kchaos.checkers.stories.record_story`, `kchaos.checkers.stories.divergence_story`,
`kchaos.checkers.stories.transaction_story`, `kchaos.checkers.stories.cycle_story`). This module picks the
kind from the anomaly, bounds how many are told, and tells one asked for by its id (`kchaos explain
--record`): a record's value, a place `topic/partition/offset`, a transaction's id or a cycle's. `kchaos
explain` and the report's "What happened" section both tell stories through here, so they agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kchaos.checkers.rules.anomaly_names import CYCLE_CLASSES, REPLICA_DIVERGENCE, TRANSACTION_ANOMALY_NAMES
from kchaos.checkers.rules.verdict_names import VIOLATION
from kchaos.checkers.stories.cycle_story import Cycle, load_cycle, tell_cycle
from kchaos.checkers.stories.divergence_story import Place, load_divergence, tell_divergence
from kchaos.checkers.stories.evidence import RunEvidence
from kchaos.checkers.stories.record_story import Subject, anomalies_naming, tell, violating_records
from kchaos.checkers.stories.transaction_story import (
    Transaction,
    known_transactions,
    load_transactions,
    tell_transaction,
)

#: The anomalies whose examples name offsets where replicas differ: a divergence's story tells them.
DIVERGENCE_ANOMALIES = frozenset({REPLICA_DIVERGENCE})
#: The anomalies whose examples name a transaction: a transaction's story tells them.
TRANSACTION_ANOMALIES = frozenset(TRANSACTION_ANOMALY_NAMES)
#: The anomalies whose examples name a cycle of transactions: a cycle's story tells them.
CYCLE_ANOMALIES = frozenset(CYCLE_CLASSES)

StorySubject = Subject | Place | Transaction | Cycle


@dataclass(frozen=True)
class Chosen:
    """The stories to tell (in the order of the anomalies), how many there are to tell in all (records
    counted by the anomalies, a partition's divergence and a transaction each once, as the examples
    name them) and the violated anomalies whose examples name nothing a story can tell."""

    subjects: list[StorySubject]
    total: int
    untold: list[str]


def _violated(results: Mapping[str, Any], names: frozenset[str]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    return [
        (name, [example for example in anomaly.get("examples") or [] if isinstance(example, Mapping)])
        for name, anomaly in (results.get("anomalies") or {}).items()
        if name in names and isinstance(anomaly, Mapping) and anomaly.get("verdict") == VIOLATION
    ]


def _places(results: Mapping[str, Any], untold: list[str]) -> list[Place]:
    """One place per partition the divergence examples name (one story tells a partition's divergence)."""
    places: dict[tuple[str, int], Place] = {}
    for name, examples in _violated(results, DIVERGENCE_ANOMALIES):
        found = [
            Place(example["topic"], example["partition"], example["offset"], name)
            for example in examples
            if isinstance(example.get("topic"), str)
            and isinstance(example.get("partition"), int)
            and isinstance(example.get("offset"), int)
        ]
        if not found:
            untold.append(name)
        for place in found:
            places.setdefault((place.topic, place.partition), place)
    return list(places.values())


def _transactions(results: Mapping[str, Any], untold: list[str]) -> list[Transaction]:
    """One story per transaction the transaction anomalies' examples name, with the record and the read
    that named it where the example says."""
    transactions: dict[str, Transaction] = {}
    for name, examples in _violated(results, TRANSACTION_ANOMALIES):
        found = [example for example in examples if isinstance(example.get("txn"), str)]
        if not found:
            untold.append(name)
        for example in found:
            value, read = example.get("value"), example.get("read_index")
            transactions.setdefault(
                example["txn"],
                Transaction(
                    example["txn"],
                    name,
                    value if isinstance(value, str) else None,
                    read if isinstance(read, int) else None,
                ),
            )
    return list(transactions.values())


def _cycles(results: Mapping[str, Any], untold: list[str]) -> list[Cycle]:
    """One story per cycle the violated cycle anomalies' examples name."""
    cycles: list[Cycle] = []
    for name, examples in _violated(results, CYCLE_ANOMALIES):
        cycles_named = (Cycle.of(example, f"{name}: {VIOLATION}") for example in examples)
        found = [cycle for cycle in cycles_named if cycle is not None]
        if not found:
            untold.append(name)
        cycles.extend(found)
    return cycles


def choose(results: Mapping[str, Any], limit: int) -> Chosen:
    """The first `limit` stories `results`' violations tell: records first, then divergences, then
    transactions, then cycles, as the anomalies are listed."""
    told_otherwise = DIVERGENCE_ANOMALIES | TRANSACTION_ANOMALIES | CYCLE_ANOMALIES
    records, total, untold = violating_records(results, limit, told_otherwise)
    places = _places(results, untold)
    transactions = _transactions(results, untold)
    cycles = _cycles(results, untold)
    subjects: list[StorySubject] = [*records, *places, *transactions, *cycles]
    return Chosen(subjects[:limit], total + len(places) + len(transactions) + len(cycles), untold)


def tell_all(run_dir: Path, subjects: Sequence[StorySubject]) -> list[tuple[str, list[str]]]:
    """Each subject's id and story, in order. Raises what reading the history raises (`HistoryCorrupt`,
    `OSError`); a part of the run directory that is missing is said in the story."""
    records = [subject for subject in subjects if isinstance(subject, Subject)]
    evidence = RunEvidence.load(run_dir, [subject.value for subject in records]) if records else None
    transactions = [subject.txn for subject in subjects if isinstance(subject, Transaction)]
    txn_evidence = load_transactions(run_dir, transactions) if transactions else None
    told = []
    for subject in subjects:
        if isinstance(subject, Subject) and evidence is not None:
            told.append((subject.value, tell(evidence, subject)))
        elif isinstance(subject, Place):
            division = load_divergence(run_dir, subject.topic, subject.partition)
            told.append((subject.id, tell_divergence(division, subject)))
        elif isinstance(subject, Transaction) and txn_evidence is not None:
            told.append((subject.txn, tell_transaction(txn_evidence, subject)))
        elif isinstance(subject, Cycle):
            told.append((subject.id, tell_cycle(load_cycle(run_dir, subject), subject)))
    return told


def subject_named(run_dir: Path, ident: str, results: Mapping[str, Any] | None) -> StorySubject:
    """The story `ident` asks for: a place (`kchaos/2/28`), a cycle an anomaly's example names by its id
    (`G0:producer-0-txn-117`), a transaction of the history, else a record. The anomalies of `results` that
    name it say what it is."""
    cycle = _cycle_named(results, ident)
    if cycle is not None:
        return cycle
    place = Place.parse(ident)
    if place is not None:
        named = _named(results, ident, DIVERGENCE_ANOMALIES)
        return Place(place.topic, place.partition, place.offset, named)
    if ident in known_transactions(run_dir):
        return Transaction(ident, _named(results, ident, TRANSACTION_ANOMALIES))
    return Subject(ident, anomalies_naming(results, ident) if results is not None else None)


def _cycle_named(results: Mapping[str, Any] | None, ident: str) -> Cycle | None:
    """The cycle whose example id is `ident`, with its anomaly's verdict; None if no example has it."""
    for name, anomaly in ((results or {}).get("anomalies") or {}).items():
        if name not in CYCLE_ANOMALIES or not isinstance(anomaly, Mapping):
            continue
        for example in anomaly.get("examples") or []:
            if isinstance(example, Mapping) and example.get("id") == ident:
                return Cycle.of(example, f"{name}: {anomaly.get('verdict')}")
    return None


def _named(results: Mapping[str, Any] | None, ident: str, names: frozenset[str]) -> str | None:
    """The anomalies among `names` whose examples name `ident` (as their id or transaction), with verdicts."""
    found = [
        f"{name}: {anomaly.get('verdict')}"
        for name, anomaly in ((results or {}).get("anomalies") or {}).items()
        if name in names
        and isinstance(anomaly, Mapping)
        and any(
            isinstance(example, Mapping) and ident in (example.get("id"), example.get("txn"))
            for example in anomaly.get("examples") or []
        )
    ]
    return ", ".join(found) or None
