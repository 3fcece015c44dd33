"""Where a run's cluster is: one kchaos starts (the default), or one it did not start and reaches only as a
client (`--bootstrap`), with the faults its users apply themselves recorded from their log (`--fault-log`).

The settings are fields of their own, after the others (`kchaos run --help` lists them last), and their
refusals live beside them: a cluster kchaos did not start has the brokers, release and settings it has, so
every flag that would shape a cluster kchaos starts is refused with it, and so are faults, which need the
nodes, unless kchaos is given them over SSH (`--nodes` with the installation's `--kafka-home` and
`--service`: `kchaos.model.node_access`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BeforeValidator, Field, field_validator

from kchaos.model.fault_plan import comma_items, requested_faults
from kchaos.model.run_settings import RunSettings

#: The most bootstrap servers `--bootstrap` takes: a client needs one that answers, and Kafka's own tools
#: are given a handful.
MAX_BOOTSTRAP = 64
#: The flags that shape a cluster kchaos starts, which one it did not start already has, by field.
CLUSTER_SHAPING = (
    "kafka_image",
    "metadata",
    "brokers",
    "spare_brokers",
    "controllers",
    "quorum",
    "spare_controllers",
    "broker_heap",
    "broker_config",
)


def checked_address(text: str) -> str:
    """`text` if it is HOST:PORT with a port from 1 to 65535 (a bracketed IPv6 host too), else ValueError
    naming it and the form."""
    host, _, port = text.rpartition(":")
    if not host or not port.isascii() or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(
            f"{text!r} is not HOST:PORT with a port from 1 to 65535; give the addresses a client bootstraps "
            "from, e.g. --bootstrap 10.0.0.5:9092,10.0.0.6:9092"
        )
    if any(char.isspace() for char in host) or host.strip("[]") == "":
        raise ValueError(f"{text!r} has no host name; give HOST:PORT, e.g. kafka-1.example:9092")
    return text


class ClusterAccessSettings(RunSettings):
    """The settings that say where the cluster is; see the module's text."""

    bootstrap: Annotated[tuple[str, ...], BeforeValidator(comma_items)] = Field(
        (),
        max_length=MAX_BOOTSTRAP,
        description="A cluster kchaos did not start, by the addresses its clients bootstrap from: "
        f"HOST:PORT,... (1 to {MAX_BOOTSTRAP}, ports 1-65535). kchaos creates its topics there (--topic "
        "and the topics derived from it must not exist), writes, reads them back, judges, and deletes "
        "them and the run's groups at the end. Without --nodes (with --kafka-home and --service) it has no "
        "access to the nodes: no faults (--nemesis is none, and refused when given; record your own with "
        "--fault-log), no replica dumps (divergence is not checked); and no flag that shapes a cluster "
        "kchaos starts; --kafka-version names the "
        "release the cluster runs, which the judge's rules follow. Default: none, kchaos starts the cluster.",
    )
    fault_log: Path | None = Field(
        None,
        description="With --bootstrap, a file your own tooling writes while the run goes, one line per "
        "fault start and stop: 'TIME start|stop NAME [kind=KIND] [nodes=ID,...] [WHAT]', TIME in Unix "
        "seconds or ISO 8601 with a zone. kchaos follows it from the start of the run until it heals "
        "and records each line in the history, so the report shows your faults against the timeline "
        "(docs/existing-clusters.md). Its directory must exist.",
    )

    @field_validator("bootstrap")
    @classmethod
    def _addresses(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(checked_address(text) for text in value)

    @field_validator("fault_log")
    @classmethod
    def _fault_log(cls, value: Path | None) -> Path | None:
        if value is not None and not value.parent.is_dir():
            raise ValueError(
                f"{str(value)!r}: its directory {str(value.parent)!r} does not exist; create it, or give a "
                "file in an existing one"
            )
        if value is not None and value.is_dir():
            raise ValueError(f"{str(value)!r} is a directory; give the file your tooling writes its lines to")
        return value


def existing_cluster_refusal(
    settings: ClusterAccessSettings, given: set[str], node_access: bool = False
) -> str | None:
    """Why these settings cannot run against the cluster `--bootstrap` names (or why `--fault-log` needs
    one), with the fix; None when they can. `given`: the fields the user set. With `--bootstrap` and no
    `--nemesis`, the faults are none: kchaos has no node to fault, unless it reaches them over SSH
    (`node_access`: which faults it may apply there is `kchaos.model.node_access`'s to say)."""
    if settings.bootstrap and "nemesis" not in given and not node_access:
        object.__setattr__(settings, "nemesis", ())
    faults = (bool(requested_faults(settings)) or settings.scenario is not None) and not node_access
    if not settings.bootstrap:
        if settings.fault_log is not None:
            return (
                "fault_log: --fault-log records the faults you apply to a cluster kchaos did not start, and "
                "kchaos records its own faults: add --bootstrap HOST:PORT,... or leave --fault-log out"
            )
        return None
    if faults:
        return (
            "nemesis: kchaos applies faults through the nodes, and --bootstrap gives it none to reach: leave "
            "--nemesis out (or give none) and record the faults you apply with your own tooling in "
            "--fault-log FILE, or give kchaos the machines (--nodes with --kafka-home and --service)"
        )
    # An empty mapping is what `kchaos run` passes for a repeatable flag not given.
    shaping = [name for name in CLUSTER_SHAPING if name in given and getattr(settings, name) != {}]
    if shaping:
        flags = ", ".join("--" + name.replace("_", "-") for name in shaping)
        return (
            f"{shaping[0]}: {flags} shape{'s' if len(shaping) == 1 else ''} a cluster kchaos starts, and "
            "--bootstrap names one it did not start, which has the brokers, release and settings it has: "
            f"leave {flags} out"
        )
    return None
