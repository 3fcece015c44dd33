"""The sequence behind each named scenario of `kchaos.model.scenario_table`: the only place a name is tied to
the code that drives it."""

from __future__ import annotations

from functools import partial

from kchaos.nemesis.isolated_leader import isolated_leader
from kchaos.nemesis.kip101 import kip_101_divergence, kip_101_hw_truncation
from kchaos.nemesis.kip279 import kip_279_fast_failover
from kchaos.nemesis.last_replica import last_replica_loses_power, last_replica_standing
from kchaos.nemesis.marker_attacks import txn_markers_held
from kchaos.nemesis.request_attacks import txn_add_partitions_held, txn_endtxn_held, txn_produce_held
from kchaos.nemesis.schedule import Scenario
from kchaos.nemesis.txn_attacks import txn_client_pause, txn_coordinator_failover, txn_coordinator_pause

SEQUENCES: dict[str, Scenario] = {
    "acks-1-failover": isolated_leader,
    "unclean-after-isr-shrink": partial(last_replica_standing, unclean=True),
    "last-replica-standing": partial(last_replica_standing, unclean=False),
    "last-replica-power-loss": last_replica_loses_power,
    "kip-101-hw-truncation": kip_101_hw_truncation,
    "kip-101-divergence": kip_101_divergence,
    "kip-279-fast-failover": kip_279_fast_failover,
    "txn-client-pause": txn_client_pause,
    "txn-coordinator-pause": txn_coordinator_pause,
    "txn-coordinator-failover": txn_coordinator_failover,
    "txn-endtxn-held": txn_endtxn_held,
    "txn-add-partitions-held": txn_add_partitions_held,
    "txn-produce-held": txn_produce_held,
    "txn-markers-held": txn_markers_held,
}


def sequence(name: str) -> Scenario:
    """The sequence of the scenario `name` (validated against the table by the configuration)."""
    return SEQUENCES[name]
