"""One Kafka node on a machine kchaos reaches over SSH: the `KafkaNode` surface, with ordinary tools.

kchaos installed the release under a directory of its own there (`kchaos.harness.ssh_install`): the same
`kafka/` its image has (the jars, the entrypoint, the preloaded fault libraries), `state/` for the log dirs
and the libraries' notes, and the broker's output. The broker runs as a process kchaos owns: started by the
image's own entrypoint (the same `KAFKA_*` contract), in a session and process group of its own whose
leader's pid is kept in `broker.pid`, so one signal to the group reaches the shell, any tool it runs, and
the JVM. A crash is SIGKILL to the group, a freeze SIGSTOP (SIGCONT thaws it), a controlled shutdown
SIGTERM; the leader writes the broker's exit status to `broker.exit` when the broker ends on its own.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.kafka_node import CLIENT_PORT, CONTROLLER_PORT, TOOL_SCRIPT, NodeState
from kchaos.harness.ssh_session import SshSession
from kchaos.model.waiting import WaitTimeout, wait_until

#: The system's own directories, after the installation's `bin`, on every command's PATH.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: How long after a time a harness notes the act it notes it for may follow (`logs`).
MARK_SLACK = 1.0
#: What a broker killed by SIGKILL reports as its status, as a shell does: 128 + 9.
KILLED_STATUS = 137


@dataclass
class SshNode:
    """Node `node_id` on the machine `session` reaches, installed under `directory`, started with `env`.
    `hostname` is how the other nodes and kchaos reach it; `ip` its address, for iptables rules."""

    node_id: int
    hostname: str
    session: SshSession
    directory: PurePosixPath
    env: Mapping[str, str]
    state: NodeState = "created"
    ip: str = ""
    #: (Unix time, size of the broker's output then) at each start and signal: where `logs(since)` begins.
    marks: list[tuple[float, int]] = field(default_factory=list)

    @property
    def bootstrap(self) -> str:
        return f"{self.hostname}:{CLIENT_PORT}"

    @property
    def controller_address(self) -> str:
        return f"{self.hostname}:{CONTROLLER_PORT}"

    @property
    def home(self) -> PurePosixPath:
        return self.directory / "kafka"

    @property
    def state_dir(self) -> PurePosixPath:
        return self.directory / "state"

    @property
    def conf_file(self) -> PurePosixPath:
        return self.directory / "server.properties"

    @property
    def _output(self) -> PurePosixPath:
        return self.directory / "broker.out"

    @property
    def _pid_file(self) -> PurePosixPath:
        return self.directory / "broker.pid"

    @property
    def _exit_file(self) -> PurePosixPath:
        return self.directory / "broker.exit"

    def _environment(self) -> str:
        """The variables every command kchaos runs there gets: where the installation is, its tools first
        on the PATH."""
        return (
            f"KAFKA_HOME={shlex.quote(str(self.home))} "
            f"PATH={shlex.quote(str(self.home / 'bin'))}:{SYSTEM_PATH}"
        )

    # --- the broker's process --------------------------------------------------------------------

    def start(self) -> None:
        """Starts the broker: the entrypoint, with the node's environment and the installation's paths,
        in a new session whose leader records its pid, then the broker's exit status."""
        settings = {  # KAFKA_HOME and PATH come with every command (`_environment`)
            **self.env,
            "KCHAOS_STATE_DIR": str(self.state_dir),
            "KCHAOS_CONF_FILE": str(self.conf_file),
        }
        variables = " ".join(f"{name}={shlex.quote(value)}" for name, value in settings.items())
        leader = (
            f"echo $$ > {self._pid_file}; "
            f"{self.home}/bin/entrypoint.sh >> {self._output} 2>&1; echo $? > {self._exit_file}"
        )
        self._mark()
        # The last life's pid and status go first: until the new leader writes its pid, the node must not
        # read as a broker that already ended.
        self.session.run(
            f"rm -f {self._pid_file} {self._exit_file} && cd {self.directory} && "
            f"env -i {self._environment()} {variables} "
            f"setsid sh -c {shlex.quote(leader)} < /dev/null > /dev/null 2>&1 &"
        )
        wait_until(self._has_pid, 10.0, f"node {self.node_id}'s broker to start")
        self.state = "running"

    def _has_pid(self) -> bool:
        return self.session.run_status(f"test -s {self._pid_file}")[0] == 0

    def _signal(self, name: str) -> None:
        """Sends SIGname to the broker's whole process group, if it still has one."""
        self.session.run(f'p=$(cat {self._pid_file} 2>/dev/null) && kill -{name} "-$p" 2>/dev/null; true')

    def _alive(self) -> bool:
        """Whether any process of the broker's group is left, other than one dead and not yet reaped (its
        parent, the machine's init, reaps it when it will)."""
        command = f'p=$(cat {self._pid_file} 2>/dev/null) && ps -o stat= -g "$p" | grep -qv "^Z"'
        return self.session.run_status(command)[0] == 0

    def _mark(self) -> None:
        size = self.session.run(f"stat -c %s {self._output} 2>/dev/null || echo 0").strip()
        self.marks.append((time.time(), int(size) if size.isdigit() else 0))

    def kill(self) -> None:
        self._mark()
        self._signal("KILL")
        wait_until(lambda: not self._alive(), 30.0, f"node {self.node_id}'s broker to die")
        self.state = "killed"

    def terminate(self, timeout: int = 60) -> None:
        self._mark()
        if self.state == "paused":
            self._signal("CONT")
        self._signal("TERM")
        try:
            wait_until(lambda: not self._alive(), timeout, f"node {self.node_id}'s broker to shut down")
        except WaitTimeout:
            self._signal("KILL")  # as `docker stop` does once its timeout passes
        self.state = "stopped"

    def pause(self) -> None:
        self._signal("STOP")
        self.state = "paused"

    def restart(self) -> None:
        if self.state == "paused":
            self._signal("CONT")
        if not self._alive():
            self.start()
        self.state = "running"

    def exit_code(self) -> int | None:
        if self.state == "created" or self._alive():
            return None
        status = self.session.run_status(f"cat {self._exit_file}")[1].strip()
        return int(status) if status.isdigit() else KILLED_STATUS

    # --- commands and files ----------------------------------------------------------------------

    def network_exec(self, command: Sequence[str]) -> str:
        """As root on the machine: its network namespace is the machine's own."""
        return self.kafka_exec(command)

    def kafka_exec(self, command: Sequence[str]) -> str:
        try:
            return self.session.run(f"{self._environment()} {shlex.join(command)}")
        except ClusterError as exc:
            raise ClusterError(f"node {self.node_id}: {exc}") from None

    def run_tool(self, *args: str) -> str:
        return self.kafka_exec(["sh", "-c", TOOL_SCRIPT, "sh", *args])

    def run_tool_gzipped(self, *args: str) -> bytes:
        out, err = self.directory / "tool.out", self.directory / "tool.err"
        script = (
            f"{TOOL_SCRIPT} > {out} 2> {err}; status=$?; "
            f'if [ "$status" -ne 0 ]; then cat {out} {err}; rm -f {out} {err}; exit "$status"; fi; '
            f'gzip -1 -c {out}; status=$?; rm -f {out} {err}; exit "$status"'
        )
        command = ["sh", "-c", script, "sh", *args]
        try:
            return self.session.run_bytes(f"{self._environment()} {shlex.join(command)}")
        except ClusterError as exc:
            raise ClusterError(f"node {self.node_id}: {exc}") from None

    def await_gone(self, path: PurePosixPath, timeout: float, what: str) -> None:
        wait_until(lambda: self.session.run_status(f"test ! -e {path}")[0] == 0, timeout, what)

    def has_files(self, *paths: PurePosixPath) -> bool:
        tests = " && ".join(f"test -e {shlex.quote(str(self.home / path))}" for path in paths)
        return self.session.run_status(tests)[0] == 0

    def read_file(self, path: PurePosixPath) -> bytes:
        try:
            return self.session.run_bytes(f"cat {shlex.quote(str(path))}")
        except ClusterError:
            raise ClusterError(f"node {self.node_id}: no file {path}") from None

    def replace_file(self, path: PurePosixPath, data: bytes) -> None:
        """Writes in place (mode and owner stay) and puts the old times back."""
        script = (
            't=$(mktemp) && touch -r "$1" "$t" && cat > "$1" && touch -r "$t" "$1"; s=$?; rm -f "$t"; exit $s'
        )
        self.session.run(f"sh -c {shlex.quote(script)} sh {shlex.quote(str(path))}", stdin=data)

    def put_file(self, path: PurePosixPath, data: bytes) -> None:
        """Written beside and renamed over, so the library never reads half of it."""
        target = shlex.quote(str(path))
        self.session.run(f"cat > {target}.kchaos-new && mv {target}.kchaos-new {target}", stdin=data)

    def logs(self, since: float | None = None) -> bytes:
        """From the first start, or from the last start or signal up to `MARK_SLACK` after `since`: the
        output carries no time of its own, and a fault notes its time just before it acts (`killed_at`,
        then the kill), so the mark of its act is what `since` means."""
        offset = 0
        if since is not None:
            offset = max((size for at, size in self.marks if at <= since + MARK_SLACK), default=0)
        return self.session.run_bytes(f"tail -c +{offset + 1} {self._output} 2>/dev/null; true")
