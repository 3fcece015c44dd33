"""The run configuration: everything a run depends on, validated before any container starts.

A mistake found after three brokers have booted costs a minute; found here it costs nothing, and the
error names the field and how to fix it.
"""

from __future__ import annotations

import math
import re
import secrets
import time
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from harness.fault_plan import Shortfall, shortfall
from harness.fault_spec import SpecError, check_cluster, parse_spec

DEFAULT_KAFKA_VERSION = "4.3.1"

#: A Kafka release as Maven Central and the image tags name it: 4.3.1, or an old four-part 0.10.2.1.
KAFKA_VERSION = re.compile(r"[0-9]+(\.[0-9]+){2,}")
#: A run id names a directory under --runs-dir and is part of container and network names: no path
#: separators, no leading dot (no `..`, no hidden directory) or dash (read as an option by every shell
#: tool), nothing Docker would refuse in a name.
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
#: The master URLs Spark accepts (local mode with threads and max failures, standalone, YARN, Kubernetes,
#: Mesos); anything else fails only when the check starts, after the whole run.
SPARK_MASTER = re.compile(
    r"local(\[(\*|[1-9][0-9]*)(,[1-9][0-9]*)?\])?"
    r"|spark://[^\s/:,]+:[0-9]+(,[^\s/:,]+:[0-9]+)*"
    r"|yarn|k8s://\S+|mesos://\S+"
)
#: The validation context key that marks a configuration for a crafted scenario (see `load_config`).
FOR_SCENARIO = "for_scenario"


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the field and the fix."""


def check_kafka_version(value: str) -> str:
    """`value` if it looks like a Kafka release, else a ValueError saying what one looks like.

    Checked even with `--kafka-image`: the version is then what the run records when the image's labels
    and tag name none, and a typo would mislabel every report of the run.
    """
    if not KAFKA_VERSION.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a Kafka release; give one as digits.digits.digits, "
            f"e.g. {DEFAULT_KAFKA_VERSION}"
        )
    return value


class RunConfig(BaseModel):
    """One chaos run. Field names are the CLI flags with dashes turned into underscores."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str = Field(default_factory=lambda: time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3))
    runs_dir: Path = Path("runs")

    # Cluster
    kafka_version: str = DEFAULT_KAFKA_VERSION
    kafka_image: str | None = None
    brokers: int = Field(3, ge=1, le=9)
    broker_heap: str = "256m"
    broker_config: dict[str, str] = Field(default_factory=dict)

    # Topic
    topic: str = "kchaos"
    partitions: int = Field(3, ge=1, le=64)
    replication_factor: int = Field(3, ge=1)
    min_insync_replicas: int = Field(2, ge=1)
    unclean_leader_election: bool = False

    # Producers
    acks: Literal["all", "1"] = "all"
    idempotence: bool | None = None
    producers: int = Field(2, ge=1, le=32)
    rate: float = Field(200.0, gt=0, le=20000, description="sends per second, all producers together")
    duration: float = Field(60.0, gt=0, description="seconds the producers write")
    message_timeout_ms: int = Field(30000, ge=1000)
    request_timeout_ms: int = Field(5000, ge=500)

    # Consumers reading during the run (the final read happens regardless)
    consumers: int = Field(1, ge=0, le=16)

    # Nemesis
    nemesis: tuple[str, ...] = ("kill-leader", "isolate-leader")
    schedule: Literal["fixed", "random"] = "fixed"
    fault_partition: int = Field(0, ge=0)
    fault_duration: float = Field(15.0, gt=0)
    fault_duration_max: float | None = Field(None, gt=0)
    fault_interval: float = Field(10.0, ge=0, description="quiet seconds before each fault")
    fault_interval_max: float | None = Field(None, ge=0)
    seed: int = 0

    # After the workload
    recovery_timeout: float = Field(180.0, gt=0)
    final_read_timeout: float = Field(120.0, gt=0)

    # Checking
    spark_master: str = "local[2]"
    max_examples: int = Field(10, ge=1)

    #: Validated for a crafted scenario (`load_config(for_scenario=True)`): its plan may hold no fault.
    _for_scenario: bool = PrivateAttr(default=False)

    @field_validator("run_id")
    @classmethod
    def _run_id(cls, value: str) -> str:
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

    @field_validator("spark_master")
    @classmethod
    def _spark_master(cls, value: str) -> str:
        if not SPARK_MASTER.fullmatch(value):
            raise ValueError(
                f"{value!r} is not a Spark master URL; use local, local[N], local[*], local[N,F], "
                "spark://HOST:PORT, yarn, k8s://... or mesos://..., e.g. local[2]"
            )
        return value

    @field_validator("acks", mode="before")
    @classmethod
    def _acks_text(cls, value: object) -> object:
        return str(value).lower() if value is not None else value

    @field_validator("nemesis", mode="before")
    @classmethod
    def _split_nemesis(cls, value: object) -> object:
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip() and part.strip() != "none"]
        return value

    @field_validator("nemesis")
    @classmethod
    def _known_faults(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for text in value:
            try:
                parse_spec(text)
            except SpecError as exc:
                raise ValueError(str(exc)) from None
        return value

    @field_validator("topic")
    @classmethod
    def _topic_name(cls, value: str) -> str:
        allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        if not value or len(value) > 200 or not set(value) <= allowed:
            raise ValueError("use 1-200 characters from letters, digits, '.', '_' and '-'")
        return value

    @field_validator("broker_heap")
    @classmethod
    def _heap(cls, value: str) -> str:
        if not value[:-1].isdigit() or value[-1].lower() not in "mg":
            raise ValueError("give a JVM size such as 256m or 1g")
        return value

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> RunConfig:
        if self.replication_factor > self.brokers:
            raise ValueError(
                f"replication_factor ({self.replication_factor}) exceeds brokers ({self.brokers}); "
                "lower --replication-factor or raise --brokers"
            )
        if self.min_insync_replicas > self.replication_factor:
            raise ValueError(
                f"min_insync_replicas ({self.min_insync_replicas}) exceeds replication_factor "
                f"({self.replication_factor}): every acks=all write would fail; lower --min-insync-replicas"
            )
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
        if self.idempotence and self.acks != "all":
            raise ValueError(
                "idempotence requires acks=all (Kafka refuses it otherwise); "
                "use --acks all or --no-idempotence"
            )
        if self.idempotence is None:
            # Kafka's producer default since 3.0: idempotent exactly when acks=all.
            object.__setattr__(self, "idempotence", self.acks == "all")
        for text in self.nemesis:
            try:
                check_cluster(parse_spec(text), self.brokers, self.replication_factor)
            except SpecError as exc:
                raise ValueError(f"nemesis: {exc}") from None
        if info.context and info.context.get(FOR_SCENARIO):
            # A crafted scenario drives its own faults; the plan (and so its fit) is not used.
            self._for_scenario = True
        else:
            missing = shortfall(self)
            if missing is not None:
                raise ValueError(refusal(self, missing))
        return self

    @property
    def for_scenario(self) -> bool:
        """Validated for a crafted scenario: the plan was not required to fit (see `load_config`)."""
        return self._for_scenario

    @property
    def run_dir(self) -> Path:
        return self.runs_dir / self.run_id

    def to_json_dict(self) -> dict[str, object]:
        return self.model_dump(mode="json")


def refusal(config: RunConfig, missing: Shortfall) -> str:
    """Why a run that asks for faults would not run them all, and the least `--duration` that would.

    Asking for faults and getting none (or not every one) must never pass silently as an `ok` run.
    """
    first = missing.requested == 1
    quiet = "first quiet period" if first else f"{missing.requested} quiet periods"
    faults = "fault" if first else f"{missing.requested} faults"
    flags = [
        flag + (f"/{flag}-max" if high is not None else "")
        for flag, high in (
            ("--fault-interval", config.fault_interval_max),
            ("--fault-duration", config.fault_duration_max),
        )
    ]
    fewer = "" if first else ", or request fewer faults in --nemesis"
    return (
        f"nemesis: {missing.planned} of {missing.requested} requested faults fit in --duration "
        f"{_seconds(config.duration)} ({quiet} {_seconds(missing.quiet_s)}s + {faults} "
        f"{_seconds(missing.faults_s)}s + tail {_seconds(missing.tail_s)}s after the last fault); use "
        f"--duration {math.ceil(missing.needed_s)} or more, or shorten {' or '.join(flags)}{fewer}"
    )


def _seconds(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".")


def load_config(*, for_scenario: bool = False, **values: object) -> RunConfig:
    """Builds a RunConfig, turning pydantic's errors into one ConfigError that names each field and fix.

    `for_scenario=True` is for a run whose faults a crafted scenario drives step by step
    (`execute(config, scenario=...)`, `chaos_run(scenario=...)`): every value is checked as usual, except
    that the planned faults need not fit in `duration`, since such a run plans none. A normal run is
    always refused when its plan misses a requested fault, and `nemesis.schedule.plan` refuses to plan
    for a configuration validated for a scenario, so the one cannot pass for the other.
    """
    try:
        return RunConfig.model_validate(values, context={FOR_SCENARIO: for_scenario})
    except ValidationError as exc:
        lines = []
        for error in exc.errors():
            message = error["msg"].removeprefix("Value error, ")
            if not error["loc"]:  # a check across fields: its message names the fields itself
                lines.append(message)
                continue
            field = ".".join(str(part) for part in error["loc"])
            lines.append(f"{field} (--{field.replace('_', '-')}): {message}")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines)) from None
