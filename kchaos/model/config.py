"""The run configuration: everything a run depends on, validated before any container starts.

A mistake found after three brokers have booted costs a minute; found here it costs nothing, and the
error names the field and how to fix it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import PrivateAttr, ValidationError, ValidationInfo, field_validator, model_validator

from kchaos.model.client_config import checked_client_config, setting_text
from kchaos.model.client_names import check_java_client_version, check_librdkafka_version, client_refusal
from kchaos.model.cluster_access import existing_cluster_refusal
from kchaos.model.events import IsolationLevel
from kchaos.model.fault_definition import FaultSpec
from kchaos.model.fault_mix import mix_of, split_with_mix
from kchaos.model.fault_options import SpecError
from kchaos.model.fault_plan import requested_faults
from kchaos.model.fault_spec import parse_spec
from kchaos.model.field_errors import field_error
from kchaos.model.group_protocol import group_protocol_refusal
from kchaos.model.image_ref import check_image
from kchaos.model.kafka_properties import checked_properties, checked_topic_name
from kchaos.model.nemesis_fit import nemesis_refusal
from kchaos.model.node_access import NodeAccessSettings, node_access_refusal
from kchaos.model.oracle_inputs import OracleInputs, chosen_idempotence, parse_acks
from kchaos.model.plan_fit import fit
from kchaos.model.quorum_mode import quorum_refusal
from kchaos.model.releases import Release, check_kafka_version
from kchaos.model.run_settings import DEFAULT_ABORT_RATIO, DEFAULT_TXN_RECORDS
from kchaos.model.scenario_table import SCENARIO_NAMES, SCENARIOS, scenario_client, scenario_refusal
from kchaos.model.setting_bounds import BROKER_HEAP_MB, MIN_RATE
from kchaos.model.spark_settings import (
    DEFAULT_DRIVER_MEMORY,
    DEFAULT_SPARK_MASTER,
    checked_driver_memory,
    checked_spark_master,
    checked_spark_remote,
    jvm_size_mb,
    spark_url,
)
from kchaos.model.workload_names import TRANSACTIONAL, TXN
from kchaos.model.workload_rules import TXN_READERS, chosen_txn_on_timeout, reader_isolation, workload_refusal

#: The public names: the settings' defaults other floors name live with the settings, and are read
#: from here.
__all__ = ["DEFAULT_ABORT_RATIO", "DEFAULT_DRIVER_MEMORY", "DEFAULT_SPARK_MASTER", "DEFAULT_TXN_RECORDS",
           "FOR_SCENARIO", "KAFKA_REPO", "ConfigError", "RunConfig", "load_config"]  # fmt: skip

#: The images kchaos builds: `kchaos/kafka:<version>`. Only they carry the power-loss fault's sync journal.
KAFKA_REPO = "kchaos/kafka"
#: A run id names a directory under --runs-dir and is part of container and network names: no path
#: separators, no leading dot (no `..`, no hidden directory) or dash (read as an option by every shell
#: tool), nothing Docker would refuse in a name.
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
#: The validation context key that marks a configuration for a crafted scenario (see `load_config`).
FOR_SCENARIO = "for_scenario"


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the field and the fix."""


class RunConfig(NodeAccessSettings):
    """One chaos run: the settings (`RunSettings`, and where the cluster is: `NodeAccessSettings`), each
    checked, and checked against the others and the release, before any container starts."""

    #: Validated for a crafted scenario (`load_config(for_scenario=True)`): its plan may hold no fault.
    _for_scenario: bool = PrivateAttr(default=False)
    #: What kchaos changed to fit the faults into --duration (`kchaos.model.plan_fit`), or None.
    _fitted: str | None = PrivateAttr(default=None)

    @field_validator("run_id")
    @classmethod
    def _run_id(cls, value: str) -> str:
        if not value:
            raise ValueError(
                "an empty run id names no run directory; give one, e.g. nightly-acks-all, or leave --run-id "
                "out for a timestamped one"
            )
        if not RUN_ID.fullmatch(value):
            raise ValueError(
                f"{value!r} cannot name a run directory; use 1-100 characters from letters, digits, '.', '_' "
                "and '-', starting with a letter or digit, e.g. nightly-acks-all"
            )
        return value

    @field_validator("kafka_version")
    @classmethod
    def _kafka_release(cls, value: str) -> str:
        return check_kafka_version(value)

    @field_validator("java_client_version")
    @classmethod
    def _java_client_release(cls, value: str | None) -> str | None:
        return None if value is None else check_java_client_version(value)

    @field_validator("librdkafka_version")
    @classmethod
    def _librdkafka_release(cls, value: str | None) -> str | None:
        return None if value is None else check_librdkafka_version(value)

    @field_validator("metadata", mode="before")
    @classmethod
    def _metadata_mode(cls, value: object, info: ValidationInfo) -> object:
        # Checked against the release here, before any container starts; an invalid release is refused
        # by its own field, so there is nothing to check it against (nor a default to take from it).
        version = info.data.get("kafka_version")
        if version is None:
            return "kraft" if value is None else value
        release = Release.parse(version)
        if value is None:
            return release.default_metadata_mode
        release.check_metadata_mode(str(value))
        return value

    @field_validator("scenario")
    @classmethod
    def _scenario_name(cls, value: str | None) -> str | None:
        if value is not None and value not in SCENARIOS:
            raise ValueError(
                f"no scenario {value!r}; choose from {', '.join(SCENARIO_NAMES)} (`kchaos scenario list` "
                "says what each provokes)"
            )
        return value

    @field_validator("spark_master")
    @classmethod
    def _spark_master(cls, value: str) -> str:
        return checked_spark_master(value)

    @field_validator("spark_remote")
    @classmethod
    def _spark_remote(cls, value: str | None) -> str | None:
        return None if value is None else checked_spark_remote(value)

    @field_validator("spark_driver_memory")
    @classmethod
    def _spark_driver_memory(cls, value: str) -> str:
        return checked_driver_memory(value)

    @property
    def faults(self) -> tuple[FaultSpec, ...]:
        """The nemesis's faults, parsed (the objects its validation parsed); none for a mix, whose faults
        are drawn as the plan is made."""
        return () if mix_of(self.nemesis) is not None else tuple(parse_spec(text) for text in self.nemesis)

    @property
    def spark_url(self) -> str:
        """Where the check runs: the Spark Connect server when given, else the Spark master."""
        return spark_url(self.spark_master, self.spark_remote)

    @field_validator("acks", mode="before")
    @classmethod
    def _acks_text(cls, value: object) -> object:
        # The oracle's validation, so a run accepts exactly the acks its check can judge.
        return parse_acks(value)

    @field_validator("nemesis", mode="before")
    @classmethod
    def _split_nemesis(cls, value: object) -> object:
        # A list (a matrix file's, chaos_run's) says the same as its items joined by commas; empty: none.
        if isinstance(value, (list, tuple)) and value and all(isinstance(item, str) for item in value):
            value = ",".join(value)
        if isinstance(value, str):
            try:
                return split_with_mix(value)
            except SpecError as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("nemesis")
    @classmethod
    def _known_faults(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        try:
            if mix_of(value) is None:  # a mix's kinds were checked as it was split
                for text in value:
                    parse_spec(text)
        except SpecError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("topic")
    @classmethod
    def _topic_name(cls, value: str) -> str:
        return checked_topic_name(value)

    @field_validator("topic_config", "broker_config")
    @classmethod
    def _properties(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        # Checked here, before any container starts: Kafka would refuse some only once the cluster is up,
        # and others would override the harness or delete records the oracle then counts as lost; a broker
        # property is judged against the names the chosen release knows.
        broker = info.field_name == "broker_config"
        return checked_properties(value, broker=broker, version=info.data.get("kafka_version"))

    @field_validator("producer_config", "consumer_config", mode="before")
    @classmethod
    def _client_settings(cls, value: object, info: ValidationInfo) -> object:
        # Before the type check, so a matrix file's numbers (linger.ms: 50) are read as the text they mean.
        if isinstance(value, Mapping):
            value = {str(key): setting_text(item) for key, item in value.items()}
            return checked_client_config(value, producer=info.field_name == "producer_config")
        return value

    @field_validator("broker_heap")
    @classmethod
    def _heap(cls, value: str) -> str:
        size, (low, high) = jvm_size_mb(value), BROKER_HEAP_MB
        if size is None or not low <= size <= high:
            raise ValueError(f"{value!r}: give a JVM size from {low}m to {high // 1024}g, e.g. 256m or 1g")
        return value

    @field_validator("rate")
    @classmethod
    def _rate(cls, value: float) -> float:
        if 0 < value < MIN_RATE:
            raise ValueError(
                f"{value!r} sends per second make next to no sends in a run; give at least {MIN_RATE}, "
                "or 0 for no limit"
            )
        return value

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> RunConfig:
        check_image(self.kafka_image, self.kafka_version)
        refused = node_access_refusal(self, self.model_fields_set)
        refused = refused or existing_cluster_refusal(self, self.model_fields_set, bool(self.nodes))
        if refused is not None:
            raise ValueError(refused)
        if self.replication_factor > self.brokers and not self.bootstrap:  # an existing cluster's are its own
            raise ValueError(
                f"replication_factor ({self.replication_factor}) exceeds brokers ({self.brokers}); "
                "lower --replication-factor or raise --brokers"
            )
        if self.controllers and self.metadata != "kraft":
            raise ValueError(
                f"controllers: --controllers {self.controllers} runs the KRaft quorum on nodes of its "
                "own, and --metadata zookeeper has no KRaft quorum; use --metadata kraft or leave out "
                "--controllers"
            )
        refused = quorum_refusal(self.quorum, self.metadata, self.kafka_version, requested_faults(self))
        if refused is not None:
            raise ValueError(refused)
        if self.spare_controllers and not self.controllers:
            raise ValueError(
                f"spare_controllers: --spare-controllers {self.spare_controllers} starts controllers beside "
                "dedicated ones, and the run has none; add --controllers 3 (KRaft)"
            )
        if self.min_insync_replicas > self.replication_factor:
            raise ValueError(
                f"min_insync_replicas ({self.min_insync_replicas}) exceeds replication_factor "
                f"({self.replication_factor}): every acks=all write would fail; lower --min-insync-replicas"
            )
        if self.workload == TXN and self.isolation is None and "consumers" not in self.model_fields_set:
            # One of each level for each topic: the default mixes them.
            object.__setattr__(self, "consumers", TXN_READERS * self.topics)
        refused = workload_refusal(self)
        if refused is not None:
            raise ValueError(refused)
        if self.workload in TRANSACTIONAL:  # config.json says which policy the run's clients followed
            object.__setattr__(self, "txn_on_timeout", chosen_txn_on_timeout(self))
        java, rdkafka = self.java_client_version, self.librdkafka_version
        refused = client_refusal(self.client, self.workload, java, rdkafka)
        refused = refused or group_protocol_refusal(
            self.group_protocol, self.workload, self.kafka_version, java, rdkafka
        )
        if refused is not None:
            raise ValueError(refused)
        if self.fault_partition >= self.partitions:
            raise ValueError(
                f"fault_partition ({self.fault_partition}) does not exist in a topic of "
                f"{self.partitions} partitions; pick 0..{self.partitions - 1}"
            )
        for low, high, flag in (
            (self.fault_duration, self.fault_duration_max, "--fault-duration-max"),
            (self.fault_interval, self.fault_interval_max, "--fault-interval-max"),
        ):
            if high is not None and high < low:
                raise ValueError(f"{flag} ({high}) is below its minimum ({low}); raise it or leave it out")
        built = self.kafka_image is None or self.kafka_image.startswith(f"{KAFKA_REPO}:")
        refused = nemesis_refusal(self, kchaos_image=built)
        if refused is not None:
            raise ValueError(refused)
        if self.metadata == "zookeeper" and not built:
            raise ValueError(
                "metadata: zookeeper runs the ZooKeeper node from an image kchaos builds (its entrypoint's "
                f"ZooKeeper role); --kafka-image {self.kafka_image} has none: leave --kafka-image out"
            )
        release = Release.parse(self.kafka_version)
        chosen = chosen_idempotence(
            self.acks, self.idempotence, release.idempotent_producer, self.kafka_version
        )
        object.__setattr__(self, "idempotence", chosen)
        if self.scenario is not None or (info.context and info.context.get(FOR_SCENARIO)):
            # A crafted scenario drives its own faults; the plan (and so its fit) is not used.
            self._for_scenario = True
        else:
            fitted = fit(self, self.model_fields_set)  # the faults left to kchaos fitted in, or refused
            if fitted is not None:
                self._fitted = fitted.apply_to(self)
        return self

    @property
    def for_scenario(self) -> bool:
        """Validated for a crafted scenario: the plan was not required to fit (see `load_config`)."""
        return self._for_scenario

    @property
    def fitted(self) -> str | None:
        """What kchaos changed to fit the faults it was left to choose into `--duration`, or None."""
        return self._fitted

    @property
    def run_dir(self) -> Path:
        return self.runs_dir / self.run_id

    @property
    def group_commit(self) -> Literal["sync", "auto"]:
        """How the group's members commit: `--commit`, else `sync` (at least once, nothing committed that
        was not recorded)."""
        return self.commit or "sync"

    @property
    def transaction_records(self) -> int:
        """Most records one transaction writes: `--txn-records`, else `DEFAULT_TXN_RECORDS`."""
        return self.txn_records or DEFAULT_TXN_RECORDS

    @property
    def transaction_abort_ratio(self) -> float:
        """Share of transactions aborted: `--abort-ratio`, else `DEFAULT_ABORT_RATIO`."""
        return DEFAULT_ABORT_RATIO if self.abort_ratio is None else self.abort_ratio

    def reader_isolation(self, consumer: int) -> IsolationLevel:
        """The `isolation.level` of the `consumer`th reader during the run (`workload_rules`)."""
        return reader_isolation(self, consumer)

    def oracle_inputs(self) -> OracleInputs:
        """What the check will judge this run by, in the oracle's own schema."""
        return OracleInputs(
            acks=self.acks,
            replication_factor=self.replication_factor,
            unclean_leader_election=self.unclean_leader_election,
            idempotence=bool(self.idempotence),
            min_insync_replicas=self.min_insync_replicas,
            partitions=self.partitions,
            kafka_version=self.kafka_version,
            topic_config=self.topic_config,
            broker_config=self.broker_config,
            producer_config=self.producer_config,
        )

    def to_json_dict(self) -> dict[str, object]:
        """The run's `config.json`: every setting, with the oracle's inputs written as the oracle reads them
        (`OracleInputs.to_json`), so the run and the check cannot spell them differently."""
        fitted = {} if self._fitted is None else {"fitted": self._fitted}
        return {**self.model_dump(mode="json"), **self.oracle_inputs().to_json(), **fitted}


def load_config(*, for_scenario: bool = False, **values: object) -> RunConfig:
    """Builds a RunConfig, turning pydantic's errors into one ConfigError that names each field and fix.

    With `scenario=NAME`, that named scenario's settings are the defaults `values` override (extra broker
    and topic properties are added to its own), and the run is one a scenario drives. `for_scenario=True`
    is for a run whose faults a crafted scenario drives step by step (`execute(config, scenario=...)`,
    `chaos_run(scenario=...)`): every value is checked as usual, except that the planned faults need not
    fit in `duration`, since such a run plans none. A normal run is always refused when its plan misses a
    requested fault, and `kchaos.nemesis.schedule.plan` refuses to plan for a configuration validated for a
    scenario, so the one cannot pass for the other.
    """
    name = values.get("scenario")
    if isinstance(name, str) and name in SCENARIOS:
        refused = scenario_refusal(name, values, RunConfig.model_fields)
        if refused is not None:
            raise ConfigError(f"invalid configuration:\n  {refused}")
        defaults = {**SCENARIOS[name].settings, "client": scenario_client(name, values)}
        # Extra broker and topic properties add to the scenario's rather than replace them.
        values = {**defaults, **values} | {
            key: {**defaults[key], **values[key]}  # type: ignore[dict-item]
            for key in ("broker_config", "topic_config")
            if key in defaults and isinstance(values.get(key), dict)
        }
    try:
        return RunConfig.model_validate(values, context={FOR_SCENARIO: for_scenario})
    except ValidationError as exc:
        lines = []
        for error in exc.errors():
            if not error["loc"]:  # a check across fields: its message names the fields itself
                lines.append(error["msg"].removeprefix("Value error, "))
            else:
                lines.append(field_error(error, RunConfig.model_fields))
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines)) from None
