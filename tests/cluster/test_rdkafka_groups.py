"""Consumer groups and eos processors that are librdkafka processes on a real cluster: `kchaos run
--client librdkafka-process --workload group` as a user runs it, one member crashed mid-run (`kill-member`:
its container killed), must end `ok` with the group checks judged, as the Java members' run does
(tests/cluster/test_java_groups.py, whose checks these reuse), its members' rows from processes in
containers of their own (each one's log kept) and the crash rebalanced; `--workload eos`'s processors the
same, with the exactly-once checks judged too. CI runs a group of these processes on KIP-848's consumer
protocol under churn (tests/cluster/test_churn.py: members crashed and started again every two seconds or
so, the same checks), and eos processors on the classic one as the default client of
tests/chaos/test_exactly_once.py; these run nightly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kchaos.model.events import COMMIT, OK
from tests.cluster.test_java_groups import _eos_run, _group_run, _protocols

pytestmark = pytest.mark.cluster


def _processes(run: Path, names: list[str]) -> None:
    """The run's readers were librdkafka processes: its client image is the librdkafka worker's, and each
    process left its own log."""
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    assert config["client"] == "librdkafka-process"
    assert str(config["client_image"]).startswith("kchaos/rdkafka-client:"), config["client_image"]
    for name in names:
        assert (run / "logs" / f"{name}.log").exists(), name


# CI: the same processes, protocol and checks under churn, many crashes instead of one, in
# tests/cluster/test_churn.py: test_a_librdkafka_group_churned_on_the_consumer_protocol_loses_nothing_it_...
@pytest.mark.nightly
def test_a_librdkafka_process_group_on_the_consumer_protocol_passes_with_its_members_judged(
    tmp_path: Path,
) -> None:
    _, members = _group_run(
        tmp_path, "rdkgroup", "--client", "librdkafka-process", "--kafka-version", "4.3.1",
        "--group-protocol", "consumer",
    )  # fmt: skip
    assert _protocols(members) == {"consumer"}
    _processes(tmp_path / "rdkgroup", ["member-0", "member-1", "member-2"])


@pytest.mark.nightly
def test_a_librdkafka_process_group_on_the_classic_protocol_passes(tmp_path: Path) -> None:
    _, members = _group_run(
        tmp_path, "rdkgroupc", "--client", "librdkafka-process", "--kafka-version", "4.3.1"
    )
    assert _protocols(members) == {"classic"}


@pytest.mark.nightly  # CI: librdkafka processors are the default client of tests/chaos/test_exactly_once.py
def test_a_librdkafka_process_eos_run_passes_with_its_output_judged(tmp_path: Path) -> None:
    processors = _eos_run(tmp_path, "rdkeos", "--kafka-version", "4.3.1", client="librdkafka-process")
    assert _protocols(processors) == {"classic"}
    _processes(tmp_path / "rdkeos", ["processor-0", "processor-1"])


@pytest.mark.nightly
def test_a_librdkafka_process_group_on_the_consumer_protocol_with_automatic_commits_passes(
    tmp_path: Path,
) -> None:
    """KIP-848's incremental assignment steps (often empty) and librdkafka's own automatic commits, each
    reported by the client's commit callback, as the member processes print them."""
    _, members = _group_run(
        tmp_path, "rdkgroup848", "--client", "librdkafka-process", "--kafka-version", "4.3.1",
        "--group-protocol", "consumer", "--commit", "auto",
    )  # fmt: skip
    assert _protocols(members) == {"consumer"}
    commits = members[(members["f"] == COMMIT) & (members["type"] == OK)]
    assert {json.loads(detail)["mode"] for detail in commits["detail"]} == {"auto"}
    _processes(tmp_path / "rdkgroup848", ["member-0", "member-1", "member-2"])


@pytest.mark.nightly
def test_a_librdkafka_process_eos_run_on_the_consumer_protocol_passes(tmp_path: Path) -> None:
    processors = _eos_run(
        tmp_path, "rdkeos848", "--kafka-version", "4.3.1", "--group-protocol", "consumer",
        client="librdkafka-process",
    )  # fmt: skip
    assert _protocols(processors) == {"consumer"}
    _processes(tmp_path / "rdkeos848", ["processor-0", "processor-1"])
