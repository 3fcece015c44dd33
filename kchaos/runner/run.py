"""One chaos run from start to verdict: cluster up, write under faults, heal, final read, check, report.

The order of the `finally` blocks is the contract: whatever fails, or whenever the user presses Ctrl-C,
faults are healed, the history is closed (and converted), broker logs are saved and every container and
network of the run is removed. A stop request is acted on at every phase boundary, and one that arrives
during that cleanup only after it (`kchaos.runner.stop_request`).
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from kchaos.harness.client_image import ensure_client_image
from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.engine import require_engine
from kchaos.harness.image import resolve_image, sidecar_image
from kchaos.harness.leaders import LeaderWatcher
from kchaos.harness.rdkafka_image import ensure_rdkafka_image
from kchaos.harness.replicas import dump_replicas
from kchaos.harness.watchdog import guard
from kchaos.model import phase_record as run_phases
from kchaos.model import progress as phases
from kchaos.model.client_names import JAVA, LIBRDKAFKA_PROCESS
from kchaos.model.config import RunConfig
from kchaos.model.corruption import readers_check_crcs
from kchaos.model.events import output_topic
from kchaos.model.group_protocol import group_broker_config
from kchaos.model.history import HistoryWriter
from kchaos.model.phase_record import PhaseRecorder
from kchaos.model.progress import Milestone, ProgressTicker, RunProgress
from kchaos.model.run_files import RunDir
from kchaos.model.waiting import WaitTimeout
from kchaos.model.workload_names import EOS, GROUP, TXN
from kchaos.nemesis.scenarios import sequence
from kchaos.nemesis.schedule import Nemesis, Scenario, plan, post_fault_tail, write_plan
from kchaos.runner.outcome import Judged, RunOutcome, check_and_report
from kchaos.runner.stop_request import StopRequest, stop_requests
from kchaos.runner.warm_check import WarmCheck, needs_warming
from kchaos.workloads.final_read import final_read
from kchaos.workloads.in_harness.consumer import ConsumerWorkload, ReaderThreads
from kchaos.workloads.in_harness.eos import EosWorkload
from kchaos.workloads.in_harness.group_consumer import GroupWorkload
from kchaos.workloads.in_harness.producer import ProducerWorkload
from kchaos.workloads.in_harness.transactions import TransactionalWorkload
from kchaos.workloads.processes.java.eos import JavaEosWorkload
from kchaos.workloads.processes.java.group import JavaGroupWorkload
from kchaos.workloads.processes.java.producer import JavaProducerWorkload
from kchaos.workloads.processes.java.reader import JavaReaderWorkload
from kchaos.workloads.processes.java.transactions import JavaTransactionalWorkload
from kchaos.workloads.processes.rdkafka.eos import RdkafkaEosWorkload
from kchaos.workloads.processes.rdkafka.group import RdkafkaGroupWorkload
from kchaos.workloads.processes.rdkafka.producer import RdkafkaProducerWorkload
from kchaos.workloads.processes.rdkafka.reader import RdkafkaReaderWorkload
from kchaos.workloads.processes.rdkafka.transactions import RdkafkaTransactionalWorkload

log = logging.getLogger(__name__)

Progress = Callable[[str], None]

#: How far past its duration a run may go while the nemesis waits for Kafka to react and heal.
NEMESIS_OVERRUN_LIMIT = 600.0
#: Longest `--workload eos`'s processors may take, once the producers stopped, to commit every input
#: record; past it the run goes on, and the inputs left unprocessed are above the group's committed offset.
CATCH_UP_TIMEOUT = 60.0


def _log_to(run_dir: Path) -> logging.Handler:
    files = RunDir(run_dir)
    files.logs.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(files.harness_log)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.INFO)
    return handler


def _logged(progress: Progress) -> Progress:
    """`progress`, each message written to the run's harness.log first: a terminal may show progress only
    in place, or not at all (`kchaos.runner.progress_echo`), and the log keeps every line."""

    def report(message: str) -> None:
        log.info("progress: %s", message)
        progress(message)

    return report


def execute(
    config: RunConfig,
    progress: Progress = print,
    scenario: Scenario | None = None,
    keep_cluster: bool = False,
    status_interval: float = 10.0,
    judged: Judged | None = None,
) -> RunOutcome:
    """Runs the whole scenario and checks it. Raises on harness failure; the verdict is in the outcome.

    `scenario`, if given, drives the faults step by step instead of the planned schedule (a crafted fault
    sequence, e.g. shrink the ISR to the leader alone, then kill it); it runs while producers write. A
    configuration naming a scenario (`config.scenario`) runs that named one.
    `keep_cluster` leaves the healed cluster running for inspection (`kchaos clean --all` removes it).
    Every `status_interval` seconds a status line (phase, rates, active faults, time left) goes to
    `progress` too. `judged` is given the outcome as soon as the check is done, before the report is
    written (`check_and_report`).
    """
    run_dir = config.run_dir
    if run_dir.exists():
        raise FileExistsError(f"{run_dir} already exists; choose another --run-id or remove it")
    require_engine()  # before the run directory: a run that cannot start leaves nothing behind
    if scenario is None and config.scenario is not None:
        scenario = sequence(config.scenario)
    run_dir.mkdir(parents=True, exist_ok=False)
    handler = _log_to(run_dir)
    progress = _logged(progress)
    status = RunProgress()
    warm = (
        WarmCheck(run_dir, config.spark_url, _history_rows(config))
        if needs_warming(config.spark_url)
        else None
    )
    # The cluster's removal, started once the verdict is in: beside the check it took CPU from it.
    removal: threading.Thread | None = None
    try:
        with stop_requests() as stop, ProgressTicker(status, progress, status_interval):
            removal = _chaos(config, run_dir, progress, scenario, keep_cluster, status, stop, warm)
            stop.act()  # asked to stop while the run cleaned up, or in a finalizer that swallowed it
            status.enter(phases.CHECKING)
            progress("checking the history with Spark")
            if warm is not None:
                warm.wait()
            then = removal.start if removal is not None else lambda: None
            return check_and_report(
                run_dir, config.spark_url, config.max_examples, progress, _logged_verdict(judged, then)
            )
    except Exception:
        log.exception("the run failed")  # the traceback belongs in harness.log, not on the terminal
        raise
    finally:
        if warm is not None:
            warm.close()
        if removal is not None:
            if removal.ident is None:  # the check ended without a verdict
                removal.start()
            removal.join()
        logging.getLogger().removeHandler(handler)
        handler.close()


def _logged_verdict(judged: Judged | None, then: Callable[[], None]) -> Judged:
    """`judged`, the verdict written to harness.log first: when it came, after the replica dump, is what a
    run's user waits for (`bench/run_end.py` reads it); `then` follows it at once."""

    def tell(outcome: RunOutcome) -> None:
        log.info("%s", outcome.verdict_line())
        then()
        if judged is not None:
            judged(outcome)

    return tell


def _history_rows(config: RunConfig) -> int | None:
    """About how many rows the run's history will hold (a send's invocation and acknowledgement, and a
    read or two of it), which chooses its check's JVM (`kchaos.checkers.spark.spark_session`); None when
    the rate is unlimited."""
    return int(config.rate * config.duration * 4) if config.rate else None


def _chaos(
    config: RunConfig,
    run_dir: Path,
    progress: Progress,
    scenario: Scenario | None,
    keep_cluster: bool,
    status: RunProgress,
    stop: StopRequest,
    warm: WarmCheck | None = None,
) -> threading.Thread | None:
    """Starts the cluster, writes under faults, heals, reads back and dumps the replicas; returns the
    cluster's removal, for the caller to start (None when the cluster is kept; a failure removes it
    before raising)."""
    image = resolve_image(config.kafka_image, config.kafka_version)
    sidecar = sidecar_image()
    # The Java client is the cluster's own release (a 0.11 cluster gets a 0.11 client) unless
    # --java-client-version mixes them, built before any container starts, so a failed build costs no cluster.
    java_version = config.java_client_version or image.kafka_version
    client_image = ensure_client_image(java_version) if config.client == JAVA else None
    if config.client == LIBRDKAFKA_PROCESS:  # the confluent-kafka this harness runs, as a process
        client_image = ensure_rdkafka_image()
    planned = plan(config) if scenario is None else []
    resolved = {**config.to_json_dict(), "kafka_image": image.ref, "kafka_version": image.kafka_version,
                "image_id": image.image_id, "client_image": client_image,
                "java_client_version": java_version if config.client == JAVA else None,
                "readers_check_crcs": readers_check_crcs(config.client),
                "started_at": time.time()}  # fmt: skip
    files = RunDir(run_dir)
    files.config.write_text(json.dumps(resolved, indent=2) + "\n")
    write_plan(planned, files.schedule)

    history = HistoryWriter(files, config.run_id)
    status.counts = history
    cluster = KafkaCluster(
        run_id=config.run_id, image=image.ref, sidecar_image=sidecar, size=config.brokers,
        spare_size=config.spare_brokers, controller_size=config.controllers,
        spare_controller_size=config.spare_controllers, dynamic_quorum=config.quorum == "dynamic",
        heap=config.broker_heap,
        broker_config=_broker_config(config), logs_dir=files.logs, metadata_mode=config.metadata,
    )  # fmt: skip
    nemesis: Nemesis | None = None
    removal = threading.Thread(target=_remove, args=(cluster,), name="cluster-removal")
    pending: threading.Thread | None = None
    workload: ProducerWorkload | JavaProducerWorkload | TransactionalWorkload | None = None
    readers: ReaderThreads | JavaGroupWorkload | None = None
    leaders: LeaderWatcher | None = None
    record = PhaseRecorder(history)

    def completed(phase: str) -> None:
        """Records a phase done, then delivers a stop request that arrived meanwhile and was swallowed."""
        record.completed_phase(phase)
        stop.act()

    try:
        zookeeper = " and a ZooKeeper node" if config.metadata == "zookeeper" else ""
        progress(f"starting {config.brokers} Kafka {image.kafka_version} nodes{zookeeper} ({image.ref})")
        status.enter(phases.CLUSTER_UP)
        cluster.start()
        for topic in _topics(config):
            cluster.create_topic(
                topic, config.partitions, config.replication_factor, config.min_insync_replicas,
                config.unclean_leader_election, topic_config=config.topic_config,
            )  # fmt: skip
        completed(run_phases.CLUSTER_UP)
        # Watched from before the first write until the history closes: failovers and healing both show.
        leaders = LeaderWatcher(cluster.bootstrap, config.topic, history)
        leaders.start()
        if config.client == LIBRDKAFKA_PROCESS and client_image is not None:
            workload = (RdkafkaTransactionalWorkload if config.workload == TXN else RdkafkaProducerWorkload)(
                config, cluster, history, client_image, image.kafka_version
            )
        elif client_image is not None:
            workload = (JavaTransactionalWorkload if config.workload == TXN else JavaProducerWorkload)(
                config, cluster, history, client_image, java_version
            )
        else:
            workload = (TransactionalWorkload if config.workload == TXN else ProducerWorkload)(
                config, cluster.bootstrap, history
            )
        if config.client == JAVA and config.workload == GROUP:
            readers = JavaGroupWorkload(config, cluster, history, str(client_image))
        elif config.client == LIBRDKAFKA_PROCESS and config.workload == GROUP:
            readers = RdkafkaGroupWorkload(config, cluster, history, str(client_image))
        elif config.client == JAVA and config.workload == EOS:
            readers = JavaEosWorkload(config, cluster, history, str(client_image), java_version)
        elif config.client == LIBRDKAFKA_PROCESS and config.workload == EOS:
            readers = RdkafkaEosWorkload(config, cluster, history, str(client_image))
        elif config.client == LIBRDKAFKA_PROCESS:  # sends and txn: the assigned readers are processes too
            readers = RdkafkaReaderWorkload(config, cluster, history, str(client_image))
        elif config.client == JAVA:
            readers = JavaReaderWorkload(config, cluster, history, str(client_image))
        else:
            readers = {"group": GroupWorkload, "eos": EosWorkload}.get(config.workload, ConsumerWorkload)(
                config, cluster.bootstrap, history
            )
        nemesis = Nemesis(
            cluster, history, config.topic, config.fault_partition, planned, seed=config.seed,
            heal_timeout=config.recovery_timeout, readers=readers, workload=config.workload,
        )  # fmt: skip
        status.faults = nemesis
        faults = (
            f"the scenario {config.scenario}"
            if config.scenario
            else "a crafted fault scenario"
            if scenario
            else f"{len(planned)} faults: {', '.join(p.key for p in planned) or 'none'}"
        )
        progress(
            Milestone(
                f"writing for {config.duration:.0f}s (acks={config.acks}, {config.producers} "
                f"{'transactional ' if config.workload == TXN else ''}{config.client} producers, "
                f"{f'{config.rate:.0f}/s' if config.rate else 'unlimited rate'}) with {faults}"
            )
        )
        status.enter(phases.WORKLOAD, config.duration, bounded=False)
        readers.start()
        workload.start()
        nemesis.start(scenario, name=config.scenario or "crafted")
        if warm is not None:
            warm.start()  # while the run writes, not while its cluster starts: both take the cores
        _wait_for_workload(config, nemesis)
        workload.stop()
        workload = None
        if isinstance(readers, EosWorkload | JavaEosWorkload):
            progress(f"waiting up to {CATCH_UP_TIMEOUT:.0f}s for the processors to commit every input record")
            left = readers.wait_caught_up(CATCH_UP_TIMEOUT)
            if left:
                progress(Milestone(f"the processors did not catch up; records left by partition: {left}"))
        readers.stop()
        readers = None
        completed(run_phases.WORKLOAD)
        status.enter(phases.HEALING, config.recovery_timeout)
        nemesis.stop()
        if nemesis.error is not None:
            raise nemesis.error
        completed(run_phases.HEAL)
        progress(
            f"healed; waiting up to {config.recovery_timeout:.0f}s for every partition to be led and in sync"
        )
        try:
            deadline = time.monotonic() + config.recovery_timeout
            for topic in _topics(config):  # the dumps below compare replicas at rest, of every topic
                cluster.metadata.await_recovery(
                    topic, max(0.0, deadline - time.monotonic()),
                    f"recovery of {topic}: all brokers registered, every partition led, ISR complete",
                )  # fmt: skip
            completed(run_phases.RECOVERY)
        except WaitTimeout as exc:
            # A cluster that never recovers is a finding, not a harness failure: the final read and the
            # dumps still record what there is, and the check judges only what needs no recovery.
            record.stopped(status.shown_phase(), exc)
            progress(
                Milestone(
                    f"not recovered within {config.recovery_timeout:.0f}s ({exc}); reading what there is"
                )
            )
        progress("final read of every partition")
        status.enter(phases.READ_TO_END, config.final_read_timeout)
        try:
            final_read(
                cluster.bootstrap, dict.fromkeys(_topics(config), config.partitions), history,
                config.final_read_timeout,
            )  # fmt: skip
            completed(run_phases.READ_TO_END)
        except BaseException as exc:
            record.stopped(status.shown_phase(), exc)  # where it stopped, before the dump below runs
            raise
        finally:
            progress("dumping every broker's copy of every partition (replicas/)")
            status.enter(phases.REPLICA_DUMP)
            dump_replicas(cluster, _topics(config), run_dir)
            log.info("replicas dumped")  # where the time to the verdict is counted from
            completed(run_phases.REPLICA_DUMP)
    except BaseException as exc:
        record.stopped(status.shown_phase(), exc)
        raise
    finally:
        with stop.deferred():  # a stop request now would cut the cleanup short; `execute` acts on it after
            if workload is not None:
                workload.stop()
            if readers is not None:
                readers.stop()
            if nemesis is not None:
                nemesis.stop()
            if leaders is not None:
                leaders.stop()
            history.finish()
            log.info("history closed")
            cluster.save_logs(files.logs)
            if keep_cluster and cluster.network is not None:
                guard.keep(cluster.run_id)  # the watchdog must not remove it when this process ends
                progress(
                    Milestone(
                        f"keeping the cluster ({cluster.bootstrap}); remove it with `kchaos clean --all`"
                    )
                )
            elif sys.exc_info()[0] is not None:  # after a failure, at once, before the error goes on
                removal.start()
                removal.join()
            else:  # after the verdict: the check reads only the run directory
                cluster.freeze()
                pending = removal
    return pending


def _remove(cluster: KafkaCluster) -> None:
    cluster.stop()
    log.info("cluster removed")


def _wait_for_workload(config: RunConfig, nemesis: Nemesis) -> None:
    """Producers write for `duration`, and on until every planned fault has healed and a tail has passed
    since the last one ended.

    The plan fits each fault and the tail after it in `duration` (`kchaos.model.fault_plan`); a fault that
    holds longer, or a cluster that heals slower, pushes the end out, so every fault happens under load and
    is followed by writes to the new leaders. The writes while the cluster heals count towards the tail:
    they are writes after the fault, as the plan counted them, so a run whose faults keep to the plan
    writes for `duration` and no longer.
    """
    started = time.monotonic()
    nemesis.finished.wait(config.duration + NEMESIS_OVERRUN_LIMIT)
    if not nemesis.finished.is_set():
        raise WaitTimeout(
            f"the fault schedule did not finish within {NEMESIS_OVERRUN_LIMIT:.0f}s of the duration"
        )
    healed = time.monotonic()
    tail_end = (nemesis.last_end or healed) + post_fault_tail(config) if nemesis.planned else healed
    time.sleep(max(0.0, max(started + config.duration, tail_end) - time.monotonic()))


def _topics(config: RunConfig) -> list[str]:
    """The run's topics: the test topic, and for `--workload eos` its output topic, made alike."""
    return [config.topic, output_topic(config.topic)] if config.workload == EOS else [config.topic]


def _broker_config(config: RunConfig) -> dict[str, str]:
    return {
        "unclean.leader.election.enable": str(config.unclean_leader_election).lower(),
        **group_broker_config(config.group_protocol),
        **config.broker_config,
    }
