"""What a transactional application does when its commit times out (`--txn-on-timeout`, config key
`txn_on_timeout`): the policies, and the one each client's own documentation does not allow.

An application whose commit timed out does not know whether the transaction committed. It can ask again,
or move on. Kafka's KAFKA-17754 sequence (a late EndTxn landing on the producer's next transaction) needs
an application that moves on, so the `txn` and `eos` workloads can play one:

- `retry` (the default): ask to commit again, up to the workers' `kchaos.commit.attempts`; what happens
  when they run out is each client's (librdkafka: an abort is asked; Java: the producer is replaced).
- `wait`: ask again until the commit is answered, as an application does that calls librdkafka's
  commit_transaction with no timeout of its own (its examples and confluent-kafka's default, -1) or keeps
  retrying the Java client's commitTransaction: up to `WAIT_ATTEMPTS` asks of the workers' 10 s, past
  librdkafka's `socket.timeout.ms` (60 s), after which librdkafka sends a request that got no answer
  again on a new connection, and past the transaction timeout; then as `retry` when its asks run out.
- `restart`: close the producer at once and start a new one with the same `transactional.id`, as an
  application's supervisor would; its init fences the old one and aborts what it left open, and the
  workload goes on with the next transaction. A timed-out abort restarts the same way (both clients
  already replace a producer whose abort failed; the policy names itself in the reason).
- `abort`: abort at once and begin the next transaction. Neither client allows it, so it is refused:
  - the Java client's `KafkaProducer.commitTransaction` javadoc: a TimeoutException may be retried by
    calling commitTransaction again, but "it is not possible to attempt a different operation (such as
    abortTransaction) since the commit may already be in the progress of completing. If not retrying, the
    only option is to close the producer";
  - librdkafka's `rd_kafka_commit_transaction` (rdkafka.h): a timed-out commit "is resumable ... Calling
    the function again will resume the operation that is progressing in the background", and while it is
    resumable any other transactional call is refused: `rd_kafka_txn_curr_api_begin` (rdkafka_txnmgr.c)
    answers an abort with the retriable `_CONFLICT` "Conflicting commit_transaction API call is already in
    progress" (and the abort's own first step, `rd_kafka_txn_op_begin_abort`, takes only a transaction
    that is in progress or failed, not one being committed). So a librdkafka application that asked to
    abort would get an error, not an abort: the move is a restart.

The policy changes only what the application does; the oracle does not change with it: a committed
record lost is a violation under every policy.
"""

from __future__ import annotations

from typing import Final, Literal

from kchaos.model.client_names import JAVA
from kchaos.model.workload_names import TRANSACTIONAL

TxnOnTimeout = Literal["retry", "wait", "abort", "restart"]

RETRY: Final = "retry"
WAIT: Final = "wait"
ABORT: Final = "abort"
RESTART: Final = "restart"
#: How many times `retry` asks to commit (the workloads' attempts before this option existed).
RETRY_ATTEMPTS: Final = 3
#: How many times `wait` asks: 13 asks of 10 s outlast librdkafka's 60 s request timeout and its resend,
#: and the workloads' 60 s transaction timeout, after which the coordinator has decided either way.
WAIT_ATTEMPTS: Final = 13
#: What a transactional run does when `--txn-on-timeout` is not given: today's, asking again.
DEFAULT_TXN_ON_TIMEOUT: Final = RETRY
#: The policies a worker takes (`kchaos.txn.on.timeout`): the ones no client refuses.
RUNNABLE: tuple[TxnOnTimeout, ...] = (RETRY, WAIT, RESTART)

#: Why each client refuses an abort after a timed-out commit, from its own documentation.
_NO_ABORT_AFTER_TIMEOUT = {
    JAVA: (
        "the Java client's KafkaProducer.commitTransaction javadoc says a commit that timed out may only be "
        "retried: it is not possible to attempt a different operation such as abortTransaction since the "
        "commit may already be completing, and if not retrying the only option is to close the producer"
    ),
    "librdkafka": (
        "librdkafka's rd_kafka_commit_transaction (rdkafka.h) makes a timed-out commit resumable, to be "
        "called again, and refuses any other transactional call meanwhile: abort_transaction is answered "
        "_CONFLICT, 'Conflicting commit_transaction API call is already in progress' (rdkafka_txnmgr.c)"
    ),
}


def txn_on_timeout_refusal(policy: str | None, workload: str, client: str) -> str | None:
    """Why `--txn-on-timeout` cannot be `policy` for `workload` and `client`, naming the fix; None when it
    can (or was not given)."""
    if policy is None:
        return None
    if workload not in TRANSACTIONAL:
        return (
            f"txn_on_timeout: --txn-on-timeout is what a transactional application does when its commit "
            f"times out; --workload {workload} commits no transactions: leave --txn-on-timeout out or use "
            "--workload txn or eos"
        )
    if policy == ABORT:
        why = _NO_ABORT_AFTER_TIMEOUT[JAVA if client == JAVA else "librdkafka"]
        return (
            f"txn_on_timeout: --txn-on-timeout abort is not something --client {client} allows: {why}; "
            f"use --txn-on-timeout retry or restart with --client {client}"
        )
    return None


def commit_attempts(policy: str) -> int:
    """How many times the application asks to commit before it gives up on asking: `wait`'s many,
    otherwise `retry`'s (a `restart` asks once: its first timeout replaces the producer)."""
    return WAIT_ATTEMPTS if policy == WAIT else RETRY_ATTEMPTS


def worker_policy(policy: str) -> str:
    """The policy as a worker takes it (`kchaos.txn.on.timeout`): `wait` is `retry` with more asks
    (`kchaos.commit.attempts`), so the workers know retry and restart only."""
    return RETRY if policy == WAIT else policy
