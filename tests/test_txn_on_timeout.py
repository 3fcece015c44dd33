"""`--txn-on-timeout`: a transactional run records the policy in `config.json` (`retry` when not given), and
every transactional client of the `txn` and `eos` workloads is handed it: the Java and librdkafka processes
as the worker argument `kchaos.txn.on.timeout`, the in-process producers and processors as their writer's
`on_timeout`. The workers run exactly the policies the configuration lets through."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from kchaos.compose.rdkafka.transaction_calls import ON_TIMEOUT_ARGUMENT, ON_TIMEOUT_POLICIES
from kchaos.harness.client_cluster import ClientCluster
from kchaos.model.config import ConfigError, load_config
from kchaos.model.history import HistoryWriter
from kchaos.model.run_files import RunDir
from kchaos.model.txn_on_timeout import RUNNABLE, TxnOnTimeout, worker_policy
from kchaos.model.workload_rules import chosen_txn_on_timeout
from kchaos.workloads.in_harness.eos import EosWorkload
from kchaos.workloads.in_harness.transactions import TransactionalWorkload
from kchaos.workloads.processes.java.eos import JavaEosWorkload
from kchaos.workloads.processes.java.transactions import JavaTransactionalWorkload
from kchaos.workloads.processes.rdkafka.eos import RdkafkaEosWorkload
from kchaos.workloads.processes.rdkafka.transactions import RdkafkaTransactionalWorkload

CLUSTER = cast(
    ClientCluster,
    SimpleNamespace(
        client_bootstrap="kafka-1:19092", run_id="r", name_prefix="kchaos-r", client_network="kchaos-r-net"
    ),
)


def test_the_workers_run_exactly_the_policies_the_configuration_lets_through() -> None:
    """`wait` reaches a worker as `retry` with more asks, so the workers know two policies."""
    assert RUNNABLE == ("retry", "wait", "restart")
    assert tuple(dict.fromkeys(worker_policy(policy) for policy in RUNNABLE)) == ON_TIMEOUT_POLICIES
    for policy in RUNNABLE:
        assert load_config(workload="txn", txn_on_timeout=policy).txn_on_timeout == policy
    with pytest.raises(ConfigError, match="--txn-on-timeout abort"):
        load_config(workload="txn", txn_on_timeout="abort")


@pytest.mark.parametrize("workload", ["txn", "eos"])
def test_config_json_records_the_policy_retry_when_not_given(workload: str) -> None:
    assert load_config(workload=workload).to_json_dict()["txn_on_timeout"] == "retry"
    chosen = load_config(workload=workload, txn_on_timeout="restart")
    assert chosen.to_json_dict()["txn_on_timeout"] == "restart" == chosen_txn_on_timeout(chosen)
    assert load_config(workload="sends").to_json_dict()["txn_on_timeout"] is None


def _arguments(command: list[str]) -> dict[str, str]:
    return dict(arg.split("=", 1) for arg in command)


@pytest.mark.parametrize("policy", RUNNABLE)
def test_every_process_worker_is_handed_the_policy(tmp_path: Path, policy: TxnOnTimeout) -> None:
    history = HistoryWriter(RunDir(tmp_path), "r")
    txn = load_config(workload="txn", client="java", txn_on_timeout=policy)
    java_txn = JavaTransactionalWorkload(txn, CLUSTER, history, "img", "4.3.1")
    rdkafka_txn = RdkafkaTransactionalWorkload(
        txn.model_copy(update={"client": "librdkafka-process"}), CLUSTER, history, "img", "4.3.1"
    )
    eos = load_config(workload="eos", client="java", txn_on_timeout=policy)
    java_eos = JavaEosWorkload(eos, CLUSTER, history, "img", "4.3.1")
    rdkafka_eos = RdkafkaEosWorkload(
        eos.model_copy(update={"client": "librdkafka-process"}), CLUSTER, history, "i"
    )
    commands: list[list[str]] = [
        java_txn._command(0),
        rdkafka_txn._command(0),
        java_eos._command("processor-0", "read_committed"),
        rdkafka_eos._command("processor-0", "read_committed"),
    ]
    handed = [_arguments(command) for command in commands]
    assert [arguments[ON_TIMEOUT_ARGUMENT] for arguments in handed] == [worker_policy(policy)] * 4
    asks = {"retry": 3, "wait": 13, "restart": 3}[policy]
    assert [arguments["kchaos.commit.attempts"] for arguments in handed] == [str(asks)] * 4


@pytest.mark.parametrize("policy", RUNNABLE)
def test_every_in_process_writer_is_handed_the_policy(tmp_path: Path, policy: TxnOnTimeout) -> None:
    history = HistoryWriter(RunDir(tmp_path), "r")
    txn = TransactionalWorkload(
        load_config(workload="txn", client="librdkafka", txn_on_timeout=policy), "127.0.0.1:1", history
    )
    eos = EosWorkload(
        load_config(workload="eos", client="librdkafka", txn_on_timeout=policy), "127.0.0.1:1", history
    )
    writers: list[Any] = [*txn.processes, *(member.writer for member in eos.members.values())]
    assert writers and {writer.on_timeout for writer in writers} == {worker_policy(policy)}
    assert {writer.commit_attempts for writer in writers} == {13 if policy == "wait" else 3}
