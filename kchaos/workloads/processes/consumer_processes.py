"""A run's consumers as processes, each in a container of its own: the group members of `--workload group`,
the processors of `eos` and the assigned readers of `sends` and `txn`, of the Java client or librdkafka.

What they share is their life, not what they do: each is launched under its name with a command and a
recorder its kind gives (`_command`, `_recorder`), recorded by a `ClientProcess` until it ends, watched while
the run goes on, and started again as a new process under the same name when it dies without having been
ordered to, as an application's supervisor would (the kind records why, `_record_restart`); a stop sends
SIGTERM to each, waits for its last commit and records what it left unanswered.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter

from kchaos.harness.client_cluster import ClientCluster
from kchaos.harness.client_container import start_client
from kchaos.model.config import RunConfig
from kchaos.model.events import group_name
from kchaos.model.history import HistoryWriter
from kchaos.workloads.processes.client_process import EXIT_SLACK_S, START_TIMEOUT_S, ClientProcess
from kchaos.workloads.processes.member_recorder import MemberRecorder, MemberTally

log = logging.getLogger(__name__)

#: How long a stopped member may take to make its last commit and leave the group (the worker's hold).
CLOSE_S = 40.0


class ConsumerProcesses:
    """Consumer processes of one kind, named `names`, started, supervised and stopped together."""

    #: The worker's main class in the Java client image (None: the image's entrypoint picks the worker).
    main_class: str | None = None
    #: What the log calls one of them.
    noun = "consumer process"

    def __init__(
        self, config: RunConfig, cluster: ClientCluster, history: HistoryWriter, image: str, names: list[str]
    ) -> None:
        self.config = config
        self.cluster = cluster
        self.history = history
        self.image = image
        self.group = group_name(config.run_id)
        self.names = names
        self.tallies = {name: MemberTally() for name in self.names}
        self.members: dict[str, ClientProcess] = {}
        #: Members crashed on the nemesis's order and not yet brought back: not restarted by the watcher.
        self.crashed: set[str] = set()
        #: Members that ended and are not restarted (died before their client started).
        self.ended: set[str] = set()
        self.restarts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="member-supervisor", daemon=True)

    def _command(self, name: str, isolation: str) -> list[str]:
        """Process `name`'s worker command, reading at `isolation`."""
        raise NotImplementedError

    def _recorder(self, name: str, isolation: str) -> MemberRecorder:
        """What records process `name`'s lines."""
        raise NotImplementedError

    def _record_restart(self, name: str, code: int | None) -> None:
        """Records that `name` ended with exit `code` and is started again, before its new process starts."""
        raise NotImplementedError

    def _launch(self, name: str) -> ClientProcess:
        isolation = self.config.reader_isolation(self.names.index(name))
        client = start_client(
            self.cluster, self.image, name, self._command(name, isolation), main=self.main_class
        )
        member = ClientProcess(self._recorder(name, isolation), client, awaits="commit")
        self.members[name] = member
        return member

    def start(self) -> None:
        """Starts every process and waits until each has its client (its `started` line)."""
        for name in self.names:
            self._launch(name)
        for member in self.members.values():
            member.await_start(START_TIMEOUT_S)
        self._watcher.start()

    def _save_log(self, name: str, member: ClientProcess, suffix: str = "") -> None:
        logs = self.history.files.logs
        logs.mkdir(parents=True, exist_ok=True)
        (logs / f"{name}{suffix}.log").write_bytes(member.client.stderr())

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            with self._lock:
                for name, member in list(self.members.items()):
                    if member.thread.is_alive() or member.stopping or name in self.crashed | self.ended:
                        continue
                    try:
                        self._after_end(name, member)
                    except Exception:  # a restart that failed leaves the member dead
                        log.exception("%s: could not restart the %s", name, self.noun)
                        self.ended.add(name)

    def _after_end(self, name: str, member: ClientProcess) -> None:
        code = member.client.exit_code(5.0)
        if code == 0 or not member.recorder.started.is_set():
            log.warning("%s: the %s ended (exit %s); not restarted", name, self.noun, code)
            self.ended.add(name)
            return
        self.restarts[name] += 1
        self._save_log(name, member, f".{self.restarts[name] - 1}")
        member.client.remove()  # its name is the new process's
        self._record_restart(name, code)
        self._launch(name)
        log.info("%s: the %s ended (exit %s); restarted", name, self.noun, code)

    def stop(self) -> None:
        """Stops every process (SIGTERM: its last commit, then it leaves the group), records what each left
        unanswered as indeterminate, keeps its stderr in the run's logs and removes its container."""
        self._stop.set()
        if self._watcher.is_alive():
            self._watcher.join()
        members = list(self.members.items())
        for _, member in members:
            member.stopping = True
            member.client.terminate()
        for name, member in members:
            member.thread.join(CLOSE_S + EXIT_SLACK_S)
            if member.thread.is_alive():
                log.warning("%s still running after SIGTERM; killing it", name)
                member.client.kill()
                member.thread.join(EXIT_SLACK_S)
                member.client.close()
                member.thread.join(EXIT_SLACK_S)
            member.recorder.abandon("no answer to the commit before the member stopped")
            self._save_log(name, member)
            member.client.remove()
        self.members = {}
