"""What a chaos test asserts when the documentation promises that nothing is lost."""

from __future__ import annotations

from runner.run import RunOutcome

#: librdkafka issue #4953 (open): an idempotent producer may bump its epoch after an error on a later
#: in-flight batch during a leader change and re-send a batch the old leader had written, so a record
#: lands twice at adjacent offsets. kchaos reports it as the `violation` it is (KIP-98's promise, broken
#: by the client); chaos tests state replication promises, not the client's, so they hold every other
#: anomaly to `ok` and only require that such a duplicate is judged by the idempotent-producer rule.
CLIENT_DUPLICATE_RULE = "idempotent-producer"


def assert_promise_kept(outcome: RunOutcome) -> None:
    """Every anomaly but a client-made duplicate is `ok`; a duplicate, if any, is judged a violation of the
    idempotent-producer rule, never passed off as permitted."""
    judged = outcome.results["anomalies"]
    broken = {name: a["verdict"] for name, a in judged.items() if a["verdict"] != "ok"}
    broken.pop("duplicate", None)
    assert not broken, outcome.describe()
    duplicate = judged["duplicate"]
    if duplicate["count"]:
        assert (duplicate["verdict"], duplicate["rule_id"]) == ("violation", CLIENT_DUPLICATE_RULE), duplicate
        print(f"client duplicates (librdkafka #4953): {duplicate['count']}")
    else:
        assert outcome.verdict == "ok", outcome.describe()
