"""Where the benchmark's synthetic history plants each anomaly: per-send arrays of values and offsets.

The shape of the history (partitions, producers, blocks of sends) and the edits that make each anomaly are
decided here, as plain numpy arrays, before any row is written; bench/generate.py turns a `Plan` into
history and replica rows. Each anomaly goes into a partition of its own, near the start of a block, so no
two edits interfere and each yields exactly the count `Injected.expected` promises.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TOPIC = "bench"
PARTITIONS = 8
PRODUCERS = 4
BLOCK = 1000
#: Sends per row group: 3 rows each (invoke, ok, poll), so a group is about 3M rows.
CHUNK_SENDS = 1_000_000
WALL_START = 1_700_000_000.0
ROW_NS = 1_000  # one row per simulated microsecond

BROKERS = (1, 2, 3)

#: The smallest history the plan lays out: every planted anomaly needs a block of its own in its partition.
MIN_SENDS = 15 * BLOCK

#: About what a default `kchaos run` acknowledges (60 s at 200 sends/s, with the time faults add), the size
#: every user checks: its check must feel instant, so the benchmark measures it beside the big sizes.
DEFAULT_RUN_SENDS = 15_000

# Partitions each anomaly is injected into, kept apart so no two interfere.
LOST_P, UNSEEN_P, TRUNCATED_P, DUPLICATE_P, NONMONO_SEND_P, OFFSET_DIFFERS_P = range(6)
NONMONO_POLL_P = LOST_P


@dataclass(frozen=True)
class Injected:
    """How many of each anomaly to plant; each count must stay far below sends / (partitions * 1000)."""

    lost_write: int = 10
    unseen: int = 10
    truncated_read: int = 10
    duplicate: int = 10
    nonmonotonic_send: int = 10
    offset_differs: int = 10
    nonmonotonic_poll: int = 10
    replica_divergence: int = 10

    def expected(self, replicas: bool) -> dict[str, int | None]:
        """Counts per anomaly name, as both engines must report them (None: not checked)."""
        return {
            "lost-write": self.lost_write,
            "unseen": self.unseen,
            "duplicate": self.duplicate,
            "inconsistent-offset": self.offset_differs,
            "nonmonotonic-send": self.nonmonotonic_send,
            "poll-skip": 2 * self.nonmonotonic_poll,
            "nonmonotonic-poll": self.nonmonotonic_poll,
            "truncated-read": self.truncated_read,
            "replica-divergence": self.replica_divergence if replicas else None,
        }


#: A default run's plant: one of each anomaly, so every anomaly's examples are looked up as in a run that
#: found something (a clean run skips that work, and checks faster).
DEFAULT_RUN_INJECTED = Injected(*(1,) * 8)


def _spread(partition: int, count: int, sends: int, first_slot: int) -> np.ndarray:
    """`count` send ids in `partition`, evenly spread, each at a block offset >= first_slot (so a pair
    (i, i + PARTITIONS) stays inside one block)."""
    per_partition = sends // PARTITIONS
    step = max(per_partition // (count + 1), 1)
    slots = (np.arange(1, count + 1) * step).astype(np.int64)
    ids = slots * PARTITIONS + partition
    # Move each id near the start of its block (first_slot rounds of partitions in), keeping its partition.
    block_start = (ids // BLOCK) * BLOCK
    ids = block_start + first_slot * PARTITIONS + (partition - block_start) % PARTITIONS
    return np.asarray(ids, dtype=np.int64)


@dataclass
class Plan:
    """Per-send arrays after the anomalies are planted; value ids are decimal strings in the history."""

    sends: int
    send_value: np.ndarray  # value id carried by send i's invoke and ok rows
    send_offset: np.ndarray  # offset in send i's ok row
    log_value: np.ndarray  # value id in the log at send i's (partition, offset): what reads return
    poll_value: np.ndarray  # value id / offset of the i-th poll row, in poll order
    poll_offset: np.ndarray
    tail_unseen: np.ndarray  # value ids of tail sends to UNSEEN_P
    tail_truncated: np.ndarray  # value ids of tail sends to TRUNCATED_P
    duplicate_of: np.ndarray  # value ids re-appended at the end of DUPLICATE_P
    divergent: np.ndarray  # send ids whose record broker 3 holds differently
    next_value: int


def plan(sends: int, injected: Injected) -> Plan:
    if sends % BLOCK or sends % PARTITIONS or sends < MIN_SENDS:
        raise ValueError(f"sends must be a multiple of {BLOCK} and {PARTITIONS}, at least {MIN_SENDS}")
    ids = np.arange(sends, dtype=np.int64)
    offsets = ids // PARTITIONS
    send_value = ids.copy()
    send_offset = offsets.copy()
    log_value = ids.copy()
    next_value = sends

    # lost-write: the log holds a fresh, never-acknowledged value where the acknowledged one was.
    lost = _spread(LOST_P, injected.lost_write, sends, first_slot=3)
    log_value[lost] = np.arange(next_value, next_value + lost.size)
    next_value += lost.size

    # nonmonotonic-send: i and the same producer's next send to that partition swap value and offset.
    first = _spread(NONMONO_SEND_P, injected.nonmonotonic_send, sends, first_slot=5)
    second = first + PARTITIONS * PRODUCERS
    send_value[first], send_value[second] = ids[second], ids[first]
    send_offset[first], send_offset[second] = offsets[second], offsets[first]
    log_value[first], log_value[second] = ids[first], ids[second]  # the log is unchanged

    # offset-differs: acknowledged one below where the record really is.
    moved = _spread(OFFSET_DIFFERS_P, injected.offset_differs, sends, first_slot=7)
    send_offset[moved] -= 1

    # nonmonotonic-poll: the consumer is handed two records of one partition in swapped order.
    poll_value = log_value.copy()
    poll_offset = offsets.copy()
    swapped = _spread(NONMONO_POLL_P, injected.nonmonotonic_poll, sends, first_slot=11)
    after = swapped + PARTITIONS
    poll_value[swapped], poll_value[after] = log_value[after], log_value[swapped]
    poll_offset[swapped], poll_offset[after] = offsets[after], offsets[swapped]

    tail_unseen = np.arange(next_value, next_value + injected.unseen, dtype=np.int64)
    next_value += injected.unseen
    tail_truncated = np.arange(next_value, next_value + injected.truncated_read, dtype=np.int64)
    next_value += injected.truncated_read
    duplicate_of = log_value[_spread(DUPLICATE_P, injected.duplicate, sends, first_slot=13)]
    divergent = _spread(NONMONO_SEND_P, injected.replica_divergence, sends, first_slot=17)
    return Plan(sends, send_value, send_offset, log_value, poll_value, poll_offset, tail_unseen,
                tail_truncated, duplicate_of, divergent, next_value)  # fmt: skip
