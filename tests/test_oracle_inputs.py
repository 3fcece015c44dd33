"""One schema for what the oracle reads: every writer's `config.json` reads back as the inputs it wrote, old
ones still read, and a bad value is refused naming the field and the fix."""

from __future__ import annotations

from typing import Any

import pytest

from kchaos.checkers.importers.verifiable import verifiable_inputs
from kchaos.checkers.results import guarantee_context
from kchaos.checkers.rules.anomaly_names import LOST_WRITE
from kchaos.checkers.rules.verdicts import judge
from kchaos.model.config import ConfigError, load_config
from kchaos.model.oracle_inputs import OracleInputError, OracleInputs, parse_acks

#: A config.json as runs wrote it before OracleInputs: the five keys, nothing else.
OLD: dict[str, Any] = {
    "acks": "all",
    "min_insync_replicas": 2,
    "replication_factor": 3,
    "unclean_leader_election": False,
    "idempotence": True,
}


@pytest.mark.parametrize(
    ("raw", "acks"), [("all", "all"), ("-1", "all"), (-1, "all"), (" ALL ", "all"), (1, "1")]
)
def test_acks_has_one_spelling(raw: object, acks: str) -> None:
    assert parse_acks(raw) == acks


@pytest.mark.parametrize("raw", ["0", 0, None, "leader"])
def test_acks_the_oracle_has_no_rules_for_are_refused_with_the_fix(raw: object) -> None:
    with pytest.raises(OracleInputError, match="use all or 1"):
        parse_acks(raw)


def test_the_run_refuses_what_the_check_would_refuse() -> None:
    """The run configuration calls the same validation, so a run never writes acks its check cannot judge."""
    assert load_config(acks="-1").acks == "all"
    with pytest.raises(ConfigError, match="use all or 1"):
        load_config(acks="0")


def test_every_writer_round_trips() -> None:
    run = load_config(topic_config={"flush.messages": "1"})
    written = run.to_json_dict()
    assert OracleInputs.from_config(written) == run.oracle_inputs()
    assert OracleInputs.from_config(written).synced_every_append
    imported = verifiable_inputs(acks="-1", idempotence=None)
    assert (imported.acks, imported.idempotence) == ("all", False)
    assert OracleInputs.from_config(imported.to_json()) == imported


def test_an_old_config_still_reads() -> None:
    inputs = OracleInputs.from_config(OLD)
    assert (inputs.acks, inputs.min_insync_replicas, inputs.partitions, inputs.synced_every_append) == (
        "all",
        2,
        None,
        False,
    )
    assert inputs.to_json() == OLD


def test_min_insync_replicas_is_not_required() -> None:
    """No rule turns on it, so a config.json without it is judged exactly as one with it."""
    without = {key: value for key, value in OLD.items() if key != "min_insync_replicas"}
    assert OracleInputs.from_config(without).min_insync_replicas is None
    ctx = guarantee_context(without, [])
    assert judge(LOST_WRITE, 1, ctx) == judge(LOST_WRITE, 1, guarantee_context(OLD, []))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"acks": None}, "acks=None"),
        ({"replication_factor": 0}, "replication_factor=0 in config.json: give a whole number of at least 1"),
        ({"replication_factor": "three"}, "replication_factor='three'"),
        (
            {"unclean_leader_election": "false"},
            "unclean_leader_election='false' in config.json: give true or false",
        ),
        ({"idempotence": 1}, "idempotence=1 in config.json: give true or false"),
        ({"min_insync_replicas": 4}, "min_insync_replicas=4 exceeds replication_factor=3"),
        ({"topic_config": ["flush.messages=1"]}, "topic_config=.* give a mapping"),
    ],
)
def test_a_bad_value_names_the_field_and_the_fix(change: dict[str, Any], message: str) -> None:
    with pytest.raises(OracleInputError, match=message):
        OracleInputs.from_config({**OLD, **change})


def test_a_missing_field_is_named_with_what_to_add() -> None:
    with pytest.raises(
        OracleInputError, match=r"config\.json lacks acks, idempotence;.*add acks \(the producers'"
    ):
        OracleInputs.from_config({"replication_factor": 3, "unclean_leader_election": False})
