"""What `--broker-config` and `--topic-config` may set: the rules a property must meet before any container
starts, so that a cluster never boots with a setting that breaks the harness or the oracle's reading.

A property is refused when
- its value holds a control character: a newline in a broker property wrote a second line into
  `server.properties`, a setting the key checks never saw, and `config.json` recorded the mangled value;
- its key cannot travel to the broker (`PROPERTY_KEY`: the image's `KAFKA_*` contract), or is no topic
  config Kafka knows (`TOPIC_KEYS`; Kafka refuses it only when the topic is created, after the cluster
  started), or is a broker property misspelled or unknown to the chosen release
  (`kchaos.model.broker_property_names`: the broker would ignore it without a word);
- kchaos sets it itself (`HARNESS_BROKER_KEYS`: a node's id, roles, listeners, quorum, data directories),
  or a flag of its own does (`BROKER_FLAGS`, `TOPIC_FLAGS`: the oracle reads the flag);
- it makes Kafka delete records on purpose (`removal_refusal`): the oracle counts every acknowledged record
  missing from the final read as lost, so a retention or compaction that removed them would be reported as
  a violation that no fault caused.

Pure (no Docker, no Kafka): the configuration calls these as it validates, and the harness reads
`PROPERTY_KEY` to name the environment variable a property travels in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kchaos.model.broker_property_names import broker_name_refusal
from kchaos.model.fault_options import is_whole_number

#: A broker property name the image's environment contract can carry there and back: lower case, and no
#: two of '.', '_', '-' in a row ("a_.b" and "a._b" would both arrive as "a-b").
PROPERTY_KEY = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*")

#: Every topic config any release kchaos runs knows: the union of `TopicConfig`'s names in kafka-clients
#: 3.9.2 and 4.3.1 (read from the jars with javap) and the two throttled-replica lists Kafka's LogConfig
#: adds. Kafka refuses another at topic creation ("Unknown topic config name"), once the cluster is up.
TOPIC_KEYS = frozenset(
    {
        "cleanup.policy", "compression.gzip.level", "compression.lz4.level", "compression.type",
        "compression.zstd.level", "delete.retention.ms", "file.delete.delay.ms", "flush.messages",
        "flush.ms", "follower.replication.throttled.replicas", "index.interval.bytes",
        "leader.replication.throttled.replicas", "local.retention.bytes", "local.retention.ms",
        "max.compaction.lag.ms", "max.message.bytes", "message.downconversion.enable",
        "message.format.version", "message.timestamp.after.max.ms", "message.timestamp.before.max.ms",
        "message.timestamp.difference.max.ms", "message.timestamp.type", "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms", "min.insync.replicas", "preallocate", "remote.log.copy.disable",
        "remote.log.delete.on.disable", "remote.storage.enable", "retention.bytes", "retention.ms",
        "segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms",
        "unclean.leader.election.enable",
    }
)  # fmt: skip

#: Topic settings that have their own flag (read back by the oracle), so `--topic-config` may not set them.
TOPIC_FLAGS = {
    "min.insync.replicas": "--min-insync-replicas",
    "unclean.leader.election.enable": "--unclean-leader-election",
}
#: Broker settings that have their own flag, which the oracle reads.
BROKER_FLAGS = {"unclean.leader.election.enable": "--unclean-leader-election"}

_LISTENERS = "where the nodes listen, which the clients, the harness and the network faults rely on"
_DATA = "where each node keeps its data, which the dumps and the disk and power faults read"
_QUORUM = "the KRaft quorum, from --controllers and --quorum"
#: Broker properties the harness writes for each node (`kchaos.harness.node_env`, the image's entrypoint),
#: and what they hold: a `--broker-config` of one overrode the harness and left a cluster it does not know.
HARNESS_BROKER_KEYS = {
    "node.id": "each node's id, by which the faults and the history name it",
    "broker.id": "each node's id, by which the faults and the history name it",
    "process.roles": "each node's roles, from --brokers and --controllers",
    "controller.quorum.voters": _QUORUM,
    "controller.quorum.bootstrap.servers": _QUORUM,
    "controller.listener.names": _LISTENERS,
    "listeners": _LISTENERS,
    "advertised.listeners": _LISTENERS,
    "listener.security.protocol.map": _LISTENERS,
    "inter.broker.listener.name": _LISTENERS,
    "zookeeper.connect": "the ZooKeeper node of --metadata zookeeper",
    "log.dirs": _DATA,
    "log.dir": _DATA,
    "metadata.log.dir": _DATA,
}

#: The least time retention kchaos accepts: Kafka's default (168 hours). A run writes for at most a day
#: and a clock fault jumps a broker's clock by up to a day, so a shorter retention could delete records of
#: the run itself.
RETENTION_FLOOR_MS = 7 * 24 * 3600 * 1000
#: Time retention settings and their unit in milliseconds; -1 keeps records forever (and -2, for the local
#: tier, defers to the whole log's retention).
_TIME_RETENTION = {
    "retention.ms": 1, "local.retention.ms": 1, "log.retention.ms": 1, "log.local.retention.ms": 1,
    "log.retention.minutes": 60_000, "log.retention.hours": 3_600_000,
    "offsets.retention.minutes": 60_000,
}  # fmt: skip
#: Size retention settings: any size other than -1 (unbounded) or -2 (the local tier's: as the whole log)
#: deletes the oldest records once the partition grows past it.
_SIZE_RETENTION = (
    "retention.bytes", "local.retention.bytes", "log.retention.bytes", "log.local.retention.bytes",
)  # fmt: skip
#: Compaction: keeps only the last record of each key (and drops tombstones after delete.retention.ms).
_POLICIES = ("cleanup.policy", "log.cleanup.policy")
#: Settings that act on compacted topics only, which kchaos refuses.
_COMPACTION_ONLY = ("delete.retention.ms", "log.cleaner.delete.retention.ms")

_REMOVES = "deletes records on purpose, and kchaos would count the records Kafka deleted as lost writes"


def checked_topic_name(name: str) -> str:
    """`name` if Kafka takes it for the run's test topic, else ValueError with the fix: Kafka refuses `.`
    and `..` only when the topic is created, after the cluster started, and a name starting with `__` is
    one of its own internal topics (`__consumer_offsets`), which a run must not write to."""
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
    if not name or len(name) > 200 or not set(name) <= allowed:
        raise ValueError("use 1-200 characters from letters, digits, '.', '_' and '-'")
    if name in (".", ".."):
        raise ValueError(f"{name!r} is no topic name Kafka takes; name the topic, e.g. kchaos")
    if name.startswith("__"):
        raise ValueError(
            f"{name!r}: a name starting with __ is Kafka's own (__consumer_offsets, __transaction_state); "
            "name a topic of the run's own, e.g. kchaos"
        )
    return name


def removal_refusal(key: str, value: str) -> str | None:
    """Why `key=value` makes Kafka delete records of a run by design, and the fix; None when it does not."""
    if key in _TIME_RETENTION:
        unit = _TIME_RETENTION[key]
        floor = RETENTION_FLOOR_MS // unit
        number = value.removeprefix("-")
        if not is_whole_number(number):
            return f"{key}={value!r}: give a whole number (-1 keeps records forever)"
        forever = () if key == "offsets.retention.minutes" else (-1, -2) if "local." in key else (-1,)
        if int(value) < floor and int(value) not in forever:
            keep = "-1 or at least" if forever else "at least"
            return (
                f"{key}={value} {_REMOVES}; remove the setting, or give {keep} {floor} (7 days: a run "
                "lasts at most a day, and a clock fault moves a broker's clock by up to a day)"
            )
    elif key in _SIZE_RETENTION:
        if value.strip() not in ("-1", "-2"):
            return f"{key}={value} {_REMOVES}; remove the setting (or give -1, no size limit)"
    elif key in _POLICIES:
        if "compact" in value:
            return (
                f"{key}={value}: compaction keeps only the last record of each key, so it {_REMOVES}; "
                "remove the setting (kchaos runs delete-policy topics)"
            )
    elif key in _COMPACTION_ONLY:
        return f"{key} holds a compacted topic's tombstones, and compaction {_REMOVES}; remove the setting"
    return None


def checked_properties(
    properties: Mapping[str, str], *, broker: bool, version: str | None = None
) -> dict[str, str]:
    """`properties` if each may be set as a broker property (`broker`) of Kafka `version` (None: not known)
    or as a topic config, else ValueError naming the first that may not, why, and the fix."""
    flags = BROKER_FLAGS if broker else TOPIC_FLAGS
    for key, value in properties.items():
        if any(not character.isprintable() for character in value):
            raise ValueError(
                f"{key}: the value {value!r} holds a control character (a newline would write a second "
                "property line); give the value on its own"
            )
        if broker and not PROPERTY_KEY.fullmatch(key):
            raise ValueError(
                f"{key!r} is no broker property kchaos can pass on: write it in lower case, with no two of "
                "'.', '_', '-' in a row, as Kafka names them (e.g. log.flush.interval.messages)"
            )
        if not broker and key not in TOPIC_KEYS:
            raise ValueError(
                f"{key!r} is no topic config Kafka knows (Kafka would refuse it only after the cluster "
                "started); check its spelling, in lower case as Kafka's docs name them (e.g. flush.messages)"
            )
        if key in flags:
            raise ValueError(f"{key} is set by {flags[key]}; use that flag instead")
        if broker and key in HARNESS_BROKER_KEYS:
            raise ValueError(
                f"{key} is set by kchaos itself ({HARNESS_BROKER_KEYS[key]}); remove it from --broker-config"
            )
        refused = broker_name_refusal(key, version) if broker else None
        if refused is not None:
            raise ValueError(refused)
        refused = removal_refusal(key, value)
        if refused is not None:
            raise ValueError(refused)
    return dict(properties)
