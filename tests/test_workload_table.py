"""The (client, workload) table: every pair the configuration accepts has its row, every row builds writers
and readers the runner and the nemesis can drive (`kchaos.workloads.roles`), and a pair without a row is
refused in the configuration's own words. Nothing is started: building a workload touches no cluster."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import cast

import pytest

from kchaos.harness.cluster import KafkaCluster
from kchaos.model.client_names import CLIENTS, LIBRDKAFKA_PROCESS, client_refusal
from kchaos.model.config import load_config
from kchaos.model.history import HistoryWriter
from kchaos.model.run_files import RunDir
from kchaos.model.workload_names import EOS, WORKLOADS
from kchaos.workloads import table
from kchaos.workloads.roles import Processors, Readers, Writer
from kchaos.workloads.table import WORKLOADS as ROWS
from kchaos.workloads.table import Setting, workload_row

ACCEPTED = [(c, w) for c in CLIENTS for w in WORKLOADS if client_refusal(c, w) is None]


class StandInCluster:
    """What a workload reads of its cluster before it starts: where the brokers are."""

    bootstrap = "localhost:9092"
    run_id = "table-test"
    network = "kchaos-table-test"


def satisfies(built: object, protocol: type) -> list[str]:
    """The protocol's methods `built` lacks or cannot be called as the protocol calls them."""
    missing = []
    for name, member in inspect.getmembers(protocol, inspect.isfunction):
        if name.startswith("_"):
            continue
        found = getattr(built, name, None)
        wanted = [p for p in inspect.signature(member).parameters.values() if p.name != "self"]
        if not callable(found):
            missing.append(name)
            continue
        try:
            inspect.signature(found).bind(*(p.default if p.default is not p.empty else 1.0 for p in wanted))
        except TypeError:
            missing.append(name)
    return missing


def test_every_pair_the_configuration_accepts_has_a_row_and_every_row_is_accepted() -> None:
    assert len(ACCEPTED) == 12
    assert set(ROWS) == set(ACCEPTED)


@pytest.mark.parametrize(("client", "workload"), ACCEPTED)
def test_each_rows_factories_build_a_writer_and_readers(client: str, workload: str, tmp_path: Path) -> None:
    config = load_config(client=client, workload=workload, runs_dir=tmp_path, run_id="table-test")
    history = HistoryWriter(RunDir(tmp_path / "run"), config.run_id)
    try:
        image = None if table.CLIENT_IMAGES[config.client] is None else "kchaos/client:0"
        setting = Setting(config, cast(KafkaCluster, StandInCluster()), history, image, "4.3.1", "4.3.1")
        row = workload_row(config.client, config.workload)
        writer, readers = row.writer(setting), row.readers(setting)
        assert satisfies(writer, Writer) == []
        assert satisfies(readers, Readers) == []
        # the runner waits for eos processors to catch up, and only for them
        assert isinstance(readers, Processors) == (workload == EOS)
        # a writer that logs does so under its own module's name: a librdkafka line never reads as Java's
        if type(writer).__module__.startswith("kchaos.workloads.processes."):  # the classes one client's
            logger = getattr(writer, "log", None)  # workload inherits from the other's
            assert logger is not None and logger.name == type(writer).__module__, type(writer).__name__
    finally:
        history.finish()


def test_a_pair_without_a_row_is_refused_in_the_configurations_words(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(table, "WORKLOADS", {})
    with pytest.raises(ValueError, match="client: --client librdkafka-process has no --workload eos"):
        workload_row(LIBRDKAFKA_PROCESS, EOS)
    monkeypatch.setattr("kchaos.workloads.table.client_refusal", lambda client, workload: "client: refused")
    with pytest.raises(ValueError, match=r"^client: refused$"):
        workload_row(LIBRDKAFKA_PROCESS, EOS)
