"""A wall clock that jumped ahead and came back stills a KRaft voter's timers for as long as the jump.

Kafka times its waits with `org.apache.kafka.common.utils.Timer`, which reads the wall clock and never
takes a time earlier than one it has seen (`update` keeps the later of the two). A node whose clock jumped
ahead and came back sees no time pass on those timers until true time reaches what it saw. The KRaft
client times a follower's fetch timeout with one, so such a voter goes on believing in its leader after
that leader died, and with pre-vote (KIP-996, Kafka 4.0) it refuses the pre-vote of the voter that did
notice: no controller is elected while the still voter's timers wait, and with no controller no broker is
fenced and no partition leader moves. Before pre-vote the other voter's vote request wins the still voter's
vote all the same. Found by the fault-effect tests (a reassignment's killed broker still unfenced after
90 s, tests/cluster/test_fault_effects.py), shown here on purpose.

Driven by observed state: the quorum leader is asked for, the clock moved on another voter until its broker
has taken the shift, put back until it has taken true time again, then the leader killed and the time
until the quorum names another leader measured. Nightly: the test waits out most of the jump.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.cluster_error import ClusterError
from kchaos.model.releases import Release
from kchaos.model.waiting import wait_until
from kchaos.nemesis.schedule import Nemesis
from kchaos.runner.pytest_plugin import ClusterFactory, SessionOptions
from tests.cluster.fault_steps import begin, heal, wait_effect

pytestmark = [pytest.mark.cluster, pytest.mark.nightly]

#: How far the voter's clock jumps ahead: long enough to tell a stilled timer from a slow election.
JUMP_S = 120
#: The first release whose KRaft voters pre-vote (KIP-996), refusing a candidate while they hear a leader.
FIRST_PRE_VOTE = (4, 0)
#: How long the shifted clock holds: the KRaft client polls at least every 0.5 s (its fetch long-poll), so a
#: few seconds let it read the shifted time more than once.
HOLD_S = 3.0


@pytest.fixture(scope="module")
def kafka_cluster(kafka_cluster_factory: ClusterFactory) -> Iterator[KafkaCluster]:
    with kafka_cluster_factory.started("clock-timers") as cluster:
        yield cluster


def quorum_leader(cluster: KafkaCluster) -> int:
    """The voter the running nodes name as quorum leader; -1 while none can tell."""
    try:
        return cluster.metadata.active_controller()
    except ClusterError:
        return -1


@pytest.mark.parametrize("jump_s", [0, JUMP_S], ids=["no-jump", "jumped-ahead-and-back"])
def test_a_voter_whose_clock_jumped_ahead_and_back_keeps_a_dead_controller_unreplaced(
    kafka_cluster: KafkaCluster, nemesis: Nemesis, kchaos_options: SessionOptions, jump_s: int
) -> None:
    """The same kill of the quorum leader, after no clock fault (the control) and after a jump of `JUMP_S`
    ahead and back on another voter. With pre-vote (4.0 on) no leader comes for most of the jump; before
    it the other voter's vote request wins the still voter's vote as it would with no jump."""
    cluster = kafka_cluster
    if cluster.metadata_mode != "kraft":
        pytest.skip("a ZooKeeper-mode cluster elects its controller through ZooKeeper, not a KRaft quorum")
    controller = quorum_leader(cluster)
    assert controller in cluster.nodes, "no quorum leader named"
    still, other = sorted(n for n in cluster.nodes if n != controller)

    if jump_s:
        clock = begin(nemesis, f"clock:target={still}:offset={jump_s * 1000}")
        wait_effect(clock)  # the broker JVM has read the shifted time
        time.sleep(HOLD_S)  # its KRaft timers read it too: nothing to observe from outside
        nemesis.end(clock)  # back to true time, waited for until the broker has read it
    back_at = time.monotonic()

    kill = begin(nemesis, f"kill:target={controller}")
    killed_at = time.monotonic()
    wait_until(
        lambda: quorum_leader(cluster) in (still, other), JUMP_S + 120, "the quorum to elect another leader"
    )
    waited = time.monotonic() - killed_at
    elected = quorum_leader(cluster)
    print(f"jump {jump_s} s: quorum leader {controller} killed; {elected} elected after {waited:.1f} s")
    if jump_s and Release.parse(kchaos_options.kafka_version).parts >= FIRST_PRE_VOTE:
        # The still voter's timers resumed only once true time passed what it had seen (about the jump
        # after it went back): until then it refused the other voter's pre-vote.
        assert waited > jump_s * 0.4, f"another leader in {waited:.1f} s: the voter's timers were not stilled"
        assert time.monotonic() - back_at < jump_s + 90
    elif jump_s:
        assert waited < jump_s * 0.4, f"no leader for {waited:.1f} s on a release without pre-vote"
    heal(nemesis, kill)
