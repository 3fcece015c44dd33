"""Who led each partition, and when: a metadata poller that records leadership changes into the history.

Faults are only half of a timeline: a crash or a partition matters through what Kafka did about it, and the
first thing it does is move leadership. Producers and consumers see leaders only indirectly (as errors and
retries), so a separate watcher asks the cluster's metadata about once a second and writes a row only when
a partition's leader, ISR or Eligible Leader Replicas (ELR, KIP-966) differ from what it saw last. The rows
are `info` rows with their own process and `f`, which every checker ignores but the power-loss oracle: like
the workloads, the watcher records and never judges.

The ELR is known only from the DescribeTopicPartitions API (`kchaos.harness.partition_describe`), so the
watcher asks that first; a release without the API has no ELR, and there librdkafka's metadata answers
instead, with the ELR recorded empty (no replica outside the ISR may be elected cleanly there).

The leader recorded is the cluster's answer as a client sees it, from whichever broker answered: during a
network partition an isolated broker can still describe its stale view, exactly as it would to a producer.
While brokers are down the request may fail or time out; that is expected and simply retried next tick.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from kchaos.harness.partition_describe import DescribeError, DescribeUnsupported, describe_partitions
from kchaos.model.events import INFO, LEADER, LEADER_WATCH_PROCESS
from kchaos.model.history import HistoryWriter

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Leadership:
    """One partition's leader (-1 if none), replicas, in-sync replicas and Eligible Leader Replicas, as one
    answer gave them."""

    leader: int
    isr: tuple[int, ...]
    elr: tuple[int, ...] = ()
    replicas: tuple[int, ...] = ()

    def detail(self) -> dict[str, Any]:
        """The history row's detail: what the power-loss oracle reads back (`kchaos.checkers.power_loss`)."""
        return {
            "leader": self.leader,
            "isr": list(self.isr),
            "elr": list(self.elr),
            "replicas": list(self.replicas),
        }


class MetadataSource(Protocol):
    """Where the watcher learns leadership from; raises when the cluster does not answer."""

    def leadership(self) -> Mapping[int, Leadership]: ...


class AdminMetadata:
    """The topic's partitions from a metadata request through one long-lived admin client.

    The client is made on first use, so constructing a watcher touches no network; librdkafka's complaints
    about unreachable brokers go to the harness log, not the terminal.
    """

    def __init__(self, bootstrap: str, topic: str, timeout: float = 2.0) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.timeout = timeout
        self._client: AdminClient | None = None

    def leadership(self) -> dict[int, Leadership]:
        if self._client is None:
            settings: dict[str, Any] = {
                "bootstrap.servers": self.bootstrap,
                "logger": logging.getLogger("kchaos.librdkafka.leaders"),
            }
            self._client = AdminClient(settings)
        metadata = self._client.list_topics(self.topic, timeout=self.timeout)
        described = metadata.topics.get(self.topic)
        if described is None:
            return {}
        # A partition without a leader still appears, with leader -1 and its error set: that is news too.
        return {
            int(pid): Leadership(
                int(part.leader),
                tuple(sorted(int(b) for b in part.isrs)),
                replicas=tuple(sorted(int(b) for b in part.replicas)),
            )
            for pid, part in described.partitions.items()
        }


class DescribedPartitions:
    """The topic's partitions with their ELR, from DescribeTopicPartitions asked of each broker in turn
    until one answers; once a broker says its release has no such API, librdkafka's metadata instead.

    State: `fallback`, set on the first `DescribeUnsupported` and kept: a cluster runs one release.
    """

    def __init__(self, bootstrap: str, topic: str, timeout: float = 2.0) -> None:
        self.addresses = [address for address in bootstrap.split(",") if address]
        self.topic = topic
        self.timeout = timeout
        self.fallback: AdminMetadata | None = None

    def leadership(self) -> dict[int, Leadership]:
        if self.fallback is not None:
            return self.fallback.leadership()
        failures = []
        for address in self.addresses:
            try:
                described = describe_partitions(address, self.topic, self.timeout)
            except DescribeUnsupported:
                self.fallback = AdminMetadata(",".join(self.addresses), self.topic, self.timeout)
                return self.fallback.leadership()
            except DescribeError as exc:
                failures.append(str(exc))
                continue
            return {
                pid: Leadership(part.leader, part.isr, part.elr, part.replicas)
                for pid, part in described.items()
            }
        raise KafkaException(f"no broker described {self.topic}: {'; '.join(failures)}")


def changes(
    known: Mapping[int, Leadership], observed: Mapping[int, Leadership]
) -> list[tuple[int, Leadership]]:
    """The partitions whose leadership differs from what was known (every one, the first time), in order.

    A partition missing from an answer is not a change: a partial answer says nothing about it.
    """
    return sorted(
        ((partition, now) for partition, now in observed.items() if known.get(partition) != now),
        key=lambda change: change[0],
    )


class LeaderWatcher:
    """Polls leadership every `interval` seconds in a daemon thread and records each change.

    State: `known` (the last leadership recorded per partition), the stop event and the thread. `poll_once`
    does one tick and is what the thread repeats, so tests can drive it without threads or Kafka.
    """

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        history: HistoryWriter,
        interval: float = 1.0,
        source: MetadataSource | None = None,
    ) -> None:
        self.topic = topic
        self.history = history
        self.interval = interval
        self.source: MetadataSource = source or DescribedPartitions(bootstrap, topic)
        self.known: dict[int, Leadership] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll_once(self) -> int:
        """Asks once and records what changed; returns how many rows it wrote (0 when no answer came)."""
        try:
            observed = self.source.leadership()
        except KafkaException as exc:
            log.debug("leader watch: no metadata this tick: %s", exc)
            return 0
        found = changes(self.known, observed)
        for partition, now in found:
            self.history.record(
                LEADER_WATCH_PROCESS, INFO, LEADER, topic=self.topic, partition=partition,
                key=str(now.leader), detail=now.detail(),
            )  # fmt: skip
            self.known[partition] = now
        return len(found)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll_once()
            except Exception:
                # Never let observation take a run down; the next tick tries again.
                log.warning("leader watch: tick failed", exc_info=True)
            self._stop.wait(self.interval)

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=LEADER_WATCH_PROCESS, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stops and waits for the thread (a tick in flight ends within the metadata timeout); idempotent."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(self.interval + 10.0)
