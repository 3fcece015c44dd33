"""What a chaos test asserts when the documentation promises that nothing is lost."""

from __future__ import annotations

from collections.abc import Collection

from kchaos.checkers.rules.checkability import NO_EOS, NO_PLAIN_SENDS, NO_TRANSACTIONS
from kchaos.runner.outcome import RunOutcome

#: librdkafka issue #4953 (open): an idempotent producer may bump its epoch after an error on a later
#: in-flight batch during a leader change and re-send a batch the old leader had written, so a record
#: lands twice at adjacent offsets. kchaos reports it as the `violation` it is (KIP-98's promise, broken
#: by the client); chaos tests state replication promises, not the client's, so they hold every other
#: anomaly to `ok` and only require that such a duplicate is judged by the idempotent-producer rule.
CLIENT_DUPLICATE_RULE = "idempotent-producer"

#: The sends' delivery timeout of chaos tests whose promise is not the producer's. On two cores the KRaft
#: controller now and then stalls ("controller event queue overloaded"; once while creating a group's
#: offsets topic, once after an isolation healed) and the brokers with it, for 20 to 40 s. Sends that
#: outlive the default 30 s are retried under a bumped epoch and may be written twice: `duplicate`,
#: permitted by idempotent-epoch-bump, which is not what these tests state. The oracle's own advice: keep
#: message.timeout.ms above failover time.
STALLED_CONTROLLER_TIMEOUT_MS = 120_000


def assert_promise_kept(outcome: RunOutcome, permitted: Collection[str] = ()) -> None:
    """Every anomaly but a client-made duplicate, and those the caller names as `permitted` (what the
    configuration documents, as a group's redeliveries), is `ok`; a duplicate, if any, is judged a
    violation of the idempotent-producer rule, never passed off as permitted. The transaction anomalies of
    a run that wrote no transactions, the end-to-end ones of a group that wrote none, and the send
    anomalies of a run that wrote only transactions are `unchecked` for that reason, which is no broken
    promise."""
    judged = outcome.results["anomalies"]
    broken = {
        name: a["verdict"]
        for name, a in judged.items()
        if a["verdict"] != "ok"
        and not (name in permitted and a["verdict"] == "permitted")
        and a.get("unchecked_reason") not in (NO_TRANSACTIONS, NO_EOS, NO_PLAIN_SENDS)
    }
    broken.pop("duplicate", None)
    assert not broken, outcome.describe()
    duplicate = judged["duplicate"]
    if duplicate["count"]:
        assert (duplicate["verdict"], duplicate["rule_id"]) == ("violation", CLIENT_DUPLICATE_RULE), duplicate
        print(f"client duplicates (librdkafka #4953): {duplicate['count']}")
    elif not permitted:
        assert outcome.verdict == "ok", outcome.describe()
