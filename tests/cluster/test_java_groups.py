"""Consumer groups on a real cluster, by either client and either group protocol: `kchaos run --workload
group` as a user runs it, with one member crashed mid-run (`kill-member`), so the group must rebalance its
partitions to the others and take the member back. Each run must end `ok` with the group checks judged (a
check not run would make the verdict vacuous), its members' rows written by the client asked for (for
`--client java`, the release's Java consumer in a container of its own per member), the crash and the
rebalances it caused in the history, and every assignment made under the group protocol asked for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from kchaos.checkers.rules.anomaly_names import (
    EOS_DUPLICATE,
    EOS_LOST,
    GROUP_DUPLICATE,
    GROUP_LOST,
    OFFSET_REGRESSION,
)
from kchaos.model.events import ASSIGN, COMMIT, MEMBER_CRASH, MEMBER_RESTART, OK, POLL, TXN_COMMIT, TXN_SEND
from kchaos.model.history_files import history_path
from tests.cluster.conftest import kchaos_run

pytestmark = pytest.mark.cluster

#: The installed command, as a user runs it (beside the interpreter of the virtualenv).
MEMBERS = 3


def _judged(results: dict[str, Any], never: tuple[str, ...], permitted: str) -> None:
    """The run's verdict is `ok`, or `permitted` for records the group was handed twice alone (a crashed
    member's uncommitted records go to its successor: at-least-once delivery, documented), with every
    anomaly the rules forbid checked and absent."""
    anomalies = results["anomalies"]
    assert results["verdict"] in ("ok", "permitted"), results
    for name in never:
        assert anomalies[name]["checked"] and anomalies[name]["count"] == 0, (name, anomalies[name])
    assert anomalies[permitted]["checked"], anomalies[permitted]
    if results["verdict"] == "permitted":
        assert {name for name, a in anomalies.items() if a["verdict"] == "permitted"} == {permitted}, results
    print({name: anomalies[name]["count"] for name in (*never, permitted)})


def _group_run(tmp_path: Path, run_id: str, *options: str) -> tuple[dict[str, Any], pd.DataFrame]:
    """Runs the group workload with `MEMBERS` members and one crashed; returns its results and the members'
    rows, after asserting what every such run must show."""
    files = kchaos_run(
        tmp_path, run_id, "--workload", "group", "--consumers", str(MEMBERS), "--duration", "20",
        "--nemesis", "kill-member", "--fault-interval", "3", "--fault-duration", "5", *options,
    )  # fmt: skip
    results = json.loads(files.results.read_text(encoding="utf-8"))
    _judged(results, (GROUP_LOST, OFFSET_REGRESSION), GROUP_DUPLICATE)
    history = pd.read_parquet(history_path(files.path))
    members = history[history["process"].str.startswith("member-")]
    ok = members[members["type"] == OK]
    assert set(ok[ok["f"] == POLL]["process"]) == {f"member-{n}" for n in range(MEMBERS)}
    assert (ok["f"] == COMMIT).sum() > 0
    crashed = members[members["f"] == MEMBER_CRASH]["process"]
    assert len(crashed) == 1 and (members["f"] == MEMBER_RESTART).sum() == 1
    # The crash moved the crashed member's partitions: some other member was assigned after it.
    crash_index = members[members["f"] == MEMBER_CRASH].index[0]
    later = ok[(ok["f"] == ASSIGN) & (ok.index > crash_index) & (ok["process"] != crashed.iloc[0])]
    assert len(later) > 0, "no member was assigned anything after the crash"
    return results, members


def _protocols(members: pd.DataFrame) -> set[str]:
    assigns = members[(members["f"] == ASSIGN) & (members["type"] == OK)]
    return {json.loads(detail)["protocol"] for detail in assigns["detail"]}


# Nightly: CI runs a Java group of three under a client fault, judged the same way, on the classic protocol
# with its members' logs kept (tests/cluster/test_client_faults.py::test_a_paused_java_group_member_loses
# _its_partitions_to_the_others_and_nothing_is_lost), and a crashed eos processor in
# tests/chaos/test_exactly_once.py.
@pytest.mark.nightly
def test_a_java_group_run_passes_with_its_members_judged(tmp_path: Path) -> None:
    _, members = _group_run(tmp_path, "javagroup", "--client", "java", "--kafka-version", "4.3.1")
    assert _protocols(members) == {"classic"}
    assert (tmp_path / "javagroup" / "logs" / "member-0.log").exists()  # the worker's own log, kept


# Nightly: CI runs KIP-848's protocol with librdkafka's members as processes
# (tests/cluster/test_rdkafka_groups.py), the same client and member code paths of the protocol.
@pytest.mark.nightly
def test_a_librdkafka_group_on_the_consumer_protocol_passes(tmp_path: Path) -> None:
    _, members = _group_run(tmp_path, "kip848", "--group-protocol", "consumer", "--kafka-version", "4.3.1")
    assert _protocols(members) == {"consumer"}


@pytest.mark.nightly
def test_a_java_group_on_the_consumer_protocol_passes(tmp_path: Path) -> None:
    _, members = _group_run(
        tmp_path, "javakip848", "--client", "java", "--group-protocol", "consumer", "--kafka-version", "4.3.1"
    )
    assert _protocols(members) == {"consumer"}


@pytest.mark.nightly
def test_a_java_group_on_an_older_release_passes(tmp_path: Path) -> None:
    _, members = _group_run(tmp_path, "javagroup392", "--client", "java", "--kafka-version", "3.9.2")
    assert _protocols(members) == {"classic"}


def _eos_run(tmp_path: Path, run_id: str, *options: str, client: str = "java") -> pd.DataFrame:
    """Runs the eos workload with processors of `client` (processes of their own), one crashed mid-run;
    returns the processors' rows after asserting what every such run must show: `ok`, with the
    exactly-once checks judged."""
    files = kchaos_run(
        tmp_path, run_id, "--client", client, "--workload", "eos", "--consumers", "2", "--duration", "20",
        "--rate", "100", "--nemesis", "kill-member", "--fault-interval", "3", "--fault-duration", "5",
        *options,
    )  # fmt: skip
    results = json.loads(files.results.read_text(encoding="utf-8"))
    _judged(results, (EOS_LOST, EOS_DUPLICATE, GROUP_LOST, OFFSET_REGRESSION), GROUP_DUPLICATE)
    history = pd.read_parquet(history_path(files.path))
    processors = history[history["process"].str.startswith("processor-")]
    ok = processors[processors["type"] == OK]
    committed = ok[ok["f"] == COMMIT]
    assert len(committed) > 0 and {json.loads(d)["mode"] for d in committed["detail"]} == {"transaction"}
    assert (ok["f"] == TXN_SEND).sum() > 0 and (ok["f"] == TXN_COMMIT).sum() > 0
    assert (processors["f"] == MEMBER_CRASH).sum() == 1 and (processors["f"] == MEMBER_RESTART).sum() == 1
    return processors


# Nightly: CI judges an eos run with a processor crashed mid-run and a leader killed in
# tests/chaos/test_exactly_once.py (librdkafka processors), and the Java client's transactions with a commit
# outstanding in tests/cluster/test_txn_attacks.py.
@pytest.mark.nightly
def test_a_java_eos_run_passes_with_its_output_judged(tmp_path: Path) -> None:
    processors = _eos_run(tmp_path, "javaeos", "--kafka-version", "4.3.1")
    assert _protocols(processors) == {"classic"}


@pytest.mark.nightly
def test_a_java_eos_run_on_the_consumer_protocol_passes(tmp_path: Path) -> None:
    processors = _eos_run(tmp_path, "javaeos848", "--kafka-version", "4.3.1", "--group-protocol", "consumer")
    assert _protocols(processors) == {"consumer"}
