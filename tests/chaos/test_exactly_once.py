"""Exactly-once consume-transform-produce on a real cluster (`--workload eos`): with a partition leader
killed and then a processor crashed mid-stream, every acknowledged input record appears exactly once among
the output records a read_committed final read returns (KIP-98, KIP-447).

The checker's end-to-end anomalies (`eos-lost`, `eos-duplicate`) must both be checked and `ok`; the test
also counts the same from the history itself, from every acknowledged input rather than those below the
group's committed offsets, so a checker that judged too little would not pass it.

The promise would hold vacuously if nothing had been processed again, so the test also requires that the
crash made the group hand a dead processor's partitions to another processor, who resumed from the
offsets its transactions had committed.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from kchaos.checkers.rules.anomaly_names import EOS_ANOMALY_NAMES, GROUP_DUPLICATE
from kchaos.model.events import (
    ASSIGN,
    FINAL_READ,
    MEMBER_CRASH,
    MEMBER_RESTART,
    OK,
    SEND,
    TXN_COMMIT,
    input_value,
    output_topic,
)
from kchaos.model.history_files import history_path
from kchaos.model.run_files import RunDir
from kchaos.runner.pytest_plugin import ChaosRun
from tests.chaos.promises import STALLED_CONTROLLER_TIMEOUT_MS, assert_promise_kept
from tests.chaos.test_replication_guarantees import DURABLE
from tests.cluster.conftest import dumped_codecs, nemesis_events

pytestmark = pytest.mark.cluster


@pytest.mark.chaos(
    **DURABLE, workload="eos", consumers=3, producers=2, nemesis="kill:target=leader,kill-member",
    fault_interval=6.0, fault_duration=12.0, duration=46.0, rate=200.0,
    message_timeout_ms=STALLED_CONTROLLER_TIMEOUT_MS,
    # Compressed batches, as a platform team sets them: the input producers' and the processors' both.
    producer_config={"compression.type": "zstd", "linger.ms": "100"},
)  # fmt: skip
def test_every_acknowledged_input_is_in_the_output_exactly_once(chaos_run: ChaosRun) -> None:
    """KIP-98 and KIP-447: records a processor writes in a transaction that also commits its group's
    offsets are seen by read_committed readers once, whatever failed in between: an aborted or abandoned
    transaction's output is never read, and its inputs are processed again from the committed offsets."""
    outcome = chaos_run()
    events = nemesis_events(outcome)
    stops = events[events["value"] == "stop"]
    assert sorted(stops["f"]) == ["kill", "kill-member"], events
    assert all(d["effect_seen_after_s"] is not None for d in stops["detail"]), stops

    history = pd.read_parquet(history_path(outcome.run_dir))
    config = json.loads((outcome.run_dir / "config.json").read_text())
    topic = config["topic"]
    assert "zstd" in dumped_codecs(outcome.run_dir)[topic]
    inputs = history[(history["f"] == SEND) & (history["type"] == OK) & (history["topic"] == topic)]
    output = history[
        (history["f"] == FINAL_READ) & (history["type"] == OK) & (history["topic"] == output_topic(topic))
    ]
    assert len(inputs) > 3000, f"only {len(inputs)} acknowledged inputs"
    sources = output["value"].map(input_value)
    times = sources.value_counts()
    acked = set(inputs["value"])
    missing = acked - set(times.index)
    twice = times[times > 1]
    sent = set(history.loc[(history["f"] == SEND) & (history["topic"] == topic), "value"])
    invented = set(times.index) - sent
    committed = history[(history["f"] == TXN_COMMIT) & (history["type"] == OK)]
    # The crash the nemesis made, and the restart after it. A processor may have restarted on its own
    # before, the crashed one included (a CI run's did): a processor process whose producer hung through the
    # leader kill (send_offsets_to_transaction past its 15 s) ends and is started again, which breaks no
    # promise either.
    dead = next(d["member"] for f, d in zip(stops["f"], stops["detail"], strict=True) if f == "kill-member")
    rows = history[history["f"].isin([MEMBER_CRASH, MEMBER_RESTART]) & (history["process"] == dead)]
    crashed = rows[rows["index"] >= rows.loc[rows["f"] == MEMBER_CRASH, "index"].min()]
    print(
        f"{len(acked)} acknowledged inputs, {len(output)} outputs read in {committed['key'].nunique()} "
        f"committed transactions; missing {len(missing)}, more than once {len(twice)}, "
        f"invented {len(invented)}"
    )
    assert not missing, f"{len(missing)} acknowledged inputs never in the output, e.g. {sorted(missing)[:5]}"
    assert twice.empty, f"{len(twice)} inputs in the output more than once, e.g. {twice.head().to_dict()}"
    assert not invented, f"outputs of inputs nobody sent: {sorted(invented)[:5]}"
    judged = outcome.results["anomalies"]
    for name in EOS_ANOMALY_NAMES:
        assert (judged[name]["verdict"], judged[name]["count"]) == ("ok", 0), (name, judged[name])
    # Records handed to the group twice (the crashed processor's uncommitted batch) are permitted; their
    # output is what must not be there twice, and every other promise holds.
    print(f"handed to the group more than once: {judged[GROUP_DUPLICATE]['count']}")
    assert_promise_kept(outcome, permitted=(GROUP_DUPLICATE,))
    # Replica divergence is judged on the output topic too: every broker's copy of each of its partitions
    # was dumped and compared (`ok` above).
    replicas = pd.read_parquet(RunDir(outcome.run_dir).replicas_parquet)
    for dumped_topic in (topic, output_topic(topic)):
        copies = replicas[replicas["topic"] == dumped_topic].groupby("partition")["broker"].nunique()
        assert len(copies) == config["partitions"] and (copies == 3).all(), (dumped_topic, copies)
    assert list(crashed["f"]) == [MEMBER_CRASH, MEMBER_RESTART], crashed
    crash_at, restart_at = crashed["index"]
    assigns = history[(history["f"] == ASSIGN) & (history["type"] == OK)]
    meanwhile = assigns[assigns["index"].between(crash_at, restart_at) & (assigns["process"] != dead)]
    assert not meanwhile.empty, f"no processor took over from {dead}"
