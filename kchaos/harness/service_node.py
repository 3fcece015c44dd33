"""A broker the machine already runs as a systemd service, reached over SSH (`--kafka-home DIR --service
NAME` with `--nodes` and `--bootstrap`): kchaos faults it, but installed and configured nothing of it.

The process faults go through the service manager, which owns the broker's processes: a crash is SIGKILL
to the service's processes, then `systemctl stop` so the unit's own `Restart=` does not bring it back
before the fault ends; a freeze is SIGSTOP (SIGCONT thaws it); a controlled shutdown `systemctl stop`;
bringing it back `systemctl start`. Its output is the service's journal; its tools are the installation's
own `bin/kafka-run-class.sh` under `--kafka-home`. Commands and files are `SshNode`'s; kchaos's scratch
directory on the machine (for a dump's temporary output) is the only thing it writes there, and it is
removed with the run.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath

from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.ssh_node import KILLED_STATUS, SshNode
from kchaos.model.waiting import wait_until

#: Where a Kafka distribution is usually unpacked (the apache/kafka image's place too).
DEFAULT_KAFKA_HOME = PurePosixPath("/opt/kafka")
#: The unit states in which the broker's process is there (or on its way).
_UP = ("active", "activating", "deactivating", "reloading")


@dataclass
class ServiceNode(SshNode):
    """Broker `node_id`, the service `service` on the machine `session` reaches, installed at
    `kafka_home`, which clients reach at `advertised` (its address in the cluster's metadata)."""

    service: str = "kafka"
    kafka_home: PurePosixPath = DEFAULT_KAFKA_HOME
    advertised: str = ""
    #: When the run first reached the node: its journal is read from then on.
    since: float = 0.0

    @property
    def bootstrap(self) -> str:
        return self.advertised

    @property
    def controller_address(self) -> str:
        raise ClusterError(
            f"node {self.node_id}: kchaos does not know the controller listener of {self.service}"
        )

    @property
    def home(self) -> PurePosixPath:
        return self.kafka_home

    @property
    def conf_file(self) -> PurePosixPath:
        """Where a Kafka distribution keeps it; read only when the broker answers no DescribeConfigs."""
        return self.kafka_home / "config" / "server.properties"

    def _systemctl(self, *args: str) -> str:
        return self.session.run(f"systemctl {shlex.join(args)} {shlex.quote(self.service)}")

    def _unit(self) -> dict[str, str]:
        text = self._systemctl("show", "-p", "ActiveState,ExecMainCode,ExecMainStatus,SubState")
        return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)

    def _alive(self) -> bool:
        return self._unit().get("ActiveState") in _UP

    def start(self) -> None:
        self._systemctl("start")
        self.state = "running"

    def kill(self) -> None:
        self._systemctl("kill", "--signal=SIGKILL")
        self._systemctl("stop")  # before the unit's Restart= brings it back: the fault holds it down
        wait_until(lambda: not self._alive(), 30.0, f"node {self.node_id}'s {self.service} to be down")
        self.state = "killed"

    def terminate(self, timeout: int = 60) -> None:
        if self.state == "paused":
            self._systemctl("kill", "--signal=SIGCONT")
        self.session.run(
            f"systemctl stop {shlex.quote(self.service)}", timeout=float(timeout) + 30.0
        )  # systemd's own TimeoutStopSec ends it with SIGKILL
        self.state = "stopped"

    def pause(self) -> None:
        self._systemctl("kill", "--signal=SIGSTOP")
        self.state = "paused"

    def restart(self) -> None:
        if self.state == "paused":
            self._systemctl("kill", "--signal=SIGCONT")
        if not self._alive():
            self._systemctl("start")
        self.state = "running"

    def exit_code(self) -> int | None:
        unit = self._unit()
        if unit.get("ActiveState") in _UP or self.state == "created":
            return None
        status = unit.get("ExecMainStatus", "")
        if not status.isdigit():
            return KILLED_STATUS
        # ExecMainCode 2 and 3: killed by, or dumped on, signal ExecMainStatus (as a shell reports it).
        return 128 + int(status) if unit.get("ExecMainCode") in ("2", "3") else int(status)

    def logs(self, since: float | None = None) -> bytes:
        """The service's journal from when the run reached it (or from `since`)."""
        start = self.since if since is None else since
        return self.session.run_bytes(
            f"journalctl -u {shlex.quote(self.service)} -o cat --no-pager --since @{int(start)}"
        )
