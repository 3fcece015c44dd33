"""The fault table: one row per fault, read by spec parsing, the schedule's classes, the report and
`kchaos faults`, and the account of it in docs/faults.md."""

from __future__ import annotations

import random
from typing import cast

import pytest
from click.testing import CliRunner

from kchaos.harness.cluster import KafkaCluster
from kchaos.model.fault_definition import TREATMENTS
from kchaos.model.fault_options import SpecError
from kchaos.model.fault_spec import FAULT_NAMES, RETIRED_NAMES, parse_spec
from kchaos.model.fault_table import FAULTS, KINDS, faults_taking_clients, faults_taking_zookeeper, listing
from kchaos.nemesis.carriers import fault_class, fault_classes
from kchaos.nemesis.fault import Fault
from kchaos.nemesis.zookeeper_faults import ZooKeeperOutage
from kchaos.runner.cli import main
from kchaos.spark_analysis.report_plots import DEFAULT_COLOUR, KIND_COLOURS
from tests.docs_text import section

#: The kind every fault has always recorded in its history; a history keeps meaning what it meant.
RECORDED_KINDS = {
    "kill": "crash", "power-loss": "power-loss", "stop": "stop", "pause": "pause", "rolling-restart": "stop",
    "isolate": "partition", "cut-replication": "partition", "halves": "partition", "ring": "partition",
    "bridge": "partition", "cut-clients": "partition", "one-way": "partition", "cut-zookeeper": "partition",
    "latency": "degrade", "loss": "degrade", "bandwidth": "degrade",
    "hold": "request", "drop": "request", "delay": "request",
    "unclean-election": "unclean-election", "min-isr": "reconfigure", "reassign": "reassign",
    "add-broker": "membership", "remove-broker": "membership", "remove-voter": "quorum",
    "add-voter": "quorum",
    "clock": "clock", "disk-full": "disk-full", "corrupt": "corrupt", "kill-member": "client-crash",
    "churn-members": "client-crash", "slow-disk": "slow-disk", "replace-disk": "disk-replaced",
}  # fmt: skip


def fault_leaves(cls: type[Fault] = Fault) -> set[type[Fault]]:
    """The fault classes of `nemesis` that nothing derives from: the ones a schedule can start."""
    found: set[type[Fault]] = set()
    for sub in cls.__subclasses__():
        if sub.__module__.startswith("kchaos.nemesis."):
            found |= fault_leaves(sub) or {sub}
    return found


def test_every_fault_and_aim_has_exactly_one_class_and_every_class_a_fault() -> None:
    """Each fault has a class for nodes, one for ZooKeeper where it can aim there, one for client
    processes where it can hit them; every class the nemesis has carries some fault out."""
    classes = fault_classes()
    aims = {(name, "nodes") for name in FAULTS}
    aims |= {(name, "zookeeper") for name in faults_taking_zookeeper()}
    aims |= {(name, "clients") for name in faults_taking_clients()}
    assert set(classes) == aims
    assert set(classes.values()) == fault_leaves()
    broker_classes = [classes[(name, "nodes")] for name in FAULTS]
    assert len(set(broker_classes)) == len(broker_classes)


def test_a_fault_is_named_and_kinded_by_its_definition() -> None:
    cluster = cast(KafkaCluster, None)  # constructing a fault touches no cluster
    for name in FAULTS:
        spec = parse_spec(name)
        fault = fault_class(spec)(cluster, "topic", 0, f"{name}#1", spec, random.Random(0))
        assert (fault.name, fault.kind) == (name, RECORDED_KINDS[name])
    targeted = parse_spec("kill:target=leader")
    fault = fault_class(targeted)(cluster, "topic", 0, "k#1", targeted, random.Random(0))
    assert (fault.name, fault.kind) == ("kill", "crash")
    for name in faults_taking_zookeeper():
        spec = parse_spec(f"{name}:target=zookeeper")
        fault = fault_class(spec)(cluster, "topic", 0, f"{name}#1", spec, random.Random(0))
        assert (type(fault), fault.name, fault.kind) == (ZooKeeperOutage, name, "zookeeper")


def test_every_kind_is_some_faults_and_has_a_treatment() -> None:
    kinds = {fault.kind.name for fault in FAULTS.values()}
    kinds |= {fault.zookeeper_kind.name for fault in FAULTS.values() if fault.zookeeper_kind is not None}
    kinds |= {fault.client_kind.name for fault in FAULTS.values() if fault.client_kind is not None}
    assert kinds == set(KINDS)
    assert all(kind.treated_as in TREATMENTS for kind in KINDS.values())
    assert all(KINDS[fault.kind.name] is fault.kind for fault in FAULTS.values())


def test_the_command_line_names_are_the_rows() -> None:
    assert tuple(FAULTS) == FAULT_NAMES
    for name, fault in FAULTS.items():
        assert dict(parse_spec(name).options) == fault.defaults


def test_the_report_shades_each_kind_in_its_own_colour() -> None:
    assert {name: kind.colour for name, kind in KINDS.items()} == KIND_COLOURS
    colours = [colour.lower() for colour in KIND_COLOURS.values()]
    assert len(set(colours)) == len(colours)
    assert DEFAULT_COLOUR.lower() not in colours


def test_kchaos_faults_prints_the_table() -> None:
    result = CliRunner().invoke(main, ["faults"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    columns = [lines[0].index(heading) for heading in ("kind", "options", "the guarantee oracle")]
    for name, kind, options, treated_as in listing():
        row = next(line for line in lines if line.split()[:1] == [name])
        assert [row.index(kind, len(name)), row.index(options, columns[1]), row.index(treated_as)] == columns
    assert "aliases" not in result.output


@pytest.mark.parametrize(("old", "new"), RETIRED_NAMES.items())
def test_a_retired_name_is_refused_with_its_spelling_today(old: str, new: str) -> None:
    with pytest.raises(SpecError, match=f"fault '{old}' is retired; write {new} instead"):
        parse_spec(old)
    with pytest.raises(SpecError, match="retired"):
        parse_spec(f"{old}:target=1")


def markdown_tables(section: str) -> dict[str, list[list[str]]]:
    """The section's tables by their first heading, each as rows of cells (the heading row left out)."""
    tables: dict[str, list[list[str]]] = {}
    rows: list[list[str]] = []
    for line in [*section.splitlines(), ""]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
        elif rows:
            tables[rows[0][0]] = rows[2:]
            rows = []
    return tables


def test_the_docs_list_the_tables_faults_and_kinds() -> None:
    text = section("faults.md", "# Faults (`--nemesis`)")
    tables = markdown_tables(text)
    assert [row[0] for row in tables["fault"]] == [f"`{name}`" for name in FAULTS]
    for (_, options, *_), fault in zip(tables["fault"], FAULTS.values(), strict=True):
        assert all(f"`{key}` ({value}" in options for key, value in fault.defaults.items()), options
        assert options.count("`") == 2 * len(fault.defaults), options
    assert tables["kind"] == [
        [
            f"`{name}`",
            ", ".join(
                [f"`{fault.name}`" for fault in FAULTS.values() if fault.kind is kind]
                + [
                    f"`{fault.name}:target=zookeeper`"
                    for fault in FAULTS.values()
                    if fault.zookeeper_kind is kind
                ]
                + [
                    f"`{fault.name}:target=producer-N`"
                    for fault in FAULTS.values()
                    if fault.client_kind is kind
                ]
            ),
            TREATMENTS[kind.treated_as],
        ]
        for name, kind in KINDS.items()
    ]
    assert "`kchaos faults`" in text
