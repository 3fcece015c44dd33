"""The request faults (`hold`, `drop`, `delay`): a rule in the request proxy of each target node, and every
request a rule takes written to the history as it goes.

Each node of a run that plans a request fault runs the proxy in front of its listeners from before its
Kafka starts (`kchaos.harness.request_proxy`). Starting the fault sends each target node's proxy a rule
named by the fault's key; stopping it releases what a `hold` still holds (in each connection's order, to
the broker even when the client that sent it has gone: a request a client gave up on is still on the wire)
and ends the rule. Its effect is a request taken: a fault whose requests never came while it was in force
did not happen, and its stop row says it took none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kchaos.harness.cluster import KafkaCluster
from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.request_proxy import RequestProxy
from kchaos.model.events import INFO, NEMESIS_PROCESS, REQUEST
from kchaos.model.fault_record import FaultRecord
from kchaos.model.faults.requests import ANY_CLIENT, RequestRecord
from kchaos.model.history import HistoryWriter
from kchaos.model.kafka_apis import API_KEYS
from kchaos.model.request_rows import request_detail, step_word
from kchaos.nemesis.fault import Carriers, Fault, FaultError, describe_nodes


class RequestRows:
    """Writes each event the proxies report as a history row (`kchaos.model.request_rows`); given to the
    cluster as its proxies' sink, then told the cluster (`cluster`), whose nodes' addresses name the links.
    Events of no fault (a rule sent by hand) are rows too, keyed by their rule."""

    def __init__(self, history: HistoryWriter) -> None:
        self.history = history
        self.cluster: KafkaCluster | None = None

    def __call__(self, node_id: int, event: Mapping[str, Any]) -> None:
        if "api_key" not in event:
            return  # the proxy's own life (it stopped), not a request's: the fault rows tell when it ran
        node_ips = {} if self.cluster is None else self.cluster.node_addresses()
        detail = request_detail(event, node_id, node_ips)
        self.history.record(
            NEMESIS_PROCESS, INFO, REQUEST, key=str(event.get("rule", "")),
            value=step_word(str(event.get("event", ""))), detail=detail,
        )  # fmt: skip


class RequestFault(Fault):
    """One rule, of its class's `ACTION`, in the proxy of each node the target names."""

    ACTION = ""
    RECORD = RequestRecord

    def _proxies(self) -> dict[int, RequestProxy]:
        missing = [node_id for node_id in self.nodes if node_id not in self.cluster.proxies]
        if missing:
            raise FaultError(
                f"{self.key}: no request proxy runs on node(s) {missing}; a run starts them only when it "
                "plans a request fault (hold, drop, delay) before its cluster starts"
            )
        return {node_id: self.cluster.proxies[node_id] for node_id in self.nodes}

    def _senders(self) -> dict[str, Any]:
        """The rule's filter on who sent the request: the nodes' addresses, or every address but those."""
        sender = self.spec.option("sender")
        if sender == "any":
            return {}
        ips = sorted(self.cluster.node_addresses())
        return {"peers": ips} if sender == "nodes" else {"not_peers": ips}

    def rule(self) -> dict[str, Any]:
        options = self.spec.option
        rule: dict[str, Any] = {
            "rule": self.key, "action": self.ACTION, "api_keys": [API_KEYS[options("api")]],
            "count": int(options("count")), "probability": int(options("percent")) / 100,
            "seed": self.rng.getrandbits(63), **self._senders(),
        }  # fmt: skip
        if self.ACTION == "delay":
            rule["delay_ms"] = int(options("ms"))
        if options("client") != ANY_CLIENT:
            rule["client_id"] = options("client")
        return rule

    def _aimed(self) -> tuple[str, str, str | None]:
        """What its records say it took: the API, the senders, the one client if it named one."""
        client = self.spec.option("client")
        return self.spec.option("api"), self.spec.option("sender"), None if client == ANY_CLIENT else client

    def start(self) -> FaultRecord:
        self.nodes = self.resolve(self.spec.target)
        rule = self.rule()
        started: list[RequestProxy] = []
        try:
            for proxy in self._proxies().values():
                proxy.command("rule", **rule)
                started.append(proxy)
        except ClusterError:
            for proxy in started:
                self._end(proxy)
            raise
        self.active = True
        api, sender, client = self._aimed()
        return self.record(api=api, sender=sender, client=client)

    def _end(self, proxy: RequestProxy) -> None:
        """Stops the rule taking requests, then lets go whatever it holds (a rule that holds nothing is gone
        once removed)."""
        if proxy.command("remove", rule=self.key).get("holding"):
            proxy.command("release", rule=self.key)

    def taken(self) -> int:
        """How many requests the rule took, over every target node."""
        total = 0
        for proxy in self._proxies().values():
            status = proxy.command("status")
            total += sum(
                int(r.get("selected", 0)) for r in status.get("rules", []) if r.get("rule") == self.key
            )
        return total

    def effect_reached(self) -> bool:
        return self.active and self.taken() > 0

    def stop(self) -> FaultRecord:
        if not self.active:
            return self.record()
        taken = self.taken()
        for proxy in self._proxies().values():
            self._end(proxy)
        self.active = False
        api, sender, client = self._aimed()
        return self.record(api=api, sender=sender, client=client, taken=taken)

    def describe(self) -> str:
        options = self.spec.option
        senders = {"any": "any sender", "clients": "clients", "nodes": "brokers and controllers"}
        who = senders[options("sender")] if options("client") == ANY_CLIENT else f"client {options('client')}"
        what = f"{options('api')} requests from {who}"
        how = (
            f"delayed {options('ms')} ms"
            if self.ACTION == "delay"
            else {"hold": "held until the fault ends", "drop": "dropped, their connection cut"}[self.ACTION]
        )
        count = "every one" if options("count") == "0" else f"up to {options('count')}"
        return f"{count} of the {what} to {describe_nodes(self.nodes) or self.spec.target} {how}"


class Hold(RequestFault):
    ACTION = "hold"


class Drop(RequestFault):
    ACTION = "drop"


class Delay(RequestFault):
    ACTION = "delay"


#: The faults this module carries out (`kchaos.model.faults`), by name and aim.
CARRIES_OUT: Carriers = {
    ("hold", "nodes"): Hold,
    ("drop", "nodes"): Drop,
    ("delay", "nodes"): Delay,
}
