"""One logged-in SSH connection to a machine, over which kchaos runs every command it runs there as root.

Paramiko (docs/own-machines.md says why that library): a pure-Python client, so kchaos needs no `ssh`
binary, no ControlMaster socket to clean up and no per-command process, and one connection carries the
nemesis's, the dumps' and the readiness checks' commands side by side on channels of their own.

Host keys are checked against a known_hosts file: a machine not listed there is refused, naming it, unless
the user asked to accept new keys for a first run (`--accept-new-host-keys`), which adds them to the file;
a key that differs from the listed one is always refused. A login that is not root runs each command
through `sudo -n` (passwordless sudo), checked when the session opens, so no command stalls on a prompt.
"""

from __future__ import annotations

import shlex
import threading
from dataclasses import dataclass, field
from pathlib import Path

import paramiko

from kchaos.harness.cluster_error import ClusterError
from kchaos.model.ssh_address import SshAddress

#: How long a connection, and a command that is not given its own limit, may take.
CONNECT_TIMEOUT_S = 20.0
COMMAND_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class SshLogin:
    """How kchaos logs in to every machine of a run: a private key (None: the agent's and ~/.ssh/id_*),
    the known_hosts file keys are checked against, and whether a key it does not list is accepted."""

    key: Path | None = None
    known_hosts: Path = field(default_factory=lambda: Path.home() / ".ssh" / "known_hosts")
    accept_new_host_keys: bool = False


#: Held while a known_hosts file is read and written back: the machines of a run are logged in to side by
#: side, and each must add its key to what the others added.
_KNOWN_HOSTS_LOCK = threading.Lock()


class _AcceptNew(paramiko.MissingHostKeyPolicy):
    """OpenSSH's `StrictHostKeyChecking=accept-new`: a host the file does not list is added to it."""

    def __init__(self, known_hosts: Path) -> None:
        self.known_hosts = known_hosts

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        with _KNOWN_HOSTS_LOCK:
            keys = paramiko.HostKeys()
            if self.known_hosts.is_file():
                keys.load(str(self.known_hosts))
            keys.add(hostname, key.get_name(), key)
            keys.save(str(self.known_hosts))


class SshSession:
    """A connection to `address`, opened by `open`; `run` runs a shell command there as root."""

    def __init__(self, address: SshAddress, login: SshLogin) -> None:
        self.address = address
        self.login = login
        self._client: paramiko.SSHClient | None = None
        self._sudo = ""
        self._lock = threading.Lock()

    def open(self) -> SshSession:
        """Logs in, checking the host key; ClusterError naming the machine and the fix otherwise."""
        client = paramiko.SSHClient()
        known = self.login.known_hosts
        if known.is_file():
            client.load_host_keys(str(known))
        if self.login.accept_new_host_keys:
            client.set_missing_host_key_policy(_AcceptNew(known))
        else:
            client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            client.connect(
                self.address.bare_host, port=self.address.port, username=self.address.user,
                key_filename=None if self.login.key is None else str(self.login.key),
                timeout=CONNECT_TIMEOUT_S, banner_timeout=CONNECT_TIMEOUT_S, auth_timeout=CONNECT_TIMEOUT_S,
            )  # fmt: skip
        except paramiko.BadHostKeyException:
            raise ClusterError(
                f"nodes: {self.address}'s host key differs from the one {known} lists for it: the machine "
                "was reinstalled, or this is not the machine you meant; check it, then remove its old line"
            ) from None
        except paramiko.SSHException as exc:
            hint = (
                f"; add its key to {known} (ssh-keyscan), or pass --accept-new-host-keys for a first run"
                if "not found in known_hosts" in str(exc)
                else "; check the user, --ssh-key and that sshd answers"
            )
            raise ClusterError(f"nodes: {self.address}: {exc}{hint}") from None
        except OSError as exc:
            raise ClusterError(f"nodes: {self.address} could not be reached ({exc})") from None
        self._client = client
        if self.address.user != "root":
            self._sudo = "sudo -n "
            status, _, err = self.run_status("true")
            if status != 0:
                self.close()
                raise ClusterError(
                    f"nodes: {self.address}: {self.address.user} has no passwordless sudo ({err.strip()}); "
                    "kchaos runs its broker and its iptables rules as root: log in as root, or allow "
                    f"{self.address.user} sudo without a password"
                )
        return self

    def run_status(
        self, command: str, stdin: bytes | None = None, timeout: float = COMMAND_TIMEOUT_S
    ) -> tuple[int, str, str]:
        """`command` (a shell command line) run as root: its exit status, its output and its error output.
        ClusterError when the connection is gone."""
        status, out, err = self._exec(command, stdin, timeout)
        return status, out.decode(errors="replace"), err.decode(errors="replace")

    def run_bytes(
        self, command: str, stdin: bytes | None = None, timeout: float = COMMAND_TIMEOUT_S
    ) -> bytes:
        """`command`'s output as bytes; ClusterError naming the machine, the command and its error output
        when it fails."""
        status, out, err = self._exec(command, stdin, timeout)
        if status != 0:
            said = (err or out[-800:]).decode(errors="replace")[-800:]
            raise ClusterError(f"{self.address}: {command[:200]} failed ({status}): {said}")
        return out

    def run(self, command: str, stdin: bytes | None = None, timeout: float = COMMAND_TIMEOUT_S) -> str:
        """`run_bytes`, decoded."""
        return self.run_bytes(command, stdin, timeout).decode(errors="replace")

    def _exec(self, command: str, stdin: bytes | None, timeout: float) -> tuple[int, bytes, bytes]:
        with self._lock:
            client = self._client
        if client is None:
            raise ClusterError(f"{self.address}: not connected")
        line = f"{self._sudo}sh -c {shlex.quote(command)}"
        try:
            channel_in, channel_out, channel_err = client.exec_command(line, timeout=timeout)
            if stdin is not None:
                channel_in.write(stdin)
            channel_in.channel.shutdown_write()
            out = channel_out.read()
            err = channel_err.read()
            status = channel_out.channel.recv_exit_status()
        except (paramiko.SSHException, OSError) as exc:
            raise ClusterError(f"{self.address}: {command[:200]} could not run: {exc}") from None
        return status, out, err

    def close(self) -> None:
        """Ends the connection; safe to call twice."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()
