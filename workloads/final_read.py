"""The final read: after healing, every partition is read from its first to its last offset.

It is the ground truth the checker compares acknowledgements against, so it must not stop early: it reads
each partition up to the end offset the leader reports once the cluster has recovered, and says so in the
history if it could not get there.
"""

from __future__ import annotations

import logging
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from harness.events import FAIL, FINAL_READ, FINAL_READER_PROCESS, INVOKE, OK
from harness.history import HistoryWriter

log = logging.getLogger(__name__)


class FinalReadIncomplete(RuntimeError):
    """Some partition could not be read to its end before the deadline."""


def final_read(bootstrap: str, topic: str, partitions: int, history: HistoryWriter, timeout: float) -> int:
    """Reads every partition to its end offset, one `final-read` row per record; returns the count."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"kchaos-final-read-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
            "logger": logging.getLogger(f"kchaos.librdkafka.{FINAL_READER_PROCESS}"),
        }
    )
    try:
        ends: dict[int, int] = {}
        for partition in range(partitions):
            low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=30, cached=False
            )
            ends[partition] = high
            history.record(
                FINAL_READER_PROCESS,
                INVOKE,
                FINAL_READ,
                topic=topic,
                partition=partition,
                detail={"from": low, "to": high},
            )
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        remaining = {p for p, end in ends.items() if end > 0}
        read = 0
        deadline = time.monotonic() + timeout
        while remaining and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=500, timeout=1.0):
                error = message.error()
                at = message.partition()
                if error is not None:
                    if error.code() != KafkaError._PARTITION_EOF:
                        log.warning("final read: %s", error)
                    elif at is not None and (message.offset() or 0) >= ends.get(at, 0):
                        remaining.discard(at)
                    continue
                value = (message.value() or b"").decode()
                key = message.key()
                offset = message.offset()
                history.record(
                    FINAL_READER_PROCESS, OK, FINAL_READ, topic=topic, partition=at, offset=offset,
                    key=key.decode() if key is not None else None, value=value,
                )  # fmt: skip
                read += 1
                if at is not None and offset is not None and offset + 1 >= ends[at]:
                    remaining.discard(at)
        if remaining:
            for missing in sorted(remaining):
                history.record(
                    FINAL_READER_PROCESS, FAIL, FINAL_READ, topic=topic, partition=missing,
                    error=f"did not reach end offset {ends[missing]} within {timeout:.0f}s",
                )  # fmt: skip
            raise FinalReadIncomplete(f"partitions {sorted(remaining)} of {topic} not read to their end")
        return read
    finally:
        consumer.close()
