"""Consumer-group members that are librdkafka processes (`--client librdkafka-process --workload group`),
each in a container of its own, recorded from what the process prints exactly as the Java client's are.

The worker (kchaos/compose/rdkafka/group_worker.py, `kchaos.mode=group` of the image
kchaos/rdkafka-client:<confluent-kafka version>) speaks the Java member's line protocol, so what every
member process shares is its whole life: its recorder (kchaos/workloads/processes/member_recorder.py), its
supervisor, crash and shutdown (member_processes.py): only the image, the command (the mode, since the image's
entrypoint is the workers' dispatcher, and the in-process member's librdkafka settings, `group_settings`, as
`name=value` arguments) and the rule that judges a failed commit (by librdkafka's error name,
`named_commit_outcome`) differ.
"""

from __future__ import annotations

from typing import cast

from kchaos.model.events import IsolationLevel
from kchaos.workloads.in_harness.group_consumer import group_settings
from kchaos.workloads.outcome import named_commit_outcome
from kchaos.workloads.processes.member_processes import MemberProcesses
from kchaos.workloads.processes.member_recorder import MemberRecorder
from kchaos.workloads.processes.rdkafka.producer import rdkafka_arguments

#: The worker's mode (`kchaos.mode`) that is a group member.
GROUP_MODE = "group"


class RdkafkaGroupWorkload(MemberProcesses):
    """`consumers` librdkafka members of one group, each a process of its own."""

    #: No Java main class: the image's entrypoint picks the worker by the `kchaos.mode` argument.
    main_class = None

    def _command(self, name: str, isolation: str) -> list[str]:
        config = self.config
        worker = {
            "kchaos.mode": GROUP_MODE,
            "kchaos.topic": config.topic,
            "kchaos.commit": config.group_commit,
        }
        settings = group_settings(
            self.cluster.client_bootstrap, name, self.group, config.group_commit,
            cast(IsolationLevel, isolation), config.group_protocol, config.consumer_config,
        )  # fmt: skip
        return [*(f"{key}={value}" for key, value in worker.items()), *rdkafka_arguments(settings)]

    def _recorder(self, name: str, isolation: str) -> MemberRecorder:
        """The shared recorder, judging a failed commit by librdkafka's rule."""
        recorder = super()._recorder(name, isolation)
        recorder.commit_judge = named_commit_outcome
        return recorder
