"""The watchdog's side of the pipe, without a Docker engine: which runs it spares, and that it sweeps only
once the harness is gone. `tests/cluster/test_cleanup.py` kills a real harness with SIGKILL and watches its
containers go."""

from __future__ import annotations

import io
import os
import subprocess

import pytest

import kchaos.harness.labels
import kchaos.harness.leftover_topics
from kchaos.harness import watchdog


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


@pytest.fixture
def swept(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, set[str]]]:
    calls: list[tuple[int, set[str]]] = []

    def sweep_owner(pid: int, spared: set[str]) -> list[str]:
        calls.append((pid, set(spared)))
        return []

    monkeypatch.setattr(kchaos.harness.labels, "sweep_owner", sweep_owner)
    return calls


def test_once_the_pipe_closes_it_sweeps_the_dead_harness_sparing_the_runs_it_kept(
    swept: list[tuple[int, set[str]]],
) -> None:
    pid = dead_pid()
    watchdog.watch(pid, io.BytesIO(b"keep kept-run\nsomething else\nkeep \nkeep other-kept\n"))
    assert swept == [(pid, {"kept-run", "other-kept"})]


def test_it_gives_a_harness_still_exiting_a_grace_before_it_sweeps(
    swept: list[tuple[int, set[str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A harness that ends normally closes the pipe a moment before it exits: the watchdog waits for the
    pid to be gone, and sweeps after the grace if it never is (a pid it cannot see end)."""
    monkeypatch.setattr(watchdog, "EXIT_GRACE", 0.3)
    watchdog.watch(os.getpid(), io.BytesIO(b""))
    assert swept == [(os.getpid(), set())]


def test_keeping_a_run_without_a_watchdog_is_nothing() -> None:
    watchdog.Guard().keep("any")  # no process started: nothing to tell, and no error


def test_a_watchdog_started_wrongly_says_how_it_is_started() -> None:
    assert watchdog.main([]) == 2
    assert watchdog.main(["not-a-pid"]) == 2


def test_it_deletes_what_a_killed_run_still_owed_a_cluster_kchaos_did_not_start(
    swept: list[tuple[int, set[str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--bootstrap` runs tell it the topics they created there; those paid for (deleted by the run) or kept
    (`--keep-cluster`) stay, the rest are deleted with the run's groups once the harness is gone."""
    deleted: list[tuple[str, str, list[str]]] = []

    def remove(bootstrap: str, run_id: str, topics: list[str]) -> list[str]:
        deleted.append((bootstrap, run_id, list(topics)))
        return topics

    monkeypatch.setattr(kchaos.harness.leftover_topics, "remove_run_leftovers", remove)
    pid = dead_pid()
    pipe = io.BytesIO(
        b"owe killed h:9092 kchaos\nowe killed h:9092 kchaos,kchaos-1\n\nowe done h:9092 t\npaid done\n"
        b"owe kept h:9092 k\nkeep kept\nowe torn h:9092\n"
    )
    assert watchdog.watch(pid, pipe) == ["kchaos", "kchaos-1"]
    assert deleted == [("h:9092", "killed", ["kchaos", "kchaos-1"])]
