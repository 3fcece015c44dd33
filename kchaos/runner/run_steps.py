"""The steps of one chaos run, in the order `kchaos.runner.run._chaos` takes them, as kafkatest's test body
reads: start the cluster, write under faults, heal, await recovery, read back and dump the replicas, and
the cleanup every exit goes through. Each step records its phase done (`kchaos.model.phase_record`), then
acts on a stop request that arrived meanwhile; the judging is the caller's (`kchaos.runner.run.execute`).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kchaos.harness import ssh_leftovers
from kchaos.harness.existing_cluster import NO_NODE_ACCESS, ExistingCluster
from kchaos.harness.image import ResolvedImage
from kchaos.harness.leaders import LeaderWatcher
from kchaos.harness.replicas import dump_replicas
from kchaos.harness.service_cluster import ServiceCluster
from kchaos.harness.ssh_cluster import SshCluster
from kchaos.harness.watchdog import guard
from kchaos.model import phase_record as run_phases
from kchaos.model import progress as phases
from kchaos.model.broker_property_names import broker_config_warnings
from kchaos.model.client_names import JAVA
from kchaos.model.config import RunConfig
from kchaos.model.corruption import readers_check_crcs
from kchaos.model.history import HistoryWriter
from kchaos.model.phase_record import PhaseRecorder
from kchaos.model.plurals import counted, plural
from kchaos.model.progress import Milestone, RunProgress
from kchaos.model.run_files import RunDir
from kchaos.model.topic_assignment import write_assignment
from kchaos.model.waiting import WaitTimeout
from kchaos.model.workload_names import TXN
from kchaos.model.written_topics import made_topics
from kchaos.nemesis.fault_log import FaultLog
from kchaos.nemesis.requests import RequestRows
from kchaos.nemesis.schedule import Nemesis, PlannedFault, Scenario, plan, write_plan
from kchaos.runner.replay import Replay
from kchaos.runner.run_cluster import (
    RunCluster,
    needs_request_proxies,
    remove_cluster,
    run_cluster,
    run_image,
)
from kchaos.runner.stop_request import StopRequest
from kchaos.runner.warm_check import WarmCheck
from kchaos.workloads.final_read import final_read
from kchaos.workloads.roles import Processors, Readers, Writer
from kchaos.workloads.table import Setting, client_release, workload_row
from kchaos.workloads.table import client_image as built_client_image

#: The run's own logger, whichever module of it writes: `bench/run_end.py` times a run's end by its lines
#: (`replicas dumped`).
log = logging.getLogger("kchaos.runner.run")

Progress = Callable[[str], None]

#: How far past its duration a run may go while the nemesis waits for Kafka to react and heal.
NEMESIS_OVERRUN_LIMIT = 600.0
#: The least time producers write after the last fault when it ended past its plan (`wait_for_workload`).
AFTER_END_S = 5.0
#: Longest `--workload eos`'s processors may take, once the producers stopped, to commit every input
#: record; past it the run goes on, and the inputs left unprocessed are above the group's committed offset.
CATCH_UP_TIMEOUT = 60.0


@dataclass
class ChaosRun:
    """One run's cluster, clients, faults and records, as its steps build them and its cleanup ends them."""

    config: RunConfig
    run_dir: Path
    progress: Progress
    scenario: Scenario | None
    status: RunProgress
    stop_request: StopRequest
    image: ResolvedImage
    #: The Java client's release: `--java-client-version`, else the cluster's own (a 0.11 cluster gets a
    #: 0.11 client).
    java_version: str
    client_image: str | None
    planned: list[PlannedFault]
    history: HistoryWriter
    #: The cluster kchaos starts, or the one `--bootstrap` names, which it did not start.
    cluster: RunCluster
    record: PhaseRecorder
    removal: threading.Thread
    #: kchaos's own faults, or on a cluster it did not start the user's, from their `--fault-log`.
    nemesis: Nemesis | FaultLog | None = None
    workload: Writer | None = None
    readers: Readers | None = None
    leaders: LeaderWatcher | None = None
    #: The topics the run writes and checks (`topics`).
    topics: list[str] = field(default_factory=list)
    #: In a replay, what it takes from the run it replays: its topics' placement, its faults' nodes.
    replay: Replay | None = None

    @classmethod
    def prepare(
        cls,
        config: RunConfig,
        run_dir: Path,
        progress: Progress,
        scenario: Scenario | None,
        status: RunProgress,
        stop: StopRequest,
        replay: Replay | None = None,
    ) -> ChaosRun:
        """Resolves the images (the client's built before any container starts, so a failed build costs no
        cluster), writes the resolved configuration and the fault plan, and opens the history."""
        image = run_image(config)
        java_version = config.java_client_version or image.kafka_version
        release = client_release(config, image.kafka_version)
        client_image = built_client_image(config.client, release)
        planned = plan(config) if scenario is None else []
        # A cluster kchaos did not start ran no image of its (`bootstrap` says which cluster it was).
        resolved = {**config.to_json_dict(), "kafka_image": image.ref or None,
                    "kafka_version": image.kafka_version, "image_id": image.image_id or None,
                    "client_image": client_image,
                    "java_client_version": java_version if config.client == JAVA else None,
                    "librdkafka_version": None if config.client == JAVA else release,
                    "readers_check_crcs": readers_check_crcs(config.client),
                    "started_at": time.time(),
                    **({"replay_of": str(replay.source)} if replay is not None else {})}  # fmt: skip
        files = RunDir(run_dir)
        files.config.write_text(json.dumps(resolved, indent=2) + "\n")
        write_plan(planned, files.schedule)
        history = HistoryWriter(files, config.run_id)
        status.counts = history
        # The request proxies must be on the nodes' networks before the first connection; only a run that
        # plans a request fault, or a request attack, gets them, and pays for them.
        requests = RequestRows(history) if needs_request_proxies(planned, scenario) else None
        cluster = run_cluster(config, image, files.logs, requests)
        removal = threading.Thread(target=remove_cluster, args=(cluster,), name="cluster-removal")
        return cls(
            config, run_dir, progress, scenario, status, stop, image, java_version, client_image, planned,
            history, cluster, PhaseRecorder(history), removal, topics=topics(config), replay=replay,
        )  # fmt: skip

    def completed(self, phase: str) -> None:
        """Records a phase done, then delivers a stop request that arrived meanwhile and was swallowed."""
        self.record.completed_phase(phase)
        self.stop_request.act()

    def start_cluster(self) -> None:
        """Starts the cluster and creates the run's topics, then watches their leaders from before the
        first write until the history closes: failovers and healing both show."""
        config, image = self.config, self.image
        self.status.enter(phases.CLUSTER_UP)
        if isinstance(self.cluster, ExistingCluster | ServiceCluster):
            reached = f"{self.cluster.client_bootstrap} (Kafka {image.kafka_version}, as told)"
            self.progress(f"reaching the cluster at {reached}")
            self.cluster.start()
            self.progress(f"its brokers: {', '.join(map(str, sorted(self.cluster.nodes)))}")
            self.cluster.refuse_existing(self.topics)
        else:
            zookeeper = " and a ZooKeeper node" if config.metadata == "zookeeper" else ""
            nodes = counted(config.brokers, f"Kafka {image.kafka_version} node")
            for warning in broker_config_warnings(config.broker_config, image.kafka_version):
                self.progress(Milestone(warning))
            self.progress(f"starting {nodes}{zookeeper} ({image.ref})")
            self.cluster.start()
        placed = self.replay.assignment if self.replay is not None else {}
        for topic in self.topics:
            self.cluster.create_topic(
                topic, config.partitions, config.replication_factor, config.min_insync_replicas,
                config.unclean_leader_election, topic_config=config.topic_config,
                replica_assignment=placed.get(topic),
            )  # fmt: skip
        # Where Kafka put the replicas (the preferred leader first), for a replay to put them there again.
        write_assignment(
            RunDir(self.run_dir).assignment, {t: self.cluster.replica_assignment(t) for t in self.topics}
        )
        self.completed(run_phases.CLUSTER_UP)
        self.leaders = LeaderWatcher(self.cluster.bootstrap, config.topic, self.history)
        self.leaders.start()

    def write_under_faults(self, warm: WarmCheck | None) -> None:
        """Builds the client's writers and readers (its row of `kchaos.workloads.table`) and the nemesis,
        writes for the run's duration while the faults come and go, then stops the writers and, once eos
        processors caught up, the readers."""
        config = self.config
        row = workload_row(config.client, config.workload)
        setting = Setting(
            config, self.cluster, self.history, self.client_image, self.java_version, self.image.kafka_version
        )
        self.workload = workload = row.writer(setting)
        self.readers = readers = row.readers(setting)
        nemesis: Nemesis | FaultLog
        if isinstance(self.cluster, ExistingCluster):
            nemesis = FaultLog(config.fault_log, self.history, self.progress)
        else:
            nemesis = Nemesis(
                self.cluster, self.history, config.topic, config.fault_partition, self.planned,
                seed=config.seed, heal_timeout=config.recovery_timeout, readers=readers,
                workload=config.workload, pins=self.replay.pins if self.replay is not None else None,
            )  # fmt: skip
        self.nemesis = nemesis
        self.status.faults = nemesis
        faults = (
            f"the scenario {config.scenario}"
            if config.scenario
            else "a crafted fault scenario"
            if self.scenario
            else f"the faults {config.fault_log} records"
            if config.fault_log
            else planned_faults(self.planned, config.fitted)
        )
        self.progress(
            Milestone(
                f"writing for {config.duration:.0f}s (acks={config.acks}, {config.producers} "
                f"{'transactional ' if config.workload == TXN else ''}{config.client} "
                f"{plural(config.producers, 'producer')}, "
                f"{f'{config.rate:.0f}/s' if config.rate else 'unlimited rate'}) with {faults}"
            )
        )
        self.status.enter(phases.WORKLOAD, config.duration, bounded=False)
        readers.start()
        workload.start()
        nemesis.start(self.scenario, name=config.scenario or "crafted")
        if warm is not None:
            warm.start()  # while the run writes, not while its cluster starts: both take the cores
        wrote = wait_for_workload(config, nemesis)
        workload.stop()
        if wrote > config.duration + 1:
            self.progress(Milestone(f"wrote for {wrote:.0f}s: {wrote - config.duration:.0f}s longer, {LATE}"))
        self.workload = None
        if isinstance(readers, Processors):
            self.progress(
                f"waiting up to {CATCH_UP_TIMEOUT:.0f}s for the processors to commit every input record"
            )
            left = readers.wait_caught_up(CATCH_UP_TIMEOUT)
            if left:
                self.progress(
                    Milestone(f"the processors did not catch up; records left by partition: {left}")
                )
        readers.stop()
        self.readers = None
        self.completed(run_phases.WORKLOAD)

    def heal(self) -> None:
        """Ends every fault (the nemesis's heal), raising what the nemesis failed with."""
        assert self.nemesis is not None
        self.status.enter(phases.HEALING, self.config.recovery_timeout)
        self.nemesis.stop()
        if self.nemesis.error is not None:
            raise self.nemesis.error
        self.completed(run_phases.HEAL)

    def await_recovery(self) -> None:
        """Waits for every partition of every topic to be led and in sync, so the dumps compare replicas at
        rest. A cluster that never recovers is a finding, not a harness failure: the final read and the
        dumps still record what there is, and the check judges only what needs no recovery."""
        timeout = self.config.recovery_timeout
        self.progress(f"healed; waiting up to {timeout:.0f}s for every partition to be led and in sync")
        try:
            deadline = time.monotonic() + timeout
            for topic in self.topics:
                self.cluster.metadata.await_recovery(
                    topic, max(0.0, deadline - time.monotonic()),
                    f"recovery of {topic}: all brokers registered, every partition led, ISR complete",
                )  # fmt: skip
            self.completed(run_phases.RECOVERY)
        except WaitTimeout as exc:
            self.record.stopped(self.status.shown_phase(), exc)
            self.progress(Milestone(f"not recovered within {timeout:.0f}s ({exc}); reading what there is"))

    def read_back(self) -> None:
        """Reads every partition to its end into the history, then dumps every broker's copy of every
        partition, whether the read ended or not."""
        config = self.config
        self.progress("final read of every partition")
        self.status.enter(phases.READ_TO_END, config.final_read_timeout)
        try:
            final_read(
                self.cluster.bootstrap, dict.fromkeys(self.topics, config.partitions), self.history,
                config.final_read_timeout,
            )  # fmt: skip
            self.completed(run_phases.READ_TO_END)
        except BaseException as exc:
            self.record.stopped(self.status.shown_phase(), exc)  # where it stopped, before the dump below
            raise
        finally:
            self.dump()

    def dump(self) -> None:
        """Dumps every broker's copy of every partition; on a cluster kchaos did not start, records why it
        cannot (the divergence check then says so)."""
        self.status.enter(phases.REPLICA_DUMP)
        if isinstance(self.cluster, ExistingCluster):
            self.progress(Milestone(f"no replica dump: {NO_NODE_ACCESS}"))
            self.record.skipped(run_phases.REPLICA_DUMP, NO_NODE_ACCESS)
        else:
            self.progress("dumping every broker's copy of every partition (replicas/)")
            dump_replicas(self.cluster, self.topics, self.run_dir)
            self.completed(run_phases.REPLICA_DUMP)
        log.info("replicas dumped")  # where the time to the verdict is counted from

    def clean_up(self, keep_cluster: bool, failed: bool) -> threading.Thread | None:
        """Stops whatever still runs (writers, readers, faults, the leader watcher), closes the history and
        saves the brokers' logs; then keeps the cluster (`keep_cluster`), removes it at once after a
        failure, or freezes it and returns its removal, for after the verdict: the check reads only the run
        directory."""
        if self.workload is not None:
            self.workload.stop()
        if self.readers is not None:
            self.readers.stop()
        if self.nemesis is not None:
            self.nemesis.stop()
        if self.leaders is not None:
            self.leaders.stop()
        self.cluster.stop_proxies()  # what their control lines missed is in their event files
        self.history.finish()
        log.info("history closed")
        cluster = self.cluster
        cluster.save_logs(RunDir(self.run_dir).logs)
        if keep_cluster and isinstance(cluster, ExistingCluster | ServiceCluster):
            guard.keep(cluster.run_id)  # the watchdog must not delete its topics when this process ends
            ssh_leftovers.keep(cluster.run_id)  # nor `kchaos clean` remove what it left on machines
            self.progress(Milestone(f"keeping the run's topics on the cluster at {cluster.client_bootstrap}"))
        elif keep_cluster and (cluster.network is not None or isinstance(cluster, SshCluster)):
            guard.keep(cluster.run_id)  # the watchdog must not remove it when this process ends
            ssh_leftovers.keep(cluster.run_id)
            self.progress(
                Milestone(f"keeping the cluster ({cluster.bootstrap}); remove it with `kchaos clean --all`")
            )
        elif failed:  # at once, before the error goes on
            self.removal.start()
            self.removal.join()
        else:
            cluster.freeze()
            return self.removal
        return None


def wait_for_workload(config: RunConfig, nemesis: Nemesis | FaultLog) -> float:
    """Producers write for `duration`, and longer only when the last fault ended past its plan: then until
    `AFTER_END_S` after it ended. Returns the seconds written.

    The plan fits each fault and a tail after it (`post_fault_tail`) in `duration`
    (`kchaos.model.fault_plan`), so a run whose faults keep to the plan writes for `duration` exactly,
    with writes to the new leaders after the last fault. A fault that holds longer while Kafka has not
    reacted eats into that tail, and the run writes on only when less than `AFTER_END_S` of it is left:
    a few seconds of writes after the fault push the final read's end past any records a failover
    truncated, so a lost write shows as `lost-write`. The writes do not wait for the cluster to heal: the
    run's recovery step waits for that before the final read.
    """
    started = time.monotonic()
    nemesis.faults_ended.wait(config.duration + NEMESIS_OVERRUN_LIMIT)
    if not nemesis.faults_ended.is_set():
        raise WaitTimeout(
            f"the fault schedule did not finish within {NEMESIS_OVERRUN_LIMIT:.0f}s of the duration"
        )
    end = started + config.duration
    if nemesis.planned:
        end = max(end, (nemesis.last_end or time.monotonic()) + AFTER_END_S)
    time.sleep(max(0.0, end - time.monotonic()))
    return time.monotonic() - started


#: Why a run writes past its duration, in the words of its milestone.
LATE = f"until {AFTER_END_S:.0f}s after the last fault, which held past its plan"


def planned_faults(planned: Sequence[PlannedFault], fitted: str | None) -> str:
    """The start line's faults: how many, each with its start and hold, and what kchaos fitted."""
    count = counted(len(planned), "fault")
    each = ", ".join(f"{p.key} at +{p.at:.0f}s for {p.duration:.0f}s" for p in planned) or "none"
    after = (
        f"; longer only if the last fault holds past its plan, until {AFTER_END_S:.0f}s after it"
        if planned
        else ""
    )
    return f"{count}: {each}{f' ({fitted})' if fitted else ''}{after}"


def topics(config: RunConfig) -> list[str]:
    """The run's topics (`made_topics`), the test topic first."""
    return list(made_topics(config.topic, config.topics, config.workload))
