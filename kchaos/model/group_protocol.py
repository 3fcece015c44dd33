"""The consumer group protocol a run's members use (`--group-protocol`): `classic`, the JoinGroup/SyncGroup
protocol every release has, or `consumer`, KIP-848's next-generation protocol, in which the group
coordinator computes the assignment and hands it out incrementally, member by member, fenced by a member
epoch instead of a generation shared by the whole group.

`consumer` needs brokers that enable it. Kafka's documentation (Operations > Consumer Rebalance Protocol,
https://kafka.apache.org/40/operations/consumer-rebalance-protocol): "Starting from Apache Kafka 4.0, the
Next Generation of the Consumer Rebalance Protocol (KIP-848) is Generally Available (GA)" and "The new
consumer protocol is automatically enabled on the server since Apache Kafka 4.0". In 3.7 it was an early
access and in 3.8 and 3.9 a preview, off unless the brokers set `group.coordinator.rebalance.protocols=
classic,consumer` (KRaft only), with its own documented limits; kchaos refuses `consumer` below 4.0 rather
than turn a preview on and judge it by promises Kafka did not yet make.

Under `consumer` the client must not send what the broker now decides: the Java consumer refuses
`session.timeout.ms`, `heartbeat.interval.ms` and `partition.assignment.strategy` with
`group.protocol=consumer` (the broker's `group.consumer.session.timeout.ms` and
`group.consumer.heartbeat.interval.ms`, and its assignors, govern), and librdkafka 2.16 refuses to create
the consumer ("`session.timeout.ms` is not supported for `group.protocol=consumer` ... It is defined broker
side", seen here). So they are dropped (`member_protocol_settings`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal, TypeVar

from kchaos.model.releases import Release
from kchaos.model.workload_names import IN_A_GROUP

GroupProtocol = Literal["classic", "consumer"]
CLASSIC: Final = "classic"
CONSUMER: Final = "consumer"
#: Every protocol, in the order `--help` lists them.
GROUP_PROTOCOLS: tuple[GroupProtocol, ...] = (CLASSIC, CONSUMER)
#: The first release whose brokers enable the consumer protocol by default (KIP-848 GA).
FIRST_CONSUMER_PROTOCOL = (4, 0)
#: The first kafka-clients release whose consumer takes `group.protocol=consumer`: KIP-848's early access
#: release notes (cwiki.apache.org/confluence/display/KAFKA, "The Next Generation of the Consumer Rebalance
#: Protocol (KIP-848) - Early Access Release Notes"): "Apache Kafka version 3.7.0 is shipped with an early
#: access of the new generation of the consumer rebalance protocol". Older clients have no such setting
#: (the Java consumer logs it as unknown and joins with the classic protocol).
FIRST_JAVA_CONSUMER = (3, 7)
#: The first confluent-kafka (librdkafka) release whose consumer takes `group.protocol=consumer`: its
#: v2.4.0 release notes, "KIP-848: Added KIP-848 based new consumer group rebalance protocol" (early
#: access; generally available from 2.12.0).
FIRST_LIBRDKAFKA_CONSUMER = (2, 4)
#: Client settings the classic protocol takes from the client and the consumer protocol from the broker.
CLASSIC_ONLY_SETTINGS = (
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "partition.assignment.strategy",
    "group.protocol.type",
)

#: The consumer protocol's session, set on the brokers as the classic protocol's is on the client
#: (`kchaos.workloads.in_harness.group_consumer.SESSION_TIMEOUT_MS`, 10 s): a crashed member is noticed within
#: a fault of a short run, where the brokers' default (45 s, and no less allowed) would outlast it.
CONSUMER_SESSION_MS = 10_000

_V = TypeVar("_V")


def group_broker_config(protocol: str) -> dict[str, str]:
    """The broker settings a run on `protocol` needs: under `consumer`, the session of
    `CONSUMER_SESSION_MS` (`group.consumer.session.timeout.ms`, and the least the brokers allow lowered
    to it: `group.consumer.min.session.timeout.ms` defaults to 45 s); nothing under `classic`."""
    if protocol == CLASSIC:
        return {}
    session = str(CONSUMER_SESSION_MS)
    return {"group.consumer.session.timeout.ms": session, "group.consumer.min.session.timeout.ms": session}


def member_protocol_settings(settings: Mapping[str, _V], protocol: str) -> dict[str, _V | str]:
    """A group member's client settings for `protocol`: unchanged under `classic` (no `group.protocol`
    at all, so a client older than the setting is not told of it), else `group.protocol=consumer` and
    without what only the classic protocol takes from a client."""
    if protocol == CLASSIC:
        return dict(settings)
    kept: dict[str, _V | str] = {k: v for k, v in settings.items() if k not in CLASSIC_ONLY_SETTINGS}
    kept["group.protocol"] = CONSUMER
    return kept


def group_protocol_refusal(
    protocol: str,
    workload: str,
    kafka_version: str,
    java_client_version: str | None = None,
    librdkafka_version: str | None = None,
) -> str | None:
    """Why `--group-protocol protocol` cannot run `--workload workload` on `kafka_version` (with a Java
    client of `java_client_version`, or librdkafka processes of `librdkafka_version`, when given), with the
    fix; None when it can."""
    if protocol == CLASSIC:
        return None
    if workload not in IN_A_GROUP:
        takes = " or ".join(f"--workload {name}" for name in IN_A_GROUP)
        return (
            f"group_protocol: --group-protocol {protocol} is how group members rebalance; --workload "
            f"{workload} has no consumer group: leave --group-protocol out or use {takes}"
        )
    if Release.parse(kafka_version).parts < FIRST_CONSUMER_PROTOCOL:
        return (
            f"group_protocol: --group-protocol consumer (KIP-848) is enabled by default on brokers from 4.0, "
            f"where it is generally available; on {kafka_version} it is at most a preview kchaos does not "
            "turn on: use --kafka-version 4.0.0 or later, or leave --group-protocol out (classic)"
        )
    if java_client_version is not None and Release.parse(java_client_version).parts < FIRST_JAVA_CONSUMER:
        return (
            f"group_protocol: --group-protocol consumer needs a Java client that has group.protocol, which "
            f"came in kafka-clients 3.7 (KIP-848 early access); --java-client-version {java_client_version} "
            "would run the classic protocol while the run recorded consumer: use --java-client-version 3.7.0 "
            "or later (or leave it out for the cluster's own), or leave --group-protocol out"
        )
    rdkafka = None if librdkafka_version is None else librdkafka_version.split(".")
    if rdkafka is not None and tuple(int(part) for part in rdkafka) < FIRST_LIBRDKAFKA_CONSUMER:
        return (
            "group_protocol: --group-protocol consumer needs a librdkafka that has group.protocol, "
            "which came in confluent-kafka 2.4.0 (KIP-848 early access); --librdkafka-version "
            f"{librdkafka_version} has none: use --librdkafka-version 2.4.0 or later (or leave it out), or "
            "leave --group-protocol out"
        )
    return None
