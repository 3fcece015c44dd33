"""What the guarantee oracle reads from a run's `config.json`: one schema for every writer and the reader.

Three things write a `config.json` the checkers later judge (a run, `kchaos import-verifiable` and the
benchmark generator) and one thing reads it (`kchaos.checkers.results`). Each used to spell the oracle's
inputs, and validate acks, its own way; a writer that drifted produced a run directory only the check
refused, after the run. `OracleInputs` is the one spelling: every writer builds one and writes its
`to_json()`, the reader takes `from_config()` of what it finds, and `parse_acks` is the one place acks is
validated. It lives in the model because both the run (kchaos.model.config) and the judge use it.

The format is the one `config.json` always had: the keys are the run configuration's field names, so old
run directories still check, and keys the oracle does not read are left to the writers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from kchaos.model.client_config import max_in_flight
from kchaos.model.run_files import CONFIG_NAME

Acks = Literal["all", "1"]

#: The keys the oracle cannot judge without, each with what it says about the run.
REQUIRED = {
    "acks": "the producers' acks: all (or -1) or 1",
    "replication_factor": "the topic's replication factor",
    "unclean_leader_election": "whether the topic allowed unclean leader election: true or false",
    "idempotence": "whether the producers were idempotent: true or false",
}


class OracleInputError(ValueError):
    """A `config.json` value the oracle cannot judge by; the message names the field and the fix."""


def idempotence_refusal(acks: str, idempotence: bool | None) -> str | None:
    """Why a producer cannot be idempotent with `acks` (Kafka refuses it), or None. Shared by `kchaos run`
    and `kchaos import-verifiable`, which used to judge as `ok` a combination no producer can run with."""
    if idempotence and parse_acks(acks) != "all":
        return (
            "idempotence requires acks=all (Kafka refuses it otherwise); use --acks all or --no-idempotence"
        )
    return None


def chosen_idempotence(acks: str, idempotence: bool | None, idempotent_producer: bool, version: str) -> bool:
    """The run's idempotence: as given (refused, with the fix, where Kafka refuses it or release `version`
    has none: `idempotent_producer`), else Kafka's producer default since 3.0, idempotent exactly when
    acks=all (and the brokers can)."""
    refused = idempotence_refusal(acks, idempotence)
    if refused is not None:
        raise ValueError(refused)
    if idempotence and not idempotent_producer:
        raise ValueError(
            f"idempotence: {version} has no idempotent producer (it came in 0.11, KIP-98); "
            "use --no-idempotence or a release from 0.11 on"
        )
    return idempotence if idempotence is not None else acks == "all" and idempotent_producer


def parse_acks(raw: object) -> Acks:
    """The producer's acks in the oracle's spelling: `all` (also written `-1`, the Java client's) or `1`.

    The one validation of acks: the run configuration, the VerifiableProducer import and the reader of
    `config.json` all call it, so what one accepts the others judge. `0` is refused: with no
    acknowledgement there is no acknowledged write to hold Kafka to, and the oracle has no rules for it.
    """
    acks = str(raw).strip().lower() if raw is not None else ""
    if acks == "-1":
        acks = "all"
    if acks not in ("all", "1"):
        raise OracleInputError(
            f"acks={raw!r}: the oracle has rules for acks=all (also written -1) and acks=1 only; use all or 1"
        )
    return cast(Acks, acks)


def _whole(name: str, raw: object, low: int = 1) -> int:
    """A count of at least `low`; a bool or a fraction is refused rather than read as a number."""
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        raise OracleInputError(f"{name}={raw!r} in {CONFIG_NAME}: give a whole number of at least {low}")
    try:
        value = int(raw)
    except ValueError:
        raise OracleInputError(
            f"{name}={raw!r} in {CONFIG_NAME}: give a whole number of at least {low}"
        ) from None
    if value < low:
        raise OracleInputError(f"{name}={value} in {CONFIG_NAME}: give a whole number of at least {low}")
    return value


def _flag(name: str, raw: object) -> bool:
    """A yes/no setting: JSON true or false (a string would make "false" true)."""
    if not isinstance(raw, bool):
        raise OracleInputError(f"{name}={raw!r} in {CONFIG_NAME}: give true or false")
    return raw


def _properties(name: str, raw: object) -> dict[str, str]:
    """Extra broker or topic properties: a mapping of names to values (absent or null: none)."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise OracleInputError(
            f"{name}={raw!r} in {CONFIG_NAME}: give a mapping of property names to values, e.g. "
            '{"flush.messages": "1"}'
        )
    return {str(key): str(value) for key, value in raw.items()}


@dataclass(frozen=True)
class OracleInputs:
    """The configuration the oracle's rules turn on, as a run directory records it.

    `min_insync_replicas` is recorded when known and shown in `results.json`, but no rule turns on it, so
    it is not required: with acks=all a write is acknowledged only once every in-sync replica has it,
    and a clean election picks an in-sync replica, so a lone in-sync replica that fails leaves the
    partition unavailable, not lossy (the `committed-not-lost` rule); where losing it does lose writes (a
    power loss, an unclean election) the oracle judges by the in-sync replicas the run recorded and by the
    election setting, not by the configured minimum, which the `min-isr` fault changes mid-run anyway.
    """

    acks: Acks
    replication_factor: int
    unclean_leader_election: bool
    idempotence: bool
    min_insync_replicas: int | None = None
    #: Partitions of the topic: the power-loss rules judge each; None when the writer did not say.
    partitions: int | None = None
    #: The brokers' release, for naming the fix of a promise it is known to break.
    kafka_version: str | None = None
    topic_config: Mapping[str, str] = field(default_factory=dict)
    broker_config: Mapping[str, str] = field(default_factory=dict)
    #: The producers' own settings (`--producer-config`), of which the rules read the requests in flight.
    producer_config: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Built directly (a writer) or by `from_config` (the reader): the same checks either way.
        object.__setattr__(self, "acks", parse_acks(self.acks))
        _whole("replication_factor", self.replication_factor)
        _flag("unclean_leader_election", self.unclean_leader_election)
        _flag("idempotence", self.idempotence)
        if self.partitions is not None:
            _whole("partitions", self.partitions)
        if self.min_insync_replicas is not None:
            _whole("min_insync_replicas", self.min_insync_replicas)
            if self.min_insync_replicas > self.replication_factor:
                raise OracleInputError(
                    f"min_insync_replicas={self.min_insync_replicas} exceeds replication_factor="
                    f"{self.replication_factor}: every acks=all write would fail; give at most "
                    f"{self.replication_factor}"
                )
        try:
            max_in_flight(self.producer_config)
        except ValueError as exc:
            raise OracleInputError(f"producer_config in {CONFIG_NAME}: {exc}") from None

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> OracleInputs:
        """Reads a `config.json` (any writer's, old ones included); raises `OracleInputError` naming each
        missing or invalid field and how to fix it."""
        missing = [key for key in REQUIRED if key not in config]
        if missing:
            wanted = "; ".join(f"{key} ({REQUIRED[key]})" for key in missing)
            raise OracleInputError(
                f"{CONFIG_NAME} lacks {', '.join(missing)}; the oracle cannot judge without them: "
                f"add {wanted}"
            )
        minimum = config.get("min_insync_replicas")
        partitions = config.get("partitions")
        version = config.get("kafka_version")
        return cls(
            acks=parse_acks(config["acks"]),
            replication_factor=_whole("replication_factor", config["replication_factor"]),
            unclean_leader_election=_flag("unclean_leader_election", config["unclean_leader_election"]),
            idempotence=_flag("idempotence", config["idempotence"]),
            min_insync_replicas=None if minimum is None else _whole("min_insync_replicas", minimum),
            partitions=None if partitions is None else _whole("partitions", partitions),
            kafka_version=None if version is None else str(version),
            topic_config=_properties("topic_config", config.get("topic_config")),
            broker_config=_properties("broker_config", config.get("broker_config")),
            producer_config=_properties("producer_config", config.get("producer_config")),
        )

    @property
    def max_in_flight(self) -> int | None:
        """The producers' requests in flight per connection, when set (`--producer-config`); None: the
        client's default, more than one (5 in Java, 1,000,000 in librdkafka)."""
        return max_in_flight(self.producer_config)

    @property
    def synced_every_append(self) -> bool:
        """Every replica fsyncs each append: the topic's `flush.messages`, or when the topic does not set it
        the brokers' `log.flush.interval.messages`, is 1. A configuration that names neither (Kafka's
        default, and every run from before these settings were read) syncs when the OS decides."""
        value = self.topic_config.get("flush.messages", self.broker_config.get("log.flush.interval.messages"))
        return str(value).strip() == "1"

    def to_json(self) -> dict[str, Any]:
        """The `config.json` keys for these inputs; a setting the writer did not know (None, or no extra
        properties) is left out, which `from_config` reads back as the same inputs."""
        written: dict[str, Any] = {
            "acks": self.acks,
            "min_insync_replicas": self.min_insync_replicas,
            "replication_factor": self.replication_factor,
            "unclean_leader_election": self.unclean_leader_election,
            "idempotence": self.idempotence,
            "partitions": self.partitions,
            "kafka_version": self.kafka_version,
            "topic_config": dict(self.topic_config),
            "broker_config": dict(self.broker_config),
            "producer_config": dict(self.producer_config),
        }
        return {key: value for key, value in written.items() if value is not None and value != {}}
