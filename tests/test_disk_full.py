"""`disk-full`: which of a broker's lines the stop row keeps as its own words about the full disk."""

from __future__ import annotations

from kchaos.nemesis.disk_full import log_dir_lines

#: Lines of a 4.3.1 broker meeting a full disk (the wording of `LogDirFailureChannel` and `ReplicaManager`),
#: between lines that say nothing about it.
BROKER_LOG = """\
[2026-11-26 19:40:01,101] INFO [Partition kchaos-0 broker=2] ISR updated to 1,2,3 (kafka.cluster.Partition)
[2026-11-26 19:40:02,202] ERROR Error while appending records to kchaos-0 in dir /var/lib/kafka/data \
(org.apache.kafka.storage.internals.log.LogDirFailureChannel)
java.io.IOException: No space left on device
[2026-11-26 19:40:02,210] WARN [ReplicaManager broker=2] Stopping serving replicas in dir \
/var/lib/kafka/data (kafka.server.ReplicaManager)
[2026-11-26 19:40:02,230] WARN Stopping serving logs in dir /var/lib/kafka/data (kafka.log.LogManager)
[2026-11-26 19:40:02,240] ERROR Shutdown broker because all log dirs in /var/lib/kafka/data have failed \
(kafka.log.LogManager)
[2026-11-26 19:40:03,000] INFO the log dir setting log.dirs = /var/lib/kafka/data (kafka.server.KafkaConfig)
"""


def test_the_broker_s_lines_about_its_failed_log_dir_are_kept_in_order_and_no_others() -> None:
    kept = log_dir_lines(BROKER_LOG, kept=10)
    assert [line.split("] ", 1)[-1][:34] for line in kept] == [
        "ERROR Error while appending record",
        "java.io.IOException: No space left",
        "WARN [ReplicaManager broker=2] Sto",
        "WARN Stopping serving logs in dir ",
        "ERROR Shutdown broker because all ",
    ]


def test_only_the_last_lines_are_kept() -> None:
    (last,) = log_dir_lines(BROKER_LOG, kept=1)
    assert "Shutdown broker because all log dirs in /var/lib/kafka/data have failed" in last
