"""One chaos run from start to verdict: cluster up, write under faults, heal, final read, check, report.

The order of the `finally` blocks is the contract: whatever fails, or whenever the user presses Ctrl-C,
faults are healed, the history is closed (and converted), broker logs are saved and every container and
network of the run is removed. A stop request is acted on at every phase boundary, and one that arrives
during that cleanup only after it (`kchaos.runner.stop_request`).
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from kchaos.harness.engine import require_engine
from kchaos.harness.image import resolve_image
from kchaos.model import progress as phases
from kchaos.model.client_names import JAVA, PROCESS_CLIENTS
from kchaos.model.config import ConfigError, RunConfig
from kchaos.model.progress import ProgressTicker, RunProgress
from kchaos.model.run_files import RunDir
from kchaos.nemesis.scenarios import sequence
from kchaos.nemesis.schedule import Scenario
from kchaos.runner.outcome import Judged, RunOutcome, check_and_report
from kchaos.runner.replay import Replay
from kchaos.runner.run_steps import ChaosRun
from kchaos.runner.stop_request import StopRequest, stop_requests
from kchaos.runner.warm_check import WarmCheck, needs_warming
from kchaos.workloads.client_settings_check import client_settings_refusal
from kchaos.workloads.table import client_image, client_release

log = logging.getLogger(__name__)

Progress = Callable[[str], None]


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
    replay: Replay | None = None,
) -> RunOutcome:
    """Runs the whole scenario and checks it. Raises on harness failure; the verdict is in the outcome.

    `scenario`, if given, drives the faults step by step instead of the planned schedule (a crafted fault
    sequence, e.g. shrink the ISR to the leader alone, then kill it); it runs while producers write. A
    configuration naming a scenario (`config.scenario`) runs that named one.
    `keep_cluster` leaves the healed cluster running for inspection (`kchaos clean --all` removes it).
    Every `status_interval` seconds a status line (phase, rates, active faults, time left) goes to
    `progress` too. `judged` is given the outcome as soon as the check is done, before the report is
    written (`check_and_report`). `replay` is what a replay takes from the run it replays: its topics'
    placement and the nodes its faults hit (`kchaos.runner.replay`).
    """
    run_dir = config.run_dir
    if run_dir.exists():
        raise FileExistsError(f"{run_dir} already exists; choose another --run-id or remove it")
    if not config.bootstrap or config.client in PROCESS_CLIENTS:  # a cluster or client processes to start
        require_engine()  # before the run directory: a run that cannot start leaves nothing behind
    ready_client(config)
    if scenario is None and config.scenario is not None:
        scenario = sequence(config.scenario)
    run_dir.mkdir(parents=True, exist_ok=False)
    handler = _log_to(run_dir)
    progress = _logged(progress)
    status = RunProgress()
    warm = (
        WarmCheck(run_dir, config.spark_url, _history_rows(config), config.spark_driver_memory)
        if needs_warming(config.spark_url)
        else None
    )
    # The cluster's removal, started once the verdict is in: beside the check it took CPU from it.
    removal: threading.Thread | None = None
    try:
        with stop_requests() as stop, ProgressTicker(status, progress, status_interval):
            removal = _chaos(config, run_dir, progress, scenario, keep_cluster, status, stop, warm, replay)
            stop.act()  # asked to stop while the run cleaned up, or in a finalizer that swallowed it
            status.enter(phases.CHECKING)
            progress("checking the history with Spark")
            if warm is not None:
                warm.wait()
            then = removal.start if removal is not None else lambda: None
            return check_and_report(
                run_dir, config.spark_url, config.max_examples, progress, _logged_verdict(judged, then),
                config.spark_driver_memory,
            )  # fmt: skip
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


def ready_client(config: RunConfig) -> None:
    """Builds the run's client image before the run directory and any container, so a release that cannot
    be fetched or built is refused then, naming it (ImageError); then asks that client whether it takes the
    run's settings, when the user chose any or chose its release (`client_settings_refusal`), raising
    ConfigError in the client's words."""
    kafka_version = config.kafka_version
    if config.client == JAVA and config.java_client_version is None and not config.bootstrap:
        # the cluster's own, as the run has it (a cluster kchaos did not start runs `--kafka-version`)
        kafka_version = resolve_image(config.kafka_image, config.kafka_version).kafka_version
    release = client_release(config, kafka_version)
    refused = client_settings_refusal(config, client_image(config.client, release), release)
    if refused is not None:
        raise ConfigError(f"invalid configuration:\n  {refused}")


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
    read or two of it), which chooses its check's JVM (`kchaos.checkers.runtime.session.spark_session`); None
    when the rate is unlimited."""
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
    replay: Replay | None = None,
) -> threading.Thread | None:
    """Starts the cluster, writes under faults, heals, reads back and dumps the replicas
    (`kchaos.runner.run_steps`); returns the cluster's removal, for the caller to start (None when the
    cluster is kept; a failure removes it before raising)."""
    run = ChaosRun.prepare(config, run_dir, progress, scenario, status, stop, replay)
    try:
        run.start_cluster()
        run.write_under_faults(warm)
        run.heal()
        run.await_recovery()
        run.read_back()
    except BaseException as exc:
        run.record.stopped(status.shown_phase(), exc)
        raise
    finally:
        with stop.deferred():  # a stop request now would cut the cleanup short; `execute` acts on it after
            removal = run.clean_up(keep_cluster, failed=sys.exc_info()[0] is not None)
    return removal
