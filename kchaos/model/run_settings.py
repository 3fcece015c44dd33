"""The run configuration's settings: every field of `kchaos run`, its default, bounds and help.

Kept apart from the checks across them (kchaos/model/config.py), which read like rules, not like a flag
list: a newcomer looks up a flag here, and why a combination is refused there.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from kchaos.model.client_names import DEFAULT_CLIENT, Client
from kchaos.model.fault_plan import comma_items
from kchaos.model.fault_spec import FAULT_NAMES
from kchaos.model.fault_table import aims
from kchaos.model.fault_targets import targets_text
from kchaos.model.group_protocol import CLASSIC, GroupProtocol
from kchaos.model.quorum_mode import QuorumMode
from kchaos.model.releases import DEFAULT_KAFKA_VERSION, MetadataMode
from kchaos.model.setting_bounds import (
    MAX_DURATION_S,
    MAX_EXAMPLES,
    MAX_REQUEST_TIMEOUT_MS,
    MAX_TIMEOUT_S,
    MIN_RATE,
)
from kchaos.model.spark_settings import DEFAULT_DRIVER_MEMORY, DEFAULT_SPARK_MASTER
from kchaos.model.txn_on_timeout import TxnOnTimeout
from kchaos.model.workload_names import SENDS, Workload
from kchaos.model.written_topics import MAX_TOPICS

#: A transaction's most records unless told otherwise: with three partitions, most transactions then span
#: several, which is what atomicity across partitions needs to be tested.
DEFAULT_TXN_RECORDS = 4
#: The share of transactions aborted unless told otherwise: enough aborted records that a reader returning
#: one is likely to be seen in a short run, while most records still commit.
DEFAULT_ABORT_RATIO = 0.25


class RunSettings(BaseModel):
    """One chaos run. Every field is a flag of `kchaos run`, its name with dashes for underscores; the
    field's description is the flag's help, and its bounds the range the help shows
    (kchaos/runner/config_options.py makes the flags from these fields, so a default, a bound or a help text
    is written here only).

    A description names a range its field's bounds cannot express: one set by another field (`at most
    --brokers`) or a format (a run id's characters).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str = Field(
        default_factory=lambda: time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3),
        description="Name of the run directory under --runs-dir: 1-100 letters, digits, '.', '_' and '-', "
        "starting with a letter or digit. Default: a timestamp plus a random suffix.",
    )
    runs_dir: Path = Field(Path("runs"), description="Directory the run directory is created in.")

    # Cluster
    kafka_version: str = Field(
        DEFAULT_KAFKA_VERSION,
        description="Kafka release for the locally built image kchaos/kafka:<version>, as "
        "digits.digits.digits, one kchaos knows to build (with --kafka-image, any release: the version "
        "recorded when the image names none).",
    )
    kafka_image: str | None = Field(
        None,
        description="Use this image instead (e.g. apache/kafka:4.1.1) if you have it: "
        "[REGISTRY/]NAME[:TAG][@DIGEST].",
    )
    metadata: MetadataMode = Field(
        None,  # filled in from the release by `_metadata_mode`
        validate_default=True,
        description="Where the cluster keeps its metadata: kraft (every node a broker and a controller; "
        "3.3 and newer) or zookeeper (brokers and one ZooKeeper node; releases before 4.0). Default: "
        "kraft where the release has it, else zookeeper.",
    )
    brokers: int = Field(
        3, ge=1, le=9, description="Kafka nodes (with kraft each is a broker and a controller)."
    )
    spare_brokers: int = Field(
        0,
        ge=0,
        le=3,
        description="Brokers started with the cluster but not in it, for add-broker to add and remove-broker "
        "to replace a drained broker with (numbered after --brokers; with kraft brokers only).",
    )
    controllers: int = Field(
        0,
        ge=0,
        le=5,
        description="Dedicated KRaft controllers, nodes of their own (ids 101, 102, ...) as production "
        "clusters run them; 0: every broker is a controller too (kraft only).",
    )
    quorum: QuorumMode = Field(
        "static",
        description="How the KRaft controller quorum is formed: static (its voters listed in "
        "controller.quorum.voters, as clusters formatted before 3.9 run) or dynamic (KIP-853: formatted with "
        "--initial-controllers, its voters changed while it runs; 3.9 and newer, kraft only). add-voter and "
        "remove-voter make a static quorum dynamic first, which releases from 4.1 can.",
    )
    spare_controllers: int = Field(
        0,
        ge=0,
        le=2,
        description="Controllers started with the cluster but not in its quorum, for add-voter to make "
        "voters (numbered after the --controllers; with --controllers, kraft only).",
    )
    broker_heap: str = Field(
        "256m", description="JVM heap per broker: digits then m or g, from 128m to 64g, e.g. 256m or 1g."
    )
    broker_config: dict[str, str] = Field(
        default_factory=dict,
        description="Extra broker property, e.g. log.flush.interval.messages=1 (repeatable).",
    )

    # Topic
    topic: str = Field(
        "kchaos",
        description="Name of the test topic: 1-200 letters, digits, '.', '_' and '-', not . or .. and not "
        "starting with __ (Kafka's internal topics).",
    )
    partitions: int = Field(3, ge=1, le=64, description="Partitions of each topic.")
    topics: int = Field(
        1,
        ge=1,
        le=MAX_TOPICS,
        description="Topics the producers write (--workload sends or txn): the test topic, then <topic>-1 "
        "...; producer-i writes and consumer-i reads topic i modulo N (i/2 with --isolation mixed, so each "
        "topic is read at both levels), and every check goes by topic.",
    )
    replication_factor: int = Field(
        3, ge=1, description="Replicas of each partition of the test topic; at most --brokers."
    )
    min_insync_replicas: int = Field(
        2, ge=1, description="The topic's min.insync.replicas; at most --replication-factor."
    )
    unclean_leader_election: bool = Field(
        False, description="Let an out-of-sync replica become leader (topic and broker setting)."
    )
    topic_config: dict[str, str] = Field(
        default_factory=dict,
        description="Extra topic config, e.g. flush.messages=1 (repeatable).",
    )

    # Producers
    acks: Literal["all", "1"] = Field(
        "all", description="Producer acks: all (every in-sync replica has the write) or 1 (the leader alone)."
    )
    idempotence: bool | None = Field(
        None,
        description="Idempotent producers; requires --acks all. Default: on for acks=all, off for acks=1.",
    )
    client: Client = Field(
        DEFAULT_CLIENT,
        description="The clients' Kafka client: librdkafka-process (confluent-kafka, each producer, reader, "
        "group member and eos processor a process in a container of its own), java (the release's "
        "kafka-clients, its producers, readers, members and processors processes the same way) or "
        "librdkafka (confluent-kafka threads in the harness).",
    )
    java_client_version: str | None = Field(
        None,
        description="The kafka-clients release of --client java (not given: the cluster's own, so a 0.11 "
        "cluster gets a 0.11 client); another release line from 0.11 to 4.3 mixes them.",
    )
    librdkafka_version: str | None = Field(
        None,
        description="The confluent-kafka release (librdkafka inside it) of --client librdkafka-process, from "
        "2.0.2 (any on PyPI with a wheel for Python 3.11); not given: the one kchaos runs with. Its image is "
        "built once per release.",
    )
    producers: int = Field(2, ge=1, le=32, description="Concurrent producer clients.")
    rate: float = Field(
        200.0,
        ge=0,
        allow_inf_nan=False,
        description=f"Sends per second, all producers together, at least {MIN_RATE}; 0: no limit, as fast "
        "as the cluster takes them.",
    )
    duration: float = Field(
        60.0,
        gt=0,
        le=MAX_DURATION_S,
        allow_inf_nan=False,
        description="Seconds the producers write (longer only when the last fault holds past its plan: "
        "until 5 after it ends); every fault in --nemesis must fit, and the default faults are fitted to "
        "a shorter one (closer together, then the kill of the leader alone, down to 30). Left out, 60 or, "
        "when the faults' first round needs longer, the least that fits.",
    )
    message_timeout_ms: int = Field(
        30000,
        ge=1000,
        le=MAX_TIMEOUT_S * 1000,
        description="Producer delivery timeout; a send unanswered by then is recorded as indeterminate.",
    )
    request_timeout_ms: int = Field(
        5000,
        ge=500,
        le=MAX_REQUEST_TIMEOUT_MS,
        description="Producer request.timeout.ms: how long a broker may wait for the in-sync replicas "
        "before it answers a produce request with a timeout, which the producer retries.",
    )
    producer_config: dict[str, str] = Field(
        default_factory=dict,
        description="Extra producer setting for every producer of the run, of either client, in the Java "
        "client's names (which librdkafka takes too), e.g. linger.ms=50, compression.type=lz4 or "
        "max.in.flight.requests.per.connection=1 (repeatable). Keys with a flag of their own (acks, "
        "enable.idempotence, the timeouts) and keys kchaos owns (bootstrap.servers, client.id, the "
        "serializers, transactional.id) are refused; the client is asked to accept the rest before the "
        "cluster starts.",
    )

    # Consumers reading during the run (the final read happens regardless)
    consumers: int = Field(
        1,
        ge=0,
        le=16,
        description="Clients reading every partition during the run (0: only the final read); with "
        "--workload group, the members of the group.",
    )
    consumer_config: dict[str, str] = Field(
        default_factory=dict,
        description="Extra consumer setting for every reader, group member and eos processor of the run, "
        "of either client (not the final read, which is kchaos's own), e.g. fetch.max.bytes=1048576 or "
        "max.poll.records=100 (repeatable). Keys with a flag of their own (isolation.level, group.protocol, "
        "enable.auto.commit) and keys kchaos owns (bootstrap.servers, client.id, group.id, "
        "auto.offset.reset, the deserializers) are refused; the client is asked to accept the rest before "
        "the cluster starts.",
    )
    workload: Workload = Field(
        SENDS,
        description="sends: producers write, consumers are assigned every partition (no group); group: "
        "producers write, consumers are members of one consumer group that subscribe and commit offsets; "
        "txn: the producers are transactional, each transaction writing 1 to --txn-records records across "
        "partitions and committing, or aborting at --abort-ratio; eos: producers write, and --consumers "
        "processors read them in one group and write each to <topic>-out in transactions that commit the "
        "group's offsets too (consume-transform-produce, as Kafka Streams does).",
    )
    commit: Literal["sync", "auto"] | None = Field(
        None,
        description="How group members commit (--workload group only; sync when not given): sync, after "
        "recording each batch and waiting for the answer; auto, librdkafka's automatic commits every second.",
    )
    group_protocol: GroupProtocol = Field(
        CLASSIC,
        description="The consumer group protocol of the group members and eos processors: classic "
        "(JoinGroup/SyncGroup, every release) or consumer (KIP-848: the coordinator assigns incrementally, "
        "fencing by member epoch; brokers from 4.0 only).",
    )

    txn_records: int | None = Field(
        None,
        ge=1,
        le=64,
        description=f"Most records one transaction writes (--workload txn only; {DEFAULT_TXN_RECORDS} when "
        "not given): each writes a seeded 1 to this many, to consecutive partitions.",
    )
    abort_ratio: float | None = Field(
        None,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description=f"Share of transactions the producers abort instead of committing (--workload txn "
        f"only; {DEFAULT_ABORT_RATIO} when not given), drawn with the seed.",
    )
    txn_polls: int = Field(
        0,
        ge=0,
        le=10,
        description="Read-write transactions (--workload txn, --client librdkafka): each transaction polls "
        "its topic 0 to this many times, seeded, between its sends, at read_committed; 0: write only.",
    )
    txn_polls_via: Literal["assign", "subscribe"] = Field(
        "assign",
        description="How a read-write transaction's consumer gets its partitions (--txn-polls only), as "
        "Jepsen's Kafka workload's: assign, every partition by hand; subscribe, from a group of its own "
        "(one member, so every partition), through the group coordinator's rebalances. Either way it reads "
        "on from where the process got to, not from the group's committed offsets.",
    )
    txn_on_timeout: TxnOnTimeout | None = Field(
        None,
        description="What a transactional application does when its commit times out (--workload txn or "
        "eos only; retry when not given): retry, ask to commit again, 3 times in all; wait, ask again "
        "until it is answered, 13 times (130 s), as an application with no commit timeout of its own does; "
        "restart, close the producer and start a new one with the same transactional.id (its "
        "init fences the old one), then go on with the next transaction; abort is refused, as neither "
        "client allows it after a timed-out commit.",
    )
    isolation: Literal["read_committed", "read_uncommitted", "mixed"] | None = Field(
        None,
        description="The isolation.level of the consumers reading during the run: read_committed (no "
        "record of an aborted or open transaction), read_uncommitted, or mixed (even-numbered consumers "
        "read_committed, odd ones read_uncommitted; two readers or more). Default: mixed for --workload "
        "txn, which then starts 2 readers unless --consumers is given (with --consumers 1, read_committed), "
        "else read_committed. The final read is always read_committed.",
    )

    # Nemesis
    nemesis: tuple[str, ...] = Field(
        ("kill:target=leader", "isolate:target=leader"),
        description="Comma-separated faults, each NAME[:OPTION=VALUE]... (e.g. pause:target=controller); "
        f"names: {', '.join(FAULT_NAMES)}; targets: {targets_text(aims())}; "
        "'none' for no faults; or mix:kinds=NAME,NAME,... alone, faults of those names with targets drawn "
        "with the seed (`kchaos faults`). See docs/faults.md for every fault's options.",
    )
    schedule: Literal["fixed", "random"] = Field(
        "fixed",
        description=(
            "fixed: the faults in turn, in a seeded order; random: every fault once, then each drawn with "
            "the seed."
        ),
    )
    scenario: str | None = Field(
        None,
        description="A named scenario (`kchaos scenario list`) that drives its faults step by step instead "
        "of --nemesis; its settings are the defaults, and flags given override them, except the ones it "
        "does not use (--nemesis, --schedule, --fault-duration[-max], --fault-interval[-max], "
        "--fault-overlap) and --replication-factor, which its steps are built on.",
    )
    fault_partition: int = Field(
        0, ge=0, description="Partition whose leader the faults target; below --partitions."
    )
    fault_duration: float = Field(
        15.0, ge=1, le=MAX_TIMEOUT_S, allow_inf_nan=False, description="Seconds each fault is held."
    )
    fault_duration_max: float | None = Field(
        None,
        ge=1,
        le=MAX_TIMEOUT_S,
        allow_inf_nan=False,
        description="With it, each fault holds a seeded random time between --fault-duration and this; "
        "at least --fault-duration.",
    )
    fault_interval: float = Field(
        10.0, ge=0, le=MAX_TIMEOUT_S, allow_inf_nan=False, description="Quiet seconds before each fault."
    )
    fault_interval_max: float | None = Field(
        None,
        ge=0,
        le=MAX_TIMEOUT_S,
        allow_inf_nan=False,
        description="With it, each quiet period is a seeded random time between --fault-interval and "
        "this; at least --fault-interval.",
    )
    fault_overlap: float = Field(
        0.0,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="The chance, drawn from the seed for each fault after the first round, that it starts "
        "while the one before it holds, if both may (`kchaos faults` says which), on nodes and clients no "
        "fault in force holds; 0: one fault at a time.",
    )
    seed: int = Field(0, description="Seeds the fault order; same seed, same schedule.")
    without: Annotated[tuple[str, ...], BeforeValidator(comma_items)] = Field(
        (),
        description="Comma-separated keys of planned faults (kill#2,pause#5, as schedule.json names them) "
        "left out of the plan; the others keep their times. `kchaos hunt --shrink` replays a run so.",
    )

    # After the workload
    recovery_timeout: float = Field(
        180.0,
        gt=0,
        le=MAX_TIMEOUT_S,
        allow_inf_nan=False,
        description="Seconds to wait after healing for every partition to be led and fully in sync.",
    )
    final_read_timeout: float = Field(
        120.0,
        gt=0,
        le=MAX_TIMEOUT_S,
        allow_inf_nan=False,
        description="Seconds the final read may take to read every partition to its end, else the run "
        "stops there.",
    )

    # Checking
    spark_master: str = Field(
        DEFAULT_SPARK_MASTER,
        description="Spark master the check and the report run on: local, local[N], local[*], local[N,F], "
        "spark://HOST:PORT, yarn, k8s://... or mesos://....",
    )
    spark_remote: str | None = Field(
        None,
        description="Spark Connect server the check and the report run on instead of --spark-master: "
        "sc://HOST:PORT, e.g. the one `kchaos spark-server` keeps warm on this machine (no JVM starts per "
        "check). The server reads the run directory itself, so it must see it at the same path.",
    )
    spark_driver_memory: str = Field(
        DEFAULT_DRIVER_MEMORY,
        description="Heap of the Spark driver JVM a check starts in this process: digits then m or g, e.g. "
        "512m or 8g. 1g checks a few million history rows; beyond that the sorts spill to disk, slower but "
        "still correct. A Spark Connect server's JVM, or spark-submit's, keeps its own.",
    )
    max_examples: int = Field(
        10,
        ge=1,
        le=MAX_EXAMPLES,
        description="Examples of each anomaly kept in results.json and the report.",
    )
