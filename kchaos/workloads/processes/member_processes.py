"""The group members of `--workload group` and the processors of `eos` as processes, whichever client they
run: what the nemesis's `kill-member` asks of them (`kchaos.nemesis.members.GroupMembers`: crash one, with
no LeaveGroup and no last commit, and bring it back as a new process), and the `member-restart` row of one
that died on its own and was started again.
"""

from __future__ import annotations

import logging

from kchaos.harness.client_cluster import ClientCluster
from kchaos.model.config import RunConfig
from kchaos.model.events import INFO, MEMBER_CRASH, MEMBER_RESTART, group_process
from kchaos.model.history import HistoryWriter
from kchaos.workloads.processes.client_process import EXIT_SLACK_S, START_TIMEOUT_S
from kchaos.workloads.processes.consumer_processes import ConsumerProcesses
from kchaos.workloads.processes.member_recorder import MemberRecorder

log = logging.getLogger(__name__)


class MemberProcesses(ConsumerProcesses):
    """`consumers` members of the run's group, each a process of its own."""

    noun = "Java group member"

    def __init__(
        self,
        config: RunConfig,
        cluster: ClientCluster,
        history: HistoryWriter,
        image: str,
        names: list[str] | None = None,
    ) -> None:
        """`names`: the members' process names (`member-N` when not given; an eos run's are processors)."""
        super().__init__(
            config, cluster, history, image, names or [group_process(i) for i in range(config.consumers)]
        )

    def _recorder(self, name: str, isolation: str) -> MemberRecorder:
        """What records member `name`'s lines (an eos processor's differ)."""
        return MemberRecorder(
            name, self.config.topic, self.history, group=self.group, mode=self.config.group_commit,
            isolation=isolation, tally=self.tallies[name],
        )  # fmt: skip

    def _record_restart(self, name: str, code: int | None) -> None:
        self.tallies[name].assigned = frozenset()
        self.history.record(
            name, INFO, MEMBER_RESTART, topic=self.config.topic, detail={"group": self.group, "exit": code},
            error=f"the client process ended (exit {code}); restarted as a new process",
        )  # fmt: skip

    def hold(self, timeout: float = 30.0) -> None:
        raise RuntimeError(
            "a scenario that holds the readers back cannot hold Java group members yet; run it with "
            "--client librdkafka"
        )

    def release(self) -> None:
        """Nothing was held (`hold` refuses)."""

    # What the nemesis's `kill-member` asks of the run's members (`kchaos.nemesis.members.GroupMembers`).

    def member_names(self) -> list[str]:
        return list(self.names)

    def crash(self, process: str) -> frozenset[int]:
        """Kills `process` (SIGKILL: no LeaveGroup, no last commit) and returns the partitions it held."""
        with self._lock:
            member = self.members[process]
            self.crashed.add(process)
            tally = self.tallies[process]
            held = tally.assigned
            self.history.record(
                process, INFO, MEMBER_CRASH, topic=self.config.topic,
                detail={"partitions": sorted(held), "group": self.group, "member": tally.member},
            )  # fmt: skip
            member.client.kill()
            member.thread.join(EXIT_SLACK_S)
            tally.assigned = frozenset()
            self.restarts[process] += 1
            self._save_log(process, member, f".{self.restarts[process] - 1}")
            member.client.remove()
        return held

    def restart(self, process: str) -> bool:
        """Brings a crashed `process` back as a new process; False once the workload has stopped."""
        if self._stop.is_set():
            return False
        with self._lock:
            self.history.record(
                process, INFO, MEMBER_RESTART, topic=self.config.topic, detail={"group": self.group}
            )
            member = self._launch(process)
            self.crashed.discard(process)
        member.await_start(START_TIMEOUT_S)
        return True

    def assignment(self, process: str) -> frozenset[int]:
        return self.tallies[process].assigned

    def assignments(self, process: str) -> int:
        return self.tallies[process].assignments

    def handed(self, process: str) -> int:
        return self.tallies[process].handed
