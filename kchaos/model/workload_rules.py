"""What each workload asks of the other settings: the flags that shape only one workload, and the
releases and producer settings a workload's clients need. One function the configuration calls, so a
workload's rules are read in one place, apart from the cluster's and the faults'."""

from __future__ import annotations

from kchaos.model.events import IsolationLevel
from kchaos.model.fault_plan import requested_faults
from kchaos.model.releases import Release
from kchaos.model.run_settings import RunSettings
from kchaos.model.txn_on_timeout import DEFAULT_TXN_ON_TIMEOUT, TxnOnTimeout, txn_on_timeout_refusal
from kchaos.model.workload_names import EOS, GROUP, IN_A_GROUP, TRANSACTIONAL, TXN
from kchaos.model.written_topics import topics_refusal

#: The readers a `txn` run starts when neither `--consumers` nor `--isolation` is given: one of each level,
#: so the default `mixed` isolation checks both, as the docs say.
TXN_READERS = 2


def chosen_isolation(settings: RunSettings) -> str:
    """`--isolation`, else `mixed` for a txn run with two readers or more (one of each level), else
    read_committed: a txn run with one reader reads read_committed only, and says so."""
    if settings.isolation is not None:
        return settings.isolation
    return "mixed" if settings.workload == TXN and settings.consumers >= 2 else "read_committed"


def chosen_txn_on_timeout(settings: RunSettings) -> TxnOnTimeout:
    """What the transactional clients do when a commit times out: `--txn-on-timeout`, else
    `DEFAULT_TXN_ON_TIMEOUT` (`kchaos.model.txn_on_timeout`)."""
    return settings.txn_on_timeout or DEFAULT_TXN_ON_TIMEOUT


def paired_readers(settings: RunSettings) -> bool:
    """Whether the readers alternate isolation levels (`chosen_isolation` is `mixed`), so that with
    `--topics` they go in pairs, each topic read at both levels."""
    return chosen_isolation(settings) == "mixed"


def reader_isolation(settings: RunSettings, consumer: int) -> IsolationLevel:
    """The `isolation.level` of the `consumer`th reader during the run (see `chosen_isolation`): a txn run
    mixes both unless told otherwise, so what each level may return is checked in one run; an eos
    processor reads read_committed, as exactly-once processing requires."""
    if settings.workload == EOS:
        return "read_committed"
    chosen = chosen_isolation(settings)
    if chosen == "mixed":
        return "read_committed" if consumer % 2 == 0 else "read_uncommitted"
    return "read_uncommitted" if chosen == "read_uncommitted" else "read_committed"


def workload_refusal(settings: RunSettings) -> str | None:
    """Why `settings.workload` cannot run with the other settings, naming the fix; None when it can."""
    workload = settings.workload
    if workload in IN_A_GROUP and settings.consumers == 0:
        what = "group members" if workload == GROUP else "processors"
        return f"--workload {workload} needs {what}: give --consumers 1 or more"
    if workload != GROUP and settings.commit is not None:
        why = "commits its group's offsets inside its transactions" if workload == EOS else "has no group"
        return (
            f"--commit is how group members commit; --workload {workload} {why}: "
            "leave --commit out or use --workload group"
        )
    if settings.txn_polls and workload != TXN:
        return (
            f"--txn-polls {settings.txn_polls}: read-write transactions are --workload txn's (an eos "
            f"processor's transactions read already), and this run is --workload {workload}: use "
            "--workload txn, or leave --txn-polls out"
        )
    if settings.txn_polls_via != "assign" and not settings.txn_polls:
        return (
            f"--txn-polls-via {settings.txn_polls_via}: only read-write transactions poll, and this run's "
            "transactions only write: give --txn-polls N (1 or more) too, or leave --txn-polls-via out"
        )
    if workload != TXN:
        for name, value in (("--txn-records", settings.txn_records), ("--abort-ratio", settings.abort_ratio)):
            if value is not None:
                return (
                    f"{name} shapes transactions; --workload {workload} writes none: leave "
                    f"{name} out or use --workload txn"
                )
    refused = txn_on_timeout_refusal(settings.txn_on_timeout, workload, settings.client)
    refused = refused or topics_refusal(
        workload, settings.topics, settings.producers, settings.consumers, requested_faults(settings),
        paired=paired_readers(settings),
    )  # fmt: skip
    if refused is not None:
        return refused
    if workload == EOS and settings.isolation not in (None, "read_committed"):
        return (
            f"--workload eos: its processors read read_committed, as exactly-once processing requires "
            f"(a record of an aborted input transaction must not be processed); --isolation "
            f"{settings.isolation} would not test that: leave --isolation out"
        )
    if settings.isolation == "mixed" and settings.consumers < 2 and workload != EOS:
        return (
            f"--isolation mixed reads with both levels only with two readers or more (consumer-0 "
            f"read_committed, consumer-1 read_uncommitted), and --consumers {settings.consumers} runs "
            f"{'one' if settings.consumers else 'none'}: use --consumers 2 or more, or name one level"
        )
    if workload in TRANSACTIONAL and settings.acks != "all":
        return (
            f"--workload {workload}: transactional producers need acks=all (Kafka refuses them "
            "otherwise); use --acks all or another --workload"
        )
    if workload in TRANSACTIONAL and settings.idempotence is False:
        return (
            f"--workload {workload}: transactional producers are idempotent (Kafka requires it); "
            "leave --no-idempotence out or use another --workload"
        )
    release = Release.parse(settings.kafka_version)
    if workload == TXN and not release.idempotent_producer:
        return (
            f"--workload txn: {settings.kafka_version} has no transactions (they came in 0.11, KIP-98); "
            "use a release from 0.11 on"
        )
    if workload == EOS and not release.group_fenced_transactions:
        return (
            f"--workload eos: {settings.kafka_version} cannot fence a zombie processor by its group's "
            "generation (that came in 2.5, KIP-447), which one transactional.id per processor relies on; "
            "use a release from 2.5 on"
        )
    return None
