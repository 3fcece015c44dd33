"""Generated damage to a history never costs the machine or a verdict: `kchaos check` of a history with
fields deleted, values of the wrong type or sign, huge and tiny times or repeated indexes ends, under a
4 GiB address-space limit and within 60 s, either in a verdict or in exit 2 with a line naming what is
wrong. A kill (the kernel's, for memory), a hang, a traceback or a bare "the harness failed" is a failure.

Each example is a real `kchaos check` in a process of its own, since the limit, the exit status and the
first line are what a user meets. A damaged history is refused before Spark starts (about a second); one
the damage left well-formed goes on to Spark and a verdict (about 25 s), so the README's test command runs
a fixed, small sample and the nightly workflow a larger random one.
"""

from __future__ import annotations

import json
import resource
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kchaos.model.history import HistoryWriter
from kchaos.model.history_schema import COLUMNS
from kchaos.model.phase_record import RUN_PHASES
from kchaos.model.run_files import RunDir
from tests.histories import HistoryBuilder

ROOT = Path(__file__).resolve().parent.parent
KCHAOS = ROOT / ".venv" / "bin" / "kchaos"
ADDRESS_SPACE = 4 << 30
SECONDS = 60
CONFIG = {
    "run_id": "malformed",
    "acks": "all",
    "min_insync_replicas": 2,
    "replication_factor": 3,
    "unclean_leader_election": False,
    "idempotence": True,
}


def _base_rows() -> list[dict[str, Any]]:
    """A whole, well-formed run's rows: sends on two partitions, a fault, leaders, every phase, the final
    read; the damage below is done to a copy of these."""
    history = HistoryBuilder(run_id="malformed")
    history.leader(0, 1, (1, 2, 3))
    written = {partition: history.sends(4, partition=partition) for partition in (0, 1)}
    history.fault("kill", "kill-0", "start", kind="process")
    history.advance(2.0)
    history.fault("kill", "kill-0", "stop", kind="process")
    history.phases(*RUN_PHASES[:4])
    for partition, pairs in written.items():
        history.final_reads(pairs, partition=partition)
    history.phases(*RUN_PHASES[4:])
    with tempfile.TemporaryDirectory() as tmp:
        files = RunDir(Path(tmp))
        files.history.mkdir(parents=True)
        writer = HistoryWriter(files, "malformed")
        history.replay(writer)
        writer.flush()
        return [json.loads(line) for line in files.history_staging.read_text(encoding="utf-8").splitlines()]


BASE = _base_rows()

#: Values of every kind a damaged file can hold where a row's field should be.
ODD_VALUES = st.sampled_from(
    [None, "", "7", "x" * 300, True, False, 0, -1, -(2**31) - 1, 2**31, 2**63 - 1, 2**63, 2**64, -(2**63),
     1.5, -0.0, 5e-324, 1e11, 1e300, -1e300, [], [1], {}, {"a": 1}]
)  # fmt: skip


@st.composite
def damage(draw: st.DrawFn) -> list[tuple[str, int, str, Any]]:
    """One to three edits of the base rows: delete a field, set it to an odd value, negate it, give a row
    another row's index, or add a field no row has."""
    edits = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["delete", "set", "negate", "repeat-index", "extra"]))
        row = draw(st.integers(0, len(BASE) - 1))
        name = draw(st.sampled_from(COLUMNS))
        value: Any = None
        if kind == "set":
            value = draw(ODD_VALUES)
        elif kind == "repeat-index":
            value = draw(st.integers(0, len(BASE) - 1))
        edits.append((kind, row, name, value))
    return edits


def damaged(edits: list[tuple[str, int, str, Any]]) -> list[dict[str, Any]]:
    rows = [dict(row) for row in BASE]
    for kind, at, name, value in edits:
        row = rows[at]
        if kind == "delete":
            row.pop(name, None)
        elif kind == "set":
            row[name] = value
        elif kind == "negate" and isinstance(row.get(name), int | float) and not isinstance(row[name], bool):
            row[name] = -row[name] if row[name] else -1
        elif kind == "repeat-index":
            row["index"] = BASE[value]["index"]
        elif kind == "extra":
            row[f"{name}_extra"] = 1
    return rows


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def check_damaged(edits: list[tuple[str, int, str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        files = RunDir(Path(tmp) / "malformed")
        files.history.mkdir(parents=True)
        files.config.write_text(json.dumps(CONFIG), encoding="utf-8")
        text = "".join(json.dumps(row) + "\n" for row in damaged(edits))
        files.history_staging.write_text(text, encoding="utf-8")
        try:
            result = subprocess.run(
                [str(KCHAOS), "check", str(files.path)], capture_output=True, text=True, timeout=SECONDS,
                preexec_fn=_limit_address_space, cwd=tmp,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            pytest.fail(f"kchaos check ran over {SECONDS}s for the damage {edits}")
    told = f"damage {edits}\nstdout: {result.stdout[-2000:]}\nstderr: {result.stderr[-2000:]}"
    assert result.returncode in (0, 1, 2), f"exit {result.returncode} (killed?) for {told}"
    assert "Traceback" not in result.stdout + result.stderr, told
    if result.returncode == 2:
        first = result.stderr.splitlines()[0] if result.stderr else ""
        assert first.startswith("kchaos: "), told
        assert "the harness failed" not in first, f"an unnamed failure, not a refusal: {told}"
    else:
        assert "\nverdict: " in "\n" + result.stdout, told


def test_the_undamaged_history_is_judged_ok_under_the_limit() -> None:
    """The base the damage starts from is a run `kchaos check` judges whole, so a refusal below is the
    damage's doing, and Spark itself fits in the address-space limit."""
    with tempfile.TemporaryDirectory() as tmp:
        files = RunDir(Path(tmp) / "malformed")
        files.history.mkdir(parents=True)
        files.config.write_text(json.dumps(CONFIG), encoding="utf-8")
        files.history_staging.write_text("".join(json.dumps(row) + "\n" for row in BASE), encoding="utf-8")
        result = subprocess.run(
            [str(KCHAOS), "check", str(files.path)], capture_output=True, text=True, timeout=SECONDS,
            preexec_fn=_limit_address_space, cwd=tmp,
        )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "verdict: ok" in result.stdout, result.stdout


@settings(max_examples=4, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damage())
def test_damaged_histories_end_in_a_verdict_or_a_named_refusal(
    edits: list[tuple[str, int, str, Any]],
) -> None:
    check_damaged(edits)


@pytest.mark.nightly
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damage())
def test_many_random_damaged_histories_end_in_a_verdict_or_a_named_refusal(
    edits: list[tuple[str, int, str, Any]],
) -> None:
    check_damaged(edits)
