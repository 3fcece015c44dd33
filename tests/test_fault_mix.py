"""`--nemesis mix:kinds=...`: faults drawn with the seed, each a concrete spec this run's shape can take.

A mix is only worth running if what it draws is real (every drawn fault one `--nemesis` would accept for
this very run), reproducible (same seed, same plan, so a finding can be replayed), and varied (the seed
reaches every target a fault takes, not the same few). A kind that cannot be drawn is refused with the
configuration, naming the field and the fix, before any container starts.
"""

from __future__ import annotations

import json
from collections import Counter
from itertools import islice
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from kchaos.model.config import ConfigError, RunConfig, load_config
from kchaos.model.fault_mix import drawable_specs, is_mix, parse_mix
from kchaos.model.fault_options import SpecError
from kchaos.model.fault_plan import fault_sequence, plan
from kchaos.model.fault_spec import check_cluster, parse_spec
from kchaos.model.fault_table import FAULTS
from kchaos.nemesis.schedule import write_plan

#: A mix that fits in a short run: three faults of 3 s after 3 s of quiet each, then the tail.
SHORT = {"fault_duration": 3.0, "fault_interval": 3.0, "duration": 120.0}


def mix_config(kinds: str = "kill,isolate,pause", **values: object) -> RunConfig:
    return load_config(**{**SHORT, "nemesis": f"mix:kinds={kinds}", "schedule": "random", **values})


def refusal(**values: object) -> str:
    with pytest.raises(ConfigError) as error:
        load_config(**{**SHORT, **values})
    return str(error.value)


def schedule_json(config: RunConfig, tmp_path: Path, name: str) -> str:
    path = tmp_path / name
    write_plan(plan(config), path)
    return path.read_text(encoding="utf-8")


def test_the_same_seed_plans_the_same_concrete_faults_and_another_seed_others(tmp_path: Path) -> None:
    first = schedule_json(mix_config(seed=11), tmp_path, "a.json")
    assert first == schedule_json(mix_config(seed=11), tmp_path, "b.json")
    faults = [p["fault"] for p in json.loads(first)]
    # Concrete specs, the target spelled out: schedule.json says which fault hit what.
    assert faults and all(
        parse_spec(f).name in ("kill", "isolate", "pause") and ":target=" in f for f in faults
    )
    others = {schedule_json(mix_config(seed=seed), tmp_path, f"{seed}.json") for seed in range(12, 22)}
    assert first not in others and len(others) > 5


#: Run shapes a mix must respect: brokers, replication, metadata mode, workload, client, readers, writers,
#: spare brokers, dedicated controllers and spare ones.
SHAPES = st.fixed_dictionaries(
    {
        "brokers": st.integers(1, 5),
        "metadata": st.sampled_from(["kraft", "zookeeper"]),
        "workload": st.sampled_from(["sends", "group", "txn", "eos"]),
        "client": st.sampled_from(["librdkafka", "librdkafka-process", "java"]),
        "producers": st.integers(1, 3),
        "consumers": st.integers(0, 3),
        "spare_brokers": st.integers(0, 2),
        "controllers": st.integers(0, 3),
        "spare_controllers": st.integers(0, 1),
        "seed": st.integers(0, 2**31),
    }
)


@settings(max_examples=150, deadline=None)
@given(SHAPES, st.data())
def test_every_drawn_fault_is_one_this_runs_shape_accepts(
    shape: dict[str, object], data: st.DataObject
) -> None:
    values = {**shape, "kafka_version": "3.9.2" if shape["metadata"] == "zookeeper" else "4.3.1"}
    brokers = int(str(shape["brokers"]))
    values["replication_factor"] = data.draw(st.integers(1, brokers))
    values["min_insync_replicas"] = 1
    kinds = data.draw(st.lists(st.sampled_from(sorted(FAULTS)), min_size=1, max_size=4, unique=True))
    try:
        config = mix_config(",".join(kinds), **values)
    except ConfigError as exc:
        # Refused only for what the shape cannot give some kind (or for settings unrelated to the mix).
        if "mix:kinds=" in str(exc):
            assert "has no target this run can take" in str(exc) and "remove" in str(exc)
        event("refused")
        return
    event("planned")
    drawn = [p.fault for p in islice(fault_sequence(config), 30)]
    assert Counter(parse_spec(f).name for f in drawn[: len(kinds)]) == Counter(kinds)  # each kind once first
    for text in drawn:
        check_cluster(parse_spec(text), config)


def test_the_seed_reaches_every_target_a_fault_takes_in_this_run() -> None:
    drawn = {p.fault for seed in range(60) for p in plan(mix_config("kill", seed=seed, duration=400))}
    config = mix_config("kill")
    assert drawn == set(drawable_specs("kill", config))
    # Roles, every node, and the client processes of a process client: what a mix visits.
    assert {"kill:target=leader", "kill:target=random", "kill:target=1", "kill:target=3"} <= drawn
    assert {"kill:target=producer-0", "kill:target=clients"} <= drawn


def test_a_transactional_mix_holds_a_transaction_s_own_requests_where_they_arrive() -> None:
    """A mix of request faults in a run of records only can take nothing but Produce; in a transactional
    run it may also take a producer's EndTxn or AddPartitionsToTxn at its coordinator and a coordinator's
    markers at the partition's replicas: the requests whose lateness finding 1 is about."""
    txn = mix_config("hold,delay", workload="txn", duration=400)
    drawn = {p.fault for seed in range(80) for p in plan(txn.model_copy(update={"seed": seed}))}
    assert {
        "hold:api=EndTxn:target=txn-coordinator",
        "delay:api=AddPartitionsToTxn:target=txn-coordinator",
        "hold:api=WriteTxnMarkers:target=leader",
        "hold:target=leader",
    } <= drawn
    sends = mix_config("hold,drop", workload="sends")
    assert all("api=" not in text for kind in ("hold", "drop") for text in drawable_specs(kind, sends))


def test_threads_are_no_targets_and_a_kraft_cluster_has_no_zookeeper() -> None:
    threads = mix_config("kill,pause", client="librdkafka")
    for kind in ("kill", "pause"):
        targets = {parse_spec(text).option("target") for text in drawable_specs(kind, threads)}
        assert not {"clients", "producer-0", "consumer-0"} & targets
        assert "zookeeper" not in targets
    zookeeper = mix_config("kill", kafka_version="3.9.2", metadata="zookeeper")
    assert "kill:target=zookeeper" in drawable_specs("kill", zookeeper)
    # A fault that takes no target is drawn as itself, its options at their defaults.
    assert drawable_specs("halves", threads) == ("halves",)


@pytest.mark.parametrize(
    ("nemesis", "expected"),
    [
        ("mix", "nemesis (--nemesis): mix: takes kinds=NAME,NAME,... (the faults it draws from)"),
        ("mix:kinds=", "nemesis (--nemesis): mix: kinds lists no fault; name one or more, e.g. mix:kinds="),
        ("mix:kinds=kill,,pause", "has an empty item between commas; remove the comma"),
        ("mix:kinds=nope", "mix: unknown fault 'nope' in kinds; choose from kill, "),
        ("mix:kinds=kill,kill", "mix: kill named twice in kinds; name each fault once"),
        (
            "mix:kinds=kill:target=2",
            "a mix draws the target itself and keeps the other defaults, so name the fault alone (kill)",
        ),
        (
            "kill,mix:kinds=pause",
            "write the mix alone and add their names to its kinds, e.g. mix:kinds=kill,",
        ),
        ("mix:count=3", "then optionally when=STATE,STATE,... (got 'count=3')"),
        (
            "mix:kinds=kill,cut-zookeeper",
            "nemesis: mix:kinds=kill,cut-zookeeper: cut-zookeeper has no target this run can take "
            "(cut-zookeeper: a KRaft cluster has no ZooKeeper; pass --metadata zookeeper",
        ),
        (
            "mix:kinds=kill-member",
            "kill-member has no target this run can take (kill-member: kills a consumer-group member, and "
            "--workload sends runs no consumer group; use --workload group or eos",
        ),
    ],
)
def test_a_mix_that_cannot_be_drawn_is_refused_naming_the_field_and_the_fix(
    nemesis: str, expected: str
) -> None:
    assert expected in refusal(nemesis=nemesis)


def test_a_mix_too_long_for_the_run_is_refused_with_a_duration_that_fits() -> None:
    message = refusal(nemesis="mix:kinds=kill,isolate,pause", duration=20)
    assert "nemesis: 1 of 3 requested faults fit in --duration 20" in message
    needed = int(message.split("use --duration ")[1].split()[0])
    planned = plan(mix_config(duration=needed))
    assert sorted(parse_spec(p.fault).name for p in planned) == ["isolate", "kill", "pause"]
    assert "requested faults fit" in refusal(nemesis="mix:kinds=kill,isolate,pause", duration=needed - 1)


def test_a_matrix_list_and_the_flag_name_the_same_mix() -> None:
    assert load_config(nemesis=["mix:kinds=kill", "pause"], **SHORT).nemesis == ("mix:kinds=kill,pause",)
    assert mix_config(" kill , pause ").nemesis == ("mix:kinds=kill,pause",)
    assert is_mix(" mix:kinds=kill") and not is_mix("kill-member")
    with pytest.raises(SpecError):
        parse_mix("kill:kinds=pause")


def test_a_power_loss_mix_needs_the_image_kchaos_builds_as_the_fault_does() -> None:
    assert "nemesis: power-loss needs an image kchaos builds" in refusal(
        nemesis="mix:kinds=power-loss", kafka_image="apache/kafka:4.1.1", kafka_version="4.1.1"
    )
