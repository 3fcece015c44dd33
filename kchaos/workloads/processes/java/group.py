"""Consumer-group members that are the release's Java client (`--client java --workload group`), each a
process in a container of its own, recorded from what the process prints.

The worker (kchaos/compose/client/KchaosGroupMember.java) runs the loop the librdkafka members run
(kchaos/workloads/in_harness/group_consumer.py): subscribe, poll, commit after each batch (`sync`) or in the
background every second (`auto`), in the same group with the same settings in the Java client's words. Its
lines become the same rows (`assign`, `revoke`, `poll`, `commit`, `member-crash`, `member-restart`), so the
same group checks judge either client. A commit the process asked for and never reported (it died, or was
killed) is recorded `info`: it may have reached the coordinator.

Each member is a process the nemesis can hit: `kill-member` (a crash the member's successor must recover
from, through `GroupMembers`: SIGKILL, no LeaveGroup and no last commit, and a new process when the fault
heals), and the client faults by the container's label. A member that dies while the run goes on without
having been ordered to is started again as a new process under the same name, as an application's
supervisor would, with an `info` `member-restart` row.
"""

from __future__ import annotations

from collections.abc import Mapping

from kchaos.model.client_config import NO_SETTINGS
from kchaos.model.config import RunConfig
from kchaos.model.group_protocol import member_protocol_settings
from kchaos.workloads.in_harness.group_consumer import AUTO_COMMIT_INTERVAL_MS, SESSION_TIMEOUT_MS
from kchaos.workloads.processes.member_processes import MemberProcesses

#: The worker's main class: the client image holds every worker, and this one is started by name.
MAIN_CLASS = "KchaosGroupMember"


def java_consumer_settings(
    bootstrap: str, client_id: str, group: str, isolation: str, user: Mapping[str, str] = NO_SETTINGS
) -> dict[str, str]:
    """What every Java consumer of kchaos sets, a group member or an assigned reader (kchaos/workloads/
    java_reader.py): the group, the isolation level always set (Java's default is read_uncommitted,
    librdkafka's read_committed), no automatic commit by the client (a member's worker commits, see its
    javadoc; a reader commits nothing), and from the earliest offset, so a position past a truncated log's
    new end reads over rather than skipping; `user`, the run's `--consumer-config`, last (none is a key
    kchaos sets for a reason of its own)."""
    return {
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "group.id": group,
        "isolation.level": isolation,
        "enable.auto.commit": "false",
        "auto.offset.reset": "earliest",
        **user,
    }


def java_member_settings(
    config: RunConfig, bootstrap: str, client_id: str, group: str, isolation: str
) -> dict[str, str]:
    """The librdkafka member's settings (kchaos/workloads/in_harness/group_consumer.py `group_settings`) in
    the Java client's words: every Java consumer's, and the short session under the classic protocol (the
    consumer protocol takes it from the broker)."""
    settings = {
        **java_consumer_settings(bootstrap, client_id, group, isolation),
        "session.timeout.ms": str(SESSION_TIMEOUT_MS),
    }
    chosen = member_protocol_settings(settings, config.group_protocol)
    return {**{k: str(v) for k, v in chosen.items()}, **config.consumer_config}


class JavaGroupWorkload(MemberProcesses):
    """`consumers` Java members of one group (`--workload group`), each a process of its own."""

    main_class = MAIN_CLASS

    def _command(self, name: str, isolation: str) -> list[str]:
        config = self.config
        worker = {
            "kchaos.topic": config.topic,
            "kchaos.commit": config.group_commit,
            "kchaos.auto.commit.ms": str(AUTO_COMMIT_INTERVAL_MS),
        }
        settings = java_member_settings(config, self.cluster.client_bootstrap, name, self.group, isolation)
        return [f"{key}={value}" for key, value in {**worker, **settings}.items()]
