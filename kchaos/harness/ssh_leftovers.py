"""Which machines a run still owes a cleanup, kept on this host so that a run killed outright is cleaned too.

A run on SSH nodes writes a record before it installs anything (`~/.cache/kchaos/ssh-runs/<run id>.json`:
its process, its machines, how it logs in) and deletes it once every machine is clean. A record whose
process is gone is a run that could not clean up: its watchdog (`kchaos.harness.watchdog`) cleans its
machines within seconds of a SIGKILL, and the next run's start or `kchaos clean` cleans what even the
watchdog could not (the machine was unreachable, the host rebooted).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Collection
from pathlib import Path

from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.ssh_install import uninstall
from kchaos.harness.ssh_session import SshLogin, SshSession
from kchaos.model.host_process import pid_alive
from kchaos.model.ssh_address import SshAddress, parse_ssh_address

#: Where the records live: kchaos's own directory of the user's cache.
RECORDS = Path.home() / ".cache" / "kchaos" / "ssh-runs"


def record(
    run_id: str, machines: tuple[SshAddress, ...], login: SshLogin, service: str | None = None
) -> None:
    """Notes that run `run_id` of this process is about to install on `machines` (or to fault the
    `service` they run, which a cleanup starts again)."""
    RECORDS.mkdir(parents=True, exist_ok=True)
    entry = {
        "pid": os.getpid(), "run_id": run_id, "nodes": [str(machine) for machine in machines],
        "key": None if login.key is None else str(login.key), "known_hosts": str(login.known_hosts),
        "service": service,
    }  # fmt: skip
    path = RECORDS / f"{run_id}.json"
    path.with_suffix(".tmp").write_text(json.dumps(entry))
    path.with_suffix(".tmp").replace(path)


def keep(run_id: str) -> None:
    """Run `run_id`'s cluster is kept for inspection: only `kchaos clean --all` removes it from its
    machines (nothing happens if the run has no record: it ran no machine)."""
    path = RECORDS / f"{run_id}.json"
    with contextlib.suppress(OSError, ValueError):
        entry = json.loads(path.read_text()) | {"kept": True}
        path.write_text(json.dumps(entry))


def forget(run_id: str) -> None:
    """Run `run_id` left nothing on its machines."""
    (RECORDS / f"{run_id}.json").unlink(missing_ok=True)


def clean_abandoned(
    owner: int | None = None, spared: Collection[str] = (), everything: bool = False
) -> list[str]:
    """Cleans the machines of every run whose process is gone but those kept (`everything`: kept ones
    too), or, given `owner`, of that process's runs but `spared`; forgets those it cleaned everywhere and
    returns what it cleaned, one line per machine. A machine it cannot reach keeps its run's record for
    the next try."""
    if not RECORDS.is_dir():
        return []
    cleaned: list[str] = []
    for path in sorted(RECORDS.glob("*.json")):
        try:
            entry = json.loads(path.read_text())
            pid, run_id = int(entry["pid"]), str(entry["run_id"])
            machines = [parse_ssh_address(str(text)) for text in entry["nodes"]]
            key = None if entry.get("key") is None else Path(str(entry["key"]))
            login = SshLogin(key, Path(str(entry["known_hosts"])))
            service = None if entry.get("service") is None else str(entry["service"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not a record of ours, or half-written: nothing to act on
        if run_id in spared or (pid != owner if owner is not None else pid_alive(pid)):
            continue
        if owner is None and entry.get("kept") and not everything:
            continue
        done = True
        for machine in machines:
            try:
                session = SshSession(machine, login).open()
                try:
                    uninstall(session, run_id, service)
                finally:
                    session.close()
            except ClusterError:
                done = False
                continue
            cleaned.append(f"run {run_id} on {machine}")
        if done:
            path.unlink(missing_ok=True)
    return cleaned
