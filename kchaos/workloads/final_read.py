"""The final read: after healing, every partition is read from its first to its last offset.

It is the ground truth the checker compares acknowledgements against (with `--workload eos`, of the output
topic too), so it must not stop early: it reads each partition up to the end offset the leader reports once
the cluster has recovered, and says so in the history if it could not get there. It reads read_committed:
a transaction still open holds it below the end (the last stable offset) until the transaction ends or
times out, which the transactional producers avoid by ending every transaction they began before the
final read starts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from kchaos.model.events import FAIL, FINAL_READ, FINAL_READER_PROCESS, INVOKE, ISOLATION, OK, READ_COMMITTED
from kchaos.model.history import HistoryWriter

log = logging.getLogger(__name__)


class FinalReadIncomplete(RuntimeError):
    """Some partition could not be read to its end before the deadline."""


def final_read(bootstrap: str, topics: Mapping[str, int], history: HistoryWriter, timeout: float) -> int:
    """Reads every partition of each topic (name -> its partition count) to its end offset, one
    `final-read` row per record, each naming its topic; returns the count. Several topics are read by one
    client in one pass, so one deadline bounds them all: `--workload eos` reads its output topic too."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"kchaos-final-read-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
            # Set, not left to the client's default: records of aborted transactions are then never in the
            # final read, which is what every transaction check expects of it, and its rows say so.
            "isolation.level": READ_COMMITTED,
            "logger": logging.getLogger(f"kchaos.librdkafka.{FINAL_READER_PROCESS}"),
        }
    )
    try:
        ends: dict[tuple[str, int], int] = {}
        for topic, partitions in topics.items():
            for partition in range(partitions):
                low, high = consumer.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=30, cached=False
                )
                ends[topic, partition] = high
                history.record(
                    FINAL_READER_PROCESS,
                    INVOKE,
                    FINAL_READ,
                    topic=topic,
                    partition=partition,
                    detail={"from": low, "to": high, ISOLATION: READ_COMMITTED},
                )
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for topic, p in ends])
        remaining = {place for place, end in ends.items() if end > 0}
        read = 0
        deadline = time.monotonic() + timeout
        while remaining and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=500, timeout=1.0):
                error = message.error()
                place = (message.topic() or "", message.partition() or 0)
                if error is not None:
                    if error.code() != KafkaError._PARTITION_EOF:
                        log.warning("final read: %s", error)
                    elif (message.offset() or 0) >= ends.get(place, 0):
                        remaining.discard(place)
                    continue
                value = (message.value() or b"").decode()
                key = message.key()
                offset = message.offset()
                history.record(
                    FINAL_READER_PROCESS, OK, FINAL_READ, topic=place[0], partition=place[1], offset=offset,
                    key=key.decode() if key is not None else None, value=value,
                )  # fmt: skip
                read += 1
                if offset is not None and offset + 1 >= ends[place]:
                    remaining.discard(place)
        if remaining:
            for topic, missing in sorted(remaining):
                history.record(
                    FINAL_READER_PROCESS, FAIL, FINAL_READ, topic=topic, partition=missing,
                    error=f"did not reach end offset {ends[topic, missing]} within {timeout:.0f}s",
                )  # fmt: skip
            names = ", ".join(f"{topic}/{partition}" for topic, partition in sorted(remaining))
            raise FinalReadIncomplete(f"partitions {names} not read to their end")
        return read
    finally:
        consumer.close()
