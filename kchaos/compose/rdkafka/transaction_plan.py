"""A transactional producer's plan, drawn from the seed alone, for the in-process producers
(kchaos/workloads/in_harness/transactions.py) and the librdkafka processes (txn_worker.py) alike: one
planner, so both clients write the same transactions and the same checks judge them.

Standard library only: the module runs in the client container too (kchaos/harness/rdkafka_image.py).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


def transaction_name(process: str, n: int) -> str:
    """The `n`th transaction of a producer process: unique in the run, as send values are (the history's
    `kchaos.model.events.transaction_id`, which a test holds this to)."""
    return f"{process}-txn-{n}"


@dataclass(frozen=True)
class PlannedTransaction:
    """What one transaction will write and whether it means to commit."""

    txn: str
    #: (partition, value) of each record, in the order they are produced.
    records: tuple[tuple[int, str], ...]
    commit: bool


@dataclass
class TransactionPlanner:
    """A producer process's transactions, drawn from the seed alone: the same seed plans the same records,
    partitions and commit-or-abort decisions, whatever the cluster did.

    Python's Random is seeded with `<seed>:<process>` (a seed given as a number or as the text a worker's
    argument holds draws the same). Each transaction writes 1 to `max_records` records to consecutive
    partitions from a random first one, so one of more than one record spans partitions whenever the topic
    has several; it is planned to abort with probability `abort_ratio`.
    """

    process: str
    partitions: int
    max_records: int
    abort_ratio: float
    seed: int | str
    planned: int = 0
    rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.partitions < 1 or self.max_records < 1:
            raise ValueError(
                f"need at least one partition and one record ({self.partitions}, {self.max_records})"
            )
        if not 0 <= self.abort_ratio <= 1:
            raise ValueError(f"abort ratio {self.abort_ratio} is not between 0 and 1")
        self.rng = random.Random(f"{self.seed}:{self.process}")

    def next(self) -> PlannedTransaction:
        txn = transaction_name(self.process, self.planned)
        self.planned += 1
        count = self.rng.randint(1, self.max_records)
        first = self.rng.randrange(self.partitions)
        commit = self.rng.random() >= self.abort_ratio
        records = tuple(((first + i) % self.partitions, f"{txn}-{i}") for i in range(count))
        return PlannedTransaction(txn, records, commit)
