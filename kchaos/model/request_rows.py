"""What a history row says about one request a request fault took: the proxy's event in kchaos's words.

The request proxy (kchaos/compose/proxy/) reports in numbers and addresses, because it runs where kchaos
is not installed: `api_key` 26, peer 172.18.0.1, the first bytes of an answer. A row says it the way a
reader of the history needs it: the API by name, the link as `sender>node N` (a node by its id, a client by
the id it sent, else its address), and an answer's error code decoded and named
(`kchaos.model.kafka_apis`), so `kchaos explain` and the checkers read a row without knowing the wire.

Pure (no Docker, no Kafka).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kchaos.model.kafka_apis import api_name, decode_error_code, decode_first_partition_error, error_name


def step_word(event: str) -> str:
    """The row's `value` for a proxy event: `client_closed` reads `client-closed`, as kchaos spells words."""
    return event.replace("_", "-")


def sender(peer: str, client_id: str | None, node_ips: Mapping[str, int]) -> str:
    """Who sent the request: `node 2` for a node's address, else the client id it gave, else its address
    (every host client reaches the nodes from one gateway address, so the address alone tells little)."""
    if peer in node_ips:
        return f"node {node_ips[peer]}"
    return client_id or peer


def request_detail(event: Mapping[str, Any], node_id: int, node_ips: Mapping[str, int]) -> dict[str, Any]:
    """The row's `detail` for one proxy event seen at node `node_id`'s proxy: the request's identity and
    link, whether its client was still connected (a release), and the answer's error code and name (an
    answer whose layout is known for its API and version; otherwise only its size)."""
    key = int(event.get("api_key", -1))
    version = int(event.get("api_version", -1))
    detail: dict[str, Any] = {
        "api": api_name(key),
        "api_version": version,
        "correlation_id": event.get("correlation_id"),
        "link": f"{sender(str(event.get('peer', '')), event.get('client_id'), node_ips)}>node {node_id}",
        "proxy_at": event.get("at"),
    }
    if "client_connected" in event:
        detail["client_connected"] = bool(event["client_connected"])
    if "response_head" in event:
        detail["response_bytes"] = event.get("response_bytes")
        detail["response_head"] = str(event["response_head"])  # kept: a later kchaos may read more of it
        head = bytes.fromhex(str(event["response_head"]))
        code = decode_error_code(key, version, head)
        if code is None:
            code = decode_first_partition_error(key, version, head)
            if code is not None:
                detail["error_of"] = "first partition"
        if code is not None:
            detail["error_code"] = code
            detail["error"] = error_name(code)
    return detail


def request_line(key: str, step: str, detail: Mapping[str, Any]) -> str:
    """One request row as a story tells it: `request hold#1: EndTxn v1 #182 producer-0>node 1 released,
    its client gone`; the answer with its error's name where the row decoded one."""
    name = f"{detail.get('api', '?')} v{detail.get('api_version', '?')} #{detail.get('correlation_id', '?')}"
    said = f"request {key}: {name} {detail.get('link', '')} {step}"
    if "client_connected" in detail and step in ("released", "delivered", "answered"):
        said += ", its client still connected" if detail["client_connected"] else ", its client gone"
    if "error" in detail:
        said += f": {detail['error']}" + (f" ({detail['error_of']})" if "error_of" in detail else "")
    elif step == "answered":
        said += f" ({detail.get('response_bytes', '?')} bytes, error not decoded)"
    return said
